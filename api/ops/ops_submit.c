/*
 * ops_submit.c - the rules of a submit (ops_submit.h).
 */
#include "ops_submit.h"

#include <stdio.h>
#include <string.h>

#include "codec_job.h"
#include "store_auth.h"

int ops_idem_key_check(const char *key, const char *field, struct mu_error *err)
{
	size_t n = key ? strlen(key) : 0;

	if (n < 1 || n > OPS_IDEM_KEY_MAX)
		return mu_error_set(err, MU_EINVAL, field, "must be 1..%d characters", OPS_IDEM_KEY_MAX);
	for (size_t i = 0; i < n; i++)
		if (key[i] < 0x20 || key[i] > 0x7e)
			return mu_error_set(err, MU_EINVAL, field, "must be printable ASCII");
	if (key[0] == ' ' || key[n - 1] == ' ')
		return mu_error_set(err, MU_EINVAL, field, "must not start or end with a space");
	return 0;
}

int ops_submit_decode(const struct ops_principal *p, struct mu_arena *a, json_t *body,
		      const char *prefix, struct store_job *j, struct mu_error *err)
{
	int ret = codec_job_decode(body, a, prefix, j, err);

	if (ret < 0)
		return ret;
	return ops_job_owner(p, &j->tenant, &j->user, prefix, err);
}

int ops_submit_prepare(const struct ops_principal *p, struct mu_arena *a, json_t *body,
		       const char *key, const char *key_field, const void *req, size_t req_len,
		       struct store_job_submit *s, struct mu_error *err)
{
	int ret;

	memset(s, 0, sizeof(*s));
	if (key && (ret = ops_idem_key_check(key, key_field, err)) < 0)
		return ret;
	s->jobs = mu_arena_alloc(a, sizeof(*s->jobs));
	s->n = 1;
	ret = ops_submit_decode(p, a, body, "", &s->jobs[0], err);
	if (ret < 0)
		return ret;
	/* an array is one job per task, written as one request: the answer is
	 * the first task, whose id names the array (and carries the key: a
	 * retry answers it again) */
	if (s->jobs[0].array_spec) {
		ret = codec_job_expand_array(&s->jobs[0], a, &s->jobs, &s->n, err);
		if (ret < 0)
			return ret;
	}
	s->scope = ops_scope_path(p);
	s->arena = a;
	if (key) {
		char *hex = mu_arena_alloc(a, 65);

		store_sha256_hex(req, req_len, hex);
		s->idem_key = key;
		s->request_sha256 = hex;
	}
	return 0;
}

int ops_submit_batch_item(const struct ops_principal *p, struct mu_arena *a, json_t *item,
			  size_t i, struct store_job *j, struct mu_error *err)
{
	char prefix[32];
	int ret;

	snprintf(prefix, sizeof(prefix), "jobs.%zu.", i);
	if (!json_is_object(item)) {
		ret = mu_error_set(err, MU_ETYPE, "", "must be a job object");
		snprintf(err->field, sizeof(err->field), "jobs.%zu", i);
		return ret;
	}
	return ops_submit_decode(p, a, item, prefix, j, err);
}

int ops_submit_batch_expand(struct ops_batch *b, struct store_job_submit *s)
{
	struct store_job **tasks = NULL, *jobs;
	size_t *counts, total = 0, at = 0;
	bool any = false;

	memset(b, 0, sizeof(*b));
	for (size_t i = 0; i < s->n; i++)
		any |= s->jobs[i].array_spec != NULL;
	if (!any)
		return 0;
	tasks = mu_arena_alloc(s->arena, sizeof(*tasks) * s->n);
	counts = mu_arena_alloc(s->arena, sizeof(*counts) * s->n);
	for (size_t i = 0; i < s->n; i++) {
		tasks[i] = &s->jobs[i];
		counts[i] = 1;
		if (s->jobs[i].array_spec &&
		    codec_job_expand_array(&s->jobs[i], s->arena, &tasks[i], &counts[i], &s->err) < 0) {
			snprintf(s->err.field, sizeof(s->err.field), "jobs.%zu.array", i);
			return s->err.code;
		}
		total += counts[i];
	}
	if (total > CODEC_JOB_MAX_BATCH)
		return mu_error_set(&s->err, MU_ERANGE, "jobs",
				    "must hold 1..%d jobs, every task of its arrays counted (%zu)",
				    CODEC_JOB_MAX_BATCH, total);
	jobs = mu_arena_alloc(s->arena, sizeof(*jobs) * total);
	b->body_index = mu_arena_alloc(s->arena, sizeof(*b->body_index) * total);
	for (size_t i = 0; i < s->n; i++)
		for (size_t k = 0; k < counts[i]; k++, at++) {
			jobs[at] = tasks[i][k];
			b->body_index[at] = i;
		}
	b->body_jobs = s->jobs;
	b->nbody = s->n;
	s->jobs = jobs;
	s->n = total;
	return 0;
}

bool ops_batch_first(const struct ops_batch *b, size_t i)
{
	return !b || !b->body_index || i == 0 || b->body_index[i] != b->body_index[i - 1];
}

void ops_submit_name_problem(struct store_job_submit *s, const size_t *body_index)
{
	if (body_index && s->problem.set && s->problem.job < s->n)
		s->problem.job = body_index[s->problem.job];
	codec_job_problem_field(&s->problem, s->batch, &s->err);
}
