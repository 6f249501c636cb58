/* store_job_submit.c - group-committed submits and the dry-run check
 * (store_job.h): facts gathered in set-based reads, checked by admit.h. */
#include "store_job.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "log.h"
#include "store_int.h"
#include "store_job_int.h"

/* ---- submit ---------------------------------------------------------------- */

struct tenant_info {
	struct admit_tenant at; /* name, path, quota; at.pending counts what this group accepted */
	int64_t id;
	int64_t accepting; /* check_quota: this request's jobs */
	bool found;
};

struct group_ctx {
	struct mu_arena a;
	struct tenant_info *tenants;
	size_t ntenants, tcap;
	struct admit_class *classes;
	int64_t *class_ids; /* of classes[i] */
	size_t nclasses;
	int64_t *dep_ids;  /* dependencies looked up (mu_grow) ... */
	const char **dep_paths; /* ... and their tenant paths (arena) */
	size_t ndeps, dcap;
	const char *levels; /* settings.topology_levels as JSON text, e.g. ["block", "rack"] */
	int64_t spec_max;   /* settings.job_spec_max_bytes: command + env + workdir */
	PGresult *idem;    /* tenant_id, key, sha, JOB_COLS */
};

static struct tenant_info *tenant_find(struct group_ctx *g, const char *name)
{
	for (size_t i = 0; i < g->ntenants; i++)
		if (!strcmp(g->tenants[i].at.name, name))
			return &g->tenants[i];
	return NULL;
}

/* Fails request s with an admission problem: the code and message in
 * s->err, the (job, column) in s->problem for the API to name. */
static int fail_problem(struct store_job_submit *s, const struct admit_problem *pb)
{
	s->problem = *pb;
	mu_error_set(&s->err, pb->code, "", "%s", pb->msg);
	s->rc = pb->code;
	return pb->code;
}

static const char *dep_path(const struct group_ctx *g, int64_t id)
{
	for (size_t i = 0; i < g->ndeps; i++)
		if (g->dep_ids[i] == id)
			return g->dep_paths[i];
	return NULL;
}

/* Adds the tenants and dependencies of jobs [from, to) of s that the group
 * has not looked up yet to the lookup's array literals; returns how many. */
static size_t collect_refs(struct group_ctx *g, const struct store_job_submit *s, size_t from,
			   size_t to, struct mu_buf *names, struct mu_buf *deps)
{
	size_t added = 0;

	for (size_t k = from; k < to; k++) {
		const struct store_job *j = &s->jobs[k];

		if (!tenant_find(g, j->tenant)) {
			g->tenants = mu_grow(g->tenants, &g->tcap, g->ntenants + 1, sizeof(*g->tenants));
			memset(&g->tenants[g->ntenants], 0, sizeof(*g->tenants));
			g->tenants[g->ntenants++].at.name = mu_arena_strdup(&g->a, j->tenant);
			if (names->len > 1)
				mu_buf_addc(names, ',');
			store__pg_text(names, j->tenant);
			added++;
		}
		for (size_t d = 0; d < j->ndeps; d++) {
			if (dep_path(g, j->dep_ids[d]))
				continue;
			if (deps->len > 1)
				mu_buf_addc(deps, ',');
			mu_buf_add_int(deps, j->dep_ids[d]);
			added++;
		}
	}
	return added;
}

/* Looks up the tenants and dependency ids collected (array literals opened
 * with '{', closed here) and every priority class. */
static int query_refs(PGconn *c, struct group_ctx *g, struct mu_buf *names, struct mu_buf *deps,
		      struct mu_error *err)
{
	/* tenants named by the group ('t') and every priority class ('c'), in
	 * one round trip: groups are latency-bound under load */
	static const char refs_sql[] =
		"SELECT 't', t.name, t.id, t.path, q.max_pending_jobs::bigint,"
		"       coalesce(q.max_time_limit, 0)::bigint,"
		"       CASE WHEN q.max_pending_jobs IS NOT NULL THEN"
		"         (SELECT count(*) FROM jobs j WHERE j.tenant_id = t.id AND j.state = 'PENDING')"
		"       ELSE 0 END, false, 0::bigint"
		"  FROM tenants t LEFT JOIN quotas q ON q.tenant_id = t.id AND q.gpu_model = ''"
		" WHERE t.name = ANY($1::text[])"
		" UNION ALL "
		"SELECT 'c', name, id::bigint,"
		"       (SELECT value::text FROM settings WHERE key = 'topology_levels'),"
		"       default_time_limit::bigint, coalesce(max_time_limit, 0)::bigint, 0::bigint,"
		"       is_default, coalesce((SELECT (value #>> '{}')::bigint FROM settings"
		"         WHERE key = 'job_spec_max_bytes' AND jsonb_typeof(value) = 'number'), " STORE_JOB_SPEC_MAX_S ")"
		"  FROM priority_classes";
	static const char deps_sql[] =
		"SELECT j.id, t.path FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
		" WHERE j.id = ANY($1::bigint[])";
	PGresult *r = NULL;
	const char *p[1];
	int ret, rows;

