/*
 * ops_sched.h - the scheduler's read operations, written once for REST
 * (api/rest_sched.c: GET /v1/scheduler, GET /v1/jobs/{id}/explain,
 * POST /v1/jobs/dry-run, GET /v1/usage, GET /v1/fairshare) and gRPC (api/grpc/grpc_sched.c:
 * muster.v1.SchedulerService): each takes the caller's principal and
 * applies its tenant scope, so explain and usage never show another
 * tenant's job or usage to a non-admin (its job is MU_ENOTFOUND, its usage
 * absent) and fair share lists the caller's subtree only.
 *
 * Results are plain structs in the caller's arena for either codec; errors
 * are MU_E* codes with err filled (the same fields on both faces).
 * Database worker threads only, but ops_usage_args (pure).
 */
#ifndef MU_OPS_SCHED_H
#define MU_OPS_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"
#include "ops_principal.h"
#include "store_job.h"
#include "store_sched_report.h"

/* The scheduler's leader, epoch and last cycle (cluster-wide: any reader). */
int ops_sched_status(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		     struct store_sched_status *out, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Why job `id` waits (store_sched_explain_get in the caller's scope). */
int ops_sched_explain(PGconn *db, struct mu_arena *a, const struct ops_principal *p, int64_t id,
		      struct store_sched_explain *out, struct mu_error *err)
	__attribute__((warn_unused_result));

struct ops_dry_run {
	bool feasible;
	char planned_start[40]; /* RFC 3339 UTC, "" when not feasible */
	const char *reason;     /* a pending reason's name, NULL: would start now */
	char message[160];
};

/*
 * When would *j start (decoded by ops_submit_decode: the owner rule is
 * applied): the submit's checks (store_job_check, with the submit's
 * problem fields), then the policy core's answer from the process's plan
 * (service/plan); nothing written.
 */
int ops_sched_dry_run(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		      struct store_job *j, struct ops_dry_run *out, struct mu_error *err)
	__attribute__((warn_unused_result));

struct ops_usage_args {
	const char *from, *to; /* RFC 3339, NULL = 30 days ago / now */
	bool by_user;
};

/* Checks a usage request (NULL or "" = absent; gRPC passes ""): from/to
 * must start with a full date (MU_EINVAL naming "from"/"to"), group_by
 * is "tenant" or "user" (MU_EINVAL naming "group_by"). Pure. */
int ops_usage_args(const char *from, const char *to, const char *group_by,
		   struct ops_usage_args *out, struct mu_error *err) __attribute__((warn_unused_result));

struct ops_usage {
	char *from, *to; /* the window answered */
	bool by_user;
	struct store_sched_usage_row *rows;
	size_t n;
};

/* GPU-seconds per tenant (or tenant and user) in the caller's scope. */
int ops_sched_usage(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		    const struct ops_usage_args *args, struct ops_usage *out, struct mu_error *err)
	__attribute__((warn_unused_result));

struct ops_fairshare_row {
	const char *tenant, *path;
	const char *user;    /* NULL for a tenant's row */
	int64_t shares;
	double norm_shares, raw_usage, decayed_usage, norm_usage;
	double level_fs;     /* INFINITY: no usage at its level (REST: null) */
	double fairshare;    /* users only; 0 for tenants */
};

/* The association tree (tenants, then users) with the fair-share factors
 * computed over the whole tree; rows outside the caller's subtree left out. */
int ops_sched_fairshare(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
			struct ops_fairshare_row **rows, size_t *n, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
