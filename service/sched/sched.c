/*
 * sched.c - the policy core's cycle: order, quotas, placement now, backfill
 * reservations on a time profile, preemption, reasons. See sched.h and
 * docs/scheduling.md.
 *
 * Cost model (10,000 nodes x 8 GPUs, 100,000 pending): resources only shrink
 * during a cycle (starts and reservations consume, nothing frees), so a job
 * shape that cannot start now cannot start later in the same cycle either;
 * most pending jobs are rejected in O(1) by per-model counts of nodes by free
 * GPU count or by that failure cache, and only the jobs that might start pay
 * for a placement scan over the nodes. The time profile is the sorted list
 * of release events (planned ends of running runs, then of runs started in
 * this cycle) plus the per-node reservation intervals.
 */
#include "sched.h"
#include "sched_int.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MUSTER_HAVE_FAIRTREE
#include "fairtree.h"
#endif

static const char *const reason_names[] = {
#define SCHED__REASON_NAME(name, str) str,
	SCHED_REASONS(SCHED__REASON_NAME)
#undef SCHED__REASON_NAME
};

const char *sched_reason_name(enum sched_reason r)
{
	if ((unsigned)r >= SCHED_REASON_COUNT)
		return "Unknown";
	return reason_names[r];
}

const char *sched_preempt_reason_name(enum sched_preempt_reason r)
{
	switch (r) {
	case SCHED_PREEMPT_PRIORITY: return "priority";
	case SCHED_PREEMPT_RECLAIM: return "reclaim";
	case SCHED_PREEMPT_NODE_FAIL: return "node_fail";
	}
	return "unknown";
}

/* ------------------------------------------------------------ memory */

void *sched__xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		abort();
	return p;
}

void *sched__xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		abort();
	return p;
}

void *sched__grow(void *p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return p;
	size_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	if (c > SIZE_MAX / size)
		abort();
	p = realloc(p, c * size);
	if (!p)
		abort();
	*cap = c;
	return p;
}

struct blk {
	struct blk *next;
	size_t used, cap;
	max_align_t data[];
};

struct dpriv {
	struct blk *blocks;
	struct blk *spare;      /* emptied blocks kept for the next cycle (calls with a delta) */
	size_t cap_starts, cap_pre, cap_shr, cap_res, cap_fail, cap_verd;
	struct inc *inc;        /* the incremental view, kept between calls with a delta */
};

struct inc *sched__inc_take(struct sched_decisions *d)
{
	struct dpriv *p = d->priv;
	struct inc *in = p ? p->inc : NULL;
	if (p)
		p->inc = NULL;
	return in;
}

void sched__inc_put(struct sched_decisions *d, struct inc *in)
{
	((struct dpriv *)d->priv)->inc = in;
}

static void *arena_alloc(struct dpriv *p, size_t n)
{
	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	struct blk *b = p->blocks;
	if (!b || b->cap - b->used < n) {
		struct blk **sp = &p->spare; /* the first spare that fits: a wide gang's copy is megabytes */
		while (*sp && (*sp)->cap < n)
			sp = &(*sp)->next;
		if (*sp) {
			b = *sp;
			*sp = b->next;
		} else {
			size_t cap = n > 65536 ? n : 65536;
			b = sched__xmalloc(sizeof(*b) + cap);
			b->cap = cap;
		}
		b->next = p->blocks;
		b->used = 0;
		p->blocks = b;
	}
	void *r = (char *)b->data + b->used;
	b->used += n;
	return r;
}

void sched_decisions_init(struct sched_decisions *d)
{
	memset(d, 0, sizeof(*d));
}

void sched_decisions_release(struct sched_decisions *d)
{
	struct dpriv *p = d->priv;
	if (p) {
		sched__inc_free(p->inc);
		for (int i = 0; i < 2; i++) {
			struct blk *b = i ? p->spare : p->blocks;
			while (b) {
				struct blk *n = b->next;
				free(b);
				b = n;
			}
		}
		free(p);
	}
	free(d->starts);
	free(d->preemptions);
	free(d->shrinks);
	free(d->reservations);
	free(d->fails);
	free(d->verdicts);
	memset(d, 0, sizeof(*d));
}

/* Empties the decisions but keeps their storage (calls with a delta: one per event). */
static void decisions_clear(struct sched_decisions *d)
{
	struct dpriv *p = d->priv;
	while (p->blocks) { /* all blocks become spares: a busy cycle's blocks serve the next one */
		struct blk *b = p->blocks;
		p->blocks = b->next;
		b->next = p->spare;
		p->spare = b;
	}
	d->nstarts = d->npreemptions = d->nshrinks = d->nreservations = d->nfails = d->nverdicts = 0;
	d->error[0] = '\0';
}

static struct sched_alloc *copy_alloc(struct sched_decisions *d, const struct sched_alloc *a, size_t n)
{
	struct sched_alloc *r = arena_alloc(d->priv, n * sizeof(*r) + 1);
	if (n)
		memcpy(r, a, n * sizeof(*r));
	return r;
}

size_t sched_alloc_nodes(const struct sched_alloc *a, size_t na)
{
	size_t n = 0;
	for (size_t i = 0; i < na; i++)
		n += (size_t)sched_alloc_len(&a[i]);
	return n;
}

/* ------------------------------------------------------------ messages */

