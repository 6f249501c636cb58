/*
 * sched_inc.c - the incremental view of the policy core: what a cycle
 * rebuilds from the snapshot (nodes by free GPU count, releases of running
 * runs, quota use, unit maxima), kept in decisions->priv between calls that
 * pass a struct sched_delta and updated from what changed; and the fast
 * paths it allows on clusters without topology levels (placement now and
 * the earliest-start sweep without a pass over every node).
 *
 * Exactness: the view describes the snapshot exactly as setup() would build
 * it, and the fast paths choose what sched__place() and sched__earliest()
 * choose (the same candidates in the same order: free GPUs, then time key,
 * then node index). tests/unit/sched (every scenario with and without a
 * delta) and unit.sim.incremental (whole replays both ways) check it.
 *
 * Wide gangs: where every node of the request's row has the GPUs it asks
 * for and no run holds part of a node, a node is free or not, and the
 * reservation is planned and held by counts (earliest_whole(),
 * place_held(), sched__resv_name()); nodes are named when a job starts,
 * or when a path needs the reservation node by node.
 */
#include "sched_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ lifetime */

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		abort();
	return p;
}

void sched__inc_free(struct inc *in)
{
	if (!in)
		return;
	for (int i = 0; i < in->nmodels; i++)
		free(in->models[i]);
	free(in->models);
	free(in->model);
	free(in->gcount);
	for (int l = 0; l < SCHED_MAX_LEVELS; l++) {
		free(in->unit[l]);
		free(in->agg_free[l]);
		free(in->agg_cnt[l]);
	}
	free(in->up);
	free(in->whole_ok);
	free(in->bad);
	free(in->avail);
	free(in->freemask);
	free(in->cnt);
	free(in->maxk);
	free(in->bm);
	free(in->rhead);
	for (size_t i = 0; i < in->cap_slot; i++)
		free(in->slot[i].alloc);
	free(in->slot);
	free(in->free_slot);
	free(in->hkey);
	free(in->hval);
	free(in->rk);
	free(in->pk);
	free(in->own_g);
	free(in->own_j);
	free(in->pc);
	free(in->vslot);
	free(in->vlist);
	free(in->sc_cand);
	free(in->sc_pick);
	free(in->sc_tmp);
	free(in->nodebits);
	free(in->pos);
	free(in->sc_mask);
	free(in->sc_last);
	free(in->sc_time);
	free(in->sc_alloc);
	free(in->sc_alloc2);
	free(in->sw_stamp);
	free(in->sw_rm);
	free(in->sw_last);
	free(in->sw_blk);
	free(in->sw_time);
	free(in->sw_list);
	free(in->mk_stamp);
	free(in->touched);
	free(in->tflag);
	for (int i = 0; i < SCR_N; i++)
		free(in->scr[i]);
	free(in->crel);
	free(in->resv);
	free(in->ucache.e);
	free(in->fcache.e);
	free(in->neb);
	free(in->nown);
	free(in->hom);
	free(in->wseg);
	free(in->vr_bits);
	free(in->vr_alloc);
	free(in->kept);
	free(in->miss);
	free(in->fab);
	free(in);
}

static void ctab_clear(struct ctab *t)
{
	t->n = 0;
	if (++t->gen == 0) { /* wrapped: old entries could look live */
		if (t->cap)
			memset(t->e, 0, t->cap * sizeof(*t->e));
		memset(t->memo, 0, sizeof(t->memo));
		t->gen = 1;
	}
}

/* ------------------------------------------------------------ nodes */

static bool node_bad(const struct sched_node *x)
{
	return x->used && (x->state == SCHED_NODE_DOWN || x->fabric_down || (x->used & ~x->healthy));
}

static uint64_t node_all(const struct sched_node *x)
{
	return x->gpu_count >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << x->gpu_count) - 1);
}

static int node_unit(const struct sched_snapshot *s, size_t n, int l)
{
	return s->nodes[n].unit[l] >= 0 ? s->nodes[n].unit[l] : (int)(s->nnodes + n);
}

/* Adds (+1) or removes (-1) UP node n with free count k to/from the buckets. */
static void bucket(struct inc *in, int n, int k, int sign)
{
	int rows[2] = { in->model[n], in->nmodels };
	for (int i = 0; i < 2; i++) {
		size_t b = (size_t)rows[i] * 65 + (size_t)k;
		uint64_t *w = &in->bm[b * in->nw + (size_t)n / 64];
		uint64_t bit = (uint64_t)1 << (n % 64);
		in->cnt[b] += sign;
		if (sign > 0)
			*w |= bit;
		else
			*w &= ~bit;
	}
}

/* sched__bucket_move() for the view: the bitmaps follow the counts. */
void sched__inc_bucket(struct inc *in, int n, int from, int to)
{
	int rows[2] = { in->model[n], in->nmodels };
	uint64_t bit = (uint64_t)1 << (n % 64);
	for (int i = 0; i < 2; i++) {
		size_t b = (size_t)rows[i] * 65;
		in->bm[(b + (size_t)from) * in->nw + (size_t)n / 64] &= ~bit;
		in->bm[(b + (size_t)to) * in->nw + (size_t)n / 64] |= bit;
	}
}

/* Flips bits [lo, hi) of w (hi > lo). */
static void xor_range(uint64_t *w, size_t lo, size_t hi)
{
	size_t a = lo / 64, b = (hi - 1) / 64;
	uint64_t ma = ~(uint64_t)0 << (lo % 64), mb = ~(uint64_t)0 >> (63 - (hi - 1) % 64);
	if (a == b) {
		w[a] ^= ma & mb;
		return;
	}
	w[a] ^= ma;
	for (size_t i = a + 1; i < b; i++)
		w[i] = ~w[i];
	w[b] ^= mb;
}

/*
 * Which bits differ from x across v[0..n): 0 when every element is x. One
 * array per loop, so the compiler vectorizes each (the loops that OR'ed
 * six arrays of four widths per node stayed scalar: ~18 instructions a
 * node, the most of a wide gang's release).
 */
static uint64_t diff_u64(const uint64_t *restrict v, size_t n, uint64_t x)
{
	uint64_t d = 0;
	for (size_t k = 0; k < n; k++)
		d |= v[k] ^ x;
	return d;
}

static unsigned diff_int(const int *restrict v, size_t n, int x)
{
	unsigned d = 0;
	for (size_t k = 0; k < n; k++)
		d |= (unsigned)(v[k] ^ x);
	return d;
}

/* Whether some v[k] is x. */
static bool any_u32(const uint32_t *restrict v, size_t n, uint32_t x)
{
	unsigned d = 0;
	for (size_t k = 0; k < n; k++)
		d |= v[k] == x;
	return d;
}

static unsigned diff_bool(const bool *restrict v, size_t n, bool x)
{
	const unsigned char *restrict b = (const unsigned char *)v; /* bool is one byte, 0 or 1 */
	unsigned char d = 0;
	for (size_t k = 0; k < n; k++)
		d |= (unsigned char)(b[k] ^ (unsigned char)x);
	return d;
}

/*
 * A node is in exactly one bucket per row, so a move clears a set bit and
 * sets a clear one: both flips, which is why a run of moves is two range
 * flips per row whatever the order.
 */
void sched__inc_flush(struct inc *in)
{
	struct bmove *m = &in->bmv;
	if (!m->len)
		return;
	int rows[2] = { m->row, in->nmodels };
	size_t lo = (size_t)m->n0, hi = lo + (size_t)m->len;
	for (int i = 0; i < 2; i++) {
		size_t b = (size_t)rows[i] * 65;
		in->cnt[b + (size_t)m->from] -= m->len;
		in->cnt[b + (size_t)m->to] += m->len;
		xor_range(&in->bm[(b + (size_t)m->from) * in->nw], lo, hi);
		xor_range(&in->bm[(b + (size_t)m->to) * in->nw], lo, hi);
	}
	m->len = 0;
}

static const char *model_of(const struct sched_node *x)
{
	return x->gpu_model ? x->gpu_model : "";
}

/* ------------------------------------------------------------ runs */

static size_t hhome(const struct inc *in, int64_t id)
{
	uint64_t h = (uint64_t)id * 0x9e3779b97f4a7c15ULL;
	return (size_t)(h >> 17) & (in->hcap - 1);
}

static int hget(const struct inc *in, int64_t id)
{
	if (!in->hcap)
		return -1;
	for (size_t k = hhome(in, id); in->hval[k] >= 0; k = (k + 1) & (in->hcap - 1))
		if (in->hkey[k] == id)
			return in->hval[k];
	return -1;
}

static void hput(struct inc *in, int64_t id, int slot)
{
	if ((in->nlive + 1) * 2 > in->hcap) {
		size_t ocap = in->hcap;
		int64_t *okey = in->hkey;
		int *oval = in->hval;
		in->hcap = ocap ? ocap * 2 : 64;
		in->hkey = sched__xmalloc(in->hcap * sizeof(int64_t));
		in->hval = sched__xmalloc(in->hcap * sizeof(int));
		for (size_t i = 0; i < in->hcap; i++)
			in->hval[i] = -1;
		for (size_t i = 0; i < ocap; i++) {
			if (oval[i] < 0)
				continue;
			size_t k = hhome(in, okey[i]);
			while (in->hval[k] >= 0)
				k = (k + 1) & (in->hcap - 1);
			in->hkey[k] = okey[i];
			in->hval[k] = oval[i];
		}
		free(okey);
		free(oval);
	}
	size_t k = hhome(in, id);
	while (in->hval[k] >= 0)
		k = (k + 1) & (in->hcap - 1);
	in->hkey[k] = id;
	in->hval[k] = slot;
}

/* Linear probing deletion by backward shift: no tombstones. */
static void hdel(struct inc *in, int64_t id)
{
	size_t mask = in->hcap - 1, i = hhome(in, id);
	while (in->hkey[i] != id || in->hval[i] < 0)
		i = (i + 1) & mask;
	in->hval[i] = -1;
	for (size_t j = (i + 1) & mask; in->hval[j] >= 0; j = (j + 1) & mask) {
		size_t k = hhome(in, in->hkey[j]);
		bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (stays)
			continue;
		in->hkey[i] = in->hkey[j];
		in->hval[i] = in->hval[j];
		in->hval[j] = -1;
		i = j;
	}
}