	mu_buf_addc(names, '}');
	mu_buf_addc(deps, '}');
	p[0] = names->p;
	ret = store_db_exec(c, refs_sql, 1, p, &r, err);
	if (ret < 0)
		goto out;
	g->nclasses = 0;
	for (int i = 0; i < store_db_nrows(r); i++)
		g->nclasses += store_db_get(r, i, 0)[0] == 'c';
	g->classes = mu_arena_alloc(&g->a, sizeof(*g->classes) * (g->nclasses + 1));
	g->class_ids = mu_arena_alloc(&g->a, sizeof(*g->class_ids) * (g->nclasses + 1));
	g->nclasses = 0;
	for (int i = 0; i < store_db_nrows(r); i++) {
		if (store_db_get(r, i, 0)[0] == 'c') {
			struct admit_class *k = &g->classes[g->nclasses];

			k->name = store__dup(&g->a, r, i, 1);
			g->class_ids[g->nclasses++] = store_db_get_int64(r, i, 2);
			if (!g->levels)
				g->levels = store__dup(&g->a, r, i, 3);
			g->spec_max = store_db_get_int64(r, i, 8);
			k->default_time = store_db_get_int64(r, i, 4);
			k->max_time = store_db_get_int64(r, i, 5);
			k->is_default = store_db_get_bool(r, i, 7);
		} else {
			struct tenant_info *t = tenant_find(g, store_db_get(r, i, 1));

			if (!t || t->found)
				continue;
			t->found = true;
			t->id = store_db_get_int64(r, i, 2);
			t->at.path = store__dup(&g->a, r, i, 3);
			t->at.has_max_pending = !store_db_is_null(r, i, 4);
			t->at.max_pending = store_db_get_int64(r, i, 4);
			t->at.max_time = store_db_get_int64(r, i, 5);
			t->at.pending = store_db_get_int64(r, i, 6);
		}
	}
	store_db_clear(r);
	r = NULL;

	if (deps->len > 2) {
		size_t cap = g->dcap;

		p[0] = deps->p;
		ret = store_db_exec(c, deps_sql, 1, p, &r, err);
		if (ret < 0)
			goto out;
		rows = store_db_nrows(r);
		g->dep_ids = mu_grow(g->dep_ids, &g->dcap, g->ndeps + (size_t)rows + 1,
				     sizeof(*g->dep_ids));
		if (g->dcap != cap) {
			const char **paths = mu_arena_alloc(&g->a, sizeof(*paths) * g->dcap);

			if (g->ndeps)
				memcpy(paths, g->dep_paths, sizeof(*paths) * g->ndeps);
			g->dep_paths = paths;
		}
		for (int i = 0; i < rows; i++) {
			g->dep_ids[g->ndeps] = store_db_get_int64(r, i, 0);
			g->dep_paths[g->ndeps] = store__dup(&g->a, r, i, 1);
			g->ndeps++;
		}
	}
out:
	store_db_clear(r);
	mu_buf_release(names);
	mu_buf_release(deps);
	return ret;
}

/* Looks up every tenant and dependency the group's decoded requests name. */
static int load_refs(PGconn *c, struct group_ctx *g, struct store_job_submit **reqs, size_t n,
		     struct mu_error *err)
{
	struct mu_buf names = MU_BUF_INIT, deps = MU_BUF_INIT;

	mu_buf_addc(&names, '{');
	mu_buf_addc(&deps, '{');
	for (size_t i = 0; i < n; i++)
		if (reqs[i]->rc == 0 && (!reqs[i]->decode || reqs[i]->decoded))
			collect_refs(g, reqs[i], 0, reqs[i]->n, &names, &deps);
	return query_refs(c, g, &names, &deps, err);
}

/* Checks job k of request s against the database's view (admit_job) and
 * resolves its tenant and class ids; fails the request (s->rc) otherwise. */
static int validate_job(struct group_ctx *g, struct store_job_submit *s, size_t k,
			int64_t *tenant_id, int64_t *class_id)
{
	struct store_job *j = &s->jobs[k];
	struct tenant_info *t = tenant_find(g, j->tenant);
	const struct admit_facts f = { s->scope, g->classes, g->nclasses, g->levels, g->spec_max };
	const char *paths_local[16], **paths = paths_local;
	struct admit_job aj = {
		.priority_class = j->priority_class, .time_limit = j->time_limit,
		.topo_required = j->topo_required, .topo_preferred = j->topo_preferred,
		.command_len = j->command ? strlen(j->command) : 0,
		.env_len = j->env ? strlen(j->env) : 0,
		.workdir_len = j->workdir ? strlen(j->workdir) : 0,
		.dep_ids = j->dep_ids, .ndeps = j->ndeps,
	};
	struct admit_result res;
	struct admit_problem pb;

	if (j->ndeps > sizeof(paths_local) / sizeof(paths_local[0]))
		paths = mu_arena_alloc(&g->a, sizeof(*paths) * j->ndeps);
	for (size_t d = 0; d < j->ndeps; d++)
		paths[d] = dep_path(g, j->dep_ids[d]);
	aj.dep_paths = paths;
	if (admit_job(&f, t && t->found ? &t->at : NULL, &aj, k, &res, &pb) < 0)
		return fail_problem(s, &pb);
	j->time_limit = res.time_limit;
	j->tenant_path = t->at.path;
	j->priority_class = g->classes[res.class_idx].name;
	*tenant_id = t->id;
	*class_id = g->class_ids[res.class_idx];
	return 0;
}

/* The quota on pending jobs for a request whose jobs all passed
 * validate_job, counting what this group already accepted; then counts
 * the request's jobs as accepted. */
static int check_quota(struct group_ctx *g, struct store_job_submit *s)
{
	struct admit_problem pb;
	int ret = 0;

	for (size_t k = 0; k < s->n; k++)
		tenant_find(g, s->jobs[k].tenant)->accepting++;
	for (size_t k = 0; k < s->n && !ret; k++) {
		struct tenant_info *t = tenant_find(g, s->jobs[k].tenant);

		if (admit_quota(&t->at, t->accepting, &pb) < 0)
			ret = fail_problem(s, &pb);
	}
	for (size_t k = 0; k < s->n; k++) {
		struct tenant_info *t = tenant_find(g, s->jobs[k].tenant);

		if (!ret)
			t->at.pending += t->accepting;
		t->accepting = 0;
	}
	return ret;
}

