/*
 * sched_quota.c - the policy core's quota limits beyond a tenant's own
 * max_gpus at `now` (sched.c's quota_check): per-GPU-model quotas
 * (max_gpus and guaranteed_gpus of one model) and the quota a reservation
 * holds, so that backfill never starts a job that would later keep a
 * reserved job over its tenant's quota. See docs/scheduling.md, "Quotas".
 *
 * Cost: nothing at all when no tenant has a max_gpus, max_running_jobs or
 * per-model quota (the simulator's traces, EASY): c->quota stays NULL and
 * every hook returns at once. Otherwise a limit is a (subtree, model) pair
 * (or a subtree's max_running_jobs, counted in jobs, not GPUs); each
 * tenant has the list of limits that count its GPUs, and each reservation
 * of a limited tenant the slack it leaves under each limit at its start,
 * computed once when it is made (one pass over the running runs) and
 * lowered by every later start or reservation that overlaps it. Per-model
 * limits also cost one pass over the running runs per cycle (their use);
 * the incremental view does not keep these, so a simulation with limits
 * pays them on every event.
 */
#include "sched.h"
#include "sched_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOSLACK INT64_MAX /* the limit does not count the reservation's tenant */
#define JOBS (-3)         /* qlim.model of a max_running_jobs limit: it counts jobs */

struct qlim {
	int tenant;      /* the subtree it counts */
	int model;       /* node model id; -1 every model (the tenant's max_gpus); -2 a model no node has; JOBS */
	int64_t max;     /* -1 none */
	int64_t guar;    /* per-model limits: guaranteed_gpus of the model */
	int64_t used;    /* per-model limits: GPUs of the model the subtree holds (runs and this cycle's starts) */
	const char *name; /* the model, for messages */
};

struct qres {
	int64_t job_id;
	int tenant;
	int64_t start, end;
	int64_t *count;  /* per limit: GPUs of the reservation it counts */
	int64_t *slack;  /* per limit: max minus the use at start, the reservation included; NOSLACK */
};

struct qstate {
	size_t nlim;
	struct qlim *lim;
	int *off, *idx;  /* limits that count tenant t: idx[off[t] .. off[t + 1]) */
	struct qres *res;
	size_t nres, cap_res;
	int64_t *use;    /* scratch: nlim */
	bool *want;      /* scratch: nlim */
	bool jobs;       /* the last message written names a max_running_jobs (sched__quota_reason) */
};

static bool under(const struct cyc *c, int a, int t)
{
	for (int d = 0; t >= 0 && d <= (int)c->s->ntenants; d++) {
		if (t == a)
			return true;
		t = c->s->tenants[t].parent;
	}
	return false;
}

static const char *tname(const struct cyc *c, int t)
{
	const char *n = c->s->tenants[t].name;
	return n ? n : "?";
}

/*
 * Reservation x as a quota message for job j names it: by its job id when
 * whoever sees j's message sees that job too (x's tenant is j's or under
 * it), else without it: an id of another tenant's job is not j's to read.
 */
static const char *resv_ref(const struct cyc *c, const struct sched_job *j, const struct qres *x, char *buf,
                            size_t len)
{
	if (under(c, j->tenant, x->tenant))
		snprintf(buf, len, "job %lld's reservation", (long long)x->job_id);
	else
		snprintf(buf, len, "a reservation of another tenant");
	return buf;
}

static int node_model(const struct cyc *c, const char *m)
{
	for (int i = 0; i < c->nmodels; i++)
		if (strcmp(c->models[i], m ? m : "") == 0)
			return i;
	return -2;
}

/* The limit's name in messages: "max_gpus", "max_gpus for a100", "max_running_jobs". */
static const char *label(const struct qlim *e, char *buf, size_t len)
{
	if (e->model == JOBS)
		return "max_running_jobs";
	if (e->model == -1)
		return "max_gpus";
	snprintf(buf, len, "max_gpus for %s", e->name);
	return buf;
}

/* GPUs of allocation a that limit e counts (a JOBS limit: the one job). */
static int64_t count(const struct cyc *c, const struct qlim *e, const struct sched_alloc *a, size_t na)
{
	int64_t g = 0;
	if (e->model == JOBS)
		return na > 0;
	for (size_t k = 0; k < na; k++) {
		int len = sched_alloc_len(&a[k]), pc = sched__pc(a[k].gpus);
		if (e->model == -1) {
			g += (int64_t)pc * len;
			continue;
		}
		for (int i = 0; i < len; i++)
			if (e->model == c->model[a[k].node + i])
				g += pc;
	}
	return g;
}