static size_t keys_lower(const struct rkey *v, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (v[m].t < t)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/* Inserts (t, slot) after the keys <= t (sorted), or at the end (a build sorts later). */
static void keys_add(struct rkey **v, size_t *n, size_t *cap, int64_t t, int slot, bool sorted)
{
	*v = sched__grow(*v, cap, *n + 1, sizeof(**v));
	size_t at = sorted ? keys_lower(*v, *n, t + 1) : *n;
	memmove(&(*v)[at + 1], &(*v)[at], (*n - at) * sizeof(**v));
	(*v)[at] = (struct rkey){ t, slot };
	(*n)++;
}

static void keys_del(struct rkey *v, size_t *n, int64_t t, int slot)
{
	size_t i = keys_lower(v, *n, t);
	while (i < *n && v[i].slot != slot)
		i++;
	if (i == *n)
		abort(); /* every key the view files it can find again */
	memmove(&v[i], &v[i + 1], (*n - i - 1) * sizeof(*v));
	(*n)--;
}

/*
 * The planned end of a run as sched__run_end() computes it (before the
 * clamp to now + 1, which rel_time() applies): its prediction while that
 * lies ahead, else its limit. A run planned at its prediction is also filed
 * in in->pk, to move to its limit when the clock passes the prediction.
 */
static int64_t run_key(const struct inc *in, const struct islot *x, int64_t now)
{
	return in->predict && x->pe > now && x->pe < x->lim ? x->pe : x->lim;
}

static void prio_add(struct inc *in, int prio, int d)
{
	size_t i = 0;
	while (i < in->npc && in->pc[i].prio < prio)
		i++;
	if (i == in->npc || in->pc[i].prio != prio) {
		in->pc = sched__grow(in->pc, &in->cap_pc, in->npc + 1, sizeof(*in->pc));
		memmove(&in->pc[i + 1], &in->pc[i], (in->npc - i) * sizeof(*in->pc));
		in->pc[i] = (struct pcount){ prio, 0 };
		in->npc++;
	}
	in->pc[i].n += d;
	if (in->pc[i].n == 0) {
		memmove(&in->pc[i], &in->pc[i + 1], (in->npc - i - 1) * sizeof(*in->pc));
		in->npc--;
	}
}

static uint64_t full_mask(const struct inc *in, int n)
{
	return in->gcount[n] >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << in->gcount[n]) - 1;
}

static bool node_odd(const struct inc *in, int n)
{
	return in->nown[n] > 0 && in->freemask[n] != 0;
}

/* A run's part on node n comes (d = 1) or goes (-1): the counts whole-node sweeps rely on. */
static inline void own(struct inc *in, int n, int d)
{
	bool odd = node_odd(in, n);
	in->nshare -= in->nown[n] >= 2;
	in->nown[n] += d;
	in->nshare += in->nown[n] >= 2;
	in->nodd += (size_t)node_odd(in, n) - (size_t)odd;
}

/*
 * own() for each of nodes n0..n0+len-1 (one run of parts), in one
 * branchless pass: the same counts, summed.
 */
static void own_range(struct inc *in, int n0, size_t len, int d)
{
	int *restrict no = &in->nown[n0];
	const uint64_t *restrict fm = &in->freemask[n0];
	if (d > 0) { /* mostly a whole gang on nodes it filled: no owner, nothing free, so no count moves */
		if (!diff_int(no, len, 0) && !diff_u64(fm, len, 0)) {
			for (size_t k = 0; k < len; k++)
				no[k] = 1;
			return;
		}
	}
	long share = 0, odd = 0;
	for (size_t k = 0; k < len; k++) {
		int o = no[k], o2 = o + d;
		long f = fm[k] != 0;
		share += (long)(o2 >= 2) - (long)(o >= 2);
		odd += f * ((long)(o2 > 0) - (long)(o > 0));
		no[k] = o2;
	}
	in->nshare += (size_t)share;
	in->nodd += (size_t)odd;
}

/* Whether every node of n0..n0+len-1 has GPU count gc. */
static bool same_gcount(const struct inc *in, int n0, size_t len, int gc)
{
	return !diff_int(&in->gcount[n0], len, gc);
}

/* Copies run r into a slot. false: the view cannot hold it (stopping, or its id twice). */
static bool run_add(struct inc *in, const struct sched_run *r, bool sorted, int64_t now)
{
	if (r->stopping || hget(in, r->run_id) >= 0)
		return false;
	int k;
	if (in->nfree) {
		k = in->free_slot[--in->nfree];
	} else {
		size_t old = in->cap_slot;
		in->slot = sched__grow(in->slot, &in->cap_slot, old + 1, sizeof(*in->slot));
		memset(&in->slot[old], 0, (in->cap_slot - old) * sizeof(*in->slot));
		in->free_slot = xrealloc(in->free_slot, in->cap_slot * sizeof(int));
		in->vslot = xrealloc(in->vslot, in->cap_slot * sizeof(bool));
		memset(&in->vslot[old], 0, (in->cap_slot - old) * sizeof(bool));
		for (size_t i = in->cap_slot; i-- > old + 1;)
			in->free_slot[in->nfree++] = (int)i;
		k = (int)old;
	}
	struct islot *x = &in->slot[k];
	int g = 0;
	if (x->cap_alloc < r->nalloc + 1) { /* slots are reused: so is their copy */
		free(x->alloc);
		x->cap_alloc = r->nalloc + 1;
		x->alloc = sched__xmalloc(x->cap_alloc * sizeof(*x->alloc));
	}
	x->nalloc = r->nalloc;
	x->whole = true;
	x->wgen = 0;
	if (r->nalloc)
		memcpy(x->alloc, r->alloc, r->nalloc * sizeof(*x->alloc));
	for (size_t a = 0, len; a < r->nalloc;) { /* the owner counts by runs of parts */
		size_t e = sched__part_run(r->alloc, a, r->nalloc, &len);
		int n0 = r->alloc[a].node;
		uint64_t m = r->alloc[a].gpus;
		a += e;
		if (!m)
			continue;
		g += (int)len * sched__pc_low(m);
		own_range(in, n0, len, +1);
		x->whole = x->whole && m == full_mask(in, n0) && same_gcount(in, n0, len, in->gcount[n0]);
	}
	in->nsplit += !x->whole;
	x->run_id = r->run_id;
	x->lim = r->start + (r->time_limit > 0 ? r->time_limit : 1);
	x->pe = r->predicted_end;
	x->end = run_key(in, x, now);
	x->in_pk = false;
	x->tenant = r->tenant;
	x->gpus = g;
	x->priority = r->priority;
	x->preemptible = r->preemptible;
	x->live = true;
	hput(in, r->run_id, k);
	in->nlive++;
	in->own_g[r->tenant] += g;
	in->own_j[r->tenant]++;
	if (r->preemptible)
		prio_add(in, r->priority, +1);
	if (r->nalloc) {
		keys_add(&in->rk, &in->nrk, &in->cap_rk, x->end, k, sorted);
		if (x->end != x->lim) {
			keys_add(&in->pk, &in->npk, &in->cap_pk, x->pe, k, sorted);
			x->in_pk = true;
		}
	}
	return true;
}

/* parts: take its parts off their nodes' owner counts (false: release() did). */
static bool run_del(struct inc *in, int64_t run_id, bool parts)
{
	int k = hget(in, run_id);
	if (k < 0)
		return false;
	struct islot *x = &in->slot[k];
	if (x->nalloc)
		keys_del(in->rk, &in->nrk, x->end, k);
	if (x->in_pk)
		keys_del(in->pk, &in->npk, x->pe, k);
	for (size_t a = 0, len; a < x->nalloc && parts;) {
		size_t e = sched__part_run(x->alloc, a, x->nalloc, &len);
		if (x->alloc[a].gpus)
			own_range(in, x->alloc[a].node, len, -1);
		a += e;
	}
	in->nsplit -= !x->whole;
	in->own_g[x->tenant] -= x->gpus;
	in->own_j[x->tenant]--;
	if (x->preemptible)
		prio_add(in, x->priority, -1);
	hdel(in, run_id);
	x->live = false;
	in->nlive--;
	in->free_slot[in->nfree++] = k;
	return true;
}

static int rk_cmp(const void *a, const void *b)
{
	const struct rkey *x = a, *y = b;
	return (x->t > y->t) - (x->t < y->t);
}

/* The clock passed these runs' predictions: they are planned at their limits now. */
static void pass_predictions(struct inc *in, int64_t now)
{
	size_t n = 0;
	while (n < in->npk && in->pk[n].t <= now) {
		struct islot *x = &in->slot[in->pk[n++].slot];
		int k = (int)(x - in->slot);
		keys_del(in->rk, &in->nrk, x->end, k);
		x->end = x->lim;
		x->in_pk = false;
		keys_add(&in->rk, &in->nrk, &in->cap_rk, x->end, k, true);
	}
	if (n) {
		memmove(in->pk, in->pk + n, (in->npk - n) * sizeof(*in->pk));
		in->npk -= n;
	}
}

/* ------------------------------------------------------------ build, apply */

