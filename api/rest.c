/*
 * rest.c - the REST framework: h2o event loop, routing (api/ops/ops_router.h
 * over routes.def), auth middleware over the shared token cache
 * (api/ops/ops_auth.h), deferred database work through the store pool,
 * problem+json replies, metrics.
 *
 * Lifetime of a request context: created in on_req; freed when h2o disposes
 * the request (after the reply went out or the client went away), except
 * while a worker holds it: then the completion frees it.
 */
#include "rest_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <h2o.h>

#include "api_tls.h"
#include "jv.h"
#include "log.h"
#include "ops_auth.h"
#include "rest_cors.h"
#include "rest_ui.h"
#include "rest_gate.h"
#include "rest_metrics.h"
#include "store_auth.h"

static char *astrndup(struct mu_arena *a, const char *s, size_t n)
{
	char *d = mu_arena_alloc(a, n + 1);

	memcpy(d, s, n);
	return d;
}

/* ---- the route table ---------------------------------------------------- */

/* The handlers of routes.def, in its order: index i serves ops_routes[i]
 * (api/ops/ops_router.c builds that table from the same file). */
static int (*const handlers[])(struct rest_req *rq) = {
#define REST_ROUTE(m, pattern, handler, roles, summary) handler,
#include "routes.def"
#undef REST_ROUTE
};
#define NROUTES (sizeof(handlers) / sizeof(handlers[0]))

/* ---- metrics (loop thread only, except the pool gauge) ------------------ */

static const int known_status[] = { 200, 201, 204, 400, 401, 403, 404, 405, 409, 410, 413, 429, 500, 503 };
#define NSTATUS (sizeof(known_status) / sizeof(known_status[0]) + 1) /* + other */
static const double buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5 };
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

struct route_metrics {
	uint64_t by_status[NSTATUS];
	uint64_t hist[NBUCKETS + 1];
	double sum;
	uint64_t count;
};
static struct route_metrics metrics[NROUTES + 1]; /* last = unmatched */
static pthread_mutex_t metrics_mu = PTHREAD_MUTEX_INITIALIZER;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void metrics_record(int route, int status, double secs)
{
	struct route_metrics *m = &metrics[route < 0 ? (int)NROUTES : route];
	size_t si = NSTATUS - 1, b = 0;

	for (size_t i = 0; i < NSTATUS - 1; i++)
		if (known_status[i] == status)
			si = i;
	while (b < NBUCKETS && secs > buckets[b])
		b++;
	pthread_mutex_lock(&metrics_mu);
	m->by_status[si]++;
	m->hist[b]++;
	m->sum += secs;
	m->count++;
	pthread_mutex_unlock(&metrics_mu);
}

/* ---- server state -------------------------------------------------------- */

static struct rest_config cfg;
static h2o_globalconf_t h2o_config;
static h2o_context_t h2o_ctx;
static h2o_accept_ctx_t accept_ctx;
static h2o_multithread_queue_t *mq;
static h2o_multithread_receiver_t receiver;
static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t reload_requested; /* SIGHUP: re-read the TLS files */
static _Atomic uint64_t inflight_requests;

const struct rest_config *rest_server_config(void)
{
	return &cfg;
}

#define MAX_HEADERS 8
#define MAX_QUERY OPS_ROUTER_MAX_QUERY

struct ctx {
	struct rest_req rq;
	struct mu_arena arena;
	h2o_req_t *req;       /* NULL once h2o disposed it */
	bool in_flight;       /* a worker holds the context */
	bool replied;
	int route;            /* index into routes, -1 = unmatched */
	double t0;

	/* deferred work */
	struct store_work work;
	rest_db_fn fn;
	rest_done_fn done;
	void *arg;
	h2o_multithread_message_t msg;

	struct ops_route_match m; /* the route's path parameters */
	struct ops_query q;
	const char *hn[MAX_HEADERS], *hv[MAX_HEADERS];
	size_t nh;
	const char *ctype;    /* rest_result_text */
	const char *text;     /* == owned */
	size_t text_len;
	char *owned;          /* malloc'd reply body, freed with the context */
	char *body_copy;      /* NUL-terminated copy of the request body */
	char token_sha[65];
	const char *secret;

	/* streaming replies (rest_stream_*) */
	h2o_generator_t gen;  /* ours: H2O_STRUCT_FROM_MEMBER finds the ctx from it */
	bool streaming;
	char *chunk;          /* the bytes h2o holds until proceed */
	rest_more_fn more;
	void *more_arg;

