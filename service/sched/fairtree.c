/*
 * fairtree.c - Fair Tree fair share; contract and definitions in fairtree.h.
 *
 * Pure: libc and libm only, no globals, no I/O. The depth-first walk keeps an
 * explicit stack so a tree of any depth cannot overflow the C stack.
 */
#include "fairtree.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One entry of a sorted sibling list (or of tied tenants' merged children). */
struct ft_key {
	double lfs;
	const char *name;
	size_t idx;
	bool is_user;
};

/* A list being walked: keys[start, start + len), next to look at is pos. */
struct ft_frame {
	size_t start, len, pos;
	double prev_lfs;  /* level_fs of the sibling just before pos */
	bool have_prev;
	bool tenant_tied; /* the tenant(s) owning this list tied with their predecessor */
};

/* Scratch memory aborts on failure: callers of the core never check for it. */
static void *ft_alloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size);
	if (!p)
		abort();
	return p;
}

static int key_cmp(const void *pa, const void *pb)
{
	const struct ft_key *a = pa, *b = pb;
	int c;

	if (a->lfs != b->lfs)
		return a->lfs > b->lfs ? -1 : 1;
	if (a->is_user != b->is_user)
		return a->is_user ? -1 : 1;
	c = strcmp(a->name ? a->name : "", b->name ? b->name : "");
	if (c)
		return c;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/*
 * Merge sort in key_cmp() order (qsort copies through a pointer and a
 * callback; this sort runs every scheduling cycle over every association).
 * key_cmp() is a total order (the index breaks ties), so the result is
 * qsort's.
 */
static void key_sort(struct ft_key *v, size_t n, struct ft_key *tmp)
{
	if (n <= 12) {
		for (size_t i = 1; i < n; i++) {
			struct ft_key x = v[i];
			size_t j = i;
			for (; j > 0 && key_cmp(&x, &v[j - 1]) < 0; j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
		return;
	}
	size_t h = n / 2, i = 0, j = h, k = 0;
	key_sort(v, h, tmp);
	key_sort(v + h, n - h, tmp);
	if (key_cmp(&v[h - 1], &v[h]) < 0)
		return; /* already in order: common when few usages changed */
	while (i < h && j < n)
		tmp[k++] = key_cmp(&v[j], &v[i]) < 0 ? v[j++] : v[i++];
	while (i < h)
		tmp[k++] = v[i++];
	memcpy(v, tmp, k * sizeof(*v)); /* v[j..n) is in place already */
}

static bool value_ok(double v)
{
	return isfinite(v) && v >= 0;
}

/*
 * Level FS as one correctly rounded division of exact-ish products (see the
 * header: equal rationals from integer inputs give identical doubles). Falls
 * back to S/U only when a product leaves the finite range.
 */
static double level_fs(double shares, double sum_shares, double usage, double sum_usage,
		       double s_norm, double u_norm)
{
	double num, den, v;

	if (shares == 0 || sum_shares == 0 || s_norm == 0)
		return 0;
	if (usage == 0 || sum_usage == 0 || u_norm == 0)
		return INFINITY;
	num = shares * sum_usage;
	den = usage * sum_shares;
	if (isfinite(num) && isfinite(den) && den > 0 && num > 0)
		v = num / den;
	else
		v = s_norm / u_norm;
	return isnan(v) ? 0 : v;
}

static void push_key(struct ft_key *keys, size_t *top, const struct fairtree_assoc *a, size_t i)
{
	keys[*top] = (struct ft_key){ .lfs = a[i].level_fs, .name = a[i].name, .idx = i,
				      .is_user = a[i].is_user };
	(*top)++;
}

int fairtree_compute(struct fairtree_assoc *a, size_t n)
{
	size_t *child_start = NULL, *child = NULL, *fill = NULL, *bfs = NULL;
	double *sub = NULL, *sum_s = NULL, *sum_u = NULL;
	struct ft_key *keys = NULL, *ktmp = NULL;
	struct ft_frame *frames = NULL;
	size_t nframes = 0, top = 0, head, tail, users = 0, rank, rnt, walk = 0;
	int ret = -1;

	if (n == 0 || n > (size_t)INT32_MAX || a[0].parent != -1 || a[0].is_user)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!value_ok(a[i].shares) || !value_ok(a[i].usage))
			return -1;
		if (i == 0)
			continue;
		if (a[i].parent < 0 || (size_t)a[i].parent >= n || a[a[i].parent].is_user)
			return -1;
		if (a[i].is_user)
			users++;
	}

	/* Children of each tenant, in index order (CSR). */
	child_start = ft_alloc(n + 1, sizeof(*child_start));
	child = ft_alloc(n, sizeof(*child));
	fill = ft_alloc(n, sizeof(*fill));
	for (size_t i = 1; i < n; i++)
		child_start[a[i].parent + 1]++;
	for (size_t i = 0; i < n; i++)
		child_start[i + 1] += child_start[i];
	for (size_t i = 1; i < n; i++) {
		size_t p = (size_t)a[i].parent;
		child[child_start[p] + fill[p]++] = i;
	}

	/* Breadth-first from the root: whatever it misses sits on a cycle. */
	bfs = ft_alloc(n, sizeof(*bfs));
	head = 0;
	tail = 0;
	bfs[tail++] = 0;
	while (head < tail) {
		size_t p = bfs[head++];
		for (size_t k = child_start[p]; k < child_start[p + 1]; k++)
			bfs[tail++] = child[k];
	}
	if (tail != n)
		goto out;

	/* Subtree usage (children after parents in bfs, so walk it backwards)
	 * and per-parent sibling sums, each summed in a fixed order. */
	sub = ft_alloc(n, sizeof(*sub));
	sum_s = ft_alloc(n, sizeof(*sum_s));
	sum_u = ft_alloc(n, sizeof(*sum_u));
	for (size_t i = 0; i < n; i++)
		sub[i] = a[i].usage;
	for (size_t k = n; k-- > 1;)
		sub[a[bfs[k]].parent] += sub[bfs[k]];
	for (size_t p = 0; p < n; p++) {
		for (size_t k = child_start[p]; k < child_start[p + 1]; k++) {
			sum_s[p] += a[child[k]].shares;
			sum_u[p] += sub[child[k]];
		}
		if (!isfinite(sum_s[p]) || !isfinite(sum_u[p]))
			goto out;
	}

	a[0].shares_norm = a[0].usage_norm = a[0].level_fs = 1;
	a[0].fairshare = 0;
	a[0].rank = 0;
	a[0].walk_pos = walk++;
	for (size_t i = 1; i < n; i++) {
		size_t p = (size_t)a[i].parent;
		a[i].shares_norm = sum_s[p] > 0 ? a[i].shares / sum_s[p] : 0;
		a[i].usage_norm = sum_u[p] > 0 ? sub[i] / sum_u[p] : 0;
		a[i].level_fs = level_fs(a[i].shares, sum_s[p], sub[i], sum_u[p], a[i].shares_norm,
					 a[i].usage_norm);
		a[i].fairshare = 0;
		a[i].rank = 0;
	}

	/* The walk. Every non-root association enters exactly one list, so the
	 * key buffer holds n entries; lists nest at most once per tenant. */
	keys = ft_alloc(n, sizeof(*keys));
	ktmp = ft_alloc(n, sizeof(*ktmp));
	frames = ft_alloc(n + 1, sizeof(*frames));
	for (size_t k = child_start[0]; k < child_start[1]; k++)
		push_key(keys, &top, a, child[k]);
	key_sort(keys, top, ktmp);
	frames[nframes++] = (struct ft_frame){ .start = 0, .len = top };
	rank = users;
	rnt = users;
	while (nframes) {
		struct ft_frame *f = &frames[nframes - 1];
		const struct ft_key *x;
		bool tied;
		size_t j, start;

		if (f->pos == f->len) {
			nframes--;
			continue;
		}
		x = &keys[f->start + f->pos];
		if (f->pos == 0 && f->tenant_tied)
			tied = true;
		else
			tied = f->have_prev && f->prev_lfs == x->lfs;
		f->prev_lfs = x->lfs;
		f->have_prev = true;

		if (x->is_user) {
			if (!tied)
				rnt = rank;
			a[x->idx].rank = rnt;
			a[x->idx].fairshare = (double)rnt / (double)users;
			a[x->idx].walk_pos = walk++;
			rank--;
			f->pos++;
			continue;
		}

		/* A tenant: take the following tenants that tie with it too, and
		 * walk all their children as one list. */
		j = f->pos + 1;
		while (j < f->len && !keys[f->start + j].is_user && keys[f->start + j].lfs == x->lfs)
			j++;
		start = top;
		for (size_t g = f->pos; g < j; g++) {
			size_t t = keys[f->start + g].idx;
			a[t].walk_pos = walk++;
			for (size_t k = child_start[t]; k < child_start[t + 1]; k++)
				push_key(keys, &top, a, child[k]);
		}
		f->pos = j;
		key_sort(keys + start, top - start, ktmp);
		frames[nframes++] = (struct ft_frame){ .start = start, .len = top - start,
						       .tenant_tied = tied };
	}
	ret = 0;
out:
	free(frames);
	free(ktmp);
	free(keys);
	free(sum_u);
	free(sum_s);
	free(sub);
	free(bfs);
	free(fill);
	free(child);
	free(child_start);
	return ret;
}

double fairtree_decay(double usage, double elapsed_s, double half_life_s)
{
	if (!(half_life_s > 0) || !(elapsed_s > 0))
		return usage;
	return usage * exp2(-elapsed_s / half_life_s);
}