/* 0 built; 2 the view cannot describe this snapshot (the caller uses the full path). */
static int build(struct cyc *c, struct inc *in)
{
	const struct sched_snapshot *s = c->s;
	size_t nn = s->nnodes, ns = nn ? nn : 1;
	in->nn = nn;
	in->nlevels = s->settings.nlevels;
	in->ntenants = s->ntenants;
	in->models = sched__xcalloc(nn + 1, sizeof(char *));
	in->model = sched__xcalloc(ns, sizeof(int));
	in->gcount = sched__xcalloc(ns, sizeof(int));
	for (size_t i = 0; i < nn; i++) {
		const char *m = model_of(&s->nodes[i]);
		int id = -1;
		for (int k = 0; k < in->nmodels; k++)
			if (strcmp(in->models[k], m) == 0) {
				id = k;
				break;
			}
		if (id < 0) {
			size_t len = strlen(m);
			id = in->nmodels++;
			in->models[id] = sched__xmalloc(len + 1);
			memcpy(in->models[id], m, len + 1);
		}
		in->model[i] = id;
		in->gcount[i] = s->nodes[i].gpu_count;
	}
	for (int l = 0; l < in->nlevels; l++) {
		in->agg_free[l] = sched__xcalloc(2 * nn + 1, sizeof(int));
		in->agg_cnt[l] = sched__xcalloc(2 * nn + 1, sizeof(int));
		in->unit[l] = sched__xcalloc(ns, sizeof(int));
		for (size_t i = 0; i < nn; i++)
			in->unit[l][i] = node_unit(s, i, l);
	}
	in->nw = (nn + 63) / 64 + 1;
	in->up = sched__xcalloc(ns, sizeof(bool));
	in->whole_ok = sched__xcalloc(ns, sizeof(bool));
	in->bad = sched__xcalloc(ns, sizeof(bool));
	in->fab = sched__xcalloc(ns, sizeof(bool));
	in->avail = sched__xcalloc(ns, sizeof(uint64_t));
	in->freemask = sched__xcalloc(ns, sizeof(uint64_t));
	in->cnt = sched__xcalloc((size_t)(in->nmodels + 1) * 65, sizeof(int));
	in->maxk = sched__xcalloc((size_t)in->nmodels + 1, sizeof(int));
	for (size_t i = 0; i < nn; i++) {
		if (in->gcount[i] > in->maxk[in->model[i]])
			in->maxk[in->model[i]] = in->gcount[i];
		if (in->gcount[i] > in->maxk[in->nmodels])
			in->maxk[in->nmodels] = in->gcount[i];
	}
	in->bm = sched__xcalloc((size_t)(in->nmodels + 1) * 65 * in->nw, sizeof(uint64_t));
	in->rhead = sched__xmalloc(ns * sizeof(int));
	for (size_t i = 0; i < nn; i++) {
		const struct sched_node *x = &s->nodes[i];
		in->total_gpus += x->gpu_count;
		in->rhead[i] = -1;
		in->up[i] = x->state == SCHED_NODE_UP;
		in->avail[i] = in->up[i] ? (x->healthy & node_all(x)) : 0;
		in->whole_ok[i] = in->up[i] && in->avail[i] == full_mask(in, (int)i);
		in->freemask[i] = in->avail[i] & ~x->used;
		if (in->up[i])
			bucket(in, (int)i, sched__pc(in->freemask[i]), +1);
		in->bad[i] = node_bad(x);
		in->nbad += in->bad[i];
		in->fab[i] = x->fabric_down;
	}
	in->own_g = sched__xcalloc(s->ntenants + 1, sizeof(int64_t));
	in->own_j = sched__xcalloc(s->ntenants + 1, sizeof(int));
	in->nown = sched__xcalloc(ns, sizeof(int));
	in->hgen = 1;
	in->predict = s->settings.predict;
	for (size_t i = 0; i < s->nruns; i++)
		if (!run_add(in, &s->runs[i], false, s->now))
			return 2;
	if (in->nrk > 1)
		qsort(in->rk, in->nrk, sizeof(*in->rk), rk_cmp);
	if (in->npk > 1)
		qsort(in->pk, in->npk, sizeof(*in->pk), rk_cmp);
	in->sc_cand = sched__xmalloc(ns * sizeof(struct cand));
	in->sc_pick = sched__xmalloc(ns * sizeof(struct cand));
	in->sc_tmp = sched__xmalloc(ns * sizeof(struct cand));
	in->pos = sched__xmalloc(ns * sizeof(int));
	in->sc_mask = sched__xmalloc(ns * sizeof(uint64_t));
	in->nodebits = sched__xcalloc(in->nw, sizeof(uint64_t));
	in->sc_last = sched__xmalloc(ns * sizeof(uint64_t));
	in->sc_time = sched__xmalloc(ns * sizeof(int64_t));
	in->sc_alloc = sched__xmalloc(ns * sizeof(struct sched_alloc));
	in->sc_alloc2 = sched__xmalloc(ns * sizeof(struct sched_alloc));
	in->sw_stamp = sched__xcalloc(ns, sizeof(uint32_t));
	in->sw_rm = sched__xmalloc(ns * sizeof(uint64_t));
	in->sw_last = sched__xmalloc(ns * sizeof(uint64_t));
	in->sw_blk = sched__xmalloc(ns * sizeof(uint64_t));
	in->sw_time = sched__xmalloc(ns * sizeof(int64_t));
	in->sw_list = sched__xmalloc(ns * sizeof(int));
	in->mk_stamp = sched__xcalloc(ns, sizeof(uint32_t));
	in->touched = sched__xmalloc(ns * sizeof(int));
	in->tflag = sched__xcalloc(ns, sizeof(bool));
	in->neb = sched__xcalloc((size_t)(in->nmodels + 1) * 65, sizeof(struct nebound));
	in->hom = sched__xmalloc((size_t)(in->nmodels + 1) * sizeof(int));
	for (int r = 0; r <= in->nmodels; r++)
		in->hom[r] = -2; /* no node yet */
	for (size_t i = 0; i < nn; i++) {
		int *h[2] = { &in->hom[in->model[i]], &in->hom[in->nmodels] };
		for (int k = 0; k < 2; k++)
			*h[k] = *h[k] == -2 || *h[k] == in->gcount[i] ? in->gcount[i] : -1;
	}
	return 0;
}

static int bad_delta(struct cyc *c, const char *fmt, long long v)
{
	snprintf(c->d->error, sizeof(c->d->error), fmt, v);
	return SCHED_EINVAL;
}

static int bad_job(struct cyc *c, const struct sched_job *j, const char *what)
{
	snprintf(c->d->error, sizeof(c->d->error), "job %lld: %s", (long long)j->id, what);
	return SCHED_EINVAL;
}

/*
 * What validate() checks, for what may differ from the previous snapshot:
 * the pending jobs, users added since, the listed nodes and the added runs
 * (the tenant tree and existing users' tenants are the same by contract).
 */
/* The users and jobs of a delta call; its nodes and added runs are checked by apply() as it goes. */
static int validate_delta(struct cyc *c, const struct inc *in)
{
	const struct sched_snapshot *s = c->s;
	if (s->njobs >= UINT32_MAX) /* as validate() */
		return bad_delta(c, "%lld pending jobs (fewer than 2^32)", (long long)s->njobs);
	for (size_t i = in->nusers; i < s->nusers; i++)
		if (s->users[i].tenant < 0 || (size_t)s->users[i].tenant >= s->ntenants)
			return bad_delta(c, "user %lld: tenant out of range", (long long)i);
	for (size_t i = 0; i < s->njobs; i++) {
		const struct sched_job *j = &s->jobs[i];
		if (j->tenant < 0 || (size_t)j->tenant >= s->ntenants)
			return bad_job(c, j, "tenant out of range");
		if (j->user >= 0 && (size_t)j->user >= s->nusers)
			return bad_job(c, j, "user out of range");
		if (j->nodes < 1 || j->min_nodes < 0 || j->min_nodes > j->nodes)
			return bad_job(c, j, "nodes or min_nodes out of range");
		if (j->gpus_per_node < 0 || j->gpus_per_node > SCHED_MAX_GPUS)
			return bad_job(c, j, "gpus_per_node out of range");
		if (j->topo_required >= s->settings.nlevels || j->topo_preferred >= s->settings.nlevels)
			return bad_job(c, j, "topology level out of range");
	}
	return 0;
}

/* The delta's node i, checked as apply() reaches it (one read of the node for both). */
static int check_node(struct cyc *c, size_t i)
{
	const struct sched_snapshot *s = c->s;
	const struct sched_delta *d = s->delta;
	if (d->nodes[i] < 0 || (size_t)d->nodes[i] >= s->nnodes)
		return bad_delta(c, "delta: node index %lld out of range", (long long)d->nodes[i]);
	const struct sched_node *n = &s->nodes[d->nodes[i]];
	if (n->gpu_count < 0 || n->gpu_count > SCHED_MAX_GPUS)
		return bad_delta(c, "node: gpu_count %lld out of range", (long long)n->gpu_count);
	for (int l = 0; l < s->settings.nlevels; l++)
		if (n->unit[l] < -1 || (n->unit[l] >= 0 && (size_t)n->unit[l] >= s->nnodes))
			return bad_delta(c, "node: unit %lld out of range", (long long)n->unit[l]);
	return 0;
}

/* The added runs, checked after the nodes and before the view changes by runs. */
static int check_added(struct cyc *c)
{
	const struct sched_snapshot *s = c->s;
	const struct sched_delta *d = s->delta;
	for (size_t i = 0; i < d->nadded; i++) {
		if (d->added[i] >= s->nruns)
			return bad_delta(c, "delta: run index %lld out of range", (long long)d->added[i]);
		const struct sched_run *r = &s->runs[d->added[i]];
		if (r->tenant < 0 || (size_t)r->tenant >= s->ntenants)
			return bad_delta(c, "run %lld: tenant out of range", (long long)r->run_id);
		unsigned out = 0; /* branchless: a wide gang's parts in one pass */
		for (size_t k = 0; k < r->nalloc; k++)
			out |= (unsigned)(r->alloc[k].node < 0) | (unsigned)(r->alloc[k].count < 0) |
			       (unsigned)((int64_t)r->alloc[k].node + sched_alloc_len(&r->alloc[k]) > (int64_t)s->nnodes);
		if (out)
			return bad_delta(c, "run %lld: allocation node out of range", (long long)r->run_id);
	}
	return 0;
}

/* apply()'s "rebuild" at node i of the delta: the rest of the delta must pass its checks first. */
static int rebuild_after(struct cyc *c, size_t i)
{
	int ret;
	for (i++; i < c->s->delta->nnodes; i++)
		if ((ret = check_node(c, i)))
			return ret;
	return (ret = check_added(c)) ? ret : 1;
}

/*
 * Node n (reread_node()) or the nodes of a[0..na) (reread()) back from the
 * snapshot where only their used GPUs can have changed (a run's start or
 * end, delta->by_runs): state, health and static fields are the view's, by
 * the caller's promise or because the node was listed and applied already.
 */
static void reread_node(struct inc *in, const struct sched_snapshot *s, int n)
{
	const struct sched_node *x = &s->nodes[n];
	uint64_t fm = in->avail[n] & ~x->used;
	bool odd = node_odd(in, n);
	if (in->up[n])
		sched__inc_move(in, n, sched__pc(in->freemask[n]), sched__pc(fm));
	in->freemask[n] = fm;
	in->nodd += (size_t)node_odd(in, n) - (size_t)odd;
	in->nbad -= in->bad[n];
	in->bad[n] = node_bad(x);
	in->nbad += in->bad[n];
}

static void reread(struct inc *in, const struct sched_snapshot *s, const struct sched_alloc *a, size_t na)
{
	for (size_t i = 0; i < na; i++)
		for (int e = 0; e < sched_alloc_len(&a[i]); e++)
			reread_node(in, s, a[i].node + e);
}

/* Field by field: the padding of struct sched_alloc need not match (bytes equal say equal at once). */
static bool same_alloc(const struct sched_alloc *a, const struct sched_alloc *b, size_t n)
{
	if (!n || a == b || memcmp(a, b, n * sizeof(*a)) == 0)
		return true;
	bool same = true;
	for (size_t i = 0; i < n; i++)
		same &= a[i].node == b[i].node && sched_alloc_len(&a[i]) == sched_alloc_len(&b[i]) && a[i].gpus == b[i].gpus;
	return same;
}

/*
 * release() of the run of parts a[0..len) (consecutive nodes n0.., one
 * mask m) in two tight passes, when the view holds its nodes uniformly as
 * a whole run's: UP, not bad, nothing free, one owner, one model row and
 * one set of usable GPUs. false (nothing changed): not so, node by node.
 * The counts come out as node by node: the owner leaves a node that had
 * no free GPU, so neither the odd nor the shared count moves.
 */
