/*
 * sched_int.h - internals shared by the files of the policy core (sched__*).
 * Not part of the interface: include sched.h.
 */
#ifndef MU_SCHED_INT_H
#define MU_SCHED_INT_H

#include "sched.h"

/* A release event of the time profile: GPUs `mask` of `node` free at `t`. */
struct rel {
	int64_t t;
	int node;       /* -1: all of alloc[0..nalloc) (a running run's release) */
	uint64_t mask;
	int run;        /* run index for running runs, -1 for starts of this cycle */
	int nalloc;
	const struct sched_alloc *alloc;
};

/* A reservation interval on one node, chained per node from rhead[node]. */
struct resv {
	int next;
	int node;
	int64_t start, end;
	uint64_t mask;
};

/* A placement request. */
struct req {
	int model;      /* -1 any, -2 a model no node has, else model id */
	int g;          /* GPUs per node */
	int nmin, nmax; /* node count range (rigid: equal) */
	int required, preferred;
};

/* A candidate node of one placement. */
struct cand {
	int node;
	int free;       /* usable GPUs */
	int64_t key;    /* time tightness: smaller first */
	uint64_t mask;  /* usable GPUs */
	uint64_t pref;  /* GPUs to take first */
};

struct centry {
	uint64_t hash;
	int kind, model, g, nmin, nmax, req, pref;
	int64_t value;
	uint32_t gen;                   /* in use when equal to the table's gen */
};

/* A shape cache: open addressing; clearing it is gen++ (stale entries are empty slots). */
struct ctab {
	struct centry *e;
	size_t cap, n;
	uint32_t gen;
	struct umemo {              /* sched__max_in_unit()'s last answers, valid while gen holds */
		int model, g, req;
		int value;
		uint32_t gen;
	} memo[2][16];
};

/* Per-cycle arrays the incremental view keeps between calls (sched__scratch). */
enum scratch { SCR_ORDER, SCR_PRIO, SCR_OKEY, SCR_RUNTIME, SCR_RANK, SCR_TGPUS, SCR_TJOBS, SCR_VICTIM, SCR_N };

/* A release of the incremental view: running run in slot `slot` ends at t (unclamped). */
struct rkey {
	int64_t t;
	int slot;
};

/* A running run as the incremental view keeps it (a copy: snapshots are borrowed). */
struct islot {
	int64_t run_id, end;            /* end: its key in rk (planned end, unclamped) */
	int64_t lim, pe;                /* start + limit; predicted end (0 none) */
	bool in_pk;
	int tenant, gpus, priority;
	bool preemptible, live;
	size_t nalloc, cap_alloc;
	struct sched_alloc *alloc;
	bool whole;                     /* every part holds all GPUs of its node (or none) */
	uint32_t wgen;                  /* wcnt is right while equal to inc.hgen */
	int wcnt;                       /* parts on UP nodes with every GPU healthy */
};

struct pcount {
	int prio, n;
};

/*
 * An upper bound on the nodes a start-now placement of (model row, g) could
 * use (sched__place_flat()'s candidate count), learnt in this cycle: for
 * every end t1 >= t1[i] at most ne[i]. A cycle only takes GPUs and adds
 * reservations, and a later end overlaps more reservations, so the bound
 * holds for the rest of the cycle; a gang wider than it fails without a
 * look at the reserved nodes (EASY's count of free nodes).
 */
/* One release the whole-node sweep went past: parts a[0..n) (or node/mask when a is NULL) at t. */
struct wseg {
	int64_t t;
	const struct sched_alloc *a;
	int n;
	int node;
	uint64_t mask;
};

#define SCHED_NE_SLOTS 4
/*
 * Pending bucket moves of consecutive nodes n0..n0+len-1, all of model row
 * `row`, from free count `from` to `to` (sched__inc_move()): applied to the
 * counts and the bitmaps by sched__inc_flush(), one word-wide range per
 * bitmap instead of one bit per node, before anything reads them.
 */
struct bmove {
	int n0, len, row, from, to;
};

struct nebound {
	uint32_t gen;                   /* valid when equal to inc.ne_gen */
	int n;
	int64_t t1[SCHED_NE_SLOTS];
	size_t ne[SCHED_NE_SLOTS];
};

