/* rest_jobs.c - the jobs endpoints; see docs/api.md "Jobs". */
#include "rest_jobs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "codec_admin.h"
#include "codec_job.h"
#include "jv.h"
#include "log.h"
#include "ops_jobs.h"
#include "ops_submit.h"
#include "rest_metrics.h"
#include "rest_server.h"
#include "store_auth.h"
#include "lists.h"
#include "store_job.h"

static const char *const states[] = { MU_JOB_STATES(MU_LIST_NAME) NULL };

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct batch {
	struct rest_req *rq;
	struct jv_span *spans; /* each job's text, when the body splits */
	json_t *keep;          /* every parsed job or body: the jobs borrow their strings */
	struct ops_batch arrays; /* its arrays' tasks (ops_submit_batch_expand) */
};

/* Whether written job i of a request is the first of its body job: the
 * answer lists those. */
static bool body_first(const struct store_job_submit *s, size_t i)
{
	const struct batch *b = s->batch ? s->decode_arg : NULL;

	return !b || ops_batch_first(&b->arrays, i);
}

/* An admission problem of a batch names the body's job, not the task. */
static void name_problem(struct store_job_submit *s)
{
	const struct batch *b = s->batch ? s->decode_arg : NULL;

	ops_submit_name_problem(s, b ? b->arrays.body_index : NULL);
}

static void encode_jobs(struct rest_req *rq, struct store_job_submit *s)
{
	struct mu_buf b = MU_BUF_INIT;

	if (s->batch) {
		mu_buf_reserve(&b, s->n * 700);
		mu_buf_adds(&b, "{\"items\":[");
		for (size_t i = 0, m = 0; i < s->n; i++) {
			if (!body_first(s, i))
				continue;
			if (m++)
				mu_buf_addc(&b, ',');
			codec_job_encode(&s->jobs[i], &b);
		}
		mu_buf_adds(&b, "]}");
	} else {
		codec_job_encode(&s->jobs[0], &b);
	}
	rest_result_buf(rq, s->replayed ? 200 : 201, "application/json", &b);
	if (s->replayed)
		rest_add_header(rq, "idempotent-replayed", "true");
	if (!s->batch) {
		char loc[48];

		snprintf(loc, sizeof(loc), "/v1/jobs/%lld", (long long)s->jobs[0].id);
		rest_add_header(rq, "location", loc);
		rest_jobs_etag(rq, &s->jobs[0]);
	}
}

/* Worker thread: one transaction for the whole group; replies encoded here
 * so the loop thread only sends them. */
static void submit_group(PGconn *db, struct store_work **items, size_t n)
{
	struct store_job_submit **subs = mu_calloc(n, sizeof(*subs));
	double t0 = mono_ms(), t1;
	size_t jobs = 0;

	for (size_t i = 0; i < n; i++) {
		subs[i] = rest_work_arg(items[i]);
		jobs += subs[i]->n;
	}
	store_job_submit_group(db, subs, n);
	t1 = mono_ms();
	for (size_t i = 0; i < n; i++) {
		struct rest_req *rq = rest_work_req(items[i]);

		items[i]->rc = subs[i]->rc < 0 ? subs[i]->rc : 0;
		if (subs[i]->rc < 0) {
			name_problem(subs[i]);
			items[i]->err = subs[i]->err;
			rq->err = subs[i]->err;
		} else if (!subs[i]->replied) {
			if (!subs[i]->replayed)
				rest_metrics_submitted(REST_METRICS_REST, subs[i]->batch, subs[i]->n);
			encode_jobs(rq, subs[i]);
		}
	}
	mu_debug("jobs group requests=%zu jobs=%zu db_ms=%.1f encode_ms=%.1f", n, jobs, t1 - t0,
		 mono_ms() - t1);
	mu_free(subs);
}

void rest_jobs_init(struct store_pool *pool)
{
	store_pool_group(pool, REST_JOBS_GROUP_SUBMIT, submit_group, REST_JOBS_GROUP_MAX);
}

