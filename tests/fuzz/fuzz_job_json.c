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

/* A body jv_split_array splits is valid JSON exactly when every value it
 * split out parses alone (the batch endpoint relies on it). */
static void split_agrees(const char *data, size_t size)
{
	struct jv_span sp[64];
	struct mu_error err = { 0 };
	json_t *whole = NULL;
	long n = jv_split_array(data, size, "jobs", sp, 64);
	bool all = true;

	if (n < 0)
		return;
	for (long i = 0; i < n; i++) {
		json_t *v = json_loadb(sp[i].p, sp[i].len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
				       NULL);

		all &= v != NULL;
		json_decref(v);
	}
	require((jv_parse(data, size, &whole, &err) == 0) == all, "split values parse as the whole");
	if (whole)
		require(json_array_size(json_object_get(whole, "jobs")) == (size_t)n, "split count");
	json_decref(whole);
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
	split_agrees((const char *)data, size);
	ret = jv_parse((const char *)data, size, &v, &err);
	if (ret < 0) {
		require(ret == MU_EJSON || ret == MU_EUTF8 || ret == MU_ERANGE, "parse code");
		goto out;
	}
	{ /* a PATCH /v1/jobs/{id} body: 0 or a 400-class code */
		struct store_job_patch p;

		ret = codec_job_decode_patch(v, &a, &p, &err);
		require(ret == 0 || (ret <= MU_EINVAL && ret >= MU_EMISSING), "patch decode code");
		mu_error_clear(&err);
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