static void verdict(struct cyc *c, size_t j, enum sched_reason r, int64_t start, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void verdict(struct cyc *c, size_t j, enum sched_reason r, int64_t start, const char *fmt, ...)
{
	struct sched_verdict *v = &c->d->verdicts[j];
	v->reason = r;
	v->planned_start = start;
	if (c->s->settings.quiet || !fmt) {
		v->message[0] = '\0';
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	/* A fixed sentence (most waiting jobs') or one string: no formatting. */
	const char *text = !strcmp(fmt, "%s") ? va_arg(ap, const char *) : strchr(fmt, '%') ? NULL : fmt;
	if (text) {
		size_t n = strnlen(text, sizeof(v->message) - 1);
		memcpy(v->message, text, n);
		v->message[n] = '\0';
	} else {
		vsnprintf(v->message, sizeof(v->message), fmt, ap);
	}
	va_end(ap);
}

static const char *level_name(const struct cyc *c, int l)
{
	if (l >= 0 && l < c->s->settings.nlevels && c->s->settings.levels[l])
		return c->s->settings.levels[l];
	return "unit";
}

/* ------------------------------------------------------------ setup */

int64_t sched_job_runtime(const struct sched_snapshot *s, const struct sched_job *j)
{
	int64_t lim = j->time_limit > 0 ? j->time_limit : 1;
	if (!s->settings.predict)
		return lim;
	int64_t p = 0;
	if (j->predicted_runtime > 0) {
		p = j->predicted_runtime;
	} else if (j->user >= 0 && (size_t)j->user < s->nusers) {
		const struct sched_user *u = &s->users[j->user];
		if (u->nrecent >= 2)
			p = u->recent_runtime[0] > u->recent_runtime[1] ? u->recent_runtime[0]
			                                                 : u->recent_runtime[1]; /* the longer */
		else if (u->nrecent == 1)
			p = u->recent_runtime[0];
	}
	if (p <= 0 || p > lim)
		p = lim;
	return p;
}

int64_t sched__run_end(const struct cyc *c, const struct sched_run *r)
{
	int64_t lim_end = r->start + (r->time_limit > 0 ? r->time_limit : 1);
	int64_t end = lim_end;
	if (c->s->settings.predict && r->predicted_end > c->now && r->predicted_end < lim_end)
		end = r->predicted_end;
	if (r->stopping) {
		int64_t g = c->now + (r->grace > 0 ? r->grace : 0);
		if (g < end)
			end = g;
	}
	if (end <= c->now)
		end = c->now + 1; /* overdue: being killed; plan as if it ends right after now */
	return end;
}

static int fail_snapshot(struct cyc *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail_snapshot(struct cyc *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->d->error, sizeof(c->d->error), fmt, ap);
	va_end(ap);
	return SCHED_EINVAL;
}

static int validate(struct cyc *c)
{
	const struct sched_snapshot *s = c->s;
	if (s->settings.nlevels < 0 || s->settings.nlevels > SCHED_MAX_LEVELS)
		return fail_snapshot(c, "settings: %d topology levels (at most %d)", s->settings.nlevels,
		                     SCHED_MAX_LEVELS);
	if (s->ntenants == 0 || s->tenants[0].parent != -1)
		return fail_snapshot(c, "tenants: index 0 must be the root (parent -1)");
	if (s->njobs >= UINT32_MAX) /* the order's keys index jobs in 32 bits */
		return fail_snapshot(c, "%zu pending jobs (fewer than 2^32)", s->njobs);
	for (size_t i = 1; i < s->ntenants; i++)
		if (s->tenants[i].parent < 0 || (size_t)s->tenants[i].parent >= s->ntenants)
			return fail_snapshot(c, "tenant %zu: parent %d out of range", i, s->tenants[i].parent);
	for (size_t i = 0; i < s->nusers; i++)
		if (s->users[i].tenant < 0 || (size_t)s->users[i].tenant >= s->ntenants)
			return fail_snapshot(c, "user %zu: tenant %d out of range", i, s->users[i].tenant);
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct sched_node *n = &s->nodes[i];
		if (n->gpu_count < 0 || n->gpu_count > SCHED_MAX_GPUS)
			return fail_snapshot(c, "node %s: gpu_count %d out of range", n->name ? n->name : "?",
			                     n->gpu_count);
		for (int l = 0; l < s->settings.nlevels; l++)
			if (n->unit[l] < -1 || (n->unit[l] >= 0 && (size_t)n->unit[l] >= s->nnodes))
				return fail_snapshot(c, "node %s: unit %d at level %d out of range",
				                     n->name ? n->name : "?", n->unit[l], l);
	}
	for (size_t i = 0; i < s->nruns; i++) {
		const struct sched_run *r = &s->runs[i];
		if (r->tenant < 0 || (size_t)r->tenant >= s->ntenants)
			return fail_snapshot(c, "run %lld: tenant out of range", (long long)r->run_id);
		for (size_t k = 0; k < r->nalloc; k++)
			if (r->alloc[k].node < 0 || r->alloc[k].count < 0 ||
			    (int64_t)r->alloc[k].node + sched_alloc_len(&r->alloc[k]) > (int64_t)s->nnodes)
				return fail_snapshot(c, "run %lld: allocation node %d (count %d) out of range",
				                     (long long)r->run_id, r->alloc[k].node, r->alloc[k].count);
	}
	for (size_t i = 0; i < s->njobs; i++) {
		const struct sched_job *j = &s->jobs[i];
		if (j->tenant < 0 || (size_t)j->tenant >= s->ntenants)
			return fail_snapshot(c, "job %lld: tenant out of range", (long long)j->id);
		if (j->user >= 0 && (size_t)j->user >= s->nusers)
			return fail_snapshot(c, "job %lld: user out of range", (long long)j->id);
		if (j->nodes < 1 || j->min_nodes < 0 || j->min_nodes > j->nodes)
			return fail_snapshot(c, "job %lld: nodes %d min_nodes %d", (long long)j->id, j->nodes,
			                     j->min_nodes);
		if (j->gpus_per_node < 0 || j->gpus_per_node > SCHED_MAX_GPUS)
			return fail_snapshot(c, "job %lld: gpus_per_node %d out of range", (long long)j->id,
			                     j->gpus_per_node);
		if (j->topo_required >= s->settings.nlevels || j->topo_preferred >= s->settings.nlevels)
			return fail_snapshot(c, "job %lld: topology level out of range", (long long)j->id);
	}
	return 0;
}

static int model_id(struct cyc *c, const char *m)
{
	int id = -2; /* no node has it */
	/* By pointer first: jobs of one model mostly share their string (the
	 * store's rows), and a job's string is then not read at all (a cache
	 * miss per pending job per cycle). Strings do not change in a cycle. */
	for (int i = 0; i < c->nmcache; i++)
		if (c->mcache_p[i] == m)
			return c->mcache_id[i];
	if (!m || !*m)
		id = -1;
	else
		for (int i = 0; i < c->nmodels; i++)
			if (strcmp(c->models[i], m) == 0) {
				id = i;
				break;
			}
	int slot = c->nmcache < SCHED_MCACHE ? c->nmcache++ : (int)(c->mcache_next++ % SCHED_MCACHE);
	c->mcache_p[slot] = m;
	c->mcache_id[slot] = id;
	return id;
}

/*
 * Sorts release events by time. The sweep applies all events of one instant
 * together and its result does not depend on their order within it, so the
 * time alone is the key: an LSD radix sort on (t - min), skipping the bytes
 * all keys share (most of them: the times lie within days of each other).
 */
static void rel_sort(struct rel *v, size_t n)
{
	if (n < 2)
		return;
	int64_t lo = v[0].t, hi = v[0].t;
	bool sorted = true;
	for (size_t i = 1; i < n; i++) {
		if (v[i].t < v[i - 1].t)
			sorted = false;
		if (v[i].t < lo)
			lo = v[i].t;
		if (v[i].t > hi)
			hi = v[i].t;
	}
	if (sorted)
		return;
	uint64_t span = (uint64_t)hi - (uint64_t)lo;
	struct rel *tmp = sched__xmalloc(n * sizeof(*tmp));
	struct rel *src = v, *dst = tmp;
	for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += 8) {
		size_t count[257] = { 0 };
		for (size_t i = 0; i < n; i++)
			count[(((uint64_t)src[i].t - (uint64_t)lo) >> shift & 0xff) + 1]++;
		for (int b = 1; b <= 256; b++)
			count[b] += count[b - 1];
		for (size_t i = 0; i < n; i++)
			dst[count[((uint64_t)src[i].t - (uint64_t)lo) >> shift & 0xff]++] = src[i];
		struct rel *x = src;
		src = dst;
		dst = x;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
}

void sched__bucket_move(struct cyc *c, int n, int from, int to)
{
	int m = c->model[n];
	if (from == to)
		return;
	c->cnt[m * 65 + from]--;
	c->cnt[m * 65 + to]++;
	c->cnt[c->nmodels * 65 + from]--;
	c->cnt[c->nmodels * 65 + to]++;
	if (c->inc)
		sched__inc_bucket(c->inc, n, from, to);
}

/* Nodes (UP, matching model) with at least g GPUs free now. */
int sched__nodes_ge(const struct cyc *c, int model, int g)
{
	int row = model < 0 ? c->nmodels : model;
	int sum = 0;
	for (int k = g; k <= c->maxk[row]; k++) /* no node of the row has more GPUs */
		sum += c->cnt[row * 65 + k];
	return sum;
}

static void tenant_add(struct cyc *c, int t, int64_t gpus, int jobs)
{
	for (int depth = 0; t >= 0 && depth <= (int)c->s->ntenants; depth++) {
		c->tgpus[t] += gpus;
		c->tjobs[t] += jobs;
		t = c->s->tenants[t].parent;
	}
}

static int setup(struct cyc *c)
{
	const struct sched_snapshot *s = c->s;
	size_t nn = s->nnodes;
	c->now = s->now;
	c->nn = nn;
	if (c->inc)
		return 0; /* sched__inc_begin() set everything up */
	c->fcache = c->ucache = &c->own_cache;
	c->model = sched__xcalloc(nn, sizeof(int));
	c->models = sched__xcalloc(nn + 1, sizeof(char *));
	for (size_t i = 0; i < nn; i++) {
		const char *m = s->nodes[i].gpu_model ? s->nodes[i].gpu_model : "";
		int id = -1;
		for (int k = 0; k < c->nmodels; k++)
			if (strcmp(c->models[k], m) == 0) {
				id = k;
				break;
			}
		if (id < 0) {
			id = c->nmodels++;
			c->models[id] = m;
		}
		c->model[i] = id;
	}
	for (int l = 0; l < s->settings.nlevels; l++) {
		c->agg_free[l] = sched__xcalloc(2 * nn + 1, sizeof(int));
		c->agg_cnt[l] = sched__xcalloc(2 * nn + 1, sizeof(int));
		c->unit[l] = sched__xcalloc(nn, sizeof(int));
		for (size_t i = 0; i < nn; i++)
			c->unit[l][i] = s->nodes[i].unit[l] >= 0 ? s->nodes[i].unit[l] : (int)(nn + i);
	}
	c->up = sched__xcalloc(nn, sizeof(bool));
	c->avail = sched__xcalloc(nn, sizeof(uint64_t));
	c->freemask = sched__xcalloc(nn, sizeof(uint64_t));
	c->cnt = sched__xcalloc((size_t)(c->nmodels + 1) * 65, sizeof(int));
	c->maxk = sched__xcalloc((size_t)c->nmodels + 1, sizeof(int));
	for (size_t i = 0; i < nn; i++) {
		int g = s->nodes[i].gpu_count;
		if (g > c->maxk[c->model[i]])
			c->maxk[c->model[i]] = g;
		if (g > c->maxk[c->nmodels])
			c->maxk[c->nmodels] = g;
	}
	c->rhead = sched__xmalloc(nn * sizeof(int) + 1);
	c->total_gpus = 0;
	for (size_t i = 0; i < nn; i++) {
		const struct sched_node *n = &s->nodes[i];
		uint64_t all = n->gpu_count >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n->gpu_count) - 1);
		c->total_gpus += n->gpu_count;
		c->rhead[i] = -1;
		c->up[i] = n->state == SCHED_NODE_UP;
		c->avail[i] = c->up[i] ? (n->healthy & all) : 0;
		c->freemask[i] = c->avail[i] & ~n->used;
		if (c->up[i]) {
			int k = sched__pc(c->freemask[i]);
			c->cnt[c->model[i] * 65 + k]++;
			c->cnt[c->nmodels * 65 + k]++;
		}
	}
	c->tgpus = sched__xcalloc(s->ntenants, sizeof(int64_t));
	c->tjobs = sched__xcalloc(s->ntenants, sizeof(int));
	c->victim = sched__xcalloc(s->nruns, sizeof(bool));
	c->run_gpus = sched__xcalloc(s->nruns, sizeof(int));
	c->rel = sched__xmalloc((s->nruns + 1) * sizeof(struct rel));
	c->min_preempt_prio = INT_MAX;
	c->min_stopping_prio = INT_MAX;
	for (size_t i = 0; i < s->nruns; i++) {
		const struct sched_run *r = &s->runs[i];
		int g = 0;
		int64_t end = sched__run_end(c, r);
		for (size_t k = 0; k < r->nalloc; k++)
			g += sched__pc(r->alloc[k].gpus) * sched_alloc_len(&r->alloc[k]);
		if (r->nalloc)
			c->rel[c->nrel++] = (struct rel){ end, -1, 0, (int)i, (int)r->nalloc, r->alloc };
		c->run_gpus[i] = g;
		tenant_add(c, r->tenant, g, 1);
		if (r->stopping && r->priority < c->min_stopping_prio)
			c->min_stopping_prio = r->priority;
		if (r->stopping) {
			int64_t ge = c->now + (r->grace > 0 ? r->grace : 0);
			if (ge > c->max_stopping_end)
				c->max_stopping_end = ge;
		}
		if (r->preemptible && !r->stopping && r->priority < c->min_preempt_prio)
			c->min_preempt_prio = r->priority;
	}
	rel_sort(c->rel, c->nrel);
	size_t ns = nn ? nn : 1;
	c->sc_cand = sched__xmalloc(ns * sizeof(struct cand));
	c->sc_mask = sched__xmalloc(ns * sizeof(uint64_t));
	c->sc_last = sched__xmalloc(ns * sizeof(uint64_t));
	c->sc_time = sched__xmalloc(ns * sizeof(int64_t));
	c->sc_alloc = sched__xmalloc(ns * sizeof(struct sched_alloc));
	c->sc_alloc2 = sched__xmalloc(ns * sizeof(struct sched_alloc));
	return 0;
}

