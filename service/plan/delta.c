/* delta.c - the change hint between consecutive core snapshots. See delta.h. */
#include "delta.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

struct runkey {
	int64_t run_id;
	uint64_t h; /* every field of the run and its allocation */
};

struct plan_delta {
	bool have;
	uint64_t settings_h, tenants_h;
	size_t nnodes, nruns, nusers, cap_nodes, cap_runs, cap_users;
	struct sched_node *nodes;  /* name, gpu_model and unit compared through node_h */
	uint64_t *node_h;
	struct runkey *runs;
	uint64_t *user_h;          /* (tenant, name) of each user, in order */
	/* the hint returned */
	struct sched_delta out;
	int *dnodes;
	size_t *added;
	int64_t *removed;
	size_t cap_dn, cap_add, cap_rem;
};

/*
 * FNV-1a's step over 8-byte words (then the tail), with a shift folded in.
 * Each step is a bijection of h for a given word, so two inputs that
 * differ in one field never hash alike. Byte by byte, the hash of every
 * run each cycle was ~7% of a steady cycle at 50k runs. Only compared
 * within one process: free to change.
 */
static inline uint64_t h_word(uint64_t h, uint64_t w)
{
	h = (h ^ w) * UINT64_C(1099511628211);
	return h ^ (h >> 29);
}

static uint64_t h_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t w;
	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&w, b, 8);
		h = h_word(h, w);
	}
	if (n) {
		w = 0;
		memcpy(&w, b, n);
		h = h_word(h, w ^ (uint64_t)n << 56);
	}
	return h;
}

#define H0 UINT64_C(14695981039346656037)
#define HV(h, v) h_bytes((h), &(v), sizeof(v))