void sched__quota_setup(struct cyc *c)
{
	const struct sched_snapshot *s = c->s;
	size_t nlim = 0;
	c->quota = NULL;
	for (size_t t = 0; t < s->ntenants; t++) {
		nlim += s->tenants[t].max_gpus >= 0;
		nlim += s->tenants[t].max_running_jobs >= 0;
		nlim += s->tenants[t].nmodel_quotas; /* even without limits: a guarantee of 0 says it borrows */
	}
	if (!nlim)
		return;
	struct qstate *q = sched__xcalloc(1, sizeof(*q));
	q->lim = sched__xcalloc(nlim, sizeof(*q->lim));
	for (size_t t = 0; t < s->ntenants; t++) {
		const struct sched_tenant *x = &s->tenants[t];
		if (x->max_gpus >= 0)
			q->lim[q->nlim++] = (struct qlim){ (int)t, -1, x->max_gpus, 0, 0, "" };
		if (x->max_running_jobs >= 0)
			q->lim[q->nlim++] = (struct qlim){ (int)t, JOBS, x->max_running_jobs, 0, 0, "" };
		for (size_t k = 0; k < x->nmodel_quotas; k++) {
			const struct sched_model_quota *m = &x->model_quotas[k];
			q->lim[q->nlim++] = (struct qlim){ (int)t, node_model(c, m->gpu_model), m->max_gpus,
			                                   m->guaranteed_gpus, 0, m->gpu_model ? m->gpu_model : "" };
		}
	}
	q->off = sched__xcalloc(s->ntenants + 1, sizeof(int));
	size_t n = 0;
	for (size_t t = 0; t < s->ntenants; t++)
		for (size_t k = 0; k < q->nlim; k++)
			n += under(c, q->lim[k].tenant, (int)t);
	q->idx = sched__xcalloc(n + 1, sizeof(int));
	n = 0;
	for (size_t t = 0; t < s->ntenants; t++) {
		q->off[t] = (int)n;
		for (size_t k = 0; k < q->nlim; k++)
			if (under(c, q->lim[k].tenant, (int)t))
				q->idx[n++] = (int)k;
	}
	q->off[s->ntenants] = (int)n;
	bool models = false; /* per-model use needs a pass over the runs; tenant-wide use is c->tgpus */
	for (size_t k = 0; k < q->nlim; k++)
		models |= q->lim[k].model != -1;
	for (size_t i = 0; models && i < s->nruns; i++) {
		const struct sched_run *r = &s->runs[i];
		for (int k = q->off[r->tenant]; k < q->off[r->tenant + 1]; k++) {
			struct qlim *e = &q->lim[q->idx[k]];
			if (e->model >= 0)
				e->used += count(c, e, r->alloc, r->nalloc);
		}
	}
	q->use = sched__xcalloc(q->nlim, sizeof(int64_t));
	q->want = sched__xcalloc(q->nlim, sizeof(bool));
	c->quota = q;
}

void sched__quota_release(struct cyc *c)
{
	struct qstate *q = c->quota;
	if (!q)
		return;
	for (size_t i = 0; i < q->nres; i++) {
		free(q->res[i].count);
		free(q->res[i].slack);
	}
	free(q->res);
	free(q->lim);
	free(q->off);
	free(q->idx);
	free(q->use);
	free(q->want);
	free(q);
	c->quota = NULL;
}

bool sched__quota_split(const struct cyc *c, int tenant)
{
	const struct qstate *q = c->quota;
	if (!q)
		return false;
	for (int k = q->off[tenant]; k < q->off[tenant + 1]; k++)
		if (q->lim[q->idx[k]].model != -1 && q->lim[q->idx[k]].model != JOBS && q->lim[q->idx[k]].max >= 0)
			return true;
	return false;
}

