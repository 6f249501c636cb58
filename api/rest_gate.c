/*
 * rest_gate.c - the connection gate in front of h2o: connection caps,
 * first-request routing, per-route body limits and authentication before
 * any body byte is read (see rest_gate.h for why and what).
 *
 * A gate_conn lives from accept until its socket is disposed (h2o's
 * on_close hook), whoever closes it: the gate itself or h2o's HTTP/1 server
 * after the hand-over. While a token lookup runs on a pool worker the
 * socket is neither read nor closed, so the record cannot go away under it.
 */
#include "rest_gate.h"
#include "rest_cors.h"
#include "rest_ui.h"

#include <math.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include "log.h"
#include "ops_auth.h"
#include "ops_router.h"
#include "pool.h"
#include "store_auth.h"

#define HEAD_MAX 8192         /* h2o's own H2O_MAX_REQLEN */
#define HEAD_TIMEOUT_MS 10000 /* slow headers: closed */
#define LINGER_MS 2000        /* drain after a refusal, then close */
#define NADDR 4096            /* client address table (open addressing) */
#define PROBES 32

/* ---- per-address state ----------------------------------------------------- */

struct addr_slot {
	unsigned char key[16];
	bool used;
	unsigned conns;   /* open connections from this address */
	double tokens;    /* auth-failure budget left */
	double stamp;     /* when tokens was last refilled (monotonic s) */
};

static struct addr_slot addrs[NADDR];
static unsigned open_conns;
static unsigned long long refused[3];
static unsigned long long auth_failures;
static _Atomic unsigned long long token_lookups; /* database lookups (workers) */

void rest__token_lookup_counted(void)
{
	atomic_fetch_add(&token_lookups, 1);
}

