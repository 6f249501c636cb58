/* store_sched_snap.c - the scheduler's snapshot load and decision commit.
 * See store_sched.h. */
#include "store_sched.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "log.h"
#include "store_int.h"

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

/* The row shapes, shared by the whole load and the kept snapshot's
 * refresh (store_sched_keep_refresh): the same columns in the same order. */

/* Nodes with their GPU health as one bitmask (bit i = GPU i healthy), by one
 * aggregate join rather than a subquery per node; `w` restricts the nodes,
 * `gw` the GPU rows aggregated (both "" for all). */
#define NODE_SQL(w, gw)                                                                             \
	"SELECT n.id, n.name, n.address, n.topology, n.gpu_model, n.gpu_count, n.up,"                \
	" n.drain, coalesce(g.mask, 0), g.node_id IS NOT NULL, n.fabric_fault <> ''"                 \
	" FROM nodes n LEFT JOIN (SELECT node_id, bit_or(CASE WHEN healthy AND idx < 64"             \
	"   THEN (1::bigint << idx) ELSE 0 END) AS mask FROM gpus " gw " GROUP BY node_id) g"        \
	"   ON g.node_id = n.id " w " ORDER BY n.id"

/* A run (r) with its job (j). */
#define RUN_COLS                                                                                    \
	"r.id, r.job_id, j.tenant_id, j.user_name, j.priority_class_id, r.nodes,"                    \
	" r.gpus_per_node, r.time_limit,"                                                            \
	" extract(epoch FROM coalesce(r.started_at, r.created_at))::bigint,"                         \
	" r.state = 'STOPPING', coalesce(j.min_nodes, 0), coalesce(r.predicted_runtime, 0),"         \
	" coalesce(j.array_job_id, 0)" /* job arrays: the %K throttle counts live runs */

/* A pending job (the table unaliased: jobs). */
#define JOB_COLS                                                                                    \
	"id, tenant_id, user_name, gpu_model, topology_required,"                                    \
	" topology_preferred, dependencies::text, pending_reason, pending_message,"                  \
	" priority_class_id, nodes, coalesce(min_nodes, nodes), gpus_per_node,"                      \
	" time_limit, retries, extract(epoch FROM created_at)::bigint,"                              \
	" coalesce(extract(epoch FROM planned_start)::bigint, 0),"                                   \
	" coalesce(array_job_id, 0), array_throttle," /* job arrays */                               \
	" " SINGLETON_COL
#define SINGLETON_COL                                                                               \
	"CASE WHEN dependencies @> '[{\"type\": \"singleton\"}]' THEN coalesce((SELECT max(o.id)"      \
	"   FROM jobs o WHERE o.tenant_id = jobs.tenant_id AND o.user_name = jobs.user_name"          \
	"   AND o.name = jobs.name AND o.id < jobs.id AND o.state IN ('PENDING', 'STARTING', 'RUNNING')),"\
	"   0) ELSE 0 END" /* singleton (migration 132's index) */
/* The jobs the core plans: Held, BeginTime: store_jobctl.c */
#define JOB_PENDING "state = 'PENDING' AND NOT held AND (begin_at IS NULL OR begin_at <= now())"

/* Dependencies as typed edges, read from jsonb by the database (never
 * searched as text); `w` restricts the jobs (j). A value the API would
 * never write, a non-array or a job_id that is no number, becomes a
 * dependency on no job rather than a failed cycle. */
#define EDGE_SQL(w)                                                                                 \
	"SELECT j.id, CASE WHEN jsonb_typeof(x.e->'job_id') = 'number' THEN (x.e->>'job_id')::numeric::bigint" \
	" ELSE 0 END, CASE x.e->>'type' WHEN 'afterany' THEN 1 WHEN 'afternotok' THEN 2 ELSE 0 END"  \
	" FROM jobs j CROSS JOIN LATERAL jsonb_array_elements(j.dependencies) WITH ORDINALITY x(e, n)" \
	" WHERE j.state = 'PENDING' AND j.dependencies <> '[]' AND jsonb_typeof(j.dependencies) = 'array'" \
	" AND coalesce(x.e->>'type', '') <> 'singleton'" /* names no job: singleton_blocker */      \
	w " ORDER BY j.id, x.n"

/* The state of each job named (ids d.id): job arrays: the first task's id
 * stands for every task: active while one is, COMPLETED with 0 only when
 * all are, else FAILED. */
#define DEPSTATE_SQL(ids)                                                                           \
	"SELECT d.id, CASE WHEN bool_or(x.state IN ('PENDING', 'STARTING', 'RUNNING')) THEN 'RUNNING'" \
	" WHEN bool_and(x.state = 'COMPLETED' AND coalesce(x.exit_code, 0) = 0) THEN 'COMPLETED'"    \
	" WHEN count(*) = 1 THEN min(x.state) ELSE 'FAILED' END,"                                    \
	" CASE WHEN bool_and(x.state = 'COMPLETED' AND coalesce(x.exit_code, 0) = 0) THEN 0"         \
	" WHEN count(*) = 1 THEN coalesce(min(x.exit_code), -1) ELSE -1 END"                         \
	" FROM (" ids ") d"                                                                          \
	" JOIN LATERAL (SELECT state, exit_code FROM jobs WHERE id = d.id UNION ALL"                \
	"  SELECT state, exit_code FROM jobs WHERE array_job_id = d.id AND id <> d.id) x ON true"   \
	" GROUP BY d.id ORDER BY d.id"

/* One round trip for the parameterless queries of a snapshot (a
 * multi-statement simple query inside the cycle's transaction); the
 * loaders below take their results in this order. */
