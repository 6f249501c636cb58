/*
 * test_delta.c - the leader's incremental planning (service/plan/delta.c):
 * over a random cluster that evolves cycle after cycle (the core's starts
 * become runs, runs end, nodes drain, go down and come back, GPUs fail,
 * jobs arrive and leave, users appear, the clock moves), the decisions of
 * one struct sched_decisions kept across cycles with plan_delta_next's
 * hint are exactly those of a fresh full rebuild of each snapshot, as
 * muster-sim's checks compare them. Runs with and without topology levels.
 * usage: test_plan_delta [WORLDS] [CYCLES] [SEED]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "sched.h"

#include "../prop_rng.h"

#define MAXN 40
#define MAXR 400
#define MAXJ 60
#define MAXU 12

static int fails;
static long hinted, compared;

struct world {
	int64_t now, next_run, next_job;
	size_t nn, nr, nj, nu;
	struct sched_node nodes[MAXN];
	struct sched_run runs[MAXR];
	struct sched_alloc allocs[MAXR][4];
	struct sched_job jobs[MAXJ];
	struct sched_user users[MAXU];
	struct sched_tenant tenants[3];
	char names[MAXN][24], unames[MAXU][24];
	int nlevels;
};

static void new_job(struct world *w, struct sched_job *j)
{
	*j = (struct sched_job){ .id = ++w->next_job, .tenant = 1 + (int)rnd(2), .user = -1, .priority = rnd(5) ? 100 : 400,
				 .preemptible = true, .submit = w->now - (int64_t)rnd(100), .nodes = 1 + (int)rnd(3),
				 .gpus_per_node = 1 + (int)rnd(8), .gpu_model = "", .topo_required = -1,
				 .topo_preferred = -1, .time_limit = 50 + rnd(400) };
	if (w->nu && rnd(2)) {
		j->user = (int)rnd((uint32_t)w->nu);
		j->tenant = w->users[j->user].tenant;
	}
	if (w->nlevels && rnd(4) == 0)
		j->topo_required = (int)rnd((uint32_t)w->nlevels);
}

static void add_user(struct world *w, bool append)
{
	if (w->nu >= MAXU)
		return;
	size_t at = append ? w->nu : rnd((uint32_t)w->nu + 1);
	memmove(&w->users[at + 1], &w->users[at], (w->nu - at) * sizeof(w->users[0]));
	snprintf(w->unames[w->nu], sizeof(w->unames[0]), "u%zu", w->nu);
	w->users[at] = (struct sched_user){ .name = w->unames[w->nu], .tenant = 1 + (int)rnd(2), .shares = 1,
					    .usage = rnd(1000) };
	w->nu++;
	/* indexes moved: jobs and runs point at users by index */
	for (size_t i = 0; i < w->nj; i++)
		if (w->jobs[i].user >= (int)at)
			w->jobs[i].user++;
	for (size_t i = 0; i < w->nr; i++)
		if (w->runs[i].user >= (int)at)
			w->runs[i].user++;
}

static void build(struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->now = 1000;
	w->nlevels = (int)rnd(3);
	w->tenants[0] = (struct sched_tenant){ .name = "root", .parent = -1, .shares = 1, .max_gpus = -1,
					       .max_running_jobs = -1 };
	w->tenants[1] = (struct sched_tenant){ .name = "a", .parent = 0, .shares = 2, .max_gpus = -1,
					       .max_running_jobs = -1 };
	w->tenants[2] = (struct sched_tenant){ .name = "b", .parent = 0, .shares = 1, .max_gpus = rnd(2) ? -1 : 40,
					       .max_running_jobs = -1 };
	w->nn = 4 + rnd(MAXN - 4);
	for (size_t n = 0; n < w->nn; n++) {
		struct sched_node *x = &w->nodes[n];
		snprintf(w->names[n], sizeof(w->names[0]), "n%zu", n);
		x->name = w->names[n];
		for (int l = 0; l < SCHED_MAX_LEVELS; l++)
			x->unit[l] = l < w->nlevels ? (int)(n / (l ? 4 : 12)) * (l ? 4 : 12) : -1;
		x->gpu_model = "h100";
		x->gpu_count = 8;
		x->healthy = 0xff;
		x->state = SCHED_NODE_UP;
	}
	for (int u = 0; u < 3; u++)
		add_user(w, true);
	w->nj = rnd(MAXJ);
	for (size_t i = 0; i < w->nj; i++)
		new_job(w, &w->jobs[i]);
}

