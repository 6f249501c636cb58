/*
 * launch.c - the launch contract: environment, hostfile, process groups,
 * stop (TERM, grace, KILL), the time-limit backstop, reaping.
 *
 * Each process of a run is started through a small keeper (a forked copy
 * of the agent in the run's process group and cgroup, still root) that
 * waits for the real process and writes its exit status to
 * `<run dir>/exit.<local rank>`, so an agent restarted while the run went
 * on still learns how it ended. The real process becomes the job's
 * account (runas.c) before it opens its logs or enters its workdir.
 */
#define _GNU_SOURCE /* execvpe */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "alloc.h"
#include "buf.h"
#include "hostlist.h"
#include "launcher.h"
#include "arrayspec.h"
#include "log.h"

double ag_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

unsigned long long ag_proc_start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields start after the last ')' */
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	p++;
	/* field 3 (state) is the first after ')'; start time is field 22 */
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p + 1, ' ');
	}
	if (!p)
		return 0;
	return strtoull(p + 1, NULL, 10);
}

void ag_spec_free(struct ag_spec *s)
{
	if (!s)
		return;
	mu_free(s->job_name);
	mu_free(s->user);
	for (char **a = s->argv; a && *a; a++)
		mu_free(*a);
	mu_free(s->argv);
	ag_env_free(s->env);
	mu_free(s->workdir);
	mu_free(s->gpu_indices);
	for (int i = 0; i < s->nnodes; i++) {
		mu_free(s->nodes[i].name);
		mu_free(s->nodes[i].address);
	}
	mu_free(s->nodes);
	mu_free(s->master_addr);
	mu_free(s->stdout_pattern);
	mu_free(s->stderr_pattern);
	mu_free(s->array_spec);
	memset(s, 0, sizeof(*s));
}

void ag_env_free(char **env)
{
	for (char **e = env; e && *e; e++)
		mu_free(*e);
	mu_free(env);
}

struct envb {
	char **v;
	size_t n, cap;
};

/* Sets NAME=value, replacing an earlier NAME. */
static void env_set(struct envb *b, const char *name, const char *value)
{
	size_t nl = strlen(name);
	size_t len = nl + strlen(value) + 2;
	char *kv = mu_malloc(len);
	snprintf(kv, len, "%s=%s", name, value);
	for (size_t i = 0; i < b->n; i++) {
		if (strncmp(b->v[i], name, nl) == 0 && b->v[i][nl] == '=') {
			mu_free(b->v[i]);
			b->v[i] = kv;
			return;
		}
	}
	b->v = mu_grow(b->v, &b->cap, b->n + 2, sizeof(char *));
	b->v[b->n++] = kv;
	b->v[b->n] = NULL;
}

static void env_put(struct envb *b, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		return;
	char name[256];
	size_t nl = (size_t)(eq - kv);
	if (nl >= sizeof(name))
		return;
	memcpy(name, kv, nl);
	name[nl] = '\0';
	env_set(b, name, eq + 1);
}

static void env_int(struct envb *b, const char *name, long long v)
{
	char num[32];
	snprintf(num, sizeof(num), "%lld", v);
	env_set(b, name, num);
}

static void env_unset(struct envb *b, const char *name)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < b->n; i++) {
		if (strncmp(b->v[i], name, nl) == 0 && b->v[i][nl] == '=') {
			mu_free(b->v[i]);
			memmove(&b->v[i], &b->v[i + 1], (b->n - i) * sizeof(char *));
			b->n--;
			return;
		}
	}
}

/* A job array task's SLURM_ARRAY_* and MUSTER_ARRAY_* (JOB_ID, TASK_ID,
 * TASK_COUNT, TASK_MIN, TASK_MAX, TASK_STEP), as sbatch sets them; the
 * count, bounds and step come from the array's spec. */
static void array_env(struct envb *b, const struct ag_spec *s)
{
	static const char *const prefixes[] = { "SLURM_ARRAY_", "MUSTER_ARRAY_" };
	struct mu_arrayspec as;
	char name[48];

	if (!s->array_spec || !s->array_job_id ||
	    mu_arrayspec_parse(s->array_spec, &as, NULL, 0, NULL) < 0)
		return;
	for (size_t p = 0; p < 2; p++) {
		const long long v[] = { s->array_job_id, s->array_task_id, (long long)as.count, as.min,
					as.max, as.step };
		static const char *const keys[] = { "JOB_ID", "TASK_ID", "TASK_COUNT", "TASK_MIN",
						    "TASK_MAX", "TASK_STEP" };

		for (size_t k = 0; k < 6; k++) {
			snprintf(name, sizeof(name), "%s%s", prefixes[p], keys[k]);
			env_int(b, name, v[k]);
		}
	}
}

int ag_launch_nproc(const struct ag_spec *s)
{
	if (s->ngpu_indices > 0)
		return s->ngpu_indices;
	return s->procs_per_node > 0 ? s->procs_per_node : 1;
}