	/* rest_on_free */
	void (*on_free)(void *arg);
	void *on_free_arg;
};

static struct ctx *ctx_of(const struct rest_req *rq)
{
	return rq->priv;
}

static void ctx_free(struct ctx *c)
{
	if (c->on_free)
		c->on_free(c->on_free_arg);
	if (c->rq.out)
		json_decref(c->rq.out);
	mu_free(c->owned);
	mu_free(c->body_copy);
	mu_free(c->chunk);
	mu_arena_release(&c->arena);
	mu_free(c);
	atomic_fetch_sub(&inflight_requests, 1);
}

static void on_dispose(void *p)
{
	struct ctx *c = *(struct ctx **)p;

	c->req = NULL;
	c->rq.gone = true;
	if (!c->in_flight)
		ctx_free(c);
}

/* ---- replies ------------------------------------------------------------- */

static const char *reason_of(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 413: return "Payload Too Large";
	case 429: return "Too Many Requests";
	case 503: return "Service Unavailable";
	default: return status >= 500 ? "Internal Server Error" : "OK";
	}
}

void rest_problem_render(const struct mu_error *err, int code, struct mu_buf *b)
{
	int status = mu_err_http_status(code);

	mu_buf_adds(b, "{\"type\":\"https://muster.dev/problems/");
	mu_buf_adds(b, mu_err_slug(code));
	mu_buf_adds(b, "\",\"title\":");
	mu_buf_add_json_strz(b, mu_strerror(code));
	mu_buf_addf(b, ",\"status\":%d,\"detail\":", status);
	mu_buf_add_json_strz(b, err && err->msg[0] ? err->msg : mu_strerror(code));
	if (err && err->field[0]) {
		mu_buf_adds(b, ",\"field\":");
		mu_buf_add_json_strz(b, err->field);
	}
	mu_buf_addc(b, '}');
}

static void add_header(h2o_req_t *req, const char *name, const char *value)
{
	h2o_iovec_t v = h2o_strdup(&req->pool, value, strlen(value));
	h2o_iovec_t n = h2o_strdup(&req->pool, name, strlen(name));

	h2o_add_header_by_str(&req->pool, &req->res.headers, n.base, n.len, 1, NULL, v.base, v.len);
}

/* Sends what the request holds: a problem (rc < 0) or the result. The
 * context may be freed by h2o right after: callers return at once. */
static void send_reply(struct ctx *c, int rc)
{
	h2o_req_t *req = c->req;
	struct mu_buf b = MU_BUF_INIT;
	const char *ctype = "application/json";
	h2o_iovec_t body = { NULL, 0 };
	int status;

	if (!req || c->replied)
		return;
	c->replied = true;
	if (rc < 0) {
		int code = c->rq.err.code < 0 ? c->rq.err.code : rc;

		status = mu_err_http_status(code);
		rest_problem_render(&c->rq.err, code, &b);
		ctype = "application/problem+json";
		if (code == MU_EUNAUTH)
			add_header(req, "www-authenticate", "Bearer realm=\"muster\"");
		for (size_t i = 0; i < c->nh; i++)
			if (!strcmp(c->hn[i], "retry-after"))
				add_header(req, c->hn[i], c->hv[i]);
		if (status >= 500)
			mu_warn("http %s %s status=%d %s", c->rq.method, c->rq.path, status,
				c->rq.err.msg);
	} else {
		status = c->rq.status ? c->rq.status : 200;
		if (c->text) {
			ctype = c->ctype;
			body = h2o_iovec_init(c->text, c->text_len);
		} else if (c->rq.out) {
			char *s = json_dumps(c->rq.out, JSON_COMPACT | JSON_ENCODE_ANY);

			mu_buf_adds(&b, s);
			free(s);
		}
		for (size_t i = 0; i < c->nh; i++)
			add_header(req, c->hn[i], c->hv[i]);
	}
	if (b.len)
		body = h2o_iovec_init(b.p, b.len);
	req->res.status = status;
	req->res.content_length = body.len;
	req->res.reason = reason_of(status);
	if (body.len || status != 204)
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, ctype,
			       strlen(ctype));
	rest_cors_response(req);
	metrics_record(c->route, status, now_s() - c->t0);
	if (c->text && rc >= 0) {
		/* no copy: c->text lives until h2o disposes the request */
		static h2o_generator_t generator = { NULL, NULL };

		h2o_start_response(req, &generator);
		h2o_send(req, &body, 1, H2O_SEND_STATE_FINAL);
	} else {
		h2o_send_inline(req, body.base ? body.base : "", body.len); /* copies the body */
	}
	mu_buf_release(&b);
}

