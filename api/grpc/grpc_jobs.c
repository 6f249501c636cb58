/*
 * grpc_jobs.c - muster.v1.JobService over the REST rules.
 *
 * Submit turns the JobSpec into the JSON object POST /v1/jobs takes and runs
 * it through codec_job_decode, so every job rule (ranges, names, maps,
 * dependencies, Slurm time limits) is the REST codec's, with the same field
 * names in errors. Get/List/Cancel call the same store functions as REST
 * with the caller's tenant scope. Watch streams the events table from a
 * cursor (see watch_* below).
 */
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "codec_job.h"
#include "rest_metrics.h"
#include "grpc_codec.h"
#include "grpc_internal.h"
#include "lists.h"
#include "log.h"
#include "muster/v1/jobs.pb-c.h"
#include "ops_jobs.h"
#include "ops_page.h"
#include "ops_router.h"
#include "ops_submit.h"
#include "store_event.h"
#include "store_auth.h"
#include "store_job.h"
#include "store_listen.h"


/* A map entry of any message: every protobuf-c map entry has this layout. */
struct kv_entry {
	ProtobufCMessage base;
	char *key;
	char *value;
};

static const char *const job_states[] = { MU_JOB_STATES(MU_LIST_NAME) NULL };

static void *A(struct mu_arena *a, size_t n)
{
	return mu_arena_alloc(a, n ? n : 1);
}

static char *S(struct mu_arena *a, const char *s)
{
	return mu_arena_strdup(a, s ? s : "");
}

/* ---- JobSpec -> the REST JSON body ------------------------------------- */

/* ---- store_job -> Job --------------------------------------------------- */

static void *kv_array(struct mu_arena *a, const ProtobufCMessageDescriptor *d, const char *json,
		      size_t *n)
{
	json_t *o = json ? json_loads(json, JSON_DECODE_ANY, NULL) : NULL;
	void **arr = NULL;
	const char *k;
	json_t *v;
	size_t i = 0;

	*n = 0;
	if (!json_is_object(o))
		goto out;
	arr = A(a, json_object_size(o) * sizeof(*arr));
	json_object_foreach(o, k, v) {
		struct kv_entry *e = A(a, d->sizeof_message);

		protobuf_c_message_init(d, e);
		e->key = S(a, k);
		e->value = S(a, json_is_string(v) ? json_string_value(v) : "");
		arr[i++] = e;
	}
	*n = i;
out:
	json_decref(o);
	return arr;
}

static const char *jget_str(struct mu_arena *a, const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return S(a, json_is_string(v) ? json_string_value(v) : "");
}

static void fill_runs(struct mu_arena *a, Muster__V1__Job *pj, const char *json)
{
	json_t *arr = json ? json_loads(json, JSON_DECODE_ANY, NULL) : NULL;
	size_t i;
	json_t *r;

	if (!json_is_array(arr))
		goto out;
	pj->runs = A(a, json_array_size(arr) * sizeof(*pj->runs));
	json_array_foreach(arr, i, r) {
		Muster__V1__Run *pr = A(a, sizeof(*pr));
		json_t *nodes = json_object_get(r, "nodes"), *nd, *ec;
		size_t k;

		muster__v1__run__init(pr);
		pr->id = json_integer_value(json_object_get(r, "id"));
		pr->attempt = json_integer_value(json_object_get(r, "attempt"));
		pr->state = (char *)jget_str(a, r, "state");
		pr->stop_reason = (char *)jget_str(a, r, "stop_reason");
		pr->started_at = (char *)jget_str(a, r, "started_at");
		pr->ended_at = (char *)jget_str(a, r, "ended_at");
		pr->created_at = (char *)jget_str(a, r, "created_at");
		ec = json_object_get(r, "exit_code");
		pr->has_exit_code = json_is_integer(ec);
		pr->exit_code = json_integer_value(ec);
		pr->exit_signal = json_integer_value(json_object_get(r, "exit_signal"));
		if (json_is_array(nodes)) {
			pr->nodes = A(a, json_array_size(nodes) * sizeof(char *));
			json_array_foreach(nodes, k, nd)
				pr->nodes[pr->n_nodes++] = (char *)jget_str(a, nd, "node");
		}
		pj->runs[pj->n_runs++] = pr;
	}
out:
	json_decref(arr);
}