/* Nodes of g GPUs that per-model limits allow now for a job of `tenant` on `model`. */
static int model_cap(const struct cyc *c, int tenant, int model, int g, int cap, char *msg, size_t len)
{
	const struct qstate *q = c->quota;
	for (int k = q->off[tenant]; k < q->off[tenant + 1]; k++) {
		const struct qlim *e = &q->lim[q->idx[k]];
		if (e->model == -1 || e->model != model || e->max < 0)
			continue;
		int64_t n = (e->max - e->used) / g;
		if (e->max < e->used)
			n = 0;
		if (n < cap) {
			cap = (int)n;
			if (msg) {
				snprintf(msg, len, "tenant %s uses %lld %s GPU(s), its max_gpus for %s is %lld",
				         tname(c, e->tenant), (long long)e->used, e->name, e->name, (long long)e->max);
				c->quota->jobs = false;
			}
		}
	}
	return cap;
}

int sched__quota_admit(const struct cyc *c, const struct sched_job *j, const struct req *rq, int nmax, char *msg,
                       size_t len)
{
	if (!c->quota || j->gpus_per_node <= 0)
		return nmax;
	if (rq->model != -1)
		return model_cap(c, j->tenant, rq->model, j->gpus_per_node, nmax, msg, len);
	if (!sched__quota_split(c, j->tenant))
		return nmax;
	/* No model named: it may run on any model whose limits leave room for its minimum. */
	for (int m = 0; m < c->nmodels; m++)
		if (c->maxk[m] >= j->gpus_per_node && model_cap(c, j->tenant, m, j->gpus_per_node, nmax, NULL, 0) >= rq->nmin)
			return nmax;
	snprintf(msg, len, "tenant %s's max_gpus per GPU model leave no model room for %d GPU(s)", tname(c, j->tenant),
	         rq->nmin * j->gpus_per_node);
	c->quota->jobs = false;
	return 0;
}

int sched__quota_cap(const struct cyc *c, const struct sched_job *j, int model, int64_t rt, int nmax, bool *held,
                     char *msg, size_t len)
{
	const struct qstate *q = c->quota;
	int g = j->gpus_per_node;
	int cap = nmax;
	*held = false;
	if (!q || g <= 0)
		return nmax;
	if (model != -1)
		cap = model_cap(c, j->tenant, model, g, cap, msg, len);
	for (int k = q->off[j->tenant]; k < q->off[j->tenant + 1]; k++) {
		int li = q->idx[k];
		const struct qlim *e = &q->lim[li];
		bool jobs = e->model == JOBS;
		char lb[96], rb[64];
		if (e->max < 0 || (!jobs && e->model != -1 && e->model != model))
			continue; /* no model named: per-model limits are checked on the placement */
		for (size_t r = 0; r < q->nres; r++) {
			const struct qres *x = &q->res[r];
			if (x->slack[li] == NOSLACK || x->start >= c->now + rt)
				continue;
			int64_t n = x->slack[li] <= 0 ? 0 : jobs ? cap : x->slack[li] / g;
			if (n < cap) {
				cap = (int)n;
				*held = true;
				snprintf(msg, len, "tenant %s's %s %lld is held for %s at t=%lld", tname(c, e->tenant),
				         label(e, lb, sizeof(lb)), (long long)e->max, resv_ref(c, j, x, rb, sizeof(rb)),
				         (long long)x->start);
				c->quota->jobs = jobs;
			}
		}
	}
	return cap;
}

bool sched__quota_fits(const struct cyc *c, const struct sched_job *j, const struct sched_alloc *a, size_t na,
                       int64_t end, bool *held, char *msg, size_t len)
{
	const struct qstate *q = c->quota;
	*held = false;
	if (!q)
		return true;
	for (int k = q->off[j->tenant]; k < q->off[j->tenant + 1]; k++) {
		int li = q->idx[k];
		const struct qlim *e = &q->lim[li];
		if (e->model == -1 || e->model == JOBS || e->max < 0)
			continue; /* JOBS: sched__quota_cap() has checked it for every job */
		int64_t n = count(c, e, a, na);
		if (!n)
			continue;
		if (e->used + n > e->max) {
			snprintf(msg, len, "tenant %s uses %lld %s GPU(s), its max_gpus for %s is %lld", tname(c, e->tenant),
			         (long long)e->used, e->name, e->name, (long long)e->max);
			c->quota->jobs = false;
			return false;
		}
		for (size_t r = 0; r < q->nres; r++) {
			const struct qres *x = &q->res[r];
			if (x->slack[li] != NOSLACK && x->start < end && n > x->slack[li]) {
				char rb[64];
				*held = true;
				snprintf(msg, len, "tenant %s's max_gpus for %s %lld is held for %s at t=%lld", tname(c, e->tenant),
				         e->name, (long long)e->max, resv_ref(c, j, x, rb, sizeof(rb)), (long long)x->start);
				c->quota->jobs = false;
				return false;
			}
		}
	}
	return true;
}