/* Checks one request against the database's view; resolves tenant_id etc.
 * into the per-job side arrays. */
static int validate(struct group_ctx *g, struct store_job_submit *s, int64_t *tenant_ids,
		    int64_t *class_ids)
{
	for (size_t k = 0; k < s->n; k++)
		if (validate_job(g, s, k, &tenant_ids[k], &class_ids[k]) < 0)
			return s->rc;
	return check_quota(g, s);
}

/* A request an Idempotency-Key applies to: one job, or one array (whose
 * first task carries the key; a replay answers that task, as the submit
 * did). Batches take none. */
static bool idem_request(const struct store_job_submit *s)
{
	return s->idem_key && !s->batch && (s->n == 1 || s->jobs[0].array_spec);
}

static int load_idem(PGconn *c, struct group_ctx *g, struct store_job_submit **reqs, size_t n,
		     struct mu_error *err)
{
	static const char sql[] =
		"SELECT j.tenant_id, j.idempotency_key, coalesce(j.request_sha256, ''), " JOB_COLS
		JOB_FROM
		" WHERE j.idempotency_key IS NOT NULL AND (j.tenant_id, j.idempotency_key) IN"
		"       (SELECT * FROM unnest($1::bigint[], $2::text[]))";
	struct mu_buf ids = MU_BUF_INIT, keys = MU_BUF_INIT;
	const char *p[2];
	size_t m = 0;
	int ret = 0;

	mu_buf_addc(&ids, '{');
	mu_buf_addc(&keys, '{');
	for (size_t i = 0; i < n; i++) {
		struct tenant_info *t;

		if (!idem_request(reqs[i]))
			continue;
		t = tenant_find(g, reqs[i]->jobs[0].tenant);
		if (!t || !t->found)
			continue;
		if (m++) {
			mu_buf_addc(&ids, ',');
			mu_buf_addc(&keys, ',');
		}
		mu_buf_add_int(&ids, t->id);
		store__pg_text(&keys, reqs[i]->idem_key);
	}
	mu_buf_addc(&ids, '}');
	mu_buf_addc(&keys, '}');
	if (m) {
		p[0] = ids.p;
		p[1] = keys.p;
		ret = store_db_exec(c, sql, 2, p, &g->idem, err);
	}
	mu_buf_release(&ids);
	mu_buf_release(&keys);
	return ret;
}

/* COPY text format: backslash, tab, newline and CR escaped; NULL is \N. */
static void copy_str(struct mu_buf *b, const char *v)
{
	if (!v) {
		mu_buf_add(b, "\\N", 2);
		return;
	}
	while (*v) {
		size_t n = strcspn(v, "\\\t\n\r");

		mu_buf_add(b, v, n);
		v += n;
		switch (*v) {
		case '\\': mu_buf_add(b, "\\\\", 2); break;
		case '\t': mu_buf_add(b, "\\t", 2); break;
		case '\n': mu_buf_add(b, "\\n", 2); break;
		case '\r': mu_buf_add(b, "\\r", 2); break;
		default: return;
		}
		v++;
	}
}

static void copy_int(struct mu_buf *b, int64_t v)
{
	mu_buf_add_int(b, v);
}

/* jobs.launch: the non-default launch fields as a JSON object (names the
 * codec validated: no character needs escaping beyond JSON's own). */
static void copy_launch(struct mu_buf *b, const struct store_job *j)
{
	struct mu_buf o = MU_BUF_INIT;
	bool any = false;

	mu_buf_addc(&o, '{');
	if (j->launcher && *j->launcher && strcmp(j->launcher, "none") != 0) {
		mu_buf_adds(&o, "\"launcher\":");
		mu_buf_add_json_strz(&o, j->launcher);
		any = true;
	}
	if (j->on_shrink && *j->on_shrink && strcmp(j->on_shrink, "restart") != 0) {
		mu_buf_adds(&o, any ? ",\"on_shrink\":" : "\"on_shrink\":");
		mu_buf_add_json_strz(&o, j->on_shrink);
		any = true;
	}
	if (j->signal_name && *j->signal_name) {
		mu_buf_adds(&o, any ? ",\"signal\":{\"name\":" : "\"signal\":{\"name\":");
		mu_buf_add_json_strz(&o, j->signal_name);
		mu_buf_addf(&o, ",\"before\":%lld,\"batch_only\":%s}", (long long)j->signal_before,
			    j->signal_batch_only ? "true" : "false");
	}
	mu_buf_addc(&o, '}');
	copy_str(b, o.p);
	mu_buf_release(&o);
}

