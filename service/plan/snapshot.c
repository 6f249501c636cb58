/* snapshot.c - database snapshot <-> policy core. See snapshot.h. */
#include "snapshot.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* Bounds one cycle's pending-reason UPDATE (a new leader over 100k pending
 * jobs would otherwise rewrite them all in one cycle): jobs come in id
 * order, and what is left differs still and is written next cycle. */
#define SCHEDULER_MAX_REASON_WRITES 5000

struct idmap {
	int64_t id;
	int idx;
};

static int cmp_idmap(const void *x, const void *y)
{
	int64_t a = ((const struct idmap *)x)->id, b = ((const struct idmap *)y)->id;
	return (a > b) - (a < b);
}

/* Tenant ids are few and node ids sorted: a linear table would do, but a
 * sorted map keeps 10k-node lookups cheap. */
static int lookup(const struct idmap *m, size_t n, int64_t id)
{
	struct idmap key = { id, 0 };
	const struct idmap *hit = bsearch(&key, m, n, sizeof(*m), cmp_idmap);
	return hit ? hit->idx : -1;
}

struct ukey {
	int tenant;
	const char *name;
	int idx;
};

static int cmp_ukey(const void *x, const void *y)
{
	const struct ukey *a = x, *b = y;
	if (a->tenant != b->tenant)
		return a->tenant < b->tenant ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Private state hung off the public struct (kept out of the header). */
struct snap_priv {
	struct idmap *tenants, *nodes;
	struct ukey *users;
	size_t nusers;
};

static struct snap_priv *priv(const struct scheduler_snap *s)
{
	return s->priv;
}

int scheduler_snap_tenant(const struct scheduler_snap *s, int64_t id)
{
	return lookup(priv(s)->tenants, s->core.ntenants, id);
}

int scheduler_snap_node(const struct scheduler_snap *s, int64_t id)
{
	return lookup(priv(s)->nodes, s->core.nnodes, id);
}

int scheduler_snap_user(const struct scheduler_snap *s, int tenant, const char *name)
{
	struct ukey key = { tenant, name ? name : "", 0 };
	if (!priv(s)->nusers)
		return -1; /* no users yet: bsearch wants a non-NULL base */
	const struct ukey *hit = bsearch(&key, priv(s)->users, priv(s)->nusers, sizeof(key), cmp_ukey);
	return hit ? hit->idx : -1;
}

int scheduler_snap_level(const struct scheduler_snap *s, const char *name)
{
	if (!name || !*name)
		return -1;
	for (int i = 0; i < s->db->settings.nlevels; i++)
		if (!strcmp(s->db->settings.levels[i], name))
			return i;
	return -1;
}

static const struct store_sched_depstate *dep_lookup(const struct store_sched_depstate *st, size_t n,
						       int64_t id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (st[mid].job_id == id)
			return &st[mid];
		if (st[mid].job_id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static struct sched_dep dep_of(const struct store_sched_edge *e, const struct store_sched_depstate *states,
			       size_t nstates)
{
	const struct store_sched_depstate *st = dep_lookup(states, nstates, e->target);
	struct sched_dep d = { .job_id = e->target };

	d.type = e->type == STORE_SCHED_AFTERANY      ? SCHED_DEP_AFTERANY
		 : e->type == STORE_SCHED_AFTERNOTOK ? SCHED_DEP_AFTERNOTOK
						     : SCHED_DEP_AFTEROK;
	if (!st || !st->state[0])
		d.state = SCHED_DEP_MISSING;
	else if (!strcmp(st->state, "PENDING") || !strcmp(st->state, "STARTING") || !strcmp(st->state, "RUNNING"))
		d.state = SCHED_DEP_ACTIVE;
	else if (!strcmp(st->state, "COMPLETED") && st->exit_code <= 0)
		d.state = SCHED_DEP_OK;
	else
		d.state = SCHED_DEP_NOTOK;
	return d;
}

struct pkey {
	const char *path; /* the node's topology, borrowed */
	size_t len;       /* the prefix of it that names the unit */
	int node;
};

static int cmp_pkey(const void *x, const void *y)
{
	const struct pkey *a = x, *b = y;
	int c = memcmp(a->path, b->path, a->len < b->len ? a->len : b->len);
	if (!c)
		c = (a->len > b->len) - (a->len < b->len);
	return c ? c : (a->node > b->node) - (a->node < b->node);
}

static bool pkey_same(const struct pkey *a, const struct pkey *b)
{
	return a->len == b->len && !memcmp(a->path, b->path, a->len);
}

/* Topology units per level: nodes with the same path prefix (the first
 * level+1 components) share the index of the first such node. The
 * prefixes are compared in place (no copy per node per level per cycle). */
static void build_units(const struct store_sched_snap *db, struct sched_node *nodes)
{
	size_t n = db->nnodes;
	struct pkey *k = mu_calloc(n + 1, sizeof(*k));

	for (int lv = 0; lv < db->settings.nlevels && lv < SCHED_MAX_LEVELS; lv++) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			const char *t = db->nodes[i].topology, *e = t;
			int comp = 0;
			nodes[i].unit[lv] = -1;
			if (!*t)
				continue;
			/* find the end of component lv */
			for (;;) {
				const char *slash = strchr(e, '/');
				if (comp == lv) {
					e = slash ? slash : e + strlen(e);
					break;
				}
				if (!slash) {
					e = NULL;
					break;
				}
				e = slash + 1;
				comp++;
			}
			if (!e)
				continue;
			k[m++] = (struct pkey){ t, (size_t)(e - t), (int)i };
		}
		qsort(k, m, sizeof(*k), cmp_pkey);
		for (size_t i = 0, first = 0; i < m; i++) {
			if (i == 0 || !pkey_same(&k[i], &k[i - 1]))
				first = (size_t)k[i].node;
			nodes[k[i].node].unit[lv] = (int)first;
		}
	}
	for (int lv = db->settings.nlevels; lv < SCHED_MAX_LEVELS; lv++)
		for (size_t i = 0; i < n; i++)
			nodes[i].unit[lv] = -1;
	mu_free(k);
}

static const struct store_sched_class *class_of(const struct store_sched_snap *db, int id)
{
	for (size_t i = 0; i < db->nclasses; i++)
		if (db->classes[i].id == id)
			return &db->classes[i];
	return NULL;
}

/* The distinct (tenant, user) pairs seen, collected through an open
 * addressing set: 150k jobs name a few hundred users, and sorting all
 * 150k pairs (strcmp each) was most of the snapshot build. */
struct uset {
	struct ukey *u; /* the distinct pairs, in the order first seen */
	size_t n, cap;
	uint32_t *slot; /* index into u + 1; 0 = empty */
	size_t nslot;   /* a power of two, at least twice n */
	size_t last;    /* the pair found last */
};

static size_t ukey_slot(const struct uset *s, int tenant, const char *name)
{
	uint64_t h = UINT64_C(14695981039346656037) ^ (uint64_t)(uint32_t)tenant;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * UINT64_C(1099511628211);
	return (size_t)(h ^ (h >> 29)) & (s->nslot - 1);
}

static void uset_rehash(struct uset *s)
{
	s->nslot = s->nslot ? s->nslot * 2 : 1024;
	mu_free(s->slot);
	s->slot = mu_calloc(s->nslot, sizeof(*s->slot));
	for (size_t k = 0; k < s->n; k++) {
		size_t i = ukey_slot(s, s->u[k].tenant, s->u[k].name);
		while (s->slot[i])
			i = (i + 1) & (s->nslot - 1);
		s->slot[i] = (uint32_t)k + 1;
	}
}

/* The pair's index in the order first seen; -1 for no tenant. */
static int add_user(struct uset *s, int tenant, const char *name)
{
	size_t i;

	if (tenant < 0)
		return -1;
	name = name ? name : "";
	if (s->n && s->u[s->last].tenant == tenant && s->u[s->last].name == name)
		return (int)s->last; /* the rows share one string for a run of one user's jobs */
	if ((s->n + 1) * 2 > s->nslot)
		uset_rehash(s);
	for (i = ukey_slot(s, tenant, name); s->slot[i]; i = (i + 1) & (s->nslot - 1)) {
		const struct ukey *x = &s->u[s->slot[i] - 1];
		if (x->tenant == tenant && !strcmp(x->name, name)) {
			s->last = s->slot[i] - 1;
			return (int)s->last;
		}
	}
	s->u = mu_grow(s->u, &s->cap, s->n + 1, sizeof(*s->u));
	s->u[s->n] = (struct ukey){ tenant, name, (int)s->n };
	s->slot[i] = (uint32_t)++s->n;
	s->last = s->n - 1;
	return (int)s->last;
}

static void snap_job(const struct scheduler_snap *s, const struct store_sched_job *dj, int user,
		     const struct store_sched_edge *edges, const struct store_sched_depstate *states, size_t nstates,
		     struct sched_dep *deps, struct sched_job *j);

int scheduler_snap_build(const struct store_sched_snap *db, struct scheduler_snap *s, struct mu_error *err)
{
	struct snap_priv *p = mu_calloc(1, sizeof(*p));
	struct sched_snapshot *c = &s->core;
	size_t nu = 0, ndeps = 0;
	int *juser = NULL; /* each job's then each run's user index */
	int ret = 0;

	memset(s, 0, sizeof(*s));
	s->db = db;
	s->priv = p;

	/* settings */
	c->now = db->settings.now;
	c->settings.order = SCHED_ORDER_MULTIFACTOR;
	c->settings.weight_fairshare = db->settings.weight_fairshare;
	c->settings.weight_age = db->settings.weight_age;
	c->settings.weight_size = db->settings.weight_size;
	c->settings.weight_xfactor = db->settings.weight_xfactor;
	c->settings.starve_after = db->settings.starve_after;
	c->settings.max_age = db->settings.max_age;
	c->settings.reservation_depth = db->settings.reservation_depth;
	c->settings.predict = db->settings.predict_runtimes;
	c->settings.preemption = true;
	c->settings.nlevels = db->settings.nlevels < SCHED_MAX_LEVELS ? db->settings.nlevels : SCHED_MAX_LEVELS;
	for (int i = 0; i < c->settings.nlevels; i++)
		c->settings.levels[i] = db->settings.levels[i];

	/* tenants: the root first (store orders it so) */
	if (!db->ntenants || db->tenants[0].parent_id != 0) {
		ret = mu_error_set(err, MU_EINVAL, "", "snapshot has no root tenant");
		goto out;
	}
	s->tenants = mu_calloc(db->ntenants, sizeof(*s->tenants));
	p->tenants = mu_calloc(db->ntenants, sizeof(*p->tenants));
	for (size_t i = 0; i < db->ntenants; i++)
		p->tenants[i] = (struct idmap){ db->tenants[i].id, (int)i };
	qsort(p->tenants, db->ntenants, sizeof(*p->tenants), cmp_idmap);
	c->ntenants = db->ntenants;
	for (size_t i = 0; i < db->ntenants; i++) {
		struct sched_tenant *t = &s->tenants[i];
		t->name = db->tenants[i].name;
		t->parent = i == 0 ? -1 : lookup(p->tenants, db->ntenants, db->tenants[i].parent_id);
		t->shares = db->tenants[i].shares;
		t->max_gpus = -1;
		t->max_running_jobs = -1;
	}
	/* Quotas come ordered by tenant, then model: a tenant's per-model rows
	 * are consecutive and become one slice of model_quotas. */
	s->model_quotas = mu_calloc(db->nquotas + 1, sizeof(*s->model_quotas));
	for (size_t i = 0, nm = 0; i < db->nquotas; i++) {
		const struct store_sched_quota *dq = &db->quotas[i];
		int t = lookup(p->tenants, db->ntenants, dq->tenant_id);
		if (t < 0)
			continue;
		if (dq->gpu_model[0]) {
			struct sched_tenant *x = &s->tenants[t];
			if (!x->nmodel_quotas)
				x->model_quotas = &s->model_quotas[nm];
			s->model_quotas[nm++] = (struct sched_model_quota){ dq->gpu_model, dq->guaranteed_gpus,
									    dq->max_gpus };
			x->nmodel_quotas++;
			continue;
		}
		s->tenants[t].guaranteed_gpus = dq->guaranteed_gpus;
		s->tenants[t].max_gpus = dq->max_gpus;
		s->tenants[t].max_running_jobs = dq->max_running_jobs;
	}
	c->tenants = s->tenants;

	/* users: every (tenant, user) seen in jobs, runs and usage, in order.
	 * Each job's and run's pair is remembered as found (by index, then
	 * mapped to the sorted order), not looked up again by name. */
	{
		struct uset us = { 0 };
		juser = mu_calloc(db->njobs + db->nruns + 1, sizeof(*juser));
		for (size_t i = 0; i < db->njobs; i++)
			juser[i] = add_user(&us, lookup(p->tenants, db->ntenants, db->jobs[i].tenant_id),
					    db->jobs[i].user);
		for (size_t i = 0; i < db->nruns; i++)
			juser[db->njobs + i] = add_user(&us, lookup(p->tenants, db->ntenants, db->runs[i].tenant_id),
							db->runs[i].user);
		for (size_t i = 0; i < db->nusage; i++)
			if (db->usage[i].user[0])
				add_user(&us, lookup(p->tenants, db->ntenants, db->usage[i].tenant_id),
					 db->usage[i].user);
		mu_free(us.slot);
		p->users = us.u;
		nu = us.n;
		if (nu)
			qsort(p->users, nu, sizeof(*p->users), cmp_ukey);
		int *at = mu_calloc(nu + 1, sizeof(*at)); /* first-seen index -> sorted */
		for (size_t i = 0; i < nu; i++)
			at[p->users[i].idx] = (int)i;
		for (size_t i = 0; i < db->njobs + db->nruns; i++)
			juser[i] = juser[i] < 0 ? -1 : at[juser[i]];
		mu_free(at);
	}
	p->nusers = nu;
	s->users = mu_calloc(nu + 1, sizeof(*s->users));
	for (size_t i = 0; i < nu; i++) {
		p->users[i].idx = (int)i;
		s->users[i] = (struct sched_user){ .name = p->users[i].name, .tenant = p->users[i].tenant,
						   .shares = 1 };
	}
	for (size_t i = 0; i < db->nusage; i++) {
		int t = lookup(p->tenants, db->ntenants, db->usage[i].tenant_id);
		if (t < 0)
			continue;
		if (!db->usage[i].user[0]) {
			s->tenants[t].usage += db->usage[i].value;
			continue;
		}
		int u = scheduler_snap_user(s, t, db->usage[i].user);
		if (u >= 0)
			s->users[u].usage += db->usage[i].value;
	}
	/* Recent actual run times: what the core predicts runtimes from. */
	for (size_t i = 0; i < db->nruntimes; i++) {
		const struct store_sched_runtime *rt = &db->runtimes[i];
		int t = lookup(p->tenants, db->ntenants, rt->tenant_id);
		int u = t < 0 ? -1 : scheduler_snap_user(s, t, rt->user);
		if (u < 0)
			continue;
		s->users[u].nrecent = rt->n < 2 ? (rt->n > 0 ? rt->n : 0) : 2;
		s->users[u].recent_runtime[0] = rt->recent[0];
		s->users[u].recent_runtime[1] = rt->recent[1];
	}
	c->nusers = nu;
	c->users = s->users;

	/* nodes */
	s->nodes = mu_calloc(db->nnodes + 1, sizeof(*s->nodes));
	p->nodes = mu_calloc(db->nnodes + 1, sizeof(*p->nodes));
	for (size_t i = 0; i < db->nnodes; i++) {
		const struct store_sched_node *dn = &db->nodes[i];
		struct sched_node *n = &s->nodes[i];
		p->nodes[i] = (struct idmap){ dn->id, (int)i };
		n->name = dn->name;
		n->gpu_model = dn->gpu_model;
		n->gpu_count = dn->gpu_count < SCHED_MAX_GPUS ? dn->gpu_count : SCHED_MAX_GPUS;
		n->healthy = dn->healthy_mask;
		if (n->gpu_count < SCHED_MAX_GPUS)
			n->healthy &= (UINT64_C(1) << n->gpu_count) - 1;
		n->state = !dn->up ? SCHED_NODE_DOWN : dn->drain ? SCHED_NODE_DRAIN : SCHED_NODE_UP;
		n->fabric_down = dn->fabric_fault;
	}
	qsort(p->nodes, db->nnodes, sizeof(*p->nodes), cmp_idmap);
	build_units(db, s->nodes);
	c->nnodes = db->nnodes;
	c->nodes = s->nodes;

	/* runs: one sched_alloc per node of the allocation, in rank order */
	s->runs = mu_calloc(db->nruns + 1, sizeof(*s->runs));
	s->allocs = mu_calloc(db->nallocs + 1, sizeof(*s->allocs));
	{
		size_t na = 0;
		for (size_t i = 0; i < db->nruns; i++) {
			const struct store_sched_run *dr = &db->runs[i];
			const struct store_sched_class *cl = class_of(db, dr->priority_class_id);
			struct sched_run *r = &s->runs[i];
			int t = lookup(p->tenants, db->ntenants, dr->tenant_id);
			size_t first = na;
			int last_rank = -1;

			r->run_id = dr->id;
			r->job_id = dr->job_id;
			r->tenant = t < 0 ? 0 : t;
			r->user = t < 0 ? scheduler_snap_user(s, r->tenant, dr->user) : juser[db->njobs + i];
			r->priority = cl ? cl->priority : 0;
			r->preemptible = cl ? cl->preemptible : true;
			r->grace = cl ? cl->grace_period : 30;
			r->stopping = dr->stopping;
			r->start = dr->start;
			r->time_limit = dr->time_limit;
			r->min_nodes = dr->min_nodes;
			r->array_job_id = dr->array_job_id;
			/* Planned at its prediction while it lasts; past it, at its limit. */
			r->predicted_end = dr->predicted_runtime > 0 ? dr->start + dr->predicted_runtime : 0;
			for (size_t k = dr->alloc_first; k < dr->alloc_first + dr->alloc_count; k++) {
				const struct store_sched_alloc *a = &db->allocs[k];
				int node = lookup(p->nodes, db->nnodes, a->node_id);
				if (node < 0)
					continue;
				if (a->node_rank != last_rank || na == first) {
					s->allocs[na++] = (struct sched_alloc){ .node = node };
					last_rank = a->node_rank;
				}
				if (a->gpu_index >= 0 && a->gpu_index < SCHED_MAX_GPUS) {
					s->allocs[na - 1].gpus |= UINT64_C(1) << a->gpu_index;
					s->nodes[node].used |= UINT64_C(1) << a->gpu_index;
				}
			}
			r->alloc = &s->allocs[first];
			r->nalloc = na - first;
		}
	}
	c->nruns = db->nruns;
	c->runs = s->runs;

	/* pending jobs */
	s->deps = mu_calloc(db->nedges + db->njobs + 1, sizeof(*s->deps)); /* + a singleton each */
	s->jobs = mu_calloc(db->njobs + 1, sizeof(*s->jobs));
	for (size_t i = 0; i < db->njobs; i++) {
		const struct store_sched_job *dj = &db->jobs[i];
		snap_job(s, dj, juser[i], &db->edges[dj->dep_first], db->deps, db->ndeps, &s->deps[ndeps],
			 &s->jobs[i]);
		ndeps += s->jobs[i].ndeps;
	}
	c->njobs = db->njobs;
	c->jobs = s->jobs;
out:
	mu_free(juser);
	return ret;
}

/* user: the job's index in s->users when known (-2: look it up by name) */
static void snap_job(const struct scheduler_snap *s, const struct store_sched_job *dj, int user,
		     const struct store_sched_edge *edges, const struct store_sched_depstate *states, size_t nstates,
		     struct sched_dep *deps, struct sched_job *j)
{
	const struct store_sched_class *cl = class_of(s->db, dj->priority_class_id);
	int t = scheduler_snap_tenant(s, dj->tenant_id);

	memset(j, 0, sizeof(*j));
	j->id = dj->id;
	j->tenant = t < 0 ? 0 : t;
	j->user = t >= 0 && user != -2 ? user : scheduler_snap_user(s, j->tenant, dj->user);
	j->priority = cl ? cl->priority : 0;
	j->preemptible = cl ? cl->preemptible : true;
	j->submit = dj->created_at;
	j->nodes = dj->nodes;
	j->min_nodes = dj->min_nodes > 0 && dj->min_nodes < dj->nodes ? dj->min_nodes : 0;
	j->gpus_per_node = dj->gpus_per_node;
	j->gpu_model = dj->gpu_model;
	j->topo_required = scheduler_snap_level(s, dj->topology_required);
	j->topo_preferred = scheduler_snap_level(s, dj->topology_preferred);
	j->time_limit = dj->time_limit;
	j->array_job_id = dj->array_job_id;
	j->array_throttle = dj->array_throttle;
	for (size_t k = 0; k < dj->dep_count; k++)
		deps[k] = dep_of(&edges[k], states, nstates);
	j->ndeps = dj->dep_count;
	if (dj->singleton_blocker) /* singleton: waits as afterany on the earlier active job */
		deps[j->ndeps++] = (struct sched_dep){ .type = SCHED_DEP_AFTERANY,
						       .job_id = dj->singleton_blocker,
						       .state = SCHED_DEP_ACTIVE };
	if (j->ndeps)
		j->deps = deps;
}

void scheduler_snap_job(const struct scheduler_snap *s, const struct store_sched_job *dj,
			const struct store_sched_edge *edges, const struct store_sched_depstate *states,
			size_t nstates, struct sched_dep *deps, struct sched_job *j)
{
	snap_job(s, dj, -2, edges, states, nstates, deps, j);
}

void scheduler_snap_release(struct scheduler_snap *s)
{
	struct snap_priv *p = priv(s);

	if (p) {
		mu_free(p->tenants);
		mu_free(p->nodes);
		mu_free(p->users);
		mu_free(p);
	}
	mu_free(s->nodes);
	mu_free(s->allocs);
	mu_free(s->runs);
	mu_free(s->jobs);
	mu_free(s->deps);
	mu_free(s->tenants);
	mu_free(s->model_quotas);
	mu_free(s->users);
	memset(s, 0, sizeof(*s));
}

static int popcount64(uint64_t v)
{
	return __builtin_popcountll(v);
}

void scheduler_decisions_from_core(const struct scheduler_snap *s, const struct sched_decisions *d,
				   struct scheduler_decisions *o)
{
	const struct store_sched_snap *db = s->db;
	size_t nnode_ids = 0, ngpus = 0, np = 0, npre = 0, nfr = 0;

	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < d->nstarts; i++) {
		nnode_ids += d->starts[i].nalloc;
		for (size_t k = 0; k < d->starts[i].nalloc; k++)
			ngpus += (size_t)popcount64(d->starts[i].alloc[k].gpus);
	}
	o->starts = mu_calloc(d->nstarts + 1, sizeof(*o->starts));
	o->node_ids = mu_calloc(nnode_ids + 1, sizeof(*o->node_ids));
	o->gpus = mu_calloc(ngpus + 1, sizeof(*o->gpus));
	nnode_ids = ngpus = 0;
	size_t ns = 0;
	for (size_t i = 0; i < d->nstarts; i++) {
		const struct sched_start *st = &d->starts[i];
		const struct store_sched_job *dj = &db->jobs[st->job];
		struct store_sched_start *x = &o->starts[ns];
		size_t n0 = nnode_ids, g0 = ngpus;
		bool ok = st->nalloc > 0;
		x->job_id = st->job_id;
		x->nnodes = (int)st->nalloc;
		x->gpus_per_node = dj->gpus_per_node;
		x->predicted_runtime = 0;
		if (s->core.settings.predict && st->planned_end - s->core.now < dj->time_limit)
			x->predicted_runtime = (int)(st->planned_end - s->core.now);
		x->node_ids = &o->node_ids[nnode_ids];
		x->gpus = &o->gpus[ngpus];
		for (size_t k = 0; k < st->nalloc && ok; k++) {
			o->node_ids[nnode_ids++] = db->nodes[st->alloc[k].node].id;
			int got = 0;
			for (int g = 0; g < SCHED_MAX_GPUS && got < dj->gpus_per_node; g++)
				if (st->alloc[k].gpus & (UINT64_C(1) << g)) {
					o->gpus[ngpus++] = g;
					got++;
				}
			ok = got == dj->gpus_per_node;
		}
		if (ok) {
			ns++;
		} else {
			nnode_ids = n0;
			ngpus = g0;
			o->dropped++;
		}
	}
	o->pending = mu_calloc(d->nverdicts + 1, sizeof(*o->pending));
	for (size_t i = 0; i < d->nverdicts && i < db->njobs; i++) {
		const struct sched_verdict *v = &d->verdicts[i];
		const struct store_sched_job *dj = &db->jobs[i];
		const char *reason = sched_reason_name(v->reason);
		int64_t ps = v->planned_start == SCHED_NEVER ? 0 : v->planned_start;
		if (v->reason == SCHED_REASON_NONE)
			continue; /* starts now */
		if (np >= SCHEDULER_MAX_REASON_WRITES)
			break; /* the rest follow in the next cycles */
		if (!strcmp(reason, dj->pending_reason) && !strcmp(v->message, dj->pending_message) &&
		    ps == dj->planned_start)
			continue;
		o->pending[np++] = (struct store_sched_pending){ dj->id, reason, v->message, ps };
	}
	o->fails = mu_calloc(d->nfails + 1, sizeof(*o->fails));
	for (size_t i = 0; i < d->nfails; i++)
		o->fails[i] = (struct store_sched_pending){ d->fails[i].job_id,
							    sched_reason_name(d->fails[i].reason),
							    d->fails[i].message, 0 };
	o->preempt = mu_calloc(d->npreemptions + 1, sizeof(*o->preempt));
	o->fail_runs = mu_calloc(d->npreemptions + d->nshrinks + 1, sizeof(*o->fail_runs));
	for (size_t i = 0; i < d->npreemptions; i++) {
		if (d->preemptions[i].reason == SCHED_PREEMPT_NODE_FAIL)
			o->fail_runs[nfr++] = d->preemptions[i].run_id;
		else
			o->preempt[npre++] = d->preemptions[i].run_id;
	}
	/* Elastic runs that keep >= min_nodes shrink in place: the kept nodes
	 * by id. One that would keep nothing is stopped like any node failure. */
	size_t nkeep = 0, nsh = 0;
	for (size_t i = 0; i < d->nshrinks; i++)
		nkeep += d->shrinks[i].nalloc;
	o->shrinks = mu_calloc(d->nshrinks + 1, sizeof(*o->shrinks));
	o->keep_ids = mu_calloc(nkeep + 1, sizeof(*o->keep_ids));
	nkeep = 0;
	for (size_t i = 0; i < d->nshrinks; i++) {
		const struct sched_shrink *sh = &d->shrinks[i];
		if (!sh->nalloc) {
			o->fail_runs[nfr++] = sh->run_id;
			continue;
		}
		o->shrinks[nsh++] = (struct store_sched_shrink){ sh->run_id, (int)sh->nalloc, &o->keep_ids[nkeep] };
		for (size_t k = 0; k < sh->nalloc; k++)
			o->keep_ids[nkeep++] = db->nodes[sh->alloc[k].node].id;
	}
	o->db = (struct store_sched_decisions){ o->starts, ns, o->pending, np, o->preempt, npre,
						o->fail_runs, nfr, o->fails, d->nfails, o->shrinks, nsh };
}

void scheduler_decisions_release(struct scheduler_decisions *o)
{
	mu_free(o->starts);
	mu_free(o->pending);
	mu_free(o->fails);
	mu_free(o->preempt);
	mu_free(o->fail_runs);
	mu_free(o->shrinks);
	mu_free(o->keep_ids);
	mu_free(o->node_ids);
	mu_free(o->gpus);
	memset(o, 0, sizeof(*o));
}
