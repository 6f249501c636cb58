/*
 * store_sched.h - the scheduler's database side: leader election with
 * fencing, the cycle transaction (time-based work, snapshot load, decision
 * commit) and accounting.
 *
 * Leadership is the session-level advisory lock STORE_SCHED_LOCK_KEY held by
 * the very session that writes every decision, plus the lease row
 * scheduler_lease (migration 020) renewed every second. Every cycle runs in
 * one transaction that starts and ends by checking that this session holds
 * the lock and the lease names the leader's epoch and backend pid
 * (store_sched_cycle_begin/commit): a leader whose session was terminated
 * cannot write at all, and one whose epoch was superseded steps down.
 *
 * Agent contract (what the agent side, or a test by SQL, drives):
 *   runs.state STARTING -> RUNNING (set started_at), then the run ends by
 *   setting ended_at (+ exit_code / exit_signal) and, for a run that was not
 *   ordered stopped, state COMPLETED or FAILED; then NOTIFY muster_sched,
 *   'run:<id>'. For a STOPPING run (stop_reason cancel|preempt|timeout|
 *   node_fail) setting ended_at confirms the stop. The scheduler finishes
 *   ended runs (store_sched_finish_runs).
 *
 * All functions take a PGconn owned by the caller (store_db_connect). They
 * return 0 or a negative MU_E* code; MU_EUNAVAIL means the session is gone
 * or the server is unavailable, MU_ENOTLEADER that leadership was lost.
 * Not thread-safe per connection.
 */
#ifndef STORE_SCHED_H
#define STORE_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"
#include "error.h"

/* "muster" + 0x0020: the leader lock (session-level, never transaction-level). */
#define STORE_SCHED_LOCK_KEY INT64_C(0x6d75737465720020)

/* ---- election ---------------------------------------------------------- */

/* LISTEN muster_sched on this session. */
int store_sched_listen(PGconn *c, struct mu_error *err) __attribute__((warn_unused_result));

/*
 * Waits up to timeout_ms for the socket, consumes input and counts
 * notifications on any channel into *n, and those whose payload starts
 * with "submit:" also into *n_submit (may be NULL); both are added to.
 * Returns 0, or MU_EUNAVAIL when the connection broke.
 */
int store_sched_wait(PGconn *c, int timeout_ms, int *n, int *n_submit);

/*
 * Tries the leader lock once (pg_try_advisory_lock). On success bumps the
 * lease epoch, records holder/backend pid and sets *epoch; *leader = true.
 * Never call it again on a session that leads (the lock is re-entrant).
 */
int store_sched_try_lead(PGconn *c, const char *holder, bool *leader, int64_t *epoch,
			 struct mu_error *err) __attribute__((warn_unused_result));

struct store_sched_lease {
	int64_t epoch;
	char holder[128];
	int lease_pid;     /* backend pid recorded in the lease row, 0 when none */
	int lock_pid;      /* backend pid that holds the advisory lock now, 0 when free */
	double age_s;      /* seconds since renewed_at on the server's clock; -1 never */
	int lease_timeout; /* settings.lease_timeout, seconds */
};

/* Reads the lease row, the lock holder and settings.lease_timeout. */
int store_sched_lease_get(PGconn *c, struct store_sched_lease *out, struct mu_error *err)
	__attribute__((warn_unused_result));