/* One jobs row for COPY, in the column order of copy_jobs_sql. */
static void add_row(struct mu_buf *b, const struct store_job *j, int64_t tenant_id,
		    int64_t class_id, const struct store_job_submit *s)
{
	copy_int(b, j->id);
	mu_buf_addc(b, '\t');
	copy_int(b, tenant_id);
	mu_buf_addc(b, '\t');
	copy_str(b, j->user ? j->user : "");
	mu_buf_addc(b, '\t');
	copy_str(b, j->name ? j->name : "");
	mu_buf_addc(b, '\t');
	copy_int(b, class_id);
	mu_buf_addc(b, '\t');
	copy_int(b, j->nodes);
	mu_buf_addc(b, '\t');
	if (j->min_nodes > 0)
		copy_int(b, j->min_nodes);
	else
		copy_str(b, NULL);
	mu_buf_addc(b, '\t');
	copy_int(b, j->gpus_per_node);
	mu_buf_addc(b, '\t');
	copy_str(b, j->gpu_model ? j->gpu_model : "");
	mu_buf_addc(b, '\t');
	copy_int(b, j->procs_per_node);
	mu_buf_addc(b, '\t');
	copy_str(b, j->topo_required ? j->topo_required : "");
	mu_buf_addc(b, '\t');
	copy_str(b, j->topo_preferred ? j->topo_preferred : "");
	mu_buf_addc(b, '\t');
	copy_int(b, j->time_limit);
	mu_buf_addc(b, '\t');
	copy_str(b, j->command ? j->command : "[]");
	mu_buf_addc(b, '\t');
	copy_str(b, j->env ? j->env : "{}");
	mu_buf_addc(b, '\t');
	copy_str(b, j->workdir ? j->workdir : "");
	mu_buf_addc(b, '\t');
	copy_str(b, j->dependencies ? j->dependencies : "[]");
	mu_buf_addc(b, '\t');
	copy_int(b, j->max_retries);
	mu_buf_addc(b, '\t');
	copy_str(b, j->labels ? j->labels : "{}");
	mu_buf_addc(b, '\t');
	/* the key on the request's first job: an array's first task names it */
	copy_str(b, j == &s->jobs[0] ? s->idem_key : NULL);
	mu_buf_addc(b, '\t');
	copy_str(b, s->idem_key && j == &s->jobs[0] ? s->request_sha256 : NULL);
	mu_buf_addc(b, '\t');
	if (j->mem_per_node > 0)
		copy_int(b, j->mem_per_node);
	else
		copy_str(b, NULL);
	mu_buf_addc(b, '\t');
	if (j->cpus_per_node > 0)
		copy_int(b, j->cpus_per_node);
	else
		copy_str(b, NULL);
	mu_buf_addc(b, '\t');
	copy_launch(b, j);
	mu_buf_addc(b, '\t');
	copy_str(b, j->stdout_pattern ? j->stdout_pattern : "");
	mu_buf_addc(b, '\t');
	copy_str(b, j->stderr_pattern ? j->stderr_pattern : "");
	mu_buf_addc(b, '\t');
	mu_buf_addc(b, j->held ? 't' : 'f');
	mu_buf_addc(b, '\t');
	if (j->begin > 0) {
		time_t bt = (time_t)j->begin;
		struct tm tm;
		char tb[40];

		gmtime_r(&bt, &tm);
		strftime(tb, sizeof(tb), "%Y-%m-%d %H:%M:%S+00", &tm);
		mu_buf_adds(b, tb);
	} else {
		copy_str(b, NULL);
	}
	mu_buf_addc(b, '\t');
	copy_str(b, j->pending_reason ? j->pending_reason : "Priority");
	mu_buf_addc(b, '\t');
	if (j->array_spec) {
		copy_int(b, j->array_job_id);
		mu_buf_addc(b, '\t');
		copy_int(b, j->array_task_id);
		mu_buf_addc(b, '\t');
		copy_str(b, j->array_spec);
	} else {
		mu_buf_adds(b, "\\N\t\\N\t\\N");
	}
	mu_buf_addc(b, '\t');
	copy_int(b, j->array_throttle);
	mu_buf_addc(b, '\n');
}

/* Starts COPY ... FROM STDIN. */
static int copy_start(PGconn *c, const char *sql, struct mu_error *err)
{
	PGresult *r = PQexec(c, sql);
	int ret = 0;

	if (PQresultStatus(r) != PGRES_COPY_IN) {
		ret = store_db_check(c, r, err);
		if (!ret)
			ret = mu_error_set(err, MU_EINTERNAL, "", "COPY did not start");
	}
	PQclear(r);
	return ret;
}

/* Hands the rows in `data` to the server and empties it. The server parses
 * and inserts them while the caller builds the next chunk. */
static int copy_put(PGconn *c, struct mu_buf *data, struct mu_error *err)
{
	if (data->len && PQputCopyData(c, data->p, (int)data->len) != 1)
		return mu_error_set(err, MU_EUNAVAIL, "", "COPY failed: %s", PQerrorMessage(c));
	data->len = 0;
	return 0;
}

/* Ends the COPY; with `ret` < 0 (the caller gave up) it is aborted. While
 * the server finishes it, calls every written request's reply hook when
 * `reqs` is set. */
static int copy_end(PGconn *c, int ret, struct store_job_submit **reqs, size_t n,
		    struct mu_error *err)
{
	PGresult *r;

	if (PQputCopyEnd(c, ret < 0 ? "aborted by the client" : NULL) != 1 && !ret)
		ret = mu_error_set(err, MU_EUNAVAIL, "", "COPY failed: %s", PQerrorMessage(c));
	for (size_t i = 0; i < n && !ret; i++) {
		if (reqs[i]->rc == 0 && !reqs[i]->replayed && reqs[i]->reply) {
			reqs[i]->reply(reqs[i]);
			reqs[i]->replied = true;
		}
	}
	while ((r = PQgetResult(c))) {
		if (!ret)
			ret = store_db_check(c, r, err);
		PQclear(r);
	}
	return ret;
}

