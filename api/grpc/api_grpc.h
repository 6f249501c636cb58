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

#endif
