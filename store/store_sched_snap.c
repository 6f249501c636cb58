/* store_sched_snap.c - the scheduler's snapshot load and decision commit.
 * See store_sched.h. */
#include "store_sched.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "log.h"

/* ---- a growable text buffer for array parameters ------------------------- */

struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_putn(struct sbuf *b, const char *s, size_t n)
{
	b->p = mu_grow(b->p, &b->cap, b->len + n + 1, 1);
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_int(struct sbuf *b, int64_t v)
{
	char t[32];
	int n = snprintf(t, sizeof(t), "%s%" PRId64, b->len > 1 ? "," : "", v);
	sb_putn(b, t, (size_t)n);
}

/* Appends one element of a text[] literal, quoted and escaped. */
static void sb_text(struct sbuf *b, const char *s)
{
	if (b->len > 1)
		sb_putn(b, ",", 1);
	sb_putn(b, "\"", 1);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			sb_putn(b, "\\", 1);
		sb_putn(b, s, 1);
	}
	sb_putn(b, "\"", 1);
}

static void sb_open(struct sbuf *b)
{
	b->len = 0;
	sb_putn(b, "{", 1);
}

static void sb_close(struct sbuf *b)
{
	sb_putn(b, "}", 1);
}

/* ---- snapshot -------------------------------------------------------------- */

static char *dup(struct mu_arena *a, const PGresult *r, int row, int col)
{
	return mu_arena_strdup(a, store_db_get(r, row, col));
}

static int geti(const PGresult *r, int row, int col)
{
	return (int)store_db_get_int64(r, row, col);
}

static int64_t getl(const PGresult *r, int row, int col)
{
	return store_db_get_int64(r, row, col);
}

/* ---- the snapshot's queries, sent as one batch ---------------------------- */

/* One round trip for the parameterless queries of a snapshot (a
 * multi-statement simple query inside the cycle's transaction); the
 * loaders below take their results in this order. */
#define SNAP_NSQL 11
static const char *const snap_sql[SNAP_NSQL] = {
	    "SELECT n.id, n.name, n.address, n.topology, n.gpu_model, n.gpu_count, n.up,"
	    " n.drain, coalesce(g.mask, 0), g.node_id IS NOT NULL, n.fabric_fault <> ''"
	    " FROM nodes n LEFT JOIN (SELECT node_id, bit_or(CASE WHEN healthy AND idx < 64"
	    "   THEN (1::bigint << idx) ELSE 0 END) AS mask FROM gpus GROUP BY node_id) g"
	    "   ON g.node_id = n.id ORDER BY n.id",
	    "SELECT run_id, node_id, node_rank, gpu_index FROM run_allocations WHERE live"
	    " ORDER BY run_id, node_rank, gpu_index",
	    "SELECT r.id, r.job_id, j.tenant_id, j.user_name, j.priority_class_id, r.nodes,"
	    " r.gpus_per_node, r.time_limit,"
	    " extract(epoch FROM coalesce(r.started_at, r.created_at))::bigint,"
	    " r.state = 'STOPPING', coalesce(j.min_nodes, 0), coalesce(r.predicted_runtime, 0),"
	    " coalesce(j.array_job_id, 0)" /* job arrays: the %K throttle counts live runs */
	    " FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.live ORDER BY r.id",
	    "SELECT id, tenant_id, user_name, gpu_model, topology_required,"
	    " topology_preferred, dependencies::text, pending_reason, pending_message,"
	    " priority_class_id, nodes, coalesce(min_nodes, nodes), gpus_per_node,"
	    " time_limit, retries, extract(epoch FROM created_at)::bigint,"
	    " coalesce(extract(epoch FROM planned_start)::bigint, 0),"
	    " coalesce(array_job_id, 0), array_throttle," /* job arrays */
	    " CASE WHEN dependencies @> '[{\"type\": \"singleton\"}]' THEN coalesce((SELECT max(o.id)"
	    "   FROM jobs o WHERE o.tenant_id = jobs.tenant_id AND o.user_name = jobs.user_name"
	    "   AND o.name = jobs.name AND o.id < jobs.id AND o.state IN ('PENDING', 'STARTING', 'RUNNING')),"
	    "   0) ELSE 0 END" /* singleton (migration 132's index) */
	    " FROM jobs WHERE state = 'PENDING' AND NOT held"
	    " AND (begin_at IS NULL OR begin_at <= now()) ORDER BY id", /* Held, BeginTime: store_jobctl.c */
	    "SELECT id, coalesce(parent_id, 0), name, shares FROM tenants"
	    " ORDER BY parent_id IS NOT NULL, id",
	    "SELECT tenant_id, gpu_model, guaranteed_gpus, coalesce(max_gpus, -1),"
	    " coalesce(max_running_jobs, -1) FROM quotas ORDER BY tenant_id, gpu_model",
	    "SELECT id, priority, grace_period, preemptible, name FROM priority_classes"
	    " ORDER BY id",
	    "SELECT tenant_id, user_name, muster_decay(value,"
	    " extract(epoch FROM now() - updated_at), %d)"
	    " FROM usage_decayed ORDER BY tenant_id, user_name",
	    "SELECT tenant_id, user_name, least(cardinality(recent), 2), coalesce(recent[1], 0),"
	    " coalesce(recent[2], 0) FROM user_runtimes ORDER BY tenant_id, user_name",
	    /* Dependencies as typed edges, and the states of every job they
	     * name, read from jsonb by the database (never searched as text).
	     * A superset of the jobs loaded above: edges are merged by job id. */
	    /* (A value the API would never write, a non-array or a job_id that is
	     * no number, becomes a dependency on no job rather than a failed cycle.) */
	    "SELECT j.id, CASE WHEN jsonb_typeof(x.e->'job_id') = 'number' THEN (x.e->>'job_id')::numeric::bigint"
	    " ELSE 0 END, CASE x.e->>'type' WHEN 'afterany' THEN 1 WHEN 'afternotok' THEN 2 ELSE 0 END"
	    " FROM jobs j CROSS JOIN LATERAL jsonb_array_elements(j.dependencies) WITH ORDINALITY x(e, n)"
	    " WHERE j.state = 'PENDING' AND j.dependencies <> '[]' AND jsonb_typeof(j.dependencies) = 'array'"
	    " AND coalesce(x.e->>'type', '') <> 'singleton'" /* names no job: singleton_blocker */
	    " ORDER BY j.id, x.n",
	    /* job arrays: the first task's id stands for every task: active
	     * while one is, COMPLETED with 0 only when all are, else FAILED */
	    "SELECT d.id, CASE WHEN bool_or(x.state IN ('PENDING', 'STARTING', 'RUNNING')) THEN 'RUNNING'"
	    " WHEN bool_and(x.state = 'COMPLETED' AND coalesce(x.exit_code, 0) = 0) THEN 'COMPLETED'"
	    " WHEN count(*) = 1 THEN min(x.state) ELSE 'FAILED' END,"
	    " CASE WHEN bool_and(x.state = 'COMPLETED' AND coalesce(x.exit_code, 0) = 0) THEN 0"
	    " WHEN count(*) = 1 THEN coalesce(min(x.exit_code), -1) ELSE -1 END"
	    " FROM (SELECT DISTINCT CASE WHEN jsonb_typeof(x->'job_id') = 'number'"
	    "   THEN (x->>'job_id')::numeric::bigint END AS id"
	    "  FROM jobs j, jsonb_array_elements(j.dependencies) x WHERE j.state = 'PENDING'"
	    "  AND j.dependencies <> '[]' AND jsonb_typeof(j.dependencies) = 'array') d"
	    " JOIN LATERAL (SELECT state, exit_code FROM jobs WHERE id = d.id UNION ALL"
	    "  SELECT state, exit_code FROM jobs WHERE array_job_id = d.id AND id <> d.id) x ON true"
	    " GROUP BY d.id ORDER BY d.id"
};

