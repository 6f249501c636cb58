/*
 * plan.h - dry-run answers from one planned snapshot per process.
 *
 * A struct plan keeps the last planning snapshot it loaded (store ->
 * scheduler_snap -> the core's explainer, see snapshot.h and sched.h) with
 * the planning generation it was loaded at (store_plan.h). The leader bumps
 * that generation in every cycle that planned, so a dry-run answers from
 * the kept plan while the generation has not moved, and one request
 * reloads when it has: it refreshes one of two kept store snapshots
 * (store_sched_keep: the rows changed since it was last read), in turn, so
 * the other stays valid for the plan being replaced. While one request
 * reloads, the others answer from the plan being replaced (at most one
 * generation old); with none kept yet they wait for it. A plan older than max_age_ms is reloaded even at the
 * same generation (changes no cycle followed, such as an idle cluster's
 * clock).
 *
 * Threading: plan_dry_run may be called from any number of threads, each
 * with its own connection. Ownership: plan_new returns a *new* object
 * (plan_free; NULL is a no-op) that owns every snapshot it keeps.
 */
#ifndef PLAN_H
#define PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"
#include "error.h"
#include "sched.h"
#include "store_job.h"

struct plan;

struct plan_opts {
	int max_age_ms; /* <= 0: 30000 */
};

struct plan *plan_new(const struct plan_opts *o);
void plan_free(struct plan *p);

/* A dry-run's answer. */
struct plan_answer {
	bool feasible;
	int64_t planned_start;   /* unix s; SCHED_NEVER when it can never run */
	enum sched_reason reason; /* SCHED_REASON_NONE: would start now */
	char message[160];
	int64_t generation;      /* the planning generation answered from */
	bool reloaded;           /* this call loaded the snapshot */
};

/*
 * Answers when job `j` would start. `j` has passed store_job_check, which
 * gave `tenant_id`, `class_id` and the states of its dependencies
 * (`states`, j->ndeps of them, in order). Returns 0, or a negative MU_E*
 * code with err filled (the database failed, or the core refused the
 * snapshot: MU_EINTERNAL).
 */
int plan_dry_run(struct plan *p, PGconn *c, const struct store_job *j, int64_t tenant_id, int64_t class_id,
		 const struct store_job_depstate *states, struct plan_answer *out, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