static void snapshot(struct world *w, struct sched_snapshot *s)
{
	static const char *levels[] = { "block", "rack" };
	memset(s, 0, sizeof(*s));
	for (size_t n = 0; n < w->nn; n++)
		w->nodes[n].used = 0;
	for (size_t r = 0; r < w->nr; r++)
		for (size_t k = 0; k < w->runs[r].nalloc; k++)
			w->nodes[w->allocs[r][k].node].used |= w->allocs[r][k].gpus;
	for (size_t r = 0; r < w->nr; r++)
		w->runs[r].alloc = w->allocs[r];
	s->now = w->now;
	s->settings.order = SCHED_ORDER_MULTIFACTOR;
	s->settings.weight_fairshare = 1000;
	s->settings.weight_age = 100;
	s->settings.max_age = 3600;
	s->settings.reservation_depth = 2;
	s->settings.preemption = true;
	s->settings.nlevels = w->nlevels;
	for (int l = 0; l < w->nlevels; l++)
		s->settings.levels[l] = levels[l];
	s->nnodes = w->nn;
	s->nodes = w->nodes;
	s->nruns = w->nr;
	s->runs = w->runs;
	s->njobs = w->nj;
	s->jobs = w->jobs;
	s->ntenants = 3;
	s->tenants = w->tenants;
	s->nusers = w->nu;
	s->users = w->users;
}

static void check_same(int wi, int cy, const struct sched_decisions *a, const struct sched_decisions *b)
{
	char why[512] = "";
	if (a->nstarts != b->nstarts || a->npreemptions != b->npreemptions || a->nfails != b->nfails ||
	    a->nverdicts != b->nverdicts || a->nshrinks != b->nshrinks || a->nreservations != b->nreservations)
		snprintf(why, sizeof(why), "counts differ: starts %zu/%zu preemptions %zu/%zu reservations %zu/%zu",
			 a->nstarts, b->nstarts, a->npreemptions, b->npreemptions, a->nreservations,
			 b->nreservations);
	for (size_t i = 0; !why[0] && i < a->nstarts; i++) {
		if (a->starts[i].job_id != b->starts[i].job_id || a->starts[i].nalloc != b->starts[i].nalloc)
			snprintf(why, sizeof(why), "start %zu: job %lld vs %lld", i, (long long)a->starts[i].job_id,
				 (long long)b->starts[i].job_id);
		for (size_t k = 0; !why[0] && k < a->starts[i].nalloc; k++)
			if (a->starts[i].alloc[k].node != b->starts[i].alloc[k].node ||
			    a->starts[i].alloc[k].gpus != b->starts[i].alloc[k].gpus)
				snprintf(why, sizeof(why), "start %zu: placement differs", i);
	}
	for (size_t i = 0; !why[0] && i < a->npreemptions; i++)
		if (a->preemptions[i].run_id != b->preemptions[i].run_id)
			snprintf(why, sizeof(why), "preemption %zu differs", i);
	for (size_t i = 0; !why[0] && i < a->nverdicts; i++)
		if (a->verdicts[i].reason != b->verdicts[i].reason ||
		    a->verdicts[i].planned_start != b->verdicts[i].planned_start ||
		    strcmp(a->verdicts[i].message, b->verdicts[i].message))
			snprintf(why, sizeof(why), "verdict %zu: %s %lld \"%s\" vs %s %lld \"%s\"", i,
				 sched_reason_name(a->verdicts[i].reason), (long long)a->verdicts[i].planned_start,
				 a->verdicts[i].message, sched_reason_name(b->verdicts[i].reason),
				 (long long)b->verdicts[i].planned_start, b->verdicts[i].message);
	for (size_t i = 0; !why[0] && i < a->nfails; i++)
		if (a->fails[i].job_id != b->fails[i].job_id)
			snprintf(why, sizeof(why), "fail %zu differs", i);
	compared++;
	if (why[0]) {
		fprintf(stderr, "world %d cycle %d: kept + hint vs full rebuild: %s\n", wi, cy, why);
		fails++;
	}
}