void sched__quota_started(struct cyc *c, const struct sched_job *j, const struct sched_alloc *a, size_t na,
                          int64_t end)
{
	struct qstate *q = c->quota;
	if (!q)
		return;
	for (int k = q->off[j->tenant]; k < q->off[j->tenant + 1]; k++) {
		int li = q->idx[k];
		struct qlim *e = &q->lim[li];
		int64_t n = count(c, e, a, na);
		if (e->model >= 0)
			e->used += n;
		for (size_t r = 0; r < q->nres; r++)
			if (q->res[r].slack[li] != NOSLACK && q->res[r].start < end)
				q->res[r].slack[li] -= n;
	}
}

/*
 * q->use[k] for every limit that counts `tenant`: the GPUs it counts that
 * are held at time t by running runs (ending after t as planned), by this
 * cycle's starts and by earlier reservations active at t.
 */
static void use_at(struct cyc *c, int tenant, int64_t t)
{
	struct qstate *q = c->quota;
	const struct sched_snapshot *s = c->s;
	memset(q->want, 0, q->nlim * sizeof(bool));
	for (int k = q->off[tenant]; k < q->off[tenant + 1]; k++) {
		q->want[q->idx[k]] = true;
		q->use[q->idx[k]] = 0;
	}
	for (size_t i = 0; i < s->nruns; i++) {
		const struct sched_run *r = &s->runs[i];
		if (q->off[r->tenant] == q->off[r->tenant + 1])
			continue;
		int64_t end = sched__run_end(c, r);
		if (c->victim[i]) {
			int64_t g = c->now + (r->grace > 0 ? r->grace : 0);
			end = g > c->now ? g : c->now + 1;
		}
		if (end <= t)
			continue;
		for (int k = q->off[r->tenant]; k < q->off[r->tenant + 1]; k++)
			if (q->want[q->idx[k]])
				q->use[q->idx[k]] += count(c, &q->lim[q->idx[k]], r->alloc, r->nalloc);
	}
	for (size_t i = 0; i < c->d->nstarts; i++) {
		const struct sched_start *st = &c->d->starts[i];
		int jt = s->jobs[st->job].tenant;
		if (st->planned_end <= t)
			continue;
		for (int k = q->off[jt]; k < q->off[jt + 1]; k++)
			if (q->want[q->idx[k]])
				q->use[q->idx[k]] += count(c, &q->lim[q->idx[k]], st->alloc, st->nalloc);
	}
	for (size_t r = 0; r < q->nres; r++) {
		const struct qres *x = &q->res[r];
		if (x->start > t || x->end <= t)
			continue;
		for (size_t k = 0; k < q->nlim; k++)
			if (q->want[k])
				q->use[k] += x->count[k];
	}
}

bool sched__quota_reserve_ok(struct cyc *c, const struct sched_job *j, int64_t start, int64_t end,
                             const struct sched_alloc *a, size_t na, char *msg, size_t len)
{
	struct qstate *q = c->quota;
	if (!q || q->off[j->tenant] == q->off[j->tenant + 1])
		return true;
	use_at(c, j->tenant, start);
	for (int k = q->off[j->tenant]; k < q->off[j->tenant + 1]; k++) {
		int li = q->idx[k];
		const struct qlim *e = &q->lim[li];
		char lb[96], rb[64];
		if (e->max < 0)
			continue;
		int64_t n = count(c, e, a, na);
		if (q->use[li] + n > e->max) {
			snprintf(msg, len, "tenant %s's %s %lld would be exceeded at t=%lld (%lld %s then)",
			         tname(c, e->tenant), label(e, lb, sizeof(lb)), (long long)e->max, (long long)start,
			         (long long)q->use[li], e->model == JOBS ? "running" : "in use");
			q->jobs = e->model == JOBS;
			return false;
		}
		for (size_t r = 0; r < q->nres; r++) {
			const struct qres *x = &q->res[r];
			if (x->slack[li] != NOSLACK && x->start >= start && x->start < end && x->slack[li] < n) {
				snprintf(msg, len, "tenant %s's %s %lld is held for %s at t=%lld", tname(c, e->tenant),
				         label(e, lb, sizeof(lb)), (long long)e->max, resv_ref(c, j, x, rb, sizeof(rb)),
				         (long long)x->start);
				q->jobs = e->model == JOBS;
				return false;
			}
		}
	}
	return true;
}