struct batch {
	PGresult *res[SNAP_NSQL];
	int next, n;
};

static int batch_run(PGconn *c, struct batch *b, int half_life, struct mu_error *err)
{
	char usage[1024];
	char *all = NULL;
	size_t cap = 0, len = 0;
	PGresult *r;
	int ret = 0;

	memset(b, 0, sizeof(*b));
	snprintf(usage, sizeof(usage), snap_sql[7], half_life);
	for (int i = 0; i < SNAP_NSQL; i++) {
		const char *q = i == 7 ? usage : snap_sql[i];
		size_t n = strlen(q);
		all = mu_grow(all, &cap, len + n + 3, 1);
		memcpy(all + len, q, n);
		len += n;
		memcpy(all + len, ";\n", 3);
		len += 2;
	}
	if (!PQsendQuery(c, all)) {
		ret = store_db_check(c, NULL, err);
		goto out;
	}
	while ((r = PQgetResult(c))) {
		int rc = store_db_check(c, r, err);
		if (rc && !ret)
			ret = rc;
		if (rc || b->n >= SNAP_NSQL)
			PQclear(r);
		else
			b->res[b->n++] = r;
	}
	if (!ret && b->n != SNAP_NSQL)
		ret = mu_error_set(err, MU_EINTERNAL, "", "snapshot batch returned %d results", b->n);
out:
	mu_free(all);
	return ret;
}

/* The next batched result (new: the caller clears it). */
static int take(struct batch *b, PGresult **r, struct mu_error *err)
{
	if (b->next >= b->n) {
		*r = NULL;
		return mu_error_set(err, MU_EINTERNAL, "", "snapshot batch exhausted");
	}
	*r = b->res[b->next];
	b->res[b->next++] = NULL;
	return 0;
}

static void batch_release(struct batch *b)
{
	for (int i = 0; i < b->n; i++)
		store_db_clear(b->res[i]);
	memset(b, 0, sizeof(*b));
}

