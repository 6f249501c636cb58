/*
 * store_job.h - jobs: group-committed submits, keyset-paginated lists,
 * get with runs and events, cancel.
 *
 * Every function takes a connection the caller owns and uses it alone (one
 * pool worker). Strings in returned structs live in the arena `a` passed.
 * Errors: 0 or a negative MU_E* code with `err` filled.
 *
 * Visibility: `scope` is the caller's subtree root path ("root/ml"), or
 * NULL for the whole tree. Jobs outside the scope are MU_ENOTFOUND.
 *
 * Ordering: every job insert holds the transaction-level advisory lock
 * STORE_JOB_INSERT_LOCK from id allocation to COMMIT, so job ids become
 * visible in increasing order and a keyset cursor (last id seen) never
 * skips a job that commits later with a smaller id.
 *
 * Events and NOTIFY: submit writes `job.submitted`, cancel `job.cancelled`
 * (PENDING) or `job.cancel_requested` (STARTING/RUNNING), each in the same
 * transaction, and `NOTIFY muster_sched, 'submit:<id>' | 'cancel:<id>'`.
 */
#ifndef STORE_JOB_H
#define STORE_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admit.h"
#include "alloc.h"
#include "db.h"
#include "error.h"

/* settings.job_spec_max_bytes when unset: command + env + workdir of a job
 * (admit.h's default, as SQL text; settings.def holds the same default). */
#define STORE_JOB_STR_(x) #x
#define STORE_JOB_STR(x) STORE_JOB_STR_(x)
#define STORE_JOB_SPEC_MAX ADMIT_SPEC_MAX
#define STORE_JOB_SPEC_MAX_S STORE_JOB_STR(ADMIT_SPEC_MAX)

#define STORE_JOB_INSERT_LOCK "7887321460016" /* pg_advisory_xact_lock key (bigint) */

/* A job: the input of a submit (fields marked "in") and every output. */
struct store_job {
	int64_t id;
	const char *state;
	const char *tenant;         /* in: name (required) */
	const char *user;           /* in */
	const char *name;           /* in */
	const char *priority_class; /* in: NULL = the default class */
	int64_t nodes;              /* in */
	int64_t min_nodes;          /* in: 0 = not elastic (null) */
	int64_t gpus_per_node;      /* in */
	const char *gpu_model;      /* in: "" = any */
	int64_t procs_per_node;     /* in */
	int64_t mem_per_node;       /* in: bytes, 0 = no limit (null) */
	int64_t cpus_per_node;      /* in: 0 = no limit (null) */
	const char *topo_required;  /* in: "" = unset */
	const char *topo_preferred; /* in: "" = unset */
	int64_t time_limit;         /* in: 0 = the class default; seconds */
	const char *command;        /* in: JSON text of the argv array */
	const char *env;            /* in: JSON text of the env object */
	const char *labels;         /* in: JSON text of the labels object */
	const char *dependencies;   /* in: JSON text of the dependency array */
	const int64_t *dep_ids;     /* in: the job ids in `dependencies` */
	size_t ndeps;
	const char *workdir;        /* in */
	int64_t max_retries;        /* in */
	int64_t retries;
	const char *pending_reason; /* NULL unless PENDING */
	const char *pending_message;
	const char *planned_start;  /* NULL = null */
	bool has_exit_code;
	int64_t exit_code;
	const char *end_reason;
	const char *created_at;
	const char *started_at;     /* NULL = null */
	const char *ended_at;       /* NULL = null */
	const char *tenant_path;
	const char *launcher;       /* in: none | torchrun | deepspeed | accelerate ("" none) */
	const char *on_shrink;      /* in: restart | keep ("" restart) */
	const char *signal_name;    /* in: pre-timeout signal "USR1" ("" none) */
	int64_t signal_before;      /* in: seconds ahead of the time limit */
	bool signal_batch_only;     /* in: Slurm's "B:" */
	const char *stdout_pattern; /* in: sbatch -o ("" = none), see migration 135 */
	const char *stderr_pattern; /* in: sbatch -e ("" = none) */
	const char *runs;           /* get only: JSON text of the runs array, else NULL */
	const char *events;         /* get only: JSON text of the events array, else NULL */
	/* changing jobs (store_jobctl.c) */
	bool held;                  /* in: submit held (pending reason Held) */
	int64_t begin;              /* in: earliest start, Unix seconds; 0 = at once */
	const char *begin_at;       /* out: RFC 3339, NULL = none */
	int64_t etag;               /* out: the version (updated_at in microseconds) */
	/* job arrays: set on every task of one; array_job_id 0 = not an array */
	int64_t array_job_id;       /* out: the id of the array's first task */
	int64_t array_task_id;      /* in/out */
	const char *array_spec;     /* in/out: "0-15%4" as given */
	int64_t array_throttle;     /* in/out: K of %K, 0 = none */
};

