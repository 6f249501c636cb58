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
	int minor; /* /dev/nvidia<minor> (NVML's minor number; fake: the index) */
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

/* ---- Identity (runas.c) ---- */

#define AG_MAX_GROUPS 256

/* Whose account a job may run as (agent flags --min-uid, --allow-root-jobs,
 * --single-user). */
struct ag_runas_policy {
	long min_uid;
	bool allow_root;
	bool single_user;    /* every job runs as the agent's own user */
	uid_t agent_uid;     /* geteuid() of the agent */
	char agent_user[256];
};

/* The account a run's processes get, resolved in the agent before fork. */
struct ag_ident {
	uid_t uid;
	gid_t gid;
	char name[256];
	char home[1024];
	char shell[256];
	gid_t groups[AG_MAX_GROUPS];
	int ngroups;
	bool drop; /* the agent is root: setgroups/setgid/setuid before exec */
};

/* The agent's own account; MU_EINVAL when its uid has no passwd entry. */
int ag_runas_policy_init(struct ag_runas_policy *p, long min_uid, bool allow_root,
			 bool single_user);
/* The account for a job of `user` (single-user: the agent's). Missing,
 * root without allow_root, uid below min_uid, or another user than the
 * agent's own on a non-root agent: MU_EFORBIDDEN with `why` filled (the
 * run ends `bad_user`). */
int ag_runas_resolve(const struct ag_runas_policy *p, const char *user, struct ag_ident *id,
		     char *why, size_t whyn);
/* In the forked child only (system calls, no NSS): groups, gid, uid, all
 * three of each; then proves setuid(0) fails. 0 or -errno. */
int ag_runas_drop(const struct ag_ident *id);

/* ---- cgroups (cgroup.c) ---- */

enum ag_cg_mode { AG_CG_OFF, AG_CG_V2, AG_CG_HYBRID, AG_CG_V1 };
enum { AG_CG_MEMORY, AG_CG_PIDS, AG_CG_DEVICES, AG_CG_FREEZER, AG_CG_CPU, AG_CG_NV1 };

/* The hierarchies found at start (ag_cg_detect); borrowed by every run. */
struct ag_cg {
	enum ag_cg_mode mode;
	char mount[256]; /* /sys/fs/cgroup */
	char root[256];  /* relative to each hierarchy: "muster" */
	char v2[300];    /* the cgroup2 mount ("" none): mount, or mount/unified */
	bool v1[AG_CG_NV1];
	bool v2_memory, v2_cpu, v2_pids;
	char v2_ctrl[64]; /* "+memory +cpu +pids": what the v2 root offers */
	bool devices_bpf; /* deny GPUs with a BPF device program (v2) */
};

struct ag_cg_limits {
	int64_t mem_bytes; /* 0 = none */
	int cpus;          /* 0 = none */
	int pids_max;      /* 0 = none */
	int ndeny;         /* char devices the run may not open */
	int deny_major[AG_MAX_GPUS];
	int deny_minor[AG_MAX_GPUS];
};

/* mode "auto" (use what is there; a root that cannot be created is a
 * warning and no cgroups), "on" (the same, but an error), "v1" (the v1
 * controllers only, even where a v2 hierarchy is mounted too: hosts whose
 * v2 is not writable, and tests of the freezer path), "off". */
int ag_cg_detect(struct ag_cg *c, const char *mode, const char *mount, const char *root,
		 struct mu_error *err);
const char *ag_cg_mode_name(const struct ag_cg *c);
/* The run's cgroup `name` ("<root>/<node>/run-<id>") in every hierarchy,
 * with its limits. A limit that cannot be set: MU_E* and `why`. */
int ag_cg_create(const struct ag_cg *c, const char *name, const struct ag_cg_limits *lim,
		 char *why, size_t whyn);
/* Moves `pid` into it (open/write/close only: safe after fork). 0/-errno. */
int ag_cg_enter(const struct ag_cg *c, const char *name, pid_t pid);
/* Processes in it; -1 when it does not exist (or cgroups are off). */
int ag_cg_nprocs(const struct ag_cg *c, const char *name);
bool ag_cg_exists(const struct ag_cg *c, const char *name);
/* `sig` to every process in it. */
void ag_cg_signal(const struct ag_cg *c, const char *name, int sig);
/* SIGKILL to everything in it: cgroup.kill (v2), else freeze, kill, thaw. */
void ag_cg_kill(const struct ag_cg *c, const char *name);
/* True when the kernel OOM-killed a process in it. */
bool ag_cg_oom(const struct ag_cg *c, const char *name);
/* Removes the (empty) cgroup from every hierarchy. */
void ag_cg_remove(const struct ag_cg *c, const char *name);

/* ---- Launch contract (launch.c) ---- */

