/*
 * store_metrics.h - the cluster-wide figures muster-scheduler's /metrics
 * reads from the database at scrape time (so they hold across leader
 * changes and every replica tells the same): jobs by state and tenant,
 * pending jobs by reason, GPUs by state and model, reservations, and the
 * counters kept in the tables themselves (runs started, preempted, jobs
 * requeued). Appends Prometheus text to `out`.
 *
 * Label cardinality: states and reasons are enums, tenants and GPU models
 * are what the admin configured (no per-job or per-user label).
 * Errors: 0 or a MU_E* code (nothing is appended on error).
 */
#ifndef STORE_METRICS_H
#define STORE_METRICS_H

#include "buf.h"
#include "db.h"
#include "error.h"

int store_metrics_scheduler(PGconn *c, struct mu_buf *out, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