void rest_result(struct rest_req *rq, int status, json_t *body)
{
	if (rq->out)
		json_decref(rq->out);
	rq->status = status;
	rq->out = body;
}

void rest_result_text(struct rest_req *rq, int status, const char *content_type, const char *body,
		      size_t len)
{
	struct ctx *c = ctx_of(rq);
	char *copy = mu_malloc(len + 1);

	memcpy(copy, body, len);
	copy[len] = '\0';
	mu_free(c->owned);
	rq->status = status;
	c->ctype = mu_arena_strdup(rq->arena, content_type);
	c->owned = copy;
	c->text = copy;
	c->text_len = len;
}

void rest_result_buf(struct rest_req *rq, int status, const char *content_type, struct mu_buf *b)
{
	struct ctx *c = ctx_of(rq);

	mu_free(c->owned);
	rq->status = status;
	c->ctype = mu_arena_strdup(rq->arena, content_type);
	c->text_len = b->len;
	c->owned = mu_buf_detach(b);
	c->text = c->owned;
}

void rest_on_free(struct rest_req *rq, void (*fn)(void *arg), void *arg)
{
	struct ctx *c = ctx_of(rq);

	c->on_free = fn;
	c->on_free_arg = arg;
}

void rest_add_header(struct rest_req *rq, const char *name, const char *value)
{
	struct ctx *c = ctx_of(rq);

	if (c->nh == MAX_HEADERS)
		return;
	c->hn[c->nh] = mu_arena_strdup(rq->arena, name);
	c->hv[c->nh] = mu_arena_strdup(rq->arena, value);
	c->nh++;
}

/* ---- request accessors --------------------------------------------------- */

const char *rest_param(const struct rest_req *rq, const char *name)
{
	const struct ctx *c = ctx_of(rq);

	for (size_t i = 0; i < c->m.np; i++)
		if (!strcmp(c->m.names[i], name))
			return c->m.vals[i];
	return NULL;
}

const char *rest_query(const struct rest_req *rq, const char *name)
{
	const struct ctx *c = ctx_of(rq);

	for (size_t i = 0; i < c->q.n; i++)
		if (!strcmp(c->q.keys[i], name))
			return c->q.vals[i];
	return NULL;
}

size_t rest_query_all(const struct rest_req *rq, const char *name, const char ***vals)
{
	const struct ctx *c = ctx_of(rq);
	size_t n = 0;

	*vals = mu_arena_alloc(rq->arena, sizeof(**vals) * (c->q.n + 1));
	for (size_t i = 0; i < c->q.n; i++)
		if (!strcmp(c->q.keys[i], name))
			(*vals)[n++] = c->q.vals[i];
	return n;
}

bool rest_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end = NULL;
	long long v;

	if (!s || !*s || !((*s >= '0' && *s <= '9') || *s == '-'))
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end || v < lo || v > hi || (errno == ERANGE && lo != INT64_MIN))
		return false;
	*out = v;
	return true;
}

int rest_query_check(struct rest_req *rq, const char *const *allowed)
{
	const struct ctx *c = ctx_of(rq);

	if (c->q.too_many)
		return mu_error_set(&rq->err, MU_EINVAL, "", "more than %d query parameters",
				    MAX_QUERY);
	for (size_t i = 0; i < c->q.n; i++) {
		const char *const *a = allowed;

		while (*a && strcmp(*a, c->q.keys[i]))
			a++;
		if (!*a) {
			mu_error_set(&rq->err, MU_EUNKNOWNFIELD, "", "unknown query parameter");
			snprintf(rq->err.field, sizeof(rq->err.field), "%s", c->q.keys[i]);
			return MU_EUNKNOWNFIELD;
		}
	}
	return 0;
}

const char *rest_header(const struct rest_req *rq, const char *name)
{
	const struct ctx *c = ctx_of(rq);
	h2o_req_t *req = c->req;
	size_t n = strlen(name);

	if (!req)
		return NULL;
	for (size_t i = 0; i < req->headers.size; i++) {
		const h2o_header_t *h = &req->headers.entries[i];

		if (h->name->len == n && !strncasecmp(h->name->base, name, n))
			return astrndup(rq->arena, h->value.base, h->value.len);
	}
	return NULL;
}