/*
 * One submit request: one job (POST /v1/jobs) or many (the batch, all or
 * nothing). Requests are written in groups: store_job_submit_group takes
 * any number of them and writes all the valid ones in ONE transaction
 * (one COPY), then sets each one's `rc`. A bad request fails
 * alone (its rc < 0, err filled; an admission problem also in `problem`); the others
 * commit. Nothing is answered before COMMIT returned.
 */
struct store_job_submit {
	struct store_job *jobs;     /* in: n jobs; out: filled (id, created_at, ...) */
	size_t n;
	bool batch;                 /* many jobs (POST /v1/jobs/batch) */
	const char *scope;          /* caller's subtree path, NULL = all */
	const char *idem_key;       /* Idempotency-Key or NULL (single submits only) */
	const char *request_sha256; /* hex digest of the body when idem_key is set */
	struct mu_arena *arena;     /* for the output strings */
	/*
	 * Deferred decoding (a batch): when `decode` is set, jobs[] hold
	 * nothing yet. A request alone in its group is decoded on the worker
	 * thread chunk by chunk, decode(s, from, to) in order, while the rows
	 * already decoded are written (the COPY streams). If that fails in any
	 * way (decoding, a check, the quota), the transaction is rolled back,
	 * decode_all(s) decodes every job the strict way (its error is the
	 * request's), and the request is then checked and written as any other:
	 * the error is always the one decoding all jobs first, then checking
	 * them, would give. In a group, decode_all runs before the transaction.
	 * Both return 0 or a MU_E* code with s->err set.
	 */
	int (*decode)(struct store_job_submit *s, size_t from, size_t to);
	int (*decode_all)(struct store_job_submit *s);
	void *decode_arg;
	bool decoded;               /* set by the store once jobs[] are all decoded */
	/* Optional: called on the worker once the request's jobs are written
	 * (ids set), while the database still works on the transaction, so
	 * that the reply is built meanwhile; `replied` tells it was called.
	 * rc may still turn < 0 afterwards (then the reply is not used). */
	void (*reply)(struct store_job_submit *s);
	void *reply_arg;
	bool replied;
	/* out */
	int rc;
	bool replayed;              /* idempotent retry: jobs[0] is the original */
	struct mu_error err;
	/* set when an admission check (admit.h) failed: the (job, column) it
	 * is about; err.field is then "" and the API names the field
	 * (codec_job_problem_field) */
	struct admit_problem problem;
};

/* Writes the group; every reqs[i]->rc is set. Returns 0 when the
 * transaction committed (even if some requests failed), else the code that
 * every request also got. */
int store_job_submit_group(PGconn *c, struct store_job_submit **reqs, size_t n);

/* Parts of a job a listing may leave out (store_job_filter.omit, one bit
 * each): their columns are not read, so the fields stay NULL or 0. */
