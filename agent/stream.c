/*
 * stream.c - AgentService.Connect over gRPC C core. One call at a time;
 * at most one batch of each kind in flight (start, recv, send, status), as
 * the C core requires. RECV_INITIAL_METADATA goes in the start batch,
 * before any receive (STACK.md).
 */
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_metrics.h"
#include "agent.h"
#include "alloc.h"
#include "log.h"
#include "stream.h"
#include "tls.h"

#define OUTBOX_MAX 4096
#define AG_MAX_DESIRED (64 << 20) /* = MAX_DESIRED_BYTES in api/grpc/grpc_agent.c */
#define BACKOFF_MIN 0.25
#define BACKOFF_MAX 15.0

enum st { ST_IDLE, ST_OPEN, ST_CLOSING };
static char TAG_START, TAG_RECV, TAG_SEND, TAG_STATUS;

struct ag_stream {
	grpc_channel *ch;
	grpc_completion_queue *cq;
	grpc_call *call;
	char *target;
	grpc_slice auth_key, auth_val;
	grpc_metadata md[1];
	enum st state;
	int pending;
	bool acked, fresh;
	grpc_metadata_array md_init, md_trail;
	grpc_status_code status;
	grpc_slice details;
	grpc_byte_buffer *recv_buf;
	grpc_byte_buffer *send_buf; /* in flight */
	grpc_byte_buffer **outbox;
	size_t out_head, out_n, out_cap;
	double next_open, backoff;
};

struct ag_stream *ag_stream_new(const char *target, const char *auth_header)
{
	struct ag_stream *s = mu_calloc(1, sizeof(*s));
	grpc_init();
	s->target = mu_strdup(target);
	grpc_channel_credentials *cred = ag_tls_credentials(); /* insecure without --tls-ca */
	/* the server never sends a DesiredState above this (grpc_agent.c);
	 * keepalive: a muster-api host that vanished without a FIN is noticed
	 * within ~40 s and the agent reconnects (to another replica, or to it
	 * once it is back) instead of queueing into a dead connection */
	grpc_arg arg[3] = {
		{ .type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
		  .value.integer = AG_MAX_DESIRED },
		{ .type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_KEEPALIVE_TIME_MS,
		  .value.integer = 30000 },
		{ .type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
		  .value.integer = 10000 },
	};
	grpc_channel_args args = { .num_args = 3, .args = arg };
	s->ch = grpc_channel_create(target, cred, &args);
	grpc_channel_credentials_release(cred);
	s->cq = grpc_completion_queue_create_for_next(NULL);
	/* not copied: the one buffer the agent's forks wipe (token.c) */
	s->auth_key = grpc_slice_from_static_string("authorization");
	s->auth_val = grpc_slice_from_static_string(auth_header);
	s->md[0].key = s->auth_key;
	s->md[0].value = s->auth_val;
	s->out_cap = OUTBOX_MAX;
	s->outbox = mu_calloc(s->out_cap, sizeof(*s->outbox));
	s->backoff = BACKOFF_MIN;
	return s;
}

static void outbox_clear(struct ag_stream *s)
{
	while (s->out_n) {
		grpc_byte_buffer_destroy(s->outbox[s->out_head]);
		s->out_head = (s->out_head + 1) % s->out_cap;
		s->out_n--;
	}
}

static grpc_byte_buffer *pack(const Muster__V1__AgentMessage *m)
{
	size_t len = muster__v1__agent_message__get_packed_size(m);
	grpc_slice sl = grpc_slice_malloc(len);
	muster__v1__agent_message__pack(m, GRPC_SLICE_START_PTR(sl));
	grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&sl, 1);
	grpc_slice_unref(sl);
	return bb;
}

static void start_batch(struct ag_stream *s, grpc_op *ops, size_t n, void *tag)
{
	grpc_call_error e = grpc_call_start_batch(s->call, ops, n, tag, NULL);
	if (e != GRPC_CALL_OK) {
		mu_err("api=%s grpc start_batch failed: %d", s->target, (int)e);
		grpc_call_cancel(s->call, NULL);
		return;
	}
	s->pending++;
}

