/*
 * rest_server.h - muster-api internals shared by main.c, the framework
 * (rest.c) and handlers that need more than rest.h: starting the server,
 * group-committed work, metrics. Not for handlers of other areas.
 */
#ifndef MU_REST_SERVER_H
#define MU_REST_SERVER_H

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

/* Appends the framework's Prometheus metrics (requests, latency, pool). */
void rest_metrics_render(struct mu_buf *b);

/* Replies with a problem document now (loop thread). Used by the framework. */
void rest_problem_render(const struct mu_error *err, int code, struct mu_buf *b);

#endif
