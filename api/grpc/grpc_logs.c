/*
 * grpc_logs.c - the log broker: REST handlers and GetLogs streams ask for
 * a byte range of a process's output (api_grpc_log_fetch); the broker
 * sends a LogRequest down the node's AgentService stream and hands the
 * LogChunk that comes back to the asker.
 *
 * Threads: askers call from any thread. The broker thread sends requests
 * when they are due and expires those not answered in time; answers come
 * on the CQ thread (grpc_logs_on_chunk) and closed agent streams too
 * (grpc_logs_closed). A pending request is answered exactly once: whoever
 * unlinks it from the list (under L.mu) calls its callback, outside the
 * lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api_grpc.h"
#include "grpc_internal.h"
#include "log.h"
#include "muster/v1/agent.pb-c.h"
#include "muster/v1/jobs.pb-c.h"
#include "ops_jobs.h"
#include "store_logs.h"

#define LOGS_MAX_PENDING 4096
#define LOGS_TICK_MS 50

struct pend {
	int64_t id;
	char node[256];
	struct api_grpc_log_ask q;
	int64_t due_ms;          /* send at */
	int64_t deadline_ms;     /* once sent: give up at */
	struct gcall *agent;     /* once sent: the stream it went down (a reference) */
	api_grpc_log_fn fn;
	void *arg;
	struct pend *next;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool running, quit;
	struct pend *list;
	size_t n;
	int64_t next_id;
} L = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Answers p (already unlinked) with an error and frees it. */
static void answer_error(struct pend *p, int rc, const char *msg)
{
	struct api_grpc_log_answer a = { 0 };

	a.rc = rc;
	a.msg = msg;
	a.offset = p->q.offset;
	p->fn(p->arg, &a);
	if (p->agent)
		gcall_unref(p->agent);
	mu_free(p);
}

void api_grpc_log_fetch(const struct api_grpc_log_ask *q, int delay_ms, api_grpc_log_fn fn, void *arg)
{
	struct pend *p = mu_calloc(1, sizeof(*p));

	p->q = *q;
	snprintf(p->node, sizeof(p->node), "%s", q->node ? q->node : "");
	p->q.node = p->node;
	p->fn = fn;
	p->arg = arg;
	p->due_ms = now_ms() + (delay_ms > 0 ? delay_ms : 0);
	pthread_mutex_lock(&L.mu);
	if (!L.running || L.quit || L.n >= LOGS_MAX_PENDING) {
		bool busy = L.running && !L.quit;

		/* answered inside the caller's call (the header says so) */
		pthread_mutex_unlock(&L.mu);
		if (busy)
			answer_error(p, MU_EUNAVAIL, "too many log reads in flight on this muster-api");
		else
			answer_error(p, MU_ENODEDOWN, "this muster-api serves no agent streams (gRPC is off or stopping)");
		return;
	}
	p->id = ++L.next_id;
	p->next = L.list;
	L.list = p;
	L.n++;
	pthread_cond_signal(&L.cv);
	pthread_mutex_unlock(&L.mu);
}

/* Unlinks the pending request `id` of `agent`; NULL when someone else did. */
static struct pend *take(int64_t id, const struct gcall *agent)
{
	struct pend **pp, *p = NULL;

	pthread_mutex_lock(&L.mu);
	for (pp = &L.list; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == id && (*pp)->agent == agent) {
			p = *pp;
			*pp = p->next;
			L.n--;
			break;
		}
	}
	pthread_mutex_unlock(&L.mu);
	return p;
}

/* Broker thread: links p as sent down `agent` (a reference, now p's) and
 * sends it. Once linked, p belongs to whoever takes it from the list. */
