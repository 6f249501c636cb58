/*
 * ops_submit.c - the rules of a submit (ops_submit.h).
 */
#include "ops_submit.h"

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

void ops_submit_name_problem(struct store_job_submit *s, const size_t *body_index)
{
	if (body_index && s->problem.set && s->problem.job < s->n)
		s->problem.job = body_index[s->problem.job];
	codec_job_problem_field(&s->problem, s->batch, &s->err);
}
