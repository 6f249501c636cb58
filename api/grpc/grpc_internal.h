/*
 * grpc_internal.h - muster-api's gRPC server internals, shared by
 * grpc_server.c (the completion-queue machinery), grpc_jobs.c, grpc_admin.c,
 * grpc_sched.c and grpc_agent.c. Not for other areas: they use api_grpc.h.
 *
 * Threads:
 *   - the CQ thread runs grpc_completion_queue_next and every tag's
 *     callback (gtag.fn);
 *   - database work runs on the shared store_pool workers (unary calls,
 *     Watch/Connect setup): a method's `run` does auth + store calls, then
 *     the worker itself starts the reply batch (grpc_call_start_batch is
 *     thread-safe; one batch per op type in flight is our rule);
 *   - the watch thread (grpc_jobs.c) polls events for open Watch streams;
 *   - the agent thread (grpc_agent.c) LISTENs muster_agents, pushes desired
 *     states, flushes batched heartbeats and applies RunStatus in order.
 *
 * A gcall is reference counted: one reference per batch in flight plus one
 * for its logic (dropped by gcall_finish's completion). It is freed, and its
 * grpc_call unref'd, when the count reaches zero.
 */
#ifndef MU_GRPC_INTERNAL_H
#define MU_GRPC_INTERNAL_H

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"
#include "pool.h"
#include "ops_principal.h"
#include "store_auth.h"

/* Roles as a bitmask: REST's (api/ops/ops_principal.h). */
#define GR_ADMIN OPS_ROLE_ADMIN
#define GR_TENANT OPS_ROLE_TENANT
#define GR_READER OPS_ROLE_READER
#define GR_AGENT OPS_ROLE_AGENT
#define GR_PUBLIC OPS_PUBLIC
#define GR_WRITERS OPS_WRITERS
#define GR_READERS OPS_READERS

struct gcall;

struct gtag {
	void (*fn)(struct gcall *c, bool ok);
	struct gcall *c;
};

enum gkind { GK_UNARY, GK_SERVER_STREAM, GK_BIDI };

/*
 * A method. Unary methods: `run` on a pool worker after auth, with c->req
 * the unpacked request; it sets c->resp (built in c->arena) or returns a MU_E* code with c->err filled.
 * Streaming methods: `run` does the setup on a worker after auth; `start`
 * then runs on the same worker once the call is authorized.
 */
struct gmethod {
	const char *path;                       /* "/muster.v1.JobService/Submit" */
	enum gkind kind;
	int roles;                              /* GR_* mask; GR_PUBLIC = no token */
	const ProtobufCMessageDescriptor *in;
	int (*run)(PGconn *db, struct gcall *c);
	void (*start)(struct gcall *c);         /* streams: after a successful run */
	int group;                              /* unary: a store_pool group kind (0 = alone); the
						 * group function calls gcall_auth per item */
};

/* Group kinds the gRPC server registers on the shared pool (REST uses the low ones). */
#define GRPC_GROUP_SUBMIT 7

struct gcall {
	struct gtag t_recv, t_send, t_close, t_final, t_start;
	grpc_call *call;
	grpc_call_details details;
	grpc_metadata_array md;
	const struct gmethod *m;
	atomic_int refs;
	pthread_mutex_t mu;         /* guards the stream fields below */

	grpc_byte_buffer *recv_buf;
	grpc_byte_buffer *send_buf;  /* the message in flight */
	int cancelled;               /* from RECV_CLOSE_ON_SERVER */
	bool closed;                 /* client gone or status sent/queued */
	bool sending;
	bool finish_queued;          /* status waits for the send queue to drain */
	bool md_sent;                /* initial metadata sent */
	bool close_started;          /* RECV_CLOSE_ON_SERVER in flight */
	void (*on_msg)(struct gcall *c, grpc_byte_buffer *buf);
	void (*on_closed)(struct gcall *c); /* streams: the client went away (CQ thread) */
	grpc_status_code fin_status;
	char *fin_msg;
	struct gqueue { grpc_byte_buffer *b; struct gqueue *next; } *q_head, *q_tail;
	size_t q_len;
	grpc_slice status_details;
	grpc_metadata trailers[2];
	size_t ntrailers;

