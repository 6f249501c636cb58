/*
 * test_delta.c - the leader's incremental planning (service/plan/delta.c)
 * and allocations as ranges of nodes (struct sched_alloc.count,
 * settings.ranged_allocs): over random clusters that evolve cycle after
 * cycle (starts become runs, runs end or are preempted, nodes drain, go
 * down and lose GPUs or a fabric link, now and then all of one run's nodes
 * at once, elastic runs shrink, jobs arrive and leave, users appear, the
 * clock moves), each cycle is planned four ways:
 *   A  runs one entry per node, a fresh full rebuild (muster-scheduler's
 *      decisions without a hint);
 *   K  the same snapshot with plan_delta_next's hint and one kept struct
 *      sched_decisions (muster-scheduler's way);
 *   B  the same runs as ranges, ranged_allocs on, full rebuild;
 *   C  as B, with a hint of its own and a kept struct sched_decisions.
 * K's, B's and C's starts, node by node, must be A's; their verdicts,
 * reservations, preemptions, shrinks and fails too, as muster-sim's checks
 * compare them; and K's and C's incremental views must equal a rebuild's
 * after each delta (settings.check_view), counts no decision shows included. Runs with and without topology levels, with two GPU
 * models and a tenant quota. Then bad ranges (a negative count, a range
 * past the last node) must be refused with an error, not read.
 * usage: test_plan_delta [WORLDS] [CYCLES] [SEED]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "sched.h"

#include "../prop_rng.h"

#define MAXN 40
#define MAXR 200
#define MAXJ 50
#define MAXA 8 /* nodes per run at most */
#define MAXU 12

static int fails;
static long compared, hinted, ranged_runs;

struct world {
	int64_t now, next_run, next_job;
	size_t nn, nr, nj;
	struct sched_node nodes[MAXN];
	struct sched_run runs[MAXR];
	struct sched_alloc allocs[MAXR][MAXA];  /* the truth: one entry per node */
	struct sched_run rruns[MAXR];
	struct sched_alloc rallocs[MAXR][MAXA]; /* the same as ranges */
	struct sched_job jobs[MAXJ];
	struct sched_user users[MAXU];
	size_t nu;
	struct sched_tenant tenants[3];
	char names[MAXN][24], unames[MAXU][24];
	int nlevels;
};

