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
#include "delta.h"
#include "sched.h"
#include "store_sched.h"

/*
 * What a leader keeps from one cycle to the next: the core's decisions
 * object (its view of the cluster lives in it) and the comparison copy of
 * the last snapshot (plan/delta.h), so that each cycle passes the core
 * what changed (sched_snapshot.delta) instead of having it rebuild its view,
 * and the database snapshot, refreshed with only the rows changed since the
 * last cycle (store_sched_keep_refresh) instead of loaded whole.
 * The core's decisions are exactly those of a rebuild (unit.plan.delta).
 * A full rebuild (and a whole load) happens on the first cycle of a
 * leadership term (another epoch), after a failed cycle, and at least every
 * rebuild_every_ms; a whole load also on a gap the refresh finds.
 * Owned by the caller: scheduler_keep_init / scheduler_keep_release.
 */
struct scheduler_keep {
	struct sched_decisions dec;
	struct plan_delta *delta;
	struct store_sched_keep *db; /* the kept database snapshot (store_sched.h) */
	int64_t epoch;
	double last_rebuild_ms;
	long long rebuild_every_ms; /* <= 0: every cycle */
	long long cycles, hinted;   /* cycles planned, and how many of them with a hint */
	uint64_t fingerprint;       /* plan_snapshot_fingerprint of the last committed cycle */
	bool have_fingerprint;
};
void scheduler_keep_init(struct scheduler_keep *k, long long rebuild_every_ms);
void scheduler_keep_release(struct scheduler_keep *k);

struct scheduler_cycle_opts {
	int stop_margin_s; /* beyond the grace period before the scheduler ends a stop itself */
	bool full;         /* false: a tick; the snapshot and the core run only when the
	                      time-based work changed something */
	bool time_work;    /* false: skip the time-based work (a wake by submits only;
	                      ticks do it at least every --tick) */
	struct scheduler_keep *keep; /* NULL: the core rebuilds its view every cycle */
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
