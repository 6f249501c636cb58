/*
 * topo_prop.c - random-cluster property tests of the topology rules
 * (docs/scheduling.md "Placement"), start-now and reservation paths alike:
 *
 *  - required: L: every node of the placement in one unit of L; the job
 *    starts (or is planned) at the first time some unit of L holds it, and
 *    is TopologyUnsatisfiable exactly when no unit of L ever could;
 *  - preferred: L: the placement uses the fewest units of L that any
 *    placement on the free nodes of that time could, and the job is never
 *    later than the first time enough nodes are free anywhere;
 *  - no constraint: the fewest outermost units any placement could (when
 *    that is one, the fewest units of the next level that any outermost
 *    unit could), and a 1-node job takes a node with the fewest usable GPUs
 *    that hold it.
 *
 * A reservation is checked against the cluster as it will be at its start
 * (the runs planned to end by then have released their GPUs).
 * usage: sched_topo_prop [ITERATIONS] [SEED]
 */
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../prop_rng.h"

#define MAXN 96

static int popc(uint64_t x)
{
	int c = 0;
	for (; x; x &= x - 1)
		c++;
	return c;
}

struct world {
	int nlevels;
	size_t nn, nruns;
	struct sched_node nodes[MAXN];
	struct sched_run runs[MAXN * 2];
	struct sched_alloc allocs[MAXN * 2];
	char names[MAXN][8];
};

/* Eligible nodes at time t for g GPUs: free (healthy, up) count >= g. */
static void free_at(const struct world *w, int64_t t, uint64_t *fm)
{
	for (size_t n = 0; n < w->nn; n++)
		fm[n] = w->nodes[n].healthy & ~w->nodes[n].used;
	for (size_t r = 0; r < w->nruns; r++)
		if (w->runs[r].start + w->runs[r].time_limit <= t)
			fm[w->runs[r].alloc[0].node] |= w->runs[r].alloc[0].gpus;
}

static int cmp_desc(const void *a, const void *b)
{
	return *(const int *)b - *(const int *)a;
}

/* Fewest units of level l that hold k eligible nodes (0: impossible). */
static int min_units(const struct world *w, const uint64_t *fm, int g, int l, int k, int *biggest)
{
	int cnt[MAXN];
	memset(cnt, 0, sizeof(cnt));
	for (size_t n = 0; n < w->nn; n++)
		if (popc(fm[n]) >= g)
			cnt[w->nodes[n].unit[l]]++;
	qsort(cnt, MAXN, sizeof(int), cmp_desc);
	if (biggest)
		*biggest = cnt[0];
	int got = 0, m = 0;
	while (m < MAXN && got < k && cnt[m] > 0)
		got += cnt[m++];
	return got >= k ? m : 0;
}

/* Fewest units of level l holding k eligible nodes inside unit u of level ul (0: impossible). */
static int min_units_in(const struct world *w, const uint64_t *fm, int g, int l, int k, int ul, int u)
{
	int cnt[MAXN];
	memset(cnt, 0, sizeof(cnt));
	for (size_t n = 0; n < w->nn; n++)
		if (popc(fm[n]) >= g && w->nodes[n].unit[ul] == u)
			cnt[w->nodes[n].unit[l]]++;
	qsort(cnt, MAXN, sizeof(int), cmp_desc);
	int got = 0, m = 0;
	while (m < MAXN && got < k && cnt[m] > 0)
		got += cnt[m++];
	return got >= k ? m : 0;
}

static int eligible(const struct world *w, const uint64_t *fm, int g)
{
	int e = 0;
	for (size_t n = 0; n < w->nn; n++)
		e += popc(fm[n]) >= g;
	return e;
}

static int units_used(const struct world *w, const struct sched_alloc *a, size_t na, int l)
{
	bool seen[MAXN] = { false };
	int u = 0;
	for (size_t i = 0; i < na; i++) {
		int x = w->nodes[a[i].node].unit[l];
		if (!seen[x]) {
			seen[x] = true;
			u++;
		}
	}
	return u;
}

static int fails;

#define CHECK(cond, ...)                                                                                     \
	do {                                                                                                     \
		if (!(cond)) {                                                                                       \
			fprintf(stderr, "iteration %d: ", it);                                                           \
			fprintf(stderr, __VA_ARGS__);                                                                    \
			fprintf(stderr, "\n");                                                                           \
			fails++;                                                                                         \
		}                                                                                                    \
	} while (0)