static void fill_events(struct mu_arena *a, Muster__V1__Job *pj, const char *json)
{
	json_t *arr = json ? json_loads(json, JSON_DECODE_ANY, NULL) : NULL;
	size_t i;
	json_t *e;

	if (!json_is_array(arr))
		goto out;
	pj->events = A(a, json_array_size(arr) * sizeof(*pj->events));
	json_array_foreach(arr, i, e) {
		Muster__V1__JobEvent *pe = A(a, sizeof(*pe));
		char *data = json_dumps(json_object_get(e, "data"), JSON_COMPACT | JSON_ENCODE_ANY);

		muster__v1__job_event__init(pe);
		pe->id = json_integer_value(json_object_get(e, "id"));
		pe->at = (char *)jget_str(a, e, "at");
		pe->kind = (char *)jget_str(a, e, "kind");
		pe->reason = (char *)jget_str(a, e, "reason");
		pe->data_json = S(a, data ? data : "{}");
		free(data);
		pe->job_id = pj->id;
		pe->tenant = pj->tenant;
		pe->job_state = pj->state;
		pj->events[pj->n_events++] = pe;
	}
out:
	json_decref(arr);
}

/* launcher, on_shrink, signal; GetJob: launch_argv from the REST codec's
 * JSON (one composer of the line). */
static void job_proto_launch(struct mu_arena *a, Muster__V1__Job *pj, const struct store_job *j)
{
	pj->launcher = S(a, j->launcher && *j->launcher ? j->launcher : "none");
	pj->on_shrink = S(a, j->on_shrink && *j->on_shrink ? j->on_shrink : "restart");
	if (j->signal_name && *j->signal_name) {
		Muster__V1__JobSignal *g = A(a, sizeof(*g));

		muster__v1__job_signal__init(g);
		g->name = S(a, j->signal_name);
		g->before = (int32_t)j->signal_before;
		g->batch_only = j->signal_batch_only;
		pj->signal = g;
	}
	if (j->runs) {
		struct mu_buf b = MU_BUF_INIT;
		json_t *o, *arr;
		size_t i;
		json_t *v;

		codec_job_encode(j, &b);
		o = json_loads(b.p, 0, NULL);
		arr = json_object_get(o, "launch_argv");
		if (json_is_array(arr)) {
			pj->launch_argv = A(a, (json_array_size(arr) + 1) * sizeof(char *));
			json_array_foreach(arr, i, v)
				pj->launch_argv[pj->n_launch_argv++] = S(a, json_string_value(v));
		}
		json_decref(o);
		mu_buf_release(&b);
	}
}

static Muster__V1__Job *job_proto(struct mu_arena *a, const struct store_job *j)
{
	Muster__V1__Job *pj = A(a, sizeof(*pj));
	json_t *arr;

	muster__v1__job__init(pj);
	pj->id = j->id;
	pj->state = S(a, j->state);
	pj->tenant = S(a, j->tenant);
	pj->tenant_path = S(a, j->tenant_path);
	pj->user = S(a, j->user);
	pj->name = S(a, j->name);
	pj->priority_class = S(a, j->priority_class);
	pj->nodes = j->nodes;
	pj->min_nodes = j->min_nodes;
	pj->gpus_per_node = j->gpus_per_node;
	pj->gpu_model = S(a, j->gpu_model);
	pj->procs_per_node = j->procs_per_node;
	pj->mem_per_node = j->mem_per_node;
	pj->cpus_per_node = j->cpus_per_node;
	job_proto_launch(a, pj, j);
	pj->output = S(a, j->stdout_pattern);
	pj->error = S(a, j->stderr_pattern);
	pj->topology_required = S(a, j->topo_required);
	pj->topology_preferred = S(a, j->topo_preferred);
	pj->time_limit_seconds = j->time_limit;
	arr = j->command ? json_loads(j->command, JSON_DECODE_ANY, NULL) : NULL;
	if (json_is_array(arr)) {
		size_t i;
		json_t *v;

		pj->command = A(a, json_array_size(arr) * sizeof(char *));
		json_array_foreach(arr, i, v)
			pj->command[pj->n_command++] = S(a, json_string_value(v));
	}
	json_decref(arr);
	pj->env = kv_array(a, &muster__v1__job__env_entry__descriptor, j->env, &pj->n_env);
	pj->labels = kv_array(a, &muster__v1__job__labels_entry__descriptor, j->labels, &pj->n_labels);
	arr = j->dependencies ? json_loads(j->dependencies, JSON_DECODE_ANY, NULL) : NULL;
	if (json_is_array(arr)) {
		size_t i;
		json_t *v;

		pj->dependencies = A(a, json_array_size(arr) * sizeof(*pj->dependencies));
		json_array_foreach(arr, i, v) {
			Muster__V1__Dependency *d = A(a, sizeof(*d));

			muster__v1__dependency__init(d);
			d->type = (char *)jget_str(a, v, "type");
			d->job_id = json_integer_value(json_object_get(v, "job_id"));
			pj->dependencies[pj->n_dependencies++] = d;
		}
	}
	json_decref(arr);
	pj->workdir = S(a, j->workdir);
	pj->max_retries = j->max_retries;
	pj->retries = j->retries;
	pj->pending_reason = S(a, j->state && !strcmp(j->state, "PENDING") ?
				       (j->pending_reason ? j->pending_reason : "Priority") : "");
	pj->pending_message = S(a, j->pending_message);
	pj->planned_start = S(a, j->planned_start);
	pj->has_exit_code = j->has_exit_code;
	pj->exit_code = j->exit_code;
	pj->end_reason = S(a, j->end_reason);
	pj->created_at = S(a, j->created_at);
	pj->started_at = S(a, j->started_at);
	pj->ended_at = S(a, j->ended_at);
	pj->held = j->held;
	pj->begin = S(a, j->begin_at);
	if (j->array_spec) {
		pj->array_job_id = j->array_job_id;
		pj->array_task_id = j->array_task_id;
		pj->array = S(a, j->array_spec);
	}
	{
		char et[32];

		snprintf(et, sizeof(et), "\"%lld\"", (long long)j->etag);
		pj->etag = S(a, et);
	}
	if (j->runs)
		fill_runs(a, pj, j->runs);
	if (j->events)
		fill_events(a, pj, j->events);
	return pj;
}

