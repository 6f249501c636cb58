/*
 * store_logs.h - where a job's process output lives: the run, the node of
 * a node rank, the processes per node (for GET /v1/jobs/{id}/logs and
 * JobService.GetLogs; the bytes themselves come from the node's agent).
 */
#ifndef MU_STORE_LOGS_H
#define MU_STORE_LOGS_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"

struct store_log_target {
	int64_t job_id;
	const char *job_state;   /* arena */
	int64_t run_id;
	int64_t attempt;
	const char *run_state;   /* arena */
	bool run_live;           /* the run may still write output */
	const char *node;        /* arena: the node of node_rank */
	int64_t nodes;           /* node ranks the run had: 0..nodes-1 */
	int64_t procs_per_node;
};

/*
 * Resolves job `job_id` (tenant `scope` as every job read: NULL = all;
 * outside it MU_ENOTFOUND "no such job"), its run `run_id` (0 = the latest
 * attempt; another job's run is MU_ENOTFOUND field run_id) and the node
 * with rank `node_rank` in that run (MU_ERANGE field node_rank when the run
 * has no such rank). A job that never started answers MU_ESTATE.
 * Strings in *out are allocated from `a`.
 */
int store_logs_target(PGconn *c, struct mu_arena *a, const char *scope, int64_t job_id,
		      int64_t run_id, int64_t node_rank, struct store_log_target *out,
		      struct mu_error *err) __attribute__((warn_unused_result));

#endif