/* What the cluster does between two cycles. */
static void evolve(struct world *w, const struct sched_decisions *d)
{
	/* the starts become runs (jobs leave the pending list) */
	bool gone[MAXJ] = { false };
	for (size_t i = 0; i < d->nstarts && w->nr < MAXR; i++) {
		const struct sched_start *st = &d->starts[i];
		const struct sched_job *j = &w->jobs[st->job];
		struct sched_run *r = &w->runs[w->nr];
		*r = (struct sched_run){ .run_id = ++w->next_run, .job_id = j->id, .tenant = j->tenant, .user = j->user,
					 .priority = j->priority, .preemptible = j->preemptible, .start = w->now,
					 .time_limit = j->time_limit, .grace = 30, .nalloc = st->nalloc };
		for (size_t k = 0; k < st->nalloc && k < 4; k++)
			w->allocs[w->nr][k] = st->alloc[k];
		if (st->nalloc <= 4)
			w->nr++;
		gone[st->job] = true;
	}
	for (size_t i = 0; i < d->nfails; i++)
		gone[d->fails[i].job] = true;
	size_t o = 0;
	for (size_t i = 0; i < w->nj; i++)
		if (!gone[i] && rnd(20))
			w->jobs[o++] = w->jobs[i];
	w->nj = o;
	/* preempted runs stop; others end at their limit or at random */
	w->now += 1 + rnd(60);
	o = 0;
	for (size_t r = 0; r < w->nr; r++) {
		bool pre = false;
		for (size_t i = 0; i < d->npreemptions; i++)
			pre |= d->preemptions[i].run_id == w->runs[r].run_id;
		if (pre && !w->runs[r].stopping && rnd(2)) {
			w->runs[r].stopping = true; /* a field change: removed + added */
		} else if (pre || w->runs[r].start + w->runs[r].time_limit <= w->now || rnd(8) == 0) {
			continue;
		}
		if (o != r) {
			w->runs[o] = w->runs[r];
			memcpy(w->allocs[o], w->allocs[r], sizeof(w->allocs[0]));
		}
		o++;
	}
	w->nr = o;
	/* nodes change state or health now and then */
	for (size_t n = 0; n < w->nn; n++) {
		if (rnd(25) == 0)
			w->nodes[n].state = (enum sched_node_state)rnd(3);
		if (rnd(40) == 0)
			w->nodes[n].healthy ^= 1ULL << rnd(8);
	}
	/* runs on down nodes are lost */
	o = 0;
	for (size_t r = 0; r < w->nr; r++) {
		bool down = false;
		for (size_t k = 0; k < w->runs[r].nalloc; k++)
			down |= w->nodes[w->allocs[r][k].node].state == SCHED_NODE_DOWN;
		if (down)
			continue;
		if (o != r) {
			w->runs[o] = w->runs[r];
			memcpy(w->allocs[o], w->allocs[r], sizeof(w->allocs[0]));
		}
		o++;
	}
	w->nr = o;
	/* new jobs, new users (mostly appended), usage moves */
	for (int k = (int)rnd(6); k > 0 && w->nj < MAXJ; k--)
		new_job(w, &w->jobs[w->nj++]);
	if (rnd(6) == 0)
		add_user(w, rnd(4) != 0);
	for (size_t u = 0; u < w->nu; u++)
		w->users[u].usage += rnd(50);
}

int main(int argc, char **argv)
{
	int worlds = argc > 1 ? atoi(argv[1]) : 60, cycles = argc > 2 ? atoi(argv[2]) : 40;
	rng_state = argc > 3 ? strtoull(argv[3], NULL, 10) : 99;
	for (int wi = 0; wi < worlds && fails < 10; wi++) {
		static struct world w;
		struct plan_delta *pd = plan_delta_new();
		struct sched_decisions kept;
		sched_decisions_init(&kept);
		build(&w);
		for (int cy = 0; cy < cycles && fails < 10; cy++) {
			struct sched_snapshot s;
			struct sched_decisions full;
			snapshot(&w, &s);
			s.delta = plan_delta_next(pd, &s);
			hinted += s.delta != NULL;
			sched_decisions_init(&full);
			if (sched_cycle(&s, &kept)) {
				fprintf(stderr, "world %d cycle %d: the kept cycle failed: %s\n", wi, cy, kept.error);
				fails++;
				plan_delta_reset(pd);
			}
			struct sched_snapshot f = s;
			f.delta = NULL;
			if (sched_cycle(&f, &full)) {
				fprintf(stderr, "world %d cycle %d: the full cycle failed: %s\n", wi, cy, full.error);
				fails++;
			}
			check_same(wi, cy, &kept, &full);
			evolve(&w, &full);
			sched_decisions_release(&full);
		}
		sched_decisions_release(&kept);
		plan_delta_free(pd);
	}
	printf("%ld cycles compared, %ld with a hint: %d mismatch(es)\n", compared, hinted, fails);
	return fails || hinted * 2 < compared ? 1 : 0;
}
