/*
 * rest.h - muster-api's REST framework: the handler contract.
 *
 * Routes live in one X-macro list, api/routes.def:
 *
 *   REST_ROUTE(GET, "/v1/jobs/{id}", rest_job_get, REST_READERS, "Get a job")
 *
 * From it the framework generates the prototypes of the handlers
 * (`int rest_job_get(struct rest_req *rq);`), the router and the metrics
 * labels. Patterns are literal segments and `{param}` segments (one whole
 * segment each); the router matches the method and every segment, so order
 * in the file does not matter. A path that matches a pattern with another
 * method answers 405.
 *
 * Before a handler runs, the framework has:
 *   - authenticated the caller (unless the route's roles are REST_PUBLIC):
 *     missing/invalid token -> 401, role not in the route's mask -> 403;
 *   - decoded the path parameters (rest_param) and the query (rest_query);
 *   - buffered the whole body (over --max-body, or --max-batch-body for
 *     routes whose roles include REST_BIG_BODY -> 413 before the handler).
 *
 * A handler runs on the event-loop thread and must never wait on the
 * database. It does one of:
 *   1. sets the reply with rest_result()/rest_result_text() and returns 0;
 *   2. returns a negative MU_E* code with rq->err filled (mu_error_set)
 *      -> the framework answers application/problem+json from the table
 *      in common/error.h (status, type slug, title, detail = err.msg,
 *      field = err.field when not empty);
 *   3. returns rest_defer(rq, fn, done, arg): `fn` runs on a database
 *      worker thread with that worker's own connection; then, on the loop
 *      thread, `done` (when not NULL) runs, or the framework replies
 *      itself: rc < 0 -> problem from rq->err, else the rest_result().
 *
 * Memory: everything a handler allocates for the request should come from
 * rq->arena (freed after the reply). Strings the framework hands out
 * (params, query values, headers, principal fields) are borrowed from the
 * arena and live as long as the request.
 *
 * Threading: a request is touched by one thread at a time: the loop thread,
 * then (inside rest_defer) one worker, then the loop thread again. A worker
 * `fn` may read the whole rest_req, allocate from rq->arena, fill rq->err
 * and call rest_result()/rest_add_header(); it must not call anything else
 * of this header. If the client goes away while `fn` runs, the framework
 * drops the reply after `fn` (and `done`, with rq->gone set) returns.
 */
#ifndef MU_REST_H
#define MU_REST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "error.h"
#include "ops_principal.h"
#include "ops_router.h"

struct pg_conn; /* libpq's PGconn: only store/ looks inside */

/*
 * Roles, as a bitmask: a route lists the roles allowed to call it. The
 * masks (REST_PUBLIC, REST_ADMIN, REST_WRITERS, REST_READERS, REST_ANYONE,
 * REST_BIG_BODY: a route flag that selects the --max-batch-body limit) and
 * the router are api/ops/ops_router.h; the principal and its rules (scope,
 * job owner, env and node visibility) api/ops/ops_principal.h, shared with
 * gRPC.
 */
#define REST_ROLE_ADMIN OPS_ROLE_ADMIN
#define REST_ROLE_TENANT OPS_ROLE_TENANT
#define REST_ROLE_READER OPS_ROLE_READER
#define REST_ROLE_AGENT OPS_ROLE_AGENT

#define REST_MAX_PARAMS OPS_ROUTER_MAX_PARAMS


struct rest_req {
	struct mu_arena *arena;    /* per request; freed after the reply */
	const char *method;        /* "GET", ... (arena) */
	const char *path;          /* decoded path, without the query (arena) */
	const char *body;          /* NUL-terminated copy of the body (arena); "" when none */
	size_t body_len;
	struct ops_principal who;  /* filled by the auth middleware; zeroed on public routes */
	struct mu_error err;       /* filled by whoever fails */

	/* Reply, set by rest_result*(); sent by the framework. */
	int status;
	json_t *out;               /* owned by the request once set */

