/*
 * sched.h - muster's scheduling policy core: snapshot in, decisions out.
 *
 * The core is pure: no I/O, no clock, no globals, no logging. `now` is part
 * of the snapshot. The same code runs in muster-scheduler (which loads the
 * snapshot from PostgreSQL and writes the decisions back) and in muster-sim
 * (which replays traces). See docs/scheduling.md for the policies.
 *
 * Ownership: every pointer inside a struct sched_snapshot is *borrowed* by
 * the core for the duration of one call and never kept. struct
 * sched_decisions owns everything it points to; the caller initialises it
 * with sched_decisions_init(), passes it to sched_cycle() (which first
 * clears what a previous cycle left) and frees it with
 * sched_decisions_release(). Decisions refer to snapshot entries by index
 * and by id, so the snapshot must outlive the caller's use of them only if
 * the caller wants to follow the indexes.
 *
 * Errors: functions return 0 or SCHED_EINVAL (-1, the same value as
 * MU_EINVAL) for an inconsistent snapshot; then decisions->error holds a
 * one-line message naming the offending entry.
 *
 * Threading: reentrant; one struct sched_decisions per thread.
 *
 * Limits: at most SCHED_MAX_GPUS GPUs per node (bitmaps are uint64_t) and
 * SCHED_MAX_LEVELS topology levels.
 */
#ifndef MU_SCHED_H
#define MU_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHED_EINVAL (-1)
#define SCHED_MAX_GPUS 64
#define SCHED_MAX_LEVELS 4
#define SCHED_NEVER INT64_MAX   /* "no time": no planned start, no end */

/* ---------------------------------------------------------------- input */

enum sched_order {
	SCHED_ORDER_MULTIFACTOR = 0, /* class priority, then weighted fair share/age/size */
	SCHED_ORDER_FCFS,            /* submit time, then snapshot order (the simulator's fcfs/easy) */
};

struct sched_settings {
	enum sched_order order;
	double weight_fairshare;  /* settings.weight_fairshare */
	double weight_age;        /* settings.weight_age */
	double weight_size;       /* settings.weight_size */
	double weight_xfactor;    /* settings.weight_xfactor: (wait + planned runtime) / max(runtime, 10 s) */
	int64_t starve_after;     /* settings.starve_after: a job that waited this long (s) orders before
	                             every job of its class that did not, oldest first; 0 = off */
	int64_t max_age;          /* settings.max_age: age factor reaches 1 after this (s) */
	int reservation_depth;    /* settings.reservation_depth: 0 none, 1 EASY, N conservative-like */
	bool predict;             /* settings.predict_runtimes: plan with predictions */
	bool preemption;          /* allow preemption decisions (priority and reclaim) */
	int nlevels;              /* topology levels, outermost first ("block", "rack") */
	const char *levels[SCHED_MAX_LEVELS]; /* borrowed names, for messages */
	bool quiet;               /* leave verdict messages empty (the simulator's speed) */
	int preempt_attempts;     /* blocked jobs tried for preemption per cycle; 0 = 32 */
	bool no_backfill;         /* strict order: nothing starts after the first blocked job (fcfs) */
	bool unnamed_reservations; /* with a delta, a reservation may come without nodes (nalloc 0)
	                              where the core plans it by counts (the simulator's speed) */
	bool ranged_allocs;       /* starts' allocations as ranges of nodes (struct sched_alloc.count),
	                             one entry per run of consecutive nodes with one GPU mask (the
	                             simulator's speed); else one entry per node */
	bool check_view;          /* tests: after a delta is applied, the incremental view must equal
	                             one built from the snapshot, or the cycle fails (SCHED_EINVAL) */
};

enum sched_node_state {
	SCHED_NODE_UP = 0,
	SCHED_NODE_DRAIN,   /* draining or drained: runs continue, nothing new starts */
	SCHED_NODE_DOWN,    /* lost: nothing starts; runs on it are requeued (or shrunk) */
};

struct sched_node {
	const char *name;       /* borrowed, for messages */
	/*
	 * Topology unit per level (index into settings.levels): an id in
	 * [0, nnodes) naming the unit, the same id for every node of that unit;
	 * e.g. intern the path prefix "block-1/rack-3" for the rack level so
	 * that racks of different blocks never share an id. -1 = unknown (the
	 * node then forms a unit of its own at that level).
	 */
	int unit[SCHED_MAX_LEVELS];
	const char *gpu_model;  /* borrowed; "" = unknown */
	int gpu_count;          /* 0..SCHED_MAX_GPUS */
	uint64_t healthy;       /* bit i set = GPU i healthy */
	uint64_t used;          /* bit i set = GPU i in a live allocation */
	enum sched_node_state state;
	bool fabric_down;       /* a training-fabric link is down: multi-node runs here fail */
};