static void new_job(struct world *w, struct sched_job *j)
{
	static const char *models[] = { "", "", "h100", "a100" };
	*j = (struct sched_job){ .id = ++w->next_job, .tenant = 1 + (int)rnd(2), .user = -1,
				 .priority = rnd(5) ? 100 : 400, .preemptible = true,
				 .submit = w->now - (int64_t)rnd(100), .nodes = 1 + (int)rnd(6),
				 .gpus_per_node = rnd(2) ? 8 : 1 + (int)rnd(8), .gpu_model = models[rnd(4)],
				 .topo_required = -1, .topo_preferred = -1, .time_limit = 50 + rnd(400) };
	if (w->nu && rnd(4)) {
		j->user = (int)rnd((uint32_t)w->nu);
		j->tenant = w->users[j->user].tenant;
	}
	if (rnd(5) == 0)
		j->min_nodes = 1 + (int)rnd((uint32_t)j->nodes);
	if (w->nlevels && rnd(4) == 0)
		j->topo_required = (int)rnd((uint32_t)w->nlevels);
	else if (w->nlevels && rnd(4) == 0)
		j->topo_preferred = (int)rnd((uint32_t)w->nlevels);
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
	w->tenants[2] = (struct sched_tenant){ .name = "b", .parent = 0, .shares = 1, .max_gpus = rnd(2) ? -1 : 48,
					       .max_running_jobs = -1 };
	w->nn = 6 + rnd(MAXN - 6);
	for (size_t n = 0; n < w->nn; n++) {
		struct sched_node *x = &w->nodes[n];
		snprintf(w->names[n], sizeof(w->names[0]), "n%zu", n);
		x->name = w->names[n];
		for (int l = 0; l < SCHED_MAX_LEVELS; l++)
			x->unit[l] = l < w->nlevels ? (int)(n / (l ? 4 : 12)) * (l ? 4 : 12) : -1;
		x->gpu_model = n < w->nn * 3 / 4 ? "h100" : "a100";
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

/* Run r's allocation as ranges: consecutive nodes with one mask merged. */
static void rangify(struct world *w, size_t r)
{
	size_t k = 0;
	for (size_t i = 0; i < w->runs[r].nalloc; i++) {
		const struct sched_alloc *a = &w->allocs[r][i];
		struct sched_alloc *p = k ? &w->rallocs[r][k - 1] : NULL;
		if (p && a->node == p->node + sched_alloc_len(p) && a->gpus == p->gpus)
			p->count = sched_alloc_len(p) + 1;
		else
			w->rallocs[r][k++] = (struct sched_alloc){ .node = a->node, .count = 1, .gpus = a->gpus };
	}
	w->rruns[r] = w->runs[r];
	w->rruns[r].alloc = w->rallocs[r];
	w->rruns[r].nalloc = k;
	ranged_runs += k < w->runs[r].nalloc;
}

static void snapshot(struct world *w, struct sched_snapshot *s, bool ranged)
{
	static const char *levels[] = { "block", "rack" };
	memset(s, 0, sizeof(*s));
	for (size_t n = 0; n < w->nn; n++)
		w->nodes[n].used = 0;
	for (size_t r = 0; r < w->nr; r++) {
		for (size_t k = 0; k < w->runs[r].nalloc; k++)
			w->nodes[w->allocs[r][k].node].used |= w->allocs[r][k].gpus;
		w->runs[r].alloc = w->allocs[r];
		rangify(w, r);
	}
	s->now = w->now;
	s->settings.order = SCHED_ORDER_MULTIFACTOR;
	s->settings.weight_fairshare = 1000;
	s->settings.weight_age = 100;
	s->settings.max_age = 3600;
	s->settings.reservation_depth = 2;
	s->settings.preemption = true;
	s->settings.ranged_allocs = ranged;
	s->settings.check_view = true; /* K and C: the view after each delta must be a rebuild's */
	s->settings.nlevels = w->nlevels;
	for (int l = 0; l < w->nlevels; l++)
		s->settings.levels[l] = levels[l];
	s->nnodes = w->nn;
	s->nodes = w->nodes;
	s->nruns = w->nr;
	s->runs = ranged ? w->rruns : w->runs;
	s->njobs = w->nj;
	s->jobs = w->jobs;
	s->ntenants = 3;
	s->tenants = w->tenants;
	s->nusers = w->nu;
	s->users = w->users;
}

/* b's allocation a[0..na), node by node, is want[0..nwant). */
static bool same_nodes(const struct sched_alloc *want, size_t nwant, const struct sched_alloc *a, size_t na)
{
	size_t i = 0;
	for (size_t k = 0; k < na; k++)
		for (int e = 0; e < sched_alloc_len(&a[k]); e++, i++)
			if (i >= nwant || want[i].node != a[k].node + e || want[i].gpus != a[k].gpus)
				return false;
	return i == nwant;
}

static void check_same(int wi, int cy, const char *what, const struct sched_decisions *a,
		       const struct sched_decisions *b)
{
	char why[512] = "";
	if (a->nstarts != b->nstarts || a->npreemptions != b->npreemptions || a->nfails != b->nfails ||
	    a->nverdicts != b->nverdicts || a->nshrinks != b->nshrinks || a->nreservations != b->nreservations)
		snprintf(why, sizeof(why), "counts differ: starts %zu/%zu preemptions %zu/%zu reservations %zu/%zu "
			 "shrinks %zu/%zu", a->nstarts, b->nstarts, a->npreemptions, b->npreemptions,
			 a->nreservations, b->nreservations, a->nshrinks, b->nshrinks);
	for (size_t i = 0; !why[0] && i < a->nstarts; i++)
		if (a->starts[i].job_id != b->starts[i].job_id ||
		    !same_nodes(a->starts[i].alloc, a->starts[i].nalloc, b->starts[i].alloc, b->starts[i].nalloc))
			snprintf(why, sizeof(why), "start %zu (job %lld): placement differs", i,
				 (long long)a->starts[i].job_id);
	for (size_t i = 0; !why[0] && i < a->nreservations; i++)
		if (a->reservations[i].job_id != b->reservations[i].job_id ||
		    a->reservations[i].start != b->reservations[i].start ||
		    !same_nodes(a->reservations[i].alloc, a->reservations[i].nalloc, b->reservations[i].alloc,
				b->reservations[i].nalloc))
			snprintf(why, sizeof(why), "reservation %zu differs", i);
	for (size_t i = 0; !why[0] && i < a->npreemptions; i++)
		if (a->preemptions[i].run_id != b->preemptions[i].run_id ||
		    a->preemptions[i].reason != b->preemptions[i].reason)
			snprintf(why, sizeof(why), "preemption %zu differs", i);
	for (size_t i = 0; !why[0] && i < a->nshrinks; i++)
		if (a->shrinks[i].run_id != b->shrinks[i].run_id ||
		    !same_nodes(a->shrinks[i].alloc, a->shrinks[i].nalloc, b->shrinks[i].alloc, b->shrinks[i].nalloc))
			snprintf(why, sizeof(why), "shrink %zu differs", i);
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
		fprintf(stderr, "world %d cycle %d: a full rebuild node by node vs %s: %s\n", wi, cy, what, why);
		fails++;
	}
}

/* What the cluster does between two cycles (by A's decisions, one entry per node). */
static void evolve(struct world *w, const struct sched_decisions *d)
{
	bool gone[MAXJ] = { false };
	for (size_t i = 0; i < d->nstarts && w->nr < MAXR; i++) {
		const struct sched_start *st = &d->starts[i];
		const struct sched_job *j = &w->jobs[st->job];
		struct sched_run *r = &w->runs[w->nr];
		*r = (struct sched_run){ .run_id = ++w->next_run, .job_id = j->id, .tenant = j->tenant, .user = j->user,
					 .priority = j->priority, .preemptible = j->preemptible, .start = w->now,
					 .time_limit = j->time_limit, .grace = 30, .min_nodes = j->min_nodes,
					 .nalloc = st->nalloc };
		for (size_t k = 0; k < st->nalloc && k < MAXA; k++)
			w->allocs[w->nr][k] = st->alloc[k];
		if (st->nalloc <= MAXA)
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
	/* shrinks keep their nodes; preempted runs stop; others end at their limit or at random */
	for (size_t i = 0; i < d->nshrinks; i++)
		for (size_t r = 0; r < w->nr; r++)
			if (w->runs[r].run_id == d->shrinks[i].run_id) {
				w->runs[r].nalloc = d->shrinks[i].nalloc;
				memcpy(w->allocs[r], d->shrinks[i].alloc, d->shrinks[i].nalloc * sizeof(struct sched_alloc));
			}
	w->now += 1 + rnd(60);
	o = 0;
	for (size_t r = 0; r < w->nr; r++) {
		bool pre = false;
		for (size_t i = 0; i < d->npreemptions; i++)
			pre |= d->preemptions[i].run_id == w->runs[r].run_id;
		if (pre && !w->runs[r].stopping && rnd(2)) {
			w->runs[r].stopping = true;
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
	/* nodes drain, go down and lose GPUs or a fabric link */
	for (size_t n = 0; n < w->nn; n++) {
		if (rnd(30) == 0)
			w->nodes[n].state = (enum sched_node_state)rnd(3);
		if (rnd(40) == 0)
			w->nodes[n].healthy ^= 1ULL << rnd(8);
		if (rnd(60) == 0)
			w->nodes[n].fabric_down = !w->nodes[n].fabric_down;
	}
	/* now and then every node of one run at once (a rack loses power or its switch, a firmware push) */
	if (w->nr && rnd(6) == 0) {
		size_t r = rnd((uint32_t)w->nr);
		int how = (int)rnd(3);
		for (size_t k = 0; k < w->runs[r].nalloc; k++) {
			struct sched_node *x = &w->nodes[w->allocs[r][k].node];
			if (how == 0)
				x->state = SCHED_NODE_DOWN;
			else if (how == 1)
				x->healthy &= ~w->allocs[r][k].gpus;
			else
				x->fabric_down = true;
		}
	}
	/* runs on down nodes are lost, mostly: the others reach the core, which requeues or shrinks them */
	o = 0;
	for (size_t r = 0; r < w->nr; r++) {
		bool down = false;
		for (size_t k = 0; k < w->runs[r].nalloc; k++)
			down |= w->nodes[w->allocs[r][k].node].state == SCHED_NODE_DOWN;
		if (down && rnd(3))
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

/* Sets run r's first range bad (kind 0: a negative count; 1: past the last node). */
static void spoil(struct world *w, size_t r, int kind)
{
	if (kind == 0)
		w->rallocs[r][0].count = -1;
	else
		w->rallocs[r][0].count = (int)w->nn - w->rallocs[r][0].node + 1;
}

static void expect_refused(const char *how, int ret, const struct sched_decisions *d)
{
	compared++;
	if (ret != SCHED_EINVAL || !strstr(d->error, "out of range")) {
		fprintf(stderr, "a bad range %s: sched_cycle returned %d (%s), not SCHED_EINVAL\n", how, ret, d->error);
		fails++;
	}
}

/* A run whose range is bad is refused with an error, by the full path and with a hint. */
static void bad_ranges(struct world *w)
{
	for (int kind = 0; kind < 2; kind++) {
		size_t r = rnd((uint32_t)w->nr);
		struct sched_snapshot s;
		struct sched_decisions d;
		snapshot(w, &s, true);
		spoil(w, r, kind);
		sched_decisions_init(&d);
		expect_refused("in a full rebuild", sched_cycle(&s, &d), &d);
		sched_decisions_release(&d);

		struct plan_delta *pd = plan_delta_new();
		sched_decisions_init(&d);
		snapshot(w, &s, true); /* good again: the kept view is built from it */
		s.delta = plan_delta_next(pd, &s);
		if (sched_cycle(&s, &d)) {
			fprintf(stderr, "a good snapshot failed: %s\n", d.error);
			fails++;
		}
		snapshot(w, &s, true);
		spoil(w, r, kind);
		s.delta = plan_delta_next(pd, &s);
		expect_refused(s.delta ? "with a hint" : "after a hint", sched_cycle(&s, &d), &d);
		sched_decisions_release(&d);
		plan_delta_free(pd);
	}
}

int main(int argc, char **argv)
{
	int worlds = argc > 1 ? atoi(argv[1]) : 60, cycles = argc > 2 ? atoi(argv[2]) : 40;
	rng_state = argc > 3 ? strtoull(argv[3], NULL, 10) : 99;
	long bad_checked = 0;
	for (int wi = 0; wi < worlds && fails < 10; wi++) {
		static struct world w;
		struct plan_delta *pk = plan_delta_new(), *pc = plan_delta_new();
		struct sched_decisions kept, kept_r;
		sched_decisions_init(&kept);
		sched_decisions_init(&kept_r);
		build(&w);
		for (int cy = 0; cy < cycles && fails < 10; cy++) {
			struct sched_snapshot sa, sb;
			struct sched_decisions a, b;
			snapshot(&w, &sa, false);
			snapshot(&w, &sb, true);
			sched_decisions_init(&a);
			sched_decisions_init(&b);
			if (sched_cycle(&sa, &a) || sched_cycle(&sb, &b)) {
				fprintf(stderr, "world %d cycle %d: a full cycle failed: %s / %s\n", wi, cy, a.error, b.error);
				fails++;
			}
			struct sched_snapshot sk = sa, sc = sb;
			sk.delta = plan_delta_next(pk, &sk);
			sc.delta = plan_delta_next(pc, &sc);
			hinted += sk.delta != NULL;
			if (sched_cycle(&sk, &kept)) {
				fprintf(stderr, "world %d cycle %d: the kept cycle failed: %s\n", wi, cy, kept.error);
				fails++;
				plan_delta_reset(pk);
			}
			if (sched_cycle(&sc, &kept_r)) {
				fprintf(stderr, "world %d cycle %d: the kept ranged cycle failed: %s\n", wi, cy, kept_r.error);
				fails++;
				plan_delta_reset(pc);
			}
			check_same(wi, cy, "kept + hint", &a, &kept);
			check_same(wi, cy, "ranges", &a, &b);
			check_same(wi, cy, "ranges, kept + hint", &a, &kept_r);
			if (cy == cycles / 2 && w.nr) {
				bad_ranges(&w);
				bad_checked++;
			}
			evolve(&w, &a);
			sched_decisions_release(&a);
			sched_decisions_release(&b);
		}
		sched_decisions_release(&kept);
		sched_decisions_release(&kept_r);
		plan_delta_free(pk);
		plan_delta_free(pc);
	}
	printf("%ld comparisons, %ld cycles with a hint, %ld runs with a range of 2+ nodes, %ld bad-range checks: "
	       "%d mismatch(es)\n", compared, hinted, ranged_runs, bad_checked, fails);
	return fails || hinted * 6 < compared || ranged_runs < 100 || bad_checked < 10 ? 1 : 0;
}
