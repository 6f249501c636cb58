/* Unit tests of the pure job codec and the strict JSON readers (api/jv.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "codec_job.h"
#include "jv.h"

struct fixture {
	struct mu_arena a;
	json_t *docs; /* decoded bodies, kept while their borrowed strings are read */
};

static int setup(void **state)
{
	struct fixture *f = mu_calloc(1, sizeof(*f));

	mu_arena_init(&f->a, 0);
	f->docs = json_array();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	mu_arena_release(&f->a);
	json_decref(f->docs);
	mu_free(f);
	return 0;
}

/* Decodes `text`; returns the code and leaves the error in *err. */
static int decode(struct fixture *f, const char *text, struct store_job *j, struct mu_error *err)
{
	json_t *v = NULL;
	int ret;

	mu_error_clear(err);
	ret = jv_parse(text, strlen(text), &v, err);
	if (ret < 0)
		return ret;
	ret = codec_job_decode(v, &f->a, "", j, err);
	json_array_append_new(f->docs, v); /* j borrows strings from v */
	return ret;
}

static void test_minimal_defaults(void **state)
{
	struct store_job j;
	struct mu_error err;

	assert_int_equal(decode(*state, "{\"nodes\":2,\"gpus_per_node\":8,\"command\":[\"a\",\"b\"]}",
				&j, &err), 0);
	assert_int_equal(j.nodes, 2);
	assert_int_equal(j.gpus_per_node, 8);
	assert_int_equal(j.procs_per_node, 1);
	assert_int_equal(j.time_limit, 0);
	assert_int_equal(j.min_nodes, 0);
	assert_null(j.tenant);
	assert_null(j.user);
	assert_string_equal(j.command, "[\"a\",\"b\"]");
	assert_string_equal(j.env, "{}");
	assert_string_equal(j.labels, "{}");
	assert_string_equal(j.dependencies, "[]");
	assert_string_equal(j.topo_required, "");
}

static void test_node_limits(void **state)
{
	struct store_job j;
	struct mu_error err;
	struct mu_buf b = MU_BUF_INIT;

	assert_int_equal(decode(*state, "{\"nodes\":1,\"gpus_per_node\":0,\"command\":[\"x\"],"
					"\"mem_per_node\":\"512M\",\"cpus_per_node\":8,\"workdir\":\"/w\"}",
				&j, &err), 0);
	assert_int_equal(j.mem_per_node, 512LL << 20);
	assert_int_equal(j.cpus_per_node, 8);
	assert_int_equal(decode(*state, "{\"nodes\":1,\"gpus_per_node\":0,\"command\":[\"x\"],"
					"\"mem_per_node\":2147483648}", &j, &err), 0);
	assert_int_equal(j.mem_per_node, 2147483648LL);
	assert_int_equal(j.cpus_per_node, 0);
	j.state = "PENDING";
	j.tenant = j.priority_class = "t";
	codec_job_encode(&j, &b);
	assert_non_null(strstr(b.p, "\"mem_per_node\":2147483648,\"cpus_per_node\":null"));
	mu_buf_release(&b);
}

static void test_time_limit_forms(void **state)
{
	static const struct {
		const char *v;
		int64_t secs;
	} ok[] = { { "90", 90 }, { "\"90\"", 5400 }, { "\"90:30\"", 5430 }, { "\"1:30:00\"", 5400 },
		   { "\"2-12\"", 216000 }, { "\"2-00:00:00\"", 172800 }, { "2147483647", 2147483647 } };
	static const struct {
		const char *v;
		int code;
	} bad[] = { { "\"1:2:3:4\"", MU_EINVAL }, { "\"abc\"", MU_EINVAL }, { "\"\"", MU_EINVAL },
		    { "0", MU_ERANGE }, { "-1", MU_ERANGE }, { "2147483648", MU_ERANGE },
		    { "1.5", MU_ETYPE }, { "true", MU_ETYPE }, { "[]", MU_ETYPE } };
	char text[256];
	struct store_job j;
	struct mu_error err;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(text, sizeof(text),
			 "{\"nodes\":1,\"gpus_per_node\":0,\"command\":[\"x\"],\"time_limit\":%s}", ok[i].v);
		assert_int_equal(decode(*state, text, &j, &err), 0);
		assert_int_equal(j.time_limit, ok[i].secs);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
			 "{\"nodes\":1,\"gpus_per_node\":0,\"command\":[\"x\"],\"time_limit\":%s}", bad[i].v);
		assert_int_equal(decode(*state, text, &j, &err), bad[i].code);
		assert_string_equal(err.field, "time_limit");
	}
}