/* store_job_submit.reply of a batch: its 201 (no headers, so building it
 * again after a retry is harmless) built while the transaction ends. */
static void reply_early(struct store_job_submit *s)
{
	encode_jobs(s->reply_arg, s);
}

static int submit(struct rest_req *rq, struct store_job_submit *s)
{
	s->scope = rest_scope_path(rq);
	s->arena = rq->arena;
	return rest_defer_group(rq, REST_JOBS_GROUP_SUBMIT, s->n, s, NULL);
}

int rest_jobs_submit(struct rest_req *rq)
{
	struct store_job_submit *s = mu_arena_alloc(rq->arena, sizeof(*s));
	json_t *body = NULL;
	int ret = rest_body_json(rq, &body);

	if (ret < 0)
		goto out;
	/* the digest a retry must repeat: the body's bytes */
	ret = ops_submit_prepare(&rq->who, rq->arena, body, rest_header(rq, "idempotency-key"),
				 "Idempotency-Key", rq->body, rq->body_len, s, &rq->err);
	if (ret < 0)
		goto out;
	/* strings borrowed from `body` must outlive it: keep it with the request */
	rest_result(rq, 0, body);
	body = NULL;
	ret = submit(rq, s);
out:
	json_decref(body);
	return ret;
}

/* Decodes and checks job i of the batch, as POST /v1/jobs would one job. */
static int decode_item(const struct batch *b, struct store_job_submit *s, size_t i,
		       json_t *item)
{
	return ops_submit_batch_item(&b->rq->who, s->arena, item, i, &s->jobs[i], &s->err);
}

/* store_job_submit.decode, on the pool's worker: parses and decodes jobs
 * [from, to) from their own texts. Any error only sends the store to
 * batch_decode_all, which names it as parsing the whole body would. */
