/*
 * rest_logs.c - GET /v1/jobs/{id}/logs: a process's stdout or stderr,
 * read from its node's agent (see docs/api.md "Logs").
 *
 * The flow, all on the loop thread except the two marked steps:
 *   handler: parse and check the query
 *   -> (pool worker) store_logs_target: the job in the caller's scope, its
 *      run, the node of node_rank
 *   -> target_done: api_grpc_log_fetch, rest_hold
 *   -> (a gRPC thread) on_answer: copy the bytes, rest_wake
 *   -> chunk_done: one reply (follow=false), or the first/next piece of a
 *      chunked reply (follow=true); after each piece is on its way
 *      (more_done) the next fetch goes out, at once while the file has more,
 *      else after a poll interval, until the process ended and all its bytes
 *      were sent.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_grpc.h"
#include "log.h"
#include "rest_server.h"
#include "store_logs.h"

#define LOGS_DEFAULT_LIMIT (1 << 20)
#define LOGS_MAX_LIMIT (1 << 20)
#define LOGS_POLL_MS 500
#define LOGS_RETRY_MS 1000
#define LOGS_MAX_RETRIES 30 /* follow: a node that reconnects within ~30 s is waited for */
#define LOGS_MAX_MISSING 120 /* follow: a live run's file may take ~60 s to appear */

struct logs_req {
	struct rest_req *rq;
	int64_t job_id, run_id, node_rank, offset;
	int32_t local_rank, limit;
	bool err_stream, follow;
	struct store_log_target t;

	/* the last answer (copied from the gRPC thread) */
	int rc;
	char msg[256];
	unsigned char *data;
	size_t len;
	int64_t size;
	bool ended;
	bool streaming;
	int retries, missing;
};

static int int_param(struct rest_req *rq, const char *name, int64_t lo, int64_t hi, int64_t *out)
{
	const char *s = rest_query(rq, name);

	if (!s)
		return 0;
	if (!rest_parse_int(s, lo, hi, out))
		return mu_error_set(&rq->err, MU_EINVAL, name, "must be an integer %lld..%lld",
				    (long long)lo, (long long)hi);
	return 0;
}

static void fetch(struct logs_req *lr, int delay_ms);

static void on_answer(void *arg, const struct api_grpc_log_answer *a)
{
	struct logs_req *lr = arg;

	lr->rc = a->rc;
	snprintf(lr->msg, sizeof(lr->msg), "%s", a->msg ? a->msg : "");
	mu_free(lr->data);
	lr->data = NULL;
	lr->len = a->rc < 0 ? 0 : a->len;
	if (lr->len) {
		lr->data = mu_malloc(lr->len);
		memcpy(lr->data, a->data, lr->len);
	}
	lr->size = a->size;
	lr->ended = a->ended;
	rest_wake(lr->rq, a->rc);
}

static void add_headers(struct logs_req *lr)
{
	struct rest_req *rq = lr->rq;
	char v[32];

	snprintf(v, sizeof(v), "%" PRId64, lr->t.run_id);
	rest_add_header(rq, "muster-run-id", v);
	rest_add_header(rq, "muster-node", lr->t.node);
	rest_add_header(rq, "cache-control", "no-store");
	if (!lr->follow) {
		snprintf(v, sizeof(v), "%" PRId64, lr->offset + (int64_t)lr->len);
		rest_add_header(rq, "muster-next-offset", v);
		snprintf(v, sizeof(v), "%" PRId64, lr->size);
		rest_add_header(rq, "muster-log-size", v);
		rest_add_header(rq, "muster-log-ended", lr->ended ? "true" : "false");
	}
}

static void more_done(struct rest_req *rq, void *arg)
{
	struct logs_req *lr = arg;

	(void)rq;
	/* more is there now: read on at once; else poll */
	fetch(lr, lr->offset < lr->size ? 0 : LOGS_POLL_MS);
}

