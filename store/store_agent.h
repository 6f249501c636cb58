/*
 * store_agent.h - what node agents change in the database (muster-api's
 * gRPC AgentService, api/grpc/grpc_agent.c): batched heartbeats, GPU and
 * fabric faults, per-node run status, and each node's desired runs.
 *
 * Conventions as store_job.h: the caller owns the connection; 0 or a
 * negative MU_E* code with `err` filled; strings returned live in the arena
 * passed. Contract with the scheduler: store_sched.h "Agent contract".
 */
#ifndef STORE_AGENT_H
#define STORE_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"

/* One GPU's figures from one heartbeat. */
struct store_agent_gpu_hb {
	int64_t node_id;
	int32_t idx;
	int64_t mem_used_mb;
	int32_t utilization, temperature;
	int64_t ecc_errors;
	int32_t xid;             /* last XID seen, 0 = none */
};

/*
 * One statement for any number of heartbeats: last_heartbeat = now() and
 * up = true for `node_ids` (a node that was DOWN gets node.up + NOTIFY
 * muster_sched 'node:<name>'), stream_replica = `replica` (the replica
 * that heard them), and the GPU figures. Retried on deadlock.
 */
int store_agent_heartbeats(PGconn *c, const char *replica, const int64_t *node_ids, size_t nn,
			   const struct store_agent_gpu_hb *gpus, size_t ng, struct mu_error *err)
	__attribute__((warn_unused_result));

/* A replica silent this long (api_replicas.heard_at) holds no stream. */
#define STORE_AGENT_REPLICA_LIVE_S 3

/*
 * The database-wide half of "one live stream per node" (migration 212):
 * claims node `name` for `replica` unless another replica holds it, is
 * live, and the node was heard within hb_timeout_s. *ok tells; *fresh is
 * set when no such node exists yet (its registration then claims it again).
 */
int store_agent_stream_claim(PGconn *c, const char *name, const char *replica, int hb_timeout_s,
			     bool *ok, bool *fresh, struct mu_error *err)
	__attribute__((warn_unused_result));

/* The streams of the nodes `names` ended on `replica` (or their Connect
 * failed after its claim): whatever it still holds of them is released. */
int store_agent_stream_release(PGconn *c, const char *replica, const char *const *names, size_t n,
			       struct mu_error *err) __attribute__((warn_unused_result));