int rest_body_json(struct rest_req *rq, json_t **out)
{
	int ret = jv_parse(rq->body, rq->body_len, out, &rq->err);

	if (ret < 0)
		return ret;
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return mu_error_set(&rq->err, MU_ETYPE, "", "the body must be a JSON object");
	}
	return 0;
}

const char *rest_scope_path(const struct rest_req *rq)
{
	return ops_scope_path(&rq->who);
}

bool rest_tenant_visible(const struct rest_req *rq, const char *tenant_path)
{
	return ops_tenant_visible(&rq->who, tenant_path);
}

/* ---- deferred work --------------------------------------------------------- */

static int work_run(PGconn *db, struct store_work *w)
{
	struct ctx *c = w->arg;
	int rc = c->fn(db, &c->rq, c->arg);

	if (rc < 0 && !c->rq.err.code)
		mu_error_set(&c->rq.err, rc, "", "%s", mu_strerror(rc));
	return rc;
}

/* Worker thread: hand the context back to the loop. */
static void work_complete(struct store_work *w)
{
	struct ctx *c = w->arg;

	h2o_multithread_send_message(&receiver, &c->msg);
}

static void finish(struct ctx *c, int rc);

static void on_messages(h2o_multithread_receiver_t *r, h2o_linklist_t *messages)
{
	while (!h2o_linklist_is_empty(messages)) {
		h2o_multithread_message_t *m =
			H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link, messages->next);
		struct ctx *c = H2O_STRUCT_FROM_MEMBER(struct ctx, msg, m);
		int rc = c->work.rc;

		h2o_linklist_unlink(&m->link);
		c->in_flight = false;
		if (rc < 0 && !c->rq.err.code)
			c->rq.err = c->work.err;
		if (c->done) {
			rest_done_fn done = c->done;

			c->done = NULL;
			done(&c->rq, c->arg, rc);
			if (c->in_flight)
				continue; /* deferred again */
			/* done's reply wins; else its error; else the work's */
			if (c->rq.status || c->text)
				rc = 0;
			else if (c->rq.err.code < 0)
				rc = c->rq.err.code;
		}
		finish(c, rc);
	}
}

/* Loop thread: the request's work is over; reply or drop it. */
static void finish(struct ctx *c, int rc)
{
	if (c->rq.gone) {
		ctx_free(c);
		return;
	}
	send_reply(c, rc);
}

static int defer_common(struct rest_req *rq, int kind, size_t weight, rest_db_fn fn, void *arg,
			rest_done_fn done)
{
	struct ctx *c = ctx_of(rq);
	int ret;

	memset(&c->work, 0, sizeof(c->work));
	c->work.kind = kind;
	c->work.weight = weight;
	c->work.run = kind ? NULL : work_run;
	c->work.complete = work_complete;
	c->work.arg = c;
	c->fn = fn;
	c->done = done;
	c->arg = arg;
	c->in_flight = true;
	ret = store_pool_submit(cfg.pool, &c->work);
	if (ret < 0) {
		c->in_flight = false;
		c->done = NULL;
		return mu_error_set(&rq->err, MU_EUNAVAIL, "", "the database queue is full");
	}
	return 0;
}

/* rest_defer returns 0 even when the queue is full: it replies 503 itself
 * through the normal path, so callers can always `return rest_defer(...)`. */
int rest_defer(struct rest_req *rq, rest_db_fn fn, rest_done_fn done, void *arg)
{
	struct ctx *c = ctx_of(rq);
	int ret = defer_common(rq, 0, 1, fn, arg, done);

	if (ret < 0) {
		c->work.rc = ret;
		c->work.err = rq->err;
		c->in_flight = true;
		c->done = done;
		c->arg = arg;
		/* finish through the loop, never re-entering the caller */
		h2o_multithread_send_message(&receiver, &c->msg);
	}
	return 0;
}

int rest_defer_group(struct rest_req *rq, int kind, size_t weight, void *arg, rest_done_fn done)
{
	struct ctx *c = ctx_of(rq);
	int ret = defer_common(rq, kind, weight, NULL, arg, done);

	if (ret < 0) {
		c->work.rc = ret;
		c->work.err = rq->err;
		c->in_flight = true;
		c->done = done;
		c->arg = arg;
		h2o_multithread_send_message(&receiver, &c->msg);
	}
	return 0;
}

int rest_hold(struct rest_req *rq, rest_done_fn done, void *arg)
{
	struct ctx *c = ctx_of(rq);

	memset(&c->work, 0, sizeof(c->work));
	c->done = done;
	c->arg = arg;
	c->in_flight = true;
	return 0;
}

