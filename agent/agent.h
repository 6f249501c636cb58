/*
 * agent.h - muster-agent internals: GPU backends, the launcher, the
 * reconciler and its state file. The stream client (stream.c) and main.c
 * use these; the unit tests (tests/unit/agent/) link the same library
 * (muster_agent_core) without gRPC.
 *
 * Ownership: every struct here owns its strings/arrays unless a field says
 * "borrowed". Functions return 0 or a negative MU_E* code.
 */
#ifndef MU_AGENT_H
#define MU_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

#define AG_MAX_GPUS 64
#define AG_MAX_XIDS 16
#define AG_MAX_PROCS 256

/* ---- GPU backends (gpu_fake.c, gpu_nvml.c) ---- */

struct ag_gpu {
	int index;
	char uuid[96];
	char model[96];
	long long memory_mb;
	long long memory_used_mb;
	int utilization;
	int temperature;
	long long ecc_errors;
	bool healthy;
	int xids[AG_MAX_XIDS]; /* XIDs since the last ag_gpus_take_xids() */
	int nxids;
};

enum ag_gpu_kind { AG_GPU_FAKE, AG_GPU_NVML };

struct ag_gpus {
	enum ag_gpu_kind kind;
	int n;
	struct ag_gpu gpu[AG_MAX_GPUS];
	char fault_path[4096]; /* fake: the control file the tests write */
	long fault_done;       /* fake: bytes of the control file already applied */
	void *nvml;            /* nvml: backend state (gpu_nvml.c) */
};

/* fake: `count` GPUs of `model` with `memory_mb` each; faults come from
 * `<state_dir>/fault`, one order a line: "gpu 3 xid 79", "gpu 1 healthy". */
int ag_gpus_open_fake(struct ag_gpus *g, int count, const char *model, long long memory_mb,
		      const char *node, const char *state_dir);
/* nvml: dlopen("libnvidia-ml.so.1"); MU_EUNAVAIL with a clear err when absent. */
int ag_gpus_open_nvml(struct ag_gpus *g, struct mu_error *err);
/* Refreshes the figures and collects new XIDs / fault orders. */
void ag_gpus_poll(struct ag_gpus *g);
void ag_gpus_close(struct ag_gpus *g);
/* One fault-file line. Returns 0 with *gpu and *xid set (*xid = 0: the GPU is
 * healthy again), MU_EINVAL for anything else. */
int ag_fault_parse_line(const char *line, int *gpu, int *xid);
/* fake: applies one fault line to g (exported for tests). */
int ag_fake_apply(struct ag_gpus *g, const char *line);
/* nvml backend internals */
int ag_nvml_open(struct ag_gpus *g, struct mu_error *err);
void ag_nvml_poll(struct ag_gpus *g);
void ag_nvml_close(struct ag_gpus *g);

/* Fabric links: "up" when /sys/class/net/<if>/operstate reads "up". `root`
 * is normally "/sys/class/net" (tests point it elsewhere). */
bool ag_link_up(const char *root, const char *iface);

/* ---- Launch contract (launch.c) ---- */

struct ag_gang_node {
	char *name;
	char *address;
	int gpus;
};

/* What the server asks this node to run (DesiredRun, decoded). */
struct ag_spec {
	int64_t run_id;
	int64_t job_id;
	int attempt;
	char *job_name;
	char **argv; /* NULL-terminated */
	char **env;  /* "K=V", NULL-terminated: the job's env */
	char *workdir;
	int procs_per_node;
	int gpus_per_node;
	int node_rank;
	int *gpu_indices;
	int ngpu_indices;
	struct ag_gang_node *nodes;
	int nnodes;
	char *master_addr;
	int master_port;
	int64_t time_limit_s;
	bool stop;
	int grace_period_s;
};

void ag_spec_free(struct ag_spec *s);

/* The environment of local process `local_rank` of the run: `base`
 * (normally environ, borrowed; MUSTER_* entries are dropped so the agent's
 * token never leaks), then the job's env, then the launch contract. Returns
 * a new NULL-terminated array (free with ag_env_free). */
char **ag_launch_env(const struct ag_spec *s, int local_rank, const char *hostfile,
		     char *const *base);
void ag_env_free(char **env);
/* Writes the gang hostfile ("<address or name> slots=<gpus>" per node, rank
 * order) to `path` atomically. */
int ag_write_hostfile(const struct ag_spec *s, const char *path);
/* The same for a running run whose gang changed (an elastic run shrank):
 * rewrites `path` only when its content differs; *changed says whether it
 * did. The processes keep their environment (NNODES, WORLD_SIZE, ... as at
 * launch); an elastic launcher re-reads the hostfile or re-rendezvouses. */
int ag_update_hostfile(const struct ag_spec *s, const char *path, bool *changed);

