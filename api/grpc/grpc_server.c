/*
 * grpc_server.c - the gRPC server: one completion queue and its thread,
 * generic call dispatch on the method path, bearer-token auth on a pool
 * worker, protobuf-c (un)packing and the status mapping of common/error.h.
 * See grpc_internal.h for the threading and reference rules.
 */
#include "api_grpc.h"
#include "api_tls.h"
#include "grpc_internal.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rest_metrics.h"
#include "ops_auth.h"
#include "store_auth.h"

/*
 * gRPC guarantees that a tag's completion happens after the call that handed
 * it over (start_batch, request_call, shutdown_and_notify). Debian's gRPC is
 * not built for ThreadSanitizer, which cannot see that edge and would report
 * every field written before the hand-off and read by the completion-queue
 * thread. Under TSan (make tsan) the edge is told to it on the tag; elsewhere
 * these compile to nothing.
 */
#if defined(__SANITIZE_THREAD__)
#define MU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MU_TSAN 1
#endif
#endif
#ifdef MU_TSAN
#include <sanitizer/tsan_interface.h>
#define tag_handed(t) __tsan_release(t)
#define tag_completed(t) __tsan_acquire(t)
#else
#define tag_handed(t) ((void)(t))
#define tag_completed(t) ((void)(t))
#endif

static struct {
	grpc_server *server;
	grpc_completion_queue *cq;
	pthread_t thread;
	struct store_pool *pool;
	char *db_url;
	atomic_bool stopping;
	atomic_bool shutdown_seen;
	atomic_int live;              /* gcalls alive */
	struct gtag t_shutdown;
	bool started;
} g;

struct store_pool *grpc_pool(void)
{
	return g.pool;
}

const char *grpc_db_url(void)
{
	return g.db_url;
}

bool grpc_stopping(void)
{
	return atomic_load(&g.stopping);
}

char *gstr(struct gcall *c, const char *s)
{
	return mu_arena_strdup(&c->arena, s ? s : "");
}

/* ---- call lifetime ------------------------------------------------------ */

static void request_next(void);

static void gcall_free(struct gcall *c)
{
	struct gqueue *q, *next;

	if (c->stream_free)
		c->stream_free(c);
	for (q = c->q_head; q; q = next) {
		next = q->next;
		grpc_byte_buffer_destroy(q->b);
		mu_free(q);
	}
	if (c->send_buf)
		grpc_byte_buffer_destroy(c->send_buf);
	if (c->recv_buf)
		grpc_byte_buffer_destroy(c->recv_buf);
	if (c->req)
		protobuf_c_message_free_unpacked(c->req, NULL);
	grpc_slice_unref(c->status_details);
	for (size_t i = 0; i < c->ntrailers; i++)
		grpc_slice_unref(c->trailers[i].value);
	mu_free(c->fin_msg);
	if (c->call)
		grpc_call_unref(c->call);
	grpc_call_details_destroy(&c->details);
	grpc_metadata_array_destroy(&c->md);
	mu_arena_release(&c->arena);
	pthread_mutex_destroy(&c->mu);
	mu_free(c);
	atomic_fetch_sub(&g.live, 1);
}

void gcall_ref(struct gcall *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void gcall_unref(struct gcall *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1)
		gcall_free(c);
}

const char *gcall_scope(const struct gcall *c)
{
	return ops_scope_path(&c->who);
}

static void batch(struct gcall *c, const grpc_op *ops, size_t n, struct gtag *t)
{
	grpc_call_error e;

	gcall_ref(c);
	tag_handed(t);
	e = grpc_call_start_batch(c->call, ops, n, t, NULL);
	if (e != GRPC_CALL_OK) {
		mu_err("grpc call=%p start_batch failed: %d", (void *)c, (int)e);
		gcall_unref(c);
	}
}

/* ---- packing ------------------------------------------------------------ */

