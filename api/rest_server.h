/*
 * rest_server.h - muster-api internals shared by main.c, the framework
 * (rest.c) and handlers that need more than rest.h: starting the server,
 * group-committed work, metrics. Not for handlers of other areas.
 */
#ifndef MU_REST_SERVER_H
#define MU_REST_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "pool.h"
#include "rest.h"

struct rest_config {
	const char *http_addr;     /* "host:port" */
	size_t max_body;           /* bytes, ordinary routes */
	size_t max_batch_body;     /* bytes, REST_BIG_BODY routes */
	struct store_pool *pool;   /* borrowed; outlives the server */
	const char *db_url;        /* for /readyz's own check (borrowed) */
	/* abuse limits (api/rest_gate.h) */
	long long max_conns;          /* open connections, all clients */
	long long max_conns_per_addr; /* open connections per client address */
	long long auth_fail_burst;    /* auth failures an address may make at once */
	long long auth_fail_rate;     /* ... and per second after that */
};

/* Serves until SIGINT/SIGTERM. Returns 0, or MU_EIO when it cannot listen. */
int rest_server_run(const struct rest_config *cfg);

/* The configuration the server runs with (valid while it runs). */
const struct rest_config *rest_server_config(void);

/*
 * Like rest_defer, but the work joins the pool's group `kind` (registered
 * with store_pool_group on rest_server_config()->pool): the group function
 * receives the store_work items; rest_work_req(w) gives each one's request
 * and w->arg is `arg`. The group function sets w->rc (and the request's
 * err/result) for every item.
 */
int rest_defer_group(struct rest_req *rq, int kind, size_t weight, void *arg, rest_done_fn done);
struct rest_req *rest_work_req(struct store_work *w);
void *rest_work_arg(struct store_work *w);

/* Like rest_result_text, but steals the buffer's memory (b is left empty). */
void rest_result_buf(struct rest_req *rq, int status, const char *content_type, struct mu_buf *b);

/*
 * Waiting on another thread (not the database): rest_hold marks the
 * request busy and returns 0 (handlers and done callbacks `return
 * rest_hold(...)`); the other thread then calls rest_wake(rq, rc) exactly
 * once, after which `done(rq, arg, rc)` runs on the loop thread as after
 * rest_defer (rq->gone when the client left meanwhile). rest_wake is safe
 * from any thread, the loop thread included.
 */
int rest_hold(struct rest_req *rq, rest_done_fn done, void *arg);
void rest_wake(struct rest_req *rq, int rc);

/*
 * Streaming replies (loop thread only). rest_stream_begin sends the status
 * and headers (those of rest_add_header too) with no length: the body goes
 * chunked. rest_stream_send queues `len` bytes (copied) and, unless
 * `final`, calls `more(rq, arg)` on the loop thread once they are on their
 * way; only then may the next rest_stream_send come (from `more`, or later
 * from a done callback after rest_hold). `abort` ends the reply as broken
 * (the client sees a truncated transfer). After begin, the framework never
 * sends a reply of its own; if the client goes away the request is freed
 * (while held: after its done callback ran with rq->gone).
 */
typedef void (*rest_more_fn)(struct rest_req *rq, void *arg);
void rest_stream_begin(struct rest_req *rq, int status, const char *content_type);
void rest_stream_send(struct rest_req *rq, const void *p, size_t len, bool final, bool abort,
		      rest_more_fn more, void *arg);

/*
 * Calls fn(arg) when the request's context is freed (loop thread), however
 * it ended: a reply, a client gone mid-stream, a failed deferral. One per
 * request; the last call wins. For handlers that count what they hold open.
 */
void rest_on_free(struct rest_req *rq, void (*fn)(void *arg), void *arg);

/*
 * Bounds the kernel's send buffer of the request's connection (no more
 * autotuning), for long streams whose lag must be seen by the server: what
 * the kernel holds for a client that stopped reading is not behind.
 */
void rest_stream_sndbuf(struct rest_req *rq, int bytes);

/* Appends the framework's Prometheus metrics (requests, latency, pool). */
void rest_metrics_render(struct mu_buf *b);

/* Replies with a problem document now (loop thread). Used by the framework. */
void rest_problem_render(const struct mu_error *err, int code, struct mu_buf *b);

#endif