static void send_request(struct pend *p, struct gcall *agent)
{
	Muster__V1__ServerMessage sm = MUSTER__V1__SERVER_MESSAGE__INIT;
	Muster__V1__LogRequest lr = MUSTER__V1__LOG_REQUEST__INIT;
	int64_t id = p->id;

	lr.request_id = p->id;
	lr.run_id = p->q.run_id;
	lr.local_rank = p->q.local_rank;
	lr.stream = p->q.err_stream ? MUSTER__V1__LOG_STREAM__LOG_STREAM_STDERR
				    : MUSTER__V1__LOG_STREAM__LOG_STREAM_STDOUT;
	lr.offset = p->q.offset;
	lr.limit = p->q.limit;
	sm.msg_case = MUSTER__V1__SERVER_MESSAGE__MSG_LOG_REQUEST;
	sm.log_request = &lr;
	p->agent = agent;
	p->deadline_ms = now_ms() + API_GRPC_LOG_TIMEOUT_MS;
	/* linked before it is sent: the answer (or the stream's close) may
	 * come before gcall_stream_send returns; p is not touched after */
	pthread_mutex_lock(&L.mu);
	p->next = L.list;
	L.list = p;
	L.n++;
	pthread_mutex_unlock(&L.mu);
	if (!gcall_stream_send(agent, &sm.base) && (p = take(id, agent)))
		answer_error(p, MU_ENODEDOWN, "the node's agent stream closed");
}

static void *broker_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&L.mu);
	while (!L.quit) {
		struct pend *expired = NULL, *due = NULL, **pp;
		int64_t t = now_ms();
		struct timespec ts;

		for (pp = &L.list; *pp;) {
			struct pend *p = *pp;

			if ((p->agent && t >= p->deadline_ms) || (!p->agent && t >= p->due_ms)) {
				*pp = p->next;
				L.n--;
				p->next = p->agent ? expired : due;
				if (p->agent)
					expired = p;
				else
					due = p;
				continue;
			}
			pp = &p->next;
		}
		pthread_mutex_unlock(&L.mu);
		while (expired) {
			struct pend *next = expired->next;

			mu_warn("node=%s run=%lld logs: the agent did not answer in %d ms", expired->node,
				(long long)expired->q.run_id, API_GRPC_LOG_TIMEOUT_MS);
			answer_error(expired, MU_ENODEDOWN, "the node's agent did not answer in time");
			expired = next;
		}
		/* due ones: find the stream, send, put back (as sent) */
		while (due) {
			struct pend *next = due->next;
			struct gcall *agent = grpc_agent_find(due->node);

			if (!agent)
				answer_error(due, MU_ENODEDOWN,
					     "the node's agent is not connected to this muster-api");
			else
				send_request(due, agent);
			due = next;
		}
		pthread_mutex_lock(&L.mu);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += LOGS_TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!L.quit)
			pthread_cond_timedwait(&L.cv, &L.mu, &ts);
	}
	pthread_mutex_unlock(&L.mu);
	return NULL;
}

static int rc_of(const char *error)
{
	if (!strncmp(error, "unknown_run", 11) || !strncmp(error, "gone", 4))
		return MU_EGONE;
	if (!strncmp(error, "invalid", 7))
		return MU_EINVAL;
	return MU_EUNAVAIL;
}

void grpc_logs_on_chunk(struct gcall *agent, const Muster__V1__LogChunk *lc)
{
	/* only the stream it went down may answer it */
	struct pend *p = take(lc->request_id, agent);
	struct api_grpc_log_answer a = { 0 };

	if (!p)
		return; /* late (expired) or not ours */
	if (lc->error && lc->error[0]) {
		char msg[480];

		snprintf(msg, sizeof(msg), "node %.255s: %.200s", p->node, lc->error);
		answer_error(p, rc_of(lc->error), msg);
		return;
	}
	a.offset = p->q.offset;
	a.data = lc->data.data;
	/* never more than asked, whatever the agent sent */
	a.len = lc->data.len > (size_t)p->q.limit ? (size_t)p->q.limit : lc->data.len;
	a.size = lc->size;
	a.ended = lc->ended;
	p->fn(p->arg, &a);
	gcall_unref(p->agent);
	mu_free(p);
}