static grpc_byte_buffer *pack(const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	grpc_slice s = grpc_slice_malloc(n);
	grpc_byte_buffer *b;

	protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
	b = grpc_raw_byte_buffer_create(&s, 1);
	grpc_slice_unref(s);
	return b;
}

ProtobufCMessage *gcall_unpack(grpc_byte_buffer *b, const ProtobufCMessageDescriptor *d)
{
	grpc_byte_buffer_reader r;
	grpc_slice s;
	ProtobufCMessage *m;

	if (!b || !grpc_byte_buffer_reader_init(&r, b))
		return NULL;
	s = grpc_byte_buffer_reader_readall(&r);
	grpc_byte_buffer_reader_destroy(&r);
	m = protobuf_c_message_unpack(d, NULL, GRPC_SLICE_LENGTH(s), GRPC_SLICE_START_PTR(s));
	grpc_slice_unref(s);
	return m;
}

/* ---- the final status --------------------------------------------------- */

static void on_final(struct gcall *c, bool ok)
{
	(void)ok;
	gcall_unref(c); /* the batch */
	gcall_unref(c); /* the logic */
}

static void set_status(struct gcall *c, int code, const char *msg)
{
	char buf[700];

	if (code == 0) {
		c->fin_status = GRPC_STATUS_OK;
		buf[0] = '\0';
	} else {
		if (c->err.code != code)
			c->err.field[0] = '\0';
		if (!msg)
			msg = c->err.code == code && c->err.msg[0] ? c->err.msg : mu_strerror(code);
		c->fin_status = (grpc_status_code)mu_err_grpc_status(code);
		if (c->err.code == code && c->err.field[0])
			snprintf(buf, sizeof(buf), "%s: %s", c->err.field, msg);
		else
			snprintf(buf, sizeof(buf), "%s", msg);
		c->trailers[0].key = grpc_slice_from_static_string("muster-error");
		c->trailers[0].value = grpc_slice_from_copied_string(mu_err_slug(code));
		c->ntrailers = 1;
		if (c->err.code == code && c->err.field[0]) {
			c->trailers[1].key = grpc_slice_from_static_string("muster-field");
			c->trailers[1].value = grpc_slice_from_copied_string(c->err.field);
			c->ntrailers = 2;
		}
	}
	grpc_slice_unref(c->status_details);
	c->status_details = grpc_slice_from_copied_string(buf);
}

/* Starts the final batch (under c->mu for streams). */
static void start_final(struct gcall *c)
{
	grpc_op ops[4];
	size_t n = 0;

	memset(ops, 0, sizeof(ops));
	if (!c->md_sent) {
		ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
		c->md_sent = true;
	}
	if (c->send_buf) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = c->send_buf;
	}
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = c->fin_status;
	ops[n].data.send_status_from_server.status_details = &c->status_details;
	ops[n].data.send_status_from_server.trailing_metadata_count = c->ntrailers;
	ops[n++].data.send_status_from_server.trailing_metadata = c->ntrailers ? c->trailers : NULL;
	if (!c->close_started) {
		ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
		ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
		c->close_started = true;
	}
	c->t_final.fn = on_final;
	batch(c, ops, n, &c->t_final);
}

/* gcall_reply and gcall_stream_finish run on other threads than the
 * completion queue's, which may see the final batch complete and drop the
 * last reference while grpc_call_start_batch is still returning here: each
 * holds a reference of its own until it has unlocked c->mu. */
void gcall_reply(struct gcall *c, int rc)
{
	gcall_ref(c);
	pthread_mutex_lock(&c->mu);
	if (!c->finish_queued) {
		c->finish_queued = true;
		if (rc == 0 && c->resp)
			c->send_buf = pack(c->resp);
		set_status(c, rc, NULL);
		start_final(c);
	}
	pthread_mutex_unlock(&c->mu);
	gcall_unref(c);
}

/* ---- streams ------------------------------------------------------------ */

static void on_send(struct gcall *c, bool ok);

