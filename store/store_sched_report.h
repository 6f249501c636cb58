/*
 * store_sched_report.h - read-only queries behind the scheduler's REST
 * endpoints: GET /v1/scheduler, /v1/usage, /v1/fairshare,
 * /v1/jobs/{id}/explain and the snapshot for POST /v1/jobs/dry-run.
 *
 * Strings returned are allocated in the caller's arena (valid until it is
 * reset). `scope` is the caller's subtree path, NULL = everything (see
 * api/rest.h). Functions return 0 or a negative MU_E* code with err filled.
 * Timestamps are RFC 3339 UTC text ("2026-11-30T06:14:40.123Z").
 */
#ifndef STORE_SCHED_REPORT_H
#define STORE_SCHED_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"
#include "store_sched.h"

struct store_sched_status {
	char *leader;           /* application_name of the lock holder named by the lease; NULL = none */
	int64_t epoch;
	char *lease_expires_at; /* NULL when never renewed */
	bool has_cycle;
	char *last_cycle_at;
	double last_cycle_ms, last_load_ms, last_commit_ms;
	int64_t cycles;
	int pending, running, started, preempted, ended;
};
int store_sched_status_get(PGconn *c, struct mu_arena *a, struct store_sched_status *out,
			   struct mu_error *err) __attribute__((warn_unused_result));

struct store_sched_usage_row {
	char *tenant, *user; /* user NULL when grouped by tenant */
	int64_t gpu_seconds, runs;
};
/*
 * GPU-seconds of runs overlapping [from, to) (NULL = 30 days ago / now),
 * prorated to the window, per tenant (or per tenant and user); the GPUs an
 * elastic run lost count from its start to its (last) shrink. Bad
 * timestamps answer MU_EINVAL naming "from" or "to". *from_out and *to_out get
 * the window actually used.
 */
int store_sched_usage(PGconn *c, struct mu_arena *a, const char *scope, const char *from,
		      const char *to, bool by_user, char **from_out, char **to_out,
		      struct store_sched_usage_row **rows, size_t *n, struct mu_error *err)
	__attribute__((warn_unused_result));

struct store_sched_fs_tenant {
	int64_t id, parent_id; /* parent 0 = the root */
	char *name, *path;
	int shares;
};
struct store_sched_fs_user {
	int64_t tenant_id;
	char *user;
	double raw, decayed; /* GPU-seconds: all time, and decayed to now */
};
/* All tenants (root first) and every (tenant, user) with usage. */
int store_sched_fairshare_load(PGconn *c, struct mu_arena *a, struct store_sched_fs_tenant **t,
			       size_t *nt, struct store_sched_fs_user **u, size_t *nu,
			       struct mu_error *err) __attribute__((warn_unused_result));

struct store_sched_blocker {
	const char *kind; /* job | dependency | quota | node | reservation */
	int64_t job_id;   /* 0 = none */
	char *message;
};
struct store_sched_explain {
	int64_t job_id;
	char *state, *reason, *message, *planned_start; /* reason/planned_start NULL when none */
	struct store_sched_blocker *blockers;
	size_t nblockers;
};
/* MU_ENOTFOUND when the job does not exist or is outside `scope`. */
int store_sched_explain_get(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
			    struct store_sched_explain *out, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * Resolves a hypothetical job's tenant (visible in `scope`, else
 * MU_ENOTFOUND naming "tenant"), priority class (NULL = default; unknown ->
 * MU_EINVAL naming "priority_class") and time limit (0 = the class default).
 */
int store_sched_probe_resolve(PGconn *c, const char *scope, const char *tenant, const char *klass,
			      int64_t *tenant_id, int *class_id, int64_t *time_limit,
			      struct mu_error *err) __attribute__((warn_unused_result));

/* store_sched_snap_load in its own read-only REPEATABLE READ transaction. */
int store_sched_snap_load_ro(PGconn *c, struct store_sched_snap *snap, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