/* torchrun's PET_* defaults and the Slurm names of a Slurm job, in Slurm's
 * formats (what Lightning, DeepSpeed and accelerate read). Under a launcher
 * the per-task names are left out: the launcher's workers are the tasks,
 * and a framework that saw SLURM_NTASKS would take muster's one process per
 * node for them (Lightning picks its SLURM environment first). */
static void launch_env_frameworks(struct envb *b, const struct ag_spec *s, int local_rank,
				  long long rank, long long world, int ppn, const char *master,
				  int port, const char *cuda)
{
	int nnodes = s->nnodes > 0 ? s->nnodes : 1;
	struct mu_buf nl = MU_BUF_INIT, tpn = MU_BUF_INIT;
	const char **names = mu_calloc((size_t)nnodes + 1, sizeof(char *));
	int *tasks = mu_calloc((size_t)nnodes + 1, sizeof(int));
	int nproc = s->launcher ? ag_launch_nproc(s) : (s->ngpu_indices / ppn > 0 ? s->ngpu_indices / ppn : 1);
	long cpus = s->cpus_per_node > 0 ? s->cpus_per_node : sysconf(_SC_NPROCESSORS_ONLN);
	const char *name = s->job_name && *s->job_name ? s->job_name : NULL;

	for (int i = 0; i < s->nnodes; i++)
		names[i] = s->nodes[i].name;
	if (s->nnodes <= 0)
		names[0] = "localhost";
	for (int i = 0; i < nnodes; i++)
		tasks[i] = s->launcher ? 1 : ppn;
	mu_hostlist_compress(names, (size_t)nnodes, &nl);
	mu_hostlist_tasks_per_node(tasks, (size_t)nnodes, &tpn);
	if (!name && s->argv && s->argv[0]) /* Slurm's default: the command's name */
		name = strrchr(s->argv[0], '/') ? strrchr(s->argv[0], '/') + 1 : s->argv[0];
	/* ... but a default is never a name that Lightning takes for an
	 * interactive session ("bash"): the script's name, as sbatch gives */
	if (name && !(s->job_name && *s->job_name) &&
	    (!strcmp(name, "bash") || !strcmp(name, "interactive")))
		name = s->argv[1] && s->argv[1][0] != '-'
			       ? (strrchr(s->argv[1], '/') ? strrchr(s->argv[1], '/') + 1 : s->argv[1])
			       : "muster";

	env_int(b, "PET_NNODES", nnodes);
	env_int(b, "PET_NODE_RANK", s->node_rank);
	env_set(b, "PET_MASTER_ADDR", master);
	env_int(b, "PET_MASTER_PORT", port);
	env_int(b, "PET_NPROC_PER_NODE", nproc);
	env_int(b, "MUSTER_RESTART_COUNT", s->restart_count);

	env_int(b, "SLURM_JOB_ID", s->job_id);
	env_set(b, "SLURM_JOB_NAME", name ? name : "muster");
	env_set(b, "SLURM_JOB_NODELIST", nl.p);
	env_set(b, "SLURM_NODELIST", nl.p);
	env_int(b, "SLURM_NNODES", nnodes);
	env_int(b, "SLURM_JOB_NUM_NODES", nnodes);
	env_int(b, "SLURM_NODEID", s->node_rank);
	env_set(b, "SLURMD_NODENAME", s->node_rank >= 0 && s->node_rank < s->nnodes
					      ? s->nodes[s->node_rank].name : names[0]);
	env_int(b, "SLURM_NTASKS_PER_NODE", s->launcher ? 1 : ppn);
	env_set(b, "SLURM_TASKS_PER_NODE", tpn.p);
	env_int(b, "SLURM_GPUS_ON_NODE", s->ngpu_indices);
	env_set(b, "SLURM_JOB_GPUS", cuda);
	env_int(b, "SLURM_CPUS_ON_NODE", cpus > 0 ? cpus : 1);
	if (s->workdir && *s->workdir)
		env_set(b, "SLURM_SUBMIT_DIR", s->workdir);
	if (s->launcher) {
		env_unset(b, "SLURM_NTASKS");
		env_unset(b, "SLURM_NPROCS");
		env_unset(b, "SLURM_PROCID");
		env_unset(b, "SLURM_LOCALID");
	} else {
		env_int(b, "SLURM_NTASKS", world);
		env_int(b, "SLURM_NPROCS", world);
		env_int(b, "SLURM_PROCID", rank);
		env_int(b, "SLURM_LOCALID", local_rank);
	}
	mu_buf_release(&nl);
	mu_buf_release(&tpn);
	mu_free(tasks);
	mu_free(names);
}

