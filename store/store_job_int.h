/*
 * store_job_int.h - what the job files of store/ (store_job*.c,
 * store_jobctl.c) share: the job columns every job query reads and their
 * row decoder. Internal to store/.
 */
#ifndef STORE_JOB_INT_H
#define STORE_JOB_INT_H

#include <libpq-fe.h>

#include "store_int.h"
#include "store_job.h"


#define JOB_COLS                                                                                   \
	"j.id, j.state, t.name, j.user_name, j.name, pc.name, j.nodes, coalesce(j.min_nodes, 0),"   \
	" j.gpus_per_node, j.gpu_model, j.procs_per_node, j.topology_required,"                     \
	" j.topology_preferred, j.time_limit, j.command::text, j.env::text, j.labels::text,"         \
	" j.dependencies::text, j.workdir, j.max_retries, j.retries, j.pending_reason,"              \
	" j.pending_message, " TS("j.planned_start") ", j.exit_code, j.end_reason, "                 \
	TS("j.created_at") ", " TS("j.started_at") ", " TS("j.ended_at") ", t.path,"               \
	" coalesce(j.mem_per_node, 0), coalesce(j.cpus_per_node, 0)," LAUNCH_COLS ","                \
	" j.stdout_pattern, j.stderr_pattern, j.held, " TS("j.begin_at") ","                          \
	" (extract(epoch FROM j.updated_at) * 1000000)::bigint, coalesce(j.array_job_id, 0),"          \
	" coalesce(j.array_task_id, 0), j.array_spec, j.array_throttle"
/* jobs.launch (migration 110), one field each */
#define LAUNCH_COLS                                                                                \
	" coalesce(j.launch->>'launcher', 'none'), coalesce(j.launch->>'on_shrink', 'restart'),"    \
	" coalesce(j.launch#>>'{signal,name}', ''),"                                                 \
	" coalesce((j.launch#>>'{signal,before}')::bigint, 0),"                                      \
	" coalesce((j.launch#>>'{signal,batch_only}')::boolean, false)"
#define JOB_NCOLS 46
#define JOB_FROM                                                                                   \
	" FROM jobs j JOIN tenants t ON t.id = j.tenant_id"                                         \
	" JOIN priority_classes pc ON pc.id = j.priority_class_id"


/* What cancelling a PENDING job writes, shared by the lone, array and bulk
 * cancels: the row's SET list, and the job.cancelled event per row of CTE
 * `u` (id, tenant_id) with actor parameter `who` ("$N"). */
#define CANCEL_PENDING_SET                                                                          \
	"state = 'CANCELLED', ended_at = now(), updated_at = now(),"                                  \
	" end_reason = 'cancelled', pending_reason = '', pending_message = '', planned_start = NULL"
#define CANCELLED_EVENTS(who)                                                                       \
	"INSERT INTO events (kind, tenant_id, job_id, reason, data)"                                  \
	" SELECT 'job.cancelled', tenant_id, id, 'cancel', jsonb_build_object('by', " who "::text) FROM u"

/* Reads JOB_COLS of row `row` starting at column `b` into *j (strings in a). */
void store__job_row(struct mu_arena *a, const PGresult *r, int row, int b, struct store_job *j);
/* Every PENDING job of ids[0..n) in scope (but an array's first task when
 * keep_array_heads) cancelled as cancel_tx would, in one statement; done[k]
 * is set for each one cancelled. Inside the caller's transaction. */
int store__job_cancel_pending_in_tx(PGconn *c, const char *scope, const int64_t *ids, size_t n,
				    bool keep_array_heads, const char *who, bool *done,
				    struct mu_error *err);
/* store_job_cancel's work inside the caller's transaction (store_job_cancel_many). */
int store__job_cancel_in_tx(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
			    const char *who, struct store_job *out, struct mu_error *err);

#endif