	struct mu_arena arena;       /* per call; freed with it */
	const char *token;           /* bearer secret (arena), NULL when none */
	struct ops_principal who;    /* after auth (strings in arena); who.role is a GR_* bit */
	const char *peer;

	struct store_work work;
	ProtobufCMessage *req;       /* unpacked request (unary, server-stream) */
	ProtobufCMessage *resp;      /* unary reply, built in c->arena (never freed alone) */
	int rc;
	struct mu_error err;

	void *stream;                /* Watch / Connect state */
	void (*stream_free)(struct gcall *c);
};

/* Server-wide state other files need. */
struct store_pool *grpc_pool(void);
const char *grpc_db_url(void);
bool grpc_stopping(void);

void gcall_ref(struct gcall *c);
void gcall_unref(struct gcall *c);

/* Pool worker: authenticates c (token lookup, role check against c->m->roles). */
int gcall_auth(PGconn *db, struct gcall *c);

/* Caller's tenant scope: NULL for admins (and global readers), else the path. */
const char *gcall_scope(const struct gcall *c);

/*
 * Unary/stream end: sends (for unary, c->resp if rc == 0) and the status
 * from rc/c->err, then drops the logic reference. Any thread.
 */
void gcall_reply(struct gcall *c, int rc);

/* Streams: starts watching for the client going away (c->on_closed, then
 * the call finishes). Call once from `start`. */
void gcall_stream_open(struct gcall *c);
/*
 * Streams: queue one message (packed here; `m` stays the caller's). Any
 * thread. Returns false when the call is closed (client gone or finished).
 */
bool gcall_stream_send(struct gcall *c, const ProtobufCMessage *m);
/* Messages queued and not yet sent (flow control for producers). */
size_t gcall_stream_pending(struct gcall *c);
/* Streams: queue the final status after the queued messages. Any thread,
 * idempotent. `code` is a MU_E* or 0; msg may be NULL. */
void gcall_stream_finish(struct gcall *c, int code, const char *msg);
/* Bidi: starts the next RECV_MESSAGE; `on_msg(c, buf)` runs on the CQ thread
 * with the message (NULL at half-close or failure); it owns `buf`. */
void gcall_stream_recv(struct gcall *c, void (*on_msg)(struct gcall *c, grpc_byte_buffer *buf));
/* Unpacks a byte buffer; NULL when it is not a valid `d` message. */
ProtobufCMessage *gcall_unpack(grpc_byte_buffer *b, const ProtobufCMessageDescriptor *d);

/* Per-area method tables (NULL-path terminated) and lifecycle hooks. */
extern const struct gmethod grpc_jobs_methods[];
extern const struct gmethod grpc_admin_methods[];
extern const struct gmethod grpc_sched_methods[];
extern const struct gmethod grpc_agent_methods[];
extern const struct gmethod grpc_health_methods[];
int grpc_jobs_start(void);
void grpc_jobs_stop(void);
int grpc_agent_start(void);
void grpc_agent_stop(void);

/* Logs (grpc_logs.c): the broker between log readers and agent streams.
 * grpc_agent_find: the open Connect call of `node` (a new reference), or
 * NULL. grpc_logs_on_chunk / grpc_logs_closed: grpc_agent.c hands over
 * each LogChunk and each closed agent stream (CQ thread). */
struct gcall *grpc_agent_find(const char *node);
struct Muster__V1__LogChunk;
void grpc_logs_on_chunk(struct gcall *agent, const struct Muster__V1__LogChunk *lc);
void grpc_logs_closed(struct gcall *agent);
int grpc_logs_start(void);
/* JobService.GetLogs (its row is in grpc_jobs_methods). */
int grpc_logs_getlogs_run(PGconn *db, struct gcall *c);
void grpc_logs_getlogs_start(struct gcall *c);
void grpc_logs_stop(void);

/* Small helpers. */
char *gstr(struct gcall *c, const char *s);   /* arena copy; NULL -> "" */

#endif