/*
 * The incremental view (sched_inc.c), kept in decisions->priv between calls
 * that pass a struct sched_delta: nodes by free GPU count (counts and
 * bitmaps), the releases of running runs sorted by end, quota use per
 * tenant, static node data and caches that depend on it, and scratch
 * arrays. Between calls it describes the previous snapshot exactly.
 */
struct inc {
	size_t nn;
	int nlevels;
	size_t ntenants, nusers;
	int nmodels;
	char **models;                  /* owned copies */
	int *model, *gcount;
	int *unit[SCHED_MAX_LEVELS];
	bool *up, *bad;
	bool *whole_ok;                 /* UP with every GPU healthy: whole_count() counts the node */
	uint64_t *avail, *freemask;
	int *cnt, *maxk;                /* as struct cyc */
	uint64_t *bm;                   /* [(nmodels + 1) * 65][nw]: UP nodes by free count */
	size_t nw;
	int *rhead;
	int *agg_free[SCHED_MAX_LEVELS], *agg_cnt[SCHED_MAX_LEVELS];
	int64_t total_gpus;
	size_t nbad;                    /* nodes with a used GPU that is down or unhealthy */
	struct islot *slot;
	size_t cap_slot, nlive;
	int *free_slot;
	size_t nfree;
	int64_t *hkey;                  /* run_id -> slot, linear probing */
	int *hval;
	size_t hcap;
	struct rkey *rk;                /* releases sorted by t */
	size_t nrk, cap_rk;
	bool predict;                   /* settings.predict the keys were computed with */
	int64_t now;                    /* the time they are right for (and later, with pk) */
	struct rkey *pk;                /* runs planned at their prediction, by prediction */
	size_t npk, cap_pk;
	int64_t *own_g;                 /* per tenant: GPUs of its own runs (not its subtree) */
	int *own_j;
	struct pcount *pc;              /* preemptible runs by class priority, ascending */
	size_t npc, cap_pc;
	bool *vslot;                    /* per slot: stopped in this cycle */
	int *vlist;
	size_t nvlist, cap_vlist;
	/* scratch, nn entries each */
	struct cand *sc_cand, *sc_pick, *sc_tmp;
	int *pos;                       /* emit_by_node(): candidate of a node */
	uint64_t *nodebits;             /* emit_by_node(): nw words, zero between uses */
	uint64_t *sc_mask, *sc_last;
	int64_t *sc_time;
	struct sched_alloc *sc_alloc, *sc_alloc2;
	/* the earliest-start sweep's sparse per-node state (valid where sw_stamp == sw_cur) */
	uint32_t *sw_stamp, sw_cur;
	uint64_t *sw_rm, *sw_last, *sw_blk;
	int64_t *sw_time;
	int *sw_list;
	size_t nsw;
	uint32_t *mk_stamp, mk_cur;     /* marks for one placement */
	int *touched;                   /* nodes whose freemask a start changed in this cycle */
	bool *tflag;
	size_t ntouched;
	void *scr[SCR_N];               /* sched__scratch() buffers */
	size_t cap_scr[SCR_N];
	struct rel *crel;               /* the cycle's crel and resv arrays, kept */
	size_t cap_crel;
	struct resv *resv;
	size_t cap_resv;
	struct ctab ucache;             /* unit maxima: static and health data only */
	struct ctab fcache;             /* failed shapes: cleared every cycle */
	int *nown;                      /* per node: live runs with GPUs on it */
	size_t nshare;                  /* nodes with two or more (sub-node runs) */
	size_t nsplit;                  /* live runs that hold part of a node */
	size_t nodd;                    /* nodes a run holds that have free GPUs (a snapshot at odds) */
	uint32_t hgen;                  /* bumped when a node's state or health changes */
	struct nebound *neb;            /* [(nmodels + 1) * 65] */
	int *hom;                       /* [nmodels + 1]: the GPU count of every node of the row, or -1 */
	struct wseg *wseg;              /* the whole-node sweep's releases, in sweep order */
	size_t cap_wseg;
	/*
	 * The cycle's one reservation while it is held by counts (see
	 * sched__resv_commit()): its nodes that are free now are exactly the
	 * nodes of bucket (row, g) with index <= b (the whole-node sweep takes
	 * the free nodes in node order, and in a cycle no node enters a
	 * bucket); the others are busy now and matter to no start now. alloc
	 * (borrowed from the decisions) names them all when a path needs them
	 * one by one (sched__resv_name()).
	 */
	struct vres {
		bool on;
		int row, g, b;
		int64_t start, end;
		size_t nalloc;
		const struct sched_alloc *alloc; /* NULL: unnamed (settings.unnamed_reservations) */
		int model;                  /* of the request, and what whole_pick() needs to name it */
		size_t need, nseg;          /* nseg: its releases, still in wseg */
	} vr;
	uint64_t *vr_bits;              /* unnamed: the bucket's words up to b when it was made */
	size_t cap_vr_bits;
	struct sched_alloc *vr_alloc;   /* unnamed: its nodes once named */
	size_t cap_vr_alloc;
	struct vres vr_cand;            /* what the last whole-node sweep found (on: valid) */
	uint32_t ne_gen;                /* this cycle's */
	struct bmove bmv;               /* bucket moves not yet in cnt and bm */
	/*
	 * delta->by_runs: this cycle's starts stay in the view (by_runs, set for
	 * the cycle) and the next call finds them among its added runs (kept:
	 * the starts, their allocations borrowed from the decisions' arena, which
	 * a cycle reuses only after its delta is applied). fab: per node,
	 * fabric_down (a start there makes the node bad, see node_bad()).
	 */
	bool by_runs;
	struct kept {
		int64_t job_id;
		size_t nalloc;
		const struct sched_alloc *alloc;
		bool found;             /* among the next call's added runs (apply()) */
	} *kept;
	size_t nkept, cap_kept;
	size_t *miss, cap_miss;         /* apply(): added runs no kept start matches */
	bool *fab;
};