/* What every run on this node shares (main.c fills it; borrowed). */
struct ag_node {
	const char *state_dir;
	const char *name; /* the node's name: a component of its cgroups */
	struct ag_runas_policy runas;
	struct ag_cg cg;
	int ngpu_devs;
	dev_t gpu_dev[AG_MAX_GPUS]; /* GPU i's device node (0: unknown, not confined) */
	int pids_max;               /* per run (--pids-max), 0 = none */
	const char *srun_dir;       /* first on a script job's PATH (srun); NULL = none */
};

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
	char *user;  /* the job's user: the account it runs as */
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
	int64_t mem_per_node;  /* bytes, 0 = no limit */
	int cpus_per_node;     /* 0 = no limit */
	/* launchers, shrink restarts, the pre-timeout signal (docs/agent.md) */
	int launcher;          /* enum mu_launcher: one launcher process per node */
	int min_nodes;         /* elastic: the fewest nodes, 0 = rigid */
	int restart_count;     /* restarts after a shrink so far (MUSTER_RESTART_COUNT) */
	bool restart_on_shrink; /* on_shrink restart: a shrunk gang restarts its processes */
	int signal;            /* sent signal_before_s ahead of the time limit, 0 = none */
	int signal_before_s;
	bool signal_batch_only; /* only the processes the agent started, not their children */
	char *stdout_pattern;  /* sbatch -o ("" = none): see ag_output_open */
	char *stderr_pattern;  /* sbatch -e ("" = none) */
	int64_t array_job_id;  /* job arrays (SLURM_ARRAY_*): 0 = not an array */
	int64_t array_task_id;
	char *array_spec;      /* NULL = not an array */
};

void ag_spec_free(struct ag_spec *s);

/*
 * sbatch's -o/-e (output.c). In the job's forked process, as the account,
 * in its workdir, with stdout/stderr already on the run's logs: when the
 * spec has patterns, opens their files (append, 0644) and forks; the
 * child returns 0 (to exec, its stdout/stderr now pipes) and the parent
 * becomes the tee that copies to both the run's logs and the files, then
 * exits with the program's status (it never returns). No pattern: 0 at
 * once. A file that cannot be opened: -errno (or -1) with `why` the path
 * or the call.
 */
int ag_output_tee(const struct ag_spec *s, const char *node, int local_rank,
		  const struct ag_ident *id, int start_fd, char *why, size_t whyn);

/* A batch script's job (the API's runner: /bin/sh -c RUNNER muster-batch
 * SCRIPT ...), and whether it runs once per task or, with --batch-host,
 * once on the rank-0 node (the runner's first line says so). */
enum ag_script_mode {
	AG_SCRIPT_NONE = 0,
	AG_SCRIPT_TASKS,
	AG_SCRIPT_BATCH_HOST,
};
enum ag_script_mode ag_script_mode(char *const *argv);

/* A script job's environment: MUSTER_SCRIPT_MODE=tasks|batch-host and,
 * with srun_dir (borrowed; NULL = none), srun_dir first on PATH. Steals
 * env, returns the new array (ag_env_free); other jobs' env unchanged. */
char **ag_script_env(char **env, const struct ag_spec *s, const char *srun_dir);

/* The environment of local process `local_rank` of the run: `base`
 * (normally environ, borrowed; MUSTER_* entries are dropped so the agent's
 * token never leaks), then the job's env, then the launch contract and,
 * with `id`, HOME, USER, LOGNAME and SHELL of the account. Returns a new
 * NULL-terminated array (free with ag_env_free). */
char **ag_launch_env(const struct ag_spec *s, int local_rank, const char *hostfile,
		     char *const *base, const struct ag_ident *id);
void ag_env_free(char **env);
/* Processes a launcher starts on this node: the GPUs granted, or
 * procs_per_node on a node without GPUs (at least 1). */
int ag_launch_nproc(const struct ag_spec *s);
/* The argv the node runs (new, mu_launcher_argv_free): the user's command,
 * or with s->launcher the launch line composed for this node (launcher.h). */
char **ag_launch_argv(const struct ag_spec *s, const char *hostfile);
/* After a shrink (on_shrink restart): the spec of the restart on the kept
 * nodes. The node ranks become the order of s->nodes (0..k-1), this node's
 * rank its place there by `node_name`, MASTER_ADDR the new rank-0 node's
 * address, MASTER_PORT a fresh one (the launch port + restart_count).
 * MU_ENOTFOUND when `node_name` is not in the gang. */