char **ag_launch_env(const struct ag_spec *s, int local_rank, const char *hostfile,
		     char *const *base, const struct ag_ident *id)
{
	struct envb b = { 0 };
	b.v = mu_grow(NULL, &b.cap, 1, sizeof(char *));
	b.v[0] = NULL;
	for (char *const *e = base; e && *e; e++) {
		if (strncmp(*e, "MUSTER_", 7) == 0)
			continue; /* the agent's own config, its token above all */
		if (strncmp(*e, "SLURM", 5) == 0 || strncmp(*e, "PET_", 4) == 0)
			continue; /* the agent's own world (one started by Slurm), not the job's */
		env_put(&b, *e);
	}
	for (char **e = s->env; e && *e; e++)
		env_put(&b, *e);

	int ppn = s->launcher ? 1 : s->procs_per_node > 0 ? s->procs_per_node : 1;
	int nnodes = s->nnodes > 0 ? s->nnodes : 1;
	long long world = (long long)nnodes * ppn;
	long long rank = (long long)s->node_rank * ppn + local_rank;
	char cuda[AG_MAX_GPUS * 4 + 1] = "";
	size_t off = 0;
	for (int i = 0; i < s->ngpu_indices && off + 8 < sizeof(cuda); i++)
		off += (size_t)snprintf(cuda + off, sizeof(cuda) - off, "%s%d", i ? "," : "",
					s->gpu_indices[i]);
	const char *master = s->master_addr && *s->master_addr ? s->master_addr
			     : s->nnodes > 0 ? s->nodes[0].address : "127.0.0.1";
	int port = s->master_port > 0 ? s->master_port : (int)(20000 + s->run_id % 10000);

	env_int(&b, "MUSTER_JOB_ID", s->job_id);
	env_int(&b, "MUSTER_RUN_ID", s->run_id);
	env_int(&b, "MUSTER_ATTEMPT", s->attempt);
	env_int(&b, "NNODES", nnodes);
	env_int(&b, "NODE_RANK", s->node_rank);
	env_int(&b, "GPUS_PER_NODE", s->gpus_per_node > 0 ? s->gpus_per_node : s->ngpu_indices);
	env_set(&b, "MASTER_ADDR", master);
	env_int(&b, "MASTER_PORT", port);
	env_int(&b, "WORLD_SIZE", world);
	env_int(&b, "RANK", rank);
	env_int(&b, "LOCAL_RANK", local_rank);
	env_int(&b, "LOCAL_WORLD_SIZE", ppn);
	env_set(&b, "CUDA_VISIBLE_DEVICES", cuda);
	launch_env_frameworks(&b, s, local_rank, rank, world, ppn, master, port, cuda);
	array_env(&b, s);
	if (hostfile)
		env_set(&b, "MUSTER_HOSTFILE", hostfile);
	if (id) {
		env_set(&b, "HOME", id->home);
		env_set(&b, "USER", id->name);
		env_set(&b, "LOGNAME", id->name);
		env_set(&b, "SHELL", id->shell);
	}
	bool path = false;
	for (size_t i = 0; i < b.n && !path; i++)
		path = strncmp(b.v[i], "PATH=", 5) == 0;
	if (!path)
		env_set(&b, "PATH", "/usr/local/bin:/usr/bin:/bin");
	return b.v;
}

/* The first line of the API's --batch-host runner (api/codec_script.c):
 * the processes other than the rank-0 node's first end at once. */
static const char batch_host_guard[] =
	"[ \"${NODE_RANK:-0}\" = 0 ] && [ \"${LOCAL_RANK:-0}\" = 0 ] || exit 0\n";

enum ag_script_mode ag_script_mode(char *const *argv)
{
	int n = 0;

	while (argv && argv[n] && n < 5)
		n++;
	if (n < 5 || strcmp(argv[0], "/bin/sh") || strcmp(argv[1], "-c") ||
	    strcmp(argv[3], "muster-batch"))
		return AG_SCRIPT_NONE;
	return strncmp(argv[2], batch_host_guard, sizeof(batch_host_guard) - 1) == 0
		       ? AG_SCRIPT_BATCH_HOST : AG_SCRIPT_TASKS;
}

char **ag_script_env(char **env, const struct ag_spec *s, const char *srun_dir)
{
	enum ag_script_mode m = s->launcher ? AG_SCRIPT_NONE : ag_script_mode(s->argv);
	struct envb b = { .v = env };
	const char *path = NULL;

	if (m == AG_SCRIPT_NONE)
		return env;
	while (b.v[b.n])
		b.n++;
	b.cap = b.n + 1;
	env_set(&b, "MUSTER_SCRIPT_MODE", m == AG_SCRIPT_BATCH_HOST ? "batch-host" : "tasks");
	for (size_t i = 0; i < b.n && !path; i++)
		if (strncmp(b.v[i], "PATH=", 5) == 0)
			path = b.v[i] + 5;
	if (srun_dir && *srun_dir) {
		char *p = mu_asprintf("%s%s%s", srun_dir, path && *path ? ":" : "", path ? path : "");
		env_set(&b, "PATH", p);
		mu_free(p);
	}
	return b.v;
}