void rest_wake(struct rest_req *rq, int rc)
{
	struct ctx *c = ctx_of(rq);

	c->work.rc = rc;
	h2o_multithread_send_message(&receiver, &c->msg);
}

/* ---- streaming replies ------------------------------------------------------ */

static void stream_proceed(h2o_generator_t *g, h2o_req_t *req)
{
	struct ctx *c = H2O_STRUCT_FROM_MEMBER(struct ctx, gen, g);
	rest_more_fn more = c->more;

	(void)req;
	mu_free(c->chunk);
	c->chunk = NULL;
	c->more = NULL;
	if (more)
		more(&c->rq, c->more_arg);
}

static void stream_stop(h2o_generator_t *g, h2o_req_t *req)
{
	struct ctx *c = H2O_STRUCT_FROM_MEMBER(struct ctx, gen, g);

	(void)req;
	c->more = NULL; /* the client left: on_dispose follows */
}

void rest_stream_begin(struct rest_req *rq, int status, const char *content_type)
{
	struct ctx *c = ctx_of(rq);
	h2o_req_t *req = c->req;

	if (!req || c->replied)
		return;
	c->replied = true;
	c->streaming = true;
	req->res.status = status;
	req->res.reason = reason_of(status);
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
		       h2o_strdup(&req->pool, content_type, SIZE_MAX).base, strlen(content_type));
	for (size_t i = 0; i < c->nh; i++)
		add_header(req, c->hn[i], c->hv[i]);
	rest_cors_response(req);
	metrics_record(c->route, status, now_s() - c->t0);
	c->gen.proceed = stream_proceed;
	c->gen.stop = stream_stop;
	h2o_start_response(req, &c->gen);
}

void rest_stream_send(struct rest_req *rq, const void *p, size_t len, bool final, bool abort,
		      rest_more_fn more, void *arg)
{
	struct ctx *c = ctx_of(rq);
	h2o_iovec_t buf;

	if (!c->req || !c->streaming)
		return;
	mu_free(c->chunk);
	c->chunk = mu_malloc(len ? len : 1);
	if (len)
		memcpy(c->chunk, p, len);
	buf = h2o_iovec_init(c->chunk, len);
	c->more = final || abort ? NULL : more;
	c->more_arg = arg;
	h2o_send(c->req, &buf, len ? 1 : 0,
		 abort ? H2O_SEND_STATE_ERROR : final ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

void rest_stream_sndbuf(struct rest_req *rq, int bytes)
{
	struct ctx *c = ctx_of(rq);
	h2o_socket_t *sock = NULL;
	int fd;

	if (c->req && c->req->conn->callbacks->get_socket)
		sock = c->req->conn->callbacks->get_socket(c->req->conn);
	fd = sock ? h2o_socket_get_fd(sock) : -1;
	if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)))
		mu_debug("http SO_SNDBUF: %s", strerror(errno));
}

struct rest_req *rest_work_req(struct store_work *w)
{
	return &((struct ctx *)w->arg)->rq;
}

void *rest_work_arg(struct store_work *w)
{
	return ((struct ctx *)w->arg)->arg;
}

/* ---- auth ------------------------------------------------------------------ */

static int auth_lookup(PGconn *db, struct rest_req *rq, void *arg)
{
	struct ctx *c = ctx_of(rq);
	bool asked_db;
	int ret;

	(void)arg;
	ret = ops_auth_check(db, rq->arena, c->secret, c->token_sha, &rq->who, &rq->err, &asked_db);
	if (asked_db)
		rest__token_lookup_counted();
	return ret;
}

static void dispatch(struct ctx *c);

/* A later request on a kept-alive connection failed auth: it counts
 * against the address, and the connection closes after the answer (the
 * gate checks the next connection's first request before its body). */
static void auth_failed(struct ctx *c)
{
	struct sockaddr_storage ss;
	h2o_req_t *req = c->req;

	if (!req)
		return;
	req->http1_is_persistent = 0;
	if (req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss))
		rest_gate_auth_failed((struct sockaddr *)&ss);
}

static void auth_done(struct rest_req *rq, void *arg, int rc)
{
	struct ctx *c = ctx_of(rq);

	(void)arg;
	if (rc == MU_EUNAUTH)
		auth_failed(c);
	if (rc < 0 || rq->gone)
		return; /* the framework replies with rq->err */
	dispatch(c);
}