static const struct rest_config *cfg;
static h2o_loop_t *loop;
static h2o_accept_ctx_t *accept_ctx;
static h2o_multithread_receiver_t receiver;
static h2o_timeout_t head_timeout, linger_timeout;

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* IPv4 as itself; IPv6 by its /64 (one subscriber's whole prefix). */
static bool addr_key(const struct sockaddr *sa, unsigned char key[16])
{
	memset(key, 0, 16);
	if (sa->sa_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		/* an IPv4 client of a [::] listener is that IPv4 address */
		memcpy(key, a6, IN6_IS_ADDR_V4MAPPED(a6) ? 16 : 8);
		return true;
	}
	return false;
}

static void refill(struct addr_slot *s, double now)
{
	double burst = (double)cfg->auth_fail_burst;

	s->tokens += (now - s->stamp) * (double)cfg->auth_fail_rate;
	if (s->tokens > burst)
		s->tokens = burst;
	s->stamp = now;
}

/* The slot of an address (found or claimed), NULL when the table is full
 * around it: then only the global limits apply to that client. */
static struct addr_slot *addr_slot(const struct sockaddr *sa, bool claim)
{
	unsigned char key[16];
	uint32_t h = 2166136261u;
	double now = mono_s();
	struct addr_slot *free_slot = NULL;

	if (!sa || !addr_key(sa, key))
		return NULL;
	for (int i = 0; i < 16; i++)
		h = (h ^ key[i]) * 16777619u;
	for (int p = 0; p < PROBES; p++) {
		struct addr_slot *s = &addrs[(h + (uint32_t)p) % NADDR];

		if (s->used && !memcmp(s->key, key, 16)) {
			refill(s, now);
			return s;
		}
		if (!free_slot) {
			if (!s->used) {
				free_slot = s;
			} else if (!s->conns) {
				/* idle and its budget full again: nothing to remember */
				refill(s, now);
				if (s->tokens >= (double)cfg->auth_fail_burst)
					free_slot = s;
			}
		}
	}
	if (!claim || !free_slot)
		return NULL;
	memcpy(free_slot->key, key, 16);
	free_slot->used = true;
	free_slot->conns = 0;
	free_slot->tokens = (double)cfg->auth_fail_burst;
	free_slot->stamp = now;
	return free_slot;
}

bool rest_gate_auth_limited(const struct sockaddr *sa, int *retry_after_s)
{
	struct addr_slot *s = addr_slot(sa, false);

	if (!s || s->tokens >= 1.0)
		return false;
	*retry_after_s = (int)ceil((1.0 - s->tokens) / (double)cfg->auth_fail_rate);
	if (*retry_after_s < 1)
		*retry_after_s = 1;
	return true;
}

void rest_gate_auth_failed(const struct sockaddr *sa)
{
	struct addr_slot *s = addr_slot(sa, true);

	auth_failures++;
	if (s)
		s->tokens -= 1.0;
}

void rest_gate_metrics_render(struct mu_buf *b)
{
	static const char *const why[] = { "connection_cap", "unauthenticated", "rate_limited" };

	mu_buf_adds(b, "# HELP muster_http_connections_open HTTP connections open now.\n"
		       "# TYPE muster_http_connections_open gauge\n");
	mu_buf_addf(b, "muster_http_connections_open %u\n", open_conns);
	mu_buf_adds(b, "# HELP muster_http_gate_refusals_total Requests refused before their body was read, by reason.\n"
		       "# TYPE muster_http_gate_refusals_total counter\n");
	for (int i = 0; i < 3; i++)
		mu_buf_addf(b, "muster_http_gate_refusals_total{reason=\"%s\"} %llu\n", why[i],
			    refused[i]);
	mu_buf_adds(b, "# HELP muster_api_auth_failures_total REST requests with a missing or invalid token.\n"
		       "# TYPE muster_api_auth_failures_total counter\n");
	mu_buf_addf(b, "muster_api_auth_failures_total %llu\n", auth_failures);
	mu_buf_adds(b, "# HELP muster_api_token_lookups_total Token lookups that went to the database.\n"
		       "# TYPE muster_api_token_lookups_total counter\n");
	mu_buf_addf(b, "muster_api_token_lookups_total %llu\n",
		    (unsigned long long)atomic_load(&token_lookups));
}

/* ---- connections ---------------------------------------------------------------- */

struct gate_conn {
	h2o_socket_t *sock;
	struct addr_slot *slot;  /* counted against it; NULL = not counted there */
	bool counted;            /* counted in open_conns */
	bool in_lookup;
	struct sockaddr_storage peer;
	struct timeval connected_at;
	h2o_timeout_entry_t timer; /* headers, then linger */
	char *reply;             /* a refusal being written */
	size_t reply_len;
	char origin[256];        /* the request's Origin, for CORS on a refusal */
	size_t origin_len;       /* 0 = none (or over 255 bytes: never on the list) */

	/* the token lookup */
	struct store_work work;
	h2o_multithread_message_t msg;
	struct mu_arena arena;
	bool arena_live;
	char secret[257];
	char sha[65];
	struct ops_principal p;
};

static void gate_closed(void *data)
{
	struct gate_conn *g = data;

	if (h2o_timeout_is_linked(&g->timer))
		h2o_timeout_unlink(&g->timer);
	if (g->counted)
		open_conns--;
	if (g->slot && g->slot->conns)
		g->slot->conns--;
	if (g->arena_live)
		mu_arena_release(&g->arena);
	mu_free(g->reply);
	mu_free(g);
}

static void on_timer(h2o_timeout_entry_t *e)
{
	struct gate_conn *g = H2O_STRUCT_FROM_MEMBER(struct gate_conn, timer, e);

	h2o_socket_close(g->sock);
}

static void arm(struct gate_conn *g, h2o_timeout_t *t)
{
	if (h2o_timeout_is_linked(&g->timer))
		h2o_timeout_unlink(&g->timer);
	g->timer.cb = on_timer;
	h2o_timeout_link(loop, t, &g->timer);
}

static void drain_on_read(h2o_socket_t *sock, const char *err)
{
	if (err) {
		h2o_socket_close(sock);
		return;
	}
	h2o_buffer_consume(&sock->input, sock->input->size);
}

static void on_refusal_written(h2o_socket_t *sock, const char *err)
{
	struct gate_conn *g = sock->data;

	if (err) {
		h2o_socket_close(sock);
		return;
	}
	/* Read and drop what the client still sends for a moment, so it reads
	 * our answer rather than a reset; then close. */
	shutdown(h2o_socket_get_fd(sock), SHUT_WR);
	h2o_buffer_consume(&sock->input, sock->input->size);
	arm(g, &linger_timeout);
	h2o_socket_read_start(sock, drain_on_read);
}

static const char *reason(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 413: return "Payload Too Large";
	case 429: return "Too Many Requests";
	default: return "Service Unavailable";
	}
}

