/*
 * srun.c - muster's stand-in for Slurm's srun in batch scripts, installed
 * as <libexec>/muster/bin/srun, which the agent puts first on the PATH of
 * a script job (docs/cli.md, "srun in batch scripts").
 *
 * The script already runs once per task of the job (or, with
 * --batch-host, once on the rank-0 node: MUSTER_SCRIPT_MODE=batch-host),
 * so `srun [OPTIONS] CMD` starts no step: each process of the job that is
 * a task of the step the options ask for execs CMD, renumbered for the
 * step (SLURM_PROCID, SLURM_NTASKS, RANK, WORLD_SIZE, ...); the others
 * exit 0. A step across nodes from a --batch-host script cannot be
 * started and is an error.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "srun_opts.h"

extern char **environ;

static const char usage[] =
	"Usage: srun [OPTIONS...] executable [args...]\n"
	"muster's srun for batch scripts: the script runs once per task already, so srun runs\n"
	"CMD in the processes that are tasks of the step its options ask for (-N, -n,\n"
	"--ntasks-per-node), renumbered for the step; -l/--label, --export and -D/--chdir\n"
	"apply; binding, MPI and resource options are accepted and ignored (docs/cli.md).\n";

static const char batch_host_msg[] =
	"muster: srun: job steps across nodes are not supported in a --batch-host script; submit "
	"without --batch-host (the script then runs on every node) or start a launcher "
	"(torchrun --rdzv...) with $MUSTER_HOSTFILE\n";

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return dflt;
	n = strtol(v, &end, 10);
	return *end || n < 0 || n > INT_MAX ? dflt : (int)n;
}

struct envb {
	char **v;
	size_t n, cap;
};

static void envb_put(struct envb *b, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t nl = eq ? (size_t)(eq - kv) : strlen(kv);

	for (size_t i = 0; i < b->n; i++)
		if (!strncmp(b->v[i], kv, nl) && b->v[i][nl] == '=') {
			mu_free(b->v[i]);
			b->v[i] = mu_strdup(kv);
			return;
		}
	b->v = mu_grow(b->v, &b->cap, b->n + 2, sizeof(char *));
	b->v[b->n++] = mu_strdup(kv);
	b->v[b->n] = NULL;
}

static void envb_set(struct envb *b, const char *name, const char *value)
{
	char *kv = mu_asprintf("%s=%s", name, value);

	envb_put(b, kv);
	mu_free(kv);
}

static void envb_int(struct envb *b, const char *name, long long v)
{
	char num[32];

	snprintf(num, sizeof(num), "%lld", v);
	envb_set(b, name, num);
}

/* Sets NAME to v only where the launch contract set it (RANK, ...). */
static void envb_int_if_set(struct envb *b, const char *name, long long v)
{
	if (getenv(name))
		envb_int(b, name, v);
}

/* What --export=NONE keeps: Slurm's own names, muster's, the launch
 * contract's (the step's identity is no user variable). */
static bool kept_by_none(const char *kv)
{
	static const char *const names[] = { "RANK=", "WORLD_SIZE=", "LOCAL_RANK=",
					     "LOCAL_WORLD_SIZE=", "NODE_RANK=", "NNODES=",
					     "MASTER_ADDR=", "MASTER_PORT=", "GPUS_PER_NODE=",
					     "CUDA_VISIBLE_DEVICES=" };

	if (!strncmp(kv, "SLURM", 5) || !strncmp(kv, "MUSTER_", 7) || !strncmp(kv, "PET_", 4))
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(kv, names[i], strlen(names[i])))
			return true;
	return false;
}

/* The environment --export asks for, as sbatch's: ALL (the default) keeps
 * this one, NONE only what kept_by_none keeps; NAME=VALUE sets, NAME alone
 * copies this environment's value; a list without ALL is NONE plus it. */
