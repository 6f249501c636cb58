/*
 * api_grpc.h - muster-api's gRPC server (JobService, AdminService,
 * AgentService, grpc.health.v1.Health), the one hook main.c calls.
 * See docs/grpc.md.
 *
 * It runs beside REST on its own threads with its own completion queue,
 * shares the REST database pool (same store functions, same rules) and
 * binds exclusively (grpc.so_reuseport = 0).
 */
#ifndef MU_API_GRPC_H
#define MU_API_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"

struct api_grpc_config {
	const char *addr;          /* "host:port"; "" or "off" = no gRPC */
	struct store_pool *pool;   /* borrowed; must outlive api_grpc_stop */
	const char *db_url;        /* for the watch and agent threads' own connections */
	int resync_s;              /* desired-state resync period for agents (0 = 5) */
};

/* Starts serving (the call returns at once). MU_EIO when it cannot bind. */
int api_grpc_start(const struct api_grpc_config *cfg);
/* Cancels every call, stops the threads, shuts gRPC down. Call before
 * store_pool_free. A no-op when not started. */
void api_grpc_stop(void);

/*
 * Log bytes from a node's agent (REST GET /v1/jobs/{id}/logs and
 * JobService.GetLogs). The request goes down the node's AgentService
 * stream on THIS replica; the answer comes back up it.
 */
struct api_grpc_log_ask {
	const char *node;      /* borrowed for the call */
	int64_t run_id;
	int32_t local_rank;
	bool err_stream;       /* stderr instead of stdout */
	int64_t offset;
	int32_t limit;         /* 1..1048576 */
};

struct api_grpc_log_answer {
	int rc;                /* 0, or MU_ENODEDOWN (no stream for the node, or it closed, or no
				* answer in time), MU_EGONE (the node has no such run or file any
				* more), MU_EINVAL, MU_EUNAVAIL (busy, shutting down) */
	const char *msg;       /* why, when rc < 0 */
	const unsigned char *data; /* borrowed for the callback */
	size_t len;
	int64_t offset;
	int64_t size;          /* the file's size when read */
	bool ended;            /* the process has ended */
};

typedef void (*api_grpc_log_fn)(void *arg, const struct api_grpc_log_answer *ans);

/*
 * Asks, `delay_ms` from now (0 = now), for one byte range. `fn(arg, ans)`
 * runs exactly once, within delay + API_GRPC_LOG_TIMEOUT_MS, on a gRPC
 * thread (or inside this call when gRPC is off, busy or stopping); it must
 * not block. Any thread.
 */
#define API_GRPC_LOG_TIMEOUT_MS 10000
void api_grpc_log_fetch(const struct api_grpc_log_ask *q, int delay_ms, api_grpc_log_fn fn, void *arg);

#endif