static int load_nodes(PGconn *c, struct batch *b, struct store_sched_snap *s, struct mu_arena *a,
		      struct mu_error *err)
{
	PGresult *r = NULL;
	/* GPU health as one bitmask per node (bit i = GPU i healthy), by one
	 * aggregate join rather than a subquery per node. */
	int ret = take(b, &r, err);
	if (ret)
		goto out;
	s->nnodes = (size_t)store_db_nrows(r);
	s->nodes = mu_arena_alloc(a, s->nnodes * sizeof(*s->nodes) + 1);
	for (size_t i = 0; i < s->nnodes; i++) {
		struct store_sched_node *n = &s->nodes[i];
		int row = (int)i;
		n->id = getl(r, row, 0);
		n->name = dup(a, r, row, 1);
		n->address = dup(a, r, row, 2);
		n->topology = dup(a, r, row, 3);
		n->gpu_model = dup(a, r, row, 4);
		n->gpu_count = geti(r, row, 5);
		n->up = store_db_get_bool(r, row, 6);
		n->drain = store_db_get_bool(r, row, 7);
		n->fabric_fault = store_db_get_bool(r, row, 10);
		if (!store_db_get_bool(r, row, 9)) {
			/* No GPU rows (registered before its agent reported):
			 * trust gpu_count. */
			int k = n->gpu_count < 64 ? n->gpu_count : 64;
			n->healthy_mask = k == 64 ? UINT64_MAX : ((UINT64_C(1) << k) - 1);
		} else {
			n->healthy_mask = (uint64_t)store_db_get_int64(r, row, 8);
		}
	}
out:
	store_db_clear(r);
	return ret;
}

static int load_runs(PGconn *c, struct batch *b, struct store_sched_snap *s, struct mu_arena *a,
		      struct mu_error *err)
{
	PGresult *r = NULL;
	size_t k = 0;
	int ret = take(b, &r, err);
	if (ret)
		goto out;
	s->nallocs = (size_t)store_db_nrows(r);
	s->allocs = mu_arena_alloc(a, s->nallocs * sizeof(*s->allocs) + 1);
	for (size_t i = 0; i < s->nallocs; i++) {
		s->allocs[i] = (struct store_sched_alloc){ getl(r, (int)i, 0), getl(r, (int)i, 1),
							   geti(r, (int)i, 2), geti(r, (int)i, 3) };
	}
	store_db_clear(r);
	r = NULL;
	ret = take(b, &r, err);
	if (ret)
		goto out;
	s->nruns = (size_t)store_db_nrows(r);
	s->runs = mu_arena_alloc(a, s->nruns * sizeof(*s->runs) + 1);
	for (size_t i = 0; i < s->nruns; i++) {
		struct store_sched_run *x = &s->runs[i];
		int row = (int)i;
		x->id = getl(r, row, 0);
		x->job_id = getl(r, row, 1);
		x->tenant_id = getl(r, row, 2);
		x->user = dup(a, r, row, 3);
		x->priority_class_id = geti(r, row, 4);
		x->nodes = geti(r, row, 5);
		x->gpus_per_node = geti(r, row, 6);
		x->time_limit = geti(r, row, 7);
		x->start = getl(r, row, 8);
		x->stopping = store_db_get_bool(r, row, 9);
		x->min_nodes = geti(r, row, 10);
		x->predicted_runtime = geti(r, row, 11);
		x->array_job_id = getl(r, row, 12);
		if (x->min_nodes >= x->nodes)
			x->min_nodes = 0; /* not elastic (any more): it cannot lose a node */
		/* Both lists are sorted by run id: merge. */
		while (k < s->nallocs && s->allocs[k].run_id < x->id)
			k++;
		x->alloc_first = k;
		while (k < s->nallocs && s->allocs[k].run_id == x->id)
			k++;
		x->alloc_count = k - x->alloc_first;
	}
out:
	store_db_clear(r);
	return ret;
}

static int load_jobs(PGconn *c, struct batch *b, struct store_sched_snap *s, struct mu_arena *a,
		      struct mu_error *err)
{
	PGresult *r = NULL;
	int ret = take(b, &r, err);
	if (ret)
		goto out;
	s->njobs = (size_t)store_db_nrows(r);
	s->jobs = mu_arena_alloc(a, s->njobs * sizeof(*s->jobs) + 1);
	for (size_t i = 0; i < s->njobs; i++) {
		struct store_sched_job *j = &s->jobs[i];
		int row = (int)i;
		j->id = getl(r, row, 0);
		j->tenant_id = getl(r, row, 1);
		j->user = dup(a, r, row, 2);
		j->gpu_model = dup(a, r, row, 3);
		j->topology_required = dup(a, r, row, 4);
		j->topology_preferred = dup(a, r, row, 5);
		j->dependencies = dup(a, r, row, 6);
		j->pending_reason = dup(a, r, row, 7);
		j->pending_message = dup(a, r, row, 8);
		j->priority_class_id = geti(r, row, 9);
		j->nodes = geti(r, row, 10);
		j->min_nodes = geti(r, row, 11);
		j->gpus_per_node = geti(r, row, 12);
		j->time_limit = geti(r, row, 13);
		j->retries = geti(r, row, 14);
		j->created_at = getl(r, row, 15);
		j->planned_start = getl(r, row, 16);
		j->array_job_id = getl(r, row, 17);
		j->array_throttle = geti(r, row, 18);
		j->singleton_blocker = getl(r, row, 19);
	}
out:
	store_db_clear(r);
	return ret;
}

