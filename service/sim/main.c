/*
 * main.c - muster-sim: replay a workload trace through muster's policy core.
 * See docs/scheduling.md ("muster-sim") for the formats and the semantics.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "cluster.h"
#include "config.h"
#include "error.h"
#include "sim.h"
#include "trace.h"
#ifdef MUSTER_HAVE_FAIRSHARE_CLI
#include "fairshare_cli.h"
#endif

static char *opt_swf, *opt_csv, *opt_policy, *opt_cluster, *opt_sched_out, *opt_metrics_out, *opt_place_out;
static char *opt_fairshare;
static long long opt_gpus, opt_nodes, opt_gpn;
static bool opt_predict, opt_lenient, opt_check, opt_quiet, opt_full, opt_node_allocs;

static const struct mu_opt opts[] = {
	{ "swf", NULL, MU_OPT_STR, "", "trace in Standard Workload Format (.swf or .swf.gz)", &opt_swf },
	{ "csv", NULL, MU_OPT_STR, "", "trace of GPU jobs as CSV (.csv or .csv.gz; docs/scheduling.md)", &opt_csv },
	{ "policy", NULL, MU_OPT_STR, "easy", "fcfs | easy | conservative | muster", &opt_policy },
	{ "gpus", NULL, MU_OPT_INT, "0", "flat pool of N one-GPU nodes", &opt_gpus },
	{ "nodes", NULL, MU_OPT_INT, "0", "N nodes (with --gpus-per-node)", &opt_nodes },
	{ "gpus-per-node", NULL, MU_OPT_INT, "8", "GPUs per node for --nodes", &opt_gpn },
	{ "cluster", NULL, MU_OPT_STR, "", "cluster JSON: nodes, topology, tenants, classes, settings", &opt_cluster },
	{ "predict", NULL, MU_OPT_BOOL, "false", "plan with runtime predictions (the longer of the user's last two)",
	  &opt_predict },
	{ "schedule-out", NULL, MU_OPT_STR, "", "write the schedule as SWF (field 3 = wait)", &opt_sched_out },
	{ "metrics-out", NULL, MU_OPT_STR, "", "write metrics JSON", &opt_metrics_out },
	{ "placements-out", NULL, MU_OPT_STR, "", "write one JSON line per ended run", &opt_place_out },
	{ "lenient", NULL, MU_OPT_BOOL, "false", "skip and count malformed trace lines", &opt_lenient },
	{ "check", NULL, MU_OPT_BOOL, "false",
	  "run the invariant checker after every event, and check the policy core's incremental view each pass",
	  &opt_check },
	{ "quiet", NULL, MU_OPT_BOOL, "false", "no summary line on stderr", &opt_quiet },
	{ "full-rebuild", NULL, MU_OPT_BOOL, "false",
	  "no change hints: the policy core rebuilds its view every pass (slower, same schedule)", &opt_full },
	{ "node-allocs", NULL, MU_OPT_BOOL, "false",
	  "allocations one entry per node, as muster-scheduler gets them, not ranges of nodes (slower, same schedule)",
	  &opt_node_allocs },
	{ "fairshare", NULL, MU_OPT_STR, "", "print Fair Tree fair share of TREE.json and exit", &opt_fairshare },
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static FILE *open_out(const char *path)
{
	if (strcmp(path, "-") == 0)
		return stdout;
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "muster-sim: %s: cannot write\n", path);
	return f;
}

static int close_out(FILE *f, const char *path)
{
	if (f == stdout)
		return fflush(f) == 0 ? 0 : 1;
	if (fclose(f) != 0) {
		fprintf(stderr, "muster-sim: %s: write failed\n", path);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct mu_error err = { 0 };
	struct sim_cluster cl;
	struct trace tr;
	struct sim_job_result *res = NULL;
	struct sim_stats st;
	struct sim_opts so = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *place = NULL;
	int rc = 1;
	int pos = mu_config_parse(opts, NOPTS, argc, argv, "replay a workload trace through muster's policy core", &err);
	if (pos < 0)
		return 2;
	sim_cluster_init(&cl);
	trace_init(&tr);
	if (pos < argc) {
		fprintf(stderr, "muster-sim: unexpected argument \"%s\"\n", argv[pos]);
		rc = 2;
		goto out;
	}
	if (*opt_fairshare) {
#ifdef MUSTER_HAVE_FAIRSHARE_CLI
		rc = sim_fairshare_main(opt_fairshare, stdout);
#else
		fprintf(stderr, "muster-sim: --fairshare is not built in\n");
#endif
		goto out;
	}
	if (!!*opt_swf == !!*opt_csv) {
		fprintf(stderr, "muster-sim: give exactly one of --swf and --csv (see --help)\n");
		rc = 2;
		goto out;
	}
	if (strcmp(opt_policy, "fcfs") == 0)
		so.policy = SIM_FCFS;
	else if (strcmp(opt_policy, "easy") == 0)
		so.policy = SIM_EASY;
	else if (strcmp(opt_policy, "conservative") == 0)
		so.policy = SIM_CONSERVATIVE;
	else if (strcmp(opt_policy, "muster") == 0)
		so.policy = SIM_MUSTER;
	else {
		fprintf(stderr, "muster-sim: --policy must be fcfs, easy, conservative or muster\n");
		rc = 2;
		goto out;
	}
	const char *path = *opt_swf ? opt_swf : opt_csv;
	if (trace_read_file(path, &buf, &len, &err) ||
	    (*opt_swf ? trace_parse_swf(buf, len, opt_lenient, &tr, &err)
	              : trace_parse_csv(buf, len, opt_lenient, &tr, &err))) {
		fprintf(stderr, "muster-sim: %s: %s\n", path, err.msg);
		goto out;
	}
	mu_free(buf);
	buf = NULL;
	int sources = (*opt_cluster ? 1 : 0) + (opt_gpus > 0 ? 1 : 0) + (opt_nodes > 0 ? 1 : 0);
	if (sources > 1) {
		fprintf(stderr, "muster-sim: give one of --gpus, --nodes/--gpus-per-node and --cluster\n");
		rc = 2;
		goto out;
	}
	if (*opt_cluster) {
		if (trace_read_file(opt_cluster, &buf, &len, &err) || sim_cluster_parse(&cl, buf, len, &err)) {
			fprintf(stderr, "muster-sim: %s: %s\n", opt_cluster, err.msg);
			goto out;
		}
	} else if (opt_nodes > 0) {
		if (opt_gpn < 0 || opt_gpn > 64 || opt_nodes > 1000000) {
			fprintf(stderr, "muster-sim: --gpus-per-node must be 0..64 and --nodes at most 1,000,000\n");
			rc = 2;
			goto out;
		}
		sim_cluster_uniform(&cl, (size_t)opt_nodes, (int)opt_gpn);
	} else {
		long long n = opt_gpus > 0 ? opt_gpus : tr.max_procs;
		if (n <= 0 || n > 10000000) {
			fprintf(stderr, "muster-sim: no cluster size: give --gpus, --nodes or --cluster (the trace has no MaxProcs)\n");
			rc = 2;
			goto out;
		}
		sim_cluster_uniform(&cl, (size_t)n, 1);
	}
	if (*opt_place_out && !(place = open_out(opt_place_out)))
		goto out;
	so.predict = opt_predict;
	so.check = opt_check;
	so.full_rebuild = opt_full;
	so.node_allocs = opt_node_allocs;
	so.placements = place;
	struct timespec t0, t1, c0, c1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	if (sim_run(&cl, &tr, &so, &res, &st, &err)) {
		fprintf(stderr, "muster-sim: %s: %s\n", path, err.msg);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
	rc = 0;
	if (*opt_sched_out) {
		FILE *f = open_out(opt_sched_out);
		if (!f) {
			rc = 1;
		} else {
			sim_write_swf(f, &cl, &tr, res, opt_policy);
			rc |= close_out(f, opt_sched_out);
		}
	}
	if (*opt_metrics_out) {
		FILE *f = open_out(opt_metrics_out);
		if (!f) {
			rc = 1;
		} else {
			sim_write_metrics(f, &cl, &tr, res, &st, opt_policy);
			rc |= close_out(f, opt_metrics_out);
		}
	}
	if (!opt_quiet)
		fprintf(stderr,
		        "muster-sim: %zu jobs (%zu skipped, %zu cut to their limit), %zu passes, %zu preemptions; "
		        "replay %.3f s wall, %.3f s CPU: %.0f jobs/s (CPU)\n",
		        tr.njobs, tr.skipped, tr.truncated, st.events, st.preemptions, secs, cpu,
		        cpu > 0 ? (double)tr.njobs / cpu : 0.0);
out:
	if (place)
		rc |= close_out(place, opt_place_out);
	free(res);
	mu_free(buf);
	trace_release(&tr);
	sim_cluster_release(&cl);
	mu_config_release(opts, NOPTS);
	return rc;
}