char **ag_launch_argv(const struct ag_spec *s, const char *hostfile)
{
	char rank[16], port[16], job[32];
	const char *master = s->master_addr && *s->master_addr ? s->master_addr
			     : s->nnodes > 0 ? s->nodes[0].address : "127.0.0.1";
	struct mu_launch_params p = {
		.launcher = (enum mu_launcher)s->launcher,
		.nnodes = s->nnodes > 0 ? s->nnodes : 1,
		.min_nodes = s->min_nodes,
		.nproc_per_node = ag_launch_nproc(s),
		.max_restarts = 3,
		.node_rank = rank,
		.master_addr = master,
		.master_port = port,
		.hostfile = hostfile ? hostfile : "",
		.job_id = job,
		.rdzv_host = s->node_rank == 0,
	};

	snprintf(rank, sizeof(rank), "%d", s->node_rank);
	snprintf(port, sizeof(port), "%d",
		 s->master_port > 0 ? s->master_port : (int)(20000 + s->run_id % 10000));
	snprintf(job, sizeof(job), "%" PRId64, s->job_id);
	return mu_launcher_argv(&p, s->argv);
}

int ag_spec_renumber(struct ag_spec *s, const char *node_name)
{
	int rank = -1;

	for (int i = 0; i < s->nnodes && rank < 0; i++)
		if (s->nodes[i].name && strcmp(s->nodes[i].name, node_name) == 0)
			rank = i;
	if (rank < 0)
		return MU_ENOTFOUND;
	s->node_rank = rank;
	mu_free(s->master_addr);
	s->master_addr = mu_strdup(s->nodes[0].address && *s->nodes[0].address ? s->nodes[0].address
									      : s->nodes[0].name);
	/* the old rendezvous may linger in TIME_WAIT or a dead master's peers */
	int base = s->master_port > 0 ? s->master_port : (int)(20000 + s->run_id % 10000);
	s->master_port = base + s->restart_count;
	if (s->master_port > 65535)
		s->master_port = 20000 + s->master_port % 10000;
	return 0;
}

/* Writes `text` to path via a temp file, fsync and rename. */
static int write_atomic(const char *path, const char *text, size_t len)
{
	char tmp[4200];
	int rc = MU_EIO;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto out;
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, text + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			goto out;
		}
		done += (size_t)w;
	}
	if (fsync(fd) != 0 || close(fd) != 0)
		goto out;
	if (rename(tmp, path) != 0)
		goto out;
	rc = 0;
out:
	if (rc)
		unlink(tmp);
	return rc;
}

/* The hostfile's text (new: mu_free), its length in *len. */
static char *hostfile_text(const struct ag_spec *s, size_t *len)
{
	size_t cap = 64, n = 0;
	for (int i = 0; i < s->nnodes; i++)
		cap += strlen(s->nodes[i].name) + strlen(s->nodes[i].address) + 32;
	char *text = mu_malloc(cap);
	text[0] = '\0';
	for (int i = 0; i < s->nnodes; i++) {
		const struct ag_gang_node *g = &s->nodes[i];
		const char *host = g->address && *g->address ? g->address : g->name;
		/* DeepSpeed refuses a host twice: nodes that share an address
		 * (a one-address test setup) are written by their unique names */
		for (int k = 0; k < i && host != g->name; k++) {
			const struct ag_gang_node *o = &s->nodes[k];
			if (strcmp(host, o->address && *o->address ? o->address : o->name) == 0)
				host = g->name;
		}
		n += (size_t)snprintf(text + n, cap - n, "%s slots=%d\n", host, g->gpus);
	}
	*len = n;
	return text;
}

int ag_write_hostfile(const struct ag_spec *s, const char *path)
{
	size_t n;
	char *text = hostfile_text(s, &n);
	int rc = write_atomic(path, text, n);
	mu_free(text);
	return rc;
}

int ag_update_hostfile(const struct ag_spec *s, const char *path, bool *changed)
{
	size_t n;
	char *text = hostfile_text(s, &n);
	char *old = mu_malloc(n + 1); /* one more byte: a longer file differs */
	size_t got = 0;
	int rc = 0;

	*changed = false;
	FILE *f = fopen(path, "r");
	if (f) {
		got = fread(old, 1, n + 1, f);
		fclose(f);
	}
	if (!f || got != n || memcmp(old, text, n) != 0) {
		rc = write_atomic(path, text, n);
		*changed = rc == 0;
	}
	mu_free(old);
	mu_free(text);
	return rc;
}

static int mkdirs(const char *path, mode_t last)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			if (mkdir(buf, 0755) != 0 && errno != EEXIST)
				return MU_EIO;
			*p = '/';
		}
	}
	if (mkdir(buf, last) != 0 && errno != EEXIST)
		return MU_EIO;
	return 0;
}

/* The fd on which a process tells the agent why it could not exec
 * ("<end reason>\t<message>"); EOF without a word means it did. */
#define START_FD 3

/* In the child, before exec: write the failure to the agent and the err
 * log, and end. Only async-signal-safe calls. */
static void __attribute__((noreturn)) child_fail(const char *reason, const char *what,
						 const char *arg, int e)
{
	char msg[600];
	int n = snprintf(msg, sizeof(msg), "%s\t%s %s: %s", reason, what, arg, strerror(e));
	if (n > 0 && write(START_FD, msg, (size_t)n) < 0)
		n = 0;
	dprintf(2, "muster-agent: %s %s: %s\n", what, arg, strerror(e));
	_exit(127);
}