#define SCHED_MCACHE 8
#define SCHED_AHEAD 16 /* jobs prefetched ahead of the priority-order walk */

struct cyc {
	const struct sched_snapshot *s;
	struct sched_decisions *d;
	const struct sched_job *probe;
	int64_t now;
	size_t nn;
	int nmodels;
	const char **models;
	int *model;                     /* per node */
	int *unit[SCHED_MAX_LEVELS];    /* per node, ids in [0, 2 nn) */
	bool *up;
	uint64_t *avail;                /* healthy GPUs of UP nodes */
	uint64_t *freemask;             /* free now, shrinks as jobs start */
	int *cnt;                       /* [(nmodels + 1) * 65]: UP nodes by free count */
	int *maxk;                      /* [nmodels + 1]: the most GPUs of a node of the model (row) */
	int *rhead;
	struct resv *resv;
	size_t nresv, cap_resv;
	int64_t total_gpus;
	int64_t *tgpus;                 /* per tenant: GPUs of its subtree's live runs */
	int *tjobs;                     /* per tenant: live runs of its subtree */
	bool *victim;                   /* per run: stopped in this cycle */
	int *run_gpus;
	struct rel *rel;                /* running runs' releases (one per run), sorted */
	size_t nrel;
	struct rel *crel;               /* this cycle's releases, kept sorted */
	size_t ncrel, cap_crel;
	int min_preempt_prio;           /* lowest class of a preemptible, not stopping run */
	int min_stopping_prio;          /* lowest class of a stopping run */
	int64_t max_stopping_end;
	/* scratch, nn entries each */
	struct cand *sc_cand;
	uint64_t *sc_mask, *sc_last;
	int64_t *sc_time;
	struct sched_alloc *sc_alloc, *sc_alloc2;
	int *agg_free[SCHED_MAX_LEVELS], *agg_cnt[SCHED_MAX_LEVELS]; /* per unit, zero between uses */
	size_t *subcnt, *subids;        /* fewest_then_tightest()'s counts per unit (kept zeroed) and ids */
	size_t *vsorted;                /* preemptible runs by cost, built on first use */
	size_t nvsorted;
	/* shape caches: failed placements (this cycle) and unit maxima */
	struct ctab *fcache, *ucache;
	struct ctab own_cache;
	/* the incremental view (NULL: everything above was built for this call) */
	struct inc *inc;
	bool flat;                      /* no topology levels: the incremental fast paths apply */
	bool sweeping;                  /* the sparse sweep state describes the current sweep */
	/* ordering */
	double *fs;
	size_t *order;
	double *prio;
	int64_t *runtime;
	size_t *rank;
	/* the last verdict computed by admissible() */
	enum sched_reason pv_reason;
	char pv_msg[160];
	struct qstate *quota;           /* sched_quota.c; NULL: no max_gpus, max_running_jobs or per-model quota anywhere */
	struct sched__arr *arr;         /* sched_array.c: live runs per job array, built on first use */
	/* model_id's cache: a job's gpu_model string (by pointer) -> its model */
	const char *mcache_p[SCHED_MCACHE];
	int mcache_id[SCHED_MCACHE];
	int nmcache;
	unsigned mcache_next;
	size_t narr;
	bool arr_built;
};