#define SNAP_NSQL 11
#define SNAP_POLICY 4 /* tenants .. user_runtimes: read whole by every refresh */
#define SNAP_NPOLICY 5
#define SNAP_USAGE 7
static const char *const snap_sql[SNAP_NSQL] = {
	    NODE_SQL("", ""),
	    "SELECT run_id, node_id, node_rank, gpu_index FROM run_allocations WHERE live"
	    " ORDER BY run_id, node_rank, gpu_index",
	    "SELECT " RUN_COLS " FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.live ORDER BY r.id",
	    "SELECT " JOB_COLS " FROM jobs WHERE " JOB_PENDING " ORDER BY id",
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
	    /* A superset of the jobs loaded above: edges are merged by job id. */
	    EDGE_SQL(""),
	    DEPSTATE_SQL("SELECT DISTINCT CASE WHEN jsonb_typeof(x->'job_id') = 'number'"
			 "   THEN (x->>'job_id')::numeric::bigint END AS id"
			 "  FROM jobs j, jsonb_array_elements(j.dependencies) x WHERE j.state = 'PENDING'"
			 "  AND j.dependencies <> '[]' AND jsonb_typeof(j.dependencies) = 'array'")
};

struct batch {
	PGresult *res[SNAP_NSQL];
	int next, n;
};