static bool release_run(struct inc *in, int n0, size_t len, uint64_t m)
{
	const bool *restrict bad = &in->bad[n0], *restrict up = &in->up[n0];
	const uint64_t *restrict avail = &in->avail[n0];
	const int *restrict model = &in->model[n0];
	uint64_t *restrict free = &in->freemask[n0];
	int *restrict no = &in->nown[n0];
	int row = model[0];
	uint64_t av = avail[0]; /* every node alike, as below */
	if (diff_u64(free, len, 0) || diff_int(no, len, 1) || diff_u64(avail, len, av) || diff_int(model, len, row) ||
	    diff_bool(bad, len, false) || diff_bool(up, len, true))
		return false;
	uint64_t fm = m & av;
	sched__inc_move_range(in, n0, (int)len, row, 0, sched__pc_low(fm));
	for (size_t k = 0; k < len; k++) {
		free[k] = fm;
		no[k] = 0;
	}
	return true;
}

/* release_run()'s counterpart for a start (see sched_int.h); owner counts wait for run_add(). */
bool sched__inc_take_run(struct inc *in, int n0, size_t len, uint64_t m)
{
	const bool *restrict fab = &in->fab[n0];
	const int *restrict model = &in->model[n0];
	uint64_t *restrict free = &in->freemask[n0];
	int row = model[0];
	uint64_t f0 = free[0]; /* every node alike: one free mask, one row, no fabric down */
	if (diff_u64(free, len, f0) || diff_int(model, len, row) || diff_bool(fab, len, false))
		return false;
	uint64_t f1 = f0 & ~m;
	sched__inc_move_range(in, n0, (int)len, row, sched__pc_low(f0), sched__pc_low(f1));
	for (size_t k = 0; k < len; k++)
		free[k] = f1;
	if (f0 && !f1 && in->nodd) { /* owned nodes it fills are at odds no more, as in sched.c's node by node */
		const int *restrict no = &in->nown[n0];
		size_t odd = 0;
		for (size_t k = 0; k < len; k++)
			odd += no[k] > 0;
		in->nodd -= odd;
	}
	return true;
}

/*
 * release_run() for a kept start's run of parts (no owner counted on its
 * nodes, so neither the odd nor the shared count moves): when its nodes
 * are alike (UP, not bad, no owner, one model row, one free and one usable
 * mask), their free masks get m back in two tight passes. false: node by node.
 */
static bool unkeep_run(struct inc *in, int n0, size_t len, uint64_t m)
{
	const bool *restrict bad = &in->bad[n0], *restrict up = &in->up[n0];
	const uint64_t *restrict avail = &in->avail[n0];
	const int *restrict model = &in->model[n0], *restrict no = &in->nown[n0];
	uint64_t *restrict free = &in->freemask[n0];
	int row = model[0];
	uint64_t av = avail[0], f0 = free[0]; /* every node alike, as below */
	if (diff_u64(free, len, f0) || diff_int(no, len, 0) || diff_u64(avail, len, av) || diff_int(model, len, row) ||
	    diff_bool(bad, len, false) || diff_bool(up, len, true))
		return false;
	uint64_t fm = f0 | (m & av);
	sched__inc_move_range(in, n0, (int)len, row, sched__pc_low(f0), sched__pc_low(fm));
	for (size_t k = 0; k < len; k++)
		free[k] = fm;
	return true;
}

/*
 * A removed run's GPUs a[0..na) are free again (delta->by_runs): the view
 * describes the previous snapshot, so the node's free GPUs are its own plus
 * these, without a read of the node; a node that is not bad stays so (its
 * used GPUs only shrink), a bad one is read back. With owned, its parts
 * leave the nodes' owner counts in the same pass (run_del() then skips
 * them); without, it is a kept start the next call did not report (it ran
 * and ended between the calls), which never reached the owner counts
 * (run_add() adds them): only the free masks move back.
 */
static void release(struct inc *in, const struct sched_snapshot *s, const struct sched_alloc *a, size_t na,
                    bool owned)
{
	for (size_t i = 0, len; i < na;) {
		size_t e = sched__part_run(a, i, na, &len);
		int n0 = a[i].node;
		uint64_t m = a[i].gpus;
		i += e;
		if (!m || (len >= 4 && (owned ? release_run(in, n0, len, m) : unkeep_run(in, n0, len, m))))
			continue;
		for (int n = n0; n < n0 + (int)len; n++) { /* node by node */
			if (in->bad[n]) {
				reread_node(in, s, n);
			} else {
				uint64_t fm = in->freemask[n] | (m & in->avail[n]);
				if (fm != in->freemask[n]) {
					bool odd = node_odd(in, n);
					if (in->up[n])
						sched__inc_move(in, n, sched__pc_low(in->freemask[n]), sched__pc_low(fm));
					in->freemask[n] = fm;
					in->nodd += (size_t)node_odd(in, n) - (size_t)odd;
				}
			}
			if (owned)
				own(in, n, -1);
		}
	}
}

/*
 * 0 applied; 1 rebuild from the snapshot; 2 the view cannot describe it;
 * SCHED_EINVAL a delta that does not check (then the view is to be freed).
 */
static int apply(struct cyc *c, struct inc *in)
{
	const struct sched_snapshot *s = c->s;
	const struct sched_delta *d = s->delta;
	const char *same = NULL; /* a model string of this call already found equal to node same_n's */
	int same_m = -1, ret;
	for (size_t i = 0; i < d->nnodes; i++) {
		if ((ret = check_node(c, i)))
			return ret;
		int n = d->nodes[i];
		const struct sched_node *x = &s->nodes[n];
		if (x->gpu_count != in->gcount[n])
			return rebuild_after(c, i);
		const char *m = model_of(x); /* borrowed for the call: one pointer, one text */
		if (m != same || in->model[n] != same_m) {
			if (strcmp(in->models[in->model[n]], m) != 0)
				return rebuild_after(c, i);
			same = m;
			same_m = in->model[n];
		}
		for (int l = 0; l < in->nlevels; l++)
			if (node_unit(s, (size_t)n, l) != in->unit[l][n])
				return rebuild_after(c, i);
		bool up = x->state == SCHED_NODE_UP;
		uint64_t avail = up ? (x->healthy & node_all(x)) : 0;
		uint64_t fm = avail & ~x->used;
		if (up != in->up[n] || avail != in->avail[n]) {
			ctab_clear(&in->ucache); /* unit maxima over healthy nodes changed */
			in->hgen++;
		}
		bool odd = node_odd(in, n);
		if (in->up[n] && up) {
			sched__inc_move(in, n, sched__pc(in->freemask[n]), sched__pc(fm));
		} else {
			if (in->up[n])
				bucket(in, n, sched__pc(in->freemask[n]), -1);
			if (up)
				bucket(in, n, sched__pc(fm), +1);
		}
		in->up[n] = up;
		in->avail[n] = avail;
		in->whole_ok[n] = up && avail == full_mask(in, n);
		in->freemask[n] = fm;
		in->nodd += (size_t)node_odd(in, n) - (size_t)odd;
		in->nbad -= in->bad[n];
		in->bad[n] = node_bad(x);
		in->nbad += in->bad[n];
		in->fab[n] = x->fabric_down;
	}
	if ((ret = check_added(c)))
		return ret;
	/*
	 * With by_runs, the removed runs' GPUs are free (before anything is
	 * read back: a run added in this delta may hold them now). The
	 * previous cycle's kept starts (delta->by_runs then): each is found
	 * among the added runs, in order, with its allocation, or its nodes
	 * are read back from the snapshot; with by_runs so are the nodes of
	 * the other added runs.
	 */
	for (size_t i = 0; i < d->nremoved; i++) {
		int sl = hget(in, d->removed[i]);
		if (sl < 0)
			return 1;
		if (d->by_runs)
			release(in, s, in->slot[sl].alloc, in->slot[sl].nalloc, true);
		run_del(in, d->removed[i], !d->by_runs);
	}
	/*
	 * The added runs come in the order of the starts, a start missing
	 * where it ran and ended between the calls (by_runs): each added run
	 * is matched with the next kept start of its job. The missing starts'
	 * GPUs are given back first; then the added runs no start matches are
	 * read back, so a node both touched ends as the snapshot says.
	 */
	in->miss = sched__grow(in->miss, &in->cap_miss, d->nadded + 1, sizeof(*in->miss));
	size_t *miss = in->miss;
	size_t nmiss = 0, k = 0; /* the kept starts come with found false (sched__inc_end()) */
	for (size_t i = 0; i < d->nadded; i++) {
		const struct sched_run *r = &s->runs[d->added[i]];
		size_t f = k;
		while (f < in->nkept && in->kept[f].job_id != r->job_id)
			f++;
		if (f < in->nkept && r->nalloc == in->kept[f].nalloc &&
		    same_alloc(r->alloc, in->kept[f].alloc, r->nalloc)) {
			in->kept[f].found = true;
			k = f + 1;
		} else if (d->by_runs) {
			miss[nmiss++] = d->added[i];
		}
	}
	for (size_t i = 0; i < in->nkept; i++) {
		if (in->kept[i].found)
			continue;
		if (d->by_runs) /* else a change of its nodes is listed: what the snapshot says holds */
			release(in, s, in->kept[i].alloc, in->kept[i].nalloc, false);
		else
			reread(in, s, in->kept[i].alloc, in->kept[i].nalloc);
	}
	for (size_t i = 0; i < nmiss; i++)
		reread(in, s, s->runs[miss[i]].alloc, s->runs[miss[i]].nalloc);
	in->nkept = 0;
	sched__inc_flush(in);
	for (size_t i = 0; i < d->nadded; i++)
		if (!run_add(in, &s->runs[d->added[i]], true, s->now))
			return s->runs[d->added[i]].stopping ? 2 : 1;
	if (in->nlive != s->nruns)
		return 1;
	pass_predictions(in, s->now);
	return 0;
}

#define DIFF_ARR(f, n) (memcmp(in->f, x->f, (n) * sizeof(*in->f)) != 0 ? #f : NULL)

/*
 * settings.check_view: the view in after apply() against one built from
 * the snapshot, field by field, so a fast path that keeps a count wrong
 * fails the test that runs it even where no decision shows it. NULL: the
 * same (or the snapshot is one build() cannot describe).
 */
static const char *view_differs(struct cyc *c, const struct inc *in)
{
	struct inc *x = sched__xcalloc(1, sizeof(*x));
	const char *what = NULL;
	size_t nn = in->nn, rows = (size_t)in->nmodels + 1;
	if (build(c, x) != 0)
		goto out;
	if (x->nmodels != in->nmodels || x->total_gpus != in->total_gpus || x->nlive != in->nlive) {
		what = "models, GPUs or runs";
		goto out;
	}
	const char *d[] = { DIFF_ARR(up, nn), DIFF_ARR(bad, nn), DIFF_ARR(fab, nn), DIFF_ARR(whole_ok, nn),
			    DIFF_ARR(avail, nn), DIFF_ARR(freemask, nn), DIFF_ARR(nown, nn), DIFF_ARR(model, nn),
			    DIFF_ARR(cnt, rows * 65), DIFF_ARR(bm, rows * 65 * in->nw),
			    DIFF_ARR(own_g, in->ntenants + 1), DIFF_ARR(own_j, in->ntenants + 1) };
	for (size_t k = 0; k < sizeof(d) / sizeof(d[0]) && !what; k++)
		what = d[k];
	for (int l = 0; l < in->nlevels && !what; l++)
		if (memcmp(in->agg_free[l], x->agg_free[l], (2 * nn + 1) * sizeof(int)) ||
		    memcmp(in->agg_cnt[l], x->agg_cnt[l], (2 * nn + 1) * sizeof(int)))
			what = "agg_free or agg_cnt";
	if (!what && (x->nbad != in->nbad || x->nodd != in->nodd || x->nshare != in->nshare))
		what = x->nbad != in->nbad ? "nbad" : x->nodd != in->nodd ? "nodd" : "nshare";
out:
	sched__inc_free(x);
	return what;
}