/* Answers with a problem document and closes (after the drain). */
static void refuse(struct gate_conn *g, int code, int retry_after_s, int why, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void refuse(struct gate_conn *g, int code, int retry_after_s, int why, const char *fmt, ...)
{
	struct mu_error err = { 0 };
	struct mu_buf body = MU_BUF_INIT, out = MU_BUF_INIT;
	int status = mu_err_http_status(code);
	h2o_iovec_t iov;
	va_list ap;

	err.code = code;
	va_start(ap, fmt);
	vsnprintf(err.msg, sizeof(err.msg), fmt, ap);
	va_end(ap);
	if (why >= 0)
		refused[why]++;
	rest_problem_render(&err, code, &body);
	mu_buf_addf(&out, "HTTP/1.1 %d %s\r\nContent-Type: application/problem+json\r\n"
			  "Content-Length: %zu\r\nConnection: close\r\n", status, reason(status),
		    body.len);
	if (code == MU_EUNAUTH)
		mu_buf_adds(&out, "WWW-Authenticate: Bearer realm=\"muster\"\r\n");
	if (retry_after_s > 0)
		mu_buf_addf(&out, "Retry-After: %d\r\n", retry_after_s);
	rest_cors_raw_headers(g->origin_len ? g->origin : NULL, g->origin_len, &out);
	mu_buf_adds(&out, "\r\n");
	mu_buf_add(&out, body.p, body.len);
	mu_buf_release(&body);
	/* a small window while we drain: the client's bytes never pile up here */
	setsockopt(h2o_socket_get_fd(g->sock), SOL_SOCKET, SO_RCVBUF, &(int){ 16384 }, sizeof(int));
	h2o_socket_read_stop(g->sock);
	if (h2o_timeout_is_linked(&g->timer))
		h2o_timeout_unlink(&g->timer);
	g->reply_len = out.len;
	g->reply = mu_buf_detach(&out);
	iov = h2o_iovec_init(g->reply, g->reply_len);
	h2o_socket_write(g->sock, &iov, 1, on_refusal_written);
}

/* The request passed: h2o's HTTP/1 server takes the socket, with the
 * header bytes (and whatever body bytes came along) still in its input. */
static void hand_over(struct gate_conn *g)
{
	h2o_socket_read_stop(g->sock);
	if (h2o_timeout_is_linked(&g->timer))
		h2o_timeout_unlink(&g->timer);
	h2o_http1_accept(accept_ctx, g->sock, g->connected_at);
}

/* ---- token lookups ------------------------------------------------------------- */

static int lookup_run(PGconn *db, struct store_work *w)
{
	struct gate_conn *g = w->arg;

	bool asked_db;
	int ret = ops_auth_check(db, &g->arena, g->secret, g->sha, &g->p, &w->err, &asked_db);

	if (asked_db)
		rest__token_lookup_counted();
	return ret;
}

static void lookup_complete(struct store_work *w)
{
	struct gate_conn *g = w->arg;

	h2o_multithread_send_message(&receiver, &g->msg);
}

static void on_lookups(h2o_multithread_receiver_t *r, h2o_linklist_t *messages)
{
	(void)r;
	while (!h2o_linklist_is_empty(messages)) {
		h2o_multithread_message_t *m =
			H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link, messages->next);
		struct gate_conn *g = H2O_STRUCT_FROM_MEMBER(struct gate_conn, msg, m);

		h2o_linklist_unlink(&m->link);
		g->in_lookup = false;
		if (g->work.rc == 0) {
			hand_over(g);
		} else if (g->work.rc == MU_EUNAUTH) {
			rest_gate_auth_failed((struct sockaddr *)&g->peer);
			refuse(g, MU_EUNAUTH, 0, 1, "invalid token");
		} else {
			mu_warn("http token lookup failed: %s", g->work.err.msg);
			refuse(g, MU_EUNAVAIL, 1, -1, "the token cannot be checked now");
		}
	}
}

/* ---- the first request's headers ------------------------------------------------ */

struct head {
	const char *method, *target, *auth, *clen, *te, *origin;
	size_t mlen, tlen, alen, cllen, telen, olen;
};

static bool name_is(const char *p, size_t n, const char *want)
{
	return strlen(want) == n && !strncasecmp(p, want, n);
}

static void trim(const char **v, size_t *n)
{
	while (*n && (**v == ' ' || **v == '\t')) {
		(*v)++;
		(*n)--;
	}
	while (*n && ((*v)[*n - 1] == ' ' || (*v)[*n - 1] == '\t' || (*v)[*n - 1] == '\r'))
		(*n)--;
}