enum place_mode { PLACE_NOW, PLACE_LATER };

/*
 * Node n's GPUs in m that no reservation overlapping [t0, t1) holds. For
 * PLACE_NOW also the earliest later reservation's start (*key, INT64_MAX if
 * none) and the GPUs later reservations want (*pref), so that a start now
 * prefers GPUs nobody has reserved.
 */
static inline uint64_t sched__unreserved(const struct cyc *c, int n, uint64_t m, int64_t t0,
                                         int64_t t1, enum place_mode mode, int64_t *key,
                                         uint64_t *pref)
{
	*key = INT64_MAX;
	*pref = 0;
	for (int r = c->rhead[n]; r >= 0; r = c->resv[r].next) {
		const struct resv *x = &c->resv[r];
		if (x->start < t1 && t0 < x->end) {
			m &= ~x->mask;
		} else if (mode == PLACE_NOW && x->start >= t1) {
			if (x->start < *key)
				*key = x->start;
			*pref |= x->mask;
		}
	}
	return m;
}


/* Bit count without a libgcc call (no -mpopcnt in a portable build). */
static inline int sched__pc(uint64_t x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (int)((x * 0x0101010101010101ULL) >> 56);
}

/*
 * sched__pc() for the per-node loops of wide gangs (a start's or an end's
 * nodes): their masks are mostly 0 or the low k bits (whole nodes), counted
 * without the full sum. Not for placement over mixed nodes: there the extra
 * branch mispredicts (see bench/RESULTS.md, "per-node bookkeeping batched").
 */
static inline int sched__pc_low(uint64_t x)
{
	if ((x & (x + 1)) == 0)
		return x ? 64 - __builtin_clzll(x) : 0;
	return sched__pc(x);
}

/*
 * The run of parts from a[i] (i < na): consecutive node indexes, one GPU
 * mask; returns the entries it spans, its nodes in *len (one entry when
 * a[i] is a range already, struct sched_alloc.count). A wide gang's allocation is mostly a few such runs
 * (the flat placement takes whole nodes in node order), so the per-node
 * bookkeeping of its start and end checks and updates a run's nodes in
 * one tight loop over the view's arrays instead of node by node.
 */
static inline size_t sched__part_run(const struct sched_alloc *a, size_t i, size_t na, size_t *len)
{
	if (a[i].count > 1) { /* a range already */
		*len = (size_t)a[i].count;
		return 1;
	}
	size_t j = i + 1;
	while (j < na && a[j].count <= 1 && a[j].node == a[j - 1].node + 1 && a[j].gpus == a[i].gpus)
		j++;
	*len = j - i;
	return j - i;
}
void *sched__xmalloc(size_t n);
void *sched__xcalloc(size_t n, size_t size);
void *sched__grow(void *p, size_t *cap, size_t need, size_t size);

int64_t sched__run_end(const struct cyc *c, const struct sched_run *r);
void sched__bucket_move(struct cyc *c, int n, int from, int to);
int sched__nodes_ge(const struct cyc *c, int model, int g);
void sched__add_preemption(struct cyc *c, size_t ri, int64_t for_job, enum sched_preempt_reason why);

void sched__add_crel(struct cyc *c, int64_t t, int node, uint64_t mask, int run);
/* sched__add_crel() for every part of a with GPUs, in one insertion (wide gangs); when every part
 * has GPUs, one event over a[0..na) (a then stays borrowed for the cycle: the decisions' copy). */