/* The jobs columns add_row writes. */
#define COPY_JOBS_SQL                                                                              \
	"COPY jobs (id, tenant_id, user_name, name, priority_class_id, nodes, min_nodes,"           \
	" gpus_per_node, gpu_model, procs_per_node, topology_required, topology_preferred,"         \
	" time_limit, command, env, workdir, dependencies, max_retries, labels,"                     \
	" idempotency_key, request_sha256, mem_per_node, cpus_per_node, launch,"                    \
	" stdout_pattern, stderr_pattern, held, begin_at,"                                      \
	" pending_reason, array_job_id, array_task_id, array_spec, array_throttle) FROM STDIN"

/* Rows handed to the server at a time: it inserts one chunk while the
 * next is built. */
#define COPY_CHUNK_JOBS 500

/* Sets what the database gave job j (id, created_at, initial state) and
 * copies the names the reply needs into the request's arena; `last` is the
 * previous job written for s (or NULL), whose copies are shared when equal. */
static void fill_job(struct store_job_submit *s, struct store_job *j, const struct store_job *last,
		     int64_t id, const char *created_at, int64_t etag)
{
	j->id = id;
	j->created_at = last ? last->created_at : mu_arena_strdup(s->arena, created_at);
	j->etag = etag;
	/* an array's tasks are consecutive jobs of the request, ascending,
	 * sharing the spec (one string: codec_job_expand_array copies the
	 * job); the first one's id names the array. A batch may hold several. */
	if (j->array_spec)
		j->array_job_id = last && last->array_spec == j->array_spec &&
					  last->array_task_id < j->array_task_id ? last->array_job_id : id;
	j->state = "PENDING";
	/* held and begin: kept out of the snapshot (store_sched_snap.c), so
	 * the reason written here stays until released or due */
	j->pending_reason = j->held ? "Held" : j->begin > (int64_t)time(NULL) ? "BeginTime" : "Priority";
	j->begin_at = NULL;
	if (j->begin > 0) {
		time_t bt = (time_t)j->begin;
		struct tm tm;
		char tb[32];

		gmtime_r(&bt, &tm);
		strftime(tb, sizeof(tb), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
		j->begin_at = mu_arena_strdup(s->arena, tb);
	}
	j->pending_message = "";
	j->end_reason = "";
	if (last && !strcmp(last->tenant, j->tenant) && !strcmp(last->priority_class, j->priority_class)) {
		j->tenant = last->tenant;
		j->tenant_path = last->tenant_path;
		j->priority_class = last->priority_class;
		return;
	}
	j->tenant = mu_arena_strdup(s->arena, j->tenant);
	j->tenant_path = mu_arena_strdup(s->arena, j->tenant_path);
	j->priority_class = mu_arena_strdup(s->arena, j->priority_class);
}

/* The ids insert_jobs drew for the group, in input order, with the
 * transaction's created_at and etag: one row from the server, whatever the
 * group's size (see ids_sql). */
struct id_block {
	int64_t first;       /* the k-th id is first + k ... */
	int64_t *list;       /* ... unless this is set (another session drew between ours) */
	const char *created_at;
	int64_t etag;
};

static int64_t id_at(const struct id_block *b, size_t k)
{
	return b->list ? b->list[k] : b->first + (int64_t)k;
}

/* Reads the ids_sql row into *b: `total` ids, consecutive or listed in
 * column 5 as an array literal ("{9,7,10}"), put in ascending order here
 * (the order nextval gave them, whatever order the aggregate saw). */
static int id_block_read(const PGresult *r, size_t total, struct mu_arena *a, struct id_block *b,
			 struct mu_error *err)
{
	const char *p;
	size_t k = 0;

	b->first = store_db_get_int64(r, 0, 0);
	b->created_at = store_db_get(r, 0, 3);
	b->etag = store_db_get_int64(r, 0, 4);
	b->list = NULL;
	if (store_db_get_int64(r, 0, 2) != (int64_t)total)
		return mu_error_set(err, MU_EINTERNAL, "", "drew %lld job ids, not %zu",
				    (long long)store_db_get_int64(r, 0, 2), total);
	if (store_db_is_null(r, 0, 5))
		return 0;
	b->list = mu_arena_alloc(a, sizeof(*b->list) * total);
	for (p = store_db_get(r, 0, 5); *p && k < total; p++) {
		char *end;

		if (*p < '0' || *p > '9')
			continue;
		b->list[k++] = strtoll(p, &end, 10);
		p = end - 1;
	}
	if (k != total)
		return mu_error_set(err, MU_EINTERNAL, "", "read %zu job ids, not %zu", k, total);
	qsort(b->list, total, sizeof(*b->list), store__cmp_i64);
	return 0;
}

/*
 * The rows of a request whose jobs are not decoded yet (alone in its
 * group): decodes a chunk, looks up the tenants and dependencies it names
 * that the group has not seen (ending and restarting the COPY around the
 * lookup), checks it and hands its rows to the COPY, so that the server
 * inserts one chunk while the next is decoded. *copying tells whether a
 * COPY is open. Returns < 0 when the database failed; s->rc < 0 when the
 * request failed anywhere (decoding, a check, the quota): the caller rolls
 * back and decodes it all the strict way (store_job_submit_group).
 */
static int stream_rows(PGconn *c, struct group_ctx *g, struct store_job_submit *s,
		       const struct id_block *ids, int64_t *tids, int64_t *cids, struct mu_buf *rows,
		       bool *copying, struct mu_error *err)
{
	static const char copy_jobs_sql[] = COPY_JOBS_SQL;
	int ret = 0;

	for (size_t from = 0; from < s->n && !ret; from += COPY_CHUNK_JOBS) {
		size_t to = from + COPY_CHUNK_JOBS < s->n ? from + COPY_CHUNK_JOBS : s->n;
		struct mu_buf names = MU_BUF_INIT, deps = MU_BUF_INIT;

		s->rc = s->decode(s, from, to);
		if (s->rc < 0)
			return 0;
		mu_buf_addc(&names, '{');
		mu_buf_addc(&deps, '{');
		if (collect_refs(g, s, from, to, &names, &deps)) {
			if (*copying) {
				*copying = false;
				ret = copy_put(c, rows, err);
				ret = copy_end(c, ret, NULL, 0, err);
			}
			if (!ret)
				ret = query_refs(c, g, &names, &deps, err);
		}
		mu_buf_release(&names);
		mu_buf_release(&deps);
		if (!ret && !*copying) {
			ret = copy_start(c, copy_jobs_sql, err);
			*copying = ret == 0;
		}
		for (size_t k = from; k < to && !ret; k++) {
			struct store_job *j = &s->jobs[k];

			if (validate_job(g, s, k, &tids[k], &cids[k]) < 0)
				return 0;
			fill_job(s, j, k ? j - 1 : NULL, id_at(ids, k), ids->created_at, ids->etag);
			add_row(rows, j, tids[k], cids[k], s);
		}
		if (!ret)
			ret = copy_put(c, rows, err);
	}
	if (ret < 0)
		return ret;
	if (check_quota(g, s) < 0)
		return 0;
	s->decoded = true;
	return 0;
}

/*
 * Writes every accepted job of the group: ids come from the sequence in
 * input order, the rows go in by COPY (the fastest path PostgreSQL has),
 * streamed in chunks, their job.submitted events by a second COPY, then
 * one NOTIFY naming the highest id (delivered at COMMIT). `g` checks the jobs of a
 * request not decoded yet (see stream_rows); when that request fails,
 * this returns 0 with its rc < 0 and the caller rolls back.
 */
static int insert_jobs(PGconn *c, struct group_ctx *g, struct store_job_submit **reqs, size_t n,
		       int64_t **tids, int64_t **cids, size_t total, struct mu_error *err)
{
	/* One nextval per job, in input order, but one row back: the calls of
	 * one scan return ascending values, so the k-th job takes the k-th
	 * smallest; when no other session drew meanwhile (the insert lock keeps
	 * the submits out; a plain INSERT elsewhere is not under it) they are
	 * first..first + n - 1 and the list is left out. The transaction's
	 * now(), once: every row's created_at and etag. */
	static const char ids_sql[] =
		"SELECT min(v), max(v), count(*), " TS("now()") ","
		" (extract(epoch FROM now()) * 1000000)::bigint,"
		" CASE WHEN max(v) - min(v) + 1 <> count(*) THEN array_agg(v)::text END"
		" FROM (SELECT nextval('jobs_id_seq') AS v FROM generate_series(1, $1::int)) s";
	static const char copy_jobs_sql[] = COPY_JOBS_SQL;
	static const char copy_events_sql[] = "COPY events (kind, tenant_id, job_id) FROM STDIN";
	/* One wake-up for the scheduler per transaction, naming the highest id:
	 * it reloads the queue anyway, and 10,000 distinct payloads cost
	 * PostgreSQL ~8 ms a batch for nothing. */
	static const char notify_sql[] = "SELECT pg_notify('muster_sched', 'submit:' || $1::text)";
	struct mu_buf rows = MU_BUF_INIT;
	struct id_block ids;
	int64_t last_id = 0;
	double t0 = store__mono_ms(), t1 = 0, t2 = 0, t3 = 0;
	bool copying = false;
	char nbuf[24];
	const char *p[1];
	PGresult *r = NULL;
	size_t at = 0;
	int ret;

	snprintf(nbuf, sizeof(nbuf), "%zu", total);
	p[0] = nbuf;
	ret = store_db_exec(c, ids_sql, 1, p, &r, err);
	if (ret < 0)
		goto out;
	ret = id_block_read(r, total, &g->a, &ids, err);
	if (ret < 0)
		goto out;
	t1 = store__mono_ms();
	mu_buf_reserve(&rows, COPY_CHUNK_JOBS * 300);
	for (size_t i = 0; i < n && !ret; i++) {
		struct store_job_submit *s = reqs[i];

		if (s->rc != 0 || s->replayed)
			continue;
		if (s->decode && !s->decoded) {
			ret = stream_rows(c, g, s, &ids, tids[i], cids[i], &rows, &copying, err);
			if (!ret && s->rc < 0) {
				if (copying) /* aborts it: the caller rolls back */
					copy_end(c, s->rc, NULL, 0, err);
				goto out;
			}
			at += s->n;
			continue;
		}
		if (!copying) {
			ret = copy_start(c, copy_jobs_sql, err);
			if (ret < 0)
				break;
			copying = true;
		}
		for (size_t k = 0; k < s->n; k++, at++) {
			struct store_job *j = &s->jobs[k];

			fill_job(s, j, k ? j - 1 : NULL, id_at(&ids, at), ids.created_at, ids.etag);
			add_row(&rows, j, tids[i][k], cids[i][k], s);
			if (rows.len >= COPY_CHUNK_JOBS * 250) {
				ret = copy_put(c, &rows, err);
				if (ret < 0)
					break;
			}
		}
	}
	if (!ret && copying)
		ret = copy_put(c, &rows, err);
	t2 = store__mono_ms();
	if (copying)
		ret = copy_end(c, ret, NULL, 0, err);
	if (ret < 0)
		goto out;
	t3 = store__mono_ms();

	ret = copy_start(c, copy_events_sql, err);
	if (ret < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct store_job_submit *s = reqs[i];

		if (s->rc != 0 || s->replayed)
			continue;
		for (size_t k = 0; k < s->n; k++) {
			mu_buf_adds(&rows, "job.submitted\t");
			mu_buf_add_int(&rows, tids[i][k]);
			mu_buf_addc(&rows, '\t');
			mu_buf_add_int(&rows, s->jobs[k].id);
			mu_buf_addc(&rows, '\n');
			if (s->jobs[k].id > last_id)
				last_id = s->jobs[k].id;
		}
	}
	ret = copy_put(c, &rows, err);
	ret = copy_end(c, ret, reqs, n, err);
	if (ret < 0)
		goto out;
	snprintf(nbuf, sizeof(nbuf), "%lld", (long long)last_id);
	p[0] = nbuf;
	ret = store_db_exec(c, notify_sql, 1, p, NULL, err);
	mu_debug("jobs insert jobs=%zu ids_ms=%.1f copy_ms=%.1f copy_end_ms=%.1f events_ms=%.1f",
		 total, t1 - t0, t2 - t1, t3 - t2, store__mono_ms() - t3);
out:
	store_db_clear(r);
	mu_buf_release(&rows);
	return ret;
}

/* The idempotent replay of request s, from the database or an earlier
 * request of this group. */
static bool find_replay(struct group_ctx *g, struct store_job_submit *s, int64_t tenant_id)
{
	for (int r = 0; g->idem && r < store_db_nrows(g->idem); r++) {
		if (store_db_get_int64(g->idem, r, 0) != tenant_id ||
		    strcmp(store_db_get(g->idem, r, 1), s->idem_key))
			continue;
		if (strcmp(store_db_get(g->idem, r, 2), s->request_sha256)) {
			mu_error_set(&s->err, MU_EIDEMPOTENCY, "Idempotency-Key",
				     "this key was used with a different request");
			s->rc = MU_EIDEMPOTENCY;
			return true;
		}
		store__job_row(s->arena, g->idem, r, 3, &s->jobs[0]);
		s->replayed = true;
		return true;
	}
	return false;
}

static void copy_replay_in_group(struct store_job_submit **reqs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct store_job_submit *s = reqs[i];

		if (!idem_request(s) || s->rc != 1)
			continue;
		/* rc 1 marks "same key as an earlier request of this group" */
		s->rc = 0;
		for (size_t e = 0; e < i; e++) {
			struct store_job_submit *o = reqs[e];

			if (!idem_request(o) || o->rc != 0 ||
			    strcmp(o->jobs[0].tenant, s->jobs[0].tenant) || strcmp(o->idem_key, s->idem_key))
				continue;
			if (strcmp(o->request_sha256, s->request_sha256)) {
				mu_error_set(&s->err, MU_EIDEMPOTENCY, "Idempotency-Key",
					     "this key was used with a different request");
				s->rc = MU_EIDEMPOTENCY;
			} else {
				s->jobs[0] = o->jobs[0];
				s->jobs[0].state = "PENDING";
				s->replayed = true;
			}
			break;
		}
	}
}

