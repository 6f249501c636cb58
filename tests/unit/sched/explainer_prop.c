/*
 * explainer_prop.c - sched_explainer (one plan, many probes) answers every
 * probe exactly as sched_explain (a whole cycle per probe) does, on random
 * clusters with running jobs, pending jobs, dependencies, tenant quotas and
 * topology levels; probes are asked in random order and the first again at
 * the end, so a probe that left anything behind in the plan shows.
 * usage: sched_explainer_prop [ITERATIONS] [SEED]
 */
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../prop_rng.h"

#define MAXN 48
#define MAXJ 24
#define NPROBE 12

static int fails;

struct world {
	size_t nn, nruns, njobs;
	struct sched_node nodes[MAXN];
	struct sched_run runs[MAXN];
	struct sched_alloc allocs[MAXN];
	struct sched_job jobs[MAXJ];
	struct sched_dep deps[MAXJ];
	struct sched_tenant tenants[3];
	char names[MAXN][24];
};

static void build(struct world *w, struct sched_snapshot *s)
{
	static const char *levels[] = { "block", "rack" };

	memset(w, 0, sizeof(*w));
	memset(s, 0, sizeof(*s));
	w->tenants[0] = (struct sched_tenant){ .name = "root", .parent = -1, .shares = 1, .max_gpus = -1,
					       .max_running_jobs = -1 };
	w->tenants[1] = (struct sched_tenant){ .name = "a", .parent = 0, .shares = 3, .max_gpus = -1,
					       .max_running_jobs = -1 };
	w->tenants[2] = (struct sched_tenant){ .name = "b", .parent = 0, .shares = 1,
					       .max_gpus = rnd(2) ? -1 : 8 + (int)rnd(24),
					       .max_running_jobs = rnd(3) ? -1 : 1 + (int)rnd(3),
					       .guaranteed_gpus = rnd(2) ? 0 : 4 };
	w->nn = 4 + rnd(MAXN - 4);
	for (size_t n = 0; n < w->nn; n++) {
		struct sched_node *x = &w->nodes[n];
		snprintf(w->names[n], sizeof(w->names[0]), "n%zu", n);
		x->name = w->names[n];
		for (int l = 0; l < SCHED_MAX_LEVELS; l++)
			x->unit[l] = -1;
		x->unit[0] = (int)(n / 16) * 16;
		x->unit[1] = (int)(n / 4) * 4;
		x->gpu_model = rnd(4) ? "h100" : "a100";
		x->gpu_count = 8;
		x->healthy = 0xff;
		x->state = rnd(10) ? SCHED_NODE_UP : rnd(2) ? SCHED_NODE_DRAIN : SCHED_NODE_DOWN;
		if (rnd(3))
			continue;
		size_t r = w->nruns++;
		uint64_t m = (1ULL << (1 + rnd(8))) - 1;
		w->allocs[r] = (struct sched_alloc){ .node = (int)n, .gpus = m };
		w->runs[r] = (struct sched_run){ .run_id = (int64_t)r + 1, .job_id = (int64_t)r + 1000,
						 .tenant = 1 + (int)rnd(2), .user = -1, .priority = 100,
						 .preemptible = rnd(2), .start = -(int64_t)rnd(100),
						 .time_limit = 100 * (1 + (int64_t)rnd(4)), .nalloc = 1,
						 .alloc = &w->allocs[r] };
		x->used |= m;
	}
	w->njobs = rnd(MAXJ);
	for (size_t i = 0; i < w->njobs; i++) {
		struct sched_job *j = &w->jobs[i];
		*j = (struct sched_job){ .id = (int64_t)i + 1, .tenant = 1 + (int)rnd(2), .user = -1,
					 .priority = rnd(4) ? 100 : 500, .preemptible = true,
					 .submit = -(int64_t)rnd(1000), .nodes = 1 + (int)rnd(3),
					 .gpus_per_node = 1 + (int)rnd(8), .gpu_model = rnd(3) ? "" : "h100",
					 .topo_required = rnd(4) ? -1 : (int)rnd(2), .topo_preferred = -1,
					 .time_limit = 60 + rnd(600) };
		if (i && rnd(5) == 0) {
			w->deps[i] = (struct sched_dep){ .job_id = (int64_t)rnd((uint32_t)i) + 1,
							 .type = SCHED_DEP_AFTEROK, .state = SCHED_DEP_ACTIVE };
			j->deps = &w->deps[i];
			j->ndeps = 1;
		}
	}
	s->now = 0;
	s->settings.order = SCHED_ORDER_MULTIFACTOR;
	s->settings.weight_fairshare = 1000;
	s->settings.weight_age = 100;
	s->settings.max_age = 3600;
	s->settings.reservation_depth = 1 + (int)rnd(4);
	s->settings.preemption = rnd(2);
	s->settings.nlevels = 2;
	s->settings.levels[0] = levels[0];
	s->settings.levels[1] = levels[1];
	s->nnodes = w->nn;
	s->nodes = w->nodes;
	s->nruns = w->nruns;
	s->runs = w->runs;
	s->njobs = w->njobs;
	s->jobs = w->jobs;
	s->ntenants = 3;
	s->tenants = w->tenants;
}

