/* The job codec's launch fields: launcher, on_shrink, signal, launch_argv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "codec_job.h"
#include "jv.h"

static json_t *docs;

static int decode(struct mu_arena *a, const char *text, struct store_job *j, struct mu_error *err)
{
	json_t *v = NULL;
	int ret;

	mu_error_clear(err);
	ret = jv_parse(text, strlen(text), &v, err);
	if (ret < 0)
		return ret;
	ret = codec_job_decode(v, a, "", j, err);
	json_array_append_new(docs, v);
	return ret;
}

#define BASE "{\"nodes\":2,\"min_nodes\":1,\"gpus_per_node\":4,\"command\":[\"t.py\",\"-x\"]"

static void launch_fields(void **state)
{
	struct mu_arena a;
	struct store_job j;
	struct mu_error err;
	struct mu_buf b = MU_BUF_INIT;
	(void)state;
	mu_arena_init(&a, 0);
	assert_int_equal(decode(&a, BASE "}", &j, &err), 0);
	assert_string_equal(j.launcher, "none");
	assert_string_equal(j.on_shrink, "restart");
	assert_string_equal(j.signal_name, "");
	assert_int_equal(decode(&a, BASE ",\"launcher\":\"torchrun\",\"on_shrink\":\"keep\","
				"\"signal\":{\"name\":\"SIGUSR1\",\"batch_only\":true}}", &j, &err), 0);
	assert_string_equal(j.launcher, "torchrun");
	assert_string_equal(j.on_shrink, "keep");
	assert_string_equal(j.signal_name, "USR1");
	assert_int_equal(j.signal_before, 60);
	assert_true(j.signal_batch_only);
	j.id = 9;
	j.state = "PENDING";
	j.tenant = j.priority_class = "t";
	j.runs = "[]";
	codec_job_encode(&j, &b);
	assert_non_null(strstr(b.p, "\"launcher\":\"torchrun\",\"on_shrink\":\"keep\","
				    "\"signal\":{\"name\":\"USR1\",\"before\":60,\"batch_only\":true}"));
	assert_non_null(strstr(b.p, "\"launch_argv\":[\"python3\",\"-m\",\"torch.distributed.run\","
				    "\"--nnodes=1:2\",\"--nproc_per_node=4\",\"--rdzv_backend=c10d\","
				    "\"--rdzv_endpoint=$MASTER_ADDR:$MASTER_PORT\",\"--rdzv_id=muster-9\","));
	assert_non_null(strstr(b.p, "\"t.py\",\"-x\"]"));
	mu_buf_release(&b);

	static const struct {
		const char *extra;
		int code;
		const char *field;
	} bad[] = {
		{ ",\"launcher\":\"mpirun\"", MU_EINVAL, "launcher" },
		{ ",\"launcher\":1", MU_ETYPE, "launcher" },
		{ ",\"on_shrink\":\"drop\"", MU_EINVAL, "on_shrink" },
		{ ",\"signal\":\"USR1\"", MU_ETYPE, "signal" },
		{ ",\"signal\":{}", MU_EMISSING, "signal.name" },
		{ ",\"signal\":{\"name\":\"USR3\"}", MU_EINVAL, "signal.name" },
		{ ",\"signal\":{\"name\":\"99\"}", MU_EINVAL, "signal.name" },
		{ ",\"signal\":{\"name\":\"USR1\",\"before\":0}", MU_ERANGE, "signal.before" },
		{ ",\"signal\":{\"name\":\"USR1\",\"before\":65536}", MU_ERANGE, "signal.before" },
		{ ",\"signal\":{\"name\":\"USR1\",\"batch_only\":1}", MU_ETYPE, "signal.batch_only" },
		{ ",\"signal\":{\"name\":\"USR1\",\"at\":1}", MU_EUNKNOWNFIELD, "signal.at" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[256];
		snprintf(text, sizeof(text), BASE "%s}", bad[i].extra);
		assert_int_equal(decode(&a, text, &j, &err), bad[i].code);
		assert_string_equal(err.field, bad[i].field);
	}
	mu_arena_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(launch_fields) };
	docs = json_array();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	json_decref(docs);
	return rc;
}