void grpc_logs_closed(struct gcall *agent)
{
	struct pend **pp, *gone = NULL;

	pthread_mutex_lock(&L.mu);
	for (pp = &L.list; *pp;) {
		struct pend *p = *pp;

		if (p->agent == agent) {
			*pp = p->next;
			L.n--;
			p->next = gone;
			gone = p;
			continue;
		}
		pp = &p->next;
	}
	pthread_mutex_unlock(&L.mu);
	while (gone) {
		struct pend *next = gone->next;

		answer_error(gone, MU_ENODEDOWN, "the node's agent stream closed");
		gone = next;
	}
}

int grpc_logs_start(void)
{
	L.quit = false;
	L.running = true;
	pthread_create(&L.thread, NULL, broker_main, NULL);
	return 0;
}

void grpc_logs_stop(void)
{
	struct pend *list;

	if (!L.running)
		return;
	pthread_mutex_lock(&L.mu);
	L.quit = true;
	pthread_cond_signal(&L.cv);
	pthread_mutex_unlock(&L.mu);
	pthread_join(L.thread, NULL);
	pthread_mutex_lock(&L.mu);
	L.running = false;
	list = L.list;
	L.list = NULL;
	L.n = 0;
	pthread_mutex_unlock(&L.mu);
	while (list) {
		struct pend *next = list->next;

		answer_error(list, MU_EUNAVAIL, "muster-api is shutting down");
		list = next;
	}
}

/* ---- JobService.GetLogs ------------------------------------------------- */

#define GETLOGS_DEFAULT_LIMIT 65536
#define GETLOGS_POLL_MS 500
#define GETLOGS_RETRY_MS 1000
#define GETLOGS_MAX_RETRIES 30
#define GETLOGS_MAX_MISSING 120

struct glogs {
	struct gcall *c;
	struct store_log_target t; /* strings in c->arena */
	int32_t local_rank, limit;
	bool err_stream, follow;
	int64_t offset;
	int retries, missing;
};

static void glogs_free(struct gcall *c)
{
	mu_free(c->stream);
	c->stream = NULL;
}

static void glogs_answer(void *arg, const struct api_grpc_log_answer *a);
static void glogs_answer_ok(struct glogs *g, const struct api_grpc_log_answer *a);

/* Takes a call reference for the fetch in flight. */
static void glogs_fetch(struct glogs *g, int delay_ms)
{
	struct api_grpc_log_ask q = { 0 };

	q.node = g->t.node;
	q.run_id = g->t.run_id;
	q.local_rank = g->local_rank;
	q.err_stream = g->err_stream;
	q.offset = g->offset;
	q.limit = g->limit;
	gcall_ref(g->c);
	api_grpc_log_fetch(&q, delay_ms, glogs_answer, g);
}

static bool call_closed(struct gcall *c)
{
	bool closed;

	pthread_mutex_lock(&c->mu);
	closed = c->closed || c->finish_queued;
	pthread_mutex_unlock(&c->mu);
	return closed;
}

static void glogs_answer(void *arg, const struct api_grpc_log_answer *a)
{
	struct glogs *g = arg;
	struct gcall *c = g->c;

	if (call_closed(c))
		goto out;
	/* a live run (in the database) whose file the agent has not made yet:
	 * nothing printed yet (a follow waits ~60 s for it) */
	if (a->rc == MU_EGONE && g->t.run_live && (!g->follow || g->missing++ < GETLOGS_MAX_MISSING)) {
		struct api_grpc_log_answer none = { 0 };

		none.offset = a->offset;
		glogs_answer_ok(g, &none);
		goto out;
	}
	if (a->rc < 0) {
		if (g->follow && (a->rc == MU_ENODEDOWN || a->rc == MU_EUNAVAIL) &&
		    g->retries++ < GETLOGS_MAX_RETRIES) {
			glogs_fetch(g, GETLOGS_RETRY_MS);
			goto out;
		}
		gcall_stream_finish(c, a->rc, a->msg);
		goto out;
	}
	glogs_answer_ok(g, a);
out:
	gcall_unref(c);
}