/* GPUs of job j's minimum on `model` (-1: not known) that limit e counts (JOBS: the job). */
static int64_t count_shape(const struct qlim *e, const struct sched_job *j, int model, int nmin)
{
	if (e->model == JOBS)
		return 1;
	if (e->model != -1 && (model < 0 || e->model != model))
		return 0;
	return (int64_t)nmin * (j->gpus_per_node > 0 ? j->gpus_per_node : 0);
}

static void add_res(struct cyc *c, const struct sched_job *j, int64_t start, int64_t end, const struct sched_alloc *a,
                    size_t na, int model, int nmin);

void sched__quota_reserved(struct cyc *c, const struct sched_job *j, int64_t start, int64_t end,
                           const struct sched_alloc *a, size_t na)
{
	add_res(c, j, start, end, a, na, -1, 0);
}

static int cmp_t(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return (a > b) - (a < b);
}

int64_t sched__quota_room_at(struct cyc *c, const struct sched_job *j, int model, int nmin)
{
	struct qstate *q = c->quota;
	const struct sched_snapshot *s = c->s;
	int64_t found = SCHED_NEVER;
	if (!q)
		return c->now;
	/* Candidate times: now and every planned release of GPUs its limits count. */
	size_t n = 0, cap = 1 + s->nruns + c->d->nstarts + q->nres;
	int64_t *t = sched__xmalloc(cap * sizeof(int64_t));
	t[n++] = c->now;
	for (size_t i = 0; i < s->nruns; i++) {
		const struct sched_run *r = &s->runs[i];
		if (q->off[r->tenant] != q->off[r->tenant + 1])
			t[n++] = c->victim[i] ? c->now + (r->grace > 0 ? r->grace : 1) : sched__run_end(c, r);
	}
	for (size_t i = 0; i < c->d->nstarts; i++)
		t[n++] = c->d->starts[i].planned_end;
	for (size_t r = 0; r < q->nres; r++)
		t[n++] = q->res[r].end;
	qsort(t, n, sizeof(*t), cmp_t);
	/* The first 32 distinct times: enough for the next releases, bounded cost. */
	for (size_t i = 0, tried = 0; i < n && tried < 32 && found == SCHED_NEVER; i++) {
		if (t[i] < c->now || (i > 0 && t[i] == t[i - 1]))
			continue;
		tried++;
		use_at(c, j->tenant, t[i]);
		bool ok = true;
		for (int k = q->off[j->tenant]; k < q->off[j->tenant + 1] && ok; k++) {
			const struct qlim *e = &q->lim[q->idx[k]];
			if (e->max >= 0 && q->use[q->idx[k]] + count_shape(e, j, model, nmin) > e->max)
				ok = false;
		}
		for (size_t r = 0; r < q->nres && ok; r++) /* nor may it push a later reservation over */
			for (int k = q->off[j->tenant]; k < q->off[j->tenant + 1] && ok; k++) {
				int li = q->idx[k];
				if (q->res[r].slack[li] != NOSLACK && q->res[r].start >= t[i] &&
				    q->res[r].slack[li] < count_shape(&q->lim[li], j, model, nmin))
					ok = false;
			}
		if (ok)
			found = t[i];
	}
	free(t);
	return found;
}

void sched__quota_hold(struct cyc *c, const struct sched_job *j, int64_t start, int64_t end, int model, int nmin)
{
	add_res(c, j, start, end, NULL, 0, model, nmin);
}