static void teardown(struct cyc *c)
{
	sched__quota_release(c);
	if (c->inc) {
		sched__inc_end(c);
	} else {
		free(c->model);
		free(c->models);
		for (int l = 0; l < SCHED_MAX_LEVELS; l++) {
			free(c->unit[l]);
			free(c->agg_free[l]);
			free(c->agg_cnt[l]);
		}
		free(c->up);
		free(c->avail);
		free(c->freemask);
		free(c->cnt);
		free(c->maxk);
		free(c->rhead);
		free(c->sc_cand);
		free(c->sc_mask);
		free(c->sc_last);
		free(c->sc_time);
		free(c->sc_alloc);
		free(c->sc_alloc2);
		free(c->own_cache.e);
	}
	if (!c->inc) { /* else the view keeps them */
		free(c->resv);
		free(c->tgpus);
		free(c->tjobs);
		free(c->victim);
		free(c->crel);
		free(c->order);
		free(c->prio);
		free(c->runtime);
		free(c->rank);
	}
	free(c->subcnt);
	free(c->subids);
	free(c->vsorted);
	free(c->run_gpus);
	free(c->rel);
	free(c->fs);
}

/* ------------------------------------------------------------ order */

static void compute_fairshare(struct cyc *c)
{
	const struct sched_snapshot *s = c->s;
	c->fs = sched__xcalloc(s->nusers + 1, sizeof(double));
#ifdef MUSTER_HAVE_FAIRTREE
	size_t n = s->ntenants + s->nusers;
	struct fairtree_assoc *a = sched__xcalloc(n, sizeof(*a));
	for (size_t i = 0; i < s->ntenants; i++) {
		a[i].parent = s->tenants[i].parent;
		a[i].is_user = false;
		a[i].shares = s->tenants[i].shares;
		a[i].usage = s->tenants[i].usage;
		a[i].name = s->tenants[i].name;
	}
	for (size_t i = 0; i < s->nusers; i++) {
		struct fairtree_assoc *x = &a[s->ntenants + i];
		x->parent = s->users[i].tenant;
		x->is_user = true;
		x->shares = s->users[i].shares;
		x->usage = s->users[i].usage;
		x->name = s->users[i].name;
	}
	if (fairtree_compute(a, n) == 0)
		for (size_t i = 0; i < s->nusers; i++)
			c->fs[i] = a[s->ntenants + i].fairshare;
	free(a);
#else
	for (size_t i = 0; i < s->nusers; i++)
		c->fs[i] = 1.0;
#endif
}

/* 32 bytes: the sorts below move keys, not pointers to them. A job index
 * fits 32 bits (four billion jobs would be 480 GB of sched_job). */
struct okey {
	double prio;
	int64_t submit;
	int64_t id;
	int cls;
	uint32_t idx;
};