static int load_policy(PGconn *c, struct batch *b, struct store_sched_snap *s, struct mu_arena *a,
		      struct mu_error *err)
{
	PGresult *r = NULL;
	int ret = take(b, &r, err);
	if (ret)
		goto out;
	s->ntenants = (size_t)store_db_nrows(r);
	s->tenants = mu_arena_alloc(a, s->ntenants * sizeof(*s->tenants) + 1);
	for (size_t i = 0; i < s->ntenants; i++)
		s->tenants[i] = (struct store_sched_tenant){ getl(r, (int)i, 0), getl(r, (int)i, 1),
							     dup(a, r, (int)i, 2), geti(r, (int)i, 3) };
	store_db_clear(r);
	r = NULL;

	ret = take(b, &r, err);
	if (ret)
		goto out;
	s->nquotas = (size_t)store_db_nrows(r);
	s->quotas = mu_arena_alloc(a, s->nquotas * sizeof(*s->quotas) + 1);
	for (size_t i = 0; i < s->nquotas; i++)
		s->quotas[i] = (struct store_sched_quota){ getl(r, (int)i, 0), dup(a, r, (int)i, 1),
							   geti(r, (int)i, 2), geti(r, (int)i, 3),
							   geti(r, (int)i, 4) };
	store_db_clear(r);
	r = NULL;

	ret = take(b, &r, err);
	if (ret)
		goto out;
	s->nclasses = (size_t)store_db_nrows(r);
	s->classes = mu_arena_alloc(a, s->nclasses * sizeof(*s->classes) + 1);
	for (size_t i = 0; i < s->nclasses; i++)
		s->classes[i] = (struct store_sched_class){ geti(r, (int)i, 0), geti(r, (int)i, 1),
							    geti(r, (int)i, 2),
							    store_db_get_bool(r, (int)i, 3),
							    dup(a, r, (int)i, 4) };
	store_db_clear(r);
	r = NULL;

	ret = take(b, &r, err);
	if (ret)
		goto out;
	s->nusage = (size_t)store_db_nrows(r);
	s->usage = mu_arena_alloc(a, s->nusage * sizeof(*s->usage) + 1);
	for (size_t i = 0; i < s->nusage; i++)
		s->usage[i] = (struct store_sched_usage){ getl(r, (int)i, 0), dup(a, r, (int)i, 1),
							  strtod(store_db_get(r, (int)i, 2), NULL) };
	store_db_clear(r);
	r = NULL;

	ret = take(b, &r, err);
	if (ret)
		goto out;
	s->nruntimes = (size_t)store_db_nrows(r);
	s->runtimes = mu_arena_alloc(a, s->nruntimes * sizeof(*s->runtimes) + 1);
	for (size_t i = 0; i < s->nruntimes; i++)
		s->runtimes[i] = (struct store_sched_runtime){ getl(r, (int)i, 0), dup(a, r, (int)i, 1),
							       geti(r, (int)i, 2),
							       { geti(r, (int)i, 3), geti(r, (int)i, 4) } };
	store_db_clear(r);
	r = NULL;

	ret = take(b, &r, err);
	if (ret)
		goto out;
	s->nedges = (size_t)store_db_nrows(r);
	s->edges = mu_arena_alloc(a, s->nedges * sizeof(*s->edges) + 1);
	for (size_t i = 0, k = 0; i < s->nedges; i++) {
		struct store_sched_edge *e = &s->edges[i];
		e->job_id = getl(r, (int)i, 0);
		e->target = getl(r, (int)i, 1);
		e->type = (enum store_sched_dep_type)geti(r, (int)i, 2);
		/* Both lists are sorted by job id: merge into the jobs' slices. */
		while (k < s->njobs && s->jobs[k].id < e->job_id)
			k++;
		if (k < s->njobs && s->jobs[k].id == e->job_id) {
			if (!s->jobs[k].dep_count)
				s->jobs[k].dep_first = i;
			s->jobs[k].dep_count++;
		}
	}
	store_db_clear(r);
	r = NULL;

	ret = take(b, &r, err);
	if (ret)
		goto out;
	s->ndeps = (size_t)store_db_nrows(r);
	s->deps = mu_arena_alloc(a, s->ndeps * sizeof(*s->deps) + 1);
	for (size_t i = 0; i < s->ndeps; i++)
		s->deps[i] = (struct store_sched_depstate){ getl(r, (int)i, 0), dup(a, r, (int)i, 1),
							    geti(r, (int)i, 2) };
out:
	store_db_clear(r);
	return ret;
}