#undef DIFF_ARR

int sched__inc_begin(struct cyc *c, int (*validate)(struct cyc *))
{
	const struct sched_snapshot *s = c->s;
	struct inc *in = c->inc;
	int ret, st = 1;
	c->inc = NULL;
	if (in && in->nn == s->nnodes && in->nlevels == s->settings.nlevels && in->ntenants == s->ntenants &&
	    in->nusers <= s->nusers && in->predict == s->settings.predict && in->now <= s->now) {
		if ((ret = validate_delta(c, in))) {
			sched__inc_free(in);
			return ret;
		}
		st = apply(c, in);
		if (st < 0) {
			sched__inc_free(in);
			return st;
		}
		const char *what = st == 0 && s->settings.check_view ? view_differs(c, in) : NULL;
		if (what) {
			snprintf(c->d->error, sizeof(c->d->error), "incremental view differs from the snapshot: %s", what);
			sched__inc_free(in);
			return SCHED_EINVAL;
		}
	}
	if (st == 1) {
		sched__inc_free(in);
		if ((ret = validate(c)))
			return ret;
		in = sched__xcalloc(1, sizeof(*in));
		st = build(c, in);
	}
	if (st != 0)
		goto out_full;
	in->nusers = s->nusers;
	in->now = s->now; /* planned ends are right for this time and later ones */
	in->by_runs = s->delta->by_runs;
	in->nkept = 0;
	c->inc = in;
	c->now = s->now;
	c->nn = s->nnodes;
	c->nmodels = in->nmodels;
	c->models = (const char **)in->models;
	c->model = in->model;
	for (int l = 0; l < in->nlevels; l++) {
		c->unit[l] = in->unit[l];
		c->agg_free[l] = in->agg_free[l];
		c->agg_cnt[l] = in->agg_cnt[l];
	}
	c->up = in->up;
	c->avail = in->avail;
	c->freemask = in->freemask;
	c->cnt = in->cnt;
	c->maxk = in->maxk;
	c->rhead = in->rhead;
	c->total_gpus = in->total_gpus;
	c->sc_cand = in->sc_cand;
	c->sc_mask = in->sc_mask;
	c->sc_last = in->sc_last;
	c->sc_time = in->sc_time;
	c->sc_alloc = in->sc_alloc;
	c->sc_alloc2 = in->sc_alloc2;
	ctab_clear(&in->fcache);
	c->fcache = &in->fcache;
	in->vr.on = false;
	in->vr_cand.on = false;
	if (++in->ne_gen == 0) {
		memset(in->neb, 0, (size_t)(in->nmodels + 1) * 65 * sizeof(*in->neb));
		in->ne_gen = 1;
	}
	c->ucache = &in->ucache;
	c->tgpus = sched__scratch(c, SCR_TGPUS, (s->ntenants + 1) * sizeof(int64_t), true);
	c->tjobs = sched__scratch(c, SCR_TJOBS, (s->ntenants + 1) * sizeof(int), true);
	for (size_t t = 0; t < s->ntenants; t++) {
		if (!in->own_j[t] && !in->own_g[t])
			continue;
		int u = (int)t; /* as setup()'s tenant_add(), once per tenant instead of once per run */
		for (int depth = 0; u >= 0 && depth <= (int)s->ntenants; depth++) {
			c->tgpus[u] += in->own_g[t];
			c->tjobs[u] += in->own_j[t];
			u = s->tenants[u].parent;
		}
	}
	c->victim = sched__scratch(c, SCR_VICTIM, (s->nruns + 1) * sizeof(bool), true);
	c->crel = in->crel;
	c->cap_crel = in->cap_crel;
	c->resv = in->resv;
	c->cap_resv = in->cap_resv;
	c->min_preempt_prio = in->npc ? in->pc[0].prio : INT_MAX;
	c->min_stopping_prio = INT_MAX;
	c->max_stopping_end = 0;
	return 0;
out_full:
	sched__inc_free(in);
	c->inc = NULL;
	return 0;
}

/* Back to the snapshot: undo this cycle's starts and reservations. */
void sched__inc_end(struct cyc *c)
{
	struct inc *in = c->inc;
	const struct sched_snapshot *s = c->s;
	for (size_t i = 0; i < in->ntouched; i++) {
		int n = in->touched[i];
		uint64_t fm = in->avail[n] & ~s->nodes[n].used;
		if (in->up[n])
			sched__inc_move(in, n, sched__pc(in->freemask[n]), sched__pc(fm));
		in->freemask[n] = fm;
		in->tflag[n] = false;
	}
	sched__inc_flush(in);
	in->ntouched = 0;
	in->nkept = 0;
	if (in->by_runs) { /* the starts stay: the next call finds them among its added runs */
		const struct sched_decisions *d = c->d;
		in->kept = sched__grow(in->kept, &in->cap_kept, d->nstarts + 1, sizeof(*in->kept));
		for (size_t i = 0; i < d->nstarts; i++)
			in->kept[in->nkept++] =
				(struct kept){ d->starts[i].job_id, d->starts[i].nalloc, d->starts[i].alloc, false };
	}
	for (size_t i = 0; i < c->nresv; i++)
		in->rhead[c->resv[i].node] = -1;
	in->vr.on = false;
	in->vr_cand.on = false;
	for (size_t i = 0; i < in->nvlist; i++)
		in->vslot[in->vlist[i]] = false;
	in->nvlist = 0;
	in->crel = c->crel; /* grown during the cycle, maybe */
	in->cap_crel = c->cap_crel;
	in->resv = c->resv;
	in->cap_resv = c->cap_resv;
}

void *sched__scratch(struct cyc *c, enum scratch id, size_t bytes, bool zero)
{
	struct inc *in = c->inc;
	if (!in)
		return zero ? sched__xcalloc(1, bytes) : sched__xmalloc(bytes);
	if (in->cap_scr[id] < bytes) {
		free(in->scr[id]);
		in->cap_scr[id] = bytes * 2;
		in->scr[id] = sched__xmalloc(in->cap_scr[id]);
	}
	if (zero)
		memset(in->scr[id], 0, bytes);
	return in->scr[id];
}

void sched__inc_victim(struct cyc *c, size_t ri)
{
	struct inc *in = c->inc;
	int k = hget(in, c->s->runs[ri].run_id);
	if (k < 0 || in->vslot[k])
		return;
	in->vslot[k] = true;
	in->vlist = sched__grow(in->vlist, &in->cap_vlist, in->nvlist + 1, sizeof(int));
	in->vlist[in->nvlist++] = k;
}

bool sched__rel_victim(const struct cyc *c, const struct rel *r)
{
	return c->inc ? c->inc->vslot[r->run] : c->victim[r->run];
}

static int64_t rel_time(const struct cyc *c, int64_t end)
{
	return end <= c->now ? c->now + 1 : end; /* as sched__run_end() */
}

/* The next release time of both sweeps: the first run in end order not
 * vacated this cycle (skipped past in *i), or the cycle's own next start's
 * release (crel[j]), whichever is sooner; INT64_MAX when none is left. */
static int64_t next_release(const struct cyc *c, const struct inc *in, size_t *i, size_t j)
{
	while (*i < in->nrk && in->vslot[in->rk[*i].slot])
		(*i)++;
	int64_t t = *i < in->nrk ? rel_time(c, in->rk[*i].t) : INT64_MAX;
	if (j < c->ncrel && c->crel[j].t < t)
		t = c->crel[j].t;
	return t;
}

/* c->rel as setup() builds it, for the general sweep (topology levels). */
void sched__inc_rel(struct cyc *c)
{
	struct inc *in = c->inc;
	c->rel = sched__xmalloc((in->nrk + 1) * sizeof(*c->rel));
	c->nrel = in->nrk;
	for (size_t i = 0; i < in->nrk; i++) {
		const struct islot *x = &in->slot[in->rk[i].slot];
		c->rel[i] = (struct rel){ rel_time(c, in->rk[i].t), -1, 0, in->rk[i].slot, (int)x->nalloc, x->alloc };
	}
}

void sched__run_gpus(struct cyc *c)
{
	const struct sched_snapshot *s = c->s;
	c->run_gpus = sched__xcalloc(s->nruns + 1, sizeof(int));
	for (size_t i = 0; i < s->nruns; i++)
		for (size_t k = 0; k < s->runs[i].nalloc; k++)
			c->run_gpus[i] += sched__pc(s->runs[i].alloc[k].gpus) * sched_alloc_len(&s->runs[i].alloc[k]);
}

/* ------------------------------------------------------------ fast placement */

static bool model_ok(const struct cyc *c, const struct req *q, int n)
{
	return q->model == -1 || (q->model >= 0 && c->model[n] == q->model);
}

static bool eligible(const struct cyc *c, const struct req *q, int n, uint64_t m)
{
	return c->up[n] && model_ok(c, q, n) && sched__pc(m & c->avail[n]) >= q->g;
}

static uint64_t blocked_at(const struct cyc *c, int n, int64_t t, int64_t rt)
{
	uint64_t m = 0;
	for (int r = c->rhead[n]; r >= 0; r = c->resv[r].next)
		if (c->resv[r].start < t + rt && t < c->resv[r].end)
			m |= c->resv[r].mask;
	return m;
}

static inline bool leaf_less(const struct cand *x, const struct cand *y)
{
	if (x->free != y->free)
		return x->free < y->free;
	if (x->key != y->key)
		return x->key < y->key;
	return x->node < y->node;
}

/*
 * Merge sort in sched__leaf_cmp() order on a scratch array (qsort
 * allocates and calls through a pointer, and this runs for every
 * placement). The order is total (the node breaks ties), so any correct
 * sort gives qsort's result.
 */