/* The caller's address has spent its auth-failure budget: 429 set up. */
static bool auth_limited(struct ctx *c)
{
	struct sockaddr_storage ss;
	char v[16];
	int retry;

	if (!c->req ||
	    !c->req->conn->callbacks->get_peername(c->req->conn, (struct sockaddr *)&ss) ||
	    !rest_gate_auth_limited((struct sockaddr *)&ss, &retry))
		return false;
	snprintf(v, sizeof(v), "%d", retry);
	rest_add_header(&c->rq, "retry-after", v);
	c->req->http1_is_persistent = 0;
	mu_error_set(&c->rq.err, MU_EQUOTA, "", "too many failed logins from this address");
	return true;
}

static int auth_refuse(struct ctx *c, const char *why)
{
	if (auth_limited(c))
		return MU_EQUOTA;
	auth_failed(c);
	return mu_error_set(&c->rq.err, MU_EUNAUTH, "", "%s", why);
}

/* 0: principal known (cache hit); 1: lookup deferred; <0: reply with error. */
static int authenticate(struct ctx *c)
{
	struct rest_req *rq = &c->rq;
	const char *h = rest_header(rq, "authorization");
	int known = 0;

	if (!h || strncasecmp(h, "Bearer ", 7))
		return auth_refuse(c, "missing bearer token");
	h += 7;
	while (*h == ' ')
		h++;
	if (!*h || strlen(h) > 256)
		return auth_refuse(c, "invalid token");
	c->secret = h;
	store_auth_hash(h, c->token_sha);
	known = ops_auth_cached(c->token_sha, rq->arena, &rq->who);
	if (known < 0)
		return auth_refuse(c, "invalid token");
	if (known > 0)
		return 0;
	if (!ops_auth_known_good(c->token_sha) && auth_limited(c))
		return MU_EQUOTA;
	rest_defer(rq, auth_lookup, auth_done, NULL);
	return 1;
}

/* ---- routing ----------------------------------------------------------------- */

static void run_handler(struct ctx *c)
{
	int rc = handlers[c->route](&c->rq);

	if (c->in_flight)
		return; /* deferred: the completion replies */
	finish(c, rc);
}

static void dispatch(struct ctx *c)
{
	const struct ops_route_def *r = &ops_routes[c->route];

	if (!(r->roles & c->rq.who.role & OPS_ROLE_MASK)) {
		mu_error_set(&c->rq.err, MU_EFORBIDDEN, "", "role not allowed to %s %s", r->method,
			     r->pattern);
		finish(c, MU_EFORBIDDEN);
		return;
	}
	run_handler(c);
}

/* OPTIONS on a route's path: its methods, and a CORS preflight answer
 * when the origin is allowed (rest_cors.h). No auth: preflights carry none. */
static void preflight(struct ctx *c, size_t plen)
{
	h2o_req_t *req = c->req;
	char methods[128];

	ops_router_methods(&c->arena, req->path.base, plen, methods, sizeof(methods));
	c->replied = true;
	add_header(req, "allow", methods);
	rest_cors_preflight(req, methods);
	req->res.status = 204;
	req->res.reason = "No Content";
	req->res.content_length = 0;
	metrics_record(-1, 204, now_s() - c->t0);
	h2o_send_inline(req, "", 0);
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
	struct ctx *c = mu_calloc(1, sizeof(*c));
	struct ctx **slot;
	size_t plen = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
	size_t limit;
	int rc = 0;

	atomic_fetch_add(&inflight_requests, 1);
	c->t0 = now_s();
	c->req = req;
	c->route = -1;
	mu_arena_init(&c->arena, 8192);
	c->rq.arena = &c->arena;
	c->rq.priv = c;
	c->rq.method = astrndup(&c->arena, req->method.base, req->method.len);
	c->rq.path = astrndup(&c->arena, req->path.base, plen);
	c->rq.body = "";
	slot = h2o_mem_alloc_shared(&req->pool, sizeof(*slot), on_dispose);
	*slot = c;

	if (req->query_at != SIZE_MAX &&
	    !ops_router_query(&c->arena, req->path.base + req->query_at + 1,
			      req->path.len - req->query_at - 1, &c->q)) {
		rc = mu_error_set(&c->rq.err, MU_EUTF8, "", "the query string is not valid UTF-8");
		goto out;
	}
	if (rest_ui_path(c->rq.path)) {
		rc = rest_ui_serve(&c->rq);
		goto out;
	}
	rc = ops_router_find(&c->arena, req->method.base, req->method.len, req->path.base, plen,
			     &c->m);
	if (rc == MU_EMETHOD && req->method.len == 7 && !memcmp(req->method.base, "OPTIONS", 7)) {
		preflight(c, plen);
		return 0;
	}
	if (rc < 0) {
		rc = rc == MU_EMETHOD ? mu_error_set(&c->rq.err, MU_EMETHOD, "", "method not allowed")
				      : mu_error_set(&c->rq.err, MU_ENOTFOUND, "", "no such resource");
		goto out;
	}
	c->route = rc;
	rc = 0;
	limit = ops_routes[c->route].roles & REST_BIG_BODY ? cfg.max_batch_body : cfg.max_body;
	if (req->entity.len > limit) {
		rc = mu_error_set(&c->rq.err, MU_ETOOBIG, "", "the body is over %zu bytes", limit);
		goto out;
	}
	if (req->entity.base) {
		char *b = mu_malloc(req->entity.len + 1);

		memcpy(b, req->entity.base, req->entity.len);
		b[req->entity.len] = '\0';
		c->body_copy = b;
		c->rq.body = b;
		c->rq.body_len = req->entity.len;
	}
	if (ops_routes[c->route].roles & OPS_ROLE_MASK) {
		rc = authenticate(c);
		if (rc == 1)
			return 0; /* auth_done dispatches */
		if (rc < 0)
			goto out;
		dispatch(c);
		return 0;
	}
	run_handler(c);
	return 0;
out:
	finish(c, rc);
	return 0;
}

