/*
 * snapshot.h - turns the database snapshot (store_sched.h) into the policy
 * core's snapshot (sched.h), and the core's decisions back into database
 * decisions. Used by muster-scheduler's cycle and by the API's explain and
 * dry-run, so both see the same picture.
 *
 * Ownership: struct scheduler_snap borrows the store snapshot it was built
 * from (which must outlive it) and owns everything else; release with
 * scheduler_snap_release. Not thread-safe per object.
 */
#ifndef SCHEDULER_SNAPSHOT_H
#define SCHEDULER_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "sched.h"
#include "store_sched.h"

struct scheduler_snap {
	struct sched_snapshot core;          /* what sched_cycle reads */
	const struct store_sched_snap *db;   /* borrowed */
	/* owned arrays behind core's const pointers */
	struct sched_node *nodes;
	struct sched_alloc *allocs;
	struct sched_run *runs;
	struct sched_job *jobs;
	struct sched_dep *deps;
	struct sched_tenant *tenants;
	struct sched_model_quota *model_quotas; /* per-model quota rows, sliced per tenant */
	struct sched_user *users;
	void *priv;                          /* id -> index maps */
};

/* Builds `out` from `db` (borrowed). Returns 0 or MU_EINVAL (with err) when
 * the database snapshot is inconsistent (e.g. no root tenant). */
int scheduler_snap_build(const struct store_sched_snap *db, struct scheduler_snap *out,
			 struct mu_error *err) __attribute__((warn_unused_result));
void scheduler_snap_release(struct scheduler_snap *s);

/* Index of tenant `id` in core.tenants, or -1. */
int scheduler_snap_tenant(const struct scheduler_snap *s, int64_t id);
/* Index of the user (tenant index, name) in core.users, or -1. */
int scheduler_snap_user(const struct scheduler_snap *s, int tenant, const char *name);
/* Index of node `id` in core.nodes, or -1. */
int scheduler_snap_node(const struct scheduler_snap *s, int64_t id);
/* Level index of a topology level name, or -1 ("" -> -1). */
int scheduler_snap_level(const struct scheduler_snap *s, const char *name);

/*
 * The one job mapper: a pending job's row (`dj`, with its typed edges
 * `edges`, dj->dep_count of them) to the core's job `j`, for every pending
 * job of the snapshot and for a dry-run's probe alike. Dependency states
 * come from `states` (nstates, sorted by job id; a target not there is
 * missing) into `deps` (room for dj->dep_count). Classes, tenants, users
 * and topology levels resolve against `s`; an unknown tenant maps to the
 * root, an unknown class to priority 0, preemptible.
 */
void scheduler_snap_job(const struct scheduler_snap *s, const struct store_sched_job *dj,
			const struct store_sched_edge *edges, const struct store_sched_depstate *states,
			size_t nstates, struct sched_dep *deps, struct sched_job *j);

/*
 * Converts the core's decisions into database decisions. `out` and its
 * arrays are new (scheduler_decisions_release); strings inside point into
 * `d` and `s`, which must outlive it. Only verdicts that differ from what
 * the job row holds become pending updates.
 */
struct scheduler_decisions {
	struct store_sched_decisions db;
	struct store_sched_start *starts;
	struct store_sched_pending *pending, *fails;
	int64_t *preempt, *fail_runs;
	struct store_sched_shrink *shrinks;
	int64_t *keep_ids; /* the shrinks' kept node ids */
	int64_t *node_ids;
	int *gpus;
	size_t dropped; /* starts the core granted short (a core bug): not written */
};
void scheduler_decisions_from_core(const struct scheduler_snap *s, const struct sched_decisions *d,
				   struct scheduler_decisions *out);
void scheduler_decisions_release(struct scheduler_decisions *out);

#endif
