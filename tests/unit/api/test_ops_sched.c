/*
 * The pure part of the scheduler reads REST and gRPC share
 * (api/ops/ops_sched.c): a usage request's checks, with REST's absent
 * (NULL) and gRPC's "" alike.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "ops_sched.h"

static void usage_args(void **state)
{
	struct ops_usage_args u;
	struct mu_error err = { 0 };
	(void)state;

	assert_int_equal(ops_usage_args(NULL, NULL, NULL, &u, &err), 0);
	assert_null(u.from);
	assert_null(u.to);
	assert_false(u.by_user);
	assert_int_equal(ops_usage_args("", "", "", &u, &err), 0);
	assert_null(u.from);
	assert_null(u.to);
	assert_false(u.by_user);
	assert_int_equal(ops_usage_args("2026-01-01", "2026-02-01T00:00:00Z", "user", &u, &err), 0);
	assert_string_equal(u.from, "2026-01-01");
	assert_true(u.by_user);
	assert_int_equal(ops_usage_args(NULL, NULL, "tenant", &u, &err), 0);
	assert_false(u.by_user);

	static const struct { const char *from, *to, *g, *field; } bad[] = {
		{ "yesterday", NULL, NULL, "from" },
		{ "2026-1-01", NULL, NULL, "from" },
		{ "2026-01-01x", NULL, NULL, "from" },
		{ NULL, "now", NULL, "to" },
		{ NULL, NULL, "node", "group_by" },
		{ NULL, NULL, "User", "group_by" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(ops_usage_args(bad[i].from, bad[i].to, bad[i].g, &u, &err), MU_EINVAL);
		assert_string_equal(err.field, bad[i].field);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(usage_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
