/* launcher.c - see launcher.h. */
#include "launcher.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"

static const char *const names[] = {
	[MU_LAUNCHER_NONE] = "none",
	[MU_LAUNCHER_TORCHRUN] = "torchrun",
	[MU_LAUNCHER_DEEPSPEED] = "deepspeed",
	[MU_LAUNCHER_ACCELERATE] = "accelerate",
};

const char *mu_launcher_name(enum mu_launcher l)
{
	return (unsigned)l < sizeof(names) / sizeof(names[0]) ? names[l] : "none";
}

int mu_launcher_parse(const char *s, enum mu_launcher *out)
{
	if (!s || !*s) {
		*out = MU_LAUNCHER_NONE;
		return 0;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum mu_launcher)i;
			return 0;
		}
	}
	return MU_EINVAL;
}

struct words {
	char **v;
	size_t n, cap;
};

static void add(struct words *w, const char *s)
{
	w->v = mu_grow(w->v, &w->cap, w->n + 2, sizeof(char *));
	w->v[w->n++] = mu_strdup(s);
	w->v[w->n] = NULL;
}

/* "--name=value" as one word: no launcher mistakes a value for a flag. */
static void flag(struct words *w, const char *name, const char *value)
{
	char buf[1200];

	snprintf(buf, sizeof(buf), "--%s=%s", name, value ? value : "");
	add(w, buf);
}

static void flag_int(struct words *w, const char *name, long long v)
{
	char num[32];

	snprintf(num, sizeof(num), "%lld", v);
	flag(w, name, num);
}

static void torchrun(struct words *w, const struct mu_launch_params *p)
{
	char buf[600];

	add(w, "python3");
	add(w, "-m");
	add(w, "torch.distributed.run");
	if (p->min_nodes > 0 && p->min_nodes < p->nnodes) {
		/* elastic: c10d rendezvous at the rank-0 node, which says it
		 * hosts the store (on one host every address looks local) */
		snprintf(buf, sizeof(buf), "%d:%d", p->min_nodes, p->nnodes);
		flag(w, "nnodes", buf);
		flag_int(w, "nproc_per_node", p->nproc_per_node);
		flag(w, "rdzv_backend", "c10d");
		snprintf(buf, sizeof(buf), "%s:%s", p->master_addr, p->master_port);
		flag(w, "rdzv_endpoint", buf);
		snprintf(buf, sizeof(buf), "muster-%s", p->job_id);
		flag(w, "rdzv_id", buf);
		flag(w, "rdzv_conf", p->rdzv_host ? "is_host=1" : "is_host=0");
		flag_int(w, "max_restarts", p->max_restarts);
		return;
	}
	flag_int(w, "nnodes", p->nnodes);
	flag(w, "node_rank", p->node_rank);
	flag_int(w, "nproc_per_node", p->nproc_per_node);
	flag(w, "master_addr", p->master_addr);
	flag(w, "master_port", p->master_port);
}

static void deepspeed(struct words *w, const struct mu_launch_params *p)
{
	/* one per node without ssh: the runner starts this node's share only */
	add(w, "deepspeed");
	flag(w, "hostfile", p->hostfile);
	add(w, "--no_ssh");
	flag(w, "node_rank", p->node_rank);
	flag_int(w, "num_nodes", p->nnodes);
	flag_int(w, "num_gpus", p->nproc_per_node);
	flag(w, "master_addr", p->master_addr);
	flag(w, "master_port", p->master_port);
}

static void accelerate(struct words *w, const struct mu_launch_params *p)
{
	add(w, "accelerate");
	add(w, "launch");
	if ((long long)p->nnodes * p->nproc_per_node > 1)
		add(w, "--multi_gpu");
	flag_int(w, "num_machines", p->nnodes);
	flag(w, "machine_rank", p->node_rank);
	flag(w, "main_process_ip", p->master_addr);
	flag(w, "main_process_port", p->master_port);
	/* accelerate counts processes over all machines */
	flag_int(w, "num_processes", (long long)p->nnodes * p->nproc_per_node);
}

char **mu_launcher_argv(const struct mu_launch_params *p, char *const *user_argv)
{
	struct words w = { 0 };

	w.v = mu_grow(NULL, &w.cap, 1, sizeof(char *));
	w.v[0] = NULL;
	switch (p->launcher) {
	case MU_LAUNCHER_TORCHRUN: torchrun(&w, p); break;
	case MU_LAUNCHER_DEEPSPEED: deepspeed(&w, p); break;
	case MU_LAUNCHER_ACCELERATE: accelerate(&w, p); break;
	case MU_LAUNCHER_NONE: break;
	}
	for (char *const *a = user_argv; a && *a; a++)
		add(&w, *a);
	return w.v;
}

void mu_launcher_argv_free(char **argv)
{
	for (char **a = argv; a && *a; a++)
		mu_free(*a);
	mu_free(argv);
}

static const struct {
	const char *name;
	int sig;
} signals[] = {
	{ "HUP", SIGHUP },   { "INT", SIGINT },   { "QUIT", SIGQUIT }, { "ABRT", SIGABRT },
	{ "KILL", SIGKILL }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "ALRM", SIGALRM },
	{ "TERM", SIGTERM }, { "CONT", SIGCONT }, { "STOP", SIGSTOP }, { "TSTP", SIGTSTP },
	{ "URG", SIGURG },   { "XCPU", SIGXCPU }, { "XFSZ", SIGXFSZ }, { "VTALRM", SIGVTALRM },
	{ "PROF", SIGPROF }, { "WINCH", SIGWINCH },
};

int mu_signal_parse(const char *name)
{
	if (!name || !*name)
		return MU_EINVAL;
	if (name[0] >= '0' && name[0] <= '9') {
		char *end;
		long v = strtol(name, &end, 10);

		return *end || v < 1 || v > 64 ? MU_EINVAL : (int)v;
	}
	if (strncmp(name, "SIG", 3) == 0)
		name += 3;
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (strcmp(name, signals[i].name) == 0)
			return signals[i].sig;
	return MU_EINVAL;
}

const char *mu_signal_name(int sig)
{
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (signals[i].sig == sig)
			return signals[i].name;
	return NULL;
}