/* ---- unary methods ------------------------------------------------------ */

/* A submit between prepare and finish (in c->arena, referenced by c->stream). */
struct submit_state {
	struct store_job_submit s;
	struct store_job job;
	json_t *body;       /* the job's strings are borrowed from it */
};

/* Validates the request and fills a store_job_submit (ops_submit_prepare:
 * REST's rules); no database access. */
static int submit_prepare(struct gcall *c, struct submit_state **out)
{
	const Muster__V1__SubmitJobRequest *r = (const void *)c->req;
	struct submit_state *st;
	unsigned char *packed = NULL;
	size_t n = 0;
	int ret;

	if (!r->job)
		return mu_error_set(&c->err, MU_EMISSING, "job", "required");
	st = A(&c->arena, sizeof(*st));
	st->body = grpc_codec_spec_json(r->job, &c->err);
	if (!st->body)
		return c->err.code;
	*out = st; /* from here the caller must json_decref(st->body) */
	if (r->idempotency_key && r->idempotency_key[0]) {
		/* the digest a retry must repeat: the packed JobSpec */
		n = protobuf_c_message_get_packed_size(&r->job->base);
		packed = A(&c->arena, n);
		protobuf_c_message_pack(&r->job->base, packed);
	}
	ret = ops_submit_prepare(&c->who, &c->arena, st->body, packed ? r->idempotency_key : NULL,
				 "idempotency_key", packed, n, &st->s, &c->err);
	return ret;
}

/* After store_job_submit_group: the reply, and the body released. */
static int submit_finish(struct gcall *c, struct submit_state *st)
{
	Muster__V1__SubmitJobResponse *resp;
	int ret = st->s.rc;

	if (ret < 0) {
		ops_submit_name_problem(&st->s, NULL);
		c->err = st->s.err;
	} else {
		resp = A(&c->arena, sizeof(*resp));
		muster__v1__submit_job_response__init(resp);
		resp->job = job_proto(&c->arena, &st->s.jobs[0]);
		resp->replayed = st->s.replayed;
		c->resp = &resp->base;
		if (!st->s.replayed)
			rest_metrics_submitted(REST_METRICS_GRPC, false, 1);
	}
	json_decref(st->body);
	st->body = NULL;
	return ret;
}

/*
 * Group commit, as REST does: every queued gRPC submit is authenticated and
 * validated, then all the valid ones are written in ONE transaction.
 */