	bool gone;                 /* the client went away while a worker ran */
	void *priv;                /* framework-private */
};

/*
 * Path parameter `{name}` of the matched route, decoded (%xx), or NULL
 * when the route has no such parameter. Borrowed.
 */
const char *rest_param(const struct rest_req *rq, const char *name);

/*
 * Query string: the first value of `name` (decoded, "" for `?name`), or
 * NULL when absent. rest_query_all returns how many values `name` has and
 * points *vals at an arena array of them (repeated keys: ?state=A&state=B).
 */
const char *rest_query(const struct rest_req *rq, const char *name);
size_t rest_query_all(const struct rest_req *rq, const char *name, const char ***vals);
/* Rejects query keys not in `allowed` (NULL-terminated): MU_EUNKNOWNFIELD. */
int rest_query_check(struct rest_req *rq, const char *const *allowed);
/* A decimal integer in [lo, hi] (a query value, a path id): the whole
 * string, no leading '+' or space. A value past int64 counts as that
 * bound when lo is INT64_MIN ("any integer": the caller's range check then
 * says so), else it is refused. */
bool rest_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* A request header (name lowercase), or NULL. Borrowed. */
const char *rest_header(const struct rest_req *rq, const char *name);

/*
 * Parses the body as one JSON value with the strict rules of docs/api.md:
 * valid UTF-8 (else MU_EUTF8), no NUL bytes and no duplicate keys (else
 * MU_EJSON), nesting at most 32 deep (MU_EJSON), an integer literal beyond
 * 64 bits (MU_ERANGE), top level an object (else MU_ETYPE). Read the fields
 * with api/json_check.h so every field error names its field. *out is new
 * (caller decrefs); on error rq->err is filled and the code returned.
 */
int rest_body_json(struct rest_req *rq, json_t **out) __attribute__((warn_unused_result));

/* Sets the reply: `body` is stolen (may be NULL for no body). */
void rest_result(struct rest_req *rq, int status, json_t *body);
/* Sets a reply that is already text (any content type); `body` is copied. */
void rest_result_text(struct rest_req *rq, int status, const char *content_type,
		      const char *body, size_t len);
/* Adds a response header; both strings are copied. */
void rest_add_header(struct rest_req *rq, const char *name, const char *value);

/*
 * Runs `fn(db, rq, arg)` on a database worker (db is that worker's own
 * connection, reconnected as needed), then finishes on the loop thread:
 * `done(rq, arg, rc)` when not NULL (it sets the reply and may call
 * rest_defer again), else the framework replies from rc / rq->err /
 * rest_result. Always returns 0, so handlers `return rest_defer(...)`.
 * When the worker pool's queue is full the request answers 503.
 */
typedef int (*rest_db_fn)(struct pg_conn *db, struct rest_req *rq, void *arg);
typedef void (*rest_done_fn)(struct rest_req *rq, void *arg, int rc);
int rest_defer(struct rest_req *rq, rest_db_fn fn, rest_done_fn done, void *arg);

/*
 * Tenant scoping. rest_scope_path is the caller's subtree root path, or NULL
 * when the caller sees everything (admin, global reader). A tenant path is
 * visible when it equals the scope or starts with scope + "/". Store queries
 * filter with `($1::text IS NULL OR t.path = $1 OR starts_with(t.path, $1 || '/'))`
 * (never LIKE: names contain '_'). Anything outside the scope answers 404.
 */
const char *rest_scope_path(const struct rest_req *rq);
bool rest_tenant_visible(const struct rest_req *rq, const char *tenant_path);

/* Cached token lookups: api/ops/ops_auth.h (shared with gRPC); call
 * ops_auth_flush() after revoking or re-scoping tokens. */

/* Handler prototypes, generated from the route table. */
#define REST_ROUTE(method, pattern, handler, roles, summary) int handler(struct rest_req *rq);
#include "routes.def"
#undef REST_ROUTE

#endif
