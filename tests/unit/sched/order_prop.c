/*
 * order_prop.c - the core walks pending jobs in the documented order
 * (docs/scheduling.md): multifactor by class priority, then the multifactor
 * value, then submit time, then id; fcfs by submit time, then position.
 * One node with one GPU, busy; every job wants that GPU and every job gets
 * a reservation (depth = all), so the reservations queue up in the order
 * the core walked: planned starts must rise along the order computed here
 * from the verdicts' priorities. Random queues of many sizes (the sort has
 * its own small-run and merge paths), many equal keys (ties down to the id),
 * jobs in random array order.
 * usage: sched_order_prop [ITERATIONS] [SEED]
 */
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../prop_rng.h"

#define MAXJ 700

static int fails;

static struct sched_job jobs[MAXJ];
static const struct sched_verdict *verd;
static bool mf;

/* The documented order, from the inputs and the verdicts' priorities. */
static int want_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	const struct sched_job *p = &jobs[x], *q = &jobs[y];
	if (mf) {
		if (p->priority != q->priority)
			return p->priority > q->priority ? -1 : 1;
		if (verd[x].priority != verd[y].priority)
			return verd[x].priority > verd[y].priority ? -1 : 1;
	}
	if (p->submit != q->submit)
		return p->submit < q->submit ? -1 : 1;
	if (mf && p->id != q->id)
		return p->id < q->id ? -1 : 1;
	return (x > y) - (x < y);
}

static void one(int it, size_t nj)
{
	static struct sched_user users[4] = { { .name = "u0", .tenant = 1, .shares = 1 },
					      { .name = "u1", .tenant = 1, .shares = 1 },
					      { .name = "u2", .tenant = 2, .shares = 1 },
					      { .name = "u3", .tenant = 2, .shares = 1 } };
	struct sched_tenant tenants[3] = {
		{ .name = "root", .parent = -1, .shares = 1, .max_gpus = -1, .max_running_jobs = -1 },
		{ .name = "a", .parent = 0, .shares = 3, .max_gpus = -1, .max_running_jobs = -1 },
		{ .name = "b", .parent = 0, .shares = 1, .max_gpus = -1, .max_running_jobs = -1 },
	};
	struct sched_node node = { .name = "n0", .gpu_model = "h100", .gpu_count = 1, .healthy = 1, .used = 1 };
	struct sched_alloc alloc = { .node = 0, .gpus = 1 };
	struct sched_run run = { .run_id = 1, .job_id = 100000, .tenant = 1, .user = 0, .priority = 100,
				 .start = -10, .time_limit = 50, .nalloc = 1, .alloc = &alloc };
	struct sched_snapshot s;
	struct sched_decisions d;
	size_t order[MAXJ];
	int64_t ids[MAXJ];

	for (int l = 0; l < SCHED_MAX_LEVELS; l++)
		node.unit[l] = -1;
	users[0].usage = rnd(1000);
	users[2].usage = rnd(1000);
	mf = rnd(4) != 0;
	/* distinct ids in random array order */
	for (size_t i = 0; i < nj; i++)
		ids[i] = (int64_t)i + 1;
	for (size_t i = nj; i > 1; i--) {
		size_t k = rnd((uint32_t)i);
		int64_t t = ids[i - 1];
		ids[i - 1] = ids[k];
		ids[k] = t;
	}
	uint32_t spread = 1 + rnd(rnd(2) ? 4 : 5000); /* few distinct submit times: many ties */
	for (size_t i = 0; i < nj; i++) {
		int u = (int)rnd(4);
		jobs[i] = (struct sched_job){ .id = ids[i], .tenant = users[u].tenant, .user = u,
					      .priority = rnd(5) ? 100 : 500, .preemptible = true,
					      .submit = -(int64_t)rnd(spread), .nodes = 1, .gpus_per_node = 1,
					      .gpu_model = "", .topo_required = -1, .topo_preferred = -1,
					      .time_limit = 1 + rnd(100) };
	}
	memset(&s, 0, sizeof(s));
	s.now = 0;
	s.settings.order = mf ? SCHED_ORDER_MULTIFACTOR : SCHED_ORDER_FCFS;
	s.settings.weight_fairshare = rnd(2) ? 1000 : 0;
	s.settings.weight_age = 100;
	s.settings.max_age = 3600;
	s.settings.reservation_depth = (int)nj;
	s.settings.quiet = true;
	s.nnodes = 1;
	s.nodes = &node;
	s.nruns = 1;
	s.runs = &run;
	s.njobs = nj;
	s.jobs = jobs;
	s.ntenants = 3;
	s.tenants = tenants;
	s.nusers = 4;
	s.users = users;
	sched_decisions_init(&d);
	if (sched_cycle(&s, &d) != 0) {
		fprintf(stderr, "iteration %d: sched_cycle failed\n", it);
		fails++;
		sched_decisions_release(&d);
		return;
	}
	verd = d.verdicts;
	for (size_t i = 0; i < nj; i++)
		order[i] = i;
	qsort(order, nj, sizeof(*order), want_cmp);
	for (size_t k = 0; k < nj; k++) {
		const struct sched_verdict *v = &d.verdicts[order[k]];
		if (v->reason != SCHED_REASON_RESERVATION ||
		    (k && v->planned_start <= d.verdicts[order[k - 1]].planned_start)) {
			fprintf(stderr,
				"iteration %d (%zu jobs, %s): job %lld is number %zu of the order but planned at %lld"
				" (%s), after job %lld at %lld\n",
				it, nj, mf ? "multifactor" : "fcfs", (long long)jobs[order[k]].id, k,
				(long long)v->planned_start, sched_reason_name(v->reason),
				k ? (long long)jobs[order[k - 1]].id : 0LL,
				k ? (long long)d.verdicts[order[k - 1]].planned_start : 0LL);
			fails++;
			break;
		}
	}
	sched_decisions_release(&d);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 200;
	static const size_t edge[] = { 1, 2, 15, 16, 17, 31, 32, 33, 64, 65, 100 };

	rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 77;
	for (int it = 0; it < iters && fails < 10; it++) {
		size_t nj = it < (int)(sizeof(edge) / sizeof(edge[0])) ? edge[it] : 1 + rnd(rnd(4) ? 200 : MAXJ);
		one(it, nj);
	}
	printf("%d iterations: %d failure(s)\n", iters, fails);
	return fails ? 1 : 0;
}