static int order_mf_cmp(const void *a, const void *b)
{
	const struct okey *x = a, *y = b;
	if (x->cls != y->cls)
		return x->cls > y->cls ? -1 : 1;
	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	if (x->submit != y->submit)
		return x->submit < y->submit ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static int order_fcfs_cmp(const void *a, const void *b)
{
	const struct okey *x = a, *y = b;
	if (x->submit != y->submit)
		return x->submit < y->submit ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Shortest predicted runtime first, then the priority order (rank). */
static int runtime_cmp(const void *a, const void *b)
{
	const struct okey *x = a, *y = b;
	if (x->submit != y->submit)
		return x->submit < y->submit ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/*
 * A merge sort of keys with the comparison inlined (each caller passes a
 * constant comparator): glibc's qsort calls through a pointer per
 * comparison, and sorted 100k jobs' keys by pointer, a cache miss each.
 * Runs of 16 by insertion first; a merge whose halves are already in order
 * is a copy. tmp holds n keys.
 */
static inline __attribute__((always_inline)) void okey_sort(struct okey *k, struct okey *tmp, size_t n,
                                                            int (*cmp)(const void *, const void *))
{
	enum { RUN = 16 };
	for (size_t lo = 0; lo < n; lo += RUN) {
		size_t hi = lo + RUN < n ? lo + RUN : n;
		for (size_t i = lo + 1; i < hi; i++) {
			struct okey x = k[i];
			size_t j = i;
			for (; j > lo && cmp(&x, &k[j - 1]) < 0; j--)
				k[j] = k[j - 1];
			k[j] = x;
		}
	}
	struct okey *a = k, *b = tmp;
	for (size_t w = RUN; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, o = lo;
			if (mid < hi && cmp(&a[mid - 1], &a[mid]) > 0)
				while (i < mid && j < hi)
					b[o++] = cmp(&a[j], &a[i]) < 0 ? a[j++] : a[i++];
			memcpy(b + o, a + i, (mid - i) * sizeof(*a));
			o += mid - i;
			memcpy(b + o, a + j, (hi - j) * sizeof(*a));
		}
		struct okey *t = a;
		a = b;
		b = t;
	}
	if (a != k)
		memcpy(k, a, n * sizeof(*k));
}

static void sort_sjf(struct cyc *c, size_t *v, size_t n)
{
	struct okey *k = sched__xmalloc((2 * n + 1) * sizeof(*k));
	for (size_t i = 0; i < n; i++)
		k[i] = (struct okey){ 0, c->runtime[v[i]], (int64_t)c->rank[v[i]], 0, (uint32_t)v[i] };
	okey_sort(k, k + n, n, runtime_cmp);
	for (size_t i = 0; i < n; i++)
		v[i] = k[i].idx;
	free(k);
}

/* Above any weighted sum the settings' bounds allow (weights <= 1e9, factors <= 1 but xfactor). */
#define STARVED_PRIO 1e18

/*
 * The job has waited settings.starve_after or longer (multifactor order only:
 * fcfs/easy/conservative never read it). It then orders first, and in a cycle
 * where it holds a reservation the jobs behind it are planned at their limits.
 */
static bool starved(const struct sched_snapshot *s, const struct sched_job *j)
{
	return s->settings.order == SCHED_ORDER_MULTIFACTOR && s->settings.starve_after > 0 &&
	       s->now - j->submit >= s->settings.starve_after;
}

/*
 * A job that needs at least WIDE_SHARE of the pool's GPUs and has waited
 * WIDE_WAIT of its time limit (with starve_after on) also orders first, with
 * the starved jobs, oldest first, but without the limit-planned backfill
 * behind it. Such a job starts only once the machine drains, and each job
 * ordered before it drains it again: a wide job predicted short from its
 * user's last runs has a huge expansion factor, so without this a 10 s
 * prediction that ran 24,468 s kept an older 8,000-processor job of
 * LLNL-Atlas waiting 3.2x EASY's longest wait (bench/RESULTS.md, "third pass").
 */
#define WIDE_SHARE 0.75
#define WIDE_WAIT 0.1

static bool starved_wide(const struct cyc *c, const struct sched_job *j)
{
	const struct sched_snapshot *s = c->s;
	if (s->settings.order != SCHED_ORDER_MULTIFACTOR || s->settings.starve_after <= 0 || c->total_gpus <= 0)
		return false;
	double lim = (double)(j->time_limit > 0 ? j->time_limit : 1);
	return (double)j->nodes * j->gpus_per_node >= WIDE_SHARE * (double)c->total_gpus &&
	       (double)(s->now - j->submit) >= WIDE_WAIT * lim;
}

/*
 * Expansion factor of a pending job: its bounded slowdown (tau = 10 s) if it
 * started now, with the runtime it is planned with (prediction or limit). It
 * grows with the wait, faster for short jobs, so short jobs go first and no
 * job waits forever (LXF, "largest expansion factor first").
 */
static double xfactor(const struct sched_snapshot *s, const struct sched_job *j)
{
	double rt = (double)sched_job_runtime(s, j);
	double wait = s->now > j->submit ? (double)(s->now - j->submit) : 0.0;
	return (wait + rt) / (rt > 10.0 ? rt : 10.0);
}

/*
 * Within its class, a job its tenant's guarantee covers (one that could
 * reclaim: sched__reclaims()) orders before the others, below the starved
 * ones' STARVED_PRIO, as Kueue orders a workload within its nominal quota
 * before one that borrows. Else a reclaim's victim, requeued with an older
 * submit or a better fair share, took back the GPUs freed for the job that
 * reclaimed them, which stopped it again the next cycle, forever.
 */
#define GUARANTEED_PRIO 1e17

static void req_of(struct cyc *c, const struct sched_job *j, struct req *q);

static void compute_order(struct cyc *c)
{
	const struct sched_snapshot *s = c->s;
	size_t nj = s->njobs;
	c->order = sched__scratch(c, SCR_ORDER, (nj + 1) * sizeof(size_t), false);
	c->prio = sched__scratch(c, SCR_PRIO, (nj + 1) * sizeof(double), true);
	if (s->settings.order == SCHED_ORDER_MULTIFACTOR) {
		compute_fairshare(c);
		double max_age = s->settings.max_age > 0 ? (double)s->settings.max_age : 604800.0;
		double total = c->total_gpus > 0 ? (double)c->total_gpus : 1.0;
		bool guar = false;
		for (size_t t = 0; t < s->ntenants && !guar; t++)
			guar = sched__quota_guaranteed(c, (int)t);
		for (size_t i = 0; i < nj; i++) {
			const struct sched_job *j = &s->jobs[i];
			double fs = j->user >= 0 ? c->fs[j->user] : 0.0;
			double age = (double)(s->now - j->submit) / max_age;
			if (age < 0)
				age = 0;
			if (age > 1)
				age = 1;
			double size = (double)j->nodes * j->gpus_per_node / total;
			if (size > 1)
				size = 1;
			c->prio[i] = s->settings.weight_fairshare * fs + s->settings.weight_age * age +
			             s->settings.weight_size * size;
			if (s->settings.weight_xfactor > 0)
				c->prio[i] += s->settings.weight_xfactor * xfactor(s, j);
			if (starved(s, j) || starved_wide(c, j))
				c->prio[i] = STARVED_PRIO + (double)(s->now - j->submit);
			if (guar) {
				struct req q;
				req_of(c, j, &q);
				if (sched__reclaims(c, j, &q, (int64_t)q.nmin * q.g))
					c->prio[i] += GUARANTEED_PRIO;
			}
		}
	}
	struct okey *k = sched__scratch(c, SCR_OKEY, (2 * nj + 1) * sizeof(*k), false);
	for (size_t i = 0; i < nj; i++)
		k[i] = (struct okey){ c->prio[i], s->jobs[i].submit, s->jobs[i].id, s->jobs[i].priority, (uint32_t)i };
	bool mf = s->settings.order == SCHED_ORDER_MULTIFACTOR;
	int (*cmp)(const void *, const void *) = mf ? order_mf_cmp : order_fcfs_cmp;
	size_t sorted = 1; /* callers often pass the queue in order already: skip the sort then */
	while (sorted < nj && cmp(&k[sorted - 1], &k[sorted]) < 0)
		sorted++;
	if (sorted < nj && mf)
		okey_sort(k, k + nj, nj, order_mf_cmp);
	else if (sorted < nj)
		okey_sort(k, k + nj, nj, order_fcfs_cmp);
	for (size_t i = 0; i < nj; i++)
		c->order[i] = k[i].idx;
	if (!c->inc)
		free(k);
}

/* ------------------------------------------------------------ the cycle */

static bool dep_never(const struct sched_dep *d)
{
	switch (d->type) {
	case SCHED_DEP_AFTEROK: return d->state == SCHED_DEP_NOTOK || d->state == SCHED_DEP_MISSING;
	case SCHED_DEP_AFTERANY: return d->state == SCHED_DEP_MISSING;
	case SCHED_DEP_AFTERNOTOK: return d->state == SCHED_DEP_OK || d->state == SCHED_DEP_MISSING;
	}
	return true;
}

static const char *dep_type_name(enum sched_dep_type t)
{
	switch (t) {
	case SCHED_DEP_AFTEROK: return "afterok";
	case SCHED_DEP_AFTERANY: return "afterany";
	case SCHED_DEP_AFTERNOTOK: return "afternotok";
	}
	return "after";
}

/* 0 ok, 1 waiting (index in *which), 2 never (index in *which) */
static int deps_state(const struct sched_job *j, size_t *which)
{
	int st = 0;
	for (size_t k = 0; k < j->ndeps; k++) {
		if (dep_never(&j->deps[k])) {
			*which = k;
			return 2;
		}
		if (j->deps[k].state == SCHED_DEP_ACTIVE && st == 0) {
			st = 1;
			*which = k;
		}
	}
	return st;
}

/* 0 ok; else the reason, with the tenant at fault in *who. */
static enum sched_reason quota_check(struct cyc *c, int t, int64_t gpus, int *who)
{
	for (int depth = 0; t >= 0 && depth <= (int)c->s->ntenants; depth++) {
		const struct sched_tenant *x = &c->s->tenants[t];
		*who = t;
		if (x->max_gpus >= 0 && c->tgpus[t] + gpus > x->max_gpus)
			return SCHED_REASON_QUOTA_MAX;
		if (x->max_running_jobs >= 0 && c->tjobs[t] + 1 > x->max_running_jobs)
			return SCHED_REASON_QUOTA_MAX_JOBS;
		t = x->parent;
	}
	return SCHED_REASON_NONE;
}

/* The largest node count in [nmin, nmax] whose GPUs fit the quotas (0: none). */
static int quota_nodes(struct cyc *c, const struct sched_job *j, int nmin, int nmax, enum sched_reason *why,
                       int *who)
{
	for (int n = nmax; n >= nmin; n--) {
		*why = quota_check(c, j->tenant, (int64_t)n * j->gpus_per_node, who);
		if (*why == SCHED_REASON_NONE)
			return n;
		if (*why == SCHED_REASON_QUOTA_MAX_JOBS)
			return 0;
	}
	return 0;
}

static void req_of(struct cyc *c, const struct sched_job *j, struct req *q)
{
	q->model = model_id(c, j->gpu_model);
	q->g = j->gpus_per_node;
	q->nmax = j->nodes;
	q->nmin = j->min_nodes > 0 ? j->min_nodes : j->nodes;
	q->required = j->topo_required;
	q->preferred = j->topo_preferred;
}

static void commit_start(struct cyc *c, size_t ji, const struct sched_alloc *a, size_t na, int64_t runtime)
{
	const struct sched_job *j = &c->s->jobs[ji];
	struct sched_decisions *d = c->d;
	struct dpriv *p = d->priv;
	d->starts = sched__grow(d->starts, &p->cap_starts, d->nstarts + 1, sizeof(*d->starts));
	struct sched_start *st = &d->starts[d->nstarts++];
	st->job = ji;
	st->job_id = j->id;
	st->planned_end = c->now + runtime;
	if (j->array_throttle > 0)
		sched__array_started(c, j);
	/* by runs of parts (consecutive nodes, one mask): the entries of ranged_allocs, a wide gang's tight loops */
	bool ranged = c->s->settings.ranged_allocs;
	st->alloc = arena_alloc(p, na * sizeof(*st->alloc) + 1);
	st->nalloc = 0;
	size_t nodes = 0; /* a is one entry per node, or ranges already (sched__place_flat()'s whole_ranges()) */
	for (size_t k = 0, len, e; k < na; k += e) {
		e = sched__part_run(a, k, na, &len);
		nodes += len;
		if (ranged)
			st->alloc[st->nalloc++] = (struct sched_alloc){ .node = a[k].node, .count = (int)len, .gpus = a[k].gpus };
		if (len >= 4 && c->inc && c->inc->by_runs && sched__inc_take_run(c->inc, a[k].node, len, a[k].gpus))
			continue;
		for (int n = a[k].node; n < a[k].node + (int)len; n++) { /* node by node */
			int before = c->inc ? sched__pc_low(c->freemask[n]) : sched__pc(c->freemask[n]);
			if (c->inc && !c->inc->by_runs) {
				sched__inc_touch(c, n);
			} else if (c->inc) { /* kept */
				if (a[k].gpus && c->inc->fab[n] && !c->inc->bad[n]) { /* node_bad() once used */
					c->inc->bad[n] = true;
					c->inc->nbad++;
				}
				/* an owned node it fills is at odds no more (its run_add() finds nothing free) */
				c->inc->nodd -= c->inc->nown[n] > 0 && c->freemask[n] && !(c->freemask[n] & ~a[k].gpus);
			}
			c->freemask[n] &= ~a[k].gpus;
			if (c->inc) { /* batched: a wide gang's nodes come in runs */
				sched__inc_move(c->inc, n, before, sched__pc_low(c->freemask[n]));
			} else {
				sched__bucket_move(c, n, before, sched__pc(c->freemask[n]));
			}
		}
	}
	if (!ranged) {
		memcpy(st->alloc, a, na * sizeof(*a));
		st->nalloc = na;
	}
	if (c->inc)
		sched__inc_flush(c->inc);
	sched__add_crel_n(c, c->now + runtime, st->alloc, st->nalloc, -1);
	tenant_add(c, j->tenant, (int64_t)nodes * j->gpus_per_node, 1);
	sched__quota_started(c, j, a, na, c->now + runtime);
}

static void commit_reservation(struct cyc *c, size_t ji, int64_t start, int64_t end,
                               const struct sched_alloc *a, size_t na)
{
	struct sched_decisions *d = c->d;
	struct dpriv *p = d->priv;
	d->reservations = sched__grow(d->reservations, &p->cap_res, d->nreservations + 1,
	                              sizeof(*d->reservations));
	struct sched_reservation *r = &d->reservations[d->nreservations++];
	r->job = ji;
	r->job_id = c->s->jobs[ji].id;
	r->start = start;
	r->end = end;
	r->nalloc = na;
	r->alloc = copy_alloc(d, a, na);
	sched__resv_commit(c, start, end, r->alloc, na);
	sched__quota_reserved(c, &c->s->jobs[ji], start, end, a, na);
}

static void add_fail(struct cyc *c, size_t ji, const char *msg)
{
	struct sched_decisions *d = c->d;
	struct dpriv *p = d->priv;
	d->fails = sched__grow(d->fails, &p->cap_fail, d->nfails + 1, sizeof(*d->fails));
	struct sched_fail *f = &d->fails[d->nfails++];
	f->job = ji;
	f->job_id = c->s->jobs[ji].id;
	f->reason = SCHED_REASON_DEPENDENCY_NEVER;
	snprintf(f->message, sizeof(f->message), "%s", msg);
}

void sched__add_preemption(struct cyc *c, size_t ri, int64_t for_job, enum sched_preempt_reason why)
{
	struct sched_decisions *d = c->d;
	struct dpriv *p = d->priv;
	const struct sched_run *r = &c->s->runs[ri];
	d->preemptions = sched__grow(d->preemptions, &p->cap_pre, d->npreemptions + 1, sizeof(*d->preemptions));
	struct sched_preemption *x = &d->preemptions[d->npreemptions++];
	x->run = ri;
	x->run_id = r->run_id;
	x->for_job_id = for_job;
	x->reason = why;
	c->victim[ri] = true;
	if (c->inc)
		sched__inc_victim(c, ri);
	int64_t end = c->now + (r->grace > 0 ? r->grace : 0);
	if (end <= c->now)
		end = c->now + 1;
	for (size_t k = 0; k < r->nalloc; k++)
		for (int e = 0; e < sched_alloc_len(&r->alloc[k]); e++)
			sched__add_crel(c, end, r->alloc[k].node + e, r->alloc[k].gpus, (int)ri);
}

/* Does this part of run r sit on a failed node or GPU? A fabric link down
 * fails only the runs that span nodes: a one-node run does not use it. */
static bool alloc_failed(const struct sched_node *n, const struct sched_run *r, uint64_t gpus)
{
	return n->state == SCHED_NODE_DOWN || (gpus & ~n->healthy) ||
	       (n->fabric_down && (r->nalloc > 1 || sched_alloc_len(&r->alloc[0]) > 1));
}

/* Runs on DOWN nodes, unhealthy GPUs or a downed fabric: shrink elastic ones,
 * requeue the rest. */
static void node_failures(struct cyc *c)
{
	const struct sched_snapshot *s = c->s;
	bool any = false; /* the common case: no run touches a failed node or GPU */
	if (c->inc && c->inc->nbad == 0)
		return;
	for (size_t n = 0; n < s->nnodes && !any; n++)
		any = s->nodes[n].used && (s->nodes[n].state == SCHED_NODE_DOWN ||
		                            s->nodes[n].fabric_down ||
		                            (s->nodes[n].used & ~s->nodes[n].healthy));
	if (!any)
		return;
	for (size_t i = 0; i < s->nruns; i++) {
		const struct sched_run *r = &s->runs[i];
		if (r->stopping)
			continue;
		size_t bad = 0, nodes = 0;
		for (size_t k = 0; k < r->nalloc; k++)
			for (int e = 0; e < sched_alloc_len(&r->alloc[k]); e++, nodes++)
				bad += alloc_failed(&s->nodes[r->alloc[k].node + e], r, r->alloc[k].gpus);
		if (!bad)
			continue;
		if (r->min_nodes > 0 && nodes - bad >= (size_t)r->min_nodes) {
			struct sched_decisions *d = c->d;
			struct dpriv *p = d->priv;
			d->shrinks = sched__grow(d->shrinks, &p->cap_shr, d->nshrinks + 1, sizeof(*d->shrinks));
			struct sched_shrink *x = &d->shrinks[d->nshrinks++];
			x->run = i;
			x->run_id = r->run_id;
			x->alloc = arena_alloc(p, nodes * sizeof(struct sched_alloc) + 1);
			x->nalloc = 0; /* one entry per node kept */
			for (size_t k = 0; k < r->nalloc; k++)
				for (int e = 0; e < sched_alloc_len(&r->alloc[k]); e++)
					if (!alloc_failed(&s->nodes[r->alloc[k].node + e], r, r->alloc[k].gpus))
						x->alloc[x->nalloc++] =
							(struct sched_alloc){ .node = r->alloc[k].node + e, .gpus = r->alloc[k].gpus };
			continue;
		}
		sched__add_preemption(c, i, 0, SCHED_PREEMPT_NODE_FAIL);
	}
}

static bool place_now(struct cyc *c, size_t ji, const struct req *q, int64_t runtime, bool *held, char *hmsg)
{
	size_t na;
	if (sched__nodes_ge(c, q->model, q->g) < q->nmin)
		return false;
	if (sched__cache_failed(c, q, runtime))
		return false;
	na = sched__place(c, q, c->freemask, c->now, c->now + runtime, PLACE_NOW, c->sc_alloc);
	if (!na) {
		sched__cache_fail(c, q, runtime);
		return false;
	}
	if (q->model == -1 && sched__quota_split(c, c->s->jobs[ji].tenant) &&
	    !sched__quota_fits(c, &c->s->jobs[ji], c->sc_alloc, na, c->now + runtime, held, hmsg, 160))
		return false;
	commit_start(c, ji, c->sc_alloc, na, runtime);
	return true;
}

/*
 * Starts job ji now if it fits. *held (with hmsg, 160 bytes) says that what
 * kept it was quota that a reservation holds or a per-model limit of the
 * GPUs its placement found. A job without gpu_model whose tenant has
 * per-model max_gpus is placed anywhere first, then, when that placement
 * breaks a per-model limit, on one model at a time (in node order).
 */
static bool try_start_now(struct cyc *c, size_t ji, const struct req *q0, int qmax, int64_t runtime, bool *held,
                          char *hmsg)
{
	const struct sched_job *j = &c->s->jobs[ji];
	struct req q = *q0;
	bool split = false;
	*held = false;
	if (qmax < q.nmax)
		q.nmax = qmax;
	if (c->quota) {
		q.nmax = sched__quota_cap(c, j, q.model, runtime, q.nmax, held, hmsg, 160);
		split = q.model == -1 && sched__quota_split(c, j->tenant);
	}
	if (q.nmax < q.nmin)
		return false;
	*held = false; /* the quota left it room: what follows is about GPUs */
	if (place_now(c, ji, &q, runtime, held, hmsg))
		return true;
	for (int m = 0; split && m < c->nmodels; m++) {
		struct req qm = q;
		bool h = false;
		qm.model = m;
		qm.nmax = sched__quota_cap(c, j, m, runtime, q.nmax, &h, hmsg, 160);
		if (c->maxk[m] < q.g)
			continue;
		if (qm.nmax < qm.nmin) {
			*held |= h;
			continue;
		}
		if (place_now(c, ji, &qm, runtime, &h, hmsg))
			return true;
	}
	return false;
}

/*
 * The earliest start of a reservation for job ji that its quotas allow at
 * that time (placement in c->sc_alloc, *na), or SCHED_NEVER; *quota says
 * quota, not resources, kept it (message in qmsg, 160 bytes).
 */
static int64_t reserve_at(struct cyc *c, size_t ji, const struct req *rq, int64_t rt, size_t *na, bool *quota,
                          char *qmsg)
{
	const struct sched_job *j = &c->s->jobs[ji];
	int64_t t = sched__earliest(c, rq, rt, c->sc_alloc, na);
	*quota = false;
	if (t == SCHED_NEVER || !c->quota || sched__quota_reserve_ok(c, j, t, t + rt, c->sc_alloc, *na, qmsg, 160))
		return t;
	*quota = true;
	if (rq->model != -1 || !sched__quota_split(c, j->tenant))
		return SCHED_NEVER;
	int64_t best = SCHED_NEVER;
	size_t bn = 0;
	struct sched_alloc *keep = sched__xmalloc((c->nn + 1) * sizeof(*keep));
	for (int m = 0; m < c->nmodels; m++) {
		struct req r2 = *rq;
		size_t n2 = 0;
		r2.model = m;
		if (c->maxk[m] < rq->g)
			continue;
		int64_t t2 = sched__earliest(c, &r2, rt, c->sc_alloc, &n2);
		if (t2 != SCHED_NEVER && t2 < best &&
		    sched__quota_reserve_ok(c, j, t2, t2 + rt, c->sc_alloc, n2, qmsg, 160)) {
			best = t2;
			bn = n2;
			memcpy(keep, c->sc_alloc, n2 * sizeof(*keep));
		}
	}
	if (best != SCHED_NEVER) {
		memcpy(c->sc_alloc, keep, bn * sizeof(*keep));
		*na = bn;
		*quota = false;
	}
	free(keep);
	return best;
}

static void describe_shape(const struct cyc *c, const struct sched_job *j, char *buf, size_t len)
{
	const char *m = j->gpu_model && *j->gpu_model ? j->gpu_model : "";
	if (j->min_nodes > 0 && j->min_nodes < j->nodes)
		snprintf(buf, len, "%d-%d node(s) x %d %s%sGPU(s)", j->min_nodes, j->nodes, j->gpus_per_node, m,
		         *m ? " " : "");
	else
		snprintf(buf, len, "%d node(s) x %d %s%sGPU(s)", j->nodes, j->gpus_per_node, m, *m ? " " : "");
	if (j->topo_required >= 0) {
		size_t u = strlen(buf);
		snprintf(buf + u, len - u, " in one %s", level_name(c, j->topo_required));
	}
}

/*
 * Can the job ever run on this cluster? 0 yes; TOPOLOGY_UNSATISFIABLE when no
 * set of nodes (healthy or not) can hold it; NODES_UNHEALTHY when only the
 * unhealthy/down/draining ones could.
 */
static enum sched_reason feasibility(struct cyc *c, const struct sched_job *j, const struct req *q)
{
	int best_all = sched__max_in_unit(c, q, false);
	if (best_all < q->nmin)
		return SCHED_REASON_TOPOLOGY_UNSATISFIABLE;
	int best_ok = sched__max_in_unit(c, q, true);
	if (best_ok < q->nmin)
		return SCHED_REASON_NODES_UNHEALTHY;
	return SCHED_REASON_NONE;
}

static void fmt_time(char *buf, size_t len, int64_t now, int64_t t)
{
	if (len == 0)
		return;
	snprintf(buf, len, "t=%lld (in %llds)", (long long)t, (long long)(t - now));
}

static bool try_preempt(struct cyc *c, size_t ji, const struct req *q, int64_t runtime);

/*
 * Everything a job passes through before placement: dependencies, hold,
 * feasibility, quotas. Returns true when the job may try to start, with the
 * node count the quotas allow in *qmax.
 */
static bool admissible(struct cyc *c, size_t ji, const struct req *q, int *qmax, bool probe)
{
	const struct sched_job *pj = probe ? c->probe : &c->s->jobs[ji];
	char shape[96];
	size_t which = 0;
	int ds = deps_state(pj, &which);
	if (ds == 2) {
		const struct sched_dep *dp = &pj->deps[which];
		char msg[160];
		snprintf(msg, sizeof(msg), "dependency %s:%lld can never be satisfied (target %s)",
		         dep_type_name(dp->type), (long long)dp->job_id,
		         dp->state == SCHED_DEP_MISSING ? "does not exist"
		         : dp->state == SCHED_DEP_OK ? "succeeded" : "did not succeed");
		if (!probe)
			add_fail(c, ji, msg);
		c->pv_reason = SCHED_REASON_DEPENDENCY_NEVER;
		snprintf(c->pv_msg, sizeof(c->pv_msg), "%s", msg);
		return false;
	}
	if (pj->held) {
		c->pv_reason = SCHED_REASON_HELD;
		snprintf(c->pv_msg, sizeof(c->pv_msg), "held by a user or an administrator");
		return false;
	}
	int arr_running = 0;
	if (pj->array_throttle > 0 && !sched__array_admit(c, pj, &arr_running)) { /* sched_array.c */
		c->pv_reason = SCHED_REASON_ARRAY_TASK_LIMIT;
		snprintf(c->pv_msg, sizeof(c->pv_msg), "array %lld runs %d tasks, at most %d at once",
		         (long long)pj->array_job_id, arr_running, pj->array_throttle);
		return false;
	}
	if (ds == 1) {
		c->pv_reason = SCHED_REASON_DEPENDENCY;
		snprintf(c->pv_msg, sizeof(c->pv_msg), "waits for job %lld (%s)", (long long)pj->deps[which].job_id,
		         dep_type_name(pj->deps[which].type));
		return false;
	}
	enum sched_reason f = feasibility(c, pj, q);
	if (f != SCHED_REASON_NONE) {
		c->pv_reason = f;
		if (!c->s->settings.quiet || probe) {
			describe_shape(c, pj, shape, sizeof(shape));
			if (f == SCHED_REASON_TOPOLOGY_UNSATISFIABLE)
				snprintf(c->pv_msg, sizeof(c->pv_msg), "needs %s; no set of nodes in this cluster has that",
				         shape);
			else
				snprintf(c->pv_msg, sizeof(c->pv_msg),
				         "needs %s; only nodes that are down, draining or have unhealthy GPUs could hold it",
				         shape);
		}
		return false;
	}
	enum sched_reason why = SCHED_REASON_NONE;
	int who = 0;
	*qmax = quota_nodes(c, pj, q->nmin, q->nmax, &why, &who);
	if (*qmax > 0 && c->quota) {
		*qmax = sched__quota_admit(c, pj, q, *qmax, c->pv_msg, sizeof(c->pv_msg));
		if (*qmax < q->nmin) {
			c->pv_reason = SCHED_REASON_QUOTA_MAX;
			*qmax = 0;
			return false;
		}
	}
	if (*qmax == 0) {
		const struct sched_tenant *t = &c->s->tenants[who];
		c->pv_reason = why;
		if (why == SCHED_REASON_QUOTA_MAX_JOBS)
			snprintf(c->pv_msg, sizeof(c->pv_msg), "tenant %s runs %d job(s), its max_running_jobs is %d",
			         t->name ? t->name : "?", c->tjobs[who], t->max_running_jobs);
		else
			snprintf(c->pv_msg, sizeof(c->pv_msg), "tenant %s uses %lld GPU(s), its max_gpus is %d",
			         t->name ? t->name : "?", (long long)c->tgpus[who], t->max_gpus);
		return false;
	}
	return true;
}

static void finish_verdict(struct cyc *c, size_t ji)
{
	verdict(c, ji, c->pv_reason, SCHED_NEVER, "%s", c->pv_msg);
}

/*
 * Job ji is over max_gpus now (verdict in c->pv_msg). When resources would
 * keep it waiting anyway, it is reserved for a time its quota allows (the
 * same tenant's shorter jobs may hold the quota for a while); when GPUs are
 * free now, it holds the quota from the next time its limits leave room.
 * Either way later jobs of its subtree cannot take that quota from it.
 * Returns true when it did one of the two (and set the verdict).
 */
static bool reserve_over_quota(struct cyc *c, size_t ji, const struct req *q, int64_t rt)
{
	const struct sched_job *j = &c->s->jobs[ji];
	struct req rq = *q;
	size_t na = 0;
	bool qheld = false;
	char qmsg[160], buf[64];
	rq.nmax = rq.nmin;
	int64_t t = reserve_at(c, ji, &rq, rt, &na, &qheld, qmsg);
	if (t != SCHED_NEVER) {
		commit_reservation(c, ji, t, t + rt, c->sc_alloc, na);
		fmt_time(buf, c->s->settings.quiet ? 0 : sizeof(buf), c->now, t);
		verdict(c, ji, SCHED_REASON_RESERVATION, t, "reserved to start at %s, when its quota allows", buf);
		return true;
	}
	t = sched__quota_room_at(c, j, q->model, q->nmin);
	if (t == SCHED_NEVER || t <= c->now)
		return false;
	sched__quota_hold(c, j, t, t + rt, q->model, q->nmin);
	verdict(c, ji, SCHED_REASON_QUOTA_MAX, SCHED_NEVER, "%.100s; held for it from t=%lld", c->pv_msg, (long long)t);
	return true;
}

/*
 * Preemption for job ji within its per-model limits: a job without
 * gpu_model whose tenant has per-model max_gpus preempts for one model at a
 * time (in node order) that its limits leave room on, so that it never
 * stops runs to take GPUs its quota would not let it start on.
 */
static bool try_preempt_quota(struct cyc *c, size_t ji, const struct req *q, int64_t rt)
{
	const struct sched_job *j = &c->s->jobs[ji];
	if (q->model != -1 || !sched__quota_split(c, j->tenant))
		return try_preempt(c, ji, q, rt);
	for (int m = 0; m < c->nmodels; m++) {
		struct req qm = *q;
		bool held = false;
		char msg[160];
		qm.model = m;
		qm.nmax = sched__quota_cap(c, j, m, rt, q->nmax, &held, msg, sizeof(msg));
		if (c->maxk[m] < q->g || qm.nmax < qm.nmin)
			continue;
		if (try_preempt(c, ji, &qm, rt))
			return true;
	}
	return false;
}

/* The waiting jobs seen so far in run_jobs(), by the model they want. */
struct waits {
	bool any;      /* a job of any model */
	bool anymodel; /* a job that takes any model */
	uint64_t models;
};

static void waits_add(struct waits *w, int model)
{
	w->any = true;
	if (model == -1)
		w->anymodel = true;
	else if (model >= 0 && model < 64)
		w->models |= UINT64_C(1) << model;
}

/* Whether a job of that model competes with one that waits ahead. */
static bool waits_ahead(const struct waits *w, int model)
{
	if (model == -1 || model >= 64)
		return w->any;
	if (model < 0)
		return false; /* a model no node has: nothing ahead takes its GPUs */
	return w->anymodel || (w->models >> model & 1);
}

static void run_jobs(struct cyc *c)
{
	const struct sched_snapshot *s = c->s;
	size_t nj = s->njobs;
	int depth = s->settings.reservation_depth;
	int nres = 0;
	int attempts = s->settings.preempt_attempts > 0 ? s->settings.preempt_attempts : 32;
	char buf[64];
	c->runtime = sched__scratch(c, SCR_RUNTIME, (nj + 1) * sizeof(int64_t), false);
	c->rank = sched__scratch(c, SCR_RANK, (nj + 1) * sizeof(size_t), false);
	/* In job order, not priority order: the jobs are read in sequence
	 * (100k jobs in priority order were a cache miss each). */
	for (size_t i = 0; i < nj; i++)
		c->runtime[i] = sched_job_runtime(s, &s->jobs[i]);
	for (size_t i = 0; i < nj; i++)
		c->rank[c->order[i]] = i;
	/*
	 * With predictions, the submit-order policies (fcfs, easy, conservative)
	 * backfill shortest-predicted first (the SC'15 study's EASY-SJBF). The
	 * multifactor order keeps its own order for backfill: its expansion
	 * factor already puts short jobs first and ages them, while a re-sort by
	 * predicted runtime alone starves short jobs whose users' last runs were
	 * long (docs/scheduling.md, "Schedule quality").
	 */
	bool sjf_done = !s->settings.predict || s->settings.order == SCHED_ORDER_MULTIFACTOR;
	bool blocked = false;
	bool guard = false; /* a starved job holds a reservation: backfill behind it by limits */
	/*
	 * Who waits ahead (an admissible job that did not start): a job that
	 * cannot start behind one that waits for the same GPUs says Priority,
	 * as Slurm's does, whether or not a node happens to be free now; the
	 * first one of its kind says Resources. (Whether a node was free now
	 * flipped ~all the one-node jobs' reasons from cycle to cycle as runs
	 * ended and started.) Models past the 64th count as any model.
	 */
	struct waits w = { false, false, 0 };
	for (size_t oi = 0; oi < nj; oi++) {
		if (!sjf_done && depth >= 0 && nres >= depth) {
			/* Reservations are made: backfill the rest shortest-predicted first. */
			sort_sjf(c, c->order + oi, nj - oi);
			sjf_done = true;
		}
		size_t ji = c->order[oi];
		const struct sched_job *j = &s->jobs[ji];
		struct req q;
		int qmax = 0;
		if (oi + SCHED_AHEAD < nj) {
			/* The walk is in priority order, the job array in row order: the
			 * next jobs' rows and runtimes are fetched while this one is decided. */
			size_t jn = c->order[oi + SCHED_AHEAD];
			const char *jp = (const char *)&s->jobs[jn];
			__builtin_prefetch(jp);
			__builtin_prefetch(jp + 64);
			__builtin_prefetch(jp + sizeof(s->jobs[jn]) - 1);
			__builtin_prefetch(&c->runtime[jn]);
			__builtin_prefetch(&c->prio[jn]);
			__builtin_prefetch(&c->d->verdicts[jn], 1);
			__builtin_prefetch((char *)&c->d->verdicts[jn] + 64, 1);
		}
		int64_t rt = c->runtime[ji];
		if (guard)
			rt = j->time_limit > 0 ? j->time_limit : 1;
		req_of(c, j, &q);
		c->d->verdicts[ji].priority = c->prio[ji];
		if (!admissible(c, ji, &q, &qmax, false)) {
			if (c->pv_reason == SCHED_REASON_QUOTA_MAX && c->quota && nres < depth && !blocked &&
			    reserve_over_quota(c, ji, &q, rt)) {
				nres++;
				waits_add(&w, q.model);
				continue;
			}
			finish_verdict(c, ji);
			continue;
		}
		if (blocked) {
			verdict(c, ji, SCHED_REASON_PRIORITY, SCHED_NEVER, "waits behind a blocked job (strict order)");
			continue;
		}
		bool held = false;
		char hmsg[160];
		if (try_start_now(c, ji, &q, qmax, rt, &held, hmsg)) {
			verdict(c, ji, SCHED_REASON_NONE, c->now, "starts now");
			continue;
		}
		enum sched_reason hwhy = sched__quota_reason(c); /* what hmsg names */
		bool behind = waits_ahead(&w, q.model);
		waits_add(&w, q.model);
		blocked = s->settings.no_backfill;
		if (s->settings.preemption && attempts > 0 &&
		    (j->priority > c->min_preempt_prio || j->priority > c->min_stopping_prio ||
		     sched__quota_guaranteed(c, j->tenant))) {
			attempts--;
			if (try_preempt_quota(c, ji, &q, rt))
				continue;
		}
		if (nres < depth) {
			struct req rq = q;
			rq.nmax = rq.nmin; /* an elastic gang is planned at its minimum */
			size_t na = 0;
			bool qheld = false;
			char qmsg[160];
			int64_t t = reserve_at(c, ji, &rq, rt, &na, &qheld, qmsg);
			enum sched_reason qwhy = sched__quota_reason(c); /* what qmsg names */
			if (t != SCHED_NEVER) {
				nres++;
				commit_reservation(c, ji, t, t + rt, c->sc_alloc, na);
				if (starved(s, j))
					guard = true;
				fmt_time(buf, s->settings.quiet ? 0 : sizeof(buf), c->now, t);
				verdict(c, ji, SCHED_REASON_RESERVATION, t, "reserved to start at %s", buf);
				continue;
			}
			if (qheld && !held) {
				verdict(c, ji, qwhy, SCHED_NEVER, "%s", qmsg);
				continue;
			}
		}
		if (held) {
			verdict(c, ji, hwhy, SCHED_NEVER, "%s", hmsg);
			continue;
		}
		if (behind)
			verdict(c, ji, SCHED_REASON_PRIORITY, SCHED_NEVER,
			        "waits behind higher-priority jobs that wait for the same GPUs");
		else
			verdict(c, ji, SCHED_REASON_RESOURCES, SCHED_NEVER, "waits for %d node(s) with %d free GPU(s)",
			        q.nmin, q.g);
	}
}

/*
 * Preemption for job ji: first, if runs already stopping free enough soon,
 * just reserve them; else for a higher class take lower preemptible runs, or
 * for a tenant below its guarantee take borrowers' runs: the cheapest set.
 */
static bool try_preempt(struct cyc *c, size_t ji, const struct req *q, int64_t rt)
{
	const struct sched_job *j = &c->s->jobs[ji];
	char buf[64];
	struct req rq = *q;
	rq.nmax = rq.nmin;
	size_t na = 0;
	if (c->max_stopping_end > c->now) {
		int64_t t = sched__earliest(c, &rq, rt, c->sc_alloc, &na);
		if (t != SCHED_NEVER && t <= c->max_stopping_end) {
			/* A job no stopping run is of a lower class than waits for a
			 * reclaim (the cycle that stopped them said so too). */
			bool reclaim = j->priority <= c->min_stopping_prio &&
			               sched__reclaims(c, j, &rq, (int64_t)rq.nmin * rq.g);
			commit_reservation(c, ji, t, t + rt, c->sc_alloc, na);
			fmt_time(buf, c->s->settings.quiet ? 0 : sizeof(buf), c->now, t);
			verdict(c, ji, reclaim ? SCHED_REASON_QUOTA_GUARANTEED : SCHED_REASON_PREEMPTING, t,
			        reclaim ? "reclaims its guaranteed GPUs from borrowers, whose runs are stopping; starts at %s"
			                : "preempted runs are stopping; starts at %s",
			        buf);
			return true;
		}
	}
	enum sched_preempt_reason why;
	if (!sched__choose_victims(c, j, &rq, rt, &why))
		return false;
	int64_t t = sched__earliest(c, &rq, rt, c->sc_alloc, &na);
	if (t == SCHED_NEVER)
		return false; /* cannot happen: the victims' GPUs fit it */
	commit_reservation(c, ji, t, t + rt, c->sc_alloc, na);
	fmt_time(buf, c->s->settings.quiet ? 0 : sizeof(buf), c->now, t);
	verdict(c, ji, why == SCHED_PREEMPT_RECLAIM ? SCHED_REASON_QUOTA_GUARANTEED : SCHED_REASON_PREEMPTING, t,
	        why == SCHED_PREEMPT_RECLAIM ? "reclaims its guaranteed GPUs from borrowers; starts at %s"
	                                     : "preempts lower-priority runs; starts at %s",
	        buf);
	return true;
}

/* The probe's answer against the plan the cycle in `c` made (run_jobs done):
 * it reads that plan and never books into it, so one plan answers many probes. */
static void answer_probe(struct cyc *c, const struct sched_job *probe, int64_t *probe_start,
                         enum sched_reason *probe_reason, char *probe_msg)
{
	const struct sched_snapshot *s = c->s;
	struct req q;
	int qmax = 0;
	c->probe = probe;
	c->nmcache = 0; /* an explainer's cyc outlives a probe's strings */
	req_of(c, probe, &q);
	*probe_start = SCHED_NEVER;
	if (!admissible(c, 0, &q, &qmax, true)) {
		*probe_reason = c->pv_reason;
		if (probe_msg)
			snprintf(probe_msg, 160, "%s", c->pv_msg);
	} else {
		size_t na = 0;
		struct req rq = q;
		if (qmax < rq.nmax)
			rq.nmax = qmax;
		int64_t rt = sched_job_runtime(s, probe);
		int64_t t = sched__earliest(c, &rq, rt, c->sc_alloc, &na);
		char qmsg[160];
		*probe_start = t;
		*probe_reason = t == s->now ? SCHED_REASON_NONE
		                : t == SCHED_NEVER ? SCHED_REASON_RESOURCES : SCHED_REASON_RESERVATION;
		if (t != SCHED_NEVER && c->quota &&
		    !sched__quota_reserve_ok(c, probe, t, t + rt, c->sc_alloc, na, qmsg, sizeof(qmsg))) {
			/* Its quota, counting the reservations' share, has no room then. */
			*probe_start = SCHED_NEVER;
			*probe_reason = sched__quota_reason(c);
			if (probe_msg)
				snprintf(probe_msg, 160, "%s", qmsg);
		} else if (probe_msg) {
			char buf[64];
			fmt_time(buf, sizeof(buf), s->now, t);
			if (t == s->now)
				snprintf(probe_msg, 160, "would start now");
			else if (t == SCHED_NEVER)
				snprintf(probe_msg, 160, "no start time can be planned now");
			else
				snprintf(probe_msg, 160, "would start at %s", buf);
		}
	}
}

static int cycle(const struct sched_snapshot *s, struct sched_decisions *out, const struct sched_job *probe,
                 int64_t *probe_start, enum sched_reason *probe_reason, char *probe_msg)
{
	struct cyc c;
	int ret;
	memset(&c, 0, sizeof(c));
	c.s = s;
	c.d = out;
	c.probe = probe;
	struct inc *in = sched__inc_take(out);
	if (s->delta && !probe && in) {
		decisions_clear(out);
	} else {
		sched_decisions_release(out);
		out->priv = sched__xcalloc(1, sizeof(struct dpriv));
	}
	if (s->delta && !probe) {
		c.inc = in; /* NULL the first time: sched__inc_begin() builds it */
		ret = sched__inc_begin(&c, validate);
		if (ret)
			goto out;
		sched__inc_put(out, c.inc);
	} else {
		sched__inc_free(in);
	}
	c.flat = c.inc && s->settings.nlevels == 0;
	if (!c.inc) {
		ret = validate(&c);
		if (ret)
			goto out;
	}
	struct dpriv *dp = out->priv;
	if (dp->cap_verd < s->njobs + 1) {
		free(out->verdicts);
		dp->cap_verd = s->njobs + 1;
		out->verdicts = sched__xcalloc(dp->cap_verd, sizeof(*out->verdicts));
	} else { /* as calloc would leave them, but not the 160 message bytes of every job each cycle */
		for (size_t i = 0; i <= s->njobs; i++) {
			struct sched_verdict *v = &out->verdicts[i];
			v->reason = SCHED_REASON_NONE;
			v->planned_start = 0;
			v->priority = 0;
			v->message[0] = '\0';
		}
	}
	out->nverdicts = s->njobs;
	setup(&c);
	sched__quota_setup(&c);
	compute_order(&c);
	node_failures(&c);
	run_jobs(&c);
	if (probe)
		answer_probe(&c, probe, probe_start, probe_reason, probe_msg);
out:
	sched__array_free(&c);
	teardown(&c);
	return ret;
}

int sched_cycle(const struct sched_snapshot *s, struct sched_decisions *out)
{
	return cycle(s, out, NULL, NULL, NULL, NULL);
}

int sched_explain(const struct sched_snapshot *s, const struct sched_job *probe, int64_t *planned_start,
                  enum sched_reason *reason, char *message)
{
	struct sched_decisions d;
	sched_decisions_init(&d);
	int64_t t = SCHED_NEVER;
	enum sched_reason r = SCHED_REASON_RESOURCES;
	int ret = SCHED_EINVAL;
	if (probe && (probe->nodes < 1 || probe->gpus_per_node < 0 || probe->gpus_per_node > SCHED_MAX_GPUS ||
	              probe->tenant < 0 || (size_t)probe->tenant >= s->ntenants ||
	              probe->topo_required >= s->settings.nlevels || probe->min_nodes > probe->nodes))
		goto out;
	ret = cycle(s, &d, probe, &t, &r, message);
out:
	*planned_start = t;
	*reason = r;
	sched_decisions_release(&d);
	return ret;
}

/* ---- explainer: one cycle's plan, many probes ---- */

struct sched_explainer {
	struct cyc c;
	struct sched_decisions d;
};

int sched_explainer_new(const struct sched_snapshot *s, struct sched_explainer **out)
{
	struct sched_explainer *x = sched__xcalloc(1, sizeof(*x));
	struct cyc *c = &x->c;
	struct dpriv *dp;
	int ret;

	*out = NULL;
	sched_decisions_init(&x->d);
	x->d.priv = sched__xcalloc(1, sizeof(struct dpriv));
	c->s = s;
	c->d = &x->d;
	/* What cycle() does for a probe, up to the probe itself: the plan of
	 * every pending job, then kept (teardown only in _free). */
	ret = validate(c);
	if (ret)
		goto out_free;
	dp = x->d.priv;
	dp->cap_verd = s->njobs + 1;
	x->d.verdicts = sched__xcalloc(dp->cap_verd, sizeof(*x->d.verdicts));
	x->d.nverdicts = s->njobs;
	setup(c);
	sched__quota_setup(c);
	compute_order(c);
	node_failures(c);
	run_jobs(c);
	*out = x;
	return 0;
out_free:
	sched_explainer_free(x);
	return ret;
}

int sched_explainer_probe(struct sched_explainer *x, const struct sched_job *probe, int64_t *planned_start,
                          enum sched_reason *reason, char *message)
{
	const struct sched_snapshot *s = x->c.s;

	*planned_start = SCHED_NEVER;
	*reason = SCHED_REASON_RESOURCES;
	if (!probe || probe->nodes < 1 || probe->gpus_per_node < 0 || probe->gpus_per_node > SCHED_MAX_GPUS ||
	    probe->tenant < 0 || (size_t)probe->tenant >= s->ntenants ||
	    probe->topo_required >= s->settings.nlevels || probe->min_nodes > probe->nodes)
		return SCHED_EINVAL;
	answer_probe(&x->c, probe, planned_start, reason, message);
	x->c.probe = NULL;
	return 0;
}

void sched_explainer_free(struct sched_explainer *x)
{
	if (!x)
		return;
	teardown(&x->c);
	sched_decisions_release(&x->d);
	free(x);
}
