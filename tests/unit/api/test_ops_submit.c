/*
 * The rules of a submit REST and gRPC share (api/ops/ops_submit.c): the
 * idempotency key, the decode with the owner rule, the digest of a keyed
 * request and the naming of an admission problem.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "ops_submit.h"

static const struct ops_principal ml = { .role = OPS_ROLE_TENANT, .token_id = 3, .tenant_id = 7,
					 .tenant = "ml", .tenant_path = "root/ml", .user = "ana" };

static void idem_key(void **state)
{
	struct mu_error err = { 0 };
	char big[OPS_IDEM_KEY_MAX + 2];
	(void)state;

	assert_int_equal(ops_idem_key_check("k-1", "f", &err), 0);
	assert_int_equal(ops_idem_key_check("a b", "f", &err), 0);
	assert_int_equal(ops_idem_key_check("~!", "f", &err), 0);
	memset(big, 'k', sizeof(big));
	big[OPS_IDEM_KEY_MAX] = '\0';
	assert_int_equal(ops_idem_key_check(big, "f", &err), 0);
	big[OPS_IDEM_KEY_MAX] = 'k';
	big[OPS_IDEM_KEY_MAX + 1] = '\0';
	assert_int_equal(ops_idem_key_check(big, "f", &err), MU_EINVAL);
	static const char *const bad[] = { "", " a", "a ", " ", "a\tb", "\x7f", "\xc3\xa9", NULL };
	for (const char *const *k = bad; *k; k++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(ops_idem_key_check(*k, "Idempotency-Key", &err), MU_EINVAL);
		assert_string_equal(err.field, "Idempotency-Key");
	}
}

static void prepare(void **state)
{
	struct mu_arena a;
	struct mu_error err = { 0 };
	struct store_job_submit s;
	struct store_job j;
	json_t *body = json_pack("{s:i, s:i, s:[s]}", "nodes", 1, "gpus_per_node", 2, "command", "x");
	(void)state;

	mu_arena_init(&a, 0);
	assert_int_equal(ops_submit_prepare(&ml, &a, body, NULL, "k", "req", 3, &s, &err), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.jobs[0].tenant, "ml");
	assert_string_equal(s.scope, "root/ml");
	assert_null(s.idem_key);
	assert_int_equal(ops_submit_prepare(&ml, &a, body, "", "k", "req", 3, &s, &err), MU_EINVAL);
	assert_int_equal(ops_submit_prepare(&ml, &a, body, "key 1", "k", "req", 3, &s, &err), 0);
	assert_string_equal(s.idem_key, "key 1");
	assert_int_equal(strlen(s.request_sha256), 64);
	assert_int_equal(ops_submit_prepare(&ml, &a, body, "key ", "idempotency_key", "req", 3, &s, &err),
			 MU_EINVAL);
	assert_string_equal(err.field, "idempotency_key");
	json_decref(body);

	/* the owner rule, fields named with the prefix */
	body = json_pack("{s:s, s:i, s:i, s:[s]}", "user", "bob", "nodes", 1, "gpus_per_node", 2,
			 "command", "x");
	assert_int_equal(ops_submit_decode(&ml, &a, body, "jobs.4.", &j, &err), MU_EFORBIDDEN);
	assert_string_equal(err.field, "jobs.4.user");
	json_decref(body);

	/* an array is its tasks */
	body = json_pack("{s:s, s:i, s:i, s:[s]}", "array", "0-3", "nodes", 1, "gpus_per_node", 2,
			 "command", "x");
	assert_int_equal(ops_submit_prepare(&ml, &a, body, NULL, "k", NULL, 0, &s, &err), 0);
	assert_int_equal(s.n, 4);
	json_decref(body);
	mu_arena_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(idem_key),
		cmocka_unit_test(prepare),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
