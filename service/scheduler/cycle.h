/*
 * cycle.h - one scheduling cycle of the leader, in one transaction:
 * fence + renew the lease, time-based and failure work (heartbeats, time
 * limits, stop deadlines, ended runs, accounting), snapshot load, the policy
 * core, the decisions, the cycle's figures; COMMIT. Any error rolls the
 * whole cycle back: the next one starts again from the database.
 */
#ifndef SCHEDULER_CYCLE_H
#define SCHEDULER_CYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"
#include "error.h"
#include "store_sched.h"

struct scheduler_cycle_opts {
	int stop_margin_s; /* beyond the grace period before the scheduler ends a stop itself */
	bool full;         /* false: a tick; the snapshot and the core run only when the
	                      time-based work changed something */
	bool time_work;    /* false: skip the time-based work (a wake by submits only;
	                      ticks do it at least every --tick) */
};

/*
 * *did_full (may be NULL) tells whether the snapshot and core ran.
 * Returns 0, MU_ENOTLEADER (fenced: step down), MU_EUNAVAIL (session lost:
 * reconnect) or another MU_E* code (the cycle was rolled back). `st` gets
 * the figures of a committed cycle.
 */
int scheduler_cycle_run(PGconn *c, int64_t epoch, const struct scheduler_cycle_opts *o,
			struct store_sched_stats *st, bool *did_full, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Milliseconds on the monotonic clock. */
double scheduler_now_ms(void);

#endif