static void submit_group(PGconn *db, struct store_work **items, size_t n)
{
	struct store_job_submit **subs = mu_calloc(n, sizeof(*subs));
	struct submit_state **sts = mu_calloc(n, sizeof(*sts));
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		struct gcall *c = items[i]->arg;
		int ret = gcall_auth(db, c);

		if (ret == 0)
			ret = submit_prepare(c, &sts[i]);
		items[i]->rc = ret;
		if (ret < 0 && sts[i]) {
			json_decref(sts[i]->body);
			sts[i] = NULL;
		}
		if (ret == 0)
			subs[m++] = &sts[i]->s;
	}
	if (m)
		store_job_submit_group(db, subs, m);
	for (size_t i = 0; i < n; i++)
		if (sts[i])
			items[i]->rc = submit_finish(items[i]->arg, sts[i]);
	mu_free(subs);
	mu_free(sts);
}

/* Not used for grouped submits (the group function runs them); kept for
 * the method table's contract. */
static int submit_run(PGconn *db, struct gcall *c)
{
	struct submit_state *st = NULL;
	struct store_job_submit *sp;
	int ret = submit_prepare(c, &st);

	if (ret < 0) {
		if (st)
			json_decref(st->body);
		return ret;
	}
	sp = &st->s;
	store_job_submit_group(db, &sp, 1);
	return submit_finish(c, st);
}

/*
 * SubmitBatch: POST /v1/jobs/batch's rules (ops_submit_batch_item, the
 * expansion of arrays, the problem naming the request's job), every job
 * decoded before the one transaction. Not grouped: a batch is its own
 * transaction, as a REST batch alone in its group is.
 */
static int submit_batch_run(PGconn *db, struct gcall *c)
{
	const Muster__V1__SubmitJobsRequest *r = (const void *)c->req;
	Muster__V1__SubmitJobsResponse *resp;
	struct store_job_submit *s = A(&c->arena, sizeof(*s));
	struct ops_batch arrays;
	json_t *keep = json_array(); /* the jobs borrow their strings from these */
	int ret = 0;

	if (r->n_jobs < 1 || r->n_jobs > CODEC_JOB_MAX_BATCH) {
		ret = mu_error_set(&c->err, MU_ERANGE, "jobs", "must hold 1..%d jobs",
				   CODEC_JOB_MAX_BATCH);
		goto out;
	}
	s->n = r->n_jobs;
	s->jobs = A(&c->arena, sizeof(*s->jobs) * s->n);
	s->batch = true;
	s->arena = &c->arena;
	s->scope = ops_scope_path(&c->who);
	for (size_t i = 0; i < s->n; i++) {
		json_t *body = grpc_codec_spec_json(r->jobs[i], &c->err);

		if (!body) {
			ret = c->err.code;
			/* the codec names the spec's own field: name the job too */
			if (c->err.field[0]) {
				char f[sizeof(c->err.field)];

				memcpy(f, c->err.field, sizeof(f));
				if (snprintf(c->err.field, sizeof(c->err.field), "jobs.%zu.%s", i, f) >=
				    (int)sizeof(c->err.field))
					c->err.field[sizeof(c->err.field) - 1] = '\0';
			}
			goto out;
		}
		json_array_append_new(keep, body);
		ret = ops_submit_batch_item(&c->who, &c->arena, body, i, &s->jobs[i], &c->err);
		if (ret < 0)
			goto out;
	}
	ret = ops_submit_batch_expand(&arrays, s);
	if (ret < 0) {
		c->err = s->err;
		goto out;
	}
	store_job_submit_group(db, &s, 1);
	ret = s->rc;
	if (ret < 0) {
		ops_submit_name_problem(s, arrays.body_index);
		c->err = s->err;
		goto out;
	}
	resp = A(&c->arena, sizeof(*resp));
	muster__v1__submit_jobs_response__init(resp);
	resp->jobs = A(&c->arena, sizeof(*resp->jobs) * r->n_jobs);
	for (size_t i = 0; i < s->n; i++)
		if (ops_batch_first(&arrays, i))
			resp->jobs[resp->n_jobs++] = job_proto(&c->arena, &s->jobs[i]);
	c->resp = &resp->base;
	rest_metrics_submitted(REST_METRICS_GRPC, true, s->n);
out:
	json_decref(keep);
	return ret;
}

static int get_run(PGconn *db, struct gcall *c)
{
	const Muster__V1__GetJobRequest *r = (const void *)c->req;
	struct store_job job;
	int ret;

	if ((ret = ops_job_id_check(r->job_id, &c->err)) < 0)
		return ret;
	ret = ops_job_get(db, &c->arena, &c->who, r->job_id, &job, &c->err);
	if (ret < 0)
		return ret;
	c->resp = &job_proto(&c->arena, &job)->base;
	return 0;
}