/* Does the job fit at time t under its rule (ignoring reservations: there are none before it)? */
static bool fits_at(const struct world *w, const struct sched_job *j, int64_t t)
{
	uint64_t fm[MAXN];
	free_at(w, t, fm);
	if (j->topo_required >= 0) {
		int big;
		min_units(w, fm, j->gpus_per_node, j->topo_required, j->nodes, &big);
		return big >= j->nodes;
	}
	return eligible(w, fm, j->gpus_per_node) >= j->nodes;
}

static void check_placement(int it, const struct world *w, const struct sched_job *j, int64_t t,
                            const struct sched_alloc *a, size_t na)
{
	uint64_t fm[MAXN];
	free_at(w, t, fm);
	CHECK(na == (size_t)j->nodes, "job placed on %zu nodes, wants %d", na, j->nodes);
	for (size_t i = 0; i < na; i++) {
		CHECK(popc(a[i].gpus) == j->gpus_per_node, "node %d: %d GPUs", a[i].node, popc(a[i].gpus));
		CHECK((a[i].gpus & ~fm[a[i].node]) == 0, "node %d: GPUs not free at %lld", a[i].node, (long long)t);
	}
	/* the earliest time the job fits: now or a run's planned end */
	int64_t first = fits_at(w, j, 0) ? 0 : SCHED_NEVER;
	for (size_t r = 0; r < w->nruns; r++) {
		int64_t e = w->runs[r].start + w->runs[r].time_limit;
		if (e < first && fits_at(w, j, e))
			first = e;
	}
	CHECK(t == first, "planned at %lld, fits first at %lld (rule %d/%d)", (long long)t, (long long)first,
	      j->topo_required, j->topo_preferred);
	if (j->topo_required >= 0)
		CHECK(units_used(w, a, na, j->topo_required) == 1, "required level %d: %d units", j->topo_required,
		      units_used(w, a, na, j->topo_required));
	if (j->topo_preferred >= 0) {
		int m = min_units(w, fm, j->gpus_per_node, j->topo_preferred, j->nodes, NULL);
		int u = units_used(w, a, na, j->topo_preferred);
		CHECK(u == m, "preferred level %d: %d units, %d possible (k=%d g=%d)", j->topo_preferred, u, m,
		      j->nodes, j->gpus_per_node);
	}
	if (j->topo_required < 0 && j->topo_preferred < 0 && w->nlevels > 0) {
		int m = min_units(w, fm, j->gpus_per_node, 0, j->nodes, NULL);
		int u = units_used(w, a, na, 0);
		CHECK(u == m, "no constraint: %d outermost units, %d possible", u, m);
		if (m == 1 && w->nlevels > 1) { /* in one outermost unit: the fewest of the next level any could */
			int best = 0;
			for (int x = 0; x < MAXN; x++) {
				int v = min_units_in(w, fm, j->gpus_per_node, 1, j->nodes, 0, x);
				if (v && (!best || v < best))
					best = v;
			}
			int u1 = units_used(w, a, na, 1);
			CHECK(u1 == best, "no constraint: %d units of level 1 in one outermost unit, %d possible", u1,
			      best);
		}
	}
	if (j->nodes == 1) {
		int best = SCHED_MAX_GPUS + 1;
		for (size_t n = 0; n < w->nn; n++)
			if (popc(fm[n]) >= j->gpus_per_node && popc(fm[n]) < best)
				best = popc(fm[n]);
		CHECK(popc(fm[a[0].node]) == best, "1-node job on a node with %d free GPUs, %d would do",
		      popc(fm[a[0].node]), best);
	}
}