static void test_field_errors(void **state)
{
	static const struct {
		const char *body;
		int code;
		const char *field;
	} cases[] = {
		{ "{\"gpus_per_node\":1,\"command\":[\"x\"]}", MU_EMISSING, "nodes" },
		{ "{\"nodes\":1,\"command\":[\"x\"]}", MU_EMISSING, "gpus_per_node" },
		{ "{\"nodes\":1,\"gpus_per_node\":1}", MU_EMISSING, "command" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"zzz\":1}", MU_EUNKNOWNFIELD, "zzz" },
		{ "{\"nodes\":\"1\",\"gpus_per_node\":1,\"command\":[\"x\"]}", MU_ETYPE, "nodes" },
		{ "{\"nodes\":10001,\"gpus_per_node\":1,\"command\":[\"x\"]}", MU_ERANGE, "nodes" },
		{ "{\"nodes\":2,\"min_nodes\":3,\"gpus_per_node\":1,\"command\":[\"x\"]}", MU_ERANGE, "min_nodes" },
		{ "{\"nodes\":1,\"gpus_per_node\":65,\"command\":[\"x\"]}", MU_ERANGE, "gpus_per_node" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[]}", MU_ERANGE, "command" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\",3]}", MU_ETYPE, "command.1" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":\"x\"}", MU_ETYPE, "command" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"env\":{\"A-B\":\"x\"}}", MU_EINVAL, "env.A-B" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"env\":{\"A\":1}}", MU_ETYPE, "env.A" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"labels\":{\"a b\":\"x\"}}", MU_EINVAL, "labels.a b" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"user\":\"a b\"}", MU_EINVAL, "user" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"max_retries\":101}", MU_ERANGE, "max_retries" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"topology\":{\"near\":\"rack\"}}", MU_EUNKNOWNFIELD, "topology.near" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"dependencies\":[{\"type\":\"after\",\"job_id\":1}]}", MU_EINVAL, "dependencies.0.type" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"dependencies\":[{\"type\":\"afterok\",\"job_id\":0}]}", MU_ERANGE, "dependencies.0.job_id" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"name\":\"a\\u0001b\"}", MU_EINVAL, "name" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"dependencies\":[{\"type\":\"afterok\",\"job_id\":1,\"x\":1}]}", MU_EUNKNOWNFIELD, "dependencies.0.x" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"dependencies\":[7]}", MU_ETYPE, "dependencies.0" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"topology\":\"rack\"}", MU_ETYPE, "topology" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"workdir\":\"rel/dir\"}", MU_EINVAL, "workdir" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"mem_per_node\":1024}", MU_ERANGE, "mem_per_node" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"mem_per_node\":\"12X\"}", MU_EINVAL, "mem_per_node" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"mem_per_node\":\"1K\"}", MU_ERANGE, "mem_per_node" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"mem_per_node\":true}", MU_ETYPE, "mem_per_node" },
		{ "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"cpus_per_node\":0}", MU_ERANGE, "cpus_per_node" },
	};
	struct store_job j;
	struct mu_error err;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret = decode(*state, cases[i].body, &j, &err);

		if (ret != cases[i].code || strcmp(err.field, cases[i].field))
			fail_msg("case %zu (%s): got %d field '%s' (%s)", i, cases[i].body, ret, err.field,
				 err.msg);
	}
}

static void test_string_limits(void **state)
{
	struct mu_buf b = MU_BUF_INIT;
	struct store_job j;
	struct mu_error err;

	/* 256 characters of 2-byte UTF-8: fine; 257: too long */
	for (int n = 256; n <= 257; n++) {
		mu_buf_reset(&b);
		mu_buf_adds(&b, "{\"nodes\":1,\"gpus_per_node\":1,\"command\":[\"x\"],\"name\":\"");
		for (int i = 0; i < n; i++)
			mu_buf_adds(&b, "\xc3\xa9");
		mu_buf_adds(&b, "\"}");
		assert_int_equal(decode(*state, b.p, &j, &err), n == 256 ? 0 : MU_ETOOLONG);
	}
	mu_buf_release(&b);
}

static void test_body_level(void **state)
{
	static const struct {
		const char *body;
		size_t len;
		int code;
	} cases[] = {
		{ "", 0, MU_EJSON },
		{ "{", 1, MU_EJSON },
		{ "{\"a\":1,\"a\":2}", 13, MU_EJSON },
		{ "{\"a\":\"\\u0000\"}", 14, MU_EJSON },
		{ "{\"a\":\"x\"}\0", 10, MU_EJSON },
		{ "{\"a\":\"\xff\"}", 9, MU_EUTF8 },
		{ "{\"a\":\"\xed\xa0\x80\"}", 11, MU_EUTF8 },
		{ "{\"a\":\"\xc0\xaf\"}", 10, MU_EUTF8 },
		{ "{\"a\":99999999999999999999999}", 29, MU_ERANGE },
		{ "{} x", 4, MU_EJSON },
	};
	struct mu_error err;
	json_t *v;
	char deep[200];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = NULL;
		assert_int_equal(jv_parse(cases[i].body, cases[i].len, &v, &err), cases[i].code);
		assert_null(v);
		assert_string_equal(err.field, "");
	}
	memset(deep, '[', 33);
	memset(deep + 33, ']', 33);
	assert_int_equal(jv_parse(deep, 66, &v, &err), MU_EJSON);
	assert_int_equal(jv_parse(deep + 1, 64, &v, &err), 0);
	json_decref(v);
	(void)state;
}