enum store_job_part {
	STORE_JOB_P_COMMAND, STORE_JOB_P_ENV, STORE_JOB_P_LABELS, STORE_JOB_P_DEPENDENCIES,
	STORE_JOB_P_WORKDIR, STORE_JOB_P_PENDING_MESSAGE, STORE_JOB_P_PLANNED_START,
	STORE_JOB_P_CREATED_AT, STORE_JOB_P_STARTED_AT, STORE_JOB_P_ENDED_AT, STORE_JOB_P_LAUNCH,
	STORE_JOB_P_OUTPUT /* stdout and stderr patterns */, STORE_JOB_P_BEGIN, STORE_JOB_P_ETAG,
};

struct store_job_filter {
	const char *const *states;  /* NULL-free array of state names */
	size_t nstates;
	const char *tenant;         /* name: that tenant's subtree; NULL = all */
	const char *user;           /* NULL = all */
	const char *labels;         /* JSON object text every job's labels must contain, or NULL */
	int64_t array_job_id;       /* only the tasks of this array; 0 = any job */
	bool has_array_task;        /* and of them only task array_task_id */
	int64_t array_task_id;
	int64_t after_id;           /* cursor: ids > after_id */
	int limit;                  /* 1..1000 */
	uint32_t omit;              /* 1 << enum store_job_part: parts not read */
};

struct store_job_page {
	struct store_job *items;
	size_t n;
	int64_t next_after;         /* 0 on the last page */
};

int store_job_list(PGconn *c, struct mu_arena *a, const char *scope,
		   const struct store_job_filter *f, struct store_job_page *out,
		   struct mu_error *err) __attribute__((warn_unused_result));

/* The job with runs and events (out->runs/events set). MU_ENOTFOUND outside scope. */
int store_job_get(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
		  struct store_job *out, struct mu_error *err) __attribute__((warn_unused_result));

/*
 * Cancels: PENDING -> CANCELLED now; STARTING/RUNNING -> its live run is
 * ordered to stop (stop_reason "cancel"); already ended -> MU_ESTATE.
 * `who` goes into the event data. *out gets the job after the change.
 */
int store_job_cancel(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
		     const char *who, struct store_job *out, struct mu_error *err)
	__attribute__((warn_unused_result));

/* The state of a job another one names as a dependency. */
struct store_job_depstate {
	int64_t job_id;
	const char *state; /* arena */
	int exit_code;     /* -1 when none */
};

/*
 * The checks a submit applies to one job, without writing anything (what
 * POST /v1/jobs/dry-run asks): the same tenant, scope, size, topology,
 * priority class, time limit and dependency checks (admit_job), with the
 * same problem codes as store_job_submit_group (the pending-jobs quota
 * is not counted); a failed check also fills *pb (NULL = not wanted). Defaults the time limit as a submit would. On success
 * *tenant_id and *class_id are resolved and *states (arena, j->ndeps
 * entries in order) hold the states of the jobs it depends on.
 * Returns 0 or a negative MU_E* code with err filled.
 */
int store_job_check(PGconn *c, struct mu_arena *a, const char *scope, struct store_job *j,
		    int64_t *tenant_id, int64_t *class_id, struct store_job_depstate **states,
		    struct admit_problem *pb, struct mu_error *err) __attribute__((warn_unused_result));
/*
 * History (sacct, GET /v1/history): jobs that ENDED in [start_us, end_us)
 * (microseconds since the epoch; 0 = unbounded), oldest first, keyset by
 * (ended_at, id) on the partial index of migration 135. Filters as
 * store_job_list (states, tenant subtree, user) plus `ids` (any of).
 */
struct store_job_history_filter {
	int64_t start_us, end_us;
	const char *const *states;
	size_t nstates;
	const char *tenant;
	const char *user;
	const int64_t *ids;
	size_t nids;
	int64_t after_us, after_id; /* cursor: (ended_at, id) > these; 0/0 = first page */
	int limit;                  /* 1..1000 */
};

struct store_job_history_page {
	struct store_job *items;
	size_t n;
	bool more;                  /* then next_us/next_id are the cursor */
	int64_t next_us, next_id;
};

int store_job_history(PGconn *c, struct mu_arena *a, const char *scope,
		      const struct store_job_history_filter *f, struct store_job_history_page *out,
		      struct mu_error *err) __attribute__((warn_unused_result));