static int batch_decode(struct store_job_submit *s, size_t from, size_t to)
{
	const struct batch *b = s->decode_arg;

	for (size_t i = from; i < to; i++) {
		json_error_t je;
		json_t *v = json_loadb(b->spans[i].p, b->spans[i].len,
				       JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
		int ret;

		if (!v)
			return mu_error_set(&s->err, MU_EJSON, "", "malformed JSON");
		json_array_append_new(b->keep, v);
		ret = decode_item(b, s, i, v);
		if (ret < 0)
			return ret;
		/* its tasks take more rows than the split made room for: the
		 * strict pass (batch_decode_all) expands it */
		if (s->jobs[i].array_spec)
			return mu_error_set(&s->err, MU_EINVAL, "", "an array: decoded in one pass");
	}
	return 0;
}

/* The checks of a batch body before its jobs, in their order; *jobs is
 * borrowed from body. */
static int check_body(const json_t *body, json_t **jobs, struct mu_error *err)
{
	static const char *const fields[] = { "jobs", NULL };
	int ret;

	if (!json_is_object(body))
		return mu_error_set(err, MU_ETYPE, "", "the body must be a JSON object");
	ret = jv_object(body, fields, "", "", err);
	if (ret < 0)
		return ret;
	*jobs = json_object_get(body, "jobs");
	if (!*jobs || json_is_null(*jobs))
		return mu_error_set(err, MU_EMISSING, "jobs", "required");
	if (!json_is_array(*jobs))
		return mu_error_set(err, MU_ETYPE, "jobs", "must be an array of jobs");
	if (json_array_size(*jobs) < 1 || json_array_size(*jobs) > CODEC_JOB_MAX_BATCH)
		return mu_error_set(err, MU_ERANGE, "jobs", "must hold 1..%d jobs",
				    CODEC_JOB_MAX_BATCH);
	return 0;
}

/* store_job_submit.decode_all: the whole body parsed and every job decoded
 * in order; the first error is the answer. */
static int batch_decode_all(struct store_job_submit *s)
{
	struct batch *b = s->decode_arg;
	const struct rest_req *rq = b->rq;
	json_t *body = NULL, *jobs = NULL;
	int ret;

	if (b->arrays.body_index) { /* expanded by an earlier pass: start again from the body's jobs */
		s->jobs = b->arrays.body_jobs;
		s->n = b->arrays.nbody;
		b->arrays.body_index = NULL;
	}
	ret = jv_parse(rq->body, rq->body_len, &body, &s->err);
	if (ret < 0)
		return ret;
	json_array_append_new(b->keep, body);
	ret = check_body(body, &jobs, &s->err);
	if (ret < 0)
		return ret;
	if (json_array_size(jobs) != s->n)
		return mu_error_set(&s->err, MU_EINTERNAL, "", "the batch split into %zu jobs, not %zu",
				    s->n, json_array_size(jobs));
	for (size_t i = 0; i < s->n; i++) {
		ret = decode_item(b, s, i, json_array_get(jobs, i));
		if (ret < 0)
			return ret;
	}
	return ops_submit_batch_expand(&b->arrays, s);
}

/*
 * A body of the plain form {"jobs": [...]} is only split here: its jobs are
 * parsed and decoded on the pool's worker, chunk by chunk, while the
 * previous chunk's rows are being written, so the event loop stays free and
 * the work overlaps the COPY. Errors are those of parsing and decoding the
 * whole body first (see store_job_submit.decode). Any other body is parsed
 * and decoded here.
 */
int rest_jobs_batch(struct rest_req *rq)
{
	struct store_job_submit *s = mu_arena_alloc(rq->arena, sizeof(*s));
	struct batch *b = mu_arena_alloc(rq->arena, sizeof(*b));
	json_t *body = NULL, *jobs = NULL;
	double t0 = mono_ms();
	long n;
	int ret;

	b->rq = rq;
	s->arena = rq->arena; /* decode and expand_arrays allocate in it before submit() */
	s->batch = true;
	s->decode_arg = b;
	s->reply = reply_early;
	s->reply_arg = rq;
	b->spans = mu_arena_alloc(rq->arena, sizeof(*b->spans) * CODEC_JOB_MAX_BATCH);
	n = jv_split_array(rq->body, rq->body_len, "jobs", b->spans, CODEC_JOB_MAX_BATCH);
	if (n > 0) {
		s->n = (size_t)n;
		s->jobs = mu_arena_alloc(rq->arena, sizeof(*s->jobs) * s->n);
		s->decode = batch_decode;
		s->decode_all = batch_decode_all;
		b->keep = json_array();
		rest_result(rq, 0, b->keep); /* released with the request */
		mu_debug("jobs batch jobs=%zu split_ms=%.1f", s->n, mono_ms() - t0);
		return submit(rq, s);
	}

	ret = jv_parse(rq->body, rq->body_len, &body, &rq->err);
	if (ret < 0)
		goto out;
	ret = check_body(body, &jobs, &rq->err);
	if (ret < 0)
		goto out;
	s->n = json_array_size(jobs);
	s->jobs = mu_arena_alloc(rq->arena, sizeof(*s->jobs) * s->n);
	for (size_t i = 0; i < s->n; i++) {
		ret = decode_item(b, s, i, json_array_get(jobs, i));
		if (ret < 0) {
			rq->err = s->err;
			goto out;
		}
	}
	ret = ops_submit_batch_expand(&b->arrays, s);
	if (ret < 0) {
		rq->err = s->err;
		goto out;
	}
	/* the jobs borrow strings from `body`: keep it with the request */
	rest_result(rq, 0, body);
	body = NULL;
	ret = submit(rq, s);
out:
	json_decref(body);
	return ret;
}

static int parse_id(struct rest_req *rq, int64_t *id)
{
	const char *s = rest_param(rq, "id");
	char *end = NULL;
	long long v;

	if (!s || !*s || *s < '0' || *s > '9')
		goto bad;
	v = strtoll(s, &end, 10);
	if (*end || v < 1)
		goto bad;
	*id = v;
	return 0;
bad:
	return mu_error_set(&rq->err, MU_ENOTFOUND, "", "no such job");
}

struct list_arg {
	struct store_job_filter f;
	struct store_job_page page;
	uint64_t fields; /* codec_job_fields_decode: what each item carries */
};

static int list_run(PGconn *db, struct rest_req *rq, void *arg)
{
	struct list_arg *la = arg;
	struct mu_buf b = MU_BUF_INIT;
	int ret;

	ret = ops_job_list(db, rq->arena, &rq->who, &la->f, &la->page, &rq->err);
	if (ret < 0)
		return ret;
	mu_buf_reserve(&b, la->page.n * 800 + 64);
	mu_buf_adds(&b, "{\"items\":[");
	for (size_t i = 0; i < la->page.n; i++) {
		if (i)
			mu_buf_addc(&b, ',');
		codec_job_encode_fields(&la->page.items[i], la->fields, &b);
	}
	mu_buf_adds(&b, "],\"next_cursor\":");
	if (la->page.next_after) {
		char cursor[24];

		snprintf(cursor, sizeof(cursor), "%lld", (long long)la->page.next_after);
		mu_buf_addf(&b, "\"%s\"", cursor);
		/* also ahead of the body: a client may ask for the next page
		 * before it has parsed this one */
		rest_add_header(rq, "muster-next-cursor", cursor);
	} else {
		mu_buf_adds(&b, "null");
	}
	mu_buf_addc(&b, '}');
	rest_result_buf(rq, 200, "application/json", &b);
	return 0;
}

int rest_jobs_list(struct rest_req *rq)
{
	static const char *const allowed[] = { "state", "tenant", "user", "label", "limit",
					       "cursor", "array_job_id", "array_task_id", "fields", NULL };
	struct list_arg *la = mu_arena_alloc(rq->arena, sizeof(*la));
	const char **vals, **labels;
	const char *s;
	size_t nv, nl;
	int64_t v;
	int ret;

	ret = rest_query_check(rq, allowed);
	if (ret < 0)
		return ret;
	if ((ret = codec_limit_decode(rest_query(rq, "limit"), &la->f.limit, &rq->err)) < 0)
		return ret;
	la->fields = CODEC_JOB_ALL_FIELDS;
	if ((s = rest_query(rq, "fields")) &&
	    (ret = codec_job_fields_decode(s, &la->fields, &rq->err)) < 0)
		return ret;
	la->f.omit = codec_job_fields_omit(la->fields);
	if ((s = rest_query(rq, "cursor")) && *s) {
		if (!rest_parse_int(s, 0, INT64_MAX, &v))
			return mu_error_set(&rq->err, MU_EINVAL, "cursor", "not a cursor from this API");
		la->f.after_id = v;
	}
	nv = rest_query_all(rq, "state", &vals);
	if (nv) {
		const char **st = mu_arena_alloc(rq->arena, sizeof(*st) * 64);
		size_t n = 0;

		for (size_t i = 0; i < nv; i++) {
			const char *tok = vals[i];

			for (;;) {
				const char *comma = strchr(tok, ',');
				size_t len = comma ? (size_t)(comma - tok) : strlen(tok);
				const char *const *k = states;

				while (*k && (strlen(*k) != len || strncmp(*k, tok, len)))
					k++;
				if (!*k)
					return mu_error_set(&rq->err, MU_EINVAL, "state",
							    "unknown state %.*s", (int)(len > 32 ? 32 : len), tok);
				if (n < 64)
					st[n++] = *k;
				if (!comma)
					break;
				tok = comma + 1;
			}
		}
		la->f.states = st;
		la->f.nstates = n;
	}
	if ((s = rest_query(rq, "array_job_id"))) {
		if (!rest_parse_int(s, 1, INT64_MAX, &v))
			return mu_error_set(&rq->err, MU_EINVAL, "array_job_id", "must be a job id");
		la->f.array_job_id = v;
	}
	if ((s = rest_query(rq, "array_task_id"))) {
		if (!la->f.array_job_id)
			return mu_error_set(&rq->err, MU_EINVAL, "array_task_id", "needs array_job_id");
		if (!rest_parse_int(s, 0, 9999999, &v))
			return mu_error_set(&rq->err, MU_EINVAL, "array_task_id", "must be 0..9999999");
		la->f.array_task_id = v;
		la->f.has_array_task = true;
	}
	la->f.tenant = rest_query(rq, "tenant");
	la->f.user = rest_query(rq, "user");
	nl = rest_query_all(rq, "label", &labels);
	if (nl) {
		struct mu_buf b = MU_BUF_INIT;

		mu_buf_addc(&b, '{');
		for (size_t i = 0; i < nl; i++) {
			const char *eq = strchr(labels[i], '=');

			if (!eq || eq == labels[i]) {
				mu_buf_release(&b);
				return mu_error_set(&rq->err, MU_EINVAL, "label", "expected key=value");
			}
			if (i)
				mu_buf_addc(&b, ',');
			mu_buf_add_json_str(&b, labels[i], (size_t)(eq - labels[i]));
			mu_buf_addc(&b, ':');
			mu_buf_add_json_strz(&b, eq + 1);
		}
		mu_buf_addc(&b, '}');
		la->f.labels = mu_arena_strdup(rq->arena, b.p);
		mu_buf_release(&b);
	}
	return rest_defer(rq, list_run, NULL, la);
}

static int get_run(PGconn *db, struct rest_req *rq, void *arg)
{
	int64_t *id = arg;
	struct store_job job;
	struct mu_buf b = MU_BUF_INIT;
	int ret;

	ret = ops_job_get(db, rq->arena, &rq->who, *id, &job, &rq->err);
	if (ret < 0)
		return ret;
	codec_job_encode(&job, &b);
	rest_result_text(rq, 200, "application/json", b.p, b.len);
	rest_jobs_etag(rq, &job);
	mu_buf_release(&b);
	return 0;
}

int rest_jobs_get(struct rest_req *rq)
{
	int64_t *id = mu_arena_alloc(rq->arena, sizeof(*id));
	int ret = parse_id(rq, id);

	if (ret < 0)
		return ret;
	return rest_defer(rq, get_run, NULL, id);
}

static int cancel_run(PGconn *db, struct rest_req *rq, void *arg)
{
	int64_t *id = arg;
	struct store_job job;
	struct mu_buf b = MU_BUF_INIT;
	int ret;

	/* ?array=true (id[1]): every task of array *id, else the job alone */
	ret = ops_job_cancel(db, rq->arena, &rq->who, *id, id[1] != 0, &job, &rq->err);
	if (ret < 0)
		return ret;
	codec_job_encode(&job, &b);
	rest_result_text(rq, 200, "application/json", b.p, b.len);
	rest_jobs_etag(rq, &job);
	mu_buf_release(&b);
	return 0;
}

int rest_jobs_cancel(struct rest_req *rq)
{
	static const char *const allowed[] = { "array", NULL };
	int64_t *id = mu_arena_alloc(rq->arena, 2 * sizeof(*id)); /* id, whole array */
	const char *arr;
	int ret = parse_id(rq, id);

	if (ret < 0)
		return ret;
	ret = rest_query_check(rq, allowed);
	if (ret < 0)
		return ret;
	id[1] = 0;
	if ((arr = rest_query(rq, "array"))) {
		if (strcmp(arr, "true") && strcmp(arr, "false"))
			return mu_error_set(&rq->err, MU_EINVAL, "array", "must be true or false");
		id[1] = !strcmp(arr, "true");
	}
	return rest_defer(rq, cancel_run, NULL, id);
}