/*
 * Nodes node .. node + count - 1 of an allocation, each granted the GPUs
 * `gpus`; ranks follow the entries in order, node by node. A count of 0
 * or 1 is one node, so an entry written as { .node, .gpus } is one node.
 * The core writes entries of more than one node only with
 * settings.ranged_allocs; it reads them in snapshots always.
 */
struct sched_alloc {
	int node;               /* index into snapshot nodes: the first of the entry */
	int count;              /* consecutive nodes from node (0 = 1) */
	uint64_t gpus;          /* GPU indices granted on each of them */
};

/* Nodes in entry a. */
static inline int sched_alloc_len(const struct sched_alloc *a)
{
	return a->count > 1 ? a->count : 1;
}

/* Nodes in a[0..na). */
size_t sched_alloc_nodes(const struct sched_alloc *a, size_t na);

struct sched_run {
	int64_t run_id;
	int64_t job_id;
	int tenant;             /* index into snapshot tenants */
	int user;               /* index into snapshot users, or -1 */
	int priority;           /* the run's class priority value */
	bool preemptible;       /* from its class */
	bool stopping;          /* stop already requested: never chosen again, frees soon */
	int64_t start;
	int64_t time_limit;     /* seconds */
	int64_t predicted_end;  /* 0 = none; used for planning when settings.predict */
	int64_t grace;          /* seconds between SIGTERM and SIGKILL when stopped */
	int min_nodes;          /* elastic runs: may shrink to this many nodes; 0 = not elastic */
	int64_t array_job_id;   /* its job's array (first task's id); 0 = not an array */
	size_t nalloc;
	const struct sched_alloc *alloc; /* borrowed; rank order */
};

enum sched_dep_type { SCHED_DEP_AFTEROK = 0, SCHED_DEP_AFTERANY, SCHED_DEP_AFTERNOTOK };

enum sched_dep_state {
	SCHED_DEP_ACTIVE = 0,   /* the target has not ended (pending, starting, running) */
	SCHED_DEP_OK,           /* ended COMPLETED with exit code 0 */
	SCHED_DEP_NOTOK,        /* ended FAILED, CANCELLED, TIMEOUT, ... */
	SCHED_DEP_MISSING,      /* no such job */
};

struct sched_dep {
	enum sched_dep_type type;
	int64_t job_id;
	enum sched_dep_state state;
};

struct sched_job {
	int64_t id;
	int tenant;             /* index into snapshot tenants */
	int user;               /* index into snapshot users, or -1 */
	int priority;           /* class priority value */
	bool preemptible;       /* of its class (kept on the run it becomes) */
	int64_t submit;
	int nodes;              /* >= 1 */
	int min_nodes;          /* elastic: 1..nodes; 0 = rigid (= nodes) */
	int gpus_per_node;      /* 0..SCHED_MAX_GPUS */
	const char *gpu_model;  /* borrowed; NULL or "" = any */
	int topo_required;      /* level index, or -1 */
	int topo_preferred;     /* level index, or -1 */
	int64_t time_limit;     /* seconds, > 0 */
	int64_t predicted_runtime; /* 0 = let the core predict from the user's history */
	bool held;
	size_t ndeps;
	const struct sched_dep *deps; /* borrowed */
	int64_t array_job_id;   /* job arrays: the array (first task's id); 0 = not an array */
	int array_throttle;     /* at most this many live runs of the array at once; 0 = no limit */
};

/*
 * A tenant's quota for one GPU model (a quotas row with a gpu_model). The
 * GPUs it counts are those on nodes of that model, whatever model the job
 * asked for (a job without gpu_model that lands on the model counts too).
 */
struct sched_model_quota {
	const char *gpu_model;  /* borrowed; compared with nodes' gpu_model */
	int guaranteed_gpus;    /* 0 = none: GPUs of the model beyond it are borrowed */
	int max_gpus;           /* -1 = no limit; counts the whole subtree's GPUs of the model */
};

struct sched_tenant {
	const char *name;       /* borrowed */
	int parent;             /* index; -1 only for index 0, the root */
	double shares;
	double usage;           /* decayed usage charged to the tenant itself (normally 0) */
	int guaranteed_gpus;    /* 0 = none */
	int max_gpus;           /* -1 = no limit; counts the whole subtree */
	int max_running_jobs;   /* -1 = no limit; counts the whole subtree */
	size_t nmodel_quotas;   /* per-GPU-model quotas, at most one per model */
	const struct sched_model_quota *model_quotas; /* borrowed */
};