/*
 * Cancels every task of array `array_job_id` that has not ended (each as
 * store_job_cancel would, in one transaction); *ncancelled gets how many.
 * MU_ENOTFOUND when no task of it is in scope; MU_ESTATE when every task
 * has ended already. *out gets the array's first task after the change.
 */
int store_job_cancel_array(PGconn *c, struct mu_arena *a, const char *scope, int64_t array_job_id,
			   const char *who, struct store_job *out, int64_t *ncancelled,
			   struct mu_error *err) __attribute__((warn_unused_result));

/* One id of store_job_cancel_many and its outcome. */
struct store_job_cancel_item {
	int64_t id;
	int code;              /* 0, or the MU_E* store_job_cancel(_array) would have returned */
	struct mu_error err;   /* when code < 0 */
	const char *state;     /* when code == 0: the job's (the array's first task's) state after (arena) */
	int64_t tasks;         /* array: how many tasks were cancelled (0 for a lone job) */
};

/*
 * Each items[i].id cancelled as store_job_cancel (with `array`, as
 * store_job_cancel_array first) would, all in ONE transaction (one commit
 * for up to 10,000 ids, POST /v1/jobs/cancel; the pending lone jobs in one
 * statement). A failing id (not found in
 * scope, already ended) writes nothing and does not stop the others; only
 * a database failure fails the call (nothing is cancelled then).
 */
int store_job_cancel_many(PGconn *c, struct mu_arena *a, const char *scope, bool array,
			  const char *who, struct store_job_cancel_item *items, size_t n,
			  struct mu_error *err) __attribute__((warn_unused_result));

/*
 * Changing jobs (store_jobctl.c). Each runs in one transaction with the job
 * row locked; `if_match` (NULL = none) is the version the caller last saw
 * (store_job.etag): another one is MU_EPRECONDITION and nothing changes.
 * Every change bumps the version, writes an event (job.held,
 * job.released, job.requeue_requested, job.updated) and NOTIFYs
 * muster_sched. *out gets the job after the change. MU_ENOTFOUND outside
 * `scope`, MU_ESTATE when the job's state does not allow the change.
 */
enum store_job_ctl { STORE_JOB_HOLD, STORE_JOB_RELEASE, STORE_JOB_REQUEUE };

/* HOLD/RELEASE: a PENDING job (holding a held job or releasing one not
 * held changes nothing and is no error). REQUEUE: a STARTING/RUNNING job's
 * live run is ordered to stop (stop_reason "requeue"); when it has ended,
 * the run is REQUEUED and the job PENDING again, no retry spent. */
int store_job_control(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
		      enum store_job_ctl op, const int64_t *if_match, const char *who,
		      struct store_job *out, struct mu_error *err) __attribute__((warn_unused_result));

/* A PATCH of a pending job: the fields whose has_* is set. Ranges are the
 * codec's; the store checks with admit_update (the submit's checks)
 * min_nodes <= nodes, the time limit against the class and tenant maximum,
 * the class and dependencies exist in scope and close no cycle. An admission problem also
 * fills *pb (NULL = not wanted) for the API to name its field. */
struct store_job_patch {
	bool has_time_limit;  int64_t time_limit;        /* seconds, > 0 */
	bool has_class;       const char *priority_class;
	bool has_nodes;       int64_t nodes;
	bool has_min_nodes;   int64_t min_nodes;         /* 0 = not elastic */
	bool has_gpus;        int64_t gpus_per_node;
	bool has_deps;        const char *dependencies;  /* JSON text */
	const int64_t *dep_ids; size_t ndeps;
	bool has_labels;      const char *labels;        /* JSON text, replaces them */
	bool has_begin;       int64_t begin;             /* Unix seconds, 0 = at once */
	bool has_name;        const char *name;
	const char *fields;   /* JSON array text of the changed field names (event data) */
};

int store_job_update(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
		     const struct store_job_patch *p, const int64_t *if_match, const char *who,
		     struct store_job *out, struct admit_problem *pb, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
