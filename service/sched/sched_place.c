/*
 * sched_place.c - placement (topology-aware best fit), the time profile
 * (earliest start of a gang), shape caches and victim selection.
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ profile */

void sched__add_crel(struct cyc *c, int64_t t, int node, uint64_t mask, int run)
{
	c->crel = sched__grow(c->crel, &c->cap_crel, c->ncrel + 1, sizeof(*c->crel));
	size_t lo = 0, hi = c->ncrel;
	while (lo < hi) { /* after every event at the same time: insertion order is kept */
		size_t mid = (lo + hi) / 2;
		if (c->crel[mid].t <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(&c->crel[lo + 1], &c->crel[lo], (c->ncrel - lo) * sizeof(*c->crel));
	c->crel[lo] = (struct rel){ t, node, mask, run, 0, NULL };
	c->ncrel++;
}

void sched__add_crel_n(struct cyc *c, int64_t t, const struct sched_alloc *a, size_t na, int run)
{
	size_t add = 0, parts = 0; /* nodes with GPUs, entries with GPUs */
	for (size_t k = 0; k < na; k++) {
		add += a[k].gpus ? (size_t)sched_alloc_len(&a[k]) : 0;
		parts += a[k].gpus != 0;
	}
	if (!add)
		return;
	c->crel = sched__grow(c->crel, &c->cap_crel, c->ncrel + add, sizeof(*c->crel));
	size_t lo = 0, hi = c->ncrel;
	while (lo < hi) { /* as add_crel() one by one: after every event at the same time, in order */
		size_t mid = (lo + hi) / 2;
		if (c->crel[mid].t <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (parts == na && add > 1) { /* every part releases GPUs: one event for the gang, as a running run's */
		memmove(&c->crel[lo + 1], &c->crel[lo], (c->ncrel - lo) * sizeof(*c->crel));
		c->crel[lo] = (struct rel){ t, -1, 0, run, (int)na, a };
		c->ncrel++;
		return;
	}
	memmove(&c->crel[lo + add], &c->crel[lo], (c->ncrel - lo) * sizeof(*c->crel));
	for (size_t k = 0; k < na; k++)
		for (int e = 0; a[k].gpus && e < sched_alloc_len(&a[k]); e++)
			c->crel[lo++] = (struct rel){ t, a[k].node + e, a[k].gpus, run, 0, NULL };
	c->ncrel += add;
}

void sched__add_resv(struct cyc *c, int node, uint64_t mask, int64_t start, int64_t end)
{
	c->resv = sched__grow(c->resv, &c->cap_resv, c->nresv + 1, sizeof(*c->resv));
	c->resv[c->nresv] = (struct resv){ c->rhead[node], node, start, end, mask };
	c->rhead[node] = (int)c->nresv++;
}

void sched__resv_commit(struct cyc *c, int64_t start, int64_t end, const struct sched_alloc *a, size_t na)
{
	if (c->inc && sched__vres_take(c, a, na, start, end))
		return;
	sched__resv_name(c);
	for (size_t k = 0; k < na; k++)
		sched__add_resv(c, a[k].node, a[k].gpus, start, end);
}

/* ------------------------------------------------------------ caches */

static uint64_t mix(uint64_t h, int64_t v)
{
	h ^= (uint64_t)v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

static uint64_t shape_hash(int kind, const struct req *q)
{
	return mix(mix(mix(mix(mix(mix(mix(0, kind), q->model), q->g), q->nmin), q->nmax), q->required),
	           q->preferred);
}

static bool shape_eq(const struct centry *e, uint64_t h, int kind, const struct req *q)
{
	return e->hash == h && e->kind == kind && e->model == q->model && e->g == q->g && e->nmin == q->nmin &&
	       e->nmax == q->nmax && e->req == q->required && e->pref == q->preferred;
}

bool sched__cache_get(struct ctab *t, int kind, const struct req *q, int64_t *value)
{
	if (!t->cap)
		return false;
	uint64_t h = shape_hash(kind, q);
	for (size_t k = h & (t->cap - 1); t->e[k].gen == t->gen; k = (k + 1) & (t->cap - 1))
		if (shape_eq(&t->e[k], h, kind, q)) {
			*value = t->e[k].value;
			return true;
		}
	return false;
}

/* The entry for the shape, created (value 0) when absent. */
struct centry *sched__cache_put(struct ctab *t, int kind, const struct req *q)
{
	uint64_t h = shape_hash(kind, q);
	if (!t->gen)
		t->gen = 1;
	if ((t->n + 1) * 2 > t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 256;
		struct centry *n = sched__xcalloc(ncap, sizeof(*n));
		for (size_t i = 0; i < t->cap; i++) {
			if (t->e[i].gen != t->gen)
				continue;
			size_t k = t->e[i].hash & (ncap - 1);
			while (n[k].gen == t->gen)
				k = (k + 1) & (ncap - 1);
			n[k] = t->e[i];
		}
		for (size_t i = 0; i < ncap; i++)
			if (n[i].gen != t->gen)
				n[i].gen = t->gen - 1; /* calloc's 0 would be live when gen wraps to 0 */
		free(t->e);
		t->e = n;
		t->cap = ncap;
	}
	size_t k = h & (t->cap - 1);
	for (; t->e[k].gen == t->gen; k = (k + 1) & (t->cap - 1))
		if (shape_eq(&t->e[k], h, kind, q))
			return &t->e[k];
	t->e[k] = (struct centry){ h, kind, q->model, q->g, q->nmin, q->nmax, q->required, q->preferred, 0, t->gen };
	t->n++;
	return &t->e[k];
}

enum { CACHE_FAIL = 1, CACHE_UNIT_ALL, CACHE_UNIT_OK };

bool sched__cache_failed(struct cyc *c, const struct req *q, int64_t rt)
{
	int64_t v;
	return sched__cache_get(c->fcache, CACHE_FAIL, q, &v) && rt >= v;
}

void sched__cache_fail(struct cyc *c, const struct req *q, int64_t rt)
{
	int64_t v;
	if (!sched__cache_get(c->fcache, CACHE_FAIL, q, &v))
		sched__cache_put(c->fcache, CACHE_FAIL, q)->value = rt;
	else if (rt < v)
		sched__cache_put(c->fcache, CACHE_FAIL, q)->value = rt;
}

static bool model_ok(const struct cyc *c, const struct req *q, int n)
{
	return q->model == -1 || (q->model >= 0 && c->model[n] == q->model);
}

/* sched__max_in_unit() past its memo: the most nodes able to hold q->g GPUs
 * inside one unit of the required level, from the shape's cache entry or a
 * count over the nodes. */
int sched__max_in_unit_slow(struct cyc *c, const struct req *q, bool healthy_only)
{
	struct req key = *q;
	key.nmin = key.nmax = 0;
	key.preferred = -1;
	struct ctab *t = c->ucache;
	if (!t->gen)
		t->gen = 1;
	struct umemo *m = &t->memo[healthy_only][(unsigned)(q->model * 7 + q->g * 3 + q->required) & 15];
	int64_t cached;
	if (sched__cache_get(t, healthy_only ? CACHE_UNIT_OK : CACHE_UNIT_ALL, &key, &cached)) {
		*m = (struct umemo){ q->model, q->g, q->required, (int)cached, t->gen };
		return (int)cached;
	}
	int best = 0;
	if (q->model != -2) {
		int *count = NULL;
		if (q->required >= 0)
			count = sched__xcalloc(2 * c->nn + 1, sizeof(int));
		for (size_t n = 0; n < c->nn; n++) {
			if (!model_ok(c, q, (int)n))
				continue;
			int g = healthy_only ? sched__pc(c->avail[n]) : c->s->nodes[n].gpu_count;
			if ((healthy_only && !c->up[n]) || g < q->g)
				continue;
			if (count) {
				int v = ++count[c->unit[q->required][n]];
				if (v > best)
					best = v;
			} else {
				best++;
			}
		}
		free(count);
	}
	sched__cache_put(t, healthy_only ? CACHE_UNIT_OK : CACHE_UNIT_ALL, &key)->value = best;
	*m = (struct umemo){ q->model, q->g, q->required, best, t->gen };
	return best;
}

/* ------------------------------------------------------------ placement */


struct group {
	int unit;
	size_t lo, n;
	int64_t free;
};

static int cmp_i64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

/* Sorting by unit needs the level: candidates carry no unit, so sort a
 * (unit, index) key array and permute. */
struct ukey {
	int unit;
	size_t i;
};

static int ukey_cmp(const void *a, const void *b)
{
	const struct ukey *x = a, *y = b;
	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

int sched__leaf_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->free != y->free)
		return x->free < y->free ? -1 : 1;
	if (x->key != y->key)
		return cmp_i64(x->key, y->key);
	return (x->node > y->node) - (x->node < y->node);
}

static size_t group_by(struct cyc *c, struct cand *v, size_t n, int level, struct group **out)
{
	struct ukey *k = sched__xmalloc((n + 1) * sizeof(*k));
	struct cand *tmp = sched__xmalloc((n + 1) * sizeof(*tmp));
	for (size_t i = 0; i < n; i++)
		k[i] = (struct ukey){ c->unit[level][v[i].node], i };
	if (n < 512) {
		qsort(k, n, sizeof(*k), ukey_cmp);
	} else { /* counting sort on the unit id (< 2 nn), stable: same order as the qsort */
		size_t nu = 2 * c->nn + 1;
		size_t *pos = sched__xcalloc(nu + 1, sizeof(size_t));
		struct ukey *k2 = sched__xmalloc((n + 1) * sizeof(*k2));
		for (size_t i = 0; i < n; i++)
			pos[k[i].unit + 1]++;
		for (size_t u = 1; u <= nu; u++)
			pos[u] += pos[u - 1];
		for (size_t i = 0; i < n; i++)
			k2[pos[k[i].unit]++] = k[i];
		free(pos);
		free(k);
		k = k2;
	}
	for (size_t i = 0; i < n; i++)
		tmp[i] = v[k[i].i];
	memcpy(v, tmp, n * sizeof(*v));
	struct group *g = sched__xmalloc((n + 1) * sizeof(*g));
	size_t ng = 0;
	for (size_t i = 0; i < n; i++) {
		if (ng == 0 || g[ng - 1].unit != k[i].unit)
			g[ng++] = (struct group){ k[i].unit, i, 0, 0 };
		g[ng - 1].n++;
		g[ng - 1].free += v[i].free;
	}
	free(k);
	free(tmp);
	*out = g;
	return ng;
}

/* Tightest group holding at least k: fewest free GPUs, then fewest nodes. */
static struct group *tightest(struct group *g, size_t ng, size_t k, const bool *taken)
{
	struct group *best = NULL;
	for (size_t i = 0; i < ng; i++) {
		if ((taken && taken[i]) || g[i].n < k)
			continue;
		if (!best || g[i].free < best->free || (g[i].free == best->free && g[i].n < best->n))
			best = &g[i];
	}
	return best;
}

static int size_desc(const void *a, const void *b);

/*
 * The fewest units of `level` that together hold k of v[0..n) (n >= k).
 * cnt: a zeroed count per unit id (left zeroed); ids: room for n ids.
 */
static size_t min_sub_units(const struct cyc *c, const struct cand *v, size_t n, int level, size_t k, size_t *cnt,
                            size_t *ids)
{
	size_t nd = 0;
	for (size_t i = 0; i < n; i++) {
		int u = c->unit[level][v[i].node];
		if (cnt[u]++ == 0)
			ids[nd++] = (size_t)u;
	}
	for (size_t j = 0; j < nd; j++) {
		size_t u = ids[j];
		ids[j] = cnt[u];
		cnt[u] = 0;
	}
	qsort(ids, nd, sizeof(*ids), size_desc);
	size_t got = 0, m = 0;
	while (m < nd && got < k)
		got += ids[m++];
	return m;
}

/*
 * The unit of `level` to hold k without a constraint: among the groups
 * holding k, the one that needs the fewest units of the next level down
 * (so a gang that one rack of some block holds never spreads over two racks
 * of a tighter block: Slurm's fewest leaf switches), then the tightest.
 */
static struct group *fewest_then_tightest(struct cyc *c, const struct cand *v, struct group *g, size_t ng, int level,
                                          size_t k, const bool *taken)
{
	struct group *best = tightest(g, ng, k, taken);
	if (!best || level + 1 >= c->s->settings.nlevels || k < 2)
		return best;
	size_t holders = 0;
	for (size_t i = 0; i < ng; i++)
		holders += !(taken && taken[i]) && g[i].n >= k;
	if (holders < 2)
		return best;
	if (!c->subcnt) { /* once per cycle: min_sub_units() leaves the counts zeroed, and no unit has more than nn nodes */
		c->subcnt = sched__xcalloc(2 * c->nn + 1, sizeof(size_t));
		c->subids = sched__xmalloc((c->nn + 1) * sizeof(size_t));
	}
	size_t *cnt = c->subcnt, *ids = c->subids;
	size_t best_m = min_sub_units(c, v + best->lo, best->n, level + 1, k, cnt, ids);
	const struct group *first = best; /* the tightest: nothing beats it at one unit */
	for (size_t i = 0; i < ng && !(best == first && best_m == 1); i++) {
		if ((taken && taken[i]) || g[i].n < k || &g[i] == first)
			continue;
		size_t m = min_sub_units(c, v + g[i].lo, g[i].n, level + 1, k, cnt, ids);
		if (m < best_m ||
		    (m == best_m && (g[i].free < best->free || (g[i].free == best->free && g[i].n < best->n)))) {
			best = &g[i];
			best_m = m;
		}
	}
	return best;
}

static void pick(struct cyc *c, struct cand *v, size_t n, int level, size_t k, struct cand *out, size_t *nout);

/*
 * k candidates of v[0..n) over as few units of `level` as possible (the
 * groups g of group_by() at that level): while no single unit holds what is
 * left, the largest unit whole (ties: the tightest); then the unit that holds
 * the rest in the fewest units one level down, the tightest of those. Taking
 * the largest first is what makes the count minimal. Each unit is filled by
 * pick() one level down.
 */
static void spread(struct cyc *c, struct cand *v, struct group *g, size_t ng, int level, size_t k, struct cand *out,
                   size_t *nout)
{
	bool *taken = sched__xcalloc(ng + 1, sizeof(bool));
	size_t left = k;
	while (left > 0) {
		struct group *fit = fewest_then_tightest(c, v, g, ng, level, left, taken);
		if (fit) {
			pick(c, v + fit->lo, fit->n, level + 1, left, out, nout);
			break;
		}
		struct group *big = NULL; /* the largest unit, whole */
		for (size_t i = 0; i < ng; i++)
			if (!taken[i] && (!big || g[i].n > big->n || (g[i].n == big->n && g[i].free < big->free)))
				big = &g[i];
		taken[big - g] = true;
		pick(c, v + big->lo, big->n, level + 1, big->n, out, nout);
		left -= big->n;
	}
	free(taken);
}

/*
 * Picks k candidates from v[0..n) (n >= k) minimising units used at each
 * level from `level` down (a unit that holds k in the fewest units one level
 * down, then the tightest); appends them to out.
 */
static void pick(struct cyc *c, struct cand *v, size_t n, int level, size_t k, struct cand *out, size_t *nout)
{
	if (k == 0)
		return;
	if (level >= c->s->settings.nlevels) {
		qsort(v, n, sizeof(*v), sched__leaf_cmp);
		memcpy(out + *nout, v, k * sizeof(*v));
		*nout += k;
		return;
	}
	struct group *g;
	size_t ng = group_by(c, v, n, level, &g);
	struct group *one = fewest_then_tightest(c, v, g, ng, level, k, NULL);
	if (one)
		pick(c, v + one->lo, one->n, level + 1, k, out, nout);
	else
		spread(c, v, g, ng, level, k, out, nout);
	free(g);
}

static int size_desc(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return (x < y) - (x > y);
}

/* The fewest groups that together hold k (0: all of them do not). */
static size_t min_groups(const struct group *g, size_t ng, size_t k)
{
	size_t *sz = sched__xmalloc((ng + 1) * sizeof(size_t));
	for (size_t i = 0; i < ng; i++)
		sz[i] = g[i].n;
	qsort(sz, ng, sizeof(*sz), size_desc);
	size_t got = 0, m = 0;
	while (m < ng && got < k)
		got += sz[m++];
	free(sz);
	return got >= k ? m : 0;
}

/*
 * topology_preferred L (Kueue's and Slurm's meaning): inside one unit of L
 * when one holds k (the tightest); else the fewest units of L any placement
 * could use (m), taken inside the tightest enclosing unit that can hold k in
 * m units of L, climbing one level at a time up to `top` (the outermost level
 * that may be chosen from: 0, or the one below a required level); else over
 * the whole of v. Never fails when n >= k: preferred never delays a job.
 */
static void pick_preferred(struct cyc *c, struct cand *v, size_t n, int top, int L, size_t k, struct cand *out,
                           size_t *nout)
{
	struct group *g;
	size_t ng = group_by(c, v, n, L, &g);
	struct group *one = tightest(g, ng, k, NULL);
	if (one) {
		pick(c, v + one->lo, one->n, L + 1, k, out, nout);
		free(g);
		return;
	}
	size_t m = min_groups(g, ng, k);
	free(g);
	for (int lvl = L - 1; lvl >= top; lvl--) {
		struct group *ug;
		size_t nu = group_by(c, v, n, lvl, &ug);
		struct group *best = NULL;
		for (size_t i = 0; i < nu; i++) {
			if (ug[i].n < k || (best && (ug[i].free > best->free ||
			                             (ug[i].free == best->free && ug[i].n >= best->n))))
				continue;
			struct group *sg;
			size_t ns = group_by(c, v + ug[i].lo, ug[i].n, L, &sg);
			if (min_groups(sg, ns, k) == m)
				best = &ug[i];
			free(sg);
		}
		if (best) {
			struct cand *seg = v + best->lo;
			size_t ns = group_by(c, seg, best->n, L, &g);
			spread(c, seg, g, ns, L, k, out, nout);
			free(g);
			free(ug);
			return;
		}
		free(ug);
	}
	ng = group_by(c, v, n, L, &g);
	spread(c, v, g, ng, L, k, out, nout);
	free(g);
}

uint64_t sched__take_bits(uint64_t pref, uint64_t all, int g)
{
	uint64_t r = 0;
	uint64_t m = pref & all;
	while (g > 0 && m) {
		uint64_t b = m & (~m + 1);
		r |= b;
		m &= m - 1;
		g--;
	}
	m = all & ~r;
	while (g > 0 && m) {
		uint64_t b = m & (~m + 1);
		r |= b;
		m &= m - 1;
		g--;
	}
	return r;
}

static int alloc_node_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return (x->node > y->node) - (x->node < y->node);
}

/*
 * One node: best fit at node level first (the fewest usable GPUs that still
 * hold the request), then, among equally tight nodes, the tightest unit at
 * each level from the outermost (fewest usable GPUs, then fewest candidate
 * nodes, then the lowest id), so small jobs fill partly used units and whole
 * nodes and racks stay free for gangs; then the time key and the node id.
 * The unit sums are computed in one pass, the minimum in a second.
 */
static size_t place_one(struct cyc *c, const struct req *q, struct cand *e, size_t ne, struct sched_alloc *out)
{
	int nl = c->s->settings.nlevels;
	int fmin = e[0].free;
	for (size_t i = 1; i < ne; i++)
		if (e[i].free < fmin)
			fmin = e[i].free;
	for (size_t i = 0; i < ne; i++)
		for (int l = 0; l < nl; l++) {
			int u = c->unit[l][e[i].node];
			c->agg_free[l][u] += e[i].free;
			c->agg_cnt[l][u]++;
		}
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < ne; i++) {
		if (e[i].free != fmin)
			continue;
		if (best == SIZE_MAX) {
			best = i;
			continue;
		}
		int d = 0;
		for (int l = 0; l < nl && d == 0; l++) {
			int a = c->unit[l][e[i].node], b = c->unit[l][e[best].node];
			if (a == b)
				continue;
			if (c->agg_free[l][a] != c->agg_free[l][b])
				d = c->agg_free[l][a] < c->agg_free[l][b] ? -1 : 1;
			else if (c->agg_cnt[l][a] != c->agg_cnt[l][b])
				d = c->agg_cnt[l][a] < c->agg_cnt[l][b] ? -1 : 1;
			else
				d = a < b ? -1 : 1;
		}
		if (d == 0)
			d = sched__leaf_cmp(&e[i], &e[best]);
		if (d < 0)
			best = i;
	}
	for (size_t i = 0; i < ne; i++)
		for (int l = 0; l < nl; l++) {
			int u = c->unit[l][e[i].node];
			c->agg_free[l][u] = 0;
			c->agg_cnt[l][u] = 0;
		}
	out[0] = (struct sched_alloc){ .node = e[best].node, .gpus = sched__take_bits(e[best].pref, e[best].mask, q->g) };
	return 1;
}

/*
 * Places q on GPUs of `base` (per node) usable during [t0, t1), away from
 * reservations. PLACE_NOW prefers nodes and GPUs whose next reservation is
 * soonest after t1 (short jobs go into holes before reservations, leaving
 * unreserved GPUs to long ones); PLACE_LATER prefers those released latest
 * (c->sc_time, c->sc_last), leaving GPUs free now to backfill. Returns the
 * node count placed (0: none) with the allocation in out, rank order.
 */
size_t sched__place(struct cyc *c, const struct req *q, const uint64_t *base, int64_t t0, int64_t t1,
                    enum place_mode mode, struct sched_alloc *out)
{
	struct cand *e = c->sc_cand;
	size_t ne = 0;
	if (q->model == -2 || q->nmax < 1)
		return 0;
	if (c->flat && mode == PLACE_NOW && base == c->freemask)
		return sched__place_flat(c, q, t0, t1, mode, out);
	sched__resv_name(c);
	for (size_t n = 0; n < c->nn; n++) {
		if (!c->up[n] || !model_ok(c, q, (int)n))
			continue;
		uint64_t m = base[n] & c->avail[n];
		if (sched__pc(m) < q->g)
			continue;
		int64_t key;
		uint64_t pref;
		m = sched__unreserved(c, (int)n, m, t0, t1, mode, &key, &pref);
		int f = sched__pc(m);
		if (f < q->g)
			continue;
		if (mode == PLACE_LATER) {
			key = -c->sc_time[n];
			pref = c->sc_last[n];
		}
		e[ne++] = (struct cand){ (int)n, f, key, m, pref };
	}
	if (ne < (size_t)q->nmin)
		return 0;
	if (q->nmax == 1)
		return place_one(c, q, e, ne, out);
	struct cand *seg = e;
	size_t nseg = ne;
	size_t want = ne < (size_t)q->nmax ? ne : (size_t)q->nmax;
	int level = 0;
	if (q->required >= 0) {
		struct group *g;
		size_t ng = group_by(c, e, ne, q->required, &g);
		struct group *best = NULL;
		size_t best_n = 0;
		for (size_t i = 0; i < ng; i++) {
			size_t fits = g[i].n < (size_t)q->nmax ? g[i].n : (size_t)q->nmax;
			if (fits < (size_t)q->nmin)
				continue;
			if (!best || fits > best_n || (fits == best_n && (g[i].free < best->free ||
			                                                  (g[i].free == best->free && g[i].n < best->n)))) {
				best = &g[i];
				best_n = fits;
			}
		}
		if (!best) {
			free(g);
			return 0;
		}
		seg = e + best->lo;
		nseg = best->n;
		want = best_n;
		level = q->required + 1;
		free(g);
	}
	struct cand *chosen = sched__xmalloc((want + 1) * sizeof(*chosen));
	size_t nc = 0;
	if (q->preferred >= level && q->preferred < c->s->settings.nlevels)
		pick_preferred(c, seg, nseg, level, q->preferred, want, chosen, &nc);
	else
		pick(c, seg, nseg, level, want, chosen, &nc);
	qsort(chosen, nc, sizeof(*chosen), alloc_node_cmp);
	for (size_t i = 0; i < nc; i++)
		out[i] = (struct sched_alloc){ .node = chosen[i].node, .gpus = sched__take_bits(chosen[i].pref, chosen[i].mask, q->g) };
	free(chosen);
	return nc;
}

/* ------------------------------------------------------------ earliest start */

static bool eligible(const struct cyc *c, const struct req *q, int n, uint64_t m)
{
	return c->up[n] && model_ok(c, q, n) && sched__pc(m & c->avail[n]) >= q->g;
}

/* Counts a node that became eligible in its unit of the required level. */
static void unit_up(const struct cyc *c, const struct req *q, int *ucnt, int *umax, int n)
{
	if (!ucnt)
		return;
	int v = ++ucnt[c->unit[q->required][n]];
	if (v > *umax)
		*umax = v;
}

/* A change of a node's reservation blocking during a sweep. */
struct bev {
	int64_t t;
	int node;
};

static int bev_cmp(const void *a, const void *b)
{
	const struct bev *x = a, *y = b;
	if (x->t != y->t)
		return cmp_i64(x->t, y->t);
	return (x->node > y->node) - (x->node < y->node);
}

/* GPUs of node n held by a reservation overlapping [t, t + rt). */
static uint64_t blocked_at(const struct cyc *c, int n, int64_t t, int64_t rt)
{
	uint64_t m = 0;
	for (int r = c->rhead[n]; r >= 0; r = c->resv[r].next)
		if (c->resv[r].start < t + rt && t < c->resv[r].end)
			m |= c->resv[r].mask;
	return m;
}

struct sweep {
	const struct req *q;
	int *ucnt;       /* eligible nodes per unit of the required level */
	size_t units_ok; /* units with at least nmin eligible nodes */
	size_t ec;       /* eligible nodes */
};

static void sweep_count(struct cyc *c, struct sweep *w, int n, int delta)
{
	w->ec += (size_t)(ptrdiff_t)delta;
	if (!w->ucnt)
		return;
	int *u = &w->ucnt[c->unit[w->q->required][n]];
	bool before = *u >= w->q->nmin;
	*u += delta;
	bool after = *u >= w->q->nmin;
	if (before != after)
		w->units_ok += after ? 1 : (size_t)-1;
}

/*
 * Sweeps the time profile for the earliest t >= now at which q fits for rt
 * seconds without touching a reservation. Eligibility is kept exact as t
 * advances (GPUs released, reservations starting to block the window
 * [t, t + rt) at their start - rt + 1 and ceasing at their end), so a
 * placement is attempted only when enough eligible nodes exist. Returns t
 * (allocation in out) or SCHED_NEVER.
 */
int64_t sched__earliest(struct cyc *c, const struct req *q, int64_t rt, struct sched_alloc *out, size_t *na)
{
	uint64_t *rm = c->sc_mask, *last = c->sc_last;
	int64_t *rtime = c->sc_time;
	int64_t now = c->now;
	*na = 0;
	if (q->model == -2)
		return SCHED_NEVER;
	if (c->flat)
		return sched__earliest_flat(c, q, rt, out, na);
	sched__resv_name(c);
	if (c->inc && !c->rel)
		sched__inc_rel(c);
	uint64_t *blk = sched__xcalloc(c->nn + 1, sizeof(uint64_t));
	struct sweep w = { q, q->required >= 0 ? sched__xcalloc(2 * c->nn + 1, sizeof(int)) : NULL, 0, 0 };
	struct bev *bev = sched__xmalloc((2 * c->nresv + 1) * sizeof(*bev));
	size_t nbev = 0;
	for (size_t i = 0; i < c->nresv; i++) {
		const struct resv *r = &c->resv[i];
		int64_t from = r->start - rt + 1;
		if (r->end <= now)
			continue;
		if (from > now && from < r->end)
			bev[nbev++] = (struct bev){ from, r->node };
		bev[nbev++] = (struct bev){ r->end, r->node };
	}
	qsort(bev, nbev, sizeof(*bev), bev_cmp);
	for (size_t n = 0; n < c->nn; n++) {
		rm[n] = c->freemask[n];
		last[n] = c->freemask[n];
		rtime[n] = now;
		if (c->rhead[n] >= 0)
			blk[n] = blocked_at(c, (int)n, now, rt);
		if (eligible(c, q, (int)n, rm[n] & ~blk[n]))
			sweep_count(c, &w, (int)n, +1);
	}
	size_t i = 0, j = 0, k = 0;
	int64_t t = now, found = SCHED_NEVER;
	for (;;) {
		if (w.ec >= (size_t)q->nmin && (!w.ucnt || w.units_ok > 0)) {
			*na = sched__place(c, q, rm, t, t + rt, PLACE_LATER, out);
			if (*na) {
				found = t;
				break;
			}
		}
		while (i < c->nrel && (sched__rel_victim(c, &c->rel[i]) || c->rel[i].t <= now))
			i++;
		t = INT64_MAX;
		if (i < c->nrel)
			t = c->rel[i].t;
		if (j < c->ncrel && c->crel[j].t < t)
			t = c->crel[j].t;
		if (k < nbev && bev[k].t < t)
			t = bev[k].t;
		if (t == INT64_MAX)
			break;
		for (;;) {
			const struct rel *r = NULL;
			if (i < c->nrel && c->rel[i].t == t) {
				if (sched__rel_victim(c, &c->rel[i])) {
					i++;
					continue;
				}
				r = &c->rel[i++];
			} else if (j < c->ncrel && c->crel[j].t == t) {
				r = &c->crel[j++];
			} else if (k < nbev && bev[k].t == t) {
				int n = bev[k++].node;
				bool was = eligible(c, q, n, rm[n] & ~blk[n]);
				blk[n] = blocked_at(c, n, t, rt);
				bool is = eligible(c, q, n, rm[n] & ~blk[n]);
				if (was != is)
					sweep_count(c, &w, n, is ? +1 : -1);
				continue;
			} else {
				break;
			}
			int cnt = r->node >= 0 ? 1 : r->nalloc;
			for (int a = 0; a < cnt; a++) {
				int len = r->node >= 0 ? 1 : sched_alloc_len(&r->alloc[a]);
				uint64_t mask = r->node >= 0 ? r->mask : r->alloc[a].gpus;
				for (int e = 0; e < len; e++) {
					int n = r->node >= 0 ? r->node : r->alloc[a].node + e;
					bool was = eligible(c, q, n, rm[n] & ~blk[n]);
					rm[n] |= mask & c->avail[n];
					if (rtime[n] != t) {
						rtime[n] = t;
						last[n] = 0;
					}
					last[n] |= mask;
					bool is = eligible(c, q, n, rm[n] & ~blk[n]);
					if (was != is)
						sweep_count(c, &w, n, is ? +1 : -1);
				}
			}
		}
	}
	free(bev);
	free(blk);
	free(w.ucnt);
	return found;
}

/* ------------------------------------------------------------ preemption */

struct vcand {
	size_t run;
	int64_t cost;   /* GPU-seconds of progress lost */
	int64_t start;
	int64_t id;
};

static int vcand_cmp(const void *a, const void *b)
{
	const struct vcand *x = a, *y = b;
	if (x->cost != y->cost)
		return cmp_i64(x->cost, y->cost);
	if (x->start != y->start)
		return -cmp_i64(x->start, y->start); /* newest first */
	return -cmp_i64(x->id, y->id);
}

static bool ancestor_or_self(const struct cyc *c, int a, int t)
{
	for (int d = 0; t >= 0 && d <= (int)c->s->ntenants; d++) {
		if (t == a)
			return true;
		t = c->s->tenants[t].parent;
	}
	return false;
}

static int64_t victims_end(const struct cyc *c, const struct vcand *v, const bool *drop, size_t k)
{
	int64_t g = 1;
	for (size_t i = 0; i < k; i++) {
		if (drop && drop[i])
			continue;
		const struct sched_run *r = &c->s->runs[v[i].run];
		if (r->grace > g)
			g = r->grace;
	}
	return c->now + g;
}

static void victims_mask(struct cyc *c, const struct vcand *v, const bool *drop, size_t k, uint64_t *av)
{
	memcpy(av, c->freemask, c->nn * sizeof(uint64_t));
	for (size_t i = 0; i < k; i++) {
		if (drop && drop[i])
			continue;
		const struct sched_run *r = &c->s->runs[v[i].run];
		for (size_t a = 0; a < r->nalloc; a++)
			for (int e = 0; e < sched_alloc_len(&r->alloc[a]); e++)
				av[r->alloc[a].node + e] |= r->alloc[a].gpus;
	}
}

bool sched__choose_victims(struct cyc *c, const struct sched_job *j, const struct req *q, int64_t rt,
                           enum sched_preempt_reason *why)
{
	const struct sched_snapshot *s = c->s;
	int64_t need = (int64_t)q->nmin * q->g;
	int cover = sched__reclaim_cover(c, j, q, need); /* reclaims for this subtree's guarantee */
	bool reclaim = cover >= 0;
	struct vcand *v = sched__xmalloc((s->nruns + 1) * sizeof(*v));
	size_t nv = 0;
	bool ok = false;
	if (!c->run_gpus)
		sched__run_gpus(c);
	if (!c->vsorted) { /* every preemptible run by cost, once per cycle */
		struct vcand *all = sched__xmalloc((s->nruns + 1) * sizeof(*all));
		size_t na = 0;
		for (size_t i = 0; i < s->nruns; i++) {
			const struct sched_run *r = &s->runs[i];
			if (r->stopping || !r->preemptible)
				continue;
			int64_t ran = s->now - r->start;
			all[na++] = (struct vcand){ i, (int64_t)c->run_gpus[i] * (ran > 0 ? ran : 0), r->start, r->run_id };
		}
		qsort(all, na, sizeof(*all), vcand_cmp);
		c->vsorted = sched__xmalloc((na + 1) * sizeof(size_t));
		for (size_t i = 0; i < na; i++)
			c->vsorted[i] = all[i].run;
		c->nvsorted = na;
		free(all);
	}
	for (size_t vi = 0; vi < c->nvsorted; vi++) {
		size_t i = c->vsorted[vi];
		const struct sched_run *r = &s->runs[i];
		if (c->victim[i] || r->stopping || !r->preemptible)
			continue;
		bool lower = r->priority < j->priority;
		bool borrower = reclaim && !ancestor_or_self(c, r->tenant, j->tenant) &&
		                !ancestor_or_self(c, cover, r->tenant) && sched__borrower(c, r->tenant, q, j->tenant);
		if (!lower && !borrower)
			continue;
		bool useful = false;
		for (size_t a = 0; a < r->nalloc && !useful; a++)
			for (int e = 0; e < sched_alloc_len(&r->alloc[a]) && !useful; e++)
				useful = c->up[r->alloc[a].node + e] && model_ok(c, q, r->alloc[a].node + e);
		if (!useful)
			continue;
		int64_t ran = s->now - r->start;
		v[nv++] = (struct vcand){ i, (int64_t)c->run_gpus[i] * (ran > 0 ? ran : 0), r->start, r->run_id };
	}
	if (!nv)
		goto out;
	uint64_t *av = sched__xmalloc(c->nn * sizeof(uint64_t) + 1);
	memcpy(av, c->freemask, c->nn * sizeof(uint64_t));
	size_t ec = 0;
	int *ucnt = q->required >= 0 ? sched__xcalloc(2 * c->nn + 1, sizeof(int)) : NULL;
	int umax = 0;
	for (size_t n = 0; n < c->nn; n++)
		if (eligible(c, q, (int)n, av[n])) {
			ec++;
			unit_up(c, q, ucnt, &umax, (int)n);
		}
	size_t k = 0;
	for (; k < nv; k++) {
		const struct sched_run *r = &s->runs[v[k].run];
		for (size_t a = 0; a < r->nalloc; a++) {
			for (int e = 0; e < sched_alloc_len(&r->alloc[a]); e++) {
				int n = r->alloc[a].node + e;
				bool was = eligible(c, q, n, av[n]);
				av[n] |= r->alloc[a].gpus;
				if (!was && eligible(c, q, n, av[n])) {
					ec++;
					unit_up(c, q, ucnt, &umax, n);
				}
			}
		}
		if (ec < (size_t)q->nmin || (ucnt && umax < q->nmin))
			continue;
		int64_t t = victims_end(c, v, NULL, k + 1);
		if (sched__place(c, q, av, t, t + rt, PLACE_NOW, c->sc_alloc2)) {
			ok = true;
			k++;
			break;
		}
	}
	if (ok) {
		/*
		 * Never more than needed: first drop every victim the placement found
		 * does not use; then, for small sets, each dearest victim the gang can
		 * still do without.
		 */
		bool *drop = sched__xcalloc(k, sizeof(bool));
		size_t na = sched__place(c, q, av, victims_end(c, v, NULL, k), victims_end(c, v, NULL, k) + rt, PLACE_NOW,
		                         c->sc_alloc2);
		uint64_t *got = c->sc_mask;
		for (size_t a = 0; a < na; a++)
			got[c->sc_alloc2[a].node] = 0;
		for (size_t a = 0; a < na; a++)
			got[c->sc_alloc2[a].node] |= c->sc_alloc2[a].gpus;
		for (size_t x = 0; x < k; x++) {
			const struct sched_run *r = &s->runs[v[x].run];
			bool used = false;
			for (size_t a = 0; a < r->nalloc && !used; a++) {
				for (int e = 0; e < sched_alloc_len(&r->alloc[a]) && !used; e++) {
					int n = r->alloc[a].node + e;
					for (size_t b = 0; b < na && !used; b++)
						used = c->sc_alloc2[b].node == n && (got[n] & r->alloc[a].gpus);
				}
			}
			drop[x] = !used;
		}
		size_t kept = 0;
		for (size_t x = 0; x < k; x++)
			kept += !drop[x];
		for (size_t x = k; kept <= 16 && x-- > 0;) {
			if (drop[x])
				continue;
			drop[x] = true;
			victims_mask(c, v, drop, k, av);
			int64_t t = victims_end(c, v, drop, k);
			if (!sched__place(c, q, av, t, t + rt, PLACE_NOW, c->sc_alloc2))
				drop[x] = false;
		}
		bool all_lower = true;
		for (size_t x = 0; x < k; x++)
			if (!drop[x] && s->runs[v[x].run].priority >= j->priority)
				all_lower = false;
		*why = all_lower ? SCHED_PREEMPT_PRIORITY : SCHED_PREEMPT_RECLAIM;
		for (size_t x = 0; x < k; x++)
			if (!drop[x])
				sched__add_preemption(c, v[x].run, j->id, *why);
		free(drop);
	}
	free(av);
	free(ucnt);
out:
	free(v);
	return ok;
}