/* pg_terminate_backend(pid) of a stale leader session. *done = true when it was terminated. */
int store_sched_terminate(PGconn *c, int pid, bool *done, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * Renews the lease outside a cycle: UPDATE ... WHERE epoch = $epoch AND
 * backend_pid = pg_backend_pid(). MU_ENOTLEADER when the row is not ours.
 */
int store_sched_renew(PGconn *c, int64_t epoch, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * The same from another session (the leader's lease heartbeat thread):
 * renews only while `leader_pid` (the leader's backend, see
 * store_sched_backend_pid) still holds the lock and the lease names it.
 */
int store_sched_renew_for(PGconn *c, int64_t epoch, int leader_pid, struct mu_error *err)
	__attribute__((warn_unused_result));
int store_sched_backend_pid(PGconn *c);

/* ---- the cycle transaction --------------------------------------------- */

/* BEGIN, then checks the fence: this session
 * holds the lock and the lease names our epoch and session. On
 * MU_ENOTLEADER nothing was written and the transaction is rolled back. */
int store_sched_cycle_begin(PGconn *c, int64_t epoch, struct mu_error *err)
	__attribute__((warn_unused_result));
/* Checks the fence again, then COMMIT. */
int store_sched_cycle_commit(PGconn *c, int64_t epoch, struct mu_error *err)
	__attribute__((warn_unused_result));
void store_sched_cycle_rollback(PGconn *c);

struct store_sched_settings {
	char levels[4][64];    /* settings.topology_levels, outermost first */
	int nlevels;
	int heartbeat_timeout; /* s */
	int half_life;         /* s */
	int reservation_depth;
	int max_age;           /* s */
	double weight_fairshare, weight_age, weight_size, weight_xfactor;
	int64_t starve_after;  /* s; 0 = off */
	bool predict_runtimes;
	int lease_timeout;     /* s */
	int64_t now;           /* the transaction's now(), unix seconds */
};
int store_sched_settings_load(PGconn *c, struct store_sched_settings *out, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * Time-based and failure work, inside the cycle transaction. Each adds the
 * count of rows it changed to *n, writes events and NOTIFYs muster_agents
 * for nodes whose desired runs changed.
 *   mark_down:   up nodes with last_heartbeat older than heartbeat_timeout
 *                -> up=false (node.down); their live runs -> STOPPING node_fail,
 *                except elastic runs (jobs.min_nodes < runs.nodes): the policy
 *                core decides those in the same cycle (shrink when the kept
 *                nodes still reach min_nodes, else stop as node_fail)
 *   sync_running: jobs STARTING whose live run is RUNNING -> RUNNING
 *   timeouts:    runs past started_at (or created_at) + time_limit -> STOPPING timeout
 *   expire_stops: STOPPING runs past stop_requested_at + grace_period + margin_s
 *                -> ended_at = now() (the scheduler ends them itself)
 *   finish_runs: live runs with ended_at -> final state, allocations freed,
 *                user_runtimes (the user's last two actual run times, for runs
 *                ending COMPLETED, FAILED or TIMEOUT),
 *                usage_records + usage_decayed (GPU-seconds: runs.nodes x
 *                gpus_per_node x duration + shrunk_gpu_seconds), job ended or requeued
 *                (node_fail: while retries < max_retries, retries+1;
 *                 preempt: always), events.
 */
int store_sched_mark_down(PGconn *c, int heartbeat_timeout, int *n, struct mu_error *err)
	__attribute__((warn_unused_result));
int store_sched_sync_running(PGconn *c, int *n, struct mu_error *err) __attribute__((warn_unused_result));
/* Pending jobs whose begin time (Slurm --begin) has come: their reason
 * BeginTime becomes Priority, so that the tick that finds them (*n) runs a
 * full cycle and they start within a tick of it (migration 130's index). */
int store_sched_begin_due(PGconn *c, int *n, struct mu_error *err) __attribute__((warn_unused_result));
int store_sched_timeouts(PGconn *c, int *n, struct mu_error *err) __attribute__((warn_unused_result));
int store_sched_expire_stops(PGconn *c, int margin_s, int *n, struct mu_error *err)
	__attribute__((warn_unused_result));
int store_sched_finish_runs(PGconn *c, int half_life, int *n, struct mu_error *err)
	__attribute__((warn_unused_result));

/* ---- snapshot ----------------------------------------------------------- */

struct store_sched_node {
	int64_t id;
	char *name, *address, *topology, *gpu_model; /* owned by the snapshot */
	int gpu_count;
	bool up, drain;
	bool fabric_fault;     /* a training-fabric link is down (multi-node runs fail) */
	uint64_t healthy_mask; /* bit i = GPU index i present and healthy (indices < 64) */
};

struct store_sched_alloc {
	int64_t run_id, node_id;
	int node_rank, gpu_index;
};

struct store_sched_run {
	int64_t id, job_id, tenant_id;
	char *user;
	int priority_class_id;
	int nodes, gpus_per_node, time_limit;
	int min_nodes; /* the job's min_nodes when elastic (< its nodes), else 0 */
	int64_t start; /* started_at, else created_at: unix s */
	int predicted_runtime; /* s, planned at start when shorter than the limit; 0 = none */
	bool stopping;
	size_t alloc_first, alloc_count; /* slice of snap->allocs (sorted by run, rank) */
	int64_t array_job_id; /* the job's array (its first task's id); 0 = none */
};

struct store_sched_job {
	int64_t id, tenant_id;
	char *user, *gpu_model, *topology_required, *topology_preferred, *dependencies; /* deps: JSON
	           text, for reading only: the typed edges are snap->edges[dep_first .. +dep_count) */
	char *pending_reason, *pending_message;
	int priority_class_id;
	int nodes, min_nodes, gpus_per_node, time_limit, retries;
	int64_t created_at, planned_start; /* unix s; planned_start 0 = none */
	int64_t array_job_id; int array_throttle; /* job arrays: 0 = none */
	bool names_singleton; /* dependencies' text names "singleton" (a superset of the jobs that have one) */
	int64_t singleton_blocker; /* singleton dependency: an earlier active job of the same
	                              tenant, user and name; 0 = none */
	size_t dep_first, dep_count; /* slice of snap->edges */
};

/* One dependency of a pending job, typed (jobs.dependencies as rows). */
enum store_sched_dep_type { STORE_SCHED_AFTEROK = 0, STORE_SCHED_AFTERANY, STORE_SCHED_AFTERNOTOK };
struct store_sched_edge {
	int64_t job_id;                 /* the pending job */
	int64_t target;                 /* the job it waits on */
	enum store_sched_dep_type type;
};

struct store_sched_tenant {
	int64_t id, parent_id; /* parent 0 for root */
	char *name;
	int shares;
};

struct store_sched_quota {
	int64_t tenant_id;
	char *gpu_model;
	int guaranteed_gpus, max_gpus, max_running_jobs; /* -1 = no limit */
};

struct store_sched_class {
	int id, priority, grace_period;
	bool preemptible;
	char *name;
};

struct store_sched_usage {
	int64_t tenant_id;
	char *user;
	double value; /* decayed to the snapshot's now */
};

/* A user's last actual run times (user_runtimes), newest first. */
struct store_sched_runtime {
	int64_t tenant_id;
	char *user;
	int n;          /* 0..2 */
	int recent[2];  /* s */
};

struct store_sched_depstate {
	int64_t job_id;
	char *state;
	int exit_code; /* -1 when NULL */
};

struct store_sched_snap {
	struct store_sched_settings settings;
	struct store_sched_node *nodes; size_t nnodes;
	struct store_sched_alloc *allocs; size_t nallocs;
	struct store_sched_run *runs; size_t nruns;
	struct store_sched_job *jobs; size_t njobs; /* PENDING, not held, by id */
	struct store_sched_tenant *tenants; size_t ntenants;
	struct store_sched_quota *quotas; size_t nquotas;
	struct store_sched_class *classes; size_t nclasses;
	struct store_sched_usage *usage; size_t nusage;
	struct store_sched_runtime *runtimes; size_t nruntimes; /* by tenant, user */
	struct store_sched_depstate *deps; size_t ndeps; /* states of jobs named in dependencies, by id */
	struct store_sched_edge *edges; size_t nedges;   /* pending jobs' dependencies, by job, order */
	void *mem; /* internal */
};

/* Loads everything the policy core needs, inside the cycle transaction.
 * The snapshot owns all its memory: store_sched_snap_release frees it.
 * store_sched_snap_load_settings uses `set` (already read in this
 * transaction) instead of reading the settings again. */
int store_sched_snap_load(PGconn *c, struct store_sched_snap *snap, struct mu_error *err)
	__attribute__((warn_unused_result));
int store_sched_snap_load_settings(PGconn *c, const struct store_sched_settings *set,
				   struct store_sched_snap *snap, struct mu_error *err)
	__attribute__((warn_unused_result));
void store_sched_snap_release(struct store_sched_snap *snap);

/*
 * The leader's kept snapshot: loaded whole once, then refreshed each cycle
 * with only the rows that changed since the last refresh. A row changed
 * when it was written by a transaction the last refresh could not see: its
 * change column (chg, migration 210: the writer's xid8, by default and
 * trigger, indexed) is at or after the xmin of the database snapshot taken
 * just before that refresh read anything (pg_current_snapshot; a superset:
 * a row read twice is merged twice, to the same result). Changed are read:
 * jobs (pending, or gone from pending), the singleton blockers of the
 * pending jobs that name one, the changed ones' typed dependencies and the states
 * of the jobs they name, live runs (a changed run, allocation or job) with
 * their allocations, nodes (a changed node or GPU row), and pending jobs
 * whose begin time came since. Tenants, quotas, classes, decayed usage and
 * run-time histories (small) and the settings are read whole every time.
 * Deleted rows leave no version behind: the node count is checked (a
 * difference loads whole); jobs, runs and allocations are never deleted.
 * A refresh loads whole after store_sched_keep_reset (a new leadership
 * term, a cycle rolled back: its reads may have seen its own writes), when
 * nothing is kept, or on a gap (the node count, an xid bound that went
 * backwards). The result equals a whole load in the same
 * transaction field for field (unit.store.sched_keep).
 * Ownership: store_sched_keep_new returns a new object (store_sched_keep_free;
 * NULL is a no-op); *snap from a refresh is borrowed until the next
 * refresh, reset or free.
 */
struct store_sched_keep;
struct store_sched_keep *store_sched_keep_new(void);
void store_sched_keep_free(struct store_sched_keep *k);
void store_sched_keep_reset(struct store_sched_keep *k);

struct store_sched_keep_stats {
	bool whole;          /* this refresh loaded everything */
	const char *why;     /* why whole ("reset": nothing kept, "nodes", "xid"), static; NULL when not */
	size_t jobs, runs, nodes; /* rows read as changed (not whole) */
};

/* Refreshes (or loads) the kept snapshot inside the cycle transaction, with
 * `set` read in it. */
int store_sched_keep_refresh(PGconn *c, const struct store_sched_settings *set, struct store_sched_keep *k,
			     const struct store_sched_snap **snap, struct store_sched_keep_stats *st,
			     struct mu_error *err) __attribute__((warn_unused_result));

/* ---- decisions ------------------------------------------------------------ */

struct store_sched_start {
	int64_t job_id;
	int nnodes, gpus_per_node; /* time limit and grace period come from the job and its class */
	int predicted_runtime;     /* s, when planned with a prediction shorter than the limit; 0 = none */
	const int64_t *node_ids; /* borrowed: nnodes, index = rank */
	const int *gpus;         /* borrowed: nnodes * gpus_per_node, rank-major */
};

struct store_sched_pending {
	int64_t job_id;
	const char *reason, *message; /* borrowed */
	int64_t planned_start;        /* unix s, 0 = none */
};

/* An elastic run that keeps running on part of its allocation. */
struct store_sched_shrink {
	int64_t run_id;
	int nkeep;
	const int64_t *keep_node_ids; /* borrowed: the nodes it keeps (any order) */
};

struct store_sched_decisions {
	const struct store_sched_start *starts; size_t nstarts;
	const struct store_sched_pending *pending; size_t npending; /* only changed ones */
	const int64_t *preempt_runs; size_t npreempt; /* -> STOPPING, stop_reason preempt */
	const int64_t *fail_runs; size_t nfail_runs;  /* -> STOPPING, stop_reason node_fail */
	const struct store_sched_pending *fail_jobs; size_t nfail_jobs; /* PENDING -> FAILED
	                                               (e.g. DependencyNeverSatisfied) */
	const struct store_sched_shrink *shrinks; size_t nshrinks; /* elastic runs shrunk in place */
};

/*
 * Writes one cycle's decisions inside the cycle transaction: runs (epoch
 * stamped) + run_allocations with ranks, master_addr (rank 0's address) and
 * master_port, jobs -> STARTING, pending reasons, preemption orders (runs ->
 * STOPPING, stop_reason preempt or node_fail), jobs that can never run ->
 * FAILED, events, NOTIFY muster_agents per node.
 * A job no longer PENDING (cancelled meanwhile) is skipped. *started gets
 * the number of runs created.
 * Shrinks: the run's allocation rows on nodes it does not keep turn
 * live = false (their GPUs are free in this very transaction), runs.nodes
 * becomes the kept count, runs.shrunk_gpu_seconds gains what the lost GPUs
 * used since the run started (finish_runs adds it to the usage record), one
 * event run.shrunk {from, to, lost: [node names], epoch}, NOTIFY
 * muster_agents for every node of the run (the lost ones stop their part,
 * the kept ones rewrite the hostfile). A run no longer live and running, or
 * one that would keep no node, is left alone. A shrunk run whose kept nodes
 * all reported their part exited 0 already is ended COMPLETED (no report
 * is coming any more) and finished by the next cycle.
 */
int store_sched_apply(PGconn *c, int64_t epoch, const struct store_sched_decisions *d, int *started,
		      struct mu_error *err) __attribute__((warn_unused_result));

/*
 * The leader's own reason writes, kept without reading them back (it
 * rewrites up to 5000 a cycle: read back, they would be most of every
 * refresh). Before store_sched_apply(d): store_sched_keep_lock_pending
 * row-locks d's pending jobs and finds those unchanged since the refresh
 * read them. After it, in the same transaction: store_sched_keep_note_pending
 * sets their written reasons in the kept snapshot, and the next refresh
 * does not read them while their last version is this write. A job also
 * started or failed, or changed by another writer since the read, is read
 * again. Where the transaction does not commit, store_sched_keep_reset.
 */
int store_sched_keep_lock_pending(PGconn *c, struct store_sched_keep *k, const struct store_sched_decisions *d,
				  struct mu_error *err) __attribute__((warn_unused_result));
int store_sched_keep_note_pending(PGconn *c, struct store_sched_keep *k, const struct store_sched_decisions *d,
				  struct mu_error *err) __attribute__((warn_unused_result));

struct store_sched_stats {
	double cycle_ms, load_ms, commit_ms;
	int pending, running, started, preempted, ended;
};
int store_sched_record_cycle(PGconn *c, const struct store_sched_stats *st, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