int store_sched_snap_load(PGconn *c, struct store_sched_snap *s, struct mu_error *err)
{
	return store_sched_snap_load_settings(c, NULL, s, err);
}

int store_sched_snap_load_settings(PGconn *c, const struct store_sched_settings *set,
				   struct store_sched_snap *s, struct mu_error *err)
{
	struct mu_arena *a = mu_malloc(sizeof(*a));
	struct batch b = { 0 };
	int ret = 0;

	memset(s, 0, sizeof(*s));
	mu_arena_init(a, 1 << 20);
	s->mem = a;
	if (set)
		s->settings = *set;
	else
		ret = store_sched_settings_load(c, &s->settings, err);
	if (!ret)
		ret = batch_run(c, &b, s->settings.half_life, err);
	if (!ret)
		ret = load_nodes(c, &b, s, a, err);
	if (!ret)
		ret = load_runs(c, &b, s, a, err);
	if (!ret)
		ret = load_jobs(c, &b, s, a, err);
	if (!ret)
		ret = load_policy(c, &b, s, a, err);
	batch_release(&b);
	return ret;
}

void store_sched_snap_release(struct store_sched_snap *s)
{
	if (s->mem) {
		mu_arena_release(s->mem);
		mu_free(s->mem);
	}
	memset(s, 0, sizeof(*s));
}

/* ---- decisions -------------------------------------------------------------- */

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return (a > b) - (a < b);
}

static int apply_starts(PGconn *c, int64_t epoch, const struct store_sched_decisions *d, int *started,
			struct mu_error *err)
{
	struct sbuf jobs = { 0 }, nn = { 0 }, gpn = { 0 }, pr = { 0 }, runs = { 0 }, node = { 0 }, rank = { 0 },
		    gpu = { 0 };
	char ep[32];
	const char *p[5];
	PGresult *r = NULL;
	int64_t *job_sorted = NULL, *nodes = NULL;
	size_t nnodes = 0, cap = 0;
	int ret;

	snprintf(ep, sizeof(ep), "%" PRId64, epoch);
	sb_open(&jobs);
	sb_open(&nn);
	sb_open(&gpn);
	sb_open(&pr);
	for (size_t i = 0; i < d->nstarts; i++) {
		sb_int(&jobs, d->starts[i].job_id);
		sb_int(&nn, d->starts[i].nnodes);
		sb_int(&gpn, d->starts[i].gpus_per_node);
		sb_int(&pr, d->starts[i].predicted_runtime);
	}
	sb_close(&jobs);
	sb_close(&nn);
	sb_close(&gpn);
	sb_close(&pr);
	p[0] = ep;
	p[1] = jobs.p;
	p[2] = nn.p;
	p[3] = gpn.p;
	p[4] = pr.p;
	/* Jobs first, row-locked and re-checked: a job cancelled or held since
	 * the snapshot was read is skipped, and gets no run. */
	ret = store_db_exec(c,
			    "WITH s AS (SELECT * FROM unnest($2::bigint[], $3::int[], $4::int[], $5::int[])"
			    "   AS s(job_id, nnodes, gpn, pr)),"
			    " j AS (UPDATE jobs SET state = 'STARTING', started_at = now(), ended_at = NULL,"
			    "   pending_reason = '', pending_message = '', planned_start = NULL, updated_at = now()"
			    "   FROM s WHERE jobs.id = s.job_id AND jobs.state = 'PENDING' AND NOT jobs.held"
			    "   AND (jobs.begin_at IS NULL OR jobs.begin_at <= now())"
			    "   RETURNING jobs.id, jobs.tenant_id, jobs.time_limit, jobs.priority_class_id),"
			    " r AS (INSERT INTO runs (job_id, attempt, epoch, nodes, gpus_per_node, time_limit,"
			    "     grace_period, predicted_runtime)"
			    "   SELECT s.job_id, coalesce((SELECT max(x.attempt) FROM runs x WHERE x.job_id = s.job_id),"
			    "     0) + 1, $1::bigint, s.nnodes, s.gpn, j.time_limit,"
			    "     (SELECT pc.grace_period FROM priority_classes pc WHERE pc.id = j.priority_class_id),"
			    "     CASE WHEN s.pr > 0 AND s.pr < j.time_limit THEN s.pr END"
			    "   FROM s JOIN j ON j.id = s.job_id RETURNING id, job_id, attempt),"
			    " ev AS (INSERT INTO events (kind, tenant_id, job_id, run_id, reason, data)"
			    "   SELECT 'job.starting', j.tenant_id, r.job_id, r.id, 'scheduled',"
			    "   jsonb_build_object('epoch', $1::bigint, 'attempt', r.attempt) FROM r JOIN j ON j.id = r.job_id)"
			    " SELECT job_id, id FROM r",
			    5, p, &r, err);
	if (ret)
		goto out;
	*started += store_db_nrows(r);
	/* job id -> new run id, by binary search over the returned pairs. */
	size_t nr = (size_t)store_db_nrows(r);
	job_sorted = mu_calloc(nr * 2 + 1, sizeof(int64_t));
	for (size_t i = 0; i < nr; i++) {
		job_sorted[2 * i] = getl(r, (int)i, 0);
		job_sorted[2 * i + 1] = getl(r, (int)i, 1);
	}
	qsort(job_sorted, nr, 2 * sizeof(int64_t), cmp_i64);
	store_db_clear(r);
	r = NULL;
	if (!nr)
		goto out;