/* Splits the header block [p, end): false when it is not HTTP/1. */
static bool parse_head(const char *p, const char *end, struct head *h)
{
	const char *eol, *sp1, *sp2;

	memset(h, 0, sizeof(*h));
	while (p < end && (*p == '\r' || *p == '\n'))
		p++;
	eol = memchr(p, '\n', (size_t)(end - p));
	if (!eol)
		return false;
	sp1 = memchr(p, ' ', (size_t)(eol - p));
	if (!sp1)
		return false;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (!sp2 || eol - sp2 < 9 || memcmp(sp2 + 1, "HTTP/1.", 7))
		return false;
	h->method = p;
	h->mlen = (size_t)(sp1 - p);
	h->target = sp1 + 1;
	h->tlen = (size_t)(sp2 - sp1 - 1);
	for (p = eol + 1; p < end; p = eol + 1) {
		const char *colon, *v;
		size_t vn;

		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon)
			continue;
		v = colon + 1;
		vn = (size_t)(eol - v);
		trim(&v, &vn);
		if (name_is(p, (size_t)(colon - p), "authorization")) {
			h->auth = v;
			h->alen = vn;
		} else if (name_is(p, (size_t)(colon - p), "content-length")) {
			if (h->clen && (h->cllen != vn || memcmp(h->clen, v, vn)))
				return false; /* two different lengths: smuggling */
			h->clen = v;
			h->cllen = vn;
		} else if (name_is(p, (size_t)(colon - p), "transfer-encoding")) {
			h->te = v;
			h->telen = vn;
		} else if (name_is(p, (size_t)(colon - p), "origin")) {
			h->origin = v;
			h->olen = vn;
		}
	}
	return true;
}

/* Where the header block ends (just past the empty line), or NULL. */
static const char *head_end(const char *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		if (p[i] != '\n')
			continue;
		if (p[i + 1] == '\n')
			return p + i + 2;
		if (p[i + 1] == '\r' && i + 2 < n && p[i + 2] == '\n')
			return p + i + 3;
	}
	return NULL;
}

/* 401, or 429 once the address has spent its failure budget. */
static void auth_refuse(struct gate_conn *g, const char *why)
{
	int retry;

	if (rest_gate_auth_limited((struct sockaddr *)&g->peer, &retry)) {
		refuse(g, MU_EQUOTA, retry, 2, "too many failed logins from this address");
		return;
	}
	rest_gate_auth_failed((struct sockaddr *)&g->peer);
	refuse(g, MU_EUNAUTH, 0, 1, "%s", why);
}

static bool public_bodyless(const struct head *h, size_t plen)
{
	char head[5]; /* rest_ui_path() decides on the first 4 bytes */
	size_t n = plen < 4 ? plen : 4;

	if (name_is(h->method, h->mlen, "OPTIONS"))
		return true;
	memcpy(head, h->target, n);
	head[n] = '\0';
	return rest_ui_path(head);
}