static void leaf_sort(struct cand *v, size_t n, struct cand *tmp)
{
	size_t run = 1;
	while (run < n && !leaf_less(&v[run], &v[run - 1]))
		run++;
	if (run == n)
		return; /* often: reserved nodes come in node order with one key */
	if (n <= 16) {
		for (size_t i = 1; i < n; i++) {
			struct cand x = v[i];
			size_t j = i;
			for (; j > 0 && leaf_less(&x, &v[j - 1]); j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
		return;
	}
	size_t h = n / 2;
	leaf_sort(v, h, tmp);
	leaf_sort(v + h, n - h, tmp);
	size_t i = 0, j = h, k = 0;
	while (i < h && j < n)
		tmp[k++] = leaf_less(&v[j], &v[i]) ? v[j++] : v[i++];
	while (i < h)
		tmp[k++] = v[i++];
	memcpy(v, tmp, k * sizeof(*v)); /* v[j..n) is in place already */
}

/* The chosen candidates as an allocation in node order (each node once): via a bitmap. */
static size_t emit_by_node(struct cyc *c, const struct cand *ch, size_t nc, int g, struct sched_alloc *out)
{
	struct inc *in = c->inc;
	if (nc == 1) {
		out[0] = (struct sched_alloc){ .node = ch[0].node, .gpus = sched__take_bits(ch[0].pref, ch[0].mask, g) };
		return 1;
	}
	bool sorted = true; /* a whole-node pick mostly is: then in place */
	for (size_t k = 1; k < nc; k++)
		sorted &= ch[k - 1].node < ch[k].node;
	if (sorted) {
		for (size_t k = 0; k < nc; k++)
			out[k] = (struct sched_alloc){ .node = ch[k].node, .gpus = sched__take_bits(ch[k].pref, ch[k].mask, g) };
		return nc;
	}
	uint64_t *bits = in->nodebits; /* zero between uses */
	for (size_t k = 0; k < nc; k++) {
		in->pos[ch[k].node] = (int)k;
		bits[ch[k].node / 64] |= (uint64_t)1 << (ch[k].node % 64);
	}
	size_t o = 0;
	for (size_t w = 0; o < nc; w++) {
		uint64_t b = bits[w];
		bits[w] = 0;
		while (b) {
			const struct cand *x = &ch[in->pos[w * 64 + (size_t)__builtin_ctzll(b)]];
			b &= b - 1;
			out[o++] = (struct sched_alloc){ .node = x->node, .gpus = sched__take_bits(x->pref, x->mask, g) };
		}
	}
	return nc;
}

/* The nodes of one bucket in index order, skipping marked ones. */
struct bucket_it {
	const uint64_t *w;
	size_t nw, i;
	uint64_t bits;
	const uint32_t *mark;
	uint32_t cur;
};

static int bucket_next(struct bucket_it *it)
{
	for (;;) {
		while (!it->bits) {
			if (it->i >= it->nw)
				return INT_MAX;
			it->bits = it->w[it->i++];
		}
		int n = (int)((it->i - 1) * 64) + __builtin_ctzll(it->bits);
		it->bits &= it->bits - 1;
		if (it->mark[n] != it->cur)
			return n;
	}
}

static bool ne_fails(const struct inc *in, const struct nebound *b, int64_t t1, size_t nmin)
{
	if (b->gen != in->ne_gen)
		return false;
	for (int i = 0; i < b->n; i++)
		if (b->t1[i] <= t1 && b->ne[i] < nmin)
			return true;
	return false;
}

static void ne_learn(const struct inc *in, struct nebound *b, int64_t t1, size_t ne)
{
	if (b->gen != in->ne_gen) {
		b->gen = in->ne_gen;
		b->n = 0;
	}
	for (int i = 0; i < b->n; i++) {
		if (b->t1[i] <= t1 && b->ne[i] <= ne)
			return; /* known already */
		if (b->t1[i] >= t1 && b->ne[i] >= ne) {
			b->t1[i] = t1; /* the new bound covers this one */
			b->ne[i] = ne;
			return;
		}
	}
	int i = b->n < SCHED_NE_SLOTS ? b->n++ : (int)(ne % SCHED_NE_SLOTS);
	b->t1[i] = t1;
	b->ne[i] = ne;
}

/*
 * sched__place_flat()'s choice when every node of the row has the g GPUs
 * asked for and nothing is reserved (or place_held()'s, from node `from`):
 * the leaf order is then the free nodes of bucket g in node order, each
 * with all its GPUs, so the first `want` of them are taken a bitmap word at
 * a time and written as ranges of nodes (settings.ranged_allocs), the same
 * nodes and GPUs the candidate merge and emit_by_node() would give. Returns
 * the entries.
 */
static size_t whole_ranges(struct cyc *c, int row, int g, int from, size_t want, struct sched_alloc *out)
{
	struct inc *in = c->inc;
	const uint64_t *w = &in->bm[((size_t)row * 65 + (size_t)g) * in->nw];
	uint64_t full = g >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << g) - 1;
	size_t no = 0, left = want;
	for (size_t i = (size_t)from / 64; i < in->nw && left; i++) {
		uint64_t bits = w[i];
		if (i == (size_t)from / 64 && from % 64)
			bits &= ~(((uint64_t)1 << (from % 64)) - 1);
		while (bits && left) {
			int b = __builtin_ctzll(bits);
			uint64_t run = bits >> b; /* the set bits from b on: a run of ~run's trailing zeros */
			int len = ~run ? __builtin_ctzll(~run) : 64 - b;
			if ((size_t)len > left)
				len = (int)left;
			int n = (int)(i * 64) + b;
			if (no && out[no - 1].node + out[no - 1].count == n)
				out[no - 1].count += len; /* a range across words */
			else
				out[no++] = (struct sched_alloc){ .node = n, .count = len, .gpus = full };
			left -= (size_t)len;
			bits = b + len >= 64 ? 0 : bits & (~(uint64_t)0 << (b + len));
		}
	}
	if (left)
		abort(); /* the buckets disagree with the counts: a bug, never a wrong placement */
	return no;
}

/*
 * sched__place_flat() now, for the shape of the reservation held by counts
 * (every node of the row has g GPUs): a candidate is a node of bucket
 * (row, g). Its reserved nodes come first when the run ends by the
 * reservation's start (time key), and they are the lowest in node order:
 * so the first `want` nodes of the bucket. A run that overlaps it may not
 * use them: the first `want` above index b.
 */
static size_t place_held(struct cyc *c, const struct req *q, int64_t t1, struct nebound *nb, struct sched_alloc *out)
{
	struct inc *in = c->inc;
	const struct vres *v = &in->vr;
	const uint64_t *w = &in->bm[((size_t)v->row * 65 + (size_t)v->g) * in->nw];
	size_t total = (size_t)sched__nodes_ge(c, q->model, q->g), held = 0;
	int from = 0;
	if (v->start < t1 && v->b >= 0) {
		size_t last = (size_t)v->b / 64;
		for (size_t i = 0; i < last; i++)
			held += (size_t)sched__pc(w[i]);
		uint64_t lo = (size_t)v->b % 64 == 63 ? ~(uint64_t)0 : ((uint64_t)1 << ((size_t)v->b % 64 + 1)) - 1;
		held += (size_t)sched__pc(w[last] & lo);
		from = v->b + 1;
	}
	size_t ne = total - held;
	ne_learn(in, nb, t1, ne);
	if (ne < (size_t)q->nmin)
		return 0;
	size_t want = q->nmax == 1 ? 1 : (ne < (size_t)q->nmax ? ne : (size_t)q->nmax);
	if (in->hom[v->row] == v->g && c->s->settings.ranged_allocs)
		return whole_ranges(c, v->row, v->g, from, want, out);
	size_t o = 0;
	for (size_t i = (size_t)from / 64; i < in->nw && o < want; i++) {
		uint64_t bits = w[i];
		if (i == (size_t)from / 64 && from % 64)
			bits &= ~(((uint64_t)1 << (from % 64)) - 1);
		for (; bits && o < want; bits &= bits - 1) {
			int n = (int)(i * 64) + __builtin_ctzll(bits);
			out[o++] = (struct sched_alloc){ .node = n, .gpus = c->freemask[n] & c->avail[n] }; /* all g of them */
		}
	}
	if (o != want)
		abort(); /* the buckets disagree with the counts: a bug, never a wrong placement */
	return o;
}

static size_t whole_pick(struct cyc *c, int model, int g, size_t need, size_t nseg, const uint64_t *w, size_t nw,
                         struct cand *ch, int *last_free);

bool sched__vres_take(struct cyc *c, const struct sched_alloc *a, size_t na, int64_t start, int64_t end)
{
	struct inc *in = c->inc;
	struct vres *v = &in->vr_cand;
	if (!c->flat || !v->on || in->vr.on || c->nresv || start != v->start || na != v->nalloc ||
	    (v->alloc ? !na || a[0].node != v->alloc[0].node : na != 0))
		return false;
	in->vr = *v;
	in->vr.end = end;
	in->vr.alloc = v->alloc ? a : NULL; /* unnamed: a is the empty copy */
	v->on = false;
	return true;
}

void sched__resv_name(struct cyc *c)
{
	struct inc *in = c->inc;
	if (!in || !in->vr.on)
		return;
	struct vres *v = &in->vr;
	v->on = false;
	const struct sched_alloc *a = v->alloc;
	size_t na = v->nalloc;
	if (!a) { /* held without names: the same pick again, on the free nodes it took then */
		int last;
		size_t nc = whole_pick(c, v->model, v->g, v->need, v->nseg, in->vr_bits, v->b >= 0 ? (size_t)v->b / 64 + 1 : 0,
		                       in->sc_pick, &last);
		if (nc != v->need)
			abort(); /* the view changed under a held reservation: a bug */
		in->vr_alloc = sched__grow(in->vr_alloc, &in->cap_vr_alloc, nc + 1, sizeof(*in->vr_alloc));
		na = emit_by_node(c, in->sc_pick, nc, v->g, in->vr_alloc);
		a = in->vr_alloc;
	}
	for (size_t k = 0; k < na; k++)
		sched__add_resv(c, a[k].node, a[k].gpus, v->start, v->end);
}

/*
 * sched__place() without topology levels, on this cycle's free GPUs
 * (PLACE_NOW) or on the sweep's (PLACE_LATER). The candidates that need a
 * look of their own ("special": reserved nodes, and for PLACE_LATER the
 * nodes the sweep released GPUs on) are built as sched__place() builds them
 * and sorted; every other candidate has key INT64_MAX (PLACE_NOW) or -now
 * (PLACE_LATER) and its free GPUs are its free count, so the buckets list
 * them in order. The merge yields the leaf order, whose first `want` are
 * what pick() and place_one() choose.
 */
size_t sched__place_flat(struct cyc *c, const struct req *q, int64_t t0, int64_t t1, enum place_mode mode,
                         struct sched_alloc *out)
{
	struct inc *in = c->inc;
	struct cand *sp = c->sc_cand;
	size_t nsp = 0, counted = 0;
	uint32_t hs[SCHED_MAX_GPUS + 1]; /* special candidates by usable GPUs */
	uint32_t hb[SCHED_MAX_GPUS + 1]; /* special nodes the buckets hold, by free count */
	if (q->model == -2 || q->nmax < 1)
		return 0;
	int row = q->model < 0 ? c->nmodels : q->model;
	if (q->g > c->maxk[row])
		return 0; /* no node of the model is that big */
	struct nebound *nb = mode == PLACE_NOW && t0 == c->now ? &in->neb[row * 65 + q->g] : NULL;
	if (nb && ne_fails(in, nb, t1, (size_t)q->nmin))
		return 0;
	in->vr_cand.on = false; /* out (the sweep's placement, maybe) is overwritten */
	if (in->vr.on) {
		if (nb && row == in->vr.row && q->g == in->vr.g)
			return place_held(c, q, t1, nb, out);
		sched__resv_name(c);
	}
	memset(hs, 0, (size_t)(c->maxk[row] + 1) * sizeof(*hs));
	memset(hb, 0, (size_t)(c->maxk[row] + 1) * sizeof(*hb));
	if (++in->mk_cur == 0) {
		memset(in->mk_stamp, 0, in->nn * sizeof(uint32_t));
		in->mk_cur = 1;
	}
	size_t nlist = mode == PLACE_LATER ? in->nsw : c->nresv;
	for (size_t i = 0; i < nlist; i++) {
		int n = mode == PLACE_LATER ? in->sw_list[i] : c->resv[i].node;
		if (in->mk_stamp[n] == in->mk_cur)
			continue;
		in->mk_stamp[n] = in->mk_cur;
		if (!c->up[n] || !model_ok(c, q, n))
			continue;
		int k = sched__pc(c->freemask[n]);
		if (k >= q->g) { /* in a bucket nodes_ge() counts */
			counted++;
			hb[k]++;
		}
		uint64_t m = (mode == PLACE_LATER ? in->sw_rm[n] : c->freemask[n]) & c->avail[n];
		if (sched__pc(m) < q->g)
			continue;
		int64_t key;
		uint64_t pref;
		m = sched__unreserved(c, n, m, t0, t1, mode, &key, &pref);
		int f = sched__pc(m);
		if (f < q->g)
			continue;
		if (mode == PLACE_LATER) {
			key = -in->sw_time[n];
			pref = in->sw_last[n];
		}
		sp[nsp++] = (struct cand){ n, f, key, m, pref };
		hs[f]++;
	}
	size_t plain = (size_t)sched__nodes_ge(c, q->model, q->g) - counted;
	size_t ne = nsp + plain;
	if (nb)
		ne_learn(in, nb, t1, ne);
	if (ne < (size_t)q->nmin)
		return 0;
	size_t want = q->nmax == 1 ? 1 : (ne < (size_t)q->nmax ? ne : (size_t)q->nmax);
	if (mode == PLACE_NOW && !nsp && !nlist && in->hom[row] == q->g && c->s->settings.ranged_allocs)
		return whole_ranges(c, row, q->g, 0, want, out);
	/*
	 * F: the usable GPU count of the last candidate taken in leaf order.
	 * Every candidate below F is taken whatever its key; at F the first
	 * (want - below) in (key, node) order.
	 */
	size_t below = 0;
	int F = q->g;
	for (; F < c->maxk[row]; F++) {
		size_t here = hs[F] + (size_t)c->cnt[row * 65 + F] - hb[F];
		if (below + here >= want)
			break;
		below += here;
	}
	int64_t K = mode == PLACE_LATER ? -c->now : INT64_MAX;
	struct cand *ch = in->sc_pick;
	size_t nc = 0, nf = 0;
	for (size_t i = 0; i < nsp; i++) {
		if (sp[i].free < F)
			ch[nc++] = sp[i];
		else if (sp[i].free == F)
			sp[nf++] = sp[i];
	}
	for (int f = q->g; f <= F; f++) {
		if ((size_t)c->cnt[row * 65 + f] == hb[f])
			continue;
		struct bucket_it it = { &in->bm[((size_t)row * 65 + (size_t)f) * in->nw], in->nw, 0, 0, in->mk_stamp,
		                        in->mk_cur };
		int pn = bucket_next(&it);
		if (f < F) {
			for (; pn != INT_MAX; pn = bucket_next(&it)) {
				uint64_t fm = c->freemask[pn];
				ch[nc++] = (struct cand){ pn, f, K, fm, mode == PLACE_LATER ? fm : 0 };
			}
			continue;
		}
		if (nf > 1)
			leaf_sort(sp, nf, in->sc_tmp);
		size_t i = 0;
		while (nc < want && i < nf && sp[i].key < K)
			ch[nc++] = sp[i++];
		while (nc < want) {
			bool sk = i < nf && sp[i].key == K;
			if (!sk && pn == INT_MAX)
				break;
			if (sk && sp[i].node < pn) {
				ch[nc++] = sp[i++];
			} else {
				uint64_t fm = c->freemask[pn];
				ch[nc++] = (struct cand){ pn, f, K, fm, mode == PLACE_LATER ? fm : 0 };
				pn = bucket_next(&it);
			}
		}
		nf -= i;
		sp += i; /* what is left: keys above K */
	}
	if ((size_t)c->cnt[row * 65 + F] == hb[F] && nf > 1)
		leaf_sort(sp, nf, in->sc_tmp);
	for (size_t i = 0; nc < want && i < nf; i++)
		ch[nc++] = sp[i];
	if (nc != want)
		abort(); /* the buckets disagree with the counts: a bug, never a wrong placement */
	return emit_by_node(c, ch, nc, q->g, out);
}

/* ------------------------------------------------------------ fast sweep */

static void sw_get(struct cyc *c, int n, int64_t rt)
{
	struct inc *in = c->inc;
	if (in->sw_stamp[n] == in->sw_cur)
		return;
	in->sw_stamp[n] = in->sw_cur;
	in->sw_rm[n] = c->freemask[n];
	in->sw_last[n] = c->freemask[n];
	in->sw_time[n] = c->now;
	in->sw_blk[n] = c->rhead[n] >= 0 ? blocked_at(c, n, c->now, rt) : 0;
	in->sw_list[in->nsw++] = n;
}

struct bev {
	int64_t t;
	int node;
};

static int bev_cmp(const void *a, const void *b)
{
	const struct bev *x = a, *y = b;
	if (x->t != y->t)
		return (x->t > y->t) - (x->t < y->t);
	return (x->node > y->node) - (x->node < y->node);
}

/* ------------------------------------------------------------ whole-node sweep */

static int wnode_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return (x->node > y->node) - (x->node < y->node);
}