static void build(struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->nlevels = 1 + (int)rnd(3);
	int gsize = (int[]){ 1, 2, 4, 8 }[rnd(4)];
	bool mixed = rnd(3) == 0;
	int nb = 1 + (int)rnd(4);
	int unit_next[SCHED_MAX_LEVELS] = { 0 };
	for (int b = 0; b < nb && w->nn < MAXN - 8; b++) {
		int ub = unit_next[0]++;
		int nr = 1 + (int)rnd(4);
		for (int r = 0; r < nr && w->nn < MAXN - 8; r++) {
			int ur = unit_next[1]++;
			int ns = 1 + (int)rnd(3);
			for (int s = 0; s < ns && w->nn < MAXN - 8; s++) {
				int us = unit_next[2]++;
				int k = 1 + (int)rnd(3);
				for (int x = 0; x < k && w->nn < MAXN - 8; x++) {
					struct sched_node *n = &w->nodes[w->nn];
					snprintf(w->names[w->nn], sizeof(w->names[0]), "n%zu", w->nn);
					n->name = w->names[w->nn];
					for (int l = 0; l < SCHED_MAX_LEVELS; l++)
						n->unit[l] = -1;
					n->unit[0] = ub;
					if (w->nlevels > 1)
						n->unit[1] = ur;
					if (w->nlevels > 2)
						n->unit[2] = us;
					n->gpu_model = "";
					n->gpu_count = mixed ? (int[]){ 1, 2, 4, 8 }[rnd(4)] : gsize;
					n->healthy = n->gpu_count == 64 ? ~0ULL : ((1ULL << n->gpu_count) - 1);
					n->state = SCHED_NODE_UP;
					w->nn++;
				}
			}
		}
	}
	/* runs: one node each, a random GPU subset, ending at 100, 200 or 300 */
	for (size_t n = 0; n < w->nn; n++) {
		if (rnd(3) == 0)
			continue;
		struct sched_node *x = &w->nodes[n];
		int take = 1 + (int)rnd((uint32_t)x->gpu_count);
		uint64_t m = 0;
		for (int i = 0; i < x->gpu_count && popc(m) < take; i++)
			if (rnd(2) || x->gpu_count - i <= take - popc(m))
				m |= 1ULL << i;
		size_t r = w->nruns++;
		w->allocs[r] = (struct sched_alloc){ .node = (int)n, .gpus = m };
		w->runs[r] = (struct sched_run){ .run_id = (int64_t)r + 1, .job_id = (int64_t)r + 1000, .tenant = 0,
		                                 .user = -1, .priority = 100, .start = 0,
		                                 .time_limit = 100 * (1 + (int64_t)rnd(3)), .nalloc = 1,
		                                 .alloc = &w->allocs[r] };
		x->used |= m;
	}
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 4000;
	rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 12345;
	static const char *levels[] = { "block", "rack", "switch" };
	int started = 0, reserved = 0, never = 0;
	for (int it = 0; it < iters; it++) {
		struct world w;
		build(&w);
		struct sched_job j = { .id = 1, .tenant = 0, .user = -1, .priority = 100, .submit = 0,
		                       .gpu_model = "", .topo_required = -1, .topo_preferred = -1,
		                       .time_limit = 50 + rnd(300) };
		j.nodes = 1 + (int)rnd(rnd(4) == 0 ? 12 : 5);
		int gmax = 1;
		for (size_t n = 0; n < w.nn; n++)
			if (w.nodes[n].gpu_count > gmax)
				gmax = w.nodes[n].gpu_count;
		j.gpus_per_node = 1 + (int)rnd((uint32_t)gmax + (rnd(8) == 0)); /* sometimes too big */
		switch (rnd(3)) {
		case 0:
			j.topo_required = (int)rnd((uint32_t)w.nlevels);
			break;
		case 1:
			j.topo_preferred = (int)rnd((uint32_t)w.nlevels);
			break;
		}
		struct sched_tenant root = { .name = "root", .parent = -1, .shares = 1, .max_gpus = -1,
		                             .max_running_jobs = -1 };
		struct sched_snapshot s = { .now = 0, .nnodes = w.nn, .nodes = w.nodes, .nruns = w.nruns,
		                            .runs = w.runs, .njobs = 1, .jobs = &j, .ntenants = 1, .tenants = &root };
		s.settings.order = SCHED_ORDER_FCFS;
		s.settings.reservation_depth = 1;
		s.settings.nlevels = w.nlevels;
		for (int l = 0; l < w.nlevels; l++)
			s.settings.levels[l] = levels[l];
		s.settings.quiet = true;
		struct sched_decisions d;
		sched_decisions_init(&d);
		if (sched_cycle(&s, &d) != 0) {
			fprintf(stderr, "iteration %d: sched_cycle: %s\n", it, d.error);
			return 1;
		}
		if (d.nstarts) {
			started++;
			check_placement(it, &w, &j, 0, d.starts[0].alloc, d.starts[0].nalloc);
		} else if (d.nreservations) {
			reserved++;
			check_placement(it, &w, &j, d.reservations[0].start, d.reservations[0].alloc,
			                d.reservations[0].nalloc);
		} else {
			never++;
			/* never: the job cannot fit even on the idle cluster */
			struct world idle = w;
			idle.nruns = 0;
			for (size_t n = 0; n < idle.nn; n++)
				idle.nodes[n].used = 0;
			CHECK(!fits_at(&idle, &j, 0), "neither started nor reserved, but fits the idle cluster");
			CHECK(d.verdicts[0].reason == SCHED_REASON_TOPOLOGY_UNSATISFIABLE, "never fits: reason %s",
			      sched_reason_name(d.verdicts[0].reason));
		}
		sched_decisions_release(&d);
		if (fails > 20)
			break;
	}
	printf("%d iterations: %d started, %d reserved, %d never; %d failure(s)\n", iters, started, reserved, never,
	       fails);
	return fails ? 1 : 0;
}