	sb_open(&runs);
	sb_open(&node);
	sb_open(&rank);
	sb_open(&gpu);
	for (size_t i = 0; i < d->nstarts; i++) {
		const struct store_sched_start *st = &d->starts[i];
		int64_t key[2] = { st->job_id, 0 };
		int64_t *hit = bsearch(key, job_sorted, nr, 2 * sizeof(int64_t), cmp_i64);
		if (!hit)
			continue;
		for (int k = 0; k < st->nnodes; k++) {
			nodes = mu_grow(nodes, &cap, nnodes + 1, sizeof(*nodes));
			nodes[nnodes++] = st->node_ids[k];
			int ng = st->gpus_per_node > 0 ? st->gpus_per_node : 1;
			for (int g = 0; g < ng; g++) {
				sb_int(&runs, hit[1]);
				sb_int(&node, st->node_ids[k]);
				sb_int(&rank, k);
				sb_int(&gpu, st->gpus_per_node > 0 ? st->gpus[(size_t)k * st->gpus_per_node + g] : -1);
			}
		}
	}
	sb_close(&runs);
	sb_close(&node);
	sb_close(&rank);
	sb_close(&gpu);
	p[0] = runs.p;
	p[1] = node.p;
	p[2] = rank.p;
	p[3] = gpu.p;
	/* The unique index on live (node, gpu) rejects any double booking:
	 * then the whole cycle rolls back. */
	ret = store_db_exec(c,
			    "INSERT INTO run_allocations (run_id, node_id, node_rank, gpu_index)"
			    " SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::int[])",
			    4, p, NULL, err);
	if (ret)
		goto out;
	ret = store_db_exec(c,
			    "UPDATE runs SET master_addr = CASE WHEN n.address <> '' THEN n.address ELSE n.name END,"
			    "   master_port = 29500 + (runs.id % 10000)::int"
			    " FROM run_allocations x JOIN nodes n ON n.id = x.node_id"
			    " WHERE runs.id = x.run_id AND x.node_rank = 0 AND x.live AND runs.id = ANY($1::bigint[])",
			    1, p, NULL, err);
	if (ret)
		goto out;
	qsort(nodes, nnodes, sizeof(*nodes), cmp_i64);
	sb_open(&node);
	for (size_t i = 0; i < nnodes; i++)
		if (i == 0 || nodes[i] != nodes[i - 1])
			sb_int(&node, nodes[i]);
	sb_close(&node);
	p[0] = node.p;
	ret = store_db_exec(c, "SELECT pg_notify('muster_agents', name) FROM nodes WHERE id = ANY($1::bigint[])",
			    1, p, NULL, err);
out:
	store_db_clear(r);
	mu_free(job_sorted);
	mu_free(nodes);
	mu_free(jobs.p);
	mu_free(nn.p);
	mu_free(gpn.p);
	mu_free(pr.p);
	mu_free(runs.p);
	mu_free(node.p);
	mu_free(rank.p);
	mu_free(gpu.p);
	return ret;
}

static int apply_pending(PGconn *c, const struct store_sched_decisions *d, struct mu_error *err)
{
	struct sbuf ids = { 0 }, reason = { 0 }, msg = { 0 }, ps = { 0 };
	const char *p[4];
	int ret;

	sb_open(&ids);
	sb_open(&reason);
	sb_open(&msg);
	sb_open(&ps);
	for (size_t i = 0; i < d->npending; i++) {
		sb_int(&ids, d->pending[i].job_id);
		sb_text(&reason, d->pending[i].reason ? d->pending[i].reason : "");
		sb_text(&msg, d->pending[i].message ? d->pending[i].message : "");
		sb_int(&ps, d->pending[i].planned_start);
	}
	sb_close(&ids);
	sb_close(&reason);
	sb_close(&msg);
	sb_close(&ps);
	p[0] = ids.p;
	p[1] = reason.p;
	p[2] = msg.p;
	p[3] = ps.p;
	ret = store_db_exec(c,
			    "UPDATE jobs SET pending_reason = u.reason, pending_message = u.msg,"
			    " planned_start = CASE WHEN u.ps > 0 THEN to_timestamp(u.ps) END"
			    " FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[]) AS u(id, reason, msg, ps)"
			    " WHERE jobs.id = u.id AND jobs.state = 'PENDING' AND NOT jobs.held"
			    " AND (jobs.begin_at IS NULL OR jobs.begin_at <= now())", /* Held, BeginTime stay */
			    4, p, NULL, err);
	mu_free(ids.p);
	mu_free(reason.p);
	mu_free(msg.p);
	mu_free(ps.p);
	return ret;
}