static void export_env(struct envb *b, const char *spec)
{
	bool all = !spec;
	char *list = spec ? mu_strdup(spec) : NULL;

	for (char *t = list, *next; t && *t; t = next) {
		next = strchr(t, ',');
		if (next)
			*next++ = '\0';
		if (!strcmp(t, "ALL"))
			all = true;
	}
	for (char **e = environ; e && *e; e++)
		if (all || kept_by_none(*e))
			envb_put(b, *e);
	if (list) {
		mu_free(list);
		list = mu_strdup(spec);
	}
	for (char *t = list, *next; t && *t; t = next) {
		next = strchr(t, ',');
		if (next)
			*next++ = '\0';
		if (!strcmp(t, "ALL") || !strcmp(t, "NONE") || !*t)
			continue;
		if (strchr(t, '='))
			envb_put(b, t);
		else if (getenv(t))
			envb_set(b, t, getenv(t));
	}
	mu_free(list);
}

/* CMD on this environment's PATH (srun finds the program before it sets
 * the task's environment, so --export=NONE still finds it). new, or NULL. */
static char *find_cmd(const char *cmd)
{
	const char *path = getenv("PATH");
	char *dirs, *next;

	if (strchr(cmd, '/'))
		return mu_strdup(cmd);
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	dirs = mu_strdup(path);
	for (char *d = dirs; d; d = next) {
		next = strchr(d, ':');
		if (next)
			*next++ = '\0';
		char *f = mu_asprintf("%s/%s", *d ? d : ".", cmd);
		struct stat st;
		if (stat(f, &st) == 0 && S_ISREG(st.st_mode) && access(f, X_OK) == 0) {
			mu_free(dirs);
			return f;
		}
		mu_free(f);
	}
	mu_free(dirs);
	return NULL;
}

/* Writes the complete lines of *pending to fd, each after `prefix`; at
 * EOF (`last`) the rest too. */