void sched__add_crel_n(struct cyc *c, int64_t t, const struct sched_alloc *a, size_t na, int run);
void sched__add_resv(struct cyc *c, int node, uint64_t mask, int64_t start, int64_t end);
/* A reservation of a[0..na) over [start, end) (a borrowed for the cycle): per node, or held by counts. */
void sched__resv_commit(struct cyc *c, int64_t start, int64_t end, const struct sched_alloc *a, size_t na);
/* Per node from now on: a reservation held by counts is written out (every path but the fast ones). */
void sched__resv_name(struct cyc *c);
bool sched__vres_take(struct cyc *c, const struct sched_alloc *a, size_t na, int64_t start, int64_t end);
size_t sched__place(struct cyc *c, const struct req *q, const uint64_t *base, int64_t t0, int64_t t1,
                    enum place_mode mode, struct sched_alloc *out);
int64_t sched__earliest(struct cyc *c, const struct req *q, int64_t rt, struct sched_alloc *out, size_t *na);
int sched__max_in_unit_slow(struct cyc *c, const struct req *q, bool healthy_only);
/*
 * The most nodes one unit of q->required (or the cluster) holds for q's
 * shape. Every pending job asks at every pass, mostly for the shapes just
 * seen: those are answered here from the memo, without a call.
 */
static inline int sched__max_in_unit(struct cyc *c, const struct req *q, bool healthy_only)
{
	const struct ctab *t = c->ucache;
	const struct umemo *m = &t->memo[healthy_only][(unsigned)(q->model * 7 + q->g * 3 + q->required) & 15];
	if (t->gen && m->gen == t->gen && m->model == q->model && m->g == q->g && m->req == q->required)
		return m->value;
	return sched__max_in_unit_slow(c, q, healthy_only);
}
bool sched__cache_failed(struct cyc *c, const struct req *q, int64_t rt);
void sched__cache_fail(struct cyc *c, const struct req *q, int64_t rt);
/* sched_inc.c */
struct inc *sched__inc_take(struct sched_decisions *d);
void sched__inc_put(struct sched_decisions *d, struct inc *in);
void sched__inc_free(struct inc *in);
int sched__inc_begin(struct cyc *c, int (*validate)(struct cyc *));
void sched__inc_end(struct cyc *c);
/* A start changes node n's freemask: sched__inc_end() puts the snapshot's back. */
static inline void sched__inc_touch(struct cyc *c, int n)
{
	struct inc *in = c->inc;
	if (!in->tflag[n]) {
		in->tflag[n] = true;
		in->touched[in->ntouched++] = n;
	}
}
void *sched__scratch(struct cyc *c, enum scratch id, size_t bytes, bool zero);
void sched__inc_bucket(struct inc *in, int n, int from, int to);
/* Applies the pending bucket moves (in->bmv) to cnt and bm. */
void sched__inc_flush(struct inc *in);

/*
 * Node n (UP) moves from free count `from` to `to` in the view's buckets,
 * counts and bitmaps; batched with the pending moves while nodes come in
 * index order with the same counts (a wide gang's start or end), so call
 * sched__inc_flush() before reading in->cnt or in->bm.
 */
static inline void sched__inc_move(struct inc *in, int n, int from, int to)
{
	struct bmove *m = &in->bmv;
	int row = in->model[n];
	if (from == to)
		return;
	if (m->len && n == m->n0 + m->len && row == m->row && from == m->from && to == m->to) {
		m->len++;
		return;
	}
	sched__inc_flush(in);
	*m = (struct bmove){ n, 1, row, from, to };
}
/* sched__inc_move() for UP nodes n0..n0+len-1, all of model row `row`, all from `from` to `to`. */
static inline void sched__inc_move_range(struct inc *in, int n0, int len, int row, int from, int to)
{
	struct bmove *m = &in->bmv;
	if (from == to || len <= 0)
		return;
	if (m->len && n0 == m->n0 + m->len && row == m->row && from == m->from && to == m->to) {
		m->len += len;
		return;
	}
	sched__inc_flush(in);
	*m = (struct bmove){ n0, len, row, from, to };
}
/*
 * A start's run of parts on nodes n0..n0+len-1 (one mask m) with
 * delta->by_runs, in two tight passes when the nodes are alike (one free
 * mask, one model row, no fabric link down): their free masks lose m and
 * they move buckets together. false (nothing changed): node by node.
 */