static int apply_stops(PGconn *c, const int64_t *runs, size_t n, const char *reason,
		       struct mu_error *err)
{
	struct sbuf ids = { 0 };
	const char *p[2];
	int ret;
	int64_t v = 0;

	sb_open(&ids);
	for (size_t i = 0; i < n; i++)
		sb_int(&ids, runs[i]);
	sb_close(&ids);
	p[0] = ids.p;
	p[1] = reason;
	ret = store_db_query_int64(
		c,
		"WITH r AS (UPDATE runs SET state = 'STOPPING', stop_reason = $2,"
		"   stop_requested_at = now() WHERE id = ANY($1::bigint[]) AND live"
		"   AND state IN ('STARTING', 'RUNNING') AND ended_at IS NULL RETURNING id, job_id),"
		" ev AS (INSERT INTO events (kind, tenant_id, job_id, run_id, reason)"
		"   SELECT 'run.stop_requested', j.tenant_id, r.job_id, r.id, $2"
		"   FROM r JOIN jobs j ON j.id = r.job_id),"
		" nt AS (SELECT pg_notify('muster_agents', n.name) FROM nodes n WHERE n.id IN"
		"   (SELECT a.node_id FROM run_allocations a WHERE a.run_id IN (SELECT id FROM r)))"
		" SELECT (SELECT count(*) FROM r) + 0 * (SELECT count(*) FROM nt)",
		2, p, &v, err);
	mu_free(ids.p);
	return ret;
}

static int apply_shrinks(PGconn *c, int64_t epoch, const struct store_sched_decisions *d,
			 struct mu_error *err)
{
	struct sbuf runs = { 0 }, keep = { 0 }, nodes = { 0 };
	char ep[32];
	const char *p[4];
	int ret;

	snprintf(ep, sizeof(ep), "%" PRId64, epoch);
	sb_open(&runs);
	sb_open(&keep);
	sb_open(&nodes);
	for (size_t i = 0; i < d->nshrinks; i++) {
		if (d->shrinks[i].nkeep <= 0)
			continue; /* keeping nothing is a stop, never a shrink */
		sb_int(&runs, d->shrinks[i].run_id);
		for (int k = 0; k < d->shrinks[i].nkeep; k++) {
			sb_int(&keep, d->shrinks[i].run_id);
			sb_int(&nodes, d->shrinks[i].keep_node_ids[k]);
		}
	}
	sb_close(&runs);
	sb_close(&keep);
	sb_close(&nodes);
	p[0] = runs.p;
	p[1] = keep.p;
	p[2] = nodes.p;
	p[3] = ep;
	/* One statement: the runs still live and running are row-locked first;
	 * every other CTE reads that set. The lost part's GPU-seconds are what
	 * the lost GPUs used from the run's start to now, as finish_runs
	 * would have charged them. */
	ret = store_db_exec(
		c,
		"WITH k AS (SELECT * FROM unnest($2::bigint[], $3::bigint[]) AS k(run_id, node_id)),"
		" r AS (SELECT id, job_id, nodes FROM runs WHERE id = ANY($1::bigint[]) AND live"
		"   AND state IN ('STARTING', 'RUNNING') AND ended_at IS NULL"
		"   AND EXISTS (SELECT 1 FROM run_allocations a JOIN k ON k.run_id = a.run_id"
		"     AND k.node_id = a.node_id WHERE a.run_id = runs.id AND a.live)"
		"   FOR UPDATE),"
		" l AS (UPDATE run_allocations a SET live = false FROM r WHERE a.run_id = r.id AND a.live"
		"   AND NOT EXISTS (SELECT 1 FROM k WHERE k.run_id = a.run_id AND k.node_id = a.node_id)"
		"   RETURNING a.run_id, a.node_id, a.gpu_index),"
		" lr AS (SELECT run_id, count(DISTINCT node_id)::int AS nlost,"
		"   count(*) FILTER (WHERE gpu_index >= 0) AS glost,"
		"   (SELECT jsonb_agg(n.name ORDER BY n.name) FROM nodes n WHERE n.id IN"
		"     (SELECT x.node_id FROM l x WHERE x.run_id = l.run_id)) AS names"
		"   FROM l GROUP BY run_id),"
		" u AS (UPDATE runs SET nodes = runs.nodes - lr.nlost, shrunk_at = now(),"
		"   shrunk_gpu_seconds = runs.shrunk_gpu_seconds + round(lr.glost * greatest(0,"
		"     extract(epoch FROM now() - coalesce(runs.started_at, runs.created_at))))::bigint,"
		/* on_shrink restart (migration 110): the kept nodes' agents restart */
		"   restart_count = runs.restart_count + CASE WHEN coalesce(rj.launch->>'on_shrink',"
		"     'restart') = 'restart' THEN 1 ELSE 0 END"
		"   FROM lr, jobs rj WHERE runs.id = lr.run_id AND rj.id = runs.job_id"
		"   RETURNING runs.id, runs.job_id, runs.nodes + lr.nlost AS old_nodes, runs.nodes AS new_nodes,"
		"     lr.names, coalesce(rj.launch->>'on_shrink', 'restart') = 'restart' AS restarted,"
		"     runs.restart_count),"
		" ev AS (INSERT INTO events (kind, tenant_id, job_id, run_id, reason, data)"
		"   SELECT 'run.shrunk', j.tenant_id, u.job_id, u.id, 'node_fail',"
		"   jsonb_build_object('from', u.old_nodes, 'to', u.new_nodes, 'lost', u.names,"
		"     'epoch', $4::bigint) FROM u JOIN jobs j ON j.id = u.job_id),"
		" evr AS (INSERT INTO events (kind, tenant_id, job_id, run_id, reason, data)"
		"   SELECT 'run.restarted', j.tenant_id, u.job_id, u.id, 'shrink',"
		"   jsonb_build_object('from', u.old_nodes, 'to', u.new_nodes, 'lost', u.names,"
		"     'restart_count', u.restart_count) FROM u JOIN jobs j ON j.id = u.job_id"
		"   WHERE u.restarted)"
		" SELECT pg_notify('muster_agents', n.name) FROM nodes n WHERE n.id IN"
		"   (SELECT a.node_id FROM run_allocations a WHERE a.run_id IN (SELECT id FROM u))",
		4, p, NULL, err);
	/* Every kept node may already have reported its part exited 0 while
	 * the lost one held the run open: no report is coming any more, so
	 * the run completes here (a failed part would have ended it at once). */
	if (!ret)
		ret = store_db_exec(
			c,
			"WITH d AS (UPDATE runs r SET ended_at = now(), state = 'COMPLETED', exit_code = 0,"
			"   started_at = coalesce(r.started_at, now())"
			"   WHERE r.id = ANY($1::bigint[]) AND r.live AND r.ended_at IS NULL"
			"   AND r.state IN ('STARTING', 'RUNNING') AND r.shrunk_at IS NOT NULL"
			"   AND NOT EXISTS (SELECT 1 FROM run_allocations a WHERE a.run_id = r.id AND a.live"
			"     AND NOT EXISTS (SELECT 1 FROM run_node_status s WHERE s.run_id = r.id"
			"       AND s.node_id = a.node_id AND s.phase = 'EXITED' AND coalesce(s.exit_code, 0) = 0"
			"       AND s.exit_signal IS NULL))"
			"   RETURNING r.id)"
			" SELECT pg_notify('muster_sched', 'run:' || id) FROM d",
			1, p, NULL, err);
	mu_free(runs.p);
	mu_free(keep.p);
	mu_free(nodes.p);
	return ret;
}

