#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "config.h"
#include "duration.h"
#include "error.h"

static void slurm_time_forms(void **state)
{
	static const struct { const char *in; int64_t secs; } ok[] = {
		{ "90", 5400 },        { "90:30", 5430 },       { "1:30:00", 5400 },
		{ "2-12", 216000 },    { "2-00:00:00", 172800 }, { "0-1:30", 5400 },
		{ "1", 60 },           { "0:45", 45 },
	};
	static const char *const bad[] = { "", "abc", "1:2:3:4", "-5", "1-", "-", ":30", "30:", "1.5",
					   "1h", " 90", "90 ", "2-1:2:3:4", "1--2", "+5", "0x10", "1-2-3" };
	int64_t s;
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(mu_duration_parse_slurm(ok[i].in, &s), 0);
		assert_int_equal(s, ok[i].secs);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_not_equal(mu_duration_parse_slurm(bad[i], &s), 0);
	assert_int_equal(mu_duration_parse_slurm("99999999999", &s), MU_ERANGE);
}

static void duration_format(void **state)
{
	char buf[32];
	(void)state;
	mu_duration_format(5430, buf, sizeof(buf));
	assert_string_equal(buf, "1:30:30");
	mu_duration_format(172800 + 61, buf, sizeof(buf));
	assert_string_equal(buf, "2-00:01:01");
	mu_duration_format(59, buf, sizeof(buf));
	assert_string_equal(buf, "0:59");
}

static void error_table(void **state)
{
	struct mu_error e;
	(void)state;
	assert_int_equal(mu_err_http_status(MU_EUNKNOWNFIELD), 400);
	assert_int_equal(mu_err_http_status(MU_ETOOBIG), 413);
	assert_int_equal(mu_err_http_status(MU_EQUOTA), 429);
	assert_int_equal(mu_err_grpc_status(MU_ENOTFOUND), 5);
	assert_string_equal(mu_err_slug(MU_EIDEMPOTENCY), "idempotency-key-reused");
	assert_int_equal(mu_err_http_status(12345), 500);
	assert_int_equal(mu_error_set(&e, MU_ERANGE, "nodes", "must be >= %d", 1), MU_ERANGE);
	assert_string_equal(e.field, "nodes");
	assert_string_equal(e.msg, "must be >= 1");
}

static void config_table(void **state)
{
	char *s = NULL;
	long long n = 0, sz = 0, ms = 0;
	bool b = false;
	const struct mu_opt opts[] = {
		{ "name", "MU_TEST_NAME", MU_OPT_STR, "dflt", "a string", &s },
		{ "count", "MU_TEST_COUNT", MU_OPT_INT, "3", "a number", &n },
		{ "body-limit", NULL, MU_OPT_SIZE, "1m", "a size", &sz },
		{ "timeout", NULL, MU_OPT_DURATION, "250ms", "a duration", &ms },
		{ "verbose", NULL, MU_OPT_BOOL, "false", "a flag", &b },
	};
	char *argv[] = { "prog", "--count=7", "--verbose", "--timeout", "2s", "rest", NULL };
	struct mu_error err;
	(void)state;
	setenv("MU_TEST_NAME", "fromenv", 1);
	setenv("MU_TEST_COUNT", "5", 1);
	assert_int_equal(mu_config_parse(opts, 5, 6, argv, "test", &err), 5);
	assert_string_equal(s, "fromenv");
	assert_int_equal(n, 7);
	assert_int_equal(sz, 1024 * 1024);
	assert_int_equal(ms, 2000);
	assert_true(b);
	mu_config_release(opts, 5);

	char *bad[] = { "prog", "--count", "x", NULL };
	assert_int_equal(mu_config_parse(opts, 5, 3, bad, "test", &err), MU_EINVAL);
	mu_config_release(opts, 5);
	char *unknown[] = { "prog", "--nope", NULL };
	assert_int_equal(mu_config_parse(opts, 5, 2, unknown, "test", &err), MU_EINVAL);
	mu_config_release(opts, 5);
	/* days, for retentions (muster-agent --log-retention 7d) */
	assert_int_equal(mu_parse_duration_ms("7d", &ms), 0);
	assert_int_equal(ms, 7LL * 24 * 3600 * 1000);
	assert_int_equal(mu_parse_duration_ms("7w", &ms), MU_EINVAL);
}

static void arena(void **state)
{
	struct mu_arena a;
	(void)state;
	mu_arena_init(&a, 64);
	for (int i = 0; i < 1000; i++) {
		char *p = mu_arena_alloc(&a, (size_t)(i % 100) + 1);
		assert_true(((uintptr_t)p & 15) == 0);
		memset(p, 'x', (size_t)(i % 100) + 1);
	}
	assert_string_equal(mu_arena_strdup(&a, "hello"), "hello");
	mu_arena_reset(&a);
	assert_non_null(mu_arena_alloc(&a, 10));
	mu_arena_release(&a);
}

static void buf_add_int(void **state)
{
	static const struct { int64_t v; const char *s; } cases[] = {
		{ 0, "0" }, { 7, "7" }, { -7, "-7" }, { 1234567890, "1234567890" },
		{ INT64_MAX, "9223372036854775807" }, { INT64_MIN, "-9223372036854775808" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mu_buf b = MU_BUF_INIT;
		mu_buf_adds(&b, "x=");
		mu_buf_add_int(&b, cases[i].v);
		mu_buf_addc(&b, '\0');
		assert_string_equal(b.p + 2, cases[i].s);
		mu_buf_release(&b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(slurm_time_forms), cmocka_unit_test(duration_format),
		cmocka_unit_test(error_table),      cmocka_unit_test(config_table),
		cmocka_unit_test(arena),            cmocka_unit_test(buf_add_int),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