bool sched__inc_take_run(struct inc *in, int n0, size_t len, uint64_t m);
void sched__inc_victim(struct cyc *c, size_t ri);
bool sched__rel_victim(const struct cyc *c, const struct rel *r);
void sched__inc_rel(struct cyc *c);
size_t sched__place_flat(struct cyc *c, const struct req *q, int64_t t0, int64_t t1, enum place_mode mode,
                         struct sched_alloc *out);
int64_t sched__earliest_flat(struct cyc *c, const struct req *q, int64_t rt, struct sched_alloc *out, size_t *na);
void sched__run_gpus(struct cyc *c);

/* sched_array.c: the %K throttle of job arrays. admit: whether job j (an
 * array task with a throttle) may start, with the array's live runs in
 * *running; started: counts a start of j; free: at the end of the cycle. */
bool sched__array_admit(struct cyc *c, const struct sched_job *j, int *running);
void sched__array_started(struct cyc *c, const struct sched_job *j);
void sched__array_free(struct cyc *c);
int sched__leaf_cmp(const void *a, const void *b);
uint64_t sched__take_bits(uint64_t pref, uint64_t all, int g);
bool sched__cache_get(struct ctab *t, int kind, const struct req *q, int64_t *value);
struct centry *sched__cache_put(struct ctab *t, int kind, const struct req *q);

/*
 * sched_quota.c: per-GPU-model quotas and the quota reservations hold. All
 * are no-ops (or say "fits") while c->quota is NULL. Messages go to msg.
 */
void sched__quota_setup(struct cyc *c);
void sched__quota_release(struct cyc *c);
bool sched__quota_split(const struct cyc *c, int tenant); /* model-less jobs must be checked per model */
int sched__quota_admit(const struct cyc *c, const struct sched_job *j, const struct req *q, int nmax, char *msg,
                       size_t len);
int sched__quota_cap(const struct cyc *c, const struct sched_job *j, int model, int64_t rt, int nmax, bool *held,
                     char *msg, size_t len);
bool sched__quota_fits(const struct cyc *c, const struct sched_job *j, const struct sched_alloc *a, size_t na,
                       int64_t end, bool *held, char *msg, size_t len);
void sched__quota_started(struct cyc *c, const struct sched_job *j, const struct sched_alloc *a, size_t na,
                          int64_t end);
bool sched__quota_reserve_ok(struct cyc *c, const struct sched_job *j, int64_t start, int64_t end,
                             const struct sched_alloc *a, size_t na, char *msg, size_t len);
void sched__quota_reserved(struct cyc *c, const struct sched_job *j, int64_t start, int64_t end,
                           const struct sched_alloc *a, size_t na);
/* The earliest time (>= now, among the next releases) its limits have room for job j's minimum on
 * `model` (-1: counted on all-model limits only), or SCHED_NEVER; then hold that quota from it. */
int64_t sched__quota_room_at(struct cyc *c, const struct sched_job *j, int model, int nmin);
void sched__quota_hold(struct cyc *c, const struct sched_job *j, int64_t start, int64_t end, int model, int nmin);
/* QuotaMax, or QuotaMaxRunningJobs when the last quota message written names a max_running_jobs. */
enum sched_reason sched__quota_reason(const struct cyc *c);
bool sched__quota_guaranteed(const struct cyc *c, int tenant);
bool sched__reclaims(const struct cyc *c, const struct sched_job *j, const struct req *q, int64_t need);
/* The job's tenant or nearest ancestor whose guarantee covers `need` more GPUs of its model, or -1. */
int sched__reclaim_cover(const struct cyc *c, const struct sched_job *j, const struct req *q, int64_t need);
/* A run of `tenant` borrows the GPUs (of q's model) for a job of tenant `reclaimer`: neither it
 * nor an ancestor the reclaimer is not under has a guarantee that covers them. */
bool sched__borrower(const struct cyc *c, int tenant, const struct req *q, int reclaimer);

bool sched__choose_victims(struct cyc *c, const struct sched_job *j, const struct req *q, int64_t rt,
                           enum sched_preempt_reason *why);

#endif