static int apply_fail_jobs(PGconn *c, const struct store_sched_decisions *d, struct mu_error *err)
{
	struct sbuf ids = { 0 }, reason = { 0 }, msg = { 0 };
	const char *p[3];
	int ret;

	sb_open(&ids);
	sb_open(&reason);
	sb_open(&msg);
	for (size_t i = 0; i < d->nfail_jobs; i++) {
		sb_int(&ids, d->fail_jobs[i].job_id);
		sb_text(&reason, d->fail_jobs[i].reason ? d->fail_jobs[i].reason : "");
		sb_text(&msg, d->fail_jobs[i].message ? d->fail_jobs[i].message : "");
	}
	sb_close(&ids);
	sb_close(&reason);
	sb_close(&msg);
	p[0] = ids.p;
	p[1] = reason.p;
	p[2] = msg.p;
	ret = store_db_exec(c,
			    "WITH j AS (UPDATE jobs SET state = 'FAILED', end_reason = u.reason,"
			    "   pending_message = u.msg, ended_at = now(), updated_at = now()"
			    "   FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u(id, reason, msg)"
			    "   WHERE jobs.id = u.id AND jobs.state = 'PENDING'"
			    "   RETURNING jobs.id, jobs.tenant_id, u.reason, u.msg)"
			    " INSERT INTO events (kind, tenant_id, job_id, reason, data)"
			    " SELECT 'job.failed', tenant_id, id, reason, jsonb_build_object('message', msg) FROM j",
			    3, p, NULL, err);
	mu_free(ids.p);
	mu_free(reason.p);
	mu_free(msg.p);
	return ret;
}

int store_sched_apply(PGconn *c, int64_t epoch, const struct store_sched_decisions *d, int *started,
		      struct mu_error *err)
{
	int ret = 0;

	if (d->npreempt)
		ret = apply_stops(c, d->preempt_runs, d->npreempt, "preempt", err);
	if (!ret && d->nfail_runs)
		ret = apply_stops(c, d->fail_runs, d->nfail_runs, "node_fail", err);
	if (!ret && d->nshrinks)
		ret = apply_shrinks(c, epoch, d, err);
	if (!ret && d->nfail_jobs)
		ret = apply_fail_jobs(c, d, err);
	if (!ret && d->nstarts)
		ret = apply_starts(c, epoch, d, started, err);
	if (!ret && d->npending)
		ret = apply_pending(c, d, err);
	return ret;
}
