/*
 * sched_metrics.h - muster-scheduler's /metrics (--metrics-addr): this
 * process's figures (cycle duration histogram, cycles, leader 0/1, epoch)
 * and, read from the database at scrape time, the cluster's
 * (store_metrics.h, plus the fair-share factor per tenant).
 *
 * Threading: the record functions are called by the loop thread; the
 * scrape runs on the metrics thread with its own database session.
 */
#ifndef SCHEDULER_SCHED_METRICS_H
#define SCHEDULER_SCHED_METRICS_H

#include <stdbool.h>
#include <stdint.h>

/* Starts serving (addr "" = off). Returns 0 or a MU_E* code (logged). */
int sched_metrics_start(const char *addr, const char *db_url);
void sched_metrics_stop(void);

void sched_metrics_cycle(double cycle_ms, bool full);
void sched_metrics_leader(bool leading, int64_t epoch);

#endif
