/* sim.c - muster-sim's event loop over the policy core; see sim.h. */
#include "sim.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "fairtree.h"
#include "sched.h"

enum jstate { J_FUTURE = 0, J_PENDING, J_RUNNING, J_DONE, J_FAILED };

struct sjob {
	struct sched_job sj;
	struct sched_dep *deps;
	int *dep_target;          /* trace index of each dependency's target, -1 = missing */
	enum jstate state;
	int64_t runtime, limit;
	int run;                  /* index in runs while running, -1 */
	bool released;            /* its GPUs were freed at its estimated end */
	struct sched_alloc *alloc; /* ranges of nodes (settings.ranged_allocs) unless o->node_allocs */
	size_t nalloc, cap_alloc;
	int64_t start;
	uint64_t seq;             /* start order */
	int user;                 /* sched_user index or -1 */
	bool unreported;          /* its run started after the last pass's delta was built */
};

#define SIM_APOOL 16

struct term {
	int64_t t;
	uint64_t seq;
	size_t job;
};

struct sim {
	struct sim_cluster *cl;
	const struct trace *tr;
	const struct sim_opts *o;
	struct sim_job_result *res;
	struct sim_stats *st;
	struct sjob *jobs;
	size_t njobs;
	size_t *subs;             /* trace indexes in submission order */
	struct sched_node *nodes;
	struct sched_run *runs;
	size_t *run_job;
	size_t nruns;
	struct sched_job *pend;
	size_t *pend_job;
	size_t npend;
	struct sched_user *users;
	double *usage;
	int64_t *usage_t;
	size_t nusers, cap_users;
	struct term *heap;
	size_t nheap, cap_heap;
	uint64_t seq;
	int64_t now;
	struct sched_settings settings;
	struct sched_decisions d;
	bool any_deps;            /* a job of the trace has dependencies: each pass refreshes their state */
	/* fragmentation accounting */
	int64_t free_gpus, partial_free, frag_t;
	double frag_sum, frag_time;
	/*
	 * What changed since the previous pass, for the core's delta (not with
	 * o->full_rebuild): runs only (delta.by_runs): nodes change here only by
	 * runs starting and ending, which the core reads from the runs.
	 */
	bool delta;
	struct term *dadd;        /* job and seq of runs started since */
	size_t nadd, cap_add;
	size_t *dadd_run;
	size_t cap_add_run;
	int64_t *drem;            /* run ids of runs gone since */
	size_t nrem, cap_rem;
	/* invariant checker (easy): who holds the reservation, from when */
	bool check_resv;
	size_t resv_holder;
	int64_t resv_start;
	/* allocation copies of ended runs, for the next starts (a wide gang's is megabytes) */
	struct abuf {
		struct sched_alloc *p;
		size_t cap;
	} apool[SIM_APOOL];
	size_t napool;
};

/* An allocation array of at least n entries (*cap: its size), from the pool when one fits. */
static struct sched_alloc *alloc_get(struct sim *s, size_t n, size_t *cap)
{
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < s->napool; i++)
		if (s->apool[i].cap >= n && (best == SIZE_MAX || s->apool[i].cap < s->apool[best].cap))
			best = i;
	if (best == SIZE_MAX) {
		*cap = n;
		return mu_malloc(n * sizeof(struct sched_alloc));
	}
	struct sched_alloc *p = s->apool[best].p;
	*cap = s->apool[best].cap;
	s->apool[best] = s->apool[--s->napool];
	return p;
}

/* Back to the pool (or freed: the pool keeps the largest SIM_APOOL). */
static void alloc_put(struct sim *s, struct sched_alloc *p, size_t cap)
{
	if (!p)
		return;
	if (s->napool < SIM_APOOL) {
		s->apool[s->napool++] = (struct abuf){ p, cap };
		return;
	}
	size_t small = 0;
	for (size_t i = 1; i < s->napool; i++)
		if (s->apool[i].cap < s->apool[small].cap)
			small = i;
	if (s->apool[small].cap >= cap) {
		mu_free(p);
		return;
	}
	mu_free(s->apool[small].p);
	s->apool[small] = (struct abuf){ p, cap };
}

/* ------------------------------------------------------------ heap */

static bool term_less(const struct term *a, const struct term *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(struct sim *s, struct term x)
{
	s->heap = mu_grow(s->heap, &s->cap_heap, s->nheap + 1, sizeof(*s->heap));
	size_t i = s->nheap++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!term_less(&x, &s->heap[p]))
			break;
		s->heap[i] = s->heap[p];
		i = p;
	}
	s->heap[i] = x;
}

static struct term heap_pop(struct sim *s)
{
	struct term top = s->heap[0], x = s->heap[--s->nheap];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct term *best = &x;
		if (l < s->nheap && term_less(&s->heap[l], best)) {
			m = l;
			best = &s->heap[l];
		}
		if (r < s->nheap && term_less(&s->heap[r], best))
			m = r;
		if (m == i)
			break;
		s->heap[i] = s->heap[m];
		i = m;
	}
	if (s->nheap)
		s->heap[i] = x;
	return top;
}

/* ------------------------------------------------------------ setup */


struct subkey {
	int64_t submit;
	size_t idx;
};

