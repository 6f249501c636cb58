/*
 * srun_opts.h - the options of Slurm's srun as muster's stand-in reads
 * them, and the job step they ask for (agent/srun/srun.c, docs/cli.md
 * "srun in batch scripts"). Pure: libc and common/ only, no environment,
 * no I/O.
 *
 * The script already runs once per task of the job, so a step is not
 * started: it is the subset of the job's processes that run the command
 * (the first K local ranks of the first N nodes), renumbered for the step.
 */
#ifndef SRUN_OPTS_H
#define SRUN_OPTS_H

#include <stdbool.h>
#include <stddef.h>

struct srun_opts {
	int nodes;           /* -N MIN[-MAX]: MIN, 0 = not given */
	int nodes_max;       /* MAX, = nodes without a range */
	int ntasks;          /* -n, 0 = not given */
	int ntasks_per_node; /* --ntasks-per-node, 0 = not given */
	const char *export;  /* --export= (borrowed from argv), NULL = not given */
	const char *chdir;   /* -D/--chdir (borrowed), NULL = not given */
	bool label;          /* -l/--label */
	bool help, version;  /* -h/--help/--usage, -V/--version */
	int argi;            /* argv index of CMD; argc when there is none */
	char warn[1024];     /* warning lines ("muster: srun: warning: ...\n"), "" = none */
};

/* Reads argv[1..] up to CMD (the first word that is not an option, or the
 * one after "--"), as srun does: --opt=value, --opt value, a unique prefix
 * of a long name, -x value, -xvalue, bundled flags (-lu). Returns 0, or
 * MU_EINVAL with the message in err ("unrecognized option '--foo'"). */
int srun_opts_parse(struct srun_opts *o, int argc, char *const *argv, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* The job as its environment describes this process. */
struct srun_job {
	int nnodes;   /* SLURM_NNODES */
	int ppn;      /* SLURM_NTASKS_PER_NODE: the job's tasks on every node */
	int node_id;  /* SLURM_NODEID */
	int local_id; /* SLURM_LOCALID */
};

/* This process's part of the step. */
struct srun_step {
	bool runs;          /* false: the step has no task here (exit 0) */
	int nnodes;         /* nodes of the step */
	int ntasks;         /* tasks of the step */
	int tasks_on_node;  /* the step's tasks on this node */
	int procid;         /* the step's task id of this process (when runs) */
	char tasks_per_node[256]; /* Slurm's form: "2(x3),1" */
};

/* The step `o` asks for in job `j`. Returns 0, or MU_EINVAL when it asks
 * for more nodes or tasks than the job has (the message in err). */
int srun_step_plan(const struct srun_opts *o, const struct srun_job *j, struct srun_step *st,
		   char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