/* In the keeper (child of the agent, in the run's group and cgroup): start
 * the real process, wait for it, record how it ended. Never returns. The
 * keeper stays root (it writes the exit file where the job cannot); the
 * job's process drops to the account before it opens anything. */
static void keeper(const struct ag_spec *s, struct ag_run *r, const struct ag_node *n,
		   const struct ag_ident *id, int local, char **env, char **argv, int start_fd)
{
	char out[4200], err[4200], exitf[4200], pidf[4200];
	ag_token_wipe(); /* this fork's copy of the node credential */
	snprintf(out, sizeof(out), "%s/proc%d.out", r->dir, local);
	snprintf(err, sizeof(err), "%s/proc%d.err", r->dir, local);
	snprintf(exitf, sizeof(exitf), "%s/exit.%d", r->dir, local);
	/* Nothing of the agent's (its gRPC socket above all) may stay open in
	 * the keeper or the job: a killed agent's connection must close. */
	if (start_fd != START_FD) {
		dup2(start_fd, START_FD);
		close(start_fd);
	}
	fcntl(START_FD, F_SETFD, FD_CLOEXEC);
	if (close_range(START_FD + 1, ~0U, 0) != 0)
		for (int fd = START_FD + 1; fd < 65536; fd++)
			close(fd);
	/* into the run's cgroup before anything forks */
	int e = ag_cg_enter(&n->cg, r->cgroup, getpid());
	if (e != 0)
		child_fail("launch_failed", "cgroup", r->cgroup, -e);
	/* an OOM kill in the run's cgroup takes the job, never its keeper */
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "-1000", 5) < 0)
			e = errno;
		close(fd);
	}
	pid_t pid = fork();
	if (pid < 0)
		child_fail("launch_failed", "fork", "", errno);
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (write(fd, "0", 1) < 0)
				e = errno;
			close(fd);
		}
		if ((e = ag_runas_drop(id)) != 0)
			child_fail("bad_user", "become", id->name, -e);
		/* opened as the account: the job cannot point the agent at files */
		int in = open("/dev/null", O_RDONLY);
		int o = open(out, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
		if (o < 0)
			child_fail("launch_failed", "open", out, errno);
		int ef = open(err, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
		if (in < 0 || ef < 0)
			child_fail("launch_failed", "open", err, errno);
		dup2(in, 0);
		dup2(o, 1);
		dup2(ef, 2);
		const char *wd = s->workdir && *s->workdir ? s->workdir : id->home;
		if (chdir(wd) != 0)
			child_fail("bad_workdir", "workdir", wd, errno);
		char owhy[4200];
		if ((e = ag_output_tee(s, n->name, local, id, START_FD, owhy, sizeof(owhy))) != 0)
			child_fail("bad_output", "output file", owhy, e < -1 ? -e : EIO);
		/* A launcher would die of the pre-timeout signal (torchrun,
		 * deepspeed and accelerate leave USR1 at its default): it
		 * ignores it, and so do its workers unless they install a
		 * handler (Lightning does for USR1). */
		if (s->launcher && s->signal > 0 && s->signal != SIGKILL && s->signal != SIGSTOP)
			signal(s->signal, SIG_IGN);
		/* the command is looked up on the job's PATH, not the agent's
		 * (execvpe searches the caller's): this child is about to exec */
		extern char **environ;
		environ = env;
		execvpe(argv[0], argv, env);
		dprintf(2, "muster-agent: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(START_FD);
	/* The keeper outlives a TERM to the group so it can record the exit. */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	/* ... and the job's pre-timeout signal, which is for the job alone */
	if (s->signal > 0 && s->signal != SIGKILL && s->signal != SIGSTOP)
		signal(s->signal, SIG_IGN);
	/* the process itself, for a signal to it alone (batch_only) */
	char pidline[32];
	snprintf(pidf, sizeof(pidf), "%s/pid.%d", r->dir, local);
	int pl = snprintf(pidline, sizeof(pidline), "%d\n", (int)pid);
	write_atomic(pidf, pidline, (size_t)pl);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	char line[64];
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
	int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	int len = snprintf(line, sizeof(line), "%d %d\n", code, sig);
	write_atomic(exitf, line, (size_t)len);
	_exit(sig ? 128 + sig : code);
}

/* A log file created by the agent in the run's directory (which only the
 * agent can write), owned by the account, mode 0600. */
static int make_log(const char *path, const struct ag_ident *id)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	int rc = 0;
	if (fd < 0)
		return -errno;
	if ((id->drop && fchown(fd, id->uid, id->gid) != 0) || fchmod(fd, 0600) != 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* Reads what the processes said before exec (see START_FD): 0 when all
 * exec'd, else the first failure in r->end_reason / r->message. */
static int wait_started(struct ag_run *r, int *fds, int nfds)
{
	int rc = 0;
	double until = ag_now() + 30;
	for (int i = 0; i < nfds; i++) {
		char buf[600];
		size_t got = 0;
		for (;;) {
			int left = (int)((until - ag_now()) * 1000);
			struct pollfd p = { .fd = fds[i], .events = POLLIN };
			if (left <= 0 || poll(&p, 1, left) == 0) {
				snprintf(buf, sizeof(buf), "launch_failed\tprocess %d did not exec within 30s", i);
				got = strlen(buf);
				break;
			}
			ssize_t k = read(fds[i], buf + got, sizeof(buf) - 1 - got);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0 || got + (size_t)k >= sizeof(buf) - 1) {
				if (k > 0)
					got += (size_t)k;
				break;
			}
			got += (size_t)k;
		}
		buf[got] = '\0';
		if (got && !rc) {
			char *tab = strchr(buf, '\t');
			if (tab)
				*tab = '\0';
			snprintf(r->end_reason, sizeof(r->end_reason), "%.31s", buf);
			snprintf(r->message, sizeof(r->message), "%.159s", tab ? tab + 1 : buf);
			rc = MU_EINVAL;
		}
	}
	return rc;
}

/* The signal timer and restart policy of a run being started. */
static void run_start_extras(struct ag_run *r, const struct ag_spec *s)
{
	r->restart_on_shrink = s->restart_on_shrink && s->min_nodes > 0;
	r->restart_count = s->restart_count;
	r->signal = s->signal;
	r->signal_batch_only = s->signal_batch_only;
	if (s->signal > 0 && s->time_limit_s > 0) {
		double at = r->started + (double)s->time_limit_s - (double)s->signal_before_s;
		r->signal_at = at > r->started ? at : r->started;
	}
}

int ag_run_start(struct ag_run *r, const struct ag_spec *s, const struct ag_node *n)
{
	int rc = 0;
	char hostfile[4200];
	char **env = NULL;
	char **argv = NULL;
	struct ag_ident *id = mu_calloc(1, sizeof(*id));
	struct ag_cg_limits *lim = mu_calloc(1, sizeof(*lim));
	int fds[AG_MAX_PROCS];
	int nfds = 0;
	memset(r, 0, sizeof(*r));
	r->run_id = s->run_id;
	r->job_id = s->job_id;
	r->state = AG_RUN_LIVE;
	r->started = ag_now();
	r->cg = &n->cg;
	if (s->time_limit_s > 0) {
		r->deadline = r->started + (double)s->time_limit_s;
		r->deadline_epoch = (int64_t)time(NULL) + s->time_limit_s;
	}
	snprintf(r->dir, sizeof(r->dir), "%s/runs/%" PRId64, n->state_dir, s->run_id);
	run_start_extras(r, s);
	int ppn = s->launcher ? 1 : s->procs_per_node > 0 ? s->procs_per_node : 1;
	if (ppn > AG_MAX_PROCS || !s->argv || !s->argv[0]) {
		snprintf(r->message, sizeof(r->message), "%s",
			 ppn > AG_MAX_PROCS ? "too many processes per node" : "empty command");
		snprintf(r->end_reason, sizeof(r->end_reason), "launch_failed");
		rc = MU_EINVAL;
		goto out;
	}
	if (ag_runas_resolve(&n->runas, s->user, id, r->message, sizeof(r->message)) != 0) {
		snprintf(r->end_reason, sizeof(r->end_reason), "bad_user");
		rc = MU_EFORBIDDEN;
		goto out;
	}
	if (s->workdir && *s->workdir && s->workdir[0] != '/') {
		snprintf(r->message, sizeof(r->message), "workdir %.120s is not an absolute path",
			 s->workdir);
		snprintf(r->end_reason, sizeof(r->end_reason), "bad_workdir");
		rc = MU_EINVAL;
		goto out;
	}
	/* the run's directory: the agent's (exit files, hostfile), readable by
	 * the account's group; the logs in it are the account's own */
	snprintf(hostfile, sizeof(hostfile), "%s/runs", n->state_dir);
	if (mkdirs(hostfile, 0755) != 0 || mkdirs(r->dir, 0750) != 0 ||
	    (id->drop && chown(r->dir, 0, id->gid) != 0) || chmod(r->dir, 0750) != 0) {
		snprintf(r->message, sizeof(r->message), "cannot create %.80s: %s", r->dir, strerror(errno));
		snprintf(r->end_reason, sizeof(r->end_reason), "launch_failed");
		rc = MU_EIO;
		goto out;
	}
	for (int i = 0; i < ppn; i++) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/exit.%d", r->dir, i);
		unlink(path); /* a rerun of the same run id never reads an old exit */
		for (int k = 0; k < 2; k++) {
			snprintf(path, sizeof(path), "%s/proc%d.%s", r->dir, i, k ? "err" : "out");
			int e = make_log(path, id);
			if (e != 0) {
				snprintf(r->message, sizeof(r->message), "cannot create %.120s: %s", path,
					 strerror(-e));
				snprintf(r->end_reason, sizeof(r->end_reason), "launch_failed");
				rc = MU_EIO;
				goto out;
			}
		}
	}
	snprintf(hostfile, sizeof(hostfile), "%s/hostfile", r->dir);
	if (ag_write_hostfile(s, hostfile) != 0) {
		snprintf(r->message, sizeof(r->message), "cannot write %.120s", hostfile);
		snprintf(r->end_reason, sizeof(r->end_reason), "launch_failed");
		rc = MU_EIO;
		goto out;
	}
	if (n->cg.mode != AG_CG_OFF) {
		snprintf(r->cgroup, sizeof(r->cgroup), "%s/%s/run-%" PRId64, n->cg.root, n->name,
			 s->run_id);
		lim->mem_bytes = s->mem_per_node;
		lim->cpus = s->cpus_per_node;
		lim->pids_max = n->pids_max;
		for (int g = 0; g < n->ngpu_devs && g < AG_MAX_GPUS; g++) {
			bool granted = false;
			for (int k = 0; k < s->ngpu_indices; k++)
				granted |= s->gpu_indices[k] == g;
			if (!granted && n->gpu_dev[g]) {
				lim->deny_major[lim->ndeny] = (int)major(n->gpu_dev[g]);
				lim->deny_minor[lim->ndeny++] = (int)minor(n->gpu_dev[g]);
			}
		}
		rc = ag_cg_create(&n->cg, r->cgroup, lim, r->message, sizeof(r->message));
		if (rc != 0) {
			snprintf(r->end_reason, sizeof(r->end_reason), "launch_failed");
			goto out;
		}
	} else if (s->mem_per_node > 0) {
		snprintf(r->message, sizeof(r->message),
			 "mem_per_node needs cgroups, which are off on this node");
		snprintf(r->end_reason, sizeof(r->end_reason), "launch_failed");
		rc = MU_EUNAVAIL;
		goto out;
	}
	extern char **environ;
	argv = ag_launch_argv(s, hostfile);
	r->nprocs = ppn;
	for (int i = 0; i < ppn; i++) {
		int pfd[2];
		if (pipe2(pfd, O_CLOEXEC) != 0) {
			snprintf(r->message, sizeof(r->message), "pipe: %s", strerror(errno));
			rc = MU_EIO;
			goto out;
		}
		env = ag_script_env(ag_launch_env(s, i, hostfile, environ, id), s, n->srun_dir);
		pid_t pid = fork();
		if (pid < 0) {
			close(pfd[0]);
			close(pfd[1]);
			snprintf(r->message, sizeof(r->message), "fork: %s", strerror(errno));
			rc = MU_EIO;
			goto out;
		}
		if (pid == 0) {
			close(pfd[0]);
			setpgid(0, r->pgid); /* 0 for the first: a new group */
			keeper(s, r, n, id, i, env, argv, pfd[1]);
		}
		close(pfd[1]);
		fds[nfds++] = pfd[0];
		if (i == 0)
			r->pgid = pid;
		setpgid(pid, r->pgid); /* both sides, no race */
		r->pids[i] = pid;
		ag_env_free(env);
		env = NULL;
	}
	r->start_time = ag_proc_start_time(r->pgid);
	rc = wait_started(r, fds, nfds);
	if (rc)
		goto out;
	mu_info("run=%" PRId64 " job=%" PRId64 " started pgid=%d procs=%d user=%s uid=%d cgroup=%s"
		" dir=%s%s%s restarts=%d", r->run_id, r->job_id, (int)r->pgid, ppn, id->name, (int)id->uid,
		r->cgroup[0] ? r->cgroup : "-", r->dir, s->launcher ? " launcher=" : "",
		s->launcher ? mu_launcher_name((enum mu_launcher)s->launcher) : "", s->restart_count);
out:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	ag_env_free(env);
	mu_launcher_argv_free(argv);
	if (rc) {
		if (r->pgid > 0)
			kill(-r->pgid, SIGKILL);
		ag_cg_kill(r->cg, r->cgroup);
		for (int i = 0; i < r->nprocs; i++)
			if (r->pids[i] > 0 && waitpid(r->pids[i], NULL, 0) == r->pids[i])
				r->pids[i] = 0;
		if (r->cgroup[0] && ag_cg_nprocs(r->cg, r->cgroup) <= 0)
			ag_cg_remove(r->cg, r->cgroup);
		r->state = AG_RUN_DONE;
		r->exit_code = 127;
		mu_err("run=%" PRId64 " failed to start (%s): %s", r->run_id,
		       r->end_reason[0] ? r->end_reason : "launch_failed", r->message);
	}
	mu_free(lim);
	mu_free(id);
	return rc;
}

void ag_run_stop(struct ag_run *r, int grace_s, const char *why)
{
	if (r->state == AG_RUN_DONE || (r->pgid <= 0 && !r->cgroup[0]))
		return;
	if (grace_s < 0) {
		if (r->pgid > 0)
			kill(-r->pgid, SIGKILL);
		ag_cg_kill(r->cg, r->cgroup);
		r->kill_at = ag_now();
	} else if (r->state == AG_RUN_LIVE) {
		if (r->pgid > 0)
			kill(-r->pgid, SIGTERM);
		ag_cg_signal(r->cg, r->cgroup, SIGTERM); /* those that left the group too */
		r->kill_at = ag_now() + grace_s;
	} else {
		return;
	}
	r->state = AG_RUN_STOPPING;
	snprintf(r->message, sizeof(r->message), "%s", why ? why : "stopped");
	mu_info("run=%" PRId64 " stopping pgid=%d cgroup=%s grace=%ds: %s", r->run_id, (int)r->pgid,
		r->cgroup[0] ? r->cgroup : "-", grace_s < 0 ? 0 : grace_s, r->message);
}

void ag_reap(struct ag_run *runs, int nruns)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0)
			return;
		for (int i = 0; i < nruns; i++)
			for (int j = 0; j < runs[i].nprocs && j < AG_MAX_PROCS; j++)
				if (runs[i].pids[j] == pid)
					runs[i].pids[j] = 0;
	}
}