/* Nodes run x frees that a whole-node request can use, or -1 when it holds part of a node. */
static int whole_count(struct inc *in, struct islot *x)
{
	if (!x->whole)
		return -1;
	if (x->wgen != in->hgen) {
		x->wcnt = 0;
		for (size_t a = 0, len, e; a < x->nalloc; a += e) { /* by runs of parts: consecutive nodes, one tight loop */
			e = sched__part_run(x->alloc, a, x->nalloc, &len);
			int n0 = x->alloc[a].node;
			if (x->alloc[a].gpus) {
				const bool *restrict ok = &in->whole_ok[n0];
				int cnt = 0;
				for (size_t k = 0; k < len; k++)
					cnt += ok[k];
				x->wcnt += cnt;
			}
		}
		x->wgen = in->hgen;
	}
	return x->wcnt;
}

/* Part (n, m) of a release seen by the whole-node sweep: false when it shares its node. */
static bool wpart(struct cyc *c, const struct req *q, int n, uint64_t m, size_t *ec)
{
	struct inc *in = c->inc;
	uint64_t full = in->gcount[n] >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << in->gcount[n]) - 1;
	if (!m)
		return true; /* the generic sweep ignores it too: nothing to release */
	if (m != full || c->freemask[n] || in->sw_stamp[n] == in->sw_cur)
		return false; /* shared, or free now although released later (a snapshot at odds with itself) */
	in->sw_stamp[n] = in->sw_cur;
	/* nothing free and m all of it: the node's usable GPUs are avail, all of them when whole_ok */
	if (c->up[n] && model_ok(c, q, n) && (in->whole_ok[n] ? in->gcount[n] : sched__pc(c->avail[n])) >= q->g)
		(*ec)++;
	return true;
}

/*
 * wpart() for each node of n0..n0+len-1 (one entry or run of parts, mask m):
 * when every node passes wpart()'s checks (the same GPU count, nothing
 * free, not seen yet in this sweep), two tight passes mark and count them;
 * else node by node.
 */
static bool wrange(struct cyc *c, const struct req *q, int n0, int len, uint64_t m, size_t *ec)
{
	struct inc *in = c->inc;
	if (!m)
		return true;
	if (len >= 4 && m == full_mask(in, n0)) {
		const int gc = in->gcount[n0];
		size_t l = (size_t)len;
		uint32_t *restrict st = &in->sw_stamp[n0];
		if (!diff_int(&in->gcount[n0], l, gc) && !diff_u64(&c->freemask[n0], l, 0) && !any_u32(st, l, in->sw_cur)) {
			for (size_t k = 0; k < l; k++)
				st[k] = in->sw_cur;
			if (gc >= q->g && !diff_bool(&in->whole_ok[n0], l, true) &&
			    (q->model == -1 || (q->model >= 0 && !diff_int(&c->model[n0], l, q->model)))) {
				*ec += l; /* whole_ok: UP, every GPU usable */
				return true;
			}
			size_t cnt = 0;
			for (int n = n0; n < n0 + len; n++)
				cnt += c->up[n] && model_ok(c, q, n) && (in->whole_ok[n] ? gc : sched__pc(c->avail[n])) >= q->g;
			*ec += cnt;
			return true;
		}
	}
	for (int n = n0; n < n0 + len; n++)
		if (!wpart(c, q, n, m, ec))
			return false;
	return true;
}

/* A released part as the generic placement would see it at the planned time. */
static bool wcand(const struct cyc *c, int model, int g, int n, uint64_t m, struct cand *out)
{
	uint64_t u = (c->freemask[n] | m) & c->avail[n];
	if (!m || !c->up[n] || !(model == -1 || (model >= 0 && c->model[n] == model)) || sched__pc(u) < g)
		return false;
	*out = (struct cand){ n, sched__pc(u), 0, u, m };
	return true;
}

/*
 * The leaf order at the planned time of a whole-node sweep, its first
 * `need` into ch: the latest releases first (time key), node order within
 * one time, then the nodes free now (bits w[0..nw), node order).
 */
