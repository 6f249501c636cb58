/* The `script` field of a job body (api/codec_script.c through codec_job_decode). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "codec_job.h"
#include "codec_script.h"
#include "sbatch.h"

static void script_job(void **state)
{
	struct mu_arena a;
	struct store_job j;
	struct mu_error err = { 0 };
	json_t *body = json_loads(
		"{\"script\":\"#!/bin/bash\\n#SBATCH -N 2 --ntasks-per-node=4 -J fromscript\\n"
		"#SBATCH -t 10 --gres=gpu:a100:2 --export=A=1\\n#SBATCH --mail-type=END\\necho $1\\n\","
		"\"script_args\":[\"x\"],\"nodes\":3,\"env\":{\"A\":\"body\",\"B\":\"2\"}}",
		0, NULL);
	json_t *cmd;
	(void)state;

	mu_arena_init(&a, 0);
	assert_int_equal(codec_job_decode(body, &a, "", &j, &err), 0);
	assert_int_equal(j.nodes, 3); /* the body wins */
	assert_int_equal(j.procs_per_node, 4);
	assert_int_equal(j.gpus_per_node, 2);
	assert_string_equal(j.gpu_model, "a100");
	assert_int_equal(j.time_limit, 600);
	assert_string_equal(j.name, "fromscript");
	assert_string_equal(j.env, "{\"A\":\"body\",\"B\":\"2\"}");
	cmd = json_loads(j.command, 0, NULL);
	assert_int_equal(json_array_size(cmd), 6);
	assert_string_equal(json_string_value(json_array_get(cmd, 0)), "/bin/sh");
	assert_string_equal(json_string_value(json_array_get(cmd, 3)), CODEC_SCRIPT_ARGV0);
	assert_non_null(strstr(json_string_value(json_array_get(cmd, 4)), "#SBATCH -N 2"));
	assert_string_equal(json_string_value(json_array_get(cmd, 5)), "x");
	assert_true(codec_script_is_command(cmd));
	json_decref(cmd);
	json_decref(body);
	mu_arena_release(&a);

	/* defaults: name "sbatch", one node, no GPUs; a long script fits */
	{
		size_t n = 8000;
		char *big = malloc(n + 64);
		json_t *b2;
		memcpy(big, "#!/bin/sh\n", 10);
		memset(big + 10, 'x', n);
		big[10 + n] = '\0';
		b2 = json_pack("{s:s}", "script", big);
		mu_arena_init(&a, 0);
		assert_int_equal(codec_job_decode(b2, &a, "", &j, &err), 0);
		assert_string_equal(j.name, "sbatch");
		assert_int_equal(j.nodes, 1);
		assert_int_equal(j.gpus_per_node, 0);
		json_decref(b2);
		mu_arena_release(&a);
		free(big);
	}
}

static void script_bad(void **state)
{
	static const struct {
		const char *body;
		const char *field;
		const char *msg;
	} bad[] = {
		{ "{\"script\":\"#!/bin/sh\\n#SBATCH --constraint=x\\n\"}", "script", "line 2: --constraint cannot be honoured" },
		{ "{\"script\":\"#!/bin/sh\\n#SBATCH --nodelist=n1\\n\"}", "script", "--nodelist" },
		{ "{\"script\":\"#!/bin/sh\\n#SBATCH -N 0\\n\"}", "script", "out of range" },
		{ "{\"script\":\"#!/bin/sh\\n#SBATCH --export=NAME\\n\"}", "script", "no value" },
		{ "{\"script\":\"x\",\"command\":[\"true\"]}", "command", "script_args" },
		{ "{\"script_args\":[\"a\"],\"command\":[\"true\"],\"nodes\":1,\"gpus_per_node\":0}", "script_args", "only with" },
		{ "{\"script\":5}", "script", "string" },
		{ "{\"script\":\"\"}", "script", "empty" },
		{ "{\"script\":\"a\\u0000b\"}", "script", "NUL" },
		{ "{\"script\":\"x\",\"script_args\":\"a\"}", "script_args", "array" },
		{ "{\"script\":\"x\",\"script_args\":[1]}", "script_args.0", "" },
		{ "{\"script\":\"#!/bin/sh\\n#SBATCH -N 2\\n\",\"nodes\":\"x\"}", "nodes", "" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct mu_arena a;
		struct store_job j;
		struct mu_error err = { 0 };
		json_t *body = json_loads(bad[i].body, JSON_ALLOW_NUL, NULL);

		assert_non_null(body);
		mu_arena_init(&a, 0);
		if (codec_job_decode(body, &a, "", &j, &err) >= 0)
			fail_msg("%s accepted", bad[i].body);
		if (strcmp(err.field, bad[i].field) || !strstr(err.msg, bad[i].msg))
			fail_msg("%s: field '%s' msg '%s'", bad[i].body, err.field, err.msg);
		json_decref(body);
		mu_arena_release(&a);
	}
	/* over the cap */
	{
		char *big = malloc(MU_SBATCH_MAX_SCRIPT + 2);
		json_t *b;
		struct mu_arena a;
		struct store_job j;
		struct mu_error err = { 0 };
		memset(big, 'x', MU_SBATCH_MAX_SCRIPT + 1);
		big[MU_SBATCH_MAX_SCRIPT + 1] = '\0';
		b = json_pack("{s:s}", "script", big);
		mu_arena_init(&a, 0);
		assert_true(codec_job_decode(b, &a, "", &j, &err) < 0);
		assert_string_equal(err.field, "script");
		json_decref(b);
		mu_arena_release(&a);
		free(big);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(script_job),
		cmocka_unit_test(script_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