struct sched_user {
	const char *name;       /* borrowed */
	int tenant;             /* index into tenants */
	double shares;
	double usage;           /* decayed GPU-seconds */
	int nrecent;            /* 0..2 valid entries of recent_runtime */
	int64_t recent_runtime[2]; /* the user's last actual runtimes, newest first */
};

/*
 * Optional change hint for a caller that runs cycle after cycle on one
 * struct sched_decisions over snapshots that differ little (muster-sim:
 * one start or end between two passes). It lists what changed since the
 * previous sched_cycle() on the same decisions object. With it the core
 * keeps its view of the cluster (nodes by free GPUs, releases of running
 * runs sorted by end, quota use, caches) in decisions->priv and updates
 * only what changed, and on clusters without topology levels places
 * without a pass over every node. The decisions are exactly those of a
 * call without it.
 *
 * The caller's promise: the snapshot differs from the previous one only in
 * `now`, the pending jobs, users appended, tenants' and users' usage and
 * shares and users' recent runtimes (never the tenant tree or a user's
 * tenant), the listed nodes (any field) and the runs added and removed; a
 * run's fields never change while it runs (report it removed and added
 * instead); run ids are unique. The first call with a hint, a call after one
 * without, and one after a failed call build the view from the whole
 * snapshot (the lists are then ignored); so do a call whose lists do not
 * add up (an unknown removed run, a run count that does not match), one
 * whose `now` is earlier than the previous one's, and one that changes
 * settings.predict or a node's GPU count, model or topology. With a
 * stopping run the core ignores the hint.
 * Borrowed for the call, like everything in the snapshot.
 */
struct sched_delta {
	size_t nnodes;   const int *nodes;       /* indexes of nodes whose fields changed */
	size_t nadded;   const size_t *added;    /* indexes into runs of the runs new since the previous call */
	size_t nremoved; const int64_t *removed; /* run_ids of the runs gone since the previous call */
	/*
	 * by_runs (muster-sim): a node whose only change is a run's start or end
	 * (the GPUs of an added run now used, of a removed run free) is not
	 * listed in nodes; and the caller applies every start of this cycle as
	 * decided and reports it among the next call's added runs, in the order
	 * of decisions.starts, with the same job id and allocation. The core
	 * then keeps the cycle's starts in its view instead of undoing them (a
	 * wide gang's nodes are not visited again when its run is added). A
	 * start the next call does not report ran and ended between the two
	 * calls (or never ran): its GPUs are free again, and the view gives
	 * them back without reading its nodes; an added run that matches no
	 * start is read back from the snapshot.
	 */
	bool by_runs;
};

struct sched_snapshot {
	int64_t now;
	struct sched_settings settings;
	size_t nnodes;   const struct sched_node *nodes;
	size_t nruns;    const struct sched_run *runs;
	size_t njobs;    const struct sched_job *jobs;     /* pending jobs */
	size_t ntenants; const struct sched_tenant *tenants; /* [0] is the root */
	size_t nusers;   const struct sched_user *users;
	const struct sched_delta *delta; /* NULL: rebuild everything (the default) */
};

/* -------------------------------------------------------------- output */

#define SCHED_REASONS(X)                                                            \
	X(NONE,                     "None")                                             \
	X(PRIORITY,                 "Priority")                                         \
	X(RESOURCES,                "Resources")                                        \
	X(QUOTA_GUARANTEED,         "QuotaGuaranteed")                                  \
	X(QUOTA_MAX,                "QuotaMax")                                         \
	X(QUOTA_MAX_JOBS,           "QuotaMaxRunningJobs")                              \
	X(DEPENDENCY,               "Dependency")                                       \
	X(DEPENDENCY_NEVER,         "DependencyNeverSatisfied")                         \
	X(TOPOLOGY_UNSATISFIABLE,   "TopologyUnsatisfiable")                            \
	X(RESERVATION,              "Reservation")                                      \
	X(HELD,                     "Held")                                             \
	X(NODES_UNHEALTHY,          "NodesUnhealthy")                                   \
	X(PREEMPTING,               "Preempting")                                       \
	X(ARRAY_TASK_LIMIT,         "JobArrayTaskLimit")

enum sched_reason {
#define SCHED__REASON_ENUM(name, str) SCHED_REASON_##name,
	SCHED_REASONS(SCHED__REASON_ENUM)
#undef SCHED__REASON_ENUM
	SCHED_REASON_COUNT
};

/* "Priority", "Resources", ...: the names the API and CLI show. Static. */
const char *sched_reason_name(enum sched_reason r);

