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

/* Broker thread: sends p now (p is in the list, L.mu not held by us). */
static bool send_request(struct pend *p, struct gcall *agent)
{
	Muster__V1__ServerMessage sm = MUSTER__V1__SERVER_MESSAGE__INIT;
	Muster__V1__LogRequest lr = MUSTER__V1__LOG_REQUEST__INIT;

	lr.request_id = p->id;
	lr.run_id = p->q.run_id;
	lr.local_rank = p->q.local_rank;
	lr.stream = p->q.err_stream ? MUSTER__V1__LOG_STREAM__LOG_STREAM_STDERR
				    : MUSTER__V1__LOG_STREAM__LOG_STREAM_STDOUT;
	lr.offset = p->q.offset;
	lr.limit = p->q.limit;
	sm.msg_case = MUSTER__V1__SERVER_MESSAGE__MSG_LOG_REQUEST;
	sm.log_request = &lr;
	return gcall_stream_send(agent, &sm.base);
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

			if (!agent) {
				answer_error(due, MU_ENODEDOWN,
					     "the node's agent is not connected to this muster-api");
			} else {
				due->agent = agent;
				due->deadline_ms = now_ms() + API_GRPC_LOG_TIMEOUT_MS;
				pthread_mutex_lock(&L.mu);
				due->next = L.list;
				L.list = due;
				L.n++;
				pthread_mutex_unlock(&L.mu);
				/* after linking: the answer may come before we return */
				if (!send_request(due, agent)) {
					struct pend **q;
					bool mine = false;

					pthread_mutex_lock(&L.mu);
					for (q = &L.list; *q; q = &(*q)->next) {
						if (*q == due) {
							*q = due->next;
							L.n--;
							mine = true;
							break;
						}
					}
					pthread_mutex_unlock(&L.mu);
					if (mine)
						answer_error(due, MU_ENODEDOWN, "the node's agent stream closed");
				}
			}
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
	struct pend **pp, *p = NULL;
	struct api_grpc_log_answer a = { 0 };

	pthread_mutex_lock(&L.mu);
	for (pp = &L.list; *pp; pp = &(*pp)->next) {
		/* only the stream it went down may answer it */
		if ((*pp)->id == lc->request_id && (*pp)->agent == agent) {
			p = *pp;
			*pp = p->next;
			L.n--;
			break;
		}
	}
	pthread_mutex_unlock(&L.mu);
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