static void start_send_locked(struct gcall *c)
{
	struct gqueue *q = c->q_head;
	grpc_op op;

	c->q_head = q->next;
	if (!c->q_head)
		c->q_tail = NULL;
	c->q_len--;
	c->send_buf = q->b;
	mu_free(q);
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_SEND_MESSAGE;
	op.data.send_message.send_message = c->send_buf;
	c->sending = true;
	c->t_send.fn = on_send;
	batch(c, &op, 1, &c->t_send);
}

static void drop_queue_locked(struct gcall *c)
{
	struct gqueue *q, *next;

	for (q = c->q_head; q; q = next) {
		next = q->next;
		grpc_byte_buffer_destroy(q->b);
		mu_free(q);
	}
	c->q_head = c->q_tail = NULL;
	c->q_len = 0;
}

static void on_send(struct gcall *c, bool ok)
{
	pthread_mutex_lock(&c->mu);
	grpc_byte_buffer_destroy(c->send_buf);
	c->send_buf = NULL;
	c->sending = false;
	if (!ok) {
		c->closed = true;
		drop_queue_locked(c);
	}
	if (c->q_head)
		start_send_locked(c);
	else if (c->finish_queued)
		start_final(c);
	pthread_mutex_unlock(&c->mu);
	gcall_unref(c);
}

bool gcall_stream_send(struct gcall *c, const ProtobufCMessage *m)
{
	struct gqueue *q;
	bool ok = false;

	gcall_ref(c); /* as gcall_reply: a completion may run meanwhile */
	pthread_mutex_lock(&c->mu);
	if (c->closed || c->finish_queued)
		goto out;
	q = mu_calloc(1, sizeof(*q));
	q->b = pack(m);
	if (c->q_tail)
		c->q_tail->next = q;
	else
		c->q_head = q;
	c->q_tail = q;
	c->q_len++;
	if (!c->sending)
		start_send_locked(c);
	ok = true;
out:
	pthread_mutex_unlock(&c->mu);
	gcall_unref(c);
	return ok;
}

size_t gcall_stream_pending(struct gcall *c)
{
	size_t n;

	pthread_mutex_lock(&c->mu);
	n = c->q_len + (c->sending ? 1 : 0);
	pthread_mutex_unlock(&c->mu);
	return n;
}

void gcall_stream_finish(struct gcall *c, int code, const char *msg)
{
	gcall_ref(c);
	pthread_mutex_lock(&c->mu);
	if (!c->finish_queued) {
		c->finish_queued = true;
		set_status(c, code, msg);
		if (c->closed)
			drop_queue_locked(c);
		if (!c->sending)
			start_final(c);
	}
	pthread_mutex_unlock(&c->mu);
	gcall_unref(c);
}

static void on_close(struct gcall *c, bool ok)
{
	(void)ok;
	pthread_mutex_lock(&c->mu);
	c->closed = true;
	pthread_mutex_unlock(&c->mu);
	if (c->on_closed)
		c->on_closed(c);
	gcall_stream_finish(c, 0, NULL);
	gcall_unref(c);
}

void gcall_stream_open(struct gcall *c)
{
	grpc_op op;

	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	op.data.recv_close_on_server.cancelled = &c->cancelled;
	pthread_mutex_lock(&c->mu);
	c->close_started = true;
	c->t_close.fn = on_close;
	batch(c, &op, 1, &c->t_close);
	pthread_mutex_unlock(&c->mu);
}

static void on_stream_recv(struct gcall *c, bool ok)
{
	grpc_byte_buffer *b = c->recv_buf;

	c->recv_buf = NULL;
	if (!ok && b) {
		grpc_byte_buffer_destroy(b);
		b = NULL;
	}
	c->on_msg(c, b);
	gcall_unref(c);
}

void gcall_stream_recv(struct gcall *c, void (*on_msg)(struct gcall *c, grpc_byte_buffer *buf))
{
	grpc_op op;

	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &c->recv_buf;
	c->on_msg = on_msg;
	c->t_recv.fn = on_stream_recv;
	batch(c, &op, 1, &c->t_recv);
}