static int submit_once(PGconn *c, struct store_job_submit **reqs, size_t n, struct mu_error *err)
{
	struct group_ctx g;
	int64_t **tids = mu_calloc(n, sizeof(*tids)), **cids = mu_calloc(n, sizeof(*cids));
	double t_begin = store__mono_ms(), t_refs = 0, t_commit = 0;
	size_t total = 0;
	bool stream;
	int ret;

	memset(&g, 0, sizeof(g));
	mu_arena_init(&g.a, 0);
	for (size_t i = 0; i < n; i++) {
		reqs[i]->rc = 0;
		reqs[i]->replayed = false;
		reqs[i]->replied = false;
		mu_error_clear(&reqs[i]->err);
		reqs[i]->problem.set = false;
	}
	/* A lone undecoded request is decoded while it is written
	 * (stream_rows); in a group, every one is decoded before BEGIN. */
	stream = n == 1 && reqs[0]->decode && !reqs[0]->decoded;
	for (size_t i = 0; i < n && !stream; i++) {
		struct store_job_submit *s = reqs[i];

		if (s->decode && !s->decoded) {
			s->rc = s->decode_all(s);
			s->decoded = s->rc == 0;
		}
	}
	/* after decoding: a batch's arrays may have grown it */
	for (size_t i = 0; i < n; i++) {
		tids[i] = mu_calloc(reqs[i]->n + 1, sizeof(**tids));
		cids[i] = mu_calloc(reqs[i]->n + 1, sizeof(**cids));
	}
	/* Job ids become visible in order: see store_job.h. */
	ret = store_db_exec_simple(c, "BEGIN; SELECT pg_advisory_xact_lock(" STORE_JOB_INSERT_LOCK ")",
				   err);
	if (ret < 0)
		goto out;
	ret = load_refs(c, &g, reqs, n, err);
	if (ret < 0)
		goto out_rollback;
	ret = load_idem(c, &g, reqs, n, err);
	if (ret < 0)
		goto out_rollback;
	t_refs = store__mono_ms();
	for (size_t i = 0; i < n; i++) {
		struct store_job_submit *s = reqs[i];

		if (s->rc < 0)
			continue;
		if (stream) {
			total += s->n;
			continue;
		}
		if (idem_request(s)) {
			struct tenant_info *t = tenant_find(&g, s->jobs[0].tenant);
			bool earlier = false;

			if (t && t->found && admit_scope_sees(s->scope, t->at.path) &&
			    find_replay(&g, s, t->id))
				continue;
			for (size_t e = 0; e < i; e++)
				earlier |= idem_request(reqs[e]) && reqs[e]->rc == 0 &&
					   !reqs[e]->replayed &&
					   !strcmp(reqs[e]->jobs[0].tenant, s->jobs[0].tenant) &&
					   !strcmp(reqs[e]->idem_key, s->idem_key);
			if (earlier) {
				s->rc = 1; /* resolved after COMMIT by copy_replay_in_group */
				continue;
			}
		}
		if (validate(&g, s, tids[i], cids[i]) < 0)
			continue;
		total += s->n;
	}
	if (total) {
		ret = insert_jobs(c, &g, reqs, n, tids, cids, total, err);
		if (ret < 0)
			goto out_rollback;
		if (stream && reqs[0]->rc < 0) {
			store_db_rollback(c);
			goto out;
		}
	}
	t_commit = store__mono_ms();
	ret = store_db_exec_simple(c, "COMMIT", err);
	if (ret < 0)
		goto out;
	mu_debug("jobs group jobs=%zu refs_ms=%.1f commit_ms=%.1f", total, t_refs - t_begin,
		 store__mono_ms() - t_commit);
	copy_replay_in_group(reqs, n);
	goto out;
out_rollback:
	store_db_rollback(c);
out:
	mu_free(g.dep_ids);
	store_db_clear(g.idem);
	mu_arena_release(&g.a);
	for (size_t i = 0; i < n; i++) {
		mu_free(tids[i]);
		mu_free(cids[i]);
	}
	mu_free(tids);
	mu_free(cids);
	mu_free(g.tenants);
	return ret;
}