static void add_res(struct cyc *c, const struct sched_job *j, int64_t start, int64_t end, const struct sched_alloc *a,
                    size_t na, int model, int nmin)
{
	struct qstate *q = c->quota;
	if (!q || q->off[j->tenant] == q->off[j->tenant + 1])
		return;
	use_at(c, j->tenant, start);
	q->res = sched__grow(q->res, &q->cap_res, q->nres + 1, sizeof(*q->res));
	struct qres *x = &q->res[q->nres];
	x->job_id = j->id;
	x->tenant = j->tenant;
	x->start = start;
	x->end = end;
	x->count = sched__xcalloc(q->nlim, sizeof(int64_t));
	x->slack = sched__xmalloc(q->nlim * sizeof(int64_t));
	for (size_t k = 0; k < q->nlim; k++)
		x->slack[k] = NOSLACK;
	for (int k = q->off[j->tenant]; k < q->off[j->tenant + 1]; k++) {
		int li = q->idx[k];
		x->count[li] = a ? count(c, &q->lim[li], a, na) : count_shape(&q->lim[li], j, model, nmin);
		if (q->lim[li].max >= 0)
			x->slack[li] = q->lim[li].max - q->use[li] - x->count[li];
	}
	for (size_t r = 0; r < q->nres; r++) {
		struct qres *y = &q->res[r];
		if (y->start < start || y->start >= end)
			continue;
		for (size_t k = 0; k < q->nlim; k++)
			if (y->slack[k] != NOSLACK)
				y->slack[k] -= x->count[k];
	}
	q->nres++;
}

enum sched_reason sched__quota_reason(const struct cyc *c)
{
	return c->quota && c->quota->jobs ? SCHED_REASON_QUOTA_MAX_JOBS : SCHED_REASON_QUOTA_MAX;
}

/* The tenant's own guarantee, tenant-wide or for a GPU model, is above 0. */
static bool own_guarantee(const struct cyc *c, int tenant)
{
	const struct qstate *q = c->quota;
	if (c->s->tenants[tenant].guaranteed_gpus > 0)
		return true;
	if (!q)
		return false;
	for (int k = q->off[tenant]; k < q->off[tenant + 1]; k++)
		if (q->lim[q->idx[k]].tenant == tenant && q->lim[q->idx[k]].guar > 0)
			return true;
	return false;
}

bool sched__quota_guaranteed(const struct cyc *c, int tenant)
{
	for (int d = 0; tenant >= 0 && d <= (int)c->s->ntenants; d++) {
		if (own_guarantee(c, tenant))
			return true;
		tenant = c->s->tenants[tenant].parent;
	}
	return false;
}

/* The tenant's own per-model limit on `model`, or NULL. */
static const struct qlim *own_model(const struct cyc *c, int tenant, int model)
{
	const struct qstate *q = c->quota;
	if (!q || model < 0)
		return NULL;
	for (int k = q->off[tenant]; k < q->off[tenant + 1]; k++) {
		const struct qlim *e = &q->lim[q->idx[k]];
		if (e->tenant == tenant && e->model == model)
			return e;
	}
	return NULL;
}

/*
 * Tenant a's guarantee covers `need` more GPUs of its subtree on `model`
 * (need 0: covers what the subtree holds). Its own row for the model
 * decides where it has one, as for the borrower: GPUs that row says it
 * would borrow are not its to reclaim, or two such tenants would take them
 * from each other forever; else its tenant-wide guarantee.
 */
static bool covers(const struct cyc *c, int a, int model, int64_t need)
{
	const struct qlim *e = own_model(c, a, model);
	if (e)
		return e->guar > 0 && e->used + need <= e->guar;
	const struct sched_tenant *t = &c->s->tenants[a];
	return t->guaranteed_gpus > 0 && c->tgpus[a] + need <= t->guaranteed_gpus;
}

int sched__reclaim_cover(const struct cyc *c, const struct sched_job *j, const struct req *rq, int64_t need)
{
	int t = j->tenant;
	for (int d = 0; t >= 0 && d <= (int)c->s->ntenants; d++) {
		if (covers(c, t, rq->model, need))
			return t;
		t = c->s->tenants[t].parent;
	}
	return -1;
}

bool sched__reclaims(const struct cyc *c, const struct sched_job *j, const struct req *rq, int64_t need)
{
	return sched__reclaim_cover(c, j, rq, need) >= 0;
}

bool sched__borrower(const struct cyc *c, int tenant, const struct req *rq, int reclaimer)
{
	/* Covered by it or an ancestor the reclaiming job is not under: not borrowed. */
	for (int d = 0; tenant >= 0 && d <= (int)c->s->ntenants; d++) {
		if (under(c, tenant, reclaimer))
			break;
		if (covers(c, tenant, rq->model, 0))
			return false;
		tenant = c->s->tenants[tenant].parent;
	}
	return true;
}