static int cancel_run(PGconn *db, struct gcall *c)
{
	const Muster__V1__CancelJobRequest *r = (const void *)c->req;
	struct store_job job;
	int ret;

	if ((ret = ops_job_id_check(r->job_id, &c->err)) < 0)
		return ret;
	ret = ops_job_cancel(db, &c->arena, &c->who, r->job_id, false, &job, &c->err);
	if (ret < 0)
		return ret;
	c->resp = &job_proto(&c->arena, &job)->base;
	return 0;
}

/* if_match: "" or "*" = no check; "N" (the etag as given) or N. */
static int if_match(struct gcall *c, const char *s, int64_t *v, const int64_t **out)
{
	char digits[24];
	size_t n = s ? strlen(s) : 0;
	char *end = NULL;

	*out = NULL;
	if (!n || (n == 1 && s[0] == '*'))
		return 0;
	if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
		s++;
		n -= 2;
	}
	if (n < 1 || n >= sizeof(digits))
		return mu_error_set(&c->err, MU_EINVAL, "if_match", "expected the job's etag or *");
	memcpy(digits, s, n);
	digits[n] = '\0';
	if (digits[0] < '0' || digits[0] > '9')
		return mu_error_set(&c->err, MU_EINVAL, "if_match", "expected the job's etag or *");
	*v = strtoll(digits, &end, 10);
	if (*end)
		return mu_error_set(&c->err, MU_EINVAL, "if_match", "expected the job's etag or *");
	*out = v;
	return 0;
}

static int control(PGconn *db, struct gcall *c, enum store_job_ctl op)
{
	const Muster__V1__JobControlRequest *r = (const void *)c->req;
	const int64_t *im;
	struct store_job job;
	int64_t v = 0;
	int ret;

	if ((ret = ops_job_id_check(r->job_id, &c->err)) < 0)
		return ret;
	ret = if_match(c, r->if_match, &v, &im);
	if (ret < 0)
		return ret;
	ret = ops_job_control(db, &c->arena, &c->who, r->job_id, op, im, &job, &c->err);
	if (ret < 0)
		return ret;
	c->resp = &job_proto(&c->arena, &job)->base;
	return 0;
}

static int hold_run(PGconn *db, struct gcall *c)
{
	return control(db, c, STORE_JOB_HOLD);
}

static int release_run(PGconn *db, struct gcall *c)
{
	return control(db, c, STORE_JOB_RELEASE);
}

static int requeue_run(PGconn *db, struct gcall *c)
{
	return control(db, c, STORE_JOB_REQUEUE);
}

static int update_run(PGconn *db, struct gcall *c)
{
	const Muster__V1__UpdateJobRequest *r = (const void *)c->req;
	struct store_job_patch p;
	const int64_t *im;
	struct store_job job;
	json_t *body = NULL;
	int64_t v = 0;
	int ret;

	if ((ret = ops_job_id_check(r->job_id, &c->err)) < 0)
		return ret;
	ret = if_match(c, r->if_match, &v, &im);
	if (ret < 0)
		return ret;
	body = grpc_codec_job_patch_json(r, &c->err);
	if (!body)
		return c->err.code;
	ret = codec_job_decode_patch(body, &c->arena, &p, &c->err);
	if (ret < 0)
		goto out;
	ret = ops_job_update(db, &c->arena, &c->who, r->job_id, &p, im, &job, &c->err);
	if (ret < 0)
		goto out;
	c->resp = &job_proto(&c->arena, &job)->base;
out:
	json_decref(body);
	return ret;
}