enum sched_preempt_reason {
	SCHED_PREEMPT_PRIORITY = 0, /* for a blocked job of a higher class */
	SCHED_PREEMPT_RECLAIM,      /* a tenant below its guarantee reclaims borrowed GPUs */
	SCHED_PREEMPT_NODE_FAIL,    /* the run holds a DOWN node or unhealthy GPU */
};

const char *sched_preempt_reason_name(enum sched_preempt_reason r); /* "priority", ... static */

struct sched_start {
	size_t job;              /* index into snapshot jobs */
	int64_t job_id;
	int64_t planned_end;     /* now + runtime used for planning */
	size_t nalloc;           /* entries (nodes: sched_alloc_nodes(); elastic: <= job nodes) */
	struct sched_alloc *alloc; /* owned by the decisions; rank = index */
};

struct sched_preemption {
	size_t run;              /* index into snapshot runs */
	int64_t run_id;
	int64_t for_job_id;      /* the job that needs its GPUs; 0 for node failures */
	enum sched_preempt_reason reason;
};

/* An elastic run that loses nodes (DOWN or unhealthy) but keeps >= min_nodes. */
struct sched_shrink {
	size_t run;
	int64_t run_id;
	size_t nalloc;           /* the allocation it keeps, rank order */
	struct sched_alloc *alloc;
};

struct sched_reservation {
	size_t job;
	int64_t job_id;
	int64_t start;           /* planned start */
	int64_t end;             /* planned end */
	size_t nalloc;
	struct sched_alloc *alloc;
};

/* Per pending job (same index as snapshot jobs). */
struct sched_verdict {
	enum sched_reason reason;  /* NONE when the job starts in this cycle */
	int64_t planned_start;     /* SCHED_NEVER when none is known */
	double priority;           /* the multifactor value used for ordering */
	char message[160];         /* one human sentence, NUL-terminated */
};

struct sched_fail {
	size_t job;
	int64_t job_id;
	enum sched_reason reason;  /* DEPENDENCY_NEVER */
	char message[160];
};

struct sched_decisions {
	struct sched_start *starts;              size_t nstarts;
	struct sched_preemption *preemptions;    size_t npreemptions;
	struct sched_shrink *shrinks;            size_t nshrinks;
	struct sched_reservation *reservations;  size_t nreservations;
	struct sched_fail *fails;                size_t nfails;
	struct sched_verdict *verdicts;          size_t nverdicts; /* = snapshot njobs */
	char error[256];
	void *priv;                              /* internal storage */
};

void sched_decisions_init(struct sched_decisions *d);
void sched_decisions_release(struct sched_decisions *d);

/*
 * One full scheduling cycle over the snapshot. Fills `out` (cleared first;
 * with s->delta, the view kept in out->priv survives). Returns 0 or
 * SCHED_EINVAL.
 */
__attribute__((warn_unused_result))
int sched_cycle(const struct sched_snapshot *s, struct sched_decisions *out);

/*
 * Dry run: when would the hypothetical job `probe` start against the plan of
 * this snapshot (the starts and reservations sched_cycle would make), without
 * changing it. `probe->id` may be 0. Fills *planned_start (SCHED_NEVER when it
 * can never run), *reason and, when not NULL, `message` (160 bytes).
 * Returns 0 or SCHED_EINVAL.
 */
__attribute__((warn_unused_result))
int sched_explain(const struct sched_snapshot *s, const struct sched_job *probe,
                  int64_t *planned_start, enum sched_reason *reason, char *message);

/*
 * The same answer for many probes: sched_explainer_new plans the snapshot
 * once (what sched_cycle would decide, nothing returned), then each
 * sched_explainer_probe answers exactly as sched_explain would against that
 * snapshot, in microseconds to milliseconds instead of a whole cycle. The
 * explainer borrows `s` (it must outlive it) and is *new*
 * (sched_explainer_free; NULL is a no-op). A probe uses the explainer's
 * scratch space: calls on one explainer must not overlap (the caller
 * serializes them); distinct explainers are independent.
 * _new returns 0 or SCHED_EINVAL (then *out is NULL); _probe returns 0 or
 * SCHED_EINVAL for a probe sched_explain would refuse.
 */
struct sched_explainer;
__attribute__((warn_unused_result))
int sched_explainer_new(const struct sched_snapshot *s, struct sched_explainer **out);
__attribute__((warn_unused_result))
int sched_explainer_probe(struct sched_explainer *x, const struct sched_job *probe,
                          int64_t *planned_start, enum sched_reason *reason, char *message);
void sched_explainer_free(struct sched_explainer *x);

/* Planning runtime of a pending job under `settings` (prediction or limit). */
int64_t sched_job_runtime(const struct sched_snapshot *s, const struct sched_job *j);

#endif