/* One run on this node: its process group and what became of it. */
enum ag_run_state { AG_RUN_LIVE, AG_RUN_STOPPING, AG_RUN_DONE };

struct ag_run {
	int64_t run_id;
	int64_t job_id;
	enum ag_run_state state;
	pid_t pgid;
	unsigned long long start_time; /* /proc/<pgid>/stat field 22 of the leader */
	int nprocs;
	pid_t pids[AG_MAX_PROCS]; /* our children (0 when reaped or adopted) */
	char dir[4096];           /* per-run directory: logs, hostfile, exit files */
	double started;           /* monotonic seconds */
	double ended;             /* monotonic seconds when it became DONE */
	double deadline;          /* time-limit backstop, 0 = none */
	int64_t deadline_epoch;   /* the same in wall-clock seconds (survives restarts) */
	double kill_at;           /* stopping: KILL at this time */
	int exit_code;            /* DONE: first non-zero exit code, else 0 */
	int exit_signal;          /* DONE: a signal that ended a process, 0 = none */
	char message[160];
	bool told_running;        /* reported RUNNING on the current stream */
	bool told_exit;           /* reported EXITED on the current stream */
	bool adopted;             /* found again after an agent restart */
};

double ag_now(void);
/* /proc/<pid>/stat start time, 0 when the process does not exist. */
unsigned long long ag_proc_start_time(pid_t pid);

/* Starts the run's processes (one new process group) under `state_dir`.
 * On failure r->state is DONE with message set and MU_E* is returned. */
int ag_run_start(struct ag_run *r, const struct ag_spec *s, const char *state_dir);
/* TERM to the group, KILL after grace_s (grace_s < 0: KILL now). */
void ag_run_stop(struct ag_run *r, int grace_s, const char *why);
/* Reaps, escalates to KILL, enforces the time limit; moves the run to DONE
 * (exit_code/exit_signal from the per-process exit files) when its group is
 * gone. Returns true when the run just became DONE. */
bool ag_run_poll(struct ag_run *r);
/* Reaps every finished child of the agent (waitpid WNOHANG) into `runs`. */
void ag_reap(struct ag_run *runs, int nruns);

/* ---- Reconciler (reconcile.c) ---- */

enum ag_action_kind { AG_ACT_START, AG_ACT_STOP, AG_ACT_KILL, AG_ACT_REPORT_RUNNING,
		      AG_ACT_REPORT_EXIT };

struct ag_action {
	enum ag_action_kind kind;
	int64_t run_id;
	int desired; /* index into the desired array, -1 when none */
	int actual;  /* index into the runs array, -1 when none */
};

struct ag_desired {
	int64_t run_id;
	bool stop;
};

/* The actions that bring `runs` (actual, including DONE ones remembered so
 * a run is never started twice) to `want`. `drain`: start nothing new.
 * Writes at most `max` actions into out; returns their count. Pure. */
int ag_reconcile_plan(const struct ag_desired *want, int nwant, const struct ag_run *runs,
		      int nruns, bool drain, struct ag_action *out, int max);

/* State file: `<state_dir>/agent.state`, written atomically (temp + fsync +
 * rename). Records each run's id, group, leader start time, state, exit. */
int ag_state_save(const char *state_dir, const struct ag_run *runs, int nruns);
/* Loads the runs saved; live ones whose group still exists (same leader
 * start time) come back LIVE/STOPPING and adopted; ones whose group is gone
 * come back DONE with their exit files read. *runs is new (mu_free). */
int ag_state_load(const char *state_dir, struct ag_run **runs, int *nruns);

/* ---- Node credential (token.c) ---- */

#define AG_TOKEN_MAX 1024
#define AG_TOKEN_ENV "MUSTER_AGENT_TOKEN"
/* internal: the fd a re-exec'd agent reads its token from */
#define AG_TOKEN_FD_ENV "MUSTER_AGENT_TOKEN_FD"

/* Reads the token from `path`: a regular file owned by the agent's
 * effective uid with mode 0600 or stricter (O_NOFOLLOW); first line. */
int ag_token_load_file(const char *path, struct mu_error *err);
/* Reads the token from an fd inherited across ag_token_reexec; closes it. */
int ag_token_load_fd(int fd, struct mu_error *err);
/* When MUSTER_AGENT_TOKEN is set: writes it to a memfd, drops it from the
 * environment and re-execs /proc/self/exe with the same argv (the new
 * image finds the fd in MUSTER_AGENT_TOKEN_FD). Returns 0 at once when the
 * variable is unset; returns only on failure otherwise. */
int ag_token_reexec(char *const argv[], struct mu_error *err);
/* "Bearer <token>", borrowed; the stream sends it for the process's life. */
const char *ag_token_header(void);
bool ag_token_loaded(void);
/* Zeroes the token and the header (a fork does this before anything else). */
void ag_token_wipe(void);

#endif
