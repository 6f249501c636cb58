/*
 * The principal rules REST and gRPC share (api/ops/ops_principal.c), the
 * shared token cache (api/ops/ops_auth.c, without the database) and the
 * page size rule (api/ops/ops_page.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "ops_auth.h"
#include "ops_page.h"
#include "ops_principal.h"
#include "store_auth.h"

static const struct ops_principal admin = { .role = OPS_ROLE_ADMIN, .token_id = 1, .user = "root" };
static const struct ops_principal reader = { .role = OPS_ROLE_READER, .token_id = 2, .user = "" };
static const struct ops_principal ml = { .role = OPS_ROLE_TENANT, .token_id = 3, .tenant_id = 7,
					 .tenant = "ml", .tenant_path = "root/ml", .user = "ana" };
static const struct ops_principal orphan = { .role = OPS_ROLE_TENANT, .token_id = 4, .user = "x" };
static const struct ops_principal agent = { .role = OPS_ROLE_AGENT, .token_id = 5, .user = "",
					    .node = "n1" };

static void roles(void **state)
{
	static const char *const names[] = { "admin", "tenant", "reader", "agent" };
	(void)state;

	for (int i = 0; i < 4; i++) {
		int bit = ops_role_parse(names[i]);

		assert_int_equal(bit, 1 << i);
		assert_string_equal(ops_role_name(bit), names[i]);
	}
	assert_int_equal(ops_role_parse(NULL), 0);
	assert_int_equal(ops_role_parse(""), 0);
	assert_int_equal(ops_role_parse("Admin"), 0);
	assert_int_equal(ops_role_parse("admin "), 0);
	assert_string_equal(ops_role_name(0), "");
	assert_string_equal(ops_role_name(OPS_WRITERS), "");
	assert_string_equal(ops_role_name(1 << 9), "");
}

static void from_store(void **state)
{
	struct store_principal sp = { .token_id = 9, .role = "tenant", .tenant_id = 3,
				      .tenant = "ml", .tenant_path = "root/ml", .user = NULL };
	struct ops_principal p;
	(void)state;

	ops_principal_from_store(&p, &sp);
	assert_int_equal(p.role, OPS_ROLE_TENANT);
	assert_int_equal(p.token_id, 9);
	assert_int_equal(p.tenant_id, 3);
	assert_string_equal(p.tenant_path, "root/ml");
	assert_string_equal(p.user, ""); /* never NULL */
	assert_null(p.node);
	sp.role = "superuser"; /* not a role: no bit, so no route lets it in */
	ops_principal_from_store(&p, &sp);
	assert_int_equal(p.role, 0);
}

static void scope(void **state)
{
	(void)state;
	assert_null(ops_scope_path(&admin));
	assert_null(ops_scope_path(&reader)); /* a global reader */
	assert_string_equal(ops_scope_path(&ml), "root/ml");
	assert_true(ops_tenant_visible(&admin, "root/anything"));
	assert_true(ops_tenant_visible(&admin, NULL));
	assert_true(ops_tenant_visible(&ml, "root/ml"));
	assert_true(ops_tenant_visible(&ml, "root/ml/vision"));
	assert_false(ops_tenant_visible(&ml, "root/mlx"));
	assert_false(ops_tenant_visible(&ml, "root"));
	assert_false(ops_tenant_visible(&ml, "root/m"));
	assert_false(ops_tenant_visible(&ml, NULL));
	/* a tenant token without a tenant sees nothing, not everything */
	assert_non_null(ops_scope_path(&orphan));
	assert_false(ops_tenant_visible(&orphan, "root"));
	assert_false(ops_tenant_visible(&orphan, ""));
	assert_true(ops_path_within("root/ml", "root/ml/a/b"));
	assert_false(ops_path_within("root/ml", "root/ml_x"));
	assert_false(ops_path_within("root/ml", NULL));
	assert_true(ops_path_within("", "")); /* no root path exists: "" is only itself */
	assert_false(ops_path_within("", "root"));
}