/* ---- dispatch ----------------------------------------------------------- */

/* The token through the cache REST uses too (api/ops/ops_auth.h). */
int gcall_auth(PGconn *db, struct gcall *c)
{
	char sha[65];
	bool asked_db;
	int ret;

	if (c->m->roles == GR_PUBLIC)
		return 0;
	store_auth_hash(c->token ? c->token : "", sha);
	ret = ops_auth_check(db, &c->arena, c->token, sha, &c->who, &c->err, &asked_db);
	if (asked_db)
		rest_metrics_grpc_token_lookup();
	if (ret < 0) {
		if (ret == MU_EUNAUTH) {
			rest_metrics_grpc_auth_failed();
			mu_error_set(&c->err, MU_EUNAUTH, "", "invalid, expired or revoked token");
		}
		return ret;
	}
	if (!(c->who.role & c->m->roles))
		return mu_error_set(&c->err, MU_EFORBIDDEN, "", "role %s may not call %s",
				    ops_role_name(c->who.role), c->m->path);
	return 0;
}

/* Pool worker: auth, then the method. */
static int work_run(PGconn *db, struct store_work *w)
{
	struct gcall *c = w->arg;
	int ret = gcall_auth(db, c);

	return ret < 0 ? ret : c->m->run(db, c);
}

/* Pool worker (or the submitter when the pool refused): finish or start. */
static void work_done(struct store_work *w)
{
	struct gcall *c = w->arg;
	int rc = w->rc;

	if (rc < 0 && c->err.code != rc) {
		if (w->err.code == rc)
			c->err = w->err;
		else
			mu_error_set(&c->err, rc, "", "%s", mu_strerror(rc));
	}
	if (rc == 0 && c->m->kind != GK_UNARY && c->m->start) {
		/* the stream may close and finish on the queue's thread meanwhile */
		gcall_ref(c);
		c->m->start(c);
		gcall_unref(c);
		return;
	}
	gcall_reply(c, rc);
}

static void on_first_recv(struct gcall *c, bool ok)
{
	grpc_byte_buffer *b = c->recv_buf;
	int ret;

	c->recv_buf = NULL;
	if (!ok || !b) {
		ret = mu_error_set(&c->err, MU_EINVAL, "", "no request message");
		goto fail;
	}
	c->req = gcall_unpack(b, c->m->in);
	grpc_byte_buffer_destroy(b);
	if (!c->req) {
		ret = mu_error_set(&c->err, MU_EINVAL, "", "the request is not a valid %s message",
				   c->m->in->name);
		goto fail;
	}
	if (c->m->roles != GR_PUBLIC && !c->token) {
		ret = mu_error_set(&c->err, MU_EUNAUTH, "",
				   "missing metadata authorization: Bearer <token>");
		goto fail;
	}
	memset(&c->work, 0, sizeof(c->work));
	c->work.run = work_run;
	c->work.kind = c->m->group;
	c->work.weight = 1;
	c->work.complete = work_done;
	c->work.arg = c;
	if (store_pool_submit(g.pool, &c->work) < 0) {
		ret = mu_error_set(&c->err, MU_EUNAVAIL, "", "database queue full");
		goto fail;
	}
	gcall_unref(c);
	return;
fail:
	gcall_reply(c, ret);
	gcall_unref(c);
}

static bool slice_is(grpc_slice s, const char *str)
{
	size_t n = strlen(str);

	return GRPC_SLICE_LENGTH(s) == n && !memcmp(GRPC_SLICE_START_PTR(s), str, n);
}

static const struct gmethod *find_method(grpc_slice path)
{
	const struct gmethod *const all[] = { grpc_jobs_methods, grpc_admin_methods,
					       grpc_sched_methods, grpc_agent_methods,
					       grpc_health_methods };

	for (size_t t = 0; t < sizeof(all) / sizeof(all[0]); t++)
		for (const struct gmethod *m = all[t]; m->path; m++)
			if (slice_is(path, m->path))
				return m;
	return NULL;
}

