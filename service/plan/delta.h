/*
 * delta.h - the change hint (sched.h, struct sched_delta) between one core
 * snapshot and the next, found by comparing them, so that a leader that
 * plans cycle after cycle on one struct sched_decisions lets the core keep
 * its view of the cluster and update only what changed.
 *
 * plan_delta_next compares `s` with the snapshot of the previous call and
 * returns the hint for `s` (borrowed from `d` until the next call), or NULL
 * where only a full rebuild is allowed: the first call, after
 * plan_delta_reset, or when `s` changed something the core's promise does
 * not cover (settings other than predict, the tenant tree or quotas, a
 * user inserted rather than appended, nodes added, removed or reordered).
 * It then remembers `s` (a copy of what it compares, nothing borrowed).
 * A run whose fields changed is reported removed and added. The core's
 * decisions with the hint are exactly those without it (sched.h).
 *
 * Ownership: plan_delta_new returns a *new* object (plan_delta_free; NULL
 * is a no-op). Not thread-safe per object.
 */
#ifndef PLAN_DELTA_H
#define PLAN_DELTA_H

#include <stdint.h>

#include "sched.h"

struct plan_delta;

struct plan_delta *plan_delta_new(void);
void plan_delta_free(struct plan_delta *d);

/*
 * A fingerprint of everything in `s` a plan depends on except the clock:
 * settings, nodes, runs, pending jobs with their dependencies, tenants with
 * their quotas, users (not `now`, nor usage, which decays with it). Equal
 * fingerprints of two snapshots mean a plan of one answers as a plan of
 * the other would, up to the clock.
 */
uint64_t plan_snapshot_fingerprint(const struct sched_snapshot *s);
void plan_delta_reset(struct plan_delta *d);
const struct sched_delta *plan_delta_next(struct plan_delta *d, const struct sched_snapshot *s);

#endif
