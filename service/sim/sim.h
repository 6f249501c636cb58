/*
 * sim.h - muster-sim's event loop: replays a trace on a simulated cluster
 * through the policy core (service/sched), event by event.
 *
 * Event semantics (they reproduce the published EASY schedule of KTH-SP2,
 * see docs/scheduling.md): events at the same instant are handled
 * submissions first (input order), then terminations (in start order), each
 * with its own scheduling pass; a run whose estimated end (start + limit) is
 * now already counts as free, even before its own termination event.
 *
 * Ownership: struct sim owns its arrays; it borrows the cluster and trace,
 * which must outlive it. Threading: one struct sim per thread.
 */
#ifndef MU_SIM_SIM_H
#define MU_SIM_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cluster.h"
#include "error.h"
#include "trace.h"

enum sim_policy { SIM_FCFS = 0, SIM_EASY, SIM_CONSERVATIVE, SIM_MUSTER };

struct sim_opts {
	enum sim_policy policy;
	bool predict;
	bool check;            /* run the invariant checker after every event; settings.check_view */
	bool full_rebuild;     /* no change hints: the core rebuilds its view every pass (same schedule, slower) */
	bool node_allocs;      /* allocations one entry per node, as the daemon gets them (same schedule, slower) */
	FILE *placements;      /* borrowed; one JSON line per ended run, or NULL */
};

/* Per trace job, after the run. */
struct sim_job_result {
	int64_t start;         /* start of the run that completed; -1 never started */
	int64_t end;
	int gpus;              /* GPUs it held */
	int preemptions;
	bool failed;           /* failed without running (dependency never satisfiable) */
};

struct sim_stats {
	size_t events;         /* scheduling passes */
	size_t starts, preemptions, failed, never_started;
	double fragmentation;  /* time-weighted share of free GPUs on partly used nodes while jobs wait */
	int64_t first_submit, last_end;
};

/*
 * Maps trace jobs onto the cluster and replays them. `results` (new array of
 * trace->njobs entries, free with free()) and `stats` are filled. Returns 0,
 * MU_EPARSE for a trace that does not fit the cluster ("line N: ..."), or
 * MU_EINTERNAL when the invariant checker (opts->check) finds a violation.
 */
__attribute__((warn_unused_result))
int sim_run(struct sim_cluster *cl, const struct trace *tr, const struct sim_opts *opts,
            struct sim_job_result **results, struct sim_stats *stats, struct mu_error *err);

/* Writes the metrics JSON object (see docs/scheduling.md) to out. */
void sim_write_metrics(FILE *out, const struct sim_cluster *cl, const struct trace *tr,
                       const struct sim_job_result *res, const struct sim_stats *st, const char *policy);

/* Writes the schedule as SWF with field 3 (wait) filled in. */
void sim_write_swf(FILE *out, const struct sim_cluster *cl, const struct trace *tr,
                   const struct sim_job_result *res, const char *policy);

#endif
