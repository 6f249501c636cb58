/*
 * rest_gate.h - muster-api's front gate: what a connection must pass before
 * h2o reads a request body (internal to the REST server: rest.c only).
 *
 * h2o 2.2.5 buffers a whole request body before the handler runs and has no
 * hook between the headers and the body. So the gate owns each new
 * connection first: it counts it against --max-conns (global) and
 * --max-conns-per-addr (per client address, IPv6 by /64), answering 503 +
 * Retry-After past either; it reads the first request's headers itself
 * (the body stays in the kernel), routes them (404/405), checks the
 * Content-Length against the route's limit (413), and authenticates the
 * bearer token (401; 429 + Retry-After when the address has spent its
 * auth-failure budget), the database lookup running on a pool worker while
 * the socket is not read. Only a request that passes is handed, with its
 * header bytes, to h2o's HTTP/1 server, which then reads the body. Every
 * refusal is written at once and the connection is closed after a short
 * drain (bytes read and dropped, so the client sees the answer, not a reset).
 *
 * Later requests on a kept-alive connection that passed are checked by the
 * framework (rest.c) after h2o buffered them: that connection has shown a
 * valid token, each failure there closes it, and the per-address budget
 * applies as well.
 *
 * Threading: loop thread only.
 */
#ifndef MU_REST_GATE_H
#define MU_REST_GATE_H

#include <stdbool.h>
#include <sys/socket.h>

#include <h2o.h>
#include <h2o/http1.h>

#include "rest_server.h"

/* Before the first accept. `mq` is the loop's queue (a receiver of its own). */
void rest_gate_init(h2o_loop_t *loop, h2o_accept_ctx_t *actx, h2o_multithread_queue_t *mq,
		    const struct rest_config *cfg);

/* Takes over a freshly accepted socket (it ends closed or in h2o's hands). */
void rest_gate_accept(h2o_socket_t *sock);

/* Per-address auth-failure budget (a token bucket of --auth-fail-burst,
 * refilled at --auth-fail-rate per second). rest_gate_auth_limited says
 * whether the address has spent it, and when to retry (whole seconds). */
bool rest_gate_auth_limited(const struct sockaddr *sa, int *retry_after_s);
void rest_gate_auth_failed(const struct sockaddr *sa);

/* Appends the gate's metrics (open connections, refusals, auth failures). */
void rest_gate_metrics_render(struct mu_buf *b);

/* Provided by the framework (rest.c) for the gate. The router is
 * api/ops/ops_router.h, the token cache api/ops/ops_auth.h. */
/* Counts one token lookup sent to the database (any thread). */
void rest__token_lookup_counted(void);

#endif