static int subkey_cmp(const void *a, const void *b)
{
	const struct subkey *x = a, *y = b;
	if (x->submit != y->submit)
		return x->submit < y->submit ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* qsort(), skipped for keys already in order (a trace's ids and submit times nearly always are). */
static void sort_keys(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	const char *b = base;
	for (size_t i = 1; i < n; i++)
		if (cmp(b + (i - 1) * size, b + i * size) > 0) {
			qsort(base, n, size, cmp);
			return;
		}
}

struct idkey {
	int64_t id;
	size_t idx;
};

static int idkey_cmp(const void *a, const void *b)
{
	const struct idkey *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static int find_id(const struct idkey *ids, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (ids[m].id < id)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < n && ids[lo].id == id ? (int)ids[lo].idx : -1;
}

static int map_jobs(struct sim *s, struct mu_error *err)
{
	const struct trace *tr = s->tr;
	struct sim_cluster *cl = s->cl;
	int G = sim_cluster_max_gpus_per_node(cl);
	int64_t total = sim_cluster_gpus(cl);
	int ret = 0;
	struct idkey *ids = mu_malloc((tr->njobs + 1) * sizeof(*ids));
	for (size_t i = 0; i < tr->njobs; i++)
		ids[i] = (struct idkey){ tr->jobs[i].id, i };
	sort_keys(ids, tr->njobs, sizeof(*ids), idkey_cmp);
	for (size_t i = 1; i < tr->njobs; i++)
		if (ids[i].id == ids[i - 1].id) {
			ret = mu_error_set(err, MU_EPARSE, "", "line %zu: job id %" PRId64 " used twice (first on line %zu)",
			                   tr->jobs[ids[i].idx].line, ids[i].id, tr->jobs[ids[i - 1].idx].line);
			goto out;
		}
	/* user lookup: (tenant, name) pairs, hashed */
	size_t ucap = 64;
	while (ucap < 2 * (tr->njobs + 1))
		ucap *= 2;
	int *umap_key_t = mu_malloc(ucap * sizeof(int)), *umap_key_n = mu_malloc(ucap * sizeof(int));
	int *umap_val = mu_malloc(ucap * sizeof(int));
	size_t uused = 0;
	for (size_t i = 0; i < ucap; i++)
		umap_val[i] = -1;
	for (size_t i = 0; i < tr->njobs; i++) {
		const struct trace_job *tj = &tr->jobs[i];
		struct sjob *j = &s->jobs[i];
		struct sched_job *q = &j->sj;
		j->run = -1;
		j->runtime = tj->runtime;
		j->limit = tj->limit;
		q->id = tj->id;
		q->submit = tj->submit;
		q->time_limit = tj->limit;
		q->topo_required = q->topo_preferred = -1;
		if (tj->nodes > 0) {
			q->nodes = tj->nodes;
			q->gpus_per_node = tj->gpus_per_node;
			q->min_nodes = tj->min_nodes;
		} else if (G <= 1 || tj->procs <= G) {
			q->nodes = G <= 1 ? tj->procs : 1;
			q->gpus_per_node = G <= 1 ? 1 : tj->procs;
		} else {
			q->nodes = (tj->procs + G - 1) / G;
			q->gpus_per_node = G;
		}
		if ((int64_t)q->nodes * q->gpus_per_node > total || (size_t)q->nodes > cl->nnodes) {
			ret = mu_error_set(err, MU_EPARSE, "",
			                   "line %zu: job %" PRId64 " needs %d node(s) x %d GPU(s); the cluster has %zu node(s), %" PRId64 " GPU(s)",
			                   tj->line, tj->id, q->nodes, q->gpus_per_node, cl->nnodes, total);
			goto out_umap;
		}
		q->tenant = tj->tenant >= 0 ? sim_cluster_tenant(cl, tr->names[tj->tenant]) : 0;
		int cls = cl->default_class;
		if (tj->cls >= 0) {
			cls = sim_cluster_class(cl, tr->names[tj->cls]);
			if (cls < 0) {
				ret = mu_error_set(err, MU_EPARSE, "", "line %zu: unknown class \"%s\"", tj->line,
				                   tr->names[tj->cls]);
				goto out_umap;
			}
		}
		q->priority = cl->classes[cls].priority;
		q->preemptible = cl->classes[cls].preemptible;
		q->gpu_model = tj->gpu_model >= 0 ? tr->names[tj->gpu_model] : "";
		if (tj->topo_required >= 0 &&
		    (q->topo_required = sim_cluster_level(cl, tr->names[tj->topo_required])) < 0) {
			ret = mu_error_set(err, MU_EPARSE, "", "line %zu: unknown topology level \"%s\"", tj->line,
			                   tr->names[tj->topo_required]);
			goto out_umap;
		}
		if (tj->topo_preferred >= 0 &&
		    (q->topo_preferred = sim_cluster_level(cl, tr->names[tj->topo_preferred])) < 0) {
			ret = mu_error_set(err, MU_EPARSE, "", "line %zu: unknown topology level \"%s\"", tj->line,
			                   tr->names[tj->topo_preferred]);
			goto out_umap;
		}
		j->user = -1;
		if (tj->user >= 0) {
			size_t k = ((size_t)tj->user * 2654435761u + (size_t)q->tenant * 40503u) & (ucap - 1);
			while (umap_val[k] >= 0 && !(umap_key_t[k] == q->tenant && umap_key_n[k] == tj->user))
				k = (k + 1) & (ucap - 1);
			if (umap_val[k] < 0) {
				if ((uused + 1) * 2 > ucap) { /* cannot happen: ucap >= 2 * jobs, users <= jobs */
					ret = mu_error_set(err, MU_EINTERNAL, "", "user map full");
					goto out_umap;
				}
				s->users = mu_grow(s->users, &s->cap_users, s->nusers + 1, sizeof(*s->users));
				s->users[s->nusers] = (struct sched_user){ tr->names[tj->user], q->tenant, 1, 0, 0, { 0, 0 } };
				umap_key_t[k] = q->tenant;
				umap_key_n[k] = tj->user;
				umap_val[k] = (int)s->nusers++;
				uused++;
			}
			j->user = umap_val[k];
		}
		q->user = j->user;
		if (tj->ndeps) {
			j->deps = mu_calloc(tj->ndeps, sizeof(*j->deps));
			j->dep_target = mu_calloc(tj->ndeps, sizeof(int));
			for (size_t k = 0; k < tj->ndeps; k++) {
				j->deps[k].type = (enum sched_dep_type)tj->deps[k].type;
				j->deps[k].job_id = tj->deps[k].job_id;
				j->dep_target[k] = find_id(ids, tr->njobs, tj->deps[k].job_id);
			}
			q->deps = j->deps;
			q->ndeps = tj->ndeps;
			s->any_deps = true;
		}
	}
out_umap:
	mu_free(umap_key_t);
	mu_free(umap_key_n);
	mu_free(umap_val);
out:
	mu_free(ids);
	return ret;
}

/* ------------------------------------------------------------ state changes */

/* Bit count without a libgcc call (no -mpopcnt in a portable build); as sched's. */
static inline int popcount64(uint64_t x)
{
	if ((x & (x + 1)) == 0) /* 0 or the low k bits: whole nodes, quick */
		return x ? 64 - __builtin_clzll(x) : 0;
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (int)((x * 0x0101010101010101ULL) >> 56);
}

/* Free GPUs of node x with used mask u, and the part of them on a partly used node. */
static void frag_count(const struct sched_node *x, uint64_t u, int h, int *f, int *part)
{
	*f = popcount64(x->healthy & ~u);
	*part = *f > 0 && *f < h ? *f : 0;
}

static void frag_node(struct sim *s, size_t n, int sign)
{
	const struct sched_node *x = &s->nodes[n];
	if (x->state != SCHED_NODE_UP)
		return;
	int f, part;
	frag_count(x, x->used, popcount64(x->healthy), &f, &part);
	s->free_gpus += sign * f;
	s->partial_free += sign * part;
}

static void frag_advance(struct sim *s, int64_t t)
{
	if (t > s->frag_t && s->npend > 0 && s->free_gpus > 0) {
		double dt = (double)(t - s->frag_t);
		s->frag_sum += dt * (double)s->partial_free / (double)s->free_gpus;
		s->frag_time += dt;
	}
	if (t > s->frag_t)
		s->frag_t = t;
}

/*
 * Marks a[0..na) used or free; copy: also copies a there (a start's). A
 * node's fragmentation counts are a function of its state, healthy and
 * used masks and the part's mask, so they are computed once for a run of
 * parts that agree in those (a wide gang's nodes mostly do) and then only
 * compared node by node.
 */
static void set_used(struct sim *s, const struct sched_alloc *a, size_t na, bool used, struct sched_alloc *copy)
{
	int64_t df = 0, dp = 0; /* locals: the stores to nodes cannot alias them */
	if (copy && na)
		memcpy(copy, a, na * sizeof(*a));
	uint64_t km = 0, kh = 0, ku = 0; /* the last key (part mask, healthy, used) and its deltas */
	int kf = 0, kp = 0;
	bool key = false;
	for (size_t k = 0; k < na; k++) {
		uint64_t m = a[k].gpus;
		struct sched_node *x = &s->nodes[a[k].node], *end = x + sched_alloc_len(&a[k]);
		while (x < end) {
			if (key && m == km && x->state == SCHED_NODE_UP && x->healthy == kh && x->used == ku) {
				/* nodes alike (a wide gang's range): one key, one new used mask, a tight loop */
				uint64_t uk = used ? ku | m : ku & ~m;
				struct sched_node *y = x;
				for (; y < end && y->state == SCHED_NODE_UP && y->healthy == kh && y->used == ku; y++)
					y->used = uk;
				df += (int64_t)kf * (y - x);
				dp += (int64_t)kp * (y - x);
				x = y;
				continue;
			}
			uint64_t u = used ? x->used | m : x->used & ~m;
			if (x->state != SCHED_NODE_UP) {
				x->used = u;
				x++;
				continue;
			}
			/* frag_node() -1 and +1, for this key */
			int h = popcount64(x->healthy), f0, p0, f1, p1;
			frag_count(x, x->used, h, &f0, &p0);
			frag_count(x, u, h, &f1, &p1);
			km = m, kh = x->healthy, ku = x->used;
			kf = f1 - f0, kp = p1 - p0;
			key = true;
			df += kf;
			dp += kp;
			x->used = u;
			x++;
		}
	}
	s->free_gpus += df;
	s->partial_free += dp;
}

static void pend_insert(struct sim *s, size_t ji)
{
	/* Kept in (submit, trace index) order: the FCFS queue, requeued jobs back in place. */
	size_t lo = 0, hi = s->npend;
	const struct sjob *j = &s->jobs[ji];
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		const struct sjob *x = &s->jobs[s->pend_job[m]];
		if (x->sj.submit < j->sj.submit || (x->sj.submit == j->sj.submit && s->pend_job[m] < ji))
			lo = m + 1;
		else
			hi = m;
	}
	memmove(&s->pend[lo + 1], &s->pend[lo], (s->npend - lo) * sizeof(*s->pend));
	memmove(&s->pend_job[lo + 1], &s->pend_job[lo], (s->npend - lo) * sizeof(*s->pend_job));
	s->pend[lo] = j->sj;
	s->pend_job[lo] = ji;
	s->npend++;
	s->jobs[ji].state = J_PENDING;
}

/* Removes a run from the runs array and frees its GPUs (job stays RUNNING). */
static void run_remove(struct sim *s, size_t ji)
{
	struct sjob *j = &s->jobs[ji];
	if (j->run < 0)
		return;
	size_t r = (size_t)j->run;
	set_used(s, j->alloc, j->nalloc, false, NULL);
	if (s->delta) {
		if (j->unreported) { /* started and gone between two passes: the core never saw it */
			j->unreported = false;
		} else {
			s->drem = mu_grow(s->drem, &s->cap_rem, s->nrem + 1, sizeof(*s->drem));
			s->drem[s->nrem++] = (int64_t)j->seq;
		}
	}
	s->nruns--;
	if (r != s->nruns) {
		s->runs[r] = s->runs[s->nruns];
		s->run_job[r] = s->run_job[s->nruns];
		s->jobs[s->run_job[r]].run = (int)r;
	}
	j->run = -1;
}

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

static void placement_line(struct sim *s, size_t ji, int64_t end, const char *reason)
{
	FILE *f = s->o->placements;
	struct sjob *j = &s->jobs[ji];
	if (!f)
		return;
	fprintf(f, "{\"job\":%" PRId64 ",\"tenant\":", j->sj.id);
	json_str(f, s->cl->tenants[j->sj.tenant].name);
	fprintf(f, ",\"start\":%" PRId64 ",\"end\":%" PRId64 ",\"nodes\":[", j->start, end);
	for (size_t k = 0, rank = 0; k < j->nalloc; k++) {
		for (int e = 0; e < sched_alloc_len(&j->alloc[k]); e++, rank++) {
			fprintf(f, "%s{\"node\":\"%s\",\"gpus\":[", rank ? "," : "", s->nodes[j->alloc[k].node + e].name);
			uint64_t m = j->alloc[k].gpus;
			bool first = true;
			for (int b = 0; b < 64; b++)
				if (m & ((uint64_t)1 << b)) {
					fprintf(f, "%s%d", first ? "" : ",", b);
					first = false;
				}
			fprintf(f, "]}");
		}
	}
	if (reason)
		fprintf(f, "],\"reason\":\"%s\"}\n", reason);
	else
		fprintf(f, "]}\n");
}

static double decayed(const struct sim *s, size_t u)
{
	return fairtree_decay(s->usage[u], (double)(s->now - s->usage_t[u]), s->cl->half_life);
}

static void job_end(struct sim *s, size_t ji)
{
	struct sjob *j = &s->jobs[ji];
	run_remove(s, ji);
	j->state = J_DONE;
	s->res[ji].start = j->start;
	s->res[ji].end = s->now;
	s->res[ji].gpus = (int)sched_alloc_nodes(j->alloc, j->nalloc) * j->sj.gpus_per_node;
	if (j->user >= 0) {
		struct sched_user *u = &s->users[j->user];
		u->recent_runtime[1] = u->recent_runtime[0];
		u->recent_runtime[0] = s->now - j->start;
		if (u->nrecent < 2)
			u->nrecent++;
		s->usage[j->user] = decayed(s, (size_t)j->user) + (double)s->res[ji].gpus * (double)(s->now - j->start);
		s->usage_t[j->user] = s->now;
	}
	placement_line(s, ji, s->now, NULL);
	alloc_put(s, j->alloc, j->cap_alloc); /* done with it: 300,000 gangs' copies would pile up otherwise */
	j->alloc = NULL;
	j->nalloc = j->cap_alloc = 0;
}

/* ------------------------------------------------------------ invariants */

static int violation(struct sim *s, struct mu_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int violation(struct sim *s, struct mu_error *err, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mu_error_set(err, MU_EINTERNAL, "", "invariant violated at t=%" PRId64 ": %s", s->now, msg);
}

static int check_all(struct sim *s, struct mu_error *err)
{
	size_t nn = s->cl->nnodes;
	uint64_t *seen = mu_calloc(nn + 1, sizeof(uint64_t));
	size_t *stamp = mu_calloc(nn + 1, sizeof(size_t)); /* run r + 1 holds node n */
	int64_t *tg = mu_calloc(s->cl->ntenants + 1, sizeof(int64_t));
	int64_t *tj = mu_calloc(s->cl->ntenants + 1, sizeof(int64_t));
	int ret = 0;
	for (size_t r = 0; r < s->nruns; r++) {
		const struct sched_run *run = &s->runs[r];
		const struct sjob *j = &s->jobs[s->run_job[r]];
		int nmin = j->sj.min_nodes > 0 ? j->sj.min_nodes : j->sj.nodes;
		size_t nodes = sched_alloc_nodes(run->alloc, run->nalloc);
		if (nodes < (size_t)nmin || nodes > (size_t)j->sj.nodes) {
			ret = violation(s, err, "job %" PRId64 " runs on %zu node(s), asked %d..%d", j->sj.id, nodes, nmin,
			                j->sj.nodes);
			goto out;
		}
		for (size_t k = 0; k < run->nalloc; k++) {
			if (__builtin_popcountll(run->alloc[k].gpus) != j->sj.gpus_per_node) {
				ret = violation(s, err, "job %" PRId64 " has %d GPU(s) on %s, asked %d", j->sj.id,
				                __builtin_popcountll(run->alloc[k].gpus), s->nodes[run->alloc[k].node].name,
				                j->sj.gpus_per_node);
				goto out;
			}
			for (int e = 0; e < sched_alloc_len(&run->alloc[k]); e++) {
				int n = run->alloc[k].node + e;
				if (stamp[n] == r + 1) {
					ret = violation(s, err, "job %" PRId64 " holds node %s twice", j->sj.id, s->nodes[n].name);
					goto out;
				}
				stamp[n] = r + 1;
				if (seen[n] & run->alloc[k].gpus) {
					ret = violation(s, err, "GPU double-booked on %s (job %" PRId64 ")", s->nodes[n].name,
					                j->sj.id);
					goto out;
				}
				seen[n] |= run->alloc[k].gpus;
			}
		}
		int g = (int)nodes * j->sj.gpus_per_node;
		for (int t = run->tenant, d = 0; t >= 0 && d <= (int)s->cl->ntenants; d++) {
			tg[t] += g;
			tj[t]++;
			t = s->cl->tenants[t].parent;
		}
	}
	for (size_t n = 0; n < nn; n++)
		if (seen[n] != s->nodes[n].used) {
			ret = violation(s, err, "node %s: used GPUs %#" PRIx64 " but runs hold %#" PRIx64, s->nodes[n].name,
			                s->nodes[n].used, seen[n]);
			goto out;
		}
	for (size_t t = 0; t < s->cl->ntenants; t++) {
		const struct sched_tenant *x = &s->cl->tenants[t];
		if ((x->max_gpus >= 0 && tg[t] > x->max_gpus) || (x->max_running_jobs >= 0 && tj[t] > x->max_running_jobs)) {
			ret = violation(s, err, "tenant %s runs %" PRId64 " job(s) on %" PRId64 " GPU(s) (max %d, %d)", x->name,
			                tj[t], tg[t], x->max_gpus, x->max_running_jobs);
			goto out;
		}
	}
out:
	mu_free(seen);
	mu_free(stamp);
	mu_free(tg);
	mu_free(tj);
	return ret;
}

static int check_start(struct sim *s, size_t ji, const struct sched_start *st, struct mu_error *err)
{
	struct sjob *j = &s->jobs[ji];
	for (size_t k = 0; k < st->nalloc; k++) {
		if (st->alloc[k].node < 0 || st->alloc[k].count < 0 ||
		    (size_t)st->alloc[k].node + (size_t)sched_alloc_len(&st->alloc[k]) > s->cl->nnodes)
			return violation(s, err, "job %" PRId64 " started on nodes out of range", j->sj.id);
		for (int e = 0; e < sched_alloc_len(&st->alloc[k]); e++) {
			const struct sched_node *n = &s->nodes[st->alloc[k].node + e];
			if (n->state != SCHED_NODE_UP || (st->alloc[k].gpus & ~n->healthy))
				return violation(s, err, "job %" PRId64 " started on %s which is not up or not healthy",
				                 j->sj.id, n->name);
			if (st->alloc[k].gpus & n->used)
				return violation(s, err, "job %" PRId64 " started on busy GPUs of %s", j->sj.id, n->name);
		}
	}
	for (size_t k = 0; k < j->sj.ndeps; k++) {
		int tgt = j->dep_target[k];
		if (tgt < 0 || (s->jobs[tgt].state != J_DONE && s->jobs[tgt].state != J_FAILED))
			return violation(s, err, "job %" PRId64 " started before its dependency %" PRId64 " ended", j->sj.id,
			                 j->deps[k].job_id);
	}
	return 0;
}

/* ------------------------------------------------------------ passes */

static enum sched_dep_state dep_state(const struct sim *s, int tgt)
{
	if (tgt < 0)
		return SCHED_DEP_MISSING;
	const struct sjob *t = &s->jobs[tgt];
	if (t->state == J_FAILED)
		return SCHED_DEP_NOTOK;
	if (t->state != J_DONE)
		return SCHED_DEP_ACTIVE;
	return s->tr->jobs[tgt].exit_code == 0 ? SCHED_DEP_OK : SCHED_DEP_NOTOK;
}

static int pass(struct sim *s, struct mu_error *err, bool *preempted)
{
	struct sched_snapshot snap;
	int ret;
	*preempted = false;
	s->st->events++;
	for (size_t i = 0; s->any_deps && i < s->npend; i++) {
		struct sjob *j = &s->jobs[s->pend_job[i]];
		for (size_t k = 0; k < j->sj.ndeps; k++)
			j->deps[k].state = dep_state(s, j->dep_target[k]);
	}
	if (s->settings.order == SCHED_ORDER_MULTIFACTOR)
		for (size_t u = 0; u < s->nusers; u++)
			s->users[u].usage = decayed(s, u);
	memset(&snap, 0, sizeof(snap));
	snap.now = s->now;
	snap.settings = s->settings;
	snap.nnodes = s->cl->nnodes;
	snap.nodes = s->nodes;
	snap.nruns = s->nruns;
	snap.runs = s->runs;
	snap.njobs = s->npend;
	snap.jobs = s->pend;
	snap.ntenants = s->cl->ntenants;
	snap.tenants = s->cl->tenants;
	snap.nusers = s->nusers;
	snap.users = s->users;
	struct sched_delta delta = { 0 };
	if (s->delta) {
		size_t na = 0;
		s->dadd_run = mu_grow(s->dadd_run, &s->cap_add_run, s->nadd + 1, sizeof(*s->dadd_run));
		for (size_t i = 0; i < s->nadd; i++) {
			struct sjob *j = &s->jobs[s->dadd[i].job];
			if (j->unreported && j->seq == s->dadd[i].seq && j->run >= 0) {
				s->dadd_run[na++] = (size_t)j->run;
				j->unreported = false;
			}
		}
		delta = (struct sched_delta){ 0, NULL, na, s->dadd_run, s->nrem, s->drem, .by_runs = true };
		snap.delta = &delta;
	}
	ret = sched_cycle(&snap, &s->d);
	if (s->delta)
		s->nadd = s->nrem = 0;
	if (ret)
		return mu_error_set(err, MU_EINTERNAL, "", "policy core: %s", s->d.error);
	const struct sched_decisions *d = &s->d;
	/* Preemptions: the sim stops victims at once and requeues them. */
	size_t *requeue = d->npreemptions ? mu_malloc(d->npreemptions * sizeof(size_t)) : NULL;
	size_t nrq = 0;
	for (size_t i = 0; i < d->npreemptions; i++) {
		size_t ji = s->run_job[d->preemptions[i].run];
		requeue[nrq++] = ji;
	}
	for (size_t i = 0; i < nrq; i++) {
		size_t ji = requeue[i];
		struct sjob *j = &s->jobs[ji];
		placement_line(s, ji, s->now, "preempted");
		run_remove(s, ji);
		j->state = J_FUTURE;
		j->seq = 0;
		s->res[ji].preemptions++;
		s->st->preemptions++;
		*preempted = true;
	}
	/*
	 * EASY: while the same job holds the reservation, re-planning never moves
	 * it later (backfill never delays it). The holder may change when a job
	 * ahead of it becomes eligible (a dependency met, quota freed).
	 */
	if (s->check_resv) {
		size_t holder = SIZE_MAX;
		int64_t start = 0;
		for (size_t i = 0; i < d->nreservations; i++) {
			holder = s->pend_job[d->reservations[i].job];
			start = d->reservations[i].start;
		}
		bool ahead_started = false; /* a job ahead of it in the queue may take its GPUs */
		for (size_t i = 0; i < d->nstarts && holder != SIZE_MAX; i++)
			if (d->starts[i].job < d->reservations[0].job)
				ahead_started = true;
		if (holder != SIZE_MAX && holder == s->resv_holder && start > s->resv_start && !ahead_started) {
			ret = violation(s, err, "job %" PRId64 "'s reservation moved from %" PRId64 " to %" PRId64,
			                s->jobs[holder].sj.id, s->resv_start, start);
			mu_free(requeue);
			return ret;
		}
		s->resv_holder = holder;
		s->resv_start = start;
	}
	/* Starts and fails, then compact the pending queue. */
	bool *gone = d->nstarts || d->nfails ? mu_calloc(s->npend + 1, sizeof(bool)) : NULL;
	size_t first = s->npend; /* the first job that leaves the queue: the ones before it stay put */
	for (size_t i = 0; i < d->nstarts; i++) {
		const struct sched_start *st = &d->starts[i];
		size_t ji = s->pend_job[st->job];
		struct sjob *j = &s->jobs[ji];
		if (s->o->check && (ret = check_start(s, ji, st, err)))
			goto out;
		gone[st->job] = true;
		first = st->job < first ? st->job : first;
		alloc_put(s, j->alloc, j->cap_alloc);
		j->alloc = alloc_get(s, st->nalloc + 1, &j->cap_alloc);
		j->nalloc = st->nalloc;
		j->start = s->now;
		j->seq = ++s->seq;
		j->state = J_RUNNING;
		j->released = false;
		set_used(s, st->alloc, j->nalloc, true, j->alloc);
		s->runs[s->nruns] = (struct sched_run){
			.run_id = (int64_t)j->seq, .job_id = j->sj.id, .tenant = j->sj.tenant, .user = j->user,
			.priority = j->sj.priority, .preemptible = j->sj.preemptible, .start = s->now,
			.time_limit = j->limit,
			.predicted_end = s->now + sched_job_runtime(&snap, &s->pend[st->job]),
			.min_nodes = j->sj.min_nodes, .nalloc = j->nalloc, .alloc = j->alloc,
		};
		s->run_job[s->nruns] = ji;
		j->run = (int)s->nruns++;
		if (s->delta) {
			j->unreported = true;
			s->dadd = mu_grow(s->dadd, &s->cap_add, s->nadd + 1, sizeof(*s->dadd));
			s->dadd[s->nadd++] = (struct term){ 0, j->seq, ji };
		}
		heap_push(s, (struct term){ s->now + j->runtime, j->seq, ji });
		s->st->starts++;
	}
	for (size_t i = 0; i < d->nfails; i++) {
		size_t ji = s->pend_job[d->fails[i].job];
		gone[d->fails[i].job] = true;
		first = d->fails[i].job < first ? d->fails[i].job : first;
		s->jobs[ji].state = J_FAILED;
		s->res[ji].failed = true;
		s->st->failed++;
	}
	size_t w = first;
	for (size_t i = first; i < s->npend; i++) {
		if (gone[i])
			continue;
		s->pend[w] = s->pend[i];
		s->pend_job[w++] = s->pend_job[i];
	}
	s->npend = w;
	for (size_t i = 0; i < nrq; i++)
		pend_insert(s, requeue[i]);
	if (s->o->check)
		ret = check_all(s, err);
out:
	mu_free(gone);
	mu_free(requeue);
	return ret;
}

/*
 * A pass, repeated while it preempts (victims stop at once in the sim).
 * With nothing pending there is no pass: the core could start, reserve,
 * fail or preempt nothing (preemption only ever serves a pending job), and
 * the delta of runs started and ended meanwhile goes to the next pass (a
 * start it does not report ended between the two, as with any kept start).
 * Most ends of a lightly loaded trace find the queue empty.
 */
static int schedule(struct sim *s, struct mu_error *err)
{
	bool again = true;
	int ret = 0;
	if (!s->npend) {
		s->resv_holder = SIZE_MAX; /* as a pass that reserved nothing leaves it */
		return 0;
	}
	for (int i = 0; again && i < 8 && ret == 0; i++)
		ret = pass(s, err, &again);
	return ret;
}

int sim_run(struct sim_cluster *cl, const struct trace *tr, const struct sim_opts *o,
            struct sim_job_result **results, struct sim_stats *stats, struct mu_error *err)
{
	struct sim s;
	int ret;
	memset(&s, 0, sizeof(s));
	memset(stats, 0, sizeof(*stats));
	s.cl = cl;
	s.tr = tr;
	s.o = o;
	s.st = stats;
	s.njobs = tr->njobs;
	s.jobs = mu_calloc(tr->njobs + 1, sizeof(*s.jobs));
	s.res = mu_calloc(tr->njobs + 1, sizeof(*s.res));
	for (size_t i = 0; i < tr->njobs; i++)
		s.res[i].start = s.res[i].end = -1;
	sched_decisions_init(&s.d);
	ret = map_jobs(&s, err);
	if (ret)
		goto out;
	s.usage = mu_calloc(s.nusers + 1, sizeof(double));
	s.usage_t = mu_calloc(s.nusers + 1, sizeof(int64_t));
	s.nodes = mu_malloc((cl->nnodes + 1) * sizeof(*s.nodes));
	memcpy(s.nodes, cl->nodes, cl->nnodes * sizeof(*s.nodes));
	for (size_t n = 0; n < cl->nnodes; n++) {
		s.nodes[n].used = 0;
		frag_node(&s, n, +1);
	}
	s.runs = mu_calloc(tr->njobs + 1, sizeof(*s.runs));
	s.run_job = mu_calloc(tr->njobs + 1, sizeof(size_t));
	s.pend = mu_calloc(tr->njobs + 1, sizeof(*s.pend));
	s.pend_job = mu_calloc(tr->njobs + 1, sizeof(size_t));
	s.delta = !o->full_rebuild;
	s.settings = cl->settings;
	s.settings.quiet = true;
	s.settings.unnamed_reservations = true; /* it reads only their start */
	s.settings.ranged_allocs = !o->node_allocs; /* a wide gang's start is a few entries, not one per node */
	s.settings.predict = o->predict || cl->settings.predict;
	s.settings.check_view = o->check; /* and the core's incremental view against a rebuild, each pass */
	switch (o->policy) {
	case SIM_FCFS:
		s.settings.order = SCHED_ORDER_FCFS;
		s.settings.reservation_depth = 0;
		s.settings.no_backfill = true;
		s.settings.preemption = false;
		break;
	case SIM_EASY:
		s.settings.order = SCHED_ORDER_FCFS;
		s.settings.reservation_depth = 1;
		s.settings.preemption = false;
		break;
	case SIM_CONSERVATIVE:
		s.settings.order = SCHED_ORDER_FCFS;
		s.settings.reservation_depth = INT_MAX;
		s.settings.preemption = false;
		break;
	case SIM_MUSTER:
		s.settings.order = SCHED_ORDER_MULTIFACTOR;
		if (!cl->has_depth)
			s.settings.reservation_depth = 1;
		if (!cl->has_predict)
			s.settings.predict = true; /* settings.predict_runtimes' default */
		if (!cl->has_preemption)
			s.settings.preemption = true;
		break;
	}
	s.check_resv = o->check && o->policy == SIM_EASY && !s.settings.predict;
	s.resv_holder = SIZE_MAX;
	/* Submission order: (submit, input order). */
	struct subkey *sk = mu_malloc((tr->njobs + 1) * sizeof(*sk));
	for (size_t i = 0; i < tr->njobs; i++)
		sk[i] = (struct subkey){ tr->jobs[i].submit, i };
	sort_keys(sk, tr->njobs, sizeof(*sk), subkey_cmp);
	size_t next = 0;
	stats->first_submit = tr->njobs ? sk[0].submit : 0;
	struct term *due = NULL;
	size_t ndue = 0, cap_due = 0;
	s.frag_t = stats->first_submit;
	while (next < tr->njobs || s.nheap) {
		int64_t t = INT64_MAX;
		if (next < tr->njobs)
			t = sk[next].submit;
		if (s.nheap && s.heap[0].t < t)
			t = s.heap[0].t;
		frag_advance(&s, t);
		s.now = t;
		/* Terminations due now; those whose estimated end is now free their GPUs first. */
		ndue = 0;
		while (s.nheap && s.heap[0].t == t) {
			due = mu_grow(due, &cap_due, ndue + 1, sizeof(*due));
			due[ndue++] = heap_pop(&s);
		}
		for (size_t i = 0; i < ndue; i++) {
			struct sjob *j = &s.jobs[due[i].job];
			if (j->state == J_RUNNING && j->seq == due[i].seq && j->start + j->limit <= t) {
				run_remove(&s, due[i].job);
				j->released = true;
			}
		}
		while (next < tr->njobs && sk[next].submit == t) {
			size_t ji = sk[next++].idx;
			pend_insert(&s, ji);
			if ((ret = schedule(&s, err)))
				goto out_loop;
		}
		for (;;) {
			for (size_t i = 0; i < ndue; i++) {
				struct sjob *j = &s.jobs[due[i].job];
				if (j->state != J_RUNNING || j->seq != due[i].seq)
					continue; /* preempted meanwhile: a stale event */
				job_end(&s, due[i].job);
				if ((ret = schedule(&s, err)))
					goto out_loop;
			}
			ndue = 0;
			while (s.nheap && s.heap[0].t == t) { /* zero-length runs started just now */
				due = mu_grow(due, &cap_due, ndue + 1, sizeof(*due));
				due[ndue++] = heap_pop(&s);
			}
			if (!ndue)
				break;
		}
	}
	for (size_t i = 0; i < tr->njobs; i++) {
		if (s.res[i].end > stats->last_end)
			stats->last_end = s.res[i].end;
		if (s.res[i].start < 0 && !s.res[i].failed)
			stats->never_started++;
	}
	stats->fragmentation = s.frag_time > 0 ? s.frag_sum / s.frag_time : 0;
out_loop:
	mu_free(due);
	mu_free(sk);
out:
	for (size_t i = 0; i < s.njobs; i++) {
		mu_free(s.jobs[i].deps);
		mu_free(s.jobs[i].dep_target);
		mu_free(s.jobs[i].alloc);
	}
	for (size_t i = 0; i < s.napool; i++)
		mu_free(s.apool[i].p);
	mu_free(s.jobs);
	mu_free(s.users);
	mu_free(s.usage);
	mu_free(s.usage_t);
	mu_free(s.nodes);
	mu_free(s.runs);
	mu_free(s.run_job);
	mu_free(s.pend);
	mu_free(s.pend_job);
	mu_free(s.heap);
	mu_free(s.dadd);
	mu_free(s.dadd_run);
	mu_free(s.drem);
	sched_decisions_release(&s.d);
	if (ret) {
		mu_free(s.res);
		*results = NULL;
	} else {
		*results = s.res;
	}
	return ret;
}

/* ------------------------------------------------------------ outputs */

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double pct(const double *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t k = (size_t)ceil(p * (double)n);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static double entitlement(const struct sim_cluster *cl, int t)
{
	double e = 1;
	while (t > 0) {
		int p = cl->tenants[t].parent;
		double sum = 0;
		for (size_t i = 1; i < cl->ntenants; i++)
			if (cl->tenants[i].parent == p)
				sum += cl->tenants[i].shares;
		e *= sum > 0 ? cl->tenants[t].shares / sum : 0;
		t = p;
	}
	return e;
}

void sim_write_metrics(FILE *out, const struct sim_cluster *cl, const struct trace *tr,
                       const struct sim_job_result *res, const struct sim_stats *st, const char *policy)
{
	size_t n = 0;
	double *waits = mu_malloc((tr->njobs + 1) * sizeof(double));
	double sum_w = 0, sum_b = 0, sum_b2 = 0, max_b = 0, area = 0;
	double *tarea = mu_calloc(cl->ntenants + 1, sizeof(double));
	for (size_t i = 0; i < tr->njobs; i++) {
		if (res[i].start < 0)
			continue;
		double w = (double)(res[i].start - tr->jobs[i].submit);
		double run = (double)(res[i].end - res[i].start);
		double b = (w + run) / (run > 10 ? run : 10);
		if (b < 1)
			b = 1;
		waits[n++] = w;
		sum_w += w;
		sum_b += b;
		sum_b2 += b * b;
		if (b > max_b)
			max_b = b;
		double a = run * res[i].gpus;
		area += a;
	}
	/* per-tenant GPU time: attribute through the trace's tenant names */
	for (size_t i = 0; i < tr->njobs; i++) {
		if (res[i].start < 0)
			continue;
		int t = tr->jobs[i].tenant >= 0 ? sim_cluster_find_tenant(cl, tr->names[tr->jobs[i].tenant]) : 0;
		if (t >= 0)
			tarea[t] += (double)(res[i].end - res[i].start) * res[i].gpus;
	}
	qsort(waits, n, sizeof(double), dbl_cmp);
	double makespan = (double)(st->last_end - st->first_submit);
	double gpus = (double)sim_cluster_gpus(cl);
	fprintf(out, "{\n  \"policy\": \"%s\",\n  \"jobs\": %zu,\n  \"completed\": %zu,\n", policy, tr->njobs, n);
	fprintf(out, "  \"failed\": %zu,\n  \"never_started\": %zu,\n  \"preemptions\": %zu,\n", st->failed,
	        st->never_started, st->preemptions);
	fprintf(out, "  \"wait\": {\"mean\": %.3f, \"p50\": %.3f, \"p95\": %.3f, \"max\": %.3f},\n", n ? sum_w / n : 0,
	        pct(waits, n, 0.5), pct(waits, n, 0.95), n ? waits[n - 1] : 0);
	fprintf(out, "  \"bounded_slowdown\": {\"tau\": 10, \"mean\": %.4f, \"max\": %.4f, \"rms\": %.4f},\n",
	        n ? sum_b / n : 0, max_b, n ? sqrt(sum_b2 / n) : 0);
	fprintf(out, "  \"utilization\": %.6f,\n  \"makespan\": %.0f,\n  \"gpus\": %.0f,\n",
	        makespan > 0 && gpus > 0 ? area / (gpus * makespan) : 0, makespan, gpus);
	fprintf(out, "  \"fragmentation\": %.6f,\n  \"passes\": %zu,\n  \"tenants\": [", st->fragmentation, st->events);
	bool first = true;
	for (size_t t = 0; t < cl->ntenants; t++) {
		bool leaf = true;
		for (size_t k = 1; k < cl->ntenants; k++)
			if (cl->tenants[k].parent == (int)t)
				leaf = false;
		if (!leaf && tarea[t] == 0)
			continue;
		fprintf(out, "%s\n    {\"tenant\": ", first ? "" : ",");
		json_str(out, cl->tenants[t].name);
		fprintf(out, ", \"gpu_seconds\": %.0f, \"share\": %.6f, \"entitlement\": %.6f}", tarea[t],
		        area > 0 ? tarea[t] / area : 0, entitlement(cl, (int)t));
		first = false;
	}
	fprintf(out, "\n  ]\n}\n");
	mu_free(tarea);
	mu_free(waits);
}

void sim_write_swf(FILE *out, const struct sim_cluster *cl, const struct trace *tr,
                   const struct sim_job_result *res, const char *policy)
{
	fprintf(out, "; Computer: muster-sim\n; Note: policy %s\n; MaxProcs: %" PRId64 "\n", policy,
	        sim_cluster_gpus(cl));
	struct mu_buf line; /* an SWF line, written with one fwrite: no printf parse per line */
	mu_buf_init(&line);
	for (size_t i = 0; i < tr->njobs; i++) {
		const struct trace_job *j = &tr->jobs[i];
		if (res[i].start < 0)
			continue; /* never ran: no line (see never_started in the metrics) */
		int64_t wait = res[i].start - j->submit;
		if (tr->is_swf) {
			/* the original line with field 3 replaced */
			const char *s = tr->text + j->text;
			const char *p = s;
			for (int f = 0; f < 2; f++) {
				while (*p == ' ' || *p == '\t')
					p++;
				while (*p && *p != ' ' && *p != '\t')
					p++;
			}
			while (*p == ' ' || *p == '\t')
				p++;
			const char *e = p;
			while (*e && *e != ' ' && *e != '\t')
				e++;
			mu_buf_reset(&line);
			mu_buf_add(&line, s, (size_t)(p - s));
			mu_buf_add_int(&line, wait);
			mu_buf_adds(&line, e);
			mu_buf_addc(&line, '\n');
			fwrite(line.p, 1, line.len, out);
		} else {
			int64_t run = res[i].end - res[i].start;
			fprintf(out, "%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %d -1 -1 %d %" PRId64 " -1 1 -1 -1 -1 -1 -1 -1 -1\n",
			        j->id, j->submit, wait, run, res[i].gpus, res[i].gpus, j->limit);
		}
	}
	mu_buf_release(&line);
}