/* Exit code/signal from the keepers' exit files (a keeper killed by KILL
 * leaves none: that process ended by SIGKILL). Returns how many exist. */
static int read_exits(struct ag_run *r, bool set)
{
	int found = 0;
	if (set) {
		r->exit_code = 0;
		r->exit_signal = 0;
	}
	for (int i = 0; i < r->nprocs; i++) {
		char path[4200];
		int code = 0, sig = SIGKILL;
		snprintf(path, sizeof(path), "%s/exit.%d", r->dir, i);
		FILE *f = fopen(path, "r");
		if (f) {
			found++;
			if (fscanf(f, "%d %d", &code, &sig) != 2) {
				code = 0;
				sig = SIGKILL;
			}
			fclose(f);
		}
		if (!set)
			continue;
		if (code && !r->exit_code)
			r->exit_code = code;
		if (sig && !r->exit_signal)
			r->exit_signal = sig;
	}
	return found;
}

/* The pre-timeout signal: to the whole run (group and cgroup; the keepers
 * ignore it), or with batch_only to the processes the agent started. */
static void send_job_signal(struct ag_run *r)
{
	r->signal_sent = true;
	if (r->signal_batch_only) {
		for (int i = 0; i < r->nprocs; i++) {
			char path[4200];
			int pid = 0;
			snprintf(path, sizeof(path), "%s/pid.%d", r->dir, i);
			FILE *f = fopen(path, "r");
			if (f) {
				if (fscanf(f, "%d", &pid) != 1)
					pid = 0;
				fclose(f);
			}
			if (pid > 1)
				kill(pid, r->signal);
		}
	} else {
		if (r->pgid > 0)
			kill(-r->pgid, r->signal);
		ag_cg_signal(r->cg, r->cgroup, r->signal);
	}
	mu_info("run=%" PRId64 " sent signal %d%s ahead of the time limit", r->run_id, r->signal,
		r->signal_batch_only ? " (batch only)" : "");
}

