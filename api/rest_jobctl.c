/* rest_jobctl.c - changing jobs: hold, release, requeue, PATCH, ETag and
 * If-Match; see docs/api.md "Changing jobs". */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "codec_job.h"
#include "ops_jobs.h"
#include "rest.h"
#include "rest_jobs.h"
#include "store_job.h"

void rest_jobs_etag(struct rest_req *rq, const struct store_job *job)
{
	char v[32];

	snprintf(v, sizeof(v), "\"%lld\"", (long long)job->etag);
	rest_add_header(rq, "etag", v);
}

/*
 * If-Match: absent or "*" (any version: the job must exist) -> *out NULL;
 * one strong entity tag "N" as ETag gives it -> *out = N. A weak tag never
 * matches (RFC 9110 compares If-Match strongly): 412, as a stale one.
 */
static int if_match(struct rest_req *rq, int64_t **out)
{
	const char *h = rest_header(rq, "if-match");
	int64_t v;
	char digits[24];
	size_t n;

	*out = NULL;
	if (!h)
		return 0;
	while (*h == ' ' || *h == '\t')
		h++;
	n = strlen(h);
	while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
		n--;
	if (n == 1 && h[0] == '*')
		return 0;
	if (n >= 2 && h[0] == 'W' && h[1] == '/')
		return mu_error_set(&rq->err, MU_EPRECONDITION, "If-Match",
				    "a weak entity tag never matches");
	if (n < 3 || n > 22 || h[0] != '"' || h[n - 1] != '"')
		return mu_error_set(&rq->err, MU_EINVAL, "If-Match",
				    "expected one entity tag as the ETag header gives it (\"123\") or *");
	memcpy(digits, h + 1, n - 2);
	digits[n - 2] = '\0';
	if (!rest_parse_int(digits, 0, INT64_MAX, &v))
		return mu_error_set(&rq->err, MU_EPRECONDITION, "If-Match",
				    "not a version of this job");
	*out = mu_arena_alloc(rq->arena, sizeof(**out));
	**out = v;
	return 0;
}

struct ctl {
	int64_t id;
	int64_t *if_match;
	enum store_job_ctl op;
	bool patch;
	struct store_job_patch p;
	json_t *body;   /* the patch's strings are borrowed from it */
};

static void reply(struct rest_req *rq, const struct store_job *job)
{
	struct mu_buf b = MU_BUF_INIT;

	codec_job_encode(job, &b);
	rest_result_text(rq, 200, "application/json", b.p, b.len);
	rest_jobs_etag(rq, job);
	mu_buf_release(&b);
}

static int ctl_run(struct pg_conn *db, struct rest_req *rq, void *arg)
{
	struct ctl *c = arg;
	struct store_job job;
	int ret;

	if (c->patch)
		ret = ops_job_update(db, rq->arena, &rq->who, c->id, &c->p, c->if_match, &job, &rq->err);
	else
		ret = ops_job_control(db, rq->arena, &rq->who, c->id, c->op, c->if_match, &job,
				      &rq->err);
	json_decref(c->body);
	c->body = NULL;
	if (ret < 0)
		return ret;
	reply(rq, &job);
	return 0;
}

static int prepare(struct rest_req *rq, struct ctl **out)
{
	struct ctl *c = mu_arena_alloc(rq->arena, sizeof(*c));
	const char *s = rest_param(rq, "id");
	int ret;

	memset(c, 0, sizeof(*c));
	*out = c;
	if (!s || !rest_parse_int(s, 1, INT64_MAX, &c->id))
		return mu_error_set(&rq->err, MU_ENOTFOUND, "", "no such job");
	ret = if_match(rq, &c->if_match);
	return ret;
}

/* hold, release, requeue: no body, or an empty JSON object. */
static int control(struct rest_req *rq, enum store_job_ctl op)
{
	struct ctl *c;
	json_t *body = NULL;
	int ret = prepare(rq, &c);

	if (ret < 0)
		return ret;
	if (rq->body_len) {
		ret = rest_body_json(rq, &body);
		if (ret == 0 && json_object_size(body))
			ret = mu_error_set(&rq->err, MU_EUNKNOWNFIELD, json_object_iter_key(json_object_iter(body)),
					   "this request takes no fields");
		json_decref(body);
		if (ret < 0)
			return ret;
	}
	c->op = op;
	return rest_defer(rq, ctl_run, NULL, c);
}

int rest_jobs_hold(struct rest_req *rq)
{
	return control(rq, STORE_JOB_HOLD);
}

int rest_jobs_release(struct rest_req *rq)
{
	return control(rq, STORE_JOB_RELEASE);
}

int rest_jobs_requeue(struct rest_req *rq)
{
	return control(rq, STORE_JOB_REQUEUE);
}

int rest_jobs_update(struct rest_req *rq)
{
	struct ctl *c;
	int ret = prepare(rq, &c);

	if (ret < 0)
		return ret;
	ret = rest_body_json(rq, &c->body);
	if (ret < 0)
		return ret;
	ret = codec_job_decode_patch(c->body, rq->arena, &c->p, &rq->err);
	if (ret < 0) {
		json_decref(c->body);
		c->body = NULL;
		return ret;
	}
	c->patch = true;
	return rest_defer(rq, ctl_run, NULL, c);
}