/* ---- metrics rendering --------------------------------------------------- */

void rest_metrics_render(struct mu_buf *b)
{
	static struct route_metrics snap[NROUTES + 1];

	pthread_mutex_lock(&metrics_mu);
	memcpy(snap, metrics, sizeof(snap));
	pthread_mutex_unlock(&metrics_mu);

	mu_buf_adds(b, "# HELP muster_http_requests_total HTTP requests answered, by route and status.\n"
		       "# TYPE muster_http_requests_total counter\n");
	for (size_t r = 0; r <= NROUTES; r++) {
		char label[256];

		if (r < NROUTES)
			snprintf(label, sizeof(label), "%s %s", ops_routes[r].method, ops_routes[r].pattern);
		else
			snprintf(label, sizeof(label), "unmatched");
		for (size_t s = 0; s < NSTATUS; s++) {
			if (!snap[r].by_status[s])
				continue;
			if (s < NSTATUS - 1)
				mu_buf_addf(b, "muster_http_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
					    label, known_status[s],
					    (unsigned long long)snap[r].by_status[s]);
			else
				mu_buf_addf(b, "muster_http_requests_total{route=\"%s\",status=\"other\"} %llu\n",
					    label, (unsigned long long)snap[r].by_status[s]);
		}
	}
	mu_buf_adds(b, "# HELP muster_http_request_duration_seconds Time from request to reply, by route.\n"
		       "# TYPE muster_http_request_duration_seconds histogram\n");
	for (size_t r = 0; r <= NROUTES; r++) {
		char label[256];
		uint64_t cum = 0;

		if (!snap[r].count)
			continue;
		if (r < NROUTES)
			snprintf(label, sizeof(label), "%s %s", ops_routes[r].method, ops_routes[r].pattern);
		else
			snprintf(label, sizeof(label), "unmatched");
		for (size_t k = 0; k < NBUCKETS; k++) {
			cum += snap[r].hist[k];
			mu_buf_addf(b, "muster_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
				    label, buckets[k], (unsigned long long)cum);
		}
		mu_buf_addf(b, "muster_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n",
			    label, (unsigned long long)snap[r].count);
		mu_buf_addf(b, "muster_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n", label,
			    snap[r].sum);
		mu_buf_addf(b, "muster_http_request_duration_seconds_count{route=\"%s\"} %llu\n", label,
			    (unsigned long long)snap[r].count);
	}
	mu_buf_adds(b, "# HELP muster_db_pool_queue_length Database work items waiting for a worker.\n"
		       "# TYPE muster_db_pool_queue_length gauge\n");
	mu_buf_addf(b, "muster_db_pool_queue_length %zu\n", cfg.pool ? store_pool_queued(cfg.pool) : 0);
	mu_buf_adds(b, "# HELP muster_db_pool_workers Database worker threads (one connection each).\n"
		       "# TYPE muster_db_pool_workers gauge\n");
	mu_buf_addf(b, "muster_db_pool_workers %d\n", cfg.pool ? store_pool_workers(cfg.pool) : 0);
	mu_buf_adds(b, "# HELP muster_http_requests_in_flight Requests received and not yet answered.\n"
		       "# TYPE muster_http_requests_in_flight gauge\n");
	mu_buf_addf(b, "muster_http_requests_in_flight %llu\n",
		    (unsigned long long)atomic_load(&inflight_requests));
	rest_gate_metrics_render(b);
	rest_metrics_api_render(b);
}

