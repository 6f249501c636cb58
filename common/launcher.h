/*
 * launcher.h - the launch line muster writes for a job's `launcher`
 * (none | torchrun | deepspeed | accelerate): the argv of the one process
 * a node starts, the user's command at its end. Pure (libc + alloc.h):
 * the agent composes it with the run's numbers, the API with
 * placeholders ("$NODE_RANK") to show what each node will run.
 *
 * Flags are spelled as each tool's own argument parser names them and as
 * every release in use accepts them: torch.distributed.run's underscore
 * forms (torch 1.x knows only those; 2.x keeps them beside the dashed
 * ones), DeepSpeed's runner and `accelerate launch` as documented.
 */
#ifndef MU_LAUNCHER_H
#define MU_LAUNCHER_H

#include <stdbool.h>

enum mu_launcher {
	MU_LAUNCHER_NONE = 0,
	MU_LAUNCHER_TORCHRUN,
	MU_LAUNCHER_DEEPSPEED,
	MU_LAUNCHER_ACCELERATE,
};

/* "none", "torchrun", ... (static). */
const char *mu_launcher_name(enum mu_launcher l);
/* NULL or "" is none. 0, or MU_EINVAL for an unknown name. */
int mu_launcher_parse(const char *s, enum mu_launcher *out) __attribute__((warn_unused_result));

/* What the line is composed from; every string is borrowed. */
struct mu_launch_params {
	enum mu_launcher launcher;
	int nnodes;              /* nodes of the run now (elastic: the most) */
	int min_nodes;           /* elastic gangs: 0 < min_nodes < nnodes, else 0 */
	int nproc_per_node;      /* processes the launcher starts on the node */
	int max_restarts;        /* torchrun elastic: --max_restarts */
	const char *node_rank;   /* this node's rank */
	const char *master_addr; /* the rank-0 node's address */
	const char *master_port;
	const char *hostfile;    /* deepspeed: the gang's hostfile */
	const char *job_id;      /* torchrun elastic: --rdzv_id */
	bool rdzv_host;          /* torchrun elastic: this node hosts the c10d store */
};

/* The argv (new, NULL-terminated, each string and the array mu_free'd
 * with mu_launcher_argv_free): the launcher's words, then user_argv
 * (borrowed, NULL-terminated). launcher none: a copy of user_argv. */
char **mu_launcher_argv(const struct mu_launch_params *p, char *const *user_argv);
void mu_launcher_argv_free(char **argv);

/* A signal by its name as Slurm's --signal takes it: "USR1", "SIGUSR1" or
 * a number 1..64. Returns the number, or MU_EINVAL. */
int mu_signal_parse(const char *name) __attribute__((warn_unused_result));
/* The canonical name ("USR1") of signal `sig`, NULL when not one of ours. */
const char *mu_signal_name(int sig);

#endif