static size_t whole_pick(struct cyc *c, int model, int g, size_t need, size_t nseg, const uint64_t *w, size_t nw,
                         struct cand *ch, int *last_free)
{
	struct inc *in = c->inc;
	struct cand *tmp = in->sc_tmp;
	size_t nc = 0;
	for (size_t e = nseg; e > 0 && nc < need;) {
		size_t b = e;
		while (b > 0 && in->wseg[b - 1].t == in->wseg[e - 1].t)
			b--;
		size_t nt = 0;
		bool sorted = true;
		for (size_t x = b; x < e; x++) {
			const struct wseg *v = &in->wseg[x];
			for (int a = 0; a < v->n; a++)
				for (int o = 0; o < (v->a ? sched_alloc_len(&v->a[a]) : 1); o++)
					if (wcand(c, model, g, v->a ? v->a[a].node + o : v->node, v->a ? v->a[a].gpus : v->mask,
					          &tmp[nt])) {
						sorted = sorted && (nt == 0 || tmp[nt - 1].node < tmp[nt].node);
						nt++;
					}
		}
		if (nt > need - nc && !sorted)
			qsort(tmp, nt, sizeof(*tmp), wnode_cmp);
		for (size_t x = 0; x < nt && nc < need; x++)
			ch[nc++] = tmp[x];
		e = b;
	}
	*last_free = -1;
	for (size_t i = 0; i < nw && nc < need; i++)
		for (uint64_t bits = w[i]; bits && nc < need; bits &= bits - 1) {
			int n = (int)(i * 64) + __builtin_ctzll(bits);
			uint64_t fm = in->gcount[n] >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << in->gcount[n]) - 1;
			ch[nc++] = (struct cand){ n, g, -c->now, fm, fm }; /* free now with all its GPUs */
			*last_free = n;
		}
	return nc;
}

/*
 * sched__earliest_flat() when every node of the request's row has the GPU
 * count it asks for, no reservation is made yet in this cycle, and every
 * release swept holds its nodes whole (1-GPU nodes; whole-node gangs): a
 * node is then free or not, so the sweep counts nodes per release instead
 * of keeping a state per node, and the placement at the planned time is
 * the leaf order without a sort (whole_pick()). Returns false when a
 * release shares a node (then the caller sweeps node by node); else *found
 * and out as the generic sweep would set them, or with
 * settings.unnamed_reservations no nodes (*na 0): the caller's reservation
 * is then held by counts (sched__resv_commit()) and named only if a path
 * needs its nodes.
 */
static bool earliest_whole(struct cyc *c, const struct req *q, int64_t rt, struct sched_alloc *out, size_t *na,
                           int64_t *found)
{
	struct inc *in = c->inc;
	int row = q->model < 0 ? c->nmodels : q->model;
	(void)rt;
	if (c->nresv || q->g < 1 || in->hom[row] != q->g || q->nmin != q->nmax || in->nsplit)
		return false; /* with a run on part of a node the sweep would only find that out half-way */
	if (++in->sw_cur == 0) {
		memset(in->sw_stamp, 0, in->nn * sizeof(uint32_t));
		in->sw_cur = 1;
	}
	size_t need = (size_t)q->nmin;
	size_t ec0 = (size_t)sched__nodes_ge(c, q->model, q->g), ec = ec0;
	/* Runs count by their summary when no node is shared and every held node is busy. */
	bool by_run = !in->nshare && !in->nodd && (q->model == -1 || c->nmodels == 1);
	size_t nseg = 0;
	size_t i = 0, j = 0;
	int64_t t = c->now;
	*found = SCHED_NEVER;
	while (ec < need) {
		t = next_release(c, in, &i, j);
		if (t == INT64_MAX)
			return true; /* never */
		for (;;) {
			struct wseg w;
			if (i < in->nrk && rel_time(c, in->rk[i].t) == t) {
				int k = in->rk[i++].slot;
				if (in->vslot[k])
					continue;
				w = (struct wseg){ t, in->slot[k].alloc, (int)in->slot[k].nalloc, -1, 0 };
				int cnt = by_run ? whole_count(in, &in->slot[k]) : -1;
				if (cnt >= 0) { /* no part to look at: it frees whole nodes nobody else holds */
					ec += (size_t)cnt;
					in->wseg = sched__grow(in->wseg, &in->cap_wseg, nseg + 1, sizeof(*in->wseg));
					in->wseg[nseg++] = w;
					continue;
				}
			} else if (j < c->ncrel && c->crel[j].t == t) {
				const struct rel *r = &c->crel[j++];
				w = (struct wseg){ t, r->node >= 0 ? NULL : r->alloc, r->node >= 0 ? 1 : r->nalloc, r->node,
				                   r->mask };
			} else {
				break;
			}
			for (int a = 0; a < w.n; a++)
				if (!wrange(c, q, w.a ? w.a[a].node : w.node, w.a ? sched_alloc_len(&w.a[a]) : 1,
				            w.a ? w.a[a].gpus : w.mask, &ec))
					return false;
			in->wseg = sched__grow(in->wseg, &in->cap_wseg, nseg + 1, sizeof(*in->wseg));
			in->wseg[nseg++] = w;
		}
	}
	const uint64_t *bw = &in->bm[((size_t)row * 65 + (size_t)q->g) * in->nw];
	int b = -1; /* the last node free now that the placement takes */
	*found = t;
	in->vr_cand = (struct vres){ true, row, q->g, -1, t, 0, 0, NULL, q->model, need, nseg };
	/* a reservation holding quota counts its nodes by model (sched_quota.c) */
	if (c->s->settings.unnamed_reservations && !c->quota) {
		size_t p = need > ec - ec0 ? need - (ec - ec0) : 0; /* nodes free now it takes */
		size_t wi = 0;
		for (; p && wi < in->nw; wi++) {
			size_t k = (size_t)sched__pc(bw[wi]);
			if (k < p) {
				p -= k;
				continue;
			}
			uint64_t bits = bw[wi];
			for (; p > 1; p--)
				bits &= bits - 1;
			b = (int)(wi * 64) + __builtin_ctzll(bits);
			p = 0;
		}
		if (p)
			abort(); /* the counts disagree with the buckets: a bug, never a wrong placement */
		if (b >= 0) { /* the free nodes it takes, for sched__resv_name() */
			size_t nw = (size_t)b / 64 + 1;
			in->vr_bits = sched__grow(in->vr_bits, &in->cap_vr_bits, nw, sizeof(uint64_t));
			memcpy(in->vr_bits, bw, nw * sizeof(uint64_t));
			if (b % 64 != 63)
				in->vr_bits[nw - 1] &= ((uint64_t)1 << (b % 64 + 1)) - 1;
		}
		in->vr_cand.b = b;
		*na = 0;
		return true;
	}
	struct cand *ch = in->sc_pick;
	size_t nc = whole_pick(c, q->model, q->g, need, nseg, bw, in->nw, ch, &b);
	if (nc != need)
		abort(); /* the counts disagree with the buckets: a bug, never a wrong placement */
	*na = emit_by_node(c, ch, nc, q->g, out);
	in->vr_cand.b = b;
	in->vr_cand.nalloc = *na;
	in->vr_cand.alloc = out;
	return true;
}

/*
 * sched__earliest() without topology levels: the same sweep over the same
 * events, but a node's state is set up when an event first touches it and
 * the count of eligible nodes starts from the buckets, so its cost follows
 * the events swept, not the cluster size.
 */
int64_t sched__earliest_flat(struct cyc *c, const struct req *q, int64_t rt, struct sched_alloc *out, size_t *na)
{
	struct inc *in = c->inc;
	int64_t now = c->now;
	*na = 0;
	if (q->model == -2)
		return SCHED_NEVER;
	int64_t found = SCHED_NEVER;
	in->vr_cand.on = false;
	sched__resv_name(c);
	if (earliest_whole(c, q, rt, out, na, &found))
		return found;
	if (++in->sw_cur == 0) {
		memset(in->sw_stamp, 0, in->nn * sizeof(uint32_t));
		in->sw_cur = 1;
	}
	in->nsw = 0;
	struct bev *bev = c->nresv ? sched__xmalloc(2 * c->nresv * sizeof(*bev)) : NULL;
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
	if (nbev > 1)
		qsort(bev, nbev, sizeof(*bev), bev_cmp);
	size_t ec = (size_t)sched__nodes_ge(c, q->model, q->g);
	for (size_t i = 0; i < c->nresv; i++) {
		int n = c->resv[i].node;
		if (in->sw_stamp[n] == in->sw_cur)
			continue;
		bool counted = c->up[n] && model_ok(c, q, n) && sched__pc(c->freemask[n]) >= q->g;
		sw_get(c, n, rt);
		bool el = eligible(c, q, n, in->sw_rm[n] & ~in->sw_blk[n]);
		ec = ec - counted + el;
	}
	size_t i = 0, j = 0, k = 0;
	int64_t t = now;
	for (;;) {
		if (ec >= (size_t)q->nmin) {
			*na = sched__place_flat(c, q, t, t + rt, PLACE_LATER, out);
			if (*na) {
				found = t;
				break;
			}
		}
		t = next_release(c, in, &i, j);
		if (k < nbev && bev[k].t < t)
			t = bev[k].t;
		if (t == INT64_MAX)
			break;
		for (;;) {
			int cnt;
			const struct sched_alloc *alloc = NULL;
			int node = -1;
			uint64_t mask = 0;
			if (i < in->nrk && rel_time(c, in->rk[i].t) == t) {
				const struct islot *x = &in->slot[in->rk[i++].slot];
				if (in->vslot[in->rk[i - 1].slot])
					continue;
				cnt = (int)x->nalloc;
				alloc = x->alloc;
			} else if (j < c->ncrel && c->crel[j].t == t) {
				const struct rel *r = &c->crel[j++];
				cnt = r->node >= 0 ? 1 : r->nalloc;
				alloc = r->node >= 0 ? NULL : r->alloc;
				node = r->node;
				mask = r->mask;
			} else if (k < nbev && bev[k].t == t) {
				int n = bev[k++].node;
				sw_get(c, n, rt);
				bool was = eligible(c, q, n, in->sw_rm[n] & ~in->sw_blk[n]);
				in->sw_blk[n] = blocked_at(c, n, t, rt);
				bool is = eligible(c, q, n, in->sw_rm[n] & ~in->sw_blk[n]);
				if (was != is)
					ec = is ? ec + 1 : ec - 1;
				continue;
			} else {
				break;
			}
			for (int a = 0; a < cnt; a++) {
				uint64_t m = alloc ? alloc[a].gpus : mask;
				for (int e = 0; e < (alloc ? sched_alloc_len(&alloc[a]) : 1); e++) {
					int n = alloc ? alloc[a].node + e : node;
					sw_get(c, n, rt);
					bool was = eligible(c, q, n, in->sw_rm[n] & ~in->sw_blk[n]);
					in->sw_rm[n] |= m & c->avail[n];
					if (in->sw_time[n] != t) {
						in->sw_time[n] = t;
						in->sw_last[n] = 0;
					}
					in->sw_last[n] |= m;
					bool is = eligible(c, q, n, in->sw_rm[n] & ~in->sw_blk[n]);
					if (was != is)
						ec = is ? ec + 1 : ec - 1;
				}
			}
		}
	}
	free(bev);
	return found;
}