/* ---- listening ------------------------------------------------------------- */

static void on_accept(h2o_socket_t *listener, const char *err)
{
	h2o_socket_t *sock;

	if (err)
		return;
	while ((sock = h2o_evloop_socket_accept(listener)))
		api_tls_accept(&accept_ctx, sock); /* the gate, after TLS when it is on */
}

static int listen_on(const char *addr, struct mu_error *err)
{
	char host[256];
	const char *colon = strrchr(addr, ':');
	struct addrinfo hints = { 0 }, *ai = NULL;
	int fd = -1, one = 1, rc;

	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return mu_error_set(err, MU_EINVAL, "http-addr", "expected host:port, got %s", addr);
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai);
	if (rc)
		return mu_error_set(err, MU_EINVAL, "http-addr", "%s: %s", addr, gai_strerror(rc));
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 4096) ||
	    fcntl(fd, F_SETFL, O_NONBLOCK)) {
		mu_error_set(err, MU_EIO, "http-addr", "cannot listen on %s: %s", addr,
			     strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = MU_EIO;
	}
	freeaddrinfo(ai);
	return fd;
}

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_requested = 1;
	else
		stop_requested = 1;
}

/* Loop thread: new connections take the new context; open ones keep theirs. */
static void reload_tls(void)
{
	struct mu_error err = { 0 };

	if (!api_tls_enabled()) {
		mu_info("SIGHUP: no TLS configured, nothing to reload");
		return;
	}
	if (api_tls_reload(&err) < 0) {
		mu_err("tls reload failed, keeping the current certificate: %s", err.msg);
		return;
	}
	accept_ctx.ssl_ctx = api_tls_rest_ctx();
	mu_info("tls reloaded");
}

int rest_server_run(const struct rest_config *config)
{
	struct mu_error err = { 0 };
	h2o_hostconf_t *host;
	h2o_pathconf_t *path;
	h2o_handler_t *handler;
	h2o_socket_t *lsock;
	struct sigaction sa = { 0 };
	int fd;

	cfg = *config;
	signal(SIGPIPE, SIG_IGN);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	h2o_config_init(&h2o_config);
	h2o_config.max_request_entity_size = cfg.max_batch_body > cfg.max_body
						     ? cfg.max_batch_body : cfg.max_body;
	/* HTTP/2 (h2c) would bypass the gate's checks before the body. */
	h2o_config.http1.upgrade_to_http2 = 0;
	host = h2o_config_register_host(&h2o_config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
	path = h2o_config_register_path(host, "/", 0);
	handler = h2o_create_handler(path, sizeof(*handler));
	handler->on_req = on_req;
	h2o_context_init(&h2o_ctx, h2o_evloop_create(), &h2o_config);
	accept_ctx.ctx = &h2o_ctx;
	accept_ctx.hosts = h2o_config.hosts;
	accept_ctx.ssl_ctx = api_tls_rest_ctx(); /* NULL: plain HTTP */
	mq = h2o_multithread_create_queue(h2o_ctx.loop);
	h2o_multithread_register_receiver(mq, &receiver, on_messages);
	rest_gate_init(h2o_ctx.loop, &accept_ctx, mq, &cfg);

	fd = listen_on(cfg.http_addr, &err);
	if (fd < 0) {
		mu_err("http cannot listen: %s", err.msg);
		return fd;
	}
	lsock = h2o_evloop_socket_create(h2o_ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
	h2o_socket_read_start(lsock, on_accept);
	mu_info("http listening on %s (%zu routes%s)", cfg.http_addr, NROUTES,
		accept_ctx.ssl_ctx ? ", TLS" : "");

	while (!stop_requested) {
		h2o_evloop_run(h2o_ctx.loop, 200);
		if (reload_requested) {
			reload_requested = 0;
			reload_tls();
		}
	}

	mu_info("http shutting down");
	h2o_socket_read_stop(lsock);
	h2o_socket_close(lsock);
	return 0;
}