static const char *find_token(struct gcall *c)
{
	for (size_t i = 0; i < c->md.count; i++) {
		grpc_slice k = c->md.metadata[i].key, v = c->md.metadata[i].value;
		size_t n = GRPC_SLICE_LENGTH(v);
		const char *p = (const char *)GRPC_SLICE_START_PTR(v);

		if (!slice_is(k, "authorization"))
			continue;
		if (n < 8 || strncasecmp(p, "Bearer ", 7))
			return NULL;
		p += 7;
		n -= 7;
		while (n && *p == ' ') {
			p++;
			n--;
		}
		if (!n || n > 256 || memchr(p, '\0', n))
			return NULL;
		char *tok = mu_arena_alloc(&c->arena, n + 1);

		memcpy(tok, p, n);
		return tok;
	}
	return NULL;
}

static void on_start(struct gcall *c, bool ok)
{
	grpc_op ops[2];

	if (!ok) {
		gcall_unref(c);
		return;
	}
	if (!atomic_load(&g.stopping))
		request_next();
	c->m = find_method(c->details.method);
	if (!c->m) {
		char path[160];
		size_t n = GRPC_SLICE_LENGTH(c->details.method);

		if (n >= sizeof(path))
			n = sizeof(path) - 1;
		memcpy(path, GRPC_SLICE_START_PTR(c->details.method), n);
		path[n] = '\0';
		mu_debug("grpc method=%s unimplemented", path);
		pthread_mutex_lock(&c->mu);
		c->finish_queued = true;
		c->fin_status = GRPC_STATUS_UNIMPLEMENTED;
		c->status_details = grpc_slice_from_copied_string("unknown method");
		start_final(c);
		pthread_mutex_unlock(&c->mu);
		return;
	}
	c->token = find_token(c);
	{
		char *peer = grpc_call_get_peer(c->call);

		c->peer = gstr(c, peer);
		gpr_free(peer);
	}
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_RECV_MESSAGE;
	ops[1].data.recv_message.recv_message = &c->recv_buf;
	c->md_sent = true;
	c->t_recv.fn = on_first_recv;
	batch(c, ops, 2, &c->t_recv);
}

static void request_next(void)
{
	struct gcall *c = mu_calloc(1, sizeof(*c));
	grpc_call_error e;

	atomic_fetch_add(&g.live, 1);
	atomic_init(&c->refs, 1); /* the logic */
	pthread_mutex_init(&c->mu, NULL);
	mu_arena_init(&c->arena, 4096);
	c->status_details = grpc_empty_slice();
	c->t_recv.c = c->t_send.c = c->t_close.c = c->t_final.c = c->t_start.c = c;
	c->t_start.fn = on_start;
	grpc_call_details_init(&c->details);
	grpc_metadata_array_init(&c->md);
	tag_handed(&c->t_start);
	e = grpc_server_request_call(g.server, &c->call, &c->details, &c->md, g.cq, g.cq, &c->t_start);
	if (e != GRPC_CALL_OK) {
		mu_err("grpc request_call failed: %d", (int)e);
		gcall_unref(c);
	}
}

static void *cq_main(void *arg)
{
	(void)arg;
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(g.cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		struct gtag *t;

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		t = ev.tag;
		tag_completed(t);
		if (t == &g.t_shutdown) {
			atomic_store(&g.shutdown_seen, true);
			continue;
		}
		t->fn(t->c, ev.success != 0);
	}
	return NULL;
}

/* ---- start / stop ------------------------------------------------------- */