static void chunk_done(struct rest_req *rq, void *arg, int rc)
{
	struct logs_req *lr = arg;
	bool final;

	if (rq->gone)
		goto out_free;
	/* a run the database says is live that the agent has no file for yet
	 * (STARTING: the desired state is on its way) has printed nothing yet */
	if (rc == MU_EGONE && lr->t.run_live && (!lr->follow || lr->missing++ < LOGS_MAX_MISSING)) {
		rc = 0;
		lr->len = 0;
		lr->size = 0;
		lr->ended = false;
	}
	if (rc < 0) {
		if (!lr->streaming) {
			mu_error_set(&rq->err, rc, "", "%s", lr->msg);
			goto out_free;
		}
		if ((rc == MU_ENODEDOWN || rc == MU_EUNAVAIL) && lr->retries++ < LOGS_MAX_RETRIES) {
			fetch(lr, LOGS_RETRY_MS);
			return;
		}
		mu_info("job=%" PRId64 " run=%" PRId64 " node=%s logs follow ends broken: %s", lr->job_id,
			lr->t.run_id, lr->t.node, lr->msg);
		rest_stream_send(rq, NULL, 0, false, true, NULL, NULL);
		goto out_free;
	}
	lr->retries = 0;
	if (!lr->follow) {
		add_headers(lr);
		rest_result_text(rq, 200, "text/plain", lr->len ? (const char *)lr->data : "", lr->len);
		goto out_free;
	}
	if (!lr->streaming) {
		add_headers(lr);
		rest_stream_begin(rq, 200, "text/plain");
		lr->streaming = true;
	}
	lr->offset += (int64_t)lr->len;
	final = lr->ended && lr->offset >= lr->size;
	rest_stream_send(rq, lr->data, lr->len, final, false, more_done, lr);
	if (final)
		goto out_free;
	return;
out_free:
	mu_free(lr->data);
	lr->data = NULL;
}

static void fetch(struct logs_req *lr, int delay_ms)
{
	struct api_grpc_log_ask q = { 0 };

	q.node = lr->t.node;
	q.run_id = lr->t.run_id;
	q.local_rank = lr->local_rank;
	q.err_stream = lr->err_stream;
	q.offset = lr->offset;
	q.limit = lr->limit;
	rest_hold(lr->rq, chunk_done, lr);
	api_grpc_log_fetch(&q, delay_ms, on_answer, lr);
}

static int target_run(PGconn *db, struct rest_req *rq, void *arg)
{
	struct logs_req *lr = arg;

	return store_logs_target(db, rq->arena, rest_scope_path(rq), lr->job_id, lr->run_id,
				 lr->node_rank, &lr->t, &rq->err);
}

static void target_done(struct rest_req *rq, void *arg, int rc)
{
	struct logs_req *lr = arg;
	int64_t ppn;

	if (rc < 0 || rq->gone)
		return; /* the framework answers with rq->err */
	ppn = lr->t.procs_per_node > 0 ? lr->t.procs_per_node : 1;
	if (lr->local_rank >= ppn) {
		mu_error_set(&rq->err, MU_ERANGE, "local_rank", "job %" PRId64 " runs %" PRId64
			     " process(es) per node: local_rank 0..%" PRId64, lr->job_id, ppn, ppn - 1);
		return;
	}
	fetch(lr, 0);
}

int rest_jobs_logs(struct rest_req *rq)
{
	static const char *const allowed[] = { "node_rank", "local_rank", "stream", "offset", "limit",
					       "follow", "run_id", NULL };
	struct logs_req *lr = mu_arena_alloc(rq->arena, sizeof(*lr));
	const char *id = rest_param(rq, "id"), *s;
	int64_t v;
	int ret;

	memset(lr, 0, sizeof(*lr));
	lr->rq = rq;
	lr->limit = LOGS_DEFAULT_LIMIT;
	if (!rest_parse_int(id, 1, INT64_MAX, &lr->job_id))
		return mu_error_set(&rq->err, MU_ENOTFOUND, "", "no such job");
	ret = rest_query_check(rq, allowed);
	if (ret < 0)
		return ret;
	if ((ret = int_param(rq, "node_rank", 0, 1000000, &lr->node_rank)) < 0 ||
	    (ret = int_param(rq, "offset", 0, INT64_MAX, &lr->offset)) < 0 ||
	    (ret = int_param(rq, "run_id", 1, INT64_MAX, &lr->run_id)) < 0)
		return ret;
	v = 0;
	if ((ret = int_param(rq, "local_rank", 0, 255, &v)) < 0)
		return ret;
	lr->local_rank = (int32_t)v;
	v = LOGS_DEFAULT_LIMIT;
	if ((ret = int_param(rq, "limit", 1, LOGS_MAX_LIMIT, &v)) < 0)
		return ret;
	lr->limit = (int32_t)v;
	s = rest_query(rq, "stream");
	if (s && strcmp(s, "stdout") && strcmp(s, "stderr"))
		return mu_error_set(&rq->err, MU_EINVAL, "stream", "must be stdout or stderr");
	lr->err_stream = s && !strcmp(s, "stderr");
	s = rest_query(rq, "follow");
	if (s && strcmp(s, "true") && strcmp(s, "false") && strcmp(s, "1") && strcmp(s, "0"))
		return mu_error_set(&rq->err, MU_EINVAL, "follow", "must be true or false");
	lr->follow = s && (!strcmp(s, "true") || !strcmp(s, "1"));
	return rest_defer(rq, target_run, target_done, lr);
}