int store_job_submit_group(PGconn *c, struct store_job_submit **reqs, size_t n)
{
	struct mu_error err = { 0 };
	int ret = submit_once(c, reqs, n, &err);

	if (!ret && n == 1 && reqs[0]->decode && !reqs[0]->decoded && reqs[0]->rc < 0) {
		/* The streamed attempt failed and was rolled back: decode every
		 * job the strict way, whose first error wins, then check them all
		 * as any request, whose first failure wins. */
		struct store_job_submit *s = reqs[0];

		mu_error_clear(&s->err);
		s->problem.set = false;
		s->rc = s->decode_all(s);
		if (s->rc < 0)
			return 0;
		s->decoded = true;
		ret = submit_once(c, reqs, 1, &err);
	}

	if (ret < 0 && n > 1 && store_db_ok(c)) {
		/* Something no check foresaw (a tenant deleted meanwhile...): run
		 * each request alone so that only the guilty one fails. */
		mu_warn("jobs group of %zu failed (%s); retrying one by one", n, err.msg);
		for (size_t i = 0; i < n; i++)
			store_job_submit_group(c, &reqs[i], 1);
		return 0;
	}
	if (ret < 0) {
		for (size_t i = 0; i < n; i++) {
			reqs[i]->rc = ret;
			reqs[i]->err = err;
			reqs[i]->replayed = false;
		}
	}
	return ret;
}

