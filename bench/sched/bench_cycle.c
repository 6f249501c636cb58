/*
 * bench_cycle - one full scheduling cycle of the policy core on a generated
 * cluster: NODES nodes x 8 GPUs in a 3-level topology (pod/block/rack),
 * RUNNING running runs filling it, PENDING pending jobs of mixed gang sizes.
 * Prints the cycle time and what the cycle decided.
 *
 *   bench_cycle [--nodes 10000] [--running 50000] [--pending 100000]
 *               [--depth 1] [--repeat 3] [--seed 1] [--multifactor 1]
 *
 * Deterministic for a seed (a small xorshift generator).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched.h"

static uint64_t rng = 88172645463325252ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int pick(int n)
{
	return (int)(next() % (uint64_t)n);
}

/* CPU time of this (single-threaded) process: honest on a shared machine */
static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long nnodes = 10000, nrunning = 50000, npending = 100000, depth = 1, repeat = 3, seed = 1, mf = 1, guar = 0;
	for (int i = 1; i + 1 < argc; i += 2) {
		long v = strtol(argv[i + 1], NULL, 10);
		if (strcmp(argv[i], "--nodes") == 0)
			nnodes = v;
		else if (strcmp(argv[i], "--running") == 0)
			nrunning = v;
		else if (strcmp(argv[i], "--pending") == 0)
			npending = v;
		else if (strcmp(argv[i], "--depth") == 0)
			depth = v;
		else if (strcmp(argv[i], "--repeat") == 0)
			repeat = v;
		else if (strcmp(argv[i], "--seed") == 0)
			seed = v;
		else if (strcmp(argv[i], "--multifactor") == 0)
			mf = v;
		else if (strcmp(argv[i], "--guarantee") == 0) /* guaranteed_gpus of each leaf tenant */
			guar = v;
		else {
			fprintf(stderr,
			        "usage: %s [--nodes N] [--running N] [--pending N] [--depth D] [--repeat R] [--seed S]"
			        " [--multifactor 0|1] [--guarantee GPUS]\n",
			        argv[0]);
			return 2;
		}
	}
	if (nnodes < 1 || nrunning < 0 || npending < 0 || repeat < 1) {
		fprintf(stderr, "bench_cycle: bad sizes\n");
		return 2;
	}
	rng ^= (uint64_t)seed * 0x9e3779b97f4a7c15ULL;
	const int64_t now = 1000000;
	/* 3 levels: pods of 5 blocks, blocks of 5 racks, racks of 40 nodes */
	struct sched_node *nodes = calloc((size_t)nnodes, sizeof(*nodes));
	for (long i = 0; i < nnodes; i++) {
		long rack = i / 40, block = rack / 5, pod = block / 5;
		nodes[i].name = "node";
		nodes[i].unit[0] = (int)pod;
		nodes[i].unit[1] = (int)block;
		nodes[i].unit[2] = (int)rack;
		nodes[i].gpu_model = "h100";
		nodes[i].gpu_count = 8;
		nodes[i].healthy = 0xff;
		if (pick(1000) == 0)
			nodes[i].healthy &= ~(uint64_t)(1u << pick(8));
		if (pick(500) == 0)
			nodes[i].state = SCHED_NODE_DRAIN;
	}
	int ntenants = 21, nusers = 200;
	struct sched_tenant *tenants = calloc((size_t)ntenants, sizeof(*tenants));
	tenants[0] = (struct sched_tenant){ "root", -1, 1, 0, 0, -1, -1, 0, NULL };
	for (int t = 1; t < ntenants; t++)
		tenants[t] = (struct sched_tenant){ "t", t <= 4 ? 0 : 1 + (t % 4), 1 + t % 3, 0, t <= 4 ? 0 : (int)guar, -1, -1,
		                                    0, NULL };
	struct sched_user *users = calloc((size_t)nusers, sizeof(*users));
	for (int u = 0; u < nusers; u++)
		users[u] = (struct sched_user){ "u", 5 + u % 16, 1, (double)pick(1000000), 2, { 1000 + pick(5000), 2000 } };
	/* running runs fill the nodes in order: mostly small, some whole-node gangs */
	struct sched_run *runs = calloc((size_t)nrunning + 1, sizeof(*runs));
	struct sched_alloc *allocs = calloc((size_t)nrunning * 4 + 1, sizeof(*allocs));
	size_t nalloc = 0, nr = 0;
	long cursor = 0;
	for (long r = 0; r < nrunning && cursor < nnodes; r++) {
		int roll = pick(1000), g = roll < 800 ? 1 : roll < 950 ? 2 : roll < 990 ? 4 : 8, nn = roll >= 997 ? 4 : 1;
		struct sched_run *x = &runs[nr];
		x->alloc = &allocs[nalloc];
		for (int k = 0; k < nn; k++) {
			while (cursor < nnodes && __builtin_popcountll(nodes[cursor].healthy & ~nodes[cursor].used) < g)
				cursor++;
			if (cursor >= nnodes)
				break;
			uint64_t free = nodes[cursor].healthy & ~nodes[cursor].used, m = 0;
			for (int b = 0; b < 8 && __builtin_popcountll(m) < g; b++)
				if (free & (1u << b))
					m |= 1u << b;
			nodes[cursor].used |= m;
			allocs[nalloc++] = (struct sched_alloc){ .node = (int)cursor, .gpus = m };
			x->nalloc++;
			if (nn > 1)
				cursor++;
		}
		if (!x->nalloc)
			break;
		int u = pick(nusers);
		x->run_id = r + 1;
		x->job_id = r + 1;
		x->user = u;
		x->tenant = users[u].tenant;
		x->priority = pick(10) == 0 ? 10 : 100;
		x->preemptible = true;
		x->time_limit = 3600 * (1 + pick(24));
		x->start = now - pick((int)x->time_limit);
		nr++;
	}
	int64_t used_gpus = 0, total = 0;
	for (long i = 0; i < nnodes; i++) {
		used_gpus += __builtin_popcountll(nodes[i].used);
		total += nodes[i].gpu_count;
	}
	struct sched_job *jobs = calloc((size_t)npending + 1, sizeof(*jobs));
	for (long j = 0; j < npending; j++) {
		int roll = pick(100), u = pick(nusers);
		struct sched_job *x = &jobs[j];
		x->id = 1000000 + j;
		x->user = u;
		x->tenant = users[u].tenant;
		x->priority = pick(50) == 0 ? 1000 : 100;
		x->preemptible = true;
		x->submit = now - pick(86400);
		x->topo_required = x->topo_preferred = -1;
		x->time_limit = 600 * (1 + pick(48));
		if (roll < 50) {
			x->nodes = 1;
			x->gpus_per_node = 1 << pick(3);
		} else if (roll < 70) {
			x->nodes = 1;
			x->gpus_per_node = 8;
		} else if (roll < 90) {
			x->nodes = 2 << pick(2);
			x->gpus_per_node = 8;
			x->topo_preferred = 2;
		} else if (roll < 99) {
			x->nodes = 16;
			x->gpus_per_node = 8;
			x->topo_required = 1;
		} else {
			x->nodes = 64;
			x->gpus_per_node = 8;
			x->min_nodes = 32;
		}
	}
	struct sched_snapshot s = {
		.now = now,
		.settings = { .order = mf ? SCHED_ORDER_MULTIFACTOR : SCHED_ORDER_FCFS, .weight_fairshare = 10000,
			      .weight_age = 1000, .weight_size = 100, .max_age = 604800,
			      .reservation_depth = (int)depth, .preemption = true, .nlevels = 3,
			      .levels = { "pod", "block", "rack" } },
		.nnodes = (size_t)nnodes, .nodes = nodes, .nruns = nr, .runs = runs, .njobs = (size_t)npending,
		.jobs = jobs, .ntenants = (size_t)ntenants, .tenants = tenants, .nusers = (size_t)nusers, .users = users,
	};
	struct sched_decisions d;
	sched_decisions_init(&d);
	double best = 1e9, sum = 0;
	for (long r = 0; r < repeat; r++) {
		double t0 = now_s();
		if (sched_cycle(&s, &d) != 0) {
			fprintf(stderr, "bench_cycle: %s\n", d.error);
			return 1;
		}
		double dt = now_s() - t0;
		sum += dt;
		if (dt < best)
			best = dt;
	}
	printf("nodes=%ld gpus=%" PRId64 " used=%" PRId64 " running=%zu pending=%ld depth=%ld: cycle CPU best %.3f s, mean %.3f s "
	       "(starts %zu, reservations %zu, preemptions %zu)\n",
	       nnodes, total, used_gpus, nr, npending, depth, best, sum / (double)repeat, d.nstarts, d.nreservations,
	       d.npreemptions);
	sched_decisions_release(&d);
	free(nodes);
	free(tenants);
	free(users);
	free(runs);
	free(allocs);
	free(jobs);
	return 0;
}