static void check_request(struct gate_conn *g)
{
	h2o_buffer_t *in = g->sock->input;
	const char *end = head_end(in->bytes, in->size);
	struct head h;
	size_t plen, limit;
	int roles, route, retry;
	unsigned long long clen = 0;
	const char *tok;
	size_t toklen;

	if (!end) {
		if (in->size >= HEAD_MAX)
			refuse(g, MU_EINVAL, 0, -1, "the request headers are over %d bytes", HEAD_MAX);
		return; /* wait for more */
	}
	if (!parse_head(in->bytes, end, &h)) {
		refuse(g, MU_EINVAL, 0, -1, "not an HTTP/1.x request");
		return;
	}
	if (h.origin && h.olen < sizeof(g->origin)) {
		memcpy(g->origin, h.origin, h.olen);
		g->origin_len = h.olen;
	}
	plen = h.tlen;
	for (size_t i = 0; i < h.tlen; i++)
		if (h.target[i] == '?') {
			plen = i;
			break;
		}
	if (public_bodyless(&h, plen)) {
		/* OPTIONS (CORS preflight) and the portal's files: no token and
		 * no body; on_req answers them, 404 and 405 included */
		if (h.te) {
			refuse(g, MU_ETOOBIG, 0, -1, "this request takes no body");
			return;
		}
		roles = 0;
		limit = 0;
	} else {
		struct ops_route_match rm;
		struct mu_arena ra;

		mu_arena_init(&ra, 1024);
		route = ops_router_find(&ra, h.method, h.mlen, h.target, plen, &rm);
		mu_arena_release(&ra);
		roles = route >= 0 ? ops_routes[route].roles : 0;
		if (route == MU_EMETHOD) {
			refuse(g, MU_EMETHOD, 0, -1, "method not allowed");
			return;
		}
		if (route < 0) {
			refuse(g, MU_ENOTFOUND, 0, -1, "no such resource");
			return;
		}
		limit = roles & REST_BIG_BODY ? cfg->max_batch_body : cfg->max_body;
	}
	if (h.clen && !h.te) {
		char *e = NULL;
		char num[24];

		if (h.cllen == 0 || h.cllen >= sizeof(num)) {
			refuse(g, MU_EINVAL, 0, -1, "invalid Content-Length");
			return;
		}
		memcpy(num, h.clen, h.cllen);
		num[h.cllen] = '\0';
		clen = strtoull(num, &e, 10);
		if (*e || num[0] < '0' || num[0] > '9') {
			refuse(g, MU_EINVAL, 0, -1, "invalid Content-Length");
			return;
		}
		if (clen > limit) {
			refuse(g, MU_ETOOBIG, 0, -1, "the body is over %zu bytes", limit);
			return;
		}
	}
	if (!(roles & 0xff)) {
		hand_over(g);
		return;
	}
	if (!h.auth || h.alen < 7 || strncasecmp(h.auth, "Bearer ", 7)) {
		auth_refuse(g, "missing bearer token");
		return;
	}
	tok = h.auth + 7;
	toklen = h.alen - 7;
	while (toklen && *tok == ' ') {
		tok++;
		toklen--;
	}
	if (!toklen || toklen > 256 || memchr(tok, '\0', toklen)) {
		auth_refuse(g, "invalid token");
		return;
	}
	memcpy(g->secret, tok, toklen);
	g->secret[toklen] = '\0';
	store_auth_hash(g->secret, g->sha);
	switch (ops_auth_cached(g->sha, NULL, NULL)) {
	case 1:
		hand_over(g);
		return;
	case -1:
		auth_refuse(g, "invalid token");
		return;
	default:
		break;
	}
	if (!ops_auth_known_good(g->sha) &&
	    rest_gate_auth_limited((struct sockaddr *)&g->peer, &retry)) {
		refuse(g, MU_EQUOTA, retry, 2, "too many failed logins from this address");
		return;
	}
	/* Look the token up with the socket unread. */
	h2o_socket_read_stop(g->sock);
	if (h2o_timeout_is_linked(&g->timer))
		h2o_timeout_unlink(&g->timer);
	if (!g->arena_live) {
		mu_arena_init(&g->arena, 1024);
		g->arena_live = true;
	}
	memset(&g->work, 0, sizeof(g->work));
	g->work.run = lookup_run;
	g->work.complete = lookup_complete;
	g->work.arg = g;
	g->in_lookup = true;
	if (store_pool_submit(cfg->pool, &g->work) < 0) {
		g->in_lookup = false;
		refuse(g, MU_EUNAVAIL, 1, -1, "the database queue is full");
	}
}

static void head_on_read(h2o_socket_t *sock, const char *err)
{
	struct gate_conn *g = sock->data;

	if (err) {
		h2o_socket_close(sock);
		return;
	}
	check_request(g);
}

void rest_gate_accept(h2o_socket_t *sock)
{
	struct gate_conn *g = mu_calloc(1, sizeof(*g));
	socklen_t len = h2o_socket_getpeername(sock, (struct sockaddr *)&g->peer);

	g->sock = sock;
	gettimeofday(&g->connected_at, NULL);
	sock->data = g;
	sock->on_close.cb = gate_closed;
	sock->on_close.data = g;
	if (!len)
		g->peer.ss_family = AF_UNSPEC;
	if (open_conns >= (unsigned)cfg->max_conns) {
		refuse(g, MU_EUNAVAIL, 1, 0, "too many open connections");
		return;
	}
	g->slot = addr_slot((struct sockaddr *)&g->peer, true);
	if (g->slot && g->slot->conns >= (unsigned)cfg->max_conns_per_addr) {
		g->slot = NULL;
		refuse(g, MU_EUNAVAIL, 1, 0, "too many open connections from this address");
		return;
	}
	g->counted = true;
	open_conns++;
	if (g->slot)
		g->slot->conns++;
	arm(g, &head_timeout);
	h2o_socket_read_start(sock, head_on_read);
	/* after TLS the request may be decrypted already (it came with the
	 * handshake's last flight): no read event would come for it */
	if (sock->input->size)
		check_request(g);
}

void rest_gate_init(h2o_loop_t *l, h2o_accept_ctx_t *actx, h2o_multithread_queue_t *mq,
		    const struct rest_config *config)
{
	cfg = config;
	loop = l;
	accept_ctx = actx;
	h2o_timeout_init(loop, &head_timeout, HEAD_TIMEOUT_MS);
	h2o_timeout_init(loop, &linger_timeout, LINGER_MS);
	h2o_multithread_register_receiver(mq, &receiver, on_lookups);
}