static void test_encode_roundtrip(void **state)
{
	struct fixture *f = *state;
	struct store_job j;
	struct mu_error err;
	struct mu_buf b = MU_BUF_INIT;
	json_error_t je;
	json_t *o;

	assert_int_equal(decode(f, "{\"nodes\":4,\"gpus_per_node\":8,\"command\":[\"a\\\"q\"],"
				   "\"env\":{\"X\":\"\\u00e9\"},\"labels\":{\"k\":\"v\"},\"name\":\"t\\tab\","
				   "\"topology\":{\"preferred\":\"rack\"},\"min_nodes\":2}",
				&j, &err), 0);
	j.id = 42;
	j.state = "PENDING";
	j.tenant = "ml";
	j.user = "ann";
	j.priority_class = "normal";
	j.time_limit = 3600;
	j.created_at = "2026-11-30T06:14:40.123Z";
	codec_job_encode(&j, &b);
	o = json_loadb(b.p, b.len, JSON_REJECT_DUPLICATES, &je);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "id")), 42);
	assert_string_equal(json_string_value(json_object_get(o, "name")), "t\tab");
	assert_string_equal(json_string_value(json_array_get(json_object_get(o, "command"), 0)), "a\"q");
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "env"), "X")), "\xc3\xa9");
	assert_true(json_is_null(json_object_get(json_object_get(o, "topology"), "required")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "topology"), "preferred")), "rack");
	assert_int_equal(json_integer_value(json_object_get(o, "min_nodes")), 2);
	assert_string_equal(json_string_value(json_object_get(o, "pending_reason")), "Priority");
	assert_true(json_is_null(json_object_get(o, "ended_at")));
	assert_true(json_is_null(json_object_get(o, "exit_code")));
	json_decref(o);
	mu_buf_release(&b);
}

/* jv_split_array: the plain batch body splits into its values' texts; any
 * other text is refused (the caller then parses it whole). */
static void test_split_array(void **state)
{
	static const char *const refused[] = {
		"", "[]", "{}", "{\"jobs\":[]}", "{\"jobs\":[1,]}", "{\"jobs\":[1 2]}",
		"{\"jobs\":[1],\"x\":2}", "{\"x\":[1]}", "{\"job\\u0073\":[1]}", "{\"jobs\":1}",
		"{\"jobs\":[1]", "{\"jobs\":[\"a]}", "{\"jobs\":[{\"a\":1}]} x", "{\"jobs\":[,1]}",
		"{\"jobs\":[\xff]}", NULL,
	};
	const char *ok = " {\n\"jobs\" : [ {\"a\":\"]}\\\"\"} ,\"x\\\"y\",-3.5e2,[1,{\"b\":[]}],null\t]\r}\n";
	const char *want[] = { "{\"a\":\"]}\\\"\"}", "\"x\\\"y\"", "-3.5e2", "[1,{\"b\":[]}]", "null" };
	struct jv_span sp[8];
	char deep[128];
	long n;

	(void)state;
	n = jv_split_array(ok, strlen(ok), "jobs", sp, 8);
	assert_int_equal(n, 5);
	for (long i = 0; i < n; i++) {
		assert_int_equal(sp[i].len, strlen(want[i]));
		assert_memory_equal(sp[i].p, want[i], sp[i].len);
	}
	assert_int_equal(jv_split_array(ok, strlen(ok), "jobs", sp, 4), -1); /* over cap */
	for (const char *const *t = refused; *t; t++)
		assert_int_equal(jv_split_array(*t, strlen(*t), "jobs", sp, 8), -1);
	assert_int_equal(jv_split_array("{\"jobs\":[1]}\0", 13, "jobs", sp, 8), -1); /* NUL */
	/* deeper than JV_MAX_DEPTH anywhere: refused, as jv_parse refuses it */
	strcpy(deep, "{\"jobs\":[");
	for (int i = 0; i < 40; i++)
		strcat(deep, "[");
	for (int i = 0; i < 40; i++)
		strcat(deep, "]");
	strcat(deep, "]}");
	assert_int_equal(jv_split_array(deep, strlen(deep), "jobs", sp, 8), -1);
	/* split but malformed inside a value: the value alone does not parse */
	n = jv_split_array("{\"jobs\":[{\"a\":1,,}]}", 20, "jobs", sp, 8);
	assert_int_equal(n, 1);
	assert_null(json_loadb(sp[0].p, sp[0].len, JSON_DECODE_ANY, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_minimal_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_time_limit_forms, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_field_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_string_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_body_level, setup, teardown),
		cmocka_unit_test_setup_teardown(test_encode_roundtrip, setup, teardown),
		cmocka_unit_test(test_split_array),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