int ag_spec_renumber(struct ag_spec *s, const char *node_name);
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
	char cgroup[512];         /* "<root>/<node>/run-<id>", "" = none (we created it) */
	const struct ag_cg *cg;   /* borrowed: the node's hierarchies */
	char end_reason[32];      /* bad_user, bad_workdir, oom, ... ("" = none) */
	bool leftovers_killed;    /* the cgroup's stragglers got their KILL */
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
	/* the pre-timeout signal (not kept across an agent restart) */
	int signal;
	bool signal_batch_only;
	bool signal_sent;
	double signal_at;         /* monotonic seconds, 0 = none */
	/* on_shrink restart */
	bool restart_on_shrink;   /* elastic and on_shrink restart */
	int restart_count;        /* the restarts this run's processes have had */
	struct ag_spec *restart;  /* new: the spec to start once the processes ended */
	double hold_until;        /* an exit held back (a shrink may follow), 0 = none */
};

double ag_now(void);
/* /proc/<pid>/stat start time, 0 when the process does not exist. */
unsigned long long ag_proc_start_time(pid_t pid);

/* Starts the run's processes (one new process group, one cgroup) under
 * n->state_dir, as the account of s->user. Returns once every process has
 * exec'd or failed to. On failure r->state is DONE with message and
 * end_reason set and MU_E* is returned. */
int ag_run_start(struct ag_run *r, const struct ag_spec *s, const struct ag_node *n);
/* TERM to the group and the cgroup, KILL of the whole cgroup after grace_s
 * (grace_s < 0: KILL now). */
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
/* Loads the runs saved; live ones whose cgroup (recorded: only ones this
 * agent created) or group still exists (same leader start time) come back
 * LIVE/STOPPING and adopted; ones whose group is gone come back DONE with
 * their exit files read. `cg` is borrowed by the runs. *runs is new
 * (mu_free). */
int ag_state_load(const char *state_dir, const struct ag_cg *cg, struct ag_run **runs,
		  int *nruns);

/* ---- Logs (logs.c): byte ranges of the per-process output files, and
 * their retention ---- */

#define AG_LOG_MAX_CHUNK (1 << 20) /* bytes one LogRequest may ask for */

struct ag_log_chunk {
	unsigned char *data; /* new (mu_free); NULL when len == 0 */
	size_t len;
	int64_t size;        /* the file's size when read */
	bool ended;          /* the process ended: the file grows no more */
	char error[160];     /* "" = ok; else "unknown_run: ...", "gone: ...", "invalid: ..." */
};

/*
 * Reads up to `limit` bytes (1..AG_LOG_MAX_CHUNK) at `offset` of
 * `<state_dir>/runs/<run_id>/proc<local_rank>.{out,err}`. The run directory
 * and the file are opened with O_NOFOLLOW (the job may have planted a
 * symlink), the file must be a regular file with one link; a FIFO never
 * blocks the read. `run_done`: the agent knows the whole run ended. An
 * offset past the end answers no data (not an error). Returns 0 (out
 * filled) or a negative MU_E* code with out->error set:
 * MU_ENOTFOUND (no such run directory, "unknown_run"), MU_EIO (the file is
 * missing or not readable, "gone"), MU_EINVAL (bad arguments, "invalid").
 */
int ag_log_read(const char *state_dir, int64_t run_id, int local_rank, bool err_stream,
		int64_t offset, size_t limit, bool run_done, struct ag_log_chunk *out);
void ag_log_chunk_release(struct ag_log_chunk *c);

/*
 * Removes the directories `<state_dir>/runs/<id>` older than `retention_s`
 * (by their modification time: the last exit file written) whose id is not
 * in `live` (runs with processes). Never follows a symlink; stays on one
 * file system. Returns how many run directories went.
 */
int ag_logs_prune(const char *state_dir, int64_t retention_s, const int64_t *live, int nlive);

/*
 * The reader thread: LogRequests are read off the main loop (a slow disk
 * never delays heartbeats). ag_logs_submit queues one; ag_logs_take hands
 * back each finished answer (main loop, never blocks). Any thread may
 * submit; one thread takes.
 */
struct ag_logs;
struct ag_log_job {
	int64_t request_id;
	int64_t run_id;
	int local_rank;
	bool err_stream;
	int64_t offset;
	size_t limit;
	bool run_done;
	struct ag_log_chunk out; /* filled by the reader */
	int rc;
};
struct ag_logs *ag_logs_new(const char *state_dir); /* starts the thread */
void ag_logs_free(struct ag_logs *l);                /* joins it; NULL is a no-op */
/* Steals nothing: *job is copied. False when too many are queued (the
 * caller answers "busy"). */
bool ag_logs_submit(struct ag_logs *l, const struct ag_log_job *job);
/* Calls fn for each answered job (then releases it). */
void ag_logs_take(struct ag_logs *l, void (*fn)(void *ctx, struct ag_log_job *job), void *ctx);

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