static int list_run(PGconn *db, struct gcall *c)
{
	const Muster__V1__ListJobsRequest *r = (const void *)c->req;
	struct store_job_filter f = { 0 };
	struct store_job_page page = { 0 };
	Muster__V1__ListJobsResponse *resp;
	int ret;

	if ((ret = ops_page_size(r->page_size, &f.limit, &c->err)) < 0)
		return ret;
	if (r->page_token && r->page_token[0]) {
		char *end = NULL;
		long long v = strtoll(r->page_token, &end, 10);

		if (*end || v < 0 || r->page_token[0] < '0' || r->page_token[0] > '9')
			return mu_error_set(&c->err, MU_EINVAL, "page_token", "not a page token from this API");
		f.after_id = v;
	}
	if (r->n_states) {
		const char **st = A(&c->arena, r->n_states * sizeof(*st));

		for (size_t i = 0; i < r->n_states; i++) {
			const char *const *k = job_states;

			while (*k && strcmp(*k, r->states[i]))
				k++;
			if (!*k)
				return mu_error_set(&c->err, MU_EINVAL, "states", "unknown state %.32s",
						    r->states[i]);
			st[f.nstates++] = *k;
		}
		f.states = st;
	}
	f.tenant = r->tenant && r->tenant[0] ? r->tenant : NULL;
	f.user = r->user && r->user[0] ? r->user : NULL;
	if (r->n_labels) {
		json_t *o = json_object();
		char *txt;

		for (size_t i = 0; i < r->n_labels; i++) {
			json_t *v = json_string(r->labels[i]->value);

			if (!v || !grpc_codec_utf8_ok(r->labels[i]->key)) {
				json_decref(v);
				json_decref(o);
				return mu_error_set(&c->err, MU_EUTF8, "labels", "must be valid UTF-8");
			}
			json_object_set_new(o, r->labels[i]->key, v);
		}
		txt = json_dumps(o, JSON_COMPACT);
		f.labels = S(&c->arena, txt);
		free(txt);
		json_decref(o);
	}
	ret = ops_job_list(db, &c->arena, &c->who, &f, &page, &c->err);
	if (ret < 0)
		return ret;
	resp = A(&c->arena, sizeof(*resp));
	muster__v1__list_jobs_response__init(resp);
	resp->jobs = A(&c->arena, page.n * sizeof(*resp->jobs));
	for (size_t i = 0; i < page.n; i++)
		resp->jobs[resp->n_jobs++] = job_proto(&c->arena, &page.items[i]);
	if (page.next_after) {
		char tok[24];

		snprintf(tok, sizeof(tok), "%lld", (long long)page.next_after);
		resp->next_page_token = S(&c->arena, tok);
	} else {
		resp->next_page_token = S(&c->arena, "");
	}
	c->resp = &resp->base;
	return 0;
}

/* ---- Watch --------------------------------------------------------------- */

/*
 * One open Watch. The watch thread owns the cursor. Event ids are assigned
 * at INSERT and become visible at COMMIT, so a lower id may appear after a
 * higher one: the thread reads every event (visible to the caller or not)
 * in id order and stops at a gap until it is older than WATCH_GAP_MS
 * (a rolled-back transaction burns ids forever; a slow one fills the gap).
 */
#define WATCH_GAP_MS 2000
#define WATCH_BATCH 500

struct watch {
	struct gcall *c;
	int64_t cursor;
	int64_t job_id;
	char *scope;        /* NULL = all */
	char **kinds;       /* event kinds wanted; none = all */
	size_t nkinds;
	int64_t gap_at;     /* the id after which a gap was first seen */
	int64_t gap_since;  /* ms */
	struct watch *next;
};

static struct {
	pthread_mutex_t mu;
	struct watch *list;
	pthread_t thread;
	int wake;           /* eventfd */
	bool running;
} W = { .mu = PTHREAD_MUTEX_INITIALIZER, .wake = -1 };

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wake_watchers(void)
{
	uint64_t one = 1;

	if (W.wake >= 0 && write(W.wake, &one, sizeof(one)) < 0)
		mu_debug("grpc watch wake failed");
}

static void watch_free(struct gcall *c)
{
	struct watch *w = c->stream;

	if (!w)
		return;
	mu_free(w->scope);
	for (size_t i = 0; i < w->nkinds; i++)
		mu_free(w->kinds[i]);
	mu_free(w->kinds);
	mu_free(w);
	c->stream = NULL;
	rest_metrics_event_streams_add(REST_METRICS_WATCH, -1);
}

/* CQ thread: the client went away. */
static void watch_closed(struct gcall *c)
{
	struct watch **p, *w = NULL;

	pthread_mutex_lock(&W.mu);
	for (p = &W.list; *p; p = &(*p)->next) {
		if ((*p)->c == c) {
			w = *p;
			*p = w->next;
			break;
		}
	}
	pthread_mutex_unlock(&W.mu);
	if (w)
		gcall_unref(c); /* the list's reference */
}