/* Sends snap_sql[first .. first + n) as one batch. */
static int batch_run(PGconn *c, struct batch *b, int half_life, int first, int n, struct mu_error *err)
{
	char usage[1024];
	char *all = NULL;
	size_t cap = 0, len = 0;
	PGresult *r;
	int ret = 0;

	memset(b, 0, sizeof(*b));
	snprintf(usage, sizeof(usage), snap_sql[SNAP_USAGE], half_life);
	for (int i = first; i < first + n; i++) {
		const char *q = i == SNAP_USAGE ? usage : snap_sql[i];
		size_t ql = strlen(q);
		all = mu_grow(all, &cap, len + ql + 3, 1);
		memcpy(all + len, q, ql);
		len += ql;
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
	if (!ret && b->n != n)
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

/* Row parsers: arrays from `arr`, strings from `str` (one arena for a
 * whole load; the kept snapshot keeps strings longer than arrays). */
static struct store_sched_node *rows_nodes(const PGresult *r, struct mu_arena *arr, struct mu_arena *str,
					   size_t *count)
{
	size_t nn = (size_t)store_db_nrows(r);
	struct store_sched_node *out = mu_arena_alloc(arr, nn * sizeof(*out) + 1);

	for (size_t i = 0; i < nn; i++) {
		struct store_sched_node *n = &out[i];
		int row = (int)i;
		n->id = getl(r, row, 0);
		n->name = dup(str, r, row, 1);
		n->address = dup(str, r, row, 2);
		n->topology = dup(str, r, row, 3);
		n->gpu_model = dup(str, r, row, 4);
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
	*count = nn;
	return out;
}

static struct store_sched_alloc *rows_allocs(const PGresult *r, struct mu_arena *arr, size_t *count)
{
	size_t n = (size_t)store_db_nrows(r);
	struct store_sched_alloc *out = mu_arena_alloc(arr, n * sizeof(*out) + 1);

	for (size_t i = 0; i < n; i++)
		out[i] = (struct store_sched_alloc){ getl(r, (int)i, 0), getl(r, (int)i, 1), geti(r, (int)i, 2),
						     geti(r, (int)i, 3) };
	*count = n;
	return out;
}

/* RUN_COLS rows; the allocation slices are left to the caller. */
static struct store_sched_run *rows_runs(const PGresult *r, struct mu_arena *arr, struct mu_arena *str,
					 size_t *count)
{
	size_t n = (size_t)store_db_nrows(r);
	struct store_sched_run *out = mu_arena_alloc(arr, n * sizeof(*out) + 1);

	for (size_t i = 0; i < n; i++) {
		struct store_sched_run *x = &out[i];
		int row = (int)i;
		x->id = getl(r, row, 0);
		x->job_id = getl(r, row, 1);
		x->tenant_id = getl(r, row, 2);
		x->user = dup(str, r, row, 3);
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
	}
	*count = n;
	return out;
}

/* JOB_COLS rows; the dependency slices are left to the caller. */
static struct store_sched_job *rows_jobs(const PGresult *r, struct mu_arena *arr, struct mu_arena *str,
					 size_t *count)
{
	size_t n = (size_t)store_db_nrows(r);
	struct store_sched_job *out = mu_arena_alloc(arr, n * sizeof(*out) + 1);
	/* the last row's strings, shared by the next rows equal to them: jobs
	 * of one model share one (the core caches models by pointer), and the
	 * mostly equal reasons stay in cache when the cycle compares them */
	char *model = NULL, *reason = NULL, *msg = NULL;

	for (size_t i = 0; i < n; i++) {
		struct store_sched_job *j = &out[i];
		int row = (int)i;
		j->id = getl(r, row, 0);
		j->tenant_id = getl(r, row, 1);
		j->user = dup(str, r, row, 2);
		if (!model || strcmp(model, store_db_get(r, row, 3)) != 0)
			model = dup(str, r, row, 3);
		j->gpu_model = model;
		j->topology_required = dup(str, r, row, 4);
		j->topology_preferred = dup(str, r, row, 5);
		j->dependencies = dup(str, r, row, 6);
		j->names_singleton = strstr(j->dependencies, "singleton") != NULL;
		if (!reason || strcmp(reason, store_db_get(r, row, 7)) != 0)
			reason = dup(str, r, row, 7);
		j->pending_reason = reason;
		if (!msg || strcmp(msg, store_db_get(r, row, 8)) != 0)
			msg = dup(str, r, row, 8);
		j->pending_message = msg;
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
	*count = n;
	return out;
}

static struct store_sched_edge *rows_edges(const PGresult *r, struct mu_arena *arr, size_t *count)
{
	size_t n = (size_t)store_db_nrows(r);
	struct store_sched_edge *out = mu_arena_alloc(arr, n * sizeof(*out) + 1);

	for (size_t i = 0; i < n; i++)
		out[i] = (struct store_sched_edge){ getl(r, (int)i, 0), getl(r, (int)i, 1),
						    (enum store_sched_dep_type)geti(r, (int)i, 2) };
	*count = n;
	return out;
}

static struct store_sched_depstate *rows_depstates(const PGresult *r, struct mu_arena *arr,
						   struct mu_arena *str, size_t *count)
{
	size_t n = (size_t)store_db_nrows(r);
	struct store_sched_depstate *out = mu_arena_alloc(arr, n * sizeof(*out) + 1);

	for (size_t i = 0; i < n; i++)
		out[i] = (struct store_sched_depstate){ getl(r, (int)i, 0), dup(str, r, (int)i, 1),
							geti(r, (int)i, 2) };
	*count = n;
	return out;
}

/* Sets each run's slice of allocs (both sorted by run id). */
static void slice_allocs(struct store_sched_run *runs, size_t nruns, const struct store_sched_alloc *allocs,
			 size_t nallocs)
{
	for (size_t i = 0, k = 0; i < nruns; i++) {
		while (k < nallocs && allocs[k].run_id < runs[i].id)
			k++;
		runs[i].alloc_first = k;
		while (k < nallocs && allocs[k].run_id == runs[i].id)
			k++;
		runs[i].alloc_count = k - runs[i].alloc_first;
	}
}

/* Sets each job's slice of edges (both sorted by job id). */
static void slice_edges(struct store_sched_job *jobs, size_t njobs, const struct store_sched_edge *edges,
			size_t nedges)
{
	for (size_t i = 0; i < njobs; i++)
		jobs[i].dep_first = jobs[i].dep_count = 0;
	for (size_t i = 0, k = 0; i < nedges; i++) {
		while (k < njobs && jobs[k].id < edges[i].job_id)
			k++;
		if (k < njobs && jobs[k].id == edges[i].job_id) {
			if (!jobs[k].dep_count)
				jobs[k].dep_first = i;
			jobs[k].dep_count++;
		}
	}
}

static int load_nodes(PGconn *c, struct batch *b, struct store_sched_snap *s, struct mu_arena *a,
		      struct mu_error *err)
{
	PGresult *r = NULL;
	int ret = take(b, &r, err);
	(void)c;
	if (!ret)
		s->nodes = rows_nodes(r, a, a, &s->nnodes);
	store_db_clear(r);
	return ret;
}

static int load_runs(PGconn *c, struct batch *b, struct store_sched_snap *s, struct mu_arena *a,
		      struct mu_error *err)
{
	PGresult *r = NULL;
	int ret = take(b, &r, err);
	(void)c;
	if (ret)
		goto out;
	s->allocs = rows_allocs(r, a, &s->nallocs);
	store_db_clear(r);
	r = NULL;
	ret = take(b, &r, err);
	if (ret)
		goto out;
	s->runs = rows_runs(r, a, a, &s->nruns);
	slice_allocs(s->runs, s->nruns, s->allocs, s->nallocs);
out:
	store_db_clear(r);
	return ret;
}

static int load_jobs(PGconn *c, struct batch *b, struct store_sched_snap *s, struct mu_arena *a,
		      struct mu_error *err)
{
	PGresult *r = NULL;
	int ret = take(b, &r, err);
	(void)c;
	if (!ret)
		s->jobs = rows_jobs(r, a, a, &s->njobs);
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
out:
	store_db_clear(r);
	return ret;
}

static int load_deps(PGconn *c, struct batch *b, struct store_sched_snap *s, struct mu_arena *a,
		     struct mu_error *err)
{
	PGresult *r = NULL;
	int ret = take(b, &r, err);
	(void)c;
	if (ret)
		goto out;
	s->edges = rows_edges(r, a, &s->nedges);
	slice_edges(s->jobs, s->njobs, s->edges, s->nedges);
	store_db_clear(r);
	r = NULL;

	ret = take(b, &r, err);
	if (!ret)
		s->deps = rows_depstates(r, a, a, &s->ndeps);
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
		ret = batch_run(c, &b, s->settings.half_life, 0, SNAP_NSQL, err);
	if (!ret)
		ret = load_nodes(c, &b, s, a, err);
	if (!ret)
		ret = load_runs(c, &b, s, a, err);
	if (!ret)
		ret = load_jobs(c, &b, s, a, err);
	if (!ret)
		ret = load_policy(c, &b, s, a, err);
	if (!ret)
		ret = load_deps(c, &b, s, a, err);
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

/* ---- the kept snapshot (see store_sched.h) -------------------------------- */

struct store_sched_keep {
	bool have;
	struct store_sched_snap snap; /* arrays in cyc, or in base right after a whole load */
	struct mu_arena *base;        /* the whole load's arena: rows unchanged since */
	struct mu_arena *strs;        /* strings of the rows read as changed since */
	struct mu_arena *cyc;         /* this snapshot's arrays and small tables; NULL after a whole load */
	int64_t lo;                   /* pg_snapshot_xmin before the last refresh read anything */
	int64_t now;                  /* that refresh's settings.now */
	/* the leader's own reason writes after the last refresh read, already
	 * in snap (store_sched_keep_note_pending): -1 = none */
	int64_t own_xid;              /* that transaction's xid, low 32 bits */
	int64_t *own_ids;             /* the jobs it wrote reasons of, sorted */
	size_t nown;
	int64_t *unchanged;           /* store_sched_keep_lock_pending: rows as read, locked */
	size_t nunchanged;
};

/* A row written by a transaction that the last refresh could not see ($1:
 * that refresh's pg_snapshot_xmin, an xid8): the change column and its
 * index (migration 210), so the rows are found by a range, not a scan. */
#define CHANGED(t) "(" t ".chg >= $1::xid8)"

static const char keep_lo_sql[] = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint";
static const char keep_nodes_sql[] =
	"WITH c AS MATERIALIZED (SELECT id FROM nodes WHERE " CHANGED("nodes") " UNION SELECT node_id FROM gpus WHERE "
	CHANGED("gpus") ") " NODE_SQL("WHERE n.id = ANY(ARRAY(SELECT id FROM c))",
				      "WHERE node_id = ANY(ARRAY(SELECT id FROM c))");
/* every changed job, pending or not (col 20: whether it is one the core plans) */
/* (The changed ids are found first, by the change index and, for the jobs
 * whose begin time came since, jobs_begin_due; then fetched by key: ordered
 * in one query, the planner walks the whole primary key instead.) */
static const char keep_jobs_sql[] =
	"WITH c AS MATERIALIZED (SELECT " JOB_COLS ", " JOB_PENDING " FROM jobs WHERE id = ANY(ARRAY("
	"SELECT x.id FROM jobs x WHERE " CHANGED("x") " UNION SELECT x.id FROM jobs x WHERE x.state = 'PENDING'"
	" AND x.begin_at > to_timestamp($2::bigint - 2) AND x.begin_at <= now()))"
	/* not a row whose last version is the leader's own reason write, kept already */
	" AND NOT (jobs.xmin = $3::text::xid AND id IN (SELECT unnest($4::bigint[]))))"
	" SELECT * FROM c ORDER BY 1";
/* the singleton blockers of the pending jobs that may have one ($1) */
static const char keep_singleton_sql[] = "SELECT id, " SINGLETON_COL " FROM jobs WHERE id = ANY($1::bigint[]) ORDER BY id";
static const char keep_edges_sql[] = EDGE_SQL(" AND j.id = ANY($1::bigint[])");
static const char keep_deps_sql[] = DEPSTATE_SQL("SELECT DISTINCT unnest($1::bigint[]) AS id");
/* every changed run, live or not (col 13). (IN (SELECT unnest(..)) rather
 * than = ANY(..): a hashed lookup, not a walk of the array per row.) The
 * changed ids are found first and joined to their jobs by key: the planner
 * cannot tell how few age() lets through, and joined in one query it walked
 * all of jobs (merge or hash join, ~100 ms at 150k jobs for ~1k runs). */
static const char keep_runs_sql[] =
	"WITH c AS MATERIALIZED (SELECT r.id FROM runs r WHERE " CHANGED("r")
	" UNION SELECT r.id FROM runs r WHERE r.live AND r.job_id = ANY($2::bigint[])"
	" UNION SELECT a.run_id FROM run_allocations a WHERE " CHANGED("a") ")"
	" SELECT " RUN_COLS ", r.live FROM runs r JOIN jobs j ON j.id = r.job_id"
	" WHERE r.id = ANY(ARRAY(SELECT id FROM c)) ORDER BY r.id";
static const char keep_allocs_sql[] = "SELECT run_id, node_id, node_rank, gpu_index FROM run_allocations"
				      " WHERE live AND run_id IN (SELECT unnest($1::bigint[])) ORDER BY run_id, node_rank, gpu_index";

static double keep_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static struct mu_arena *arena_new(void)
{
	struct mu_arena *a = mu_malloc(sizeof(*a));
	mu_arena_init(a, 1 << 20);
	return a;
}

static void arena_free(struct mu_arena *a)
{
	if (a) {
		mu_arena_release(a);
		mu_free(a);
	}
}

struct store_sched_keep *store_sched_keep_new(void)
{
	struct store_sched_keep *k = mu_calloc(1, sizeof(*k));
	k->own_xid = -1;
	return k;
}

void store_sched_keep_reset(struct store_sched_keep *k)
{
	if (!k)
		return;
	arena_free(k->base);
	arena_free(k->strs);
	arena_free(k->cyc);
	mu_free(k->own_ids);
	mu_free(k->unchanged);
	memset(k, 0, sizeof(*k));
	k->own_xid = -1;
}

void store_sched_keep_free(struct store_sched_keep *k)
{
	store_sched_keep_reset(k);
	mu_free(k);
}

/* Rows sorted by id, their first member. */
#define ROW_ID(p, sz, i) (*(const int64_t *)(const void *)((const char *)(p) + (i) * (sz)))

static bool has_id(const int64_t *ids, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ids[mid] < id)
			lo = mid + 1;
		else if (ids[mid] > id)
			hi = mid;
		else
			return true;
	}
	return false;
}

/* The first row of `rows` (sorted by an int64 at offset 0) with that id, or n. */
static size_t find_row(const void *rows, size_t n, size_t sz, int64_t id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ROW_ID(rows, sz, mid) < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ROW_ID(rows, sz, lo) == id ? lo : n;
}

/* The old rows whose id is not in `gone` merged with `add` (ids in gone),
 * all sorted by id, into a new array from arr. */
static void *merge_rows(struct mu_arena *arr, size_t sz, const void *old, size_t nold, const void *add, size_t nadd,
			const int64_t *gone, size_t ngone, size_t *nout)
{
	char *out = mu_arena_alloc(arr, (nold + nadd) * sz + 1);
	size_t i = 0, j = 0, g = 0, n = 0;

	for (;;) {
		/* The old rows up to the next gone one or the next added one
		 * (an added row goes after old rows of its id), in one copy:
		 * 100k rows a cycle with a few hundred changes. */
		size_t b = i;
		for (; b < nold; b++) {
			int64_t id = ROW_ID(old, sz, b);
			if (j < nadd && ROW_ID(add, sz, j) < id)
				break;
			while (g < ngone && gone[g] < id)
				g++;
			if (g < ngone && gone[g] == id)
				break;
		}
		if (b > i) {
			memcpy(out + n * sz, (const char *)old + i * sz, (b - i) * sz);
			n += b - i;
			i = b;
		}
		if (i < nold && g < ngone && gone[g] == ROW_ID(old, sz, i)) {
			i++;
			continue;
		}
		if (j >= nadd)
			break; /* and i == nold */
		memcpy(out + n++ * sz, (const char *)add + j++ * sz, sz);
	}
	*nout = n;
	return out;
}

/* Sorts and dedups ids in place; returns the new count. */
static size_t uniq_ids(int64_t *ids, size_t n)
{
	size_t k = 0;
	qsort(ids, n, sizeof(*ids), store__cmp_i64);
	for (size_t i = 0; i < n; i++)
		if (!k || ids[i] != ids[k - 1])
			ids[k++] = ids[i];
	return k;
}

/* A bigint[] literal of ids. */
static void ids_param(struct sbuf *b, const int64_t *ids, size_t n)
{
	sb_open(b);
	for (size_t i = 0; i < n; i++)
		sb_int(b, ids[i]);
	sb_close(b);
}

/* Runs one refresh query with params into *r (cleared first). */
static int keep_query(PGconn *c, const char *sql, int n, const char *const *p, PGresult **r, struct mu_error *err)
{
	store_db_clear(*r);
	*r = NULL;
	return store_db_exec(c, sql, n, p, r, err);
}

static int keep_whole(PGconn *c, const struct store_sched_settings *set, struct store_sched_keep *k, int64_t lo,
		      struct mu_error *err)
{
	int ret;

	store_sched_keep_reset(k);
	ret = store_sched_snap_load_settings(c, set, &k->snap, err);
	k->base = k->snap.mem;
	k->snap.mem = NULL;
	if (ret) {
		store_sched_keep_reset(k);
		return ret;
	}
	k->strs = arena_new();
	k->lo = lo;
	k->now = set->now;
	k->have = true;
	return 0;
}

/* Everything but the whole load: what changed since k->lo, merged into a
 * new snapshot `ns` whose arrays are in `cyc`. *whole_why is set when a gap
 * was found (nothing merged). */
static int keep_merge(PGconn *c, struct store_sched_keep *k, struct store_sched_snap *ns, struct mu_arena *cyc,
		      struct store_sched_keep_stats *st, const char **whole_why, struct mu_error *err)
{
	const struct store_sched_snap *os = &k->snap;
	char lo64[32], now[32];
	const char *p[4];
	char own[32];
	struct sbuf ids = { 0 }, ids2 = { 0 }, ownids = { 0 };
	struct batch b = { 0 };
	PGresult *r = NULL;
	int64_t nnodes = 0, *gone_jobs = NULL, *arr_ids = NULL, *pend_ids = NULL, *gone_runs = NULL, *live_ids = NULL,
		*targets = NULL, *refresh = NULL;
	size_t narr = 0, ngone = 0, npend = 0, nall = 0, ngr = 0, nlive = 0, nt = 0, nref = 0;
	struct store_sched_job *chg_jobs = NULL;
	struct store_sched_run *chg_runs = NULL;
	struct store_sched_edge *qedges = NULL;
	struct store_sched_alloc *qallocs = NULL;
	struct store_sched_depstate *qdeps = NULL;
	size_t nqedges = 0, nqallocs = 0, nqdeps = 0, nchg = 0;
	int ret;

	double t[8];
	t[0] = keep_ms();
	snprintf(lo64, sizeof(lo64), "%" PRId64, k->lo); /* an xid8: all 64 bits */
	snprintf(now, sizeof(now), "%" PRId64, k->now);
	p[0] = lo64;
	p[1] = now;

	/* nodes: a deleted one leaves no version: the count tells */
	ret = store_db_query_int64(c, "SELECT count(*) FROM nodes", 0, NULL, &nnodes, err);
	if (!ret)
		ret = keep_query(c, keep_nodes_sql, 1, p, &r, err);
	if (ret)
		goto out;
	{
		size_t n;
		struct store_sched_node *add = rows_nodes(r, cyc, k->strs, &n);
		int64_t *gone = mu_arena_alloc(cyc, n * sizeof(*gone) + 1);
		for (size_t i = 0; i < n; i++)
			gone[i] = add[i].id;
		ns->nodes = merge_rows(cyc, sizeof(*add), os->nodes, os->nnodes, add, n, gone, n, &ns->nnodes);
		st->nodes = n;
	}
	if ((int64_t)ns->nnodes != nnodes) {
		*whole_why = "nodes";
		goto out;
	}

	t[1] = keep_ms();
	/* jobs: every changed one leaves (or was never) in; the pending ones come (back) */
	snprintf(own, sizeof(own), "%" PRId64, k->own_xid < 0 ? 0 : k->own_xid); /* 0: no row's xmin */
	ids_param(&ownids, k->own_ids, k->nown);
	p[2] = own;
	p[3] = ownids.p;
	ret = keep_query(c, keep_jobs_sql, 4, p, &r, err);
	if (ret)
		goto out;
	chg_jobs = rows_jobs(r, cyc, k->strs, &nall);
	st->jobs = nall;
	gone_jobs = mu_arena_alloc(cyc, nall * sizeof(int64_t) + 1);
	arr_ids = mu_arena_alloc(cyc, nall * sizeof(int64_t) + 1);
	pend_ids = mu_arena_alloc(cyc, nall * sizeof(int64_t) + 1);
	for (size_t i = 0; i < nall; i++) {
		gone_jobs[ngone++] = chg_jobs[i].id;
		if (chg_jobs[i].array_job_id)
			arr_ids[narr++] = chg_jobs[i].array_job_id;
		if (store_db_get_bool(r, (int)i, 20)) {
			chg_jobs[npend] = chg_jobs[i];
			pend_ids[npend++] = chg_jobs[i].id;
		}
	}
	nchg = npend;
	narr = uniq_ids(arr_ids, narr);
	t[2] = keep_ms();
	/* the changed pending jobs' edges */
	ids_param(&ids2, pend_ids, npend);
	p[0] = ids2.p;
	ret = keep_query(c, keep_edges_sql, 1, p, &r, err);
	if (ret)
		goto out;
	qedges = rows_edges(r, cyc, &nqedges);
	slice_edges(chg_jobs, nchg, qedges, nqedges);
	ns->jobs = merge_rows(cyc, sizeof(*chg_jobs), os->jobs, os->njobs, chg_jobs, nchg, gone_jobs, ngone,
			      &ns->njobs);
	{
		/* singleton: an earlier namesake of any pending job that names one
		 * may have changed: their blockers are read again (the text only
		 * picks the candidates, a superset; the database decides) */
		size_t nsg = 0;
		int64_t *sg = mu_arena_alloc(cyc, ns->njobs * sizeof(*sg) + 1);
		for (size_t i = 0; i < ns->njobs; i++)
			if (ns->jobs[i].names_singleton) /* read with the row: no walk of every job's text */
				sg[nsg++] = ns->jobs[i].id;
		if (nsg) {
			ids_param(&ids, sg, nsg);
			p[0] = ids.p;
			ret = keep_query(c, keep_singleton_sql, 1, p, &r, err);
			if (ret)
				goto out;
			for (int i = 0; i < store_db_nrows(r); i++) {
				size_t x = find_row(ns->jobs, ns->njobs, sizeof(*ns->jobs), getl(r, i, 0));
				if (x < ns->njobs)
					ns->jobs[x].singleton_blocker = getl(r, i, 1);
			}
		}
	}
	{
		/* edges: a changed job's from the query, the others' as they were */
		size_t ne = 0, cap = 0;
		for (size_t i = 0; i < ns->njobs; i++)
			cap += ns->jobs[i].dep_count;
		ns->edges = mu_arena_alloc(cyc, cap * sizeof(*ns->edges) + 1);
		targets = mu_arena_alloc(cyc, cap * sizeof(*targets) + 1);
		for (size_t i = 0; i < ns->njobs; i++) {
			struct store_sched_job *j = &ns->jobs[i];
			const struct store_sched_edge *src = has_id(pend_ids, npend, j->id) ? qedges : os->edges;
			size_t first = ne;
			for (size_t e = 0; e < j->dep_count; e++) {
				ns->edges[ne++] = src[j->dep_first + e];
				if (src[j->dep_first + e].target)
					targets[nt++] = src[j->dep_first + e].target;
			}
			j->dep_first = j->dep_count ? first : 0;
		}
		ns->nedges = ne;
	}

	t[3] = keep_ms();
	/* dependency states: a target new to the kept set, changed, or the
	 * array of a changed job, is read again; the others stay */
	nt = uniq_ids(targets, nt);
	refresh = mu_arena_alloc(cyc, nt * sizeof(*refresh) + 1);
	for (size_t i = 0; i < nt; i++)
		if (find_row(os->deps, os->ndeps, sizeof(*os->deps), targets[i]) == os->ndeps ||
		    has_id(gone_jobs, ngone, targets[i]) || has_id(arr_ids, narr, targets[i]))
			refresh[nref++] = targets[i];
	ids_param(&ids, refresh, nref);
	p[0] = ids.p;
	ret = keep_query(c, keep_deps_sql, 1, p, &r, err);
	if (ret)
		goto out;
	qdeps = rows_depstates(r, cyc, k->strs, &nqdeps);
	ns->deps = mu_arena_alloc(cyc, nt * sizeof(*ns->deps) + 1);
	for (size_t i = 0; i < nt; i++) {
		size_t x;
		if (has_id(refresh, nref, targets[i])) {
			x = find_row(qdeps, nqdeps, sizeof(*qdeps), targets[i]);
			if (x < nqdeps)
				ns->deps[ns->ndeps++] = qdeps[x];
		} else {
			x = find_row(os->deps, os->ndeps, sizeof(*os->deps), targets[i]);
			ns->deps[ns->ndeps++] = os->deps[x];
		}
	}

	t[4] = keep_ms();
	/* runs: every changed one (its row, an allocation or its job) leaves;
	 * the live ones come back with their allocations */
	p[0] = lo64;
	ids_param(&ids, gone_jobs, ngone);
	p[1] = ids.p;
	ret = keep_query(c, keep_runs_sql, 2, p, &r, err);
	if (ret)
		goto out;
	chg_runs = rows_runs(r, cyc, k->strs, &ngr);
	st->runs = ngr;
	gone_runs = mu_arena_alloc(cyc, ngr * sizeof(*gone_runs) + 1);
	live_ids = mu_arena_alloc(cyc, ngr * sizeof(*live_ids) + 1);
	for (size_t i = 0, n = ngr; i < n; i++) {
		gone_runs[i] = chg_runs[i].id;
		if (store_db_get_bool(r, (int)i, 13)) {
			chg_runs[nlive] = chg_runs[i];
			live_ids[nlive++] = chg_runs[i].id;
		}
	}
	ids_param(&ids2, live_ids, nlive);
	p[0] = ids2.p;
	ret = keep_query(c, keep_allocs_sql, 1, p, &r, err);
	if (ret)
		goto out;
	qallocs = rows_allocs(r, cyc, &nqallocs);
	slice_allocs(chg_runs, nlive, qallocs, nqallocs);
	ns->runs = merge_rows(cyc, sizeof(*chg_runs), os->runs, os->nruns, chg_runs, nlive, gone_runs, ngr, &ns->nruns);
	{
		size_t na = 0, cap = 0;
		for (size_t i = 0; i < ns->nruns; i++)
			cap += ns->runs[i].alloc_count;
		ns->allocs = mu_arena_alloc(cyc, cap * sizeof(*ns->allocs) + 1);
		for (size_t i = 0; i < ns->nruns; i++) {
			struct store_sched_run *x = &ns->runs[i];
			const struct store_sched_alloc *src = has_id(live_ids, nlive, x->id) ? qallocs : os->allocs;
			size_t first = na;
			for (size_t e = 0; e < x->alloc_count; e++)
				ns->allocs[na++] = src[x->alloc_first + e];
			x->alloc_first = first;
		}
		ns->nallocs = na;
	}

	t[5] = keep_ms();
	/* the small tables, whole */
	ret = batch_run(c, &b, ns->settings.half_life, SNAP_POLICY, SNAP_NPOLICY, err);
	if (!ret)
		ret = load_policy(c, &b, ns, cyc, err);
	t[6] = keep_ms();
	mu_debug("kept snapshot: nodes %.1f ms, jobs %.1f, edges and merge %.1f, deps %.1f, runs %.1f,"
		 " small tables %.1f", t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3], t[5] - t[4],
		 t[6] - t[5]);
out:
	batch_release(&b);
	store_db_clear(r);
	mu_free(ids.p);
	mu_free(ids2.p);
	mu_free(ownids.p);
	return ret;
}

int store_sched_keep_refresh(PGconn *c, const struct store_sched_settings *set, struct store_sched_keep *k,
			     const struct store_sched_snap **snap, struct store_sched_keep_stats *st,
			     struct mu_error *err)
{
	struct store_sched_keep_stats local;
	struct store_sched_snap ns = { 0 };
	struct mu_arena *cyc;
	const char *why = NULL;
	int64_t lo = 0;
	int ret;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	*snap = NULL;
	/* before anything is read: every row version this refresh cannot see
	 * is written by a transaction at or after this bound */
	ret = store_db_query_int64(c, keep_lo_sql, 0, NULL, &lo, err);
	if (ret)
		return ret;
	if (!k->have)
		why = "reset";
	else if (lo < k->lo) /* xid8s never wrap: a restored database */
		why = "xid";
	if (!why) {
		cyc = arena_new();
		ns.settings = *set;
		ret = keep_merge(c, k, &ns, cyc, st, &why, err);
		if (ret || why) {
			arena_free(cyc);
			if (ret) {
				store_sched_keep_reset(k);
				return ret;
			}
		} else {
			arena_free(k->cyc); /* the last snapshot's arrays (strings stay in base and strs) */
			k->cyc = cyc;
			k->snap = ns;
			k->lo = lo;
			k->now = set->now;
		}
	}
	mu_free(k->own_ids); /* read past: this refresh's bound is newer */
	k->own_ids = NULL;
	k->nown = 0;
	k->own_xid = -1;
	if (why) {
		memset(st, 0, sizeof(*st));
		st->whole = true;
		st->why = why;
		ret = keep_whole(c, set, k, lo, err);
		if (ret)
			return ret;
	}
	*snap = &k->snap;
	return 0;
}

int store_sched_keep_lock_pending(PGconn *c, struct store_sched_keep *k, const struct store_sched_decisions *d,
				  struct mu_error *err)
{
	struct sbuf ids = { 0 };
	char lo64[32];
	const char *p[2];
	PGresult *r = NULL;
	int64_t *v;
	int ret;

	mu_free(k->unchanged);
	k->unchanged = NULL;
	k->nunchanged = 0;
	if (!k->have || !d->npending)
		return 0;
	v = mu_calloc(d->npending + 1, sizeof(*v));
	for (size_t i = 0; i < d->npending; i++)
		v[i] = d->pending[i].job_id;
	ids_param(&ids, v, uniq_ids(v, d->npending));
	snprintf(lo64, sizeof(lo64), "%" PRId64, k->lo); /* an xid8: all 64 bits */
	p[0] = lo64;
	p[1] = ids.p;
	/* locked, so that no other write comes between this check and the
	 * reason write; a row of this transaction was read after its write */
	ret = store_db_exec(c,
			    "SELECT id FROM jobs WHERE id = ANY($2::bigint[]) AND (NOT " CHANGED("jobs")
			    " OR jobs.chg = pg_current_xact_id())"
			    " ORDER BY id FOR UPDATE",
			    2, p, &r, err);
	if (!ret) {
		k->nunchanged = (size_t)store_db_nrows(r);
		for (size_t i = 0; i < k->nunchanged; i++)
			v[i] = getl(r, (int)i, 0);
		k->unchanged = v;
		v = NULL;
	}
	store_db_clear(r);
	mu_free(v);
	mu_free(ids.p);
	return ret;
}

int store_sched_keep_note_pending(PGconn *c, struct store_sched_keep *k, const struct store_sched_decisions *d,
				  struct mu_error *err)
{
	int64_t xid = 0, *started = NULL;
	size_t ns = 0;
	int ret;

	if (!k->have || !d->npending || !k->nunchanged)
		return 0;
	ret = store_db_query_int64(c, "SELECT pg_current_xact_id()::text::bigint", 0, NULL, &xid, err);
	if (ret)
		return ret;
	/* a job also started or failed in this cycle is read again */
	started = mu_calloc(d->nstarts + d->nfail_jobs + 1, sizeof(*started));
	for (size_t i = 0; i < d->nstarts; i++)
		started[ns++] = d->starts[i].job_id;
	for (size_t i = 0; i < d->nfail_jobs; i++)
		started[ns++] = d->fail_jobs[i].job_id;
	ns = uniq_ids(started, ns);
	mu_free(k->own_ids);
	k->own_ids = mu_calloc(d->npending + 1, sizeof(*k->own_ids));
	k->nown = 0;
	for (size_t i = 0; i < d->npending; i++) {
		const struct store_sched_pending *pd = &d->pending[i];
		size_t x = find_row(k->snap.jobs, k->snap.njobs, sizeof(*k->snap.jobs), pd->job_id);
		if (x == k->snap.njobs || has_id(started, ns, pd->job_id) ||
		    !has_id(k->unchanged, k->nunchanged, pd->job_id))
			continue;
		struct store_sched_job *j = &k->snap.jobs[x];
		j->pending_reason = mu_arena_strdup(k->strs, pd->reason ? pd->reason : "");
		j->pending_message = mu_arena_strdup(k->strs, pd->message ? pd->message : "");
		j->planned_start = pd->planned_start > 0 ? pd->planned_start : 0;
		k->own_ids[k->nown++] = pd->job_id;
	}
	k->nown = uniq_ids(k->own_ids, k->nown);
	k->own_xid = xid & INT64_C(0xffffffff);
	mu_free(started);
	mu_free(k->unchanged);
	k->unchanged = NULL;
	k->nunchanged = 0;
	return 0;
}

/* ---- decisions -------------------------------------------------------------- */

static int apply_starts(PGconn *c, int64_t epoch, const struct store_sched_decisions *d, int *started,
			struct mu_error *err)
{
	struct sbuf jobs = { 0 }, nn = { 0 }, gpn = { 0 }, pr = { 0 }, runs = { 0 }, node = { 0 }, rank = { 0 },
		    gpu = { 0 }, rids = { 0 };
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
			    "   FROM s WHERE jobs.id = s.job_id AND jobs.id = ANY($2::bigint[])" /* see apply_pending */
			    "   AND jobs.state = 'PENDING' AND NOT jobs.held"
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
	qsort(job_sorted, nr, 2 * sizeof(int64_t), store__cmp_i64);
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
		int64_t *hit = bsearch(key, job_sorted, nr, 2 * sizeof(int64_t), store__cmp_i64);
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
	/* The new runs once each, and named on both sides of the join: the
	 * planner then reads their allocations by key (with the per-GPU list
	 * it guessed 300 runs for 40 and scanned all live allocations). */
	sb_open(&rids);
	for (size_t i = 0; i < nr; i++)
		sb_int(&rids, job_sorted[2 * i + 1]);
	sb_close(&rids);
	p[0] = rids.p;
	ret = store_db_exec(c,
			    "UPDATE runs SET master_addr = CASE WHEN n.address <> '' THEN n.address ELSE n.name END,"
			    "   master_port = 29500 + (runs.id % 10000)::int"
			    " FROM run_allocations x JOIN nodes n ON n.id = x.node_id"
			    " WHERE runs.id = x.run_id AND x.node_rank = 0 AND x.live AND runs.id = ANY($1::bigint[])"
			    " AND x.run_id = ANY($1::bigint[])",
			    1, p, NULL, err);
	if (ret)
		goto out;
	qsort(nodes, nnodes, sizeof(*nodes), store__cmp_i64);
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
	mu_free(rids.p);
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
	/* jobs.id = ANY($1) as well as the join: the planner then finds the
	 * rows by key. Joined to unnest() alone it hashed a sequential scan of
	 * every pending job (5000 reasons at 100k pending: 200 -> 120 ms). */
	ret = store_db_exec(c,
			    "UPDATE jobs SET pending_reason = u.reason, pending_message = u.msg,"
			    " planned_start = CASE WHEN u.ps > 0 THEN to_timestamp(u.ps) END"
			    " FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[]) AS u(id, reason, msg, ps)"
			    " WHERE jobs.id = u.id AND jobs.id = ANY($1::bigint[])"
			    " AND jobs.state = 'PENDING' AND NOT jobs.held"
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
			    "   WHERE jobs.id = u.id AND jobs.id = ANY($1::bigint[]) AND jobs.state = 'PENDING'"
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
