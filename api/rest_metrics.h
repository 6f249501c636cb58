/*
 * rest_metrics.h - muster-api's own counters beyond the framework's HTTP
 * figures (rest.c): submits and batch jobs (REST and gRPC), and the open
 * event streams gauge. Safe from any thread (atomics).
 *
 * Hook for event streams (SSE, gRPC Watch): call
 * rest_metrics_event_streams_add(+1) when a stream opens and (-1) when it
 * ends, whatever ends it. Rendered as muster_api_event_streams{kind}.
 */
#ifndef MU_REST_METRICS_H
#define MU_REST_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

enum rest_metrics_api { REST_METRICS_REST, REST_METRICS_GRPC };
enum rest_metrics_stream { REST_METRICS_SSE, REST_METRICS_WATCH, REST_METRICS_LOGS };

/* One accepted submit (not an idempotent replay) of `jobs` jobs. */
void rest_metrics_submitted(enum rest_metrics_api api, bool batch, size_t jobs);
void rest_metrics_event_streams_add(enum rest_metrics_stream kind, int delta);
/* A gRPC call with a missing or invalid token (REST's are the gate's). */
void rest_metrics_grpc_auth_failed(void);
void rest_metrics_grpc_token_lookup(void); /* one went to the database */

/* Appends these metrics (called by rest_metrics_render). */
void rest_metrics_api_render(struct mu_buf *b);

#endif