static int watch_run(PGconn *db, struct gcall *c)
{
	const Muster__V1__WatchJobsRequest *r = (const void *)c->req;
	struct watch *w;
	int ret;

	if (r->after_event_id < -1)
		return mu_error_set(&c->err, MU_ERANGE, "after_event_id", "must be >= -1");
	if (r->job_id < 0)
		return mu_error_set(&c->err, MU_ENOTFOUND, "job_id", "no such job");
	for (size_t i = 0; i < r->n_kinds; i++)
		if (!grpc_codec_utf8_ok(r->kinds[i]) || strlen(r->kinds[i]) > 64)
			return mu_error_set(&c->err, MU_EINVAL, "kinds", "not an event kind");
	if (r->job_id > 0) {
		struct store_job job;

		ret = ops_job_get(db, &c->arena, &c->who, r->job_id, &job, &c->err);
		if (ret < 0)
			return ret;
	}
	w = mu_calloc(1, sizeof(*w));
	w->c = c;
	w->job_id = r->job_id;
	w->scope = gcall_scope(c) ? mu_strdup(gcall_scope(c)) : NULL;
	w->kinds = mu_calloc(r->n_kinds + 1, sizeof(*w->kinds));
	for (size_t i = 0; i < r->n_kinds; i++)
		w->kinds[w->nkinds++] = mu_strdup(r->kinds[i]);
	w->cursor = r->after_event_id;
	c->stream = w;
	c->stream_free = watch_free;
	rest_metrics_event_streams_add(REST_METRICS_WATCH, +1);
	if (w->cursor < 0) {
		ret = store_event_max_id(db, &w->cursor, &c->err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Pool worker, after watch_run succeeded. */
static void watch_start(struct gcall *c)
{
	struct watch *w = c->stream;

	c->on_closed = watch_closed;
	gcall_ref(c); /* the list's */
	pthread_mutex_lock(&W.mu);
	w->next = W.list;
	W.list = w;
	pthread_mutex_unlock(&W.mu);
	gcall_stream_open(c);
	if (grpc_stopping())
		gcall_stream_finish(c, MU_EUNAVAIL, "server shutting down");
	wake_watchers();
}

/* Watch thread: one poll of one watch. */
static void watch_poll(PGconn *db, struct watch *w, struct mu_arena *a)
{
	struct store_event_filter f = { w->scope, w->job_id, (const char *const *)w->kinds, w->nkinds };
	struct mu_error err = { 0 };
	struct store_event *evs;
	size_t n;

	if (store_event_scan(db, a, w->cursor, &f, WATCH_BATCH, &evs, &n, &err) < 0) {
		mu_warn("grpc watch query failed: %s", err.msg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct store_event *e = &evs[i];
		Muster__V1__JobEvent ev = MUSTER__V1__JOB_EVENT__INIT;

		if (e->id != w->cursor + 1) {
			int64_t t = now_ms();

			if (w->gap_since == 0 || w->gap_at != w->cursor) {
				w->gap_at = w->cursor;
				w->gap_since = t;
			}
			if (t - w->gap_since < WATCH_GAP_MS)
				break;
		}
		w->cursor = e->id;
		if (!e->visible)
			continue;
		ev.id = e->id;
		ev.at = (char *)e->at;
		ev.kind = (char *)e->kind;
		ev.job_id = e->job_id;
		ev.run_id = e->run_id;
		ev.reason = (char *)e->reason;
		ev.data_json = (char *)e->data;
		ev.tenant = (char *)e->tenant;
		ev.job_state = (char *)e->job_state;
		if (!gcall_stream_send(w->c, &ev.base))
			break;
	}
}

static void *watch_main(void *arg)
{
	PGconn *db = NULL;
	struct mu_arena a;
	int64_t next_connect = 0;

	(void)arg;
	mu_arena_init(&a, 0);
	while (!grpc_stopping()) {
		struct pollfd pf[2] = { { .fd = W.wake, .events = POLLIN }, { .fd = -1 } };
		struct watch **snap = NULL;
		size_t n = 0, cap = 0;
		int64_t maxid = 0;
		uint64_t v;

		if (!db && now_ms() >= next_connect) {
			struct mu_error err = { 0 };

			db = store_db_connect(grpc_db_url(), "muster-api:grpc-watch", &err);
			if (db && store_listen(db, (const char *const[]){ "muster_sched", "muster_agents" }, 2, &err) < 0) {
				store_db_close(db);
				db = NULL;
			}
			if (!db) {
				mu_warn("grpc watch db: %s", err.msg);
				next_connect = now_ms() + 1000;
			}
		}
		if (db)
			pf[1] = (struct pollfd){ .fd = store_listen_fd(db), .events = POLLIN };
		poll(pf, 2, 250);
		if (pf[0].revents & POLLIN && read(W.wake, &v, sizeof(v)) < 0)
			continue;
		if (grpc_stopping())
			break;
		if (db) {
			/* a notification only wakes us: every watcher polls below */
			if (store_listen_drain(db, NULL, NULL) < 0 || !store_db_ok(db)) {
				store_db_close(db);
				db = NULL;
				continue;
			}
		}
		if (!db)
			continue;
		/* one cheap query tells which watchers can have anything new */
		pthread_mutex_lock(&W.mu);
		n = W.list != NULL;
		pthread_mutex_unlock(&W.mu);
		if (!n)
			continue;
		n = 0;
		if (store_event_max_id(db, &maxid, NULL) < 0)
			maxid = INT64_MAX;
		pthread_mutex_lock(&W.mu);
		for (struct watch *w = W.list; w; w = w->next) {
			if (w->cursor >= maxid)
				continue;
			snap = mu_grow(snap, &cap, n + 1, sizeof(*snap));
			gcall_ref(w->c);
			snap[n++] = w;
		}
		pthread_mutex_unlock(&W.mu);
		for (size_t i = 0; i < n; i++) {
			struct gcall *c = snap[i]->c;

			if (gcall_stream_pending(c) == 0)
				watch_poll(db, snap[i], &a);
			gcall_unref(c);
		}
		mu_free(snap);
		mu_arena_reset(&a);
	}
	store_db_close(db);
	mu_arena_release(&a);
	return NULL;
}

int grpc_jobs_start(void)
{
	store_pool_group(grpc_pool(), GRPC_GROUP_SUBMIT, submit_group, 4096);
	W.wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (W.wake < 0)
		return MU_EIO;
	pthread_create(&W.thread, NULL, watch_main, NULL);
	W.running = true;
	return 0;
}

void grpc_jobs_stop(void)
{
	struct watch *list;

	if (!W.running)
		return;
	wake_watchers();
	pthread_join(W.thread, NULL);
	W.running = false;
	pthread_mutex_lock(&W.mu);
	list = W.list;
	W.list = NULL;
	pthread_mutex_unlock(&W.mu);
	while (list) {
		struct watch *next = list->next;
		struct gcall *c = list->c;

		gcall_stream_finish(c, MU_EUNAVAIL, "server shutting down");
		gcall_unref(c);
		list = next;
	}
	close(W.wake);
	W.wake = -1;
}

/* Each method's roles are its REST route's (routes.def, by handler name;
 * the role bits are the same in both: ops_principal.h). */
enum {
#define REST_ROUTE(method, pattern, handler, roles, summary) handler##_roles = (roles) & REST_ANYONE,
#include "routes.def"
#undef REST_ROUTE
};

#define JOBS(m, kind, route, req, run, start, group)                                               \
	{ "/muster.v1.JobService/" m, kind, route##_roles, &muster__v1__##req##__descriptor, run, start, \
	  group }

const struct gmethod grpc_jobs_methods[] = {
	JOBS("Submit", GK_UNARY, rest_jobs_submit, submit_job_request, submit_run, NULL, GRPC_GROUP_SUBMIT),
	JOBS("SubmitBatch", GK_UNARY, rest_jobs_batch, submit_jobs_request, submit_batch_run, NULL, 0),
	JOBS("Get", GK_UNARY, rest_jobs_get, get_job_request, get_run, NULL, 0),
	JOBS("List", GK_UNARY, rest_jobs_list, list_jobs_request, list_run, NULL, 0),
	JOBS("Cancel", GK_UNARY, rest_jobs_cancel, cancel_job_request, cancel_run, NULL, 0),
	JOBS("Watch", GK_SERVER_STREAM, rest_events, watch_jobs_request, watch_run, watch_start, 0),
	JOBS("GetLogs", GK_SERVER_STREAM, rest_jobs_logs, get_logs_request, grpc_logs_getlogs_run,
	     grpc_logs_getlogs_start, 0),
	JOBS("Hold", GK_UNARY, rest_jobs_hold, job_control_request, hold_run, NULL, 0),
	JOBS("Release", GK_UNARY, rest_jobs_release, job_control_request, release_run, NULL, 0),
	JOBS("Requeue", GK_UNARY, rest_jobs_requeue, job_control_request, requeue_run, NULL, 0),
	JOBS("Update", GK_UNARY, rest_jobs_update, update_job_request, update_run, NULL, 0),
	{ NULL, 0, 0, NULL, NULL, NULL, 0 },
};