static void send_next(struct ag_stream *s)
{
	if (s->state != ST_OPEN || s->send_buf || !s->out_n)
		return;
	s->send_buf = s->outbox[s->out_head];
	s->out_head = (s->out_head + 1) % s->out_cap;
	s->out_n--;
	grpc_op op;
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_SEND_MESSAGE;
	op.data.send_message.send_message = s->send_buf;
	start_batch(s, &op, 1, &TAG_SEND);
}

static void recv_next(struct ag_stream *s)
{
	grpc_op op;
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &s->recv_buf;
	start_batch(s, &op, 1, &TAG_RECV);
}

bool ag_stream_should_open(const struct ag_stream *s)
{
	return s->state == ST_IDLE && ag_now() >= s->next_open;
}

bool ag_stream_ready(const struct ag_stream *s)
{
	return s->state == ST_OPEN && s->acked;
}

bool ag_stream_take_new(struct ag_stream *s)
{
	bool f = s->fresh && ag_stream_ready(s);
	if (f)
		s->fresh = false;
	return f;
}

void ag_stream_open(struct ag_stream *s, const Muster__V1__AgentMessage *reg)
{
	s->call = grpc_channel_create_call(s->ch, NULL, GRPC_PROPAGATE_DEFAULTS, s->cq,
					   grpc_slice_from_static_string(
						   "/muster.v1.AgentService/Connect"),
					   NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	s->state = ST_OPEN;
	s->acked = false;
	s->pending = 0;
	grpc_metadata_array_init(&s->md_init);
	grpc_metadata_array_init(&s->md_trail);
	s->details = grpc_empty_slice();

	grpc_op ops[2];
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[0].data.send_initial_metadata.count = 1;
	ops[0].data.send_initial_metadata.metadata = s->md;
	ops[1].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[1].data.recv_initial_metadata.recv_initial_metadata = &s->md_init;
	start_batch(s, ops, 2, &TAG_START);

	grpc_op st;
	memset(&st, 0, sizeof(st));
	st.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	st.data.recv_status_on_client.trailing_metadata = &s->md_trail;
	st.data.recv_status_on_client.status = &s->status;
	st.data.recv_status_on_client.status_details = &s->details;
	start_batch(s, &st, 1, &TAG_STATUS);

	outbox_clear(s);
	s->outbox[0] = pack(reg);
	s->out_head = 0;
	s->out_n = 1;
	send_next(s);
	mu_debug("api=%s connecting", s->target);
}

bool ag_stream_send(struct ag_stream *s, const Muster__V1__AgentMessage *m)
{
	if (!ag_stream_ready(s) || s->out_n >= s->out_cap)
		return false;
	s->outbox[(s->out_head + s->out_n) % s->out_cap] = pack(m);
	s->out_n++;
	send_next(s);
	return true;
}

size_t ag_stream_backlog(const struct ag_stream *s)
{
	return s->out_n;
}

static void fail(struct ag_stream *s)
{
	if (s->state == ST_OPEN) {
		s->state = ST_CLOSING;
		grpc_call_cancel(s->call, NULL);
	}
}

static void finish_if_done(struct ag_stream *s)
{
	if (s->state != ST_CLOSING || s->pending > 0)
		return;
	char *det = grpc_slice_to_c_string(s->details);
	if (s->acked)
		s->backoff = BACKOFF_MIN;
	double jitter = 0.5 + (double)random() / RAND_MAX; /* 0.5x .. 1.5x */
	double wait = s->backoff * jitter;
	mu_warn("api=%s stream closed status=%d (%s); reconnecting in %.2fs", s->target,
		(int)s->status, det, wait);
	gpr_free(det);
	s->backoff = s->backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : s->backoff * 2;
	s->next_open = ag_now() + wait;
	ag_metrics_stream_reconnect();
	grpc_slice_unref(s->details);
	grpc_metadata_array_destroy(&s->md_init);
	grpc_metadata_array_destroy(&s->md_trail);
	grpc_call_unref(s->call);
	s->call = NULL;
	outbox_clear(s);
	s->acked = false;
	s->state = ST_IDLE;
}

static void on_recv(struct ag_stream *s, void (*on_msg)(void *, const Muster__V1__ServerMessage *),
		    void *ctx)
{
	grpc_byte_buffer_reader rd;
	Muster__V1__ServerMessage *m = NULL;
	if (grpc_byte_buffer_reader_init(&rd, s->recv_buf)) {
		grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
		m = muster__v1__server_message__unpack(NULL, GRPC_SLICE_LENGTH(all),
						       GRPC_SLICE_START_PTR(all));
		grpc_slice_unref(all);
		grpc_byte_buffer_reader_destroy(&rd);
	}
	grpc_byte_buffer_destroy(s->recv_buf);
	s->recv_buf = NULL;
	if (!m) {
		mu_err("api=%s undecodable server message: closing the stream", s->target);
		fail(s);
		return;
	}
	if (m->msg_case == MUSTER__V1__SERVER_MESSAGE__MSG_ACK && !s->acked) {
		s->acked = true;
		s->fresh = true;
		s->backoff = BACKOFF_MIN;
		mu_info("api=%s registered node_id=%lld heartbeat_timeout=%ds", s->target,
			(long long)m->ack->node_id, (int)m->ack->heartbeat_timeout_s);
	}
	on_msg(ctx, m);
	muster__v1__server_message__free_unpacked(m, NULL);
	if (s->state == ST_OPEN)
		recv_next(s);
}

void ag_stream_poll(struct ag_stream *s, int timeout_ms,
		    void (*on_msg)(void *ctx, const Muster__V1__ServerMessage *m), void *ctx)
{
	gpr_timespec dl = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
				       gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(s->cq, dl, NULL);
		if (ev.type != GRPC_OP_COMPLETE)
			break;
		s->pending--;
		if (ev.tag == &TAG_START) {
			if (ev.success && s->state == ST_OPEN)
				recv_next(s);
			else
				fail(s);
		} else if (ev.tag == &TAG_RECV) {
			if (ev.success && s->recv_buf)
				on_recv(s, on_msg, ctx);
			else
				fail(s); /* end of stream: the status follows */
		} else if (ev.tag == &TAG_SEND) {
			grpc_byte_buffer_destroy(s->send_buf);
			s->send_buf = NULL;
			if (ev.success)
				send_next(s);
			else
				fail(s);
		} else if (ev.tag == &TAG_STATUS) {
			if (s->state == ST_OPEN) {
				s->state = ST_CLOSING;
				grpc_call_cancel(s->call, NULL);
			}
		}
		finish_if_done(s);
		/* after the first event, only take what is already there */
		dl = gpr_time_0(GPR_CLOCK_MONOTONIC);
	}
}

void ag_stream_cancel(struct ag_stream *s)
{
	if (s->state == ST_IDLE)
		return;
	fail(s);
	while (s->state != ST_IDLE) {
		grpc_event ev = grpc_completion_queue_next(
			s->cq, gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
					    gpr_time_from_millis(2000, GPR_TIMESPAN)),
			NULL);
		if (ev.type != GRPC_OP_COMPLETE)
			break;
		s->pending--;
		if (ev.tag == &TAG_SEND && s->send_buf) {
			grpc_byte_buffer_destroy(s->send_buf);
			s->send_buf = NULL;
		}
		if (ev.tag == &TAG_RECV && s->recv_buf) {
			grpc_byte_buffer_destroy(s->recv_buf);
			s->recv_buf = NULL;
		}
		finish_if_done(s);
	}
}

void ag_stream_free(struct ag_stream *s)
{
	if (!s)
		return;
	ag_stream_cancel(s);
	outbox_clear(s);
	mu_free(s->outbox);
	grpc_completion_queue_shutdown(s->cq);
	while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
	       GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(s->cq);
	grpc_channel_destroy(s->ch);
	grpc_slice_unref(s->auth_val);
	mu_free(s->target);
	mu_free(s);
	grpc_shutdown();
}