/* The replica stops: its row and every stream it holds go. */
int store_agent_replica_gone(PGconn *c, const char *replica, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * A fault: `gpu` >= 0 marks that GPU unhealthy (health_reason = reason,
 * last_xid = xid, event gpu.unhealthy); `gpu` -1 is a fabric link (event
 * node.link_down). Then the node is drained with `reason` (store_node_drain)
 * unless it already was; NOTIFY muster_sched 'node:<name>' either way.
 */
int store_agent_fault(PGconn *c, int64_t node_id, const char *node, int gpu, int xid,
		      const char *reason, struct mu_error *err) __attribute__((warn_unused_result));

/* GPUs of a drained node that are unhealthy (to keep them so across a re-register). */
struct store_agent_broken_gpu {
	int64_t idx;
	const char *uuid;
	const char *reason;
};
int store_agent_broken_gpus(PGconn *c, struct mu_arena *a, const char *node,
			    struct store_agent_broken_gpu **out, size_t *n, struct mu_error *err)
	__attribute__((warn_unused_result));

/* settings.heartbeat_timeout in seconds (30 when unset). */
int store_agent_heartbeat_timeout(PGconn *c);

/*
 * One node's report about its part of a run, in one transaction:
 * run_node_status (never downgraded from an exit), event run.node_<phase>,
 * then the run: RUNNING -> STARTING becomes RUNNING (run.running); an exit
 * that failed (phase FAILED_TO_START, code != 0 or a signal) ends a run not
 * ordered to stop as FAILED at once (*peers_changed = true: the other
 * nodes must drop it; NOTIFY muster_agents for them); all parts exited 0 ->
 * COMPLETED; a stopping run gets ended_at once every part exited. NOTIFY
 * muster_sched 'run:<id>'. A run not allocated to the node is ignored (0).
 * A node an elastic run was shrunk off (its allocation there no longer live)
 * only records its status and event: the run goes on on the kept nodes. A
 * failed part of an elastic run that can lose this node, on a GPU already
 * marked unhealthy, does not fail the run either: the scheduler shrinks it.
 */
struct store_agent_status {
	int64_t node_id;
	int64_t run_id;
	const char *phase;       /* RUNNING | EXITED | FAILED_TO_START */
	int32_t exit_code;
	int32_t exit_signal;     /* 0 = none */
	const char *log_path;
	const char *message;
	const char *end_reason;  /* the agent's: bad_user, bad_workdir, oom, ... ("" none);
	                            a part with one failed, and the job ends with it */
};
int store_agent_run_status(PGconn *c, const struct store_agent_status *s, bool *peers_changed,
			   struct mu_error *err) __attribute__((warn_unused_result));

/* One run a node must be running (one row per node and run). */
struct store_desired_run {
	int64_t node_id;
	int64_t run_id, job_id;
	int32_t attempt;
	const char *job_name, *tenant, *user;
	const char *command_json;  /* argv array */
	const char *env_json;      /* object */
	const char *workdir;
	int32_t procs_per_node, gpus_per_node;
	int32_t node_rank;
	int32_t *gpus;             /* this node's GPU indices, ascending */
	size_t n_gpus;
	const char *master_addr;
	int32_t master_port;
	int64_t time_limit;        /* seconds */
	bool stop;
	const char *stop_reason;
	int32_t grace_period;      /* seconds */
	int64_t mem_per_node;      /* bytes, 0 = none */
	int32_t cpus_per_node;     /* 0 = none */
	const char *unix_account;  /* the tenant's (nearest ancestor's) account, "" = none */
	const char *launcher;      /* "" = none (jobs.launch, migration 110) */
	int32_t min_nodes;         /* 0 = rigid */
	const char *on_shrink;     /* restart | keep */
	int32_t restart_count;     /* runs.restart_count */
	const char *signal_name;   /* "" = none */
	int32_t signal_before;     /* seconds */
	bool signal_batch_only;
	const char *stdout_pattern; /* sbatch -o, "" = none */
	const char *stderr_pattern; /* sbatch -e, "" = none */
	int64_t array_job_id;      /* job arrays: the first task's id, 0 = not an array */
	int64_t array_task_id;
	const char *array_spec;    /* "" = not an array */
	const char *gang_json;     /* [{"rank","name","address","gpus"}] in rank order:
	                              the live members (an elastic run that shrank
	                              lists the kept nodes, with their ranks at launch) */
};
struct store_desired_node {
	int64_t node_id;
	bool drain;
	const char *drain_reason;
};

/*
 * The desired runs of the nodes `node_ids`: live runs with a live
 * allocation there, not ended, whose part on that node has not exited
 * (ordered by node, run); and each node's drain state. A node an elastic
 * run was shrunk off keeps the run with stop = true, stop_reason "shrink",
 * until it reports its part exited (TERM, grace, KILL as for any stop).
 */
int store_agent_desired(PGconn *c, struct mu_arena *a, const int64_t *node_ids, size_t n,
			struct store_desired_run **runs, size_t *nruns,
			struct store_desired_node **nodes, size_t *nnodes, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Seconds without a control-plane tick that count as an outage. */
#define STORE_AGENT_CP_GAP_S 5

/*
 * muster-api's agent thread says it reaches the database (about every
 * second): control_plane.heard_at = now(); heard_since = now() too when the
 * previous tick is older than STORE_AGENT_CP_GAP_S (an outage just ended:
 * every node gets a whole heartbeat timeout to be heard again); and
 * api_replicas.heard_at = now() for `replica`.
 */
int store_agent_cp_tick(PGconn *c, const char *replica, struct mu_error *err);

/*
 * Of `token_ids`, those no longer live (revoked, expired or deleted):
 * *dead is new (mu_free), *ndead its length.
 */
int store_agent_dead_tokens(PGconn *c, const int64_t *token_ids, size_t n, int64_t **dead,
			    size_t *ndead, struct mu_error *err);

#endif
