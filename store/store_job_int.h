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


/* The job columns every job query reads, in row order (store__job_row),
 * each with the part of enum store_job_part a list may leave out of them
 * (JOB_KEEP: always read). */
#define JOB_KEEP (-1)
#define JOB_COL_LIST(X)                                                                            \
	X(JOB_KEEP, "j.id") X(JOB_KEEP, ", j.state") X(JOB_KEEP, ", t.name")                           \
	X(JOB_KEEP, ", j.user_name") X(JOB_KEEP, ", j.name") X(JOB_KEEP, ", pc.name")                  \
	X(JOB_KEEP, ", j.nodes") X(JOB_KEEP, ", coalesce(j.min_nodes, 0)")                             \
	X(JOB_KEEP, ", j.gpus_per_node") X(JOB_KEEP, ", j.gpu_model") X(JOB_KEEP, ", j.procs_per_node") \
	X(JOB_KEEP, ", j.topology_required") X(JOB_KEEP, ", j.topology_preferred")                     \
	X(JOB_KEEP, ", j.time_limit") X(STORE_JOB_P_COMMAND, ", j.command::text")                      \
	X(STORE_JOB_P_ENV, ", j.env::text") X(STORE_JOB_P_LABELS, ", j.labels::text")                  \
	X(STORE_JOB_P_DEPENDENCIES, ", j.dependencies::text") X(STORE_JOB_P_WORKDIR, ", j.workdir")    \
	X(JOB_KEEP, ", j.max_retries") X(JOB_KEEP, ", j.retries") X(JOB_KEEP, ", j.pending_reason")    \
	X(STORE_JOB_P_PENDING_MESSAGE, ", j.pending_message")                                          \
	X(STORE_JOB_P_PLANNED_START, ", " TS("j.planned_start")) X(JOB_KEEP, ", j.exit_code")          \
	X(JOB_KEEP, ", j.end_reason") X(STORE_JOB_P_CREATED_AT, ", " TS("j.created_at"))               \
	X(STORE_JOB_P_STARTED_AT, ", " TS("j.started_at"))                                             \
	X(STORE_JOB_P_ENDED_AT, ", " TS("j.ended_at")) X(JOB_KEEP, ", t.path")                         \
	X(JOB_KEEP, ", coalesce(j.mem_per_node, 0)") X(JOB_KEEP, ", coalesce(j.cpus_per_node, 0)")     \
	LAUNCH_COL_LIST(X)                                                                             \
	X(STORE_JOB_P_OUTPUT, ", j.stdout_pattern") X(STORE_JOB_P_OUTPUT, ", j.stderr_pattern")        \
	X(JOB_KEEP, ", j.held") X(STORE_JOB_P_BEGIN, ", " TS("j.begin_at"))                            \
	X(STORE_JOB_P_ETAG, ", (extract(epoch FROM j.updated_at) * 1000000)::bigint")                  \
	X(JOB_KEEP, ", coalesce(j.array_job_id, 0)") X(JOB_KEEP, ", coalesce(j.array_task_id, 0)")     \
	X(JOB_KEEP, ", j.array_spec") X(JOB_KEEP, ", j.array_throttle")
/* jobs.launch (migration 110), one field each */
#define LAUNCH_COL_LIST(X)                                                                         \
	X(STORE_JOB_P_LAUNCH, ", coalesce(j.launch->>'launcher', 'none')")                             \
	X(STORE_JOB_P_LAUNCH, ", coalesce(j.launch->>'on_shrink', 'restart')")                         \
	X(STORE_JOB_P_LAUNCH, ", coalesce(j.launch#>>'{signal,name}', '')")                            \
	X(STORE_JOB_P_LAUNCH, ", coalesce((j.launch#>>'{signal,before}')::bigint, 0)")                 \
	X(STORE_JOB_P_LAUNCH, ", coalesce((j.launch#>>'{signal,batch_only}')::boolean, false)")
#define JOB_COL_SQL(part, sql) sql
#define JOB_COLS JOB_COL_LIST(JOB_COL_SQL)
#define JOB_COL_ONE(part, sql) +1
#define JOB_NCOLS (0 JOB_COL_LIST(JOB_COL_ONE)) /* 46 */
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
/* A cancel of a stopping run wins over a stop that would requeue the job
 * (requeue, preemption, a lost node with retries left): the job ends
 * CANCELLED when the run stops. A time limit's stop ends it anyway. */
#define CANCEL_STOP_REASON                                                                          \
	"stop_reason = CASE WHEN stop_reason IN ('', 'requeue', 'preempt', 'node_fail') THEN 'cancel'"  \
	" ELSE stop_reason END"

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