int api_grpc_start(const struct api_grpc_config *cfg)
{
	grpc_arg args[6];
	grpc_channel_args ch;
	grpc_server_credentials *creds;
	sigset_t block, old;
	int port, ret = 0;

	if (!cfg->addr || !cfg->addr[0] || !strcmp(cfg->addr, "off"))
		return 0;
	g.pool = cfg->pool;
	g.db_url = mu_strdup(cfg->db_url ? cfg->db_url : "");
	/* gRPC's threads and ours must not take SIGINT/SIGTERM from the REST loop */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	grpc_init();
	memset(args, 0, sizeof(args));
	args[0].type = GRPC_ARG_INTEGER;
	args[0].key = (char *)"grpc.so_reuseport";
	args[0].value.integer = 0;
	args[1].type = GRPC_ARG_INTEGER;
	args[1].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
	args[1].value.integer = 4 << 20;
	/* notice dead agents (no FIN) within ~40 s; let clients ping every 10 s */
	args[2].type = GRPC_ARG_INTEGER;
	args[2].key = (char *)GRPC_ARG_KEEPALIVE_TIME_MS;
	args[2].value.integer = 30000;
	args[3].type = GRPC_ARG_INTEGER;
	args[3].key = (char *)GRPC_ARG_KEEPALIVE_TIMEOUT_MS;
	args[3].value.integer = 10000;
	args[4].type = GRPC_ARG_INTEGER;
	args[4].key = (char *)GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS;
	args[4].value.integer = 10000;
	args[5].type = GRPC_ARG_INTEGER;
	args[5].key = (char *)GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS;
	args[5].value.integer = 1;
	ch.num_args = 6;
	ch.args = args;
	g.server = grpc_server_create(&ch, NULL);
	g.cq = grpc_completion_queue_create_for_next(NULL);
	grpc_server_register_completion_queue(g.server, g.cq, NULL);
	creds = api_tls_grpc_credentials(); /* insecure without --tls-cert */
	port = grpc_server_add_http2_port(g.server, cfg->addr, creds);
	grpc_server_credentials_release(creds);
	if (port <= 0) {
		mu_err("grpc addr=%s cannot listen (in use or invalid)", cfg->addr);
		grpc_server_destroy(g.server);
		grpc_completion_queue_shutdown(g.cq);
		while (grpc_completion_queue_next(g.cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
		       GRPC_QUEUE_SHUTDOWN)
			;
		grpc_completion_queue_destroy(g.cq);
		grpc_shutdown();
		mu_free(g.db_url);
		ret = MU_EIO;
		goto out;
	}
	grpc_server_start(g.server);
	ret = grpc_jobs_start();
	if (ret == 0)
		ret = grpc_agent_start();
	if (ret == 0)
		ret = grpc_logs_start();
	/* one call is always requested; each accepted call requests the next */
	request_next();
	pthread_create(&g.thread, NULL, cq_main, NULL);
	g.started = true;
	mu_info("grpc addr=%s serving (port %d)", cfg->addr, port);
	if (ret < 0) {
		api_grpc_stop();
		goto out;
	}
out:
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

static void wait_for(bool (*cond)(void), int ms)
{
	for (int i = 0; i < ms / 10 && !cond(); i++)
		usleep(10000);
}

static bool shutdown_done(void)
{
	return atomic_load(&g.shutdown_seen) && atomic_load(&g.live) == 0;
}

void api_grpc_stop(void)
{
	if (!g.started)
		return;
	g.started = false;
	atomic_store(&g.stopping, true);
	grpc_jobs_stop();
	grpc_logs_stop();
	grpc_agent_stop();
	grpc_server_shutdown_and_notify(g.server, g.cq, &g.t_shutdown);
	grpc_server_cancel_all_calls(g.server);
	wait_for(shutdown_done, 10000);
	if (!shutdown_done()) {
		/* a database call still holds a call: leak rather than race it */
		mu_warn("grpc calls=%d still alive at shutdown; not tearing down", atomic_load(&g.live));
		return;
	}
	grpc_completion_queue_shutdown(g.cq);
	pthread_join(g.thread, NULL);
	grpc_server_destroy(g.server);
	grpc_completion_queue_destroy(g.cq);
	grpc_shutdown();
	mu_free(g.db_url);
	mu_info("grpc stopped");
}
