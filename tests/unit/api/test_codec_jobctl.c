/* test_codec_jobctl.c - the pure parts of changing jobs, arrays and
 * settings: RFC 3339 begin times, the PATCH body, array specs (each with its
 * table of bad values), the array expansion and the settings checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arrayspec.h"
#include "codec_job.h"
#include "codec_settings.h"

static void rfc3339(void **state)
{
	static const struct { const char *s; int64_t t; } good[] = {
		{ "1970-01-01T00:00:00Z", 0 },
		{ "2027-01-31T08:00:00Z", 1801382400 },
		{ "2027-01-31T09:00:00+01:00", 1801382400 },
		{ "2027-01-31T07:30:00.123456-00:30", 1801382400 },
		{ "2027-01-31t08:00:00z", 1801382400 },
		{ "2027-01-31 08:00:00Z", 1801382400 },
		{ "2028-02-29T00:00:00Z", 1835395200 },
	};
	static const char *const bad[] = {
		"", "now+1hour", "16:00", "2027-01-31", "2027-01-31T08:00", "2027-01-31T08:00:00",
		"2027-02-29T00:00:00Z", "2027-13-01T00:00:00Z", "2027-01-32T00:00:00Z",
		"2027-01-31T24:00:00Z", "2027-01-31T08:60:00Z", "2027-01-31T08:00:00+2:00",
		"2027-01-31T08:00:00+24:00", "2027-01-31T08:00:00.Z", "2027-01-31T08:00:00Zx",
		"27-01-31T08:00:00Z", "2027/01/31T08:00:00Z", " 2027-01-31T08:00:00Z",
		"2100-02-29T00:00:00Z",
	};
	int64_t t;
	(void)state;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(codec_job_parse_rfc3339(good[i].s, &t), 0);
		assert_int_equal(t, good[i].t);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (codec_job_parse_rfc3339(bad[i], &t) == 0)
			fail_msg("'%s' was accepted", bad[i]);
	assert_int_equal(codec_job_parse_rfc3339("1969-12-31T23:59:59Z", &t), MU_ERANGE);
}

static void patch_body(void **state)
{
	struct mu_arena a;
	struct store_job_patch p;
	struct mu_error err;
	json_t *b;
	(void)state;

	mu_arena_init(&a, 0);
	b = json_loads("{\"time_limit\": \"1:00:00\", \"min_nodes\": null, \"labels\": {\"k\": \"v\"},"
		       " \"begin\": null, \"dependencies\": [{\"type\": \"afterok\", \"job_id\": 3},"
		       " {\"type\": \"singleton\"}]}", 0, NULL);
	assert_int_equal(codec_job_decode_patch(b, &a, &p, &err), 0);
	assert_true(p.has_time_limit && p.time_limit == 3600);
	assert_true(p.has_min_nodes && p.min_nodes == 0);
	assert_true(p.has_labels && !strcmp(p.labels, "{\"k\":\"v\"}"));
	assert_true(p.has_begin && p.begin == 0);
	assert_true(p.has_deps && p.ndeps == 1 && p.dep_ids[0] == 3);
	assert_false(p.has_nodes || p.has_class || p.has_gpus || p.has_name);
	json_decref(b);
	static const char *const bad[] = {
		"{}", "[]", "{\"state\": \"RUNNING\"}", "{\"time_limit\": null}", "{\"time_limit\": 0}",
		"{\"nodes\": 0}", "{\"nodes\": null}", "{\"gpus_per_node\": 65}", "{\"begin\": 5}",
		"{\"begin\": \"soon\"}", "{\"name\": 3}", "{\"priority_class\": \"\"}",
		"{\"dependencies\": [{\"type\": \"singleton\", \"job_id\": 1}]}",
		"{\"labels\": {\"a b\": \"x\"}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b = json_loads(bad[i], 0, NULL);
		mu_error_clear(&err);
		if (codec_job_decode_patch(b, &a, &p, &err) >= 0)
			fail_msg("'%s' was accepted", bad[i]);
		assert_true(mu_err_http_status(err.code) == 400);
		json_decref(b);
	}
	mu_arena_release(&a);
}

static void arrays(void **state)
{
	struct mu_arrayspec as;
	int32_t ids[64];
	(void)state;

	assert_int_equal(mu_arrayspec_parse("0-15%4", &as, ids, 64, NULL), 0);
	assert_true(as.count == 16 && as.min == 0 && as.max == 15 && as.step == 1 && as.throttle == 4);
	assert_int_equal(mu_arrayspec_parse("1,3,5-7", &as, ids, 64, NULL), 0);
	assert_true(as.count == 5 && as.min == 1 && as.max == 7 && as.step == 1 && as.throttle == 0);
	assert_true(ids[0] == 1 && ids[1] == 3 && ids[2] == 5 && ids[4] == 7);
	assert_int_equal(mu_arrayspec_parse("0-15:4", &as, ids, 64, NULL), 0);
	assert_true(as.count == 4 && as.max == 12 && as.step == 4);
	assert_int_equal(mu_arrayspec_parse("9,3,6", &as, ids, 64, NULL), 0);
	assert_true(ids[0] == 3 && ids[2] == 9 && as.step == 3);
	assert_int_equal(mu_arrayspec_parse("7", &as, NULL, 0, NULL), 0);
	assert_true(as.count == 1 && as.step == 1);
	assert_int_equal(mu_arrayspec_parse("0-9999", &as, NULL, 0, NULL), 0);
	assert_int_equal(as.count, 10000);
	static const char *const bad[] = {
		"", "x", "1-", "-1", "5-3", "0-15%0", "0-15%", "1,,2", "1,1", "0-3:0", "0-3:", "0-10000",
		"10000000", "0-15%4%4", "0-15 ", " 1", "1;2", "%4", "1-2-3", "0-3:1:1", "+1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (mu_arrayspec_parse(bad[i], &as, NULL, 0, NULL) == 0)
			fail_msg("'%s' was accepted", bad[i]);
	assert_int_equal(mu_arrayspec_parse("0-63", &as, ids, 10, NULL), MU_ERANGE);
}

static void expand(void **state)
{
	struct mu_arena a;
	struct store_job j = { 0 }, *out;
	struct mu_error err;
	size_t n;
	(void)state;

	mu_arena_init(&a, 0);
	j.array_spec = "2,4-5";
	j.nodes = 3;
	assert_int_equal(codec_job_expand_array(&j, &a, &out, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_true(out[0].array_task_id == 2 && out[1].array_task_id == 4 && out[2].array_task_id == 5);
	assert_true(out[2].nodes == 3 && !strcmp(out[2].array_spec, "2,4-5"));
	mu_arena_release(&a);
}

static void settings(void **state)
{
	const struct store_setting *s = store_settings_find("reservation_depth");
	const char **names;
	char **values;
	size_t n;
	struct mu_error err;
	json_t *b;
	(void)state;

	assert_non_null(s);
	assert_null(store_settings_find("nope"));
	b = json_loads("{\"reservation_depth\": 4, \"topology_levels\": [\"a\", \"b-1\"],"
		       " \"predict_runtimes\": false, \"weight_age\": 0.5}", 0, NULL);
	assert_int_equal(codec_settings_decode(b, &names, &values, &n, &err), 0);
	assert_int_equal(n, 4);
	codec_settings_release(names, values, n);
	json_decref(b);
	static const char *const bad[] = {
		"{}", "[]", "{\"nope\": 1}", "{\"reservation_depth\": -1}", "{\"reservation_depth\": 1.5}",
		"{\"reservation_depth\": \"1\"}", "{\"predict_runtimes\": 0}", "{\"topology_levels\": \"a\"}",
		"{\"topology_levels\": [\"A\"]}", "{\"topology_levels\": [\"a\", \"a\"]}",
		"{\"weight_age\": -1}", "{\"heartbeat_timeout\": 1}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b = json_loads(bad[i], JSON_DECODE_ANY, NULL);
		if (codec_settings_decode(b, &names, &values, &n, &err) >= 0)
			fail_msg("'%s' was accepted", bad[i]);
		json_decref(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rfc3339), cmocka_unit_test(patch_body), cmocka_unit_test(arrays),
		cmocka_unit_test(expand), cmocka_unit_test(settings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