/* One successful answer: send what came, then finish or fetch on. */
static void glogs_answer_ok(struct glogs *g, const struct api_grpc_log_answer *a)
{
	struct gcall *c = g->c;
	bool last;

	g->retries = 0;
	last = !g->follow || (a->ended && a->offset + (int64_t)a->len >= a->size);
	if (a->len || last) {
		Muster__V1__GetLogsResponse r = MUSTER__V1__GET_LOGS_RESPONSE__INIT;

		r.data.data = (uint8_t *)a->data;
		r.data.len = a->len;
		r.offset = a->offset;
		r.size = a->size;
		r.ended = a->ended && a->offset + (int64_t)a->len >= a->size;
		r.run_id = g->t.run_id;
		r.node = (char *)g->t.node;
		if (!gcall_stream_send(c, &r.base))
			return;
	}
	g->offset = a->offset + (int64_t)a->len;
	if (last) {
		gcall_stream_finish(c, 0, NULL);
		return;
	}
	/* more is there: read on at once, unless the client is slow to take it */
	glogs_fetch(g, gcall_stream_pending(c) > 4 ? 100 : g->offset < a->size ? 0 : GETLOGS_POLL_MS);
}

int grpc_logs_getlogs_run(PGconn *db, struct gcall *c)
{
	const Muster__V1__GetLogsRequest *r = (const void *)c->req;
	struct glogs *g;
	int64_t ppn;
	int ret;

	if ((ret = ops_job_id_check(r->job_id, &c->err)) < 0)
		return ret;
	if (r->run_id < 0)
		return mu_error_set(&c->err, MU_ENOTFOUND, "run_id", "no such run");
	if (r->node_rank < 0 || r->node_rank > 1000000)
		return mu_error_set(&c->err, MU_ERANGE, "node_rank", "must be 0..1000000");
	if (r->local_rank < 0 || r->local_rank > 255)
		return mu_error_set(&c->err, MU_ERANGE, "local_rank", "must be 0..255");
	if (r->stream && r->stream[0] && strcmp(r->stream, "stdout") && strcmp(r->stream, "stderr"))
		return mu_error_set(&c->err, MU_EINVAL, "stream", "must be stdout or stderr");
	if (r->offset < 0)
		return mu_error_set(&c->err, MU_ERANGE, "offset", "must be >= 0");
	if (r->limit < 0 || r->limit > (1 << 20))
		return mu_error_set(&c->err, MU_ERANGE, "limit", "must be 0..1048576 (0 = 65536)");
	g = mu_calloc(1, sizeof(*g));
	c->stream = g;
	c->stream_free = glogs_free;
	g->c = c;
	g->local_rank = r->local_rank;
	g->err_stream = r->stream && !strcmp(r->stream, "stderr");
	g->offset = r->offset;
	g->limit = r->limit ? r->limit : GETLOGS_DEFAULT_LIMIT;
	g->follow = r->follow;
	ret = store_logs_target(db, &c->arena, gcall_scope(c), r->job_id, r->run_id, r->node_rank,
				&g->t, &c->err);
	if (ret < 0)
		return ret;
	ppn = g->t.procs_per_node > 0 ? g->t.procs_per_node : 1;
	if (r->local_rank >= ppn)
		return mu_error_set(&c->err, MU_ERANGE, "local_rank",
				    "job %lld runs %lld process(es) per node: local_rank 0..%lld",
				    (long long)r->job_id, (long long)ppn, (long long)ppn - 1);
	return 0;
}

/* Pool worker, after grpc_logs_getlogs_run succeeded. */
void grpc_logs_getlogs_start(struct gcall *c)
{
	gcall_stream_open(c);
	if (grpc_stopping()) {
		gcall_stream_finish(c, MU_EUNAVAIL, "server shutting down");
		return;
	}
	glogs_fetch(c->stream, 0);
}
