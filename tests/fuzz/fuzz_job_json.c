/*
 * fuzz_job_json.c - libFuzzer driver for the job body decoder (api/jv.c +
 * api/codec_job.c), the code every POST /v1/jobs body goes through.
 *
 * Invariants checked on every input:
 *   - jv_parse and codec_job_decode never crash and, on failure, return a
 *     400-class code with a NUL-terminated field name;
 *   - a decoded job re-encodes (codec_job_encode) to valid JSON whose
 *     command, env, labels and dependencies equal the input's.
 *
 * Linked with replay_main.c it is a plain program that runs every file of
 * the directories (or files) given: the CTest replay of the seed corpus.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "codec_job.h"
#include "jv.h"

static void require(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

static void same_json(const json_t *in, const json_t *out, const char *what, const char *def)
{
	json_t *d = NULL;

	if (!in || json_is_null(in)) {
		d = json_loads(def, 0, NULL);
		in = d;
	}
	require(json_equal((json_t *)in, (json_t *)out), what);
	json_decref(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mu_error err = { 0 };
	struct mu_arena a;
	struct store_job j;
	json_t *v = NULL, *o;
	struct mu_buf b = MU_BUF_INIT;
	int ret;

	mu_arena_init(&a, 0);
	ret = jv_parse((const char *)data, size, &v, &err);
	if (ret < 0) {
		require(ret == MU_EJSON || ret == MU_EUTF8 || ret == MU_ERANGE, "parse code");
		goto out;
	}
	ret = codec_job_decode(v, &a, size & 1 ? "jobs.7." : "", &j, &err);
	if (ret < 0) {
		require(ret <= MU_EINVAL && ret >= MU_EMISSING, "decode code");
		require(memchr(err.field, '\0', sizeof(err.field)) != NULL, "field terminated");
		goto out;
	}
	j.id = 1;
	j.state = "PENDING";
	j.tenant = j.tenant ? j.tenant : "t";
	j.priority_class = "normal";
	j.created_at = "2026-01-01T00:00:00.000Z";
	codec_job_encode(&j, &b);
	o = json_loadb(b.p, b.len, JSON_REJECT_DUPLICATES, NULL);
	require(o != NULL, "encoded job is valid JSON");
	same_json(json_object_get(v, "command"), json_object_get(o, "command"), "command", "[]");
	same_json(json_object_get(v, "env"), json_object_get(o, "env"), "env", "{}");
	same_json(json_object_get(v, "labels"), json_object_get(o, "labels"), "labels", "{}");
	same_json(json_object_get(v, "dependencies"), json_object_get(o, "dependencies"),
		  "dependencies", "[]");
	require(json_integer_value(json_object_get(o, "nodes")) == j.nodes, "nodes");
	json_decref(o);
out:
	mu_buf_release(&b);
	mu_arena_release(&a);
	json_decref(v);
	return 0;
}