static uint64_t h_str(uint64_t h, const char *s)
{
	return h_bytes(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

static uint64_t settings_hash(const struct sched_settings *st)
{
	uint64_t h = H0;
	int v;
	h = HV(h, st->order);
	h = HV(h, st->weight_fairshare);
	h = HV(h, st->weight_age);
	h = HV(h, st->weight_size);
	h = HV(h, st->weight_xfactor);
	h = HV(h, st->starve_after);
	h = HV(h, st->max_age);
	h = HV(h, st->reservation_depth);
	v = st->preemption;
	h = HV(h, v);
	h = HV(h, st->nlevels);
	for (int i = 0; i < st->nlevels && i < SCHED_MAX_LEVELS; i++)
		h = h_str(h, st->levels[i]);
	v = st->quiet;
	h = HV(h, v);
	h = HV(h, st->preempt_attempts);
	v = st->no_backfill * 2 + st->unnamed_reservations;
	h = HV(h, v);
	/* predict may change: the core rebuilds its view itself then */
	return h;
}

static uint64_t tenants_hash(const struct sched_snapshot *s)
{
	uint64_t h = HV(H0, s->ntenants);
	for (size_t i = 0; i < s->ntenants; i++) {
		const struct sched_tenant *t = &s->tenants[i];
		h = h_str(h, t->name);
		h = HV(h, t->parent);
		h = HV(h, t->guaranteed_gpus);
		h = HV(h, t->max_gpus);
		h = HV(h, t->max_running_jobs);
		h = HV(h, t->nmodel_quotas);
		for (size_t k = 0; k < t->nmodel_quotas; k++) {
			h = h_str(h, t->model_quotas[k].gpu_model);
			h = HV(h, t->model_quotas[k].guaranteed_gpus);
			h = HV(h, t->model_quotas[k].max_gpus);
		}
	}
	return h;
}

static uint64_t node_hash(const struct sched_node *n)
{
	uint64_t h = h_str(H0, n->name);
	h = h_str(h, n->gpu_model);
	return h_bytes(h, n->unit, sizeof(n->unit));
}

static bool node_same(const struct sched_node *a, uint64_t ha, const struct sched_node *b, uint64_t hb)
{
	return ha == hb && a->gpu_count == b->gpu_count && a->healthy == b->healthy && a->used == b->used &&
	       a->state == b->state && a->fabric_down == b->fabric_down;
}

static uint64_t run_hash(const struct sched_run *r)
{
	uint64_t h = H0;
	int v = r->preemptible * 2 + r->stopping;
	h = HV(h, r->run_id);
	h = HV(h, r->job_id);
	h = HV(h, r->tenant);
	h = HV(h, r->user);
	h = HV(h, r->priority);
	h = HV(h, v);
	h = HV(h, r->start);
	h = HV(h, r->time_limit);
	h = HV(h, r->predicted_end);
	h = HV(h, r->grace);
	h = HV(h, r->min_nodes);
	h = HV(h, r->nalloc);
	for (size_t k = 0; k < r->nalloc; k++) {
		h = HV(h, r->alloc[k].node);
		h = HV(h, r->alloc[k].count);
		h = HV(h, r->alloc[k].gpus);
	}
	return h;
}

static uint64_t user_hash(const struct sched_user *u)
{
	return HV(h_str(H0, u->name), u->tenant);
}

struct plan_delta *plan_delta_new(void)
{
	return mu_calloc(1, sizeof(struct plan_delta));
}

void plan_delta_free(struct plan_delta *d)
{
	if (!d)
		return;
	mu_free(d->nodes);
	mu_free(d->node_h);
	mu_free(d->runs);
	mu_free(d->user_h);
	mu_free(d->dnodes);
	mu_free(d->added);
	mu_free(d->removed);
	mu_free(d);
}

void plan_delta_reset(struct plan_delta *d)
{
	d->have = false;
}

static int cmp_runkey(const void *x, const void *y)
{
	int64_t a = ((const struct runkey *)x)->run_id, b = ((const struct runkey *)y)->run_id;
	return (a > b) - (a < b);
}

/* Whether the previous snapshot allows a hint for `s`; fills d->out. */
static bool diff(struct plan_delta *d, const struct sched_snapshot *s, const uint64_t *nh, struct runkey *rk,
		 uint64_t sh, uint64_t th)
{
	size_t ndn = 0, nadd = 0, nrem = 0, i = 0, k = 0;

	if (!d->have || sh != d->settings_h || th != d->tenants_h || s->nnodes != d->nnodes ||
	    s->nusers < d->nusers)
		return false;
	for (size_t u = 0; u < d->nusers; u++)
		if (user_hash(&s->users[u]) != d->user_h[u])
			return false; /* a user inserted, not appended: indexes moved */
	for (size_t n = 0; n < s->nnodes; n++) {
		if (nh[n] != d->node_h[n])
			return false; /* another node at this index, or its model or topology changed */
		if (!node_same(&s->nodes[n], nh[n], &d->nodes[n], d->node_h[n])) {
			d->dnodes = mu_grow(d->dnodes, &d->cap_dn, ndn + 1, sizeof(*d->dnodes));
			d->dnodes[ndn++] = (int)n;
		}
	}
	/* runs: both sorted by run id; a changed run is removed and added */
	while (i < d->nruns || k < s->nruns) {
		const struct runkey *a = i < d->nruns ? &d->runs[i] : NULL, *b = k < s->nruns ? &rk[k] : NULL;
		if (a && (!b || a->run_id < b->run_id)) {
			d->removed = mu_grow(d->removed, &d->cap_rem, nrem + 1, sizeof(*d->removed));
			d->removed[nrem++] = a->run_id;
			i++;
			continue;
		}
		if (!a || b->run_id < a->run_id || a->h != b->h) {
			if (a && a->run_id == b->run_id) {
				d->removed = mu_grow(d->removed, &d->cap_rem, nrem + 1, sizeof(*d->removed));
				d->removed[nrem++] = a->run_id;
				i++;
			}
			d->added = mu_grow(d->added, &d->cap_add, nadd + 1, sizeof(*d->added));
			d->added[nadd++] = (size_t)(b - rk);
			k++;
			continue;
		}
		i++;
		k++;
	}
	d->out = (struct sched_delta){ ndn, d->dnodes, nadd, d->added, nrem, d->removed, false };
	return true;
}

const struct sched_delta *plan_delta_next(struct plan_delta *d, const struct sched_snapshot *s)
{
	uint64_t *nh = mu_calloc(s->nnodes + 1, sizeof(*nh));
	struct runkey *rk = mu_calloc(s->nruns + 1, sizeof(*rk));
	uint64_t sh = settings_hash(&s->settings), th = tenants_hash(s);
	bool sorted = true, ok;

	for (size_t n = 0; n < s->nnodes; n++)
		nh[n] = node_hash(&s->nodes[n]);
	for (size_t r = 0; r < s->nruns; r++) {
		rk[r] = (struct runkey){ s->runs[r].run_id, run_hash(&s->runs[r]) };
		if (r && rk[r].run_id <= rk[r - 1].run_id)
			sorted = false;
	}
	/* runs must come by id (the store orders them so); the added
	 * indexes refer to s->runs, so never sort a copy out of order */
	ok = sorted && diff(d, s, nh, rk, sh, th);

	/* remember s */
	d->settings_h = sh;
	d->tenants_h = th;
	d->nodes = mu_grow(d->nodes, &d->cap_nodes, s->nnodes + 1, sizeof(*d->nodes));
	d->node_h = mu_realloc(d->node_h, (s->nnodes + 1) * sizeof(*d->node_h));
	for (size_t n = 0; n < s->nnodes; n++) {
		d->nodes[n] = s->nodes[n];
		d->nodes[n].name = NULL; /* compared through node_h; never dereferenced */
		d->nodes[n].gpu_model = NULL;
		d->node_h[n] = nh[n];
	}
	d->nnodes = s->nnodes;
	d->runs = mu_grow(d->runs, &d->cap_runs, s->nruns + 1, sizeof(*d->runs));
	memcpy(d->runs, rk, s->nruns * sizeof(*rk));
	d->nruns = s->nruns;
	if (!sorted)
		qsort(d->runs, d->nruns, sizeof(*d->runs), cmp_runkey);
	d->user_h = mu_grow(d->user_h, &d->cap_users, s->nusers + 1, sizeof(*d->user_h));
	for (size_t u = 0; u < s->nusers; u++)
		d->user_h[u] = user_hash(&s->users[u]);
	d->nusers = s->nusers;
	d->have = true;
	mu_free(nh);
	mu_free(rk);
	return ok ? &d->out : NULL;
}

static uint64_t job_hash(uint64_t h, const struct sched_job *j)
{
	int v = j->preemptible * 2 + j->held;
	h = HV(h, j->id);
	h = HV(h, j->tenant);
	h = HV(h, j->user);
	h = HV(h, j->priority);
	h = HV(h, v);
	h = HV(h, j->submit);
	h = HV(h, j->nodes);
	h = HV(h, j->min_nodes);
	h = HV(h, j->gpus_per_node);
	h = h_str(h, j->gpu_model);
	h = HV(h, j->topo_required);
	h = HV(h, j->topo_preferred);
	h = HV(h, j->time_limit);
	h = HV(h, j->predicted_runtime);
	h = HV(h, j->ndeps);
	for (size_t k = 0; k < j->ndeps; k++) {
		h = HV(h, j->deps[k].type);
		h = HV(h, j->deps[k].job_id);
		h = HV(h, j->deps[k].state);
	}
	return h;
}

uint64_t plan_snapshot_fingerprint(const struct sched_snapshot *s)
{
	uint64_t h = settings_hash(&s->settings) ^ tenants_hash(s);
	int v = s->settings.predict;

	h = HV(h, v);
	for (size_t t = 0; t < s->ntenants; t++)
		h = HV(h, s->tenants[t].shares); /* the delta may carry share changes; a plan may not */
	h = HV(h, s->nnodes);
	for (size_t n = 0; n < s->nnodes; n++) {
		const struct sched_node *x = &s->nodes[n];
		h ^= node_hash(x);
		h = HV(h, x->gpu_count);
		h = HV(h, x->healthy);
		h = HV(h, x->used);
		h = HV(h, x->state);
		v = x->fabric_down;
		h = HV(h, v);
	}
	h = HV(h, s->nruns);
	for (size_t r = 0; r < s->nruns; r++)
		h ^= run_hash(&s->runs[r]) + r;
	h = HV(h, s->njobs);
	for (size_t i = 0; i < s->njobs; i++)
		h = job_hash(h, &s->jobs[i]);
	h = HV(h, s->nusers);
	for (size_t u = 0; u < s->nusers; u++) {
		const struct sched_user *x = &s->users[u];
		h ^= user_hash(x) + u;
		h = HV(h, x->shares);
		h = HV(h, x->nrecent);
		h = h_bytes(h, x->recent_runtime, sizeof(x->recent_runtime));
	}
	return h;
}