int store_job_check(PGconn *c, struct mu_arena *a, const char *scope, struct store_job *j,
		    int64_t *tenant_id, int64_t *class_id, struct store_job_depstate **states,
		    struct admit_problem *pb, struct mu_error *err)
{
	struct group_ctx g;
	struct store_job_submit s = { .jobs = j, .n = 1, .scope = scope, .arena = a };
	struct store_job_submit *reqs[1] = { &s };
	struct mu_buf ids = MU_BUF_INIT;
	PGresult *r = NULL;
	const char *p[1];
	int ret;

	memset(&g, 0, sizeof(g));
	mu_arena_init(&g.a, 0);
	*states = mu_arena_alloc(a, sizeof(**states) * (j->ndeps + 1));
	/* The same reads and checks as a submit's (one REPEATABLE READ view). */
	ret = store_db_exec_simple(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
	if (ret < 0)
		goto out;
	ret = load_refs(c, &g, reqs, 1, err);
	if (ret < 0)
		goto out_rollback;
	ret = validate_job(&g, &s, 0, tenant_id, class_id);
	if (ret < 0) {
		*err = s.err;
		if (pb)
			*pb = s.problem;
		goto out_rollback;
	}
	/* validate_job points these into the group's arena, released below */
	j->tenant_path = mu_arena_strdup(a, j->tenant_path);
	j->priority_class = mu_arena_strdup(a, j->priority_class);
	if (j->ndeps) {
		store__int_array(&ids, j->dep_ids, j->ndeps);
		p[0] = ids.p;
		ret = store_db_exec(c, "SELECT id, state, coalesce(exit_code, -1) FROM jobs WHERE id = ANY($1::bigint[])",
				    1, p, &r, err);
		if (ret < 0)
			goto out_rollback;
		for (size_t d = 0; d < j->ndeps; d++) {
			struct store_job_depstate *st = &(*states)[d];

			*st = (struct store_job_depstate){ j->dep_ids[d], "", -1 };
			for (int i = 0; i < store_db_nrows(r); i++)
				if (store_db_get_int64(r, i, 0) == j->dep_ids[d]) {
					st->state = mu_arena_strdup(a, store_db_get(r, i, 1));
					st->exit_code = (int)store_db_get_int64(r, i, 2);
				}
		}
	}
	ret = store_db_exec_simple(c, "COMMIT", err);
	goto out;
out_rollback:
	store_db_rollback(c);
out:
	store_db_clear(r);
	mu_buf_release(&ids);
	mu_free(g.dep_ids);
	mu_arena_release(&g.a);
	mu_free(g.tenants);
	return ret;
}