static void job_owner(void **state)
{
	struct mu_error err = { 0 };
	const char *tenant = NULL, *user = NULL;
	(void)state;

	assert_int_equal(ops_job_owner(&admin, &tenant, &user, "", &err), MU_EMISSING);
	assert_string_equal(err.field, "tenant");
	assert_int_equal(ops_job_owner(&admin, &tenant, &user, "jobs.3.", &err), MU_EMISSING);
	assert_string_equal(err.field, "jobs.3.tenant");
	tenant = "ml";
	assert_int_equal(ops_job_owner(&admin, &tenant, &user, NULL, &err), 0);
	assert_string_equal(user, "root"); /* the token's user by default */
	user = "bob";
	assert_int_equal(ops_job_owner(&admin, &tenant, &user, NULL, &err), 0);
	assert_string_equal(user, "bob"); /* an admin may name the user */

	tenant = NULL;
	user = "bob";
	memset(&err, 0, sizeof(err));
	assert_int_equal(ops_job_owner(&ml, &tenant, &user, "jobs.0.", &err), MU_EFORBIDDEN);
	assert_string_equal(err.field, "jobs.0.user");
	user = NULL;
	assert_int_equal(ops_job_owner(&ml, &tenant, &user, "", &err), 0);
	assert_string_equal(tenant, "ml");
	assert_string_equal(user, "ana");
	tenant = "ml-sub"; /* the store checks it is in the subtree */
	user = NULL;
	assert_int_equal(ops_job_owner(&ml, &tenant, &user, "", &err), 0);
	assert_string_equal(tenant, "ml-sub");
	tenant = user = NULL;
	assert_int_equal(ops_job_owner(&orphan, &tenant, &user, "", &err), MU_EMISSING);
	assert_string_equal(err.field, "tenant");
}

static void visibility(void **state)
{
	(void)state;
	assert_true(ops_job_env_visible(&admin, "someone"));
	assert_true(ops_job_env_visible(&admin, NULL));
	assert_true(ops_job_env_visible(&ml, "ana"));
	assert_false(ops_job_env_visible(&ml, "bob"));
	assert_false(ops_job_env_visible(&ml, NULL));
	assert_false(ops_job_env_visible(&reader, "")); /* no user: no one's env */
	assert_true(ops_node_visible(&admin, "n2"));
	assert_true(ops_node_visible(&reader, "n2"));
	assert_true(ops_node_visible(&agent, "n1"));
	assert_false(ops_node_visible(&agent, "n2"));
	assert_false(ops_node_visible(&agent, NULL));
}

static void auth_cache(void **state)
{
	struct mu_arena a;
	struct ops_principal p;
	char sha[65], other[65];
	(void)state;

	mu_arena_init(&a, 0);
	store_auth_hash("mst_one", sha);
	store_auth_hash("mst_two", other);
	assert_int_equal(ops_auth_cached(sha, &a, &p), 0);
	assert_false(ops_auth_known_good(sha));
	ops_auth_remember(sha, &ml);
	assert_int_equal(ops_auth_cached(sha, &a, &p), 1);
	assert_int_equal(ops_auth_cached(sha, NULL, NULL), 1);
	assert_int_equal(p.role, OPS_ROLE_TENANT);
	assert_int_equal(p.token_id, 3);
	assert_string_equal(p.tenant_path, "root/ml");
	assert_ptr_not_equal(p.tenant_path, ml.tenant_path); /* a copy, in the arena */
	assert_null(p.node);
	assert_true(ops_auth_known_good(sha));
	assert_int_equal(ops_auth_cached(other, &a, &p), 0);
	ops_auth_remember_bad(other);
	assert_int_equal(ops_auth_cached(other, &a, &p), -1);
	/* a flush forgets the good ones (revoked or re-scoped), not the bad */
	ops_auth_flush();
	assert_int_equal(ops_auth_cached(sha, &a, &p), 0);
	assert_false(ops_auth_known_good(sha));
	assert_int_equal(ops_auth_cached(other, &a, &p), -1);
	/* a token found bad after being good is no longer known good */
	ops_auth_remember(sha, &agent);
	assert_int_equal(ops_auth_cached(sha, &a, &p), 1);
	assert_string_equal(p.node, "n1");
	ops_auth_remember_bad(sha);
	assert_int_equal(ops_auth_cached(sha, &a, &p), -1);
	assert_false(ops_auth_known_good(sha));
	ops_auth_flush();
	mu_arena_release(&a);
}

static void page_size(void **state)
{
	struct mu_error err = { 0 };
	int limit = -1;
	(void)state;

	assert_int_equal(ops_page_size(0, &limit, &err), 0);
	assert_int_equal(limit, 100);
	assert_int_equal(ops_page_size(1, &limit, &err), 0);
	assert_int_equal(limit, 1);
	assert_int_equal(ops_page_size(1000, &limit, &err), 0);
	assert_int_equal(limit, 1000);
	assert_int_equal(ops_page_size(1001, &limit, &err), MU_ERANGE);
	assert_string_equal(err.field, "page_size");
	assert_int_equal(ops_page_size(-1, &limit, &err), MU_ERANGE);
	assert_int_equal(ops_page_size(INT32_MIN, &limit, &err), MU_ERANGE);
	assert_int_equal(ops_page_size(INT32_MAX, &limit, &err), MU_ERANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(roles),      cmocka_unit_test(from_store), cmocka_unit_test(scope),
		cmocka_unit_test(job_owner),  cmocka_unit_test(visibility), cmocka_unit_test(auth_cache),
		cmocka_unit_test(page_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