bool ag_run_poll(struct ag_run *r)
{
	if (r->state == AG_RUN_DONE)
		return false;
	double now = ag_now();
	if (r->state == AG_RUN_LIVE && r->signal > 0 && !r->signal_sent && r->signal_at > 0 &&
	    now >= r->signal_at)
		send_job_signal(r);
	if (r->state == AG_RUN_LIVE && r->deadline > 0 && now >= r->deadline) {
		/* the scheduler stops it at its limit too; whichever comes first, it ends TIMEOUT */
		if (!r->end_reason[0])
			snprintf(r->end_reason, sizeof(r->end_reason), "timeout");
		ag_run_stop(r, 10, "time limit reached");
	}
	if (r->state == AG_RUN_STOPPING && now >= r->kill_at) {
		if (r->pgid > 0)
			kill(-r->pgid, SIGKILL);
		ag_cg_kill(r->cg, r->cgroup);
	}
	for (int i = 0; i < r->nprocs; i++)
		if (r->pids[i] > 0)
			return false; /* a keeper of ours still runs (or is unreaped) */
	if (r->cgroup[0] && ag_cg_exists(r->cg, r->cgroup)) {
		/* the run is over when its cgroup is empty; once every process the
		 * agent started has ended, what they left behind is killed */
		int left = ag_cg_nprocs(r->cg, r->cgroup);
		if (left > 0) {
			if (!r->leftovers_killed && (!r->adopted || read_exits(r, false) == r->nprocs)) {
				mu_info("run=%" PRId64 " its processes ended: killing %d left in cgroup %s",
					r->run_id, left, r->cgroup);
				ag_cg_kill(r->cg, r->cgroup);
				r->leftovers_killed = true;
			}
			return false;
		}
	} else if (r->pgid > 0 && kill(-r->pgid, 0) == 0) {
		return false; /* adopted, or a process the keeper left behind */
	}
	read_exits(r, true);
	if (r->cgroup[0]) {
		if (ag_cg_oom(r->cg, r->cgroup) && !r->end_reason[0]) {
			snprintf(r->end_reason, sizeof(r->end_reason), "oom");
			snprintf(r->message, sizeof(r->message),
				 "out of memory: the kernel killed a process of the run at its memory limit");
		}
		ag_cg_remove(r->cg, r->cgroup);
	}
	r->state = AG_RUN_DONE;
	mu_info("run=%" PRId64 " exited code=%d signal=%d%s%s", r->run_id, r->exit_code,
		r->exit_signal, r->end_reason[0] ? " reason=" : "", r->end_reason);
	return true;
}