static void label_flush(int fd, struct mu_buf *pending, const char *prefix, bool last)
{
	size_t start = 0;
	struct mu_buf out = MU_BUF_INIT;

	for (size_t i = 0; i < pending->len; i++) {
		if (pending->p[i] != '\n')
			continue;
		mu_buf_adds(&out, prefix);
		mu_buf_add(&out, pending->p + start, i + 1 - start);
		start = i + 1;
	}
	if (last && start < pending->len) {
		mu_buf_adds(&out, prefix);
		mu_buf_add(&out, pending->p + start, pending->len - start);
		mu_buf_addc(&out, '\n');
		start = pending->len;
	}
	for (size_t done = 0; done < out.len;) {
		ssize_t w = write(fd, out.p + done, out.len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	if (start > 0) {
		memmove(pending->p, pending->p + start, pending->len - start);
		pending->len -= start;
	}
	mu_buf_release(&out);
}

/* -l: CMD's stdout and stderr through pipes, each line after "<task>: ".
 * The signals of the job reach CMD through the run's process group: this
 * process ignores them to write what CMD still prints. */
static int run_labelled(const char *path, char *const *argv, char **env, int procid, int ntasks)
{
	int out[2], err[2], st = 0;
	char prefix[32];
	int width = snprintf(NULL, 0, "%d", ntasks > 0 ? ntasks - 1 : 0);
	struct mu_buf pend[2] = { MU_BUF_INIT, MU_BUF_INIT };
	pid_t pid;

	snprintf(prefix, sizeof(prefix), "%*d: ", width, procid);
	if (pipe(out) != 0 || pipe(err) != 0) {
		fprintf(stderr, "muster: srun: pipe: %s\n", strerror(errno));
		return 1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "muster: srun: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(out[1]);
		close(err[0]);
		close(err[1]);
		execve(path, argv, env);
		dprintf(2, "muster: srun: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	struct pollfd p[2] = { { .fd = out[0], .events = POLLIN }, { .fd = err[0], .events = POLLIN } };
	int open_fds = 2;
	while (open_fds > 0) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int k = 0; k < 2; k++) {
			char buf[8192];
			ssize_t n;

			if (p[k].fd < 0 || !(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(p[k].fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				label_flush(k + 1, &pend[k], prefix, true);
				close(p[k].fd);
				p[k].fd = -1;
				open_fds--;
				continue;
			}
			mu_buf_add(&pend[k], buf, (size_t)n);
			label_flush(k + 1, &pend[k], prefix, false);
		}
	}
	mu_buf_release(&pend[0]);
	mu_buf_release(&pend[1]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

int main(int argc, char **argv)
{
	struct srun_opts o;
	struct srun_job j;
	struct srun_step st;
	struct envb env = { 0 };
	char err[512];
	const char *mode = getenv("MUSTER_SCRIPT_MODE");
	bool batch_host = mode && !strcmp(mode, "batch-host");
	bool first = env_int("SLURM_PROCID", 0) == 0; /* warnings: once per job, from task 0 */
	char *path;
	int rc;

	if (srun_opts_parse(&o, argc, argv, err, sizeof(err)) != 0) {
		fprintf(stderr, "muster: srun: %s\nTry \"srun --help\" for more information\n", err);
		return 1;
	}
	if (o.help) {
		fputs(usage, stdout);
		return 0;
	}
	if (o.version) {
		puts("slurm (muster's srun for batch scripts)");
		return 0;
	}
	if (o.argi >= argc) {
		fprintf(stderr, "muster: srun: no command to run\n%s", usage);
		return 1;
	}
	if (first && o.warn[0])
		fputs(o.warn, stderr);
	j.nnodes = env_int("SLURM_NNODES", 1);
	j.ppn = env_int("SLURM_NTASKS_PER_NODE", 0);
	if (j.ppn <= 0)
		j.ppn = env_int("SLURM_NTASKS", 1) / (j.nnodes > 0 ? j.nnodes : 1);
	j.node_id = env_int("SLURM_NODEID", 0);
	j.local_id = env_int("SLURM_LOCALID", 0);
	if (srun_step_plan(&o, &j, &st, err, sizeof(err)) != 0) {
		fprintf(stderr, "muster: srun: %s\n", err);
		return 1;
	}
	if (batch_host) {
		/* the one process of the script is the step's only possible task */
		if (st.ntasks != 1) {
			fputs(batch_host_msg, stderr);
			return 1;
		}
		st.runs = true;
		st.procid = 0;
		st.tasks_on_node = 1;
		j.local_id = 0;
	}
	if (!st.runs)
		return 0;
	path = find_cmd(argv[o.argi]);
	if (!path) {
		fprintf(stderr, "muster: srun: %s: command not found\n", argv[o.argi]);
		return 127;
	}
	export_env(&env, o.export);
	envb_int(&env, "SLURM_PROCID", st.procid);
	envb_int(&env, "SLURM_LOCALID", j.local_id);
	envb_int(&env, "SLURM_NTASKS", st.ntasks);
	envb_int(&env, "SLURM_NPROCS", st.ntasks);
	envb_int(&env, "SLURM_NNODES", st.nnodes);
	envb_int(&env, "SLURM_STEP_NUM_TASKS", st.ntasks);
	envb_int(&env, "SLURM_STEP_NUM_NODES", st.nnodes);
	envb_set(&env, "SLURM_STEP_TASKS_PER_NODE", st.tasks_per_node);
	envb_set(&env, "SLURM_TASKS_PER_NODE", st.tasks_per_node);
	if (o.ntasks_per_node)
		envb_int(&env, "SLURM_NTASKS_PER_NODE", o.ntasks_per_node);
	envb_int_if_set(&env, "RANK", st.procid);
	envb_int_if_set(&env, "WORLD_SIZE", st.ntasks);
	envb_int_if_set(&env, "LOCAL_RANK", j.local_id);
	envb_int_if_set(&env, "LOCAL_WORLD_SIZE", st.tasks_on_node);
	if (o.chdir && chdir(o.chdir) != 0) {
		fprintf(stderr, "muster: srun: chdir %s: %s\n", o.chdir, strerror(errno));
		return 1;
	}
	if (o.label) {
		rc = run_labelled(path, argv + o.argi, env.v, st.procid, st.ntasks);
	} else {
		execve(path, argv + o.argi, env.v);
		fprintf(stderr, "muster: srun: exec %s: %s\n", argv[o.argi], strerror(errno));
		rc = errno == ENOENT ? 127 : 126;
	}
	for (size_t i = 0; i < env.n; i++)
		mu_free(env.v[i]);
	mu_free(env.v);
	mu_free(path);
	return rc;
}