static void probe_of(struct sched_job *p, struct sched_dep *dep)
{
	*p = (struct sched_job){ .id = 0, .tenant = 1 + (int)rnd(2), .user = -1, .priority = rnd(3) ? 100 : 500,
				 .preemptible = true, .submit = 0, .nodes = 1 + (int)rnd(rnd(6) ? 4 : 60),
				 .gpus_per_node = (int)rnd(10), .gpu_model = rnd(3) ? "" : rnd(2) ? "h100" : "v100",
				 .topo_required = rnd(4) ? -1 : (int)rnd(2),
				 .topo_preferred = rnd(4) ? -1 : (int)rnd(2), .time_limit = 30 + rnd(900) };
	if (p->gpus_per_node > SCHED_MAX_GPUS)
		p->gpus_per_node = 8;
	if (rnd(4) == 0) {
		*dep = (struct sched_dep){ .job_id = 1, .type = (enum sched_dep_type)rnd(3),
					   .state = (enum sched_dep_state)rnd(4) };
		p->deps = dep;
		p->ndeps = 1;
	}
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 300;
	long probes = 0;

	rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 4242;
	for (int it = 0; it < iters && fails < 20; it++) {
		static struct world w;
		struct sched_snapshot s;
		struct sched_explainer *x = NULL;
		struct sched_job pr[NPROBE + 1];
		struct sched_dep pd[NPROBE + 1];

		build(&w, &s);
		if (sched_explainer_new(&s, &x) != 0) {
			fprintf(stderr, "iteration %d: sched_explainer_new refused the snapshot\n", it);
			fails++;
			continue;
		}
		for (int k = 0; k < NPROBE; k++)
			probe_of(&pr[k], &pd[k]);
		pr[NPROBE] = pr[0]; /* the first again, after the others */
		pd[NPROBE] = pd[0];
		if (pr[NPROBE].ndeps)
			pr[NPROBE].deps = &pd[NPROBE];
		for (int k = 0; k <= NPROBE; k++) {
			int64_t t1 = 0, t2 = 0;
			enum sched_reason r1, r2;
			char m1[160] = "", m2[160] = "";
			int e1 = sched_explain(&s, &pr[k], &t1, &r1, m1);
			int e2 = sched_explainer_probe(x, &pr[k], &t2, &r2, m2);

			probes++;
			if (e1 != e2 || (!e1 && (t1 != t2 || r1 != r2 || strcmp(m1, m2)))) {
				fprintf(stderr,
					"iteration %d probe %d: sched_explain %d t=%lld %s \"%s\";"
					" explainer %d t=%lld %s \"%s\"\n",
					it, k, e1, (long long)t1, sched_reason_name(r1), m1, e2, (long long)t2,
					sched_reason_name(r2), m2);
				fails++;
			}
		}
		sched_explainer_free(x);
	}
	printf("%d iterations, %ld probes: %d mismatch(es)\n", iters, probes, fails);
	return fails ? 1 : 0;
}
