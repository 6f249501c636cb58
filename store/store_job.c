/* store_job.c - see store_job.h. */
#include "store_job.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "log.h"
#include "store_job_int.h"

static const char *cdup(struct mu_arena *a, const PGresult *r, int row, int col)
{
	return mu_arena_strdup(a, store_db_get(r, row, col));
}

static const char *cdup_null(struct mu_arena *a, const PGresult *r, int row, int col)
{
	return store_db_is_null(r, row, col) ? NULL : cdup(a, r, row, col);
}

void store__job_row(struct mu_arena *a, const PGresult *r, int row, int b, struct store_job *j)
{
	memset(j, 0, sizeof(*j));
	j->id = store_db_get_int64(r, row, b + 0);
	j->state = cdup(a, r, row, b + 1);
	j->tenant = cdup(a, r, row, b + 2);
	j->user = cdup(a, r, row, b + 3);
	j->name = cdup(a, r, row, b + 4);
	j->priority_class = cdup(a, r, row, b + 5);
	j->nodes = store_db_get_int64(r, row, b + 6);
	j->min_nodes = store_db_get_int64(r, row, b + 7);
	j->gpus_per_node = store_db_get_int64(r, row, b + 8);
	j->gpu_model = cdup(a, r, row, b + 9);
	j->procs_per_node = store_db_get_int64(r, row, b + 10);
	j->topo_required = cdup(a, r, row, b + 11);
	j->topo_preferred = cdup(a, r, row, b + 12);
	j->time_limit = store_db_get_int64(r, row, b + 13);
	j->command = cdup(a, r, row, b + 14);
	j->env = cdup(a, r, row, b + 15);
	j->labels = cdup(a, r, row, b + 16);
	j->dependencies = cdup(a, r, row, b + 17);
	j->workdir = cdup(a, r, row, b + 18);
	j->max_retries = store_db_get_int64(r, row, b + 19);
	j->retries = store_db_get_int64(r, row, b + 20);
	j->pending_reason = cdup(a, r, row, b + 21);
	j->pending_message = cdup(a, r, row, b + 22);
	j->planned_start = cdup_null(a, r, row, b + 23);
	j->has_exit_code = !store_db_is_null(r, row, b + 24);
	j->exit_code = store_db_get_int64(r, row, b + 24);
	j->end_reason = cdup(a, r, row, b + 25);
	j->created_at = cdup(a, r, row, b + 26);
	j->started_at = cdup_null(a, r, row, b + 27);
	j->ended_at = cdup_null(a, r, row, b + 28);
	j->tenant_path = cdup(a, r, row, b + 29);
	j->mem_per_node = store_db_get_int64(r, row, b + 30);
	j->cpus_per_node = store_db_get_int64(r, row, b + 31);
	j->launcher = cdup(a, r, row, b + 32);
	j->on_shrink = cdup(a, r, row, b + 33);
	j->signal_name = cdup(a, r, row, b + 34);
	j->signal_before = store_db_get_int64(r, row, b + 35);
	j->signal_batch_only = store_db_get_bool(r, row, b + 36);
	j->stdout_pattern = cdup(a, r, row, b + 37);
	j->stderr_pattern = cdup(a, r, row, b + 38);
	j->held = store_db_get_bool(r, row, b + 39);
	j->begin_at = cdup_null(a, r, row, b + 40);
	j->etag = store_db_get_int64(r, row, b + 41);
	j->array_job_id = store_db_get_int64(r, row, b + 42);
	j->array_task_id = store_db_get_int64(r, row, b + 43);
	j->array_spec = cdup_null(a, r, row, b + 44);
	j->array_throttle = store_db_get_int64(r, row, b + 45);
}

/* A PostgreSQL array literal of text elements. */
static void add_pg_text(struct mu_buf *b, const char *s)
{
	mu_buf_addc(b, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			mu_buf_addc(b, '\\');
		mu_buf_addc(b, *s);
	}
	mu_buf_addc(b, '"');
}

/* A PostgreSQL array literal of texts / of integers ("{...}"), for $N::text[]
 * and $N::bigint[] parameters. */
static void pg_text_array(struct mu_buf *b, const char *const *v, size_t n)
{
	mu_buf_addc(b, '{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			mu_buf_addc(b, ',');
		add_pg_text(b, v[i]);
	}
	mu_buf_addc(b, '}');
}

static void pg_int_array(struct mu_buf *b, const int64_t *v, size_t n)
{
	mu_buf_addc(b, '{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			mu_buf_addc(b, ',');
		mu_buf_add_int(b, v[i]);
	}
	mu_buf_addc(b, '}');
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- submit ---------------------------------------------------------------- */

struct tenant_info {
	const char *name;
	int64_t id;
	const char *path;
	bool has_max_pending;
	int64_t max_pending;
	int64_t max_time;  /* 0 = none */
	int64_t pending;   /* counted now + accepted in this group */
	int64_t accepting; /* check_quota: this request's jobs */
	bool found;
};

struct class_info {
	const char *name;
	int64_t id;
	int64_t default_time, max_time; /* max 0 = none */
	bool is_default;
};

struct group_ctx {
	struct mu_arena a;
	struct tenant_info *tenants;
	size_t ntenants, tcap;
	struct class_info *classes;
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
		if (!strcmp(g->tenants[i].name, name))
			return &g->tenants[i];
	return NULL;
}

static const struct class_info *class_find(const struct group_ctx *g, const char *name)
{
	for (size_t i = 0; i < g->nclasses; i++)
		if (name ? !strcmp(g->classes[i].name, name) : g->classes[i].is_default)
			return &g->classes[i];
	return NULL;
}

static bool scope_sees(const char *scope, const char *path)
{
	size_t n;

	if (!scope)
		return true;
	n = strlen(scope);
	return !strncmp(scope, path, n) && (path[n] == '\0' || path[n] == '/');
}

static int fail_req(struct store_job_submit *s, int code, size_t job, const char *field,
		    const char *msg)
{
	mu_error_set(&s->err, code, "", "%s", msg);
	if (s->batch)
		snprintf(s->err.field, sizeof(s->err.field), "jobs.%zu.%s", job, field);
	else
		snprintf(s->err.field, sizeof(s->err.field), "%s", field);
	if (!field[0] && s->err.field[0] && s->batch)
		snprintf(s->err.field, sizeof(s->err.field), "jobs.%zu", job);
	s->rc = code;
	return code;
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
			g->tenants[g->ntenants++].name = mu_arena_strdup(&g->a, j->tenant);
			if (names->len > 1)
				mu_buf_addc(names, ',');
			add_pg_text(names, j->tenant);
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
	g->nclasses = 0;
	for (int i = 0; i < store_db_nrows(r); i++) {
		if (store_db_get(r, i, 0)[0] == 'c') {
			struct class_info *k = &g->classes[g->nclasses++];

			k->name = cdup(&g->a, r, i, 1);
			k->id = store_db_get_int64(r, i, 2);
			if (!g->levels)
				g->levels = cdup(&g->a, r, i, 3);
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
			t->path = cdup(&g->a, r, i, 3);
			t->has_max_pending = !store_db_is_null(r, i, 4);
			t->max_pending = store_db_get_int64(r, i, 4);
			t->max_time = store_db_get_int64(r, i, 5);
			t->pending = store_db_get_int64(r, i, 6);
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
			g->dep_paths[g->ndeps] = cdup(&g->a, r, i, 1);
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

/* A topology level is one of settings.topology_levels (a JSON array of
 * names made of [a-z0-9_-], so looking for the quoted name is exact). */
static bool level_known(const struct group_ctx *g, const char *level)
{
	char quoted[64];

	if (!level || !*level)
		return true;
	snprintf(quoted, sizeof(quoted), "\"%s\"", level);
	return g->levels && strstr(g->levels, quoted);
}

/* command + env + workdir within settings.job_spec_max_bytes (as stored
 * JSON): every node's desired state must stay far below what its agent
 * accepts (docs/agent.md "The node channel"). Names the largest part. */
static int spec_check(const struct group_ctx *g, struct store_job_submit *s, size_t k)
{
	const struct store_job *j = &s->jobs[k];
	size_t lc = j->command ? strlen(j->command) : 0, le = j->env ? strlen(j->env) : 0;
	size_t lw = j->workdir ? strlen(j->workdir) : 0;
	int64_t max = g->spec_max > 0 ? g->spec_max : STORE_JOB_SPEC_MAX;
	char msg[192];

	if ((int64_t)(lc + le + lw) <= max)
		return 0;
	snprintf(msg, sizeof(msg),
		 "command + env + workdir take %zu bytes; at most %lld (settings.job_spec_max_bytes)",
		 lc + le + lw, (long long)max);
	return fail_req(s, MU_ERANGE, k, le >= lc && le >= lw ? "env" : lc >= lw ? "command" : "workdir",
			msg);
}

/* Checks job k of request s against the database's view and resolves its
 * tenant and class ids; fails the request (s->rc) otherwise. */
static int validate_job(struct group_ctx *g, struct store_job_submit *s, size_t k,
			int64_t *tenant_id, int64_t *class_id)
{
	struct store_job *j = &s->jobs[k];
	struct tenant_info *t = tenant_find(g, j->tenant);
	const struct class_info *pc = class_find(g, j->priority_class);
	int64_t cap;

	if (!t || !t->found || !scope_sees(s->scope, t->path))
		return fail_req(s, MU_ENOTFOUND, k, "tenant", "no such tenant");
	if (spec_check(g, s, k) < 0)
		return s->rc;
	if (!level_known(g, j->topo_required))
		return fail_req(s, MU_EINVAL, k, "topology.required",
				"not a topology level of this cluster (settings.topology_levels)");
	if (!level_known(g, j->topo_preferred))
		return fail_req(s, MU_EINVAL, k, "topology.preferred",
				"not a topology level of this cluster (settings.topology_levels)");
	if (!pc)
		return fail_req(s, MU_ENOTFOUND, k, "priority_class",
				j->priority_class ? "no such priority class" : "no default priority class");
	cap = pc->max_time;
	if (t->max_time && (!cap || t->max_time < cap))
		cap = t->max_time;
	if (!j->time_limit) {
		j->time_limit = pc->default_time;
		if (cap && j->time_limit > cap)
			j->time_limit = cap;
	} else if (cap && j->time_limit > cap) {
		char msg[128];

		snprintf(msg, sizeof(msg), "over the maximum of %lld seconds", (long long)cap);
		return fail_req(s, MU_ERANGE, k, "time_limit", msg);
	}
	for (size_t d = 0; d < j->ndeps; d++) {
		const char *path = dep_path(g, j->dep_ids[d]);

		if (!path || !scope_sees(s->scope, path)) {
			char field[64];

			snprintf(field, sizeof(field), "dependencies.%zu.job_id", d);
			return fail_req(s, MU_ENOTFOUND, k, field, "no such job");
		}
	}
	j->tenant_path = t->path;
	j->priority_class = pc->name;
	*tenant_id = t->id;
	*class_id = pc->id;
	return 0;
}

/* The quota on pending jobs for a request whose jobs all passed
 * validate_job, counting what this group already accepted; then counts
 * the request's jobs as accepted. */
static int check_quota(struct group_ctx *g, struct store_job_submit *s)
{
	int ret = 0;

	for (size_t k = 0; k < s->n; k++)
		tenant_find(g, s->jobs[k].tenant)->accepting++;
	for (size_t k = 0; k < s->n && !ret; k++) {
		struct tenant_info *t = tenant_find(g, s->jobs[k].tenant);

		if (t->has_max_pending && t->pending + t->accepting > t->max_pending) {
			char msg[160];

			snprintf(msg, sizeof(msg), "tenant %s may have at most %lld pending jobs",
				 t->name, (long long)t->max_pending);
			mu_error_set(&s->err, MU_EQUOTA, "", "%s", msg);
			s->rc = ret = MU_EQUOTA;
		}
	}
	for (size_t k = 0; k < s->n; k++) {
		struct tenant_info *t = tenant_find(g, s->jobs[k].tenant);

		if (!ret)
			t->pending += t->accepting;
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

		if (!reqs[i]->idem_key || reqs[i]->n != 1)
			continue;
		t = tenant_find(g, reqs[i]->jobs[0].tenant);
		if (!t || !t->found)
			continue;
		if (m++) {
			mu_buf_addc(&ids, ',');
			mu_buf_addc(&keys, ',');
		}
		mu_buf_add_int(&ids, t->id);
		add_pg_text(&keys, reqs[i]->idem_key);
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
	copy_str(b, s->idem_key);
	mu_buf_addc(b, '\t');
	copy_str(b, s->idem_key ? s->request_sha256 : NULL);
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
	/* an array's tasks are the request's jobs, in order: the first one's
	 * id names the array */
	if (j->array_spec)
		j->array_job_id = last && last->array_spec ? last->array_job_id : id;
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
static int stream_rows(PGconn *c, struct group_ctx *g, struct store_job_submit *s, const PGresult *ids,
		       int64_t *tids, int64_t *cids, struct mu_buf *rows, bool *copying,
		       struct mu_error *err)
{
	static const char copy_jobs_sql[] = COPY_JOBS_SQL;
	const char *created_at = store_db_get(ids, 0, 1);
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
			fill_job(s, j, k ? j - 1 : NULL, store_db_get_int64(ids, (int)k, 0), created_at,
				 store_db_get_int64(ids, 0, 2));
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
	/* the transaction's now(), once: every row's created_at */
	static const char ids_sql[] =
		"SELECT nextval('jobs_id_seq'), CASE WHEN g = 1 THEN " TS("now()") " END,"
		" (extract(epoch FROM now()) * 1000000)::bigint"
		" FROM generate_series(1, $1::int) g";
	static const char copy_jobs_sql[] = COPY_JOBS_SQL;
	static const char copy_events_sql[] = "COPY events (kind, tenant_id, job_id) FROM STDIN";
	/* One wake-up for the scheduler per transaction, naming the highest id:
	 * it reloads the queue anyway, and 10,000 distinct payloads cost
	 * PostgreSQL ~8 ms a batch for nothing. */
	static const char notify_sql[] = "SELECT pg_notify('muster_sched', 'submit:' || $1::text)";
	struct mu_buf rows = MU_BUF_INIT;
	int64_t last_id = 0;
	double t0 = mono_ms(), t1 = 0, t2 = 0, t3 = 0;
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
	t1 = mono_ms();
	mu_buf_reserve(&rows, COPY_CHUNK_JOBS * 300);
	for (size_t i = 0; i < n && !ret; i++) {
		struct store_job_submit *s = reqs[i];

		if (s->rc != 0 || s->replayed)
			continue;
		if (s->decode && !s->decoded) {
			ret = stream_rows(c, g, s, r, tids[i], cids[i], &rows, &copying, err);
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

			fill_job(s, j, k ? j - 1 : NULL, store_db_get_int64(r, (int)at, 0),
				 store_db_get(r, 0, 1), store_db_get_int64(r, 0, 2));
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
	t2 = mono_ms();
	if (copying)
		ret = copy_end(c, ret, NULL, 0, err);
	if (ret < 0)
		goto out;
	t3 = mono_ms();

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
		 total, t1 - t0, t2 - t1, t3 - t2, mono_ms() - t3);
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

		if (!s->idem_key || s->n != 1 || s->rc != 1)
			continue;
		/* rc 1 marks "same key as an earlier request of this group" */
		s->rc = 0;
		for (size_t e = 0; e < i; e++) {
			struct store_job_submit *o = reqs[e];

			if (!o->idem_key || o->n != 1 || o->rc != 0 ||
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
	double t_begin = mono_ms(), t_refs = 0, t_commit = 0;
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
		tids[i] = mu_calloc(reqs[i]->n + 1, sizeof(**tids));
		cids[i] = mu_calloc(reqs[i]->n + 1, sizeof(**cids));
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
	t_refs = mono_ms();
	for (size_t i = 0; i < n; i++) {
		struct store_job_submit *s = reqs[i];

		if (s->rc < 0)
			continue;
		if (stream) {
			total += s->n;
			continue;
		}
		if (s->idem_key && s->n == 1) {
			struct tenant_info *t = tenant_find(&g, s->jobs[0].tenant);
			bool earlier = false;

			if (t && t->found && scope_sees(s->scope, t->path) &&
			    find_replay(&g, s, t->id))
				continue;
			for (size_t e = 0; e < i; e++)
				earlier |= reqs[e]->idem_key && reqs[e]->n == 1 && reqs[e]->rc == 0 &&
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
	t_commit = mono_ms();
	ret = store_db_exec_simple(c, "COMMIT", err);
	if (ret < 0)
		goto out;
	mu_debug("jobs group jobs=%zu refs_ms=%.1f commit_ms=%.1f", total, t_refs - t_begin,
		 mono_ms() - t_commit);
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

/* ---- list / get / cancel ------------------------------------------------------ */

int store_job_list(PGconn *c, struct mu_arena *a, const char *scope,
		   const struct store_job_filter *f, struct store_job_page *out,
		   struct mu_error *err)
{
	static const char sql[] =
		"SELECT " JOB_COLS JOB_FROM
		" WHERE j.id > $1::bigint AND " IN_SCOPE("$2")
		"   AND ($3::text[] IS NULL OR j.state = ANY($3::text[]))"
		"   AND ($4::text IS NULL OR EXISTS (SELECT 1 FROM tenants f WHERE f.name = $4"
		"        AND (t.path = f.path OR starts_with(t.path, f.path || '/'))))"
		"   AND ($5::text IS NULL OR j.user_name = $5)"
		"   AND ($6::jsonb IS NULL OR j.labels @> $6::jsonb)"
		"   AND ($8::bigint IS NULL OR j.array_job_id = $8::bigint)"
		"   AND ($9::int IS NULL OR j.array_task_id = $9::int)"
		" ORDER BY j.id LIMIT $7::int";
	char after[24], lim[16], arr[24], task[16];
	struct mu_buf states = MU_BUF_INIT;
	const char *p[9];
	PGresult *r = NULL;
	int ret, rows;

	memset(out, 0, sizeof(*out));
	snprintf(after, sizeof(after), "%lld", (long long)f->after_id);
	snprintf(lim, sizeof(lim), "%d", f->limit + 1);
	if (f->nstates)
		pg_text_array(&states, f->states, f->nstates);
	p[0] = after;
	p[1] = scope;
	p[2] = f->nstates ? states.p : NULL;
	p[3] = f->tenant;
	p[4] = f->user;
	p[5] = f->labels;
	p[6] = lim;
	snprintf(arr, sizeof(arr), "%lld", (long long)f->array_job_id);
	p[7] = f->array_job_id ? arr : NULL;
	snprintf(task, sizeof(task), "%lld", (long long)f->array_task_id);
	p[8] = f->has_array_task ? task : NULL;
	ret = store_db_exec(c, sql, 9, p, &r, err);
	if (ret < 0)
		goto out;
	rows = store_db_nrows(r);
	out->n = (size_t)(rows > f->limit ? f->limit : rows);
	out->items = mu_arena_alloc(a, sizeof(*out->items) * (out->n + 1));
	for (size_t i = 0; i < out->n; i++)
		store__job_row(a, r, (int)i, 0, &out->items[i]);
	if (rows > f->limit)
		out->next_after = out->items[out->n - 1].id;
out:
	store_db_clear(r);
	mu_buf_release(&states);
	return ret;
}

int store_job_get(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
		  struct store_job *out, struct mu_error *err)
{
	static const char sql[] =
		"SELECT " JOB_COLS ","
		" (SELECT coalesce(json_agg(json_build_object("
		"     'id', r.id, 'attempt', r.attempt, 'state', r.state,"
		"     'nodes', (SELECT coalesce(json_agg(json_build_object('node', x.name,"
		"                 'rank', x.node_rank, 'gpus', x.gpus) ORDER BY x.node_rank), '[]'::json)"
		"               FROM (SELECT n.name, a.node_rank, coalesce(json_agg(a.gpu_index"
		"                       ORDER BY a.gpu_index) FILTER (WHERE a.gpu_index >= 0), '[]'::json) AS gpus"
		"                     FROM run_allocations a JOIN nodes n ON n.id = a.node_id"
		"                    WHERE a.run_id = r.id GROUP BY n.name, a.node_rank) x),"
		"     'started_at', " TS("r.started_at") ", 'ended_at', " TS("r.ended_at") ","
		"     'exit_code', r.exit_code, 'stop_reason', r.stop_reason) ORDER BY r.id), '[]'::json)::text"
		"    FROM runs r WHERE r.job_id = j.id),"
		" (SELECT coalesce(json_agg(json_build_object('id', e.id, 'at', " TS("e.at") ","
		"     'kind', e.kind, 'reason', e.reason, 'data', e.data) ORDER BY e.id), '[]'::json)::text"
		"    FROM events e WHERE e.job_id = j.id)"
		JOB_FROM " WHERE j.id = $1::bigint AND " IN_SCOPE("$2");
	char idb[24];
	const char *p[2] = { idb, scope };
	PGresult *r = NULL;
	int ret;

	snprintf(idb, sizeof(idb), "%lld", (long long)id);
	ret = store_db_exec(c, sql, 2, p, &r, err);
	if (ret < 0)
		goto out;
	if (store_db_nrows(r) != 1) {
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no such job");
		goto out;
	}
	store__job_row(a, r, 0, 0, out);
	out->runs = cdup(a, r, 0, JOB_NCOLS);
	out->events = cdup(a, r, 0, JOB_NCOLS + 1);
out:
	store_db_clear(r);
	return ret;
}

struct cancel_arg {
	struct mu_arena *a;
	const char *scope;
	int64_t id;
	const char *who;
	struct store_job *out;
};

static int cancel_tx(PGconn *c, void *arg, struct mu_error *err)
{
	static const char lock_sql[] =
		"SELECT j.state, t.path FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
		" WHERE j.id = $1::bigint AND " IN_SCOPE("$2") " FOR UPDATE OF j";
	static const char pending_sql[] =
		"WITH u AS (UPDATE jobs SET state = 'CANCELLED', ended_at = now(), updated_at = now(),"
		"   end_reason = 'cancelled', pending_reason = '', pending_message = '', planned_start = NULL"
		"   WHERE id = $1::bigint RETURNING id, tenant_id)"
		" INSERT INTO events (kind, tenant_id, job_id, reason, data)"
		" SELECT 'job.cancelled', tenant_id, id, 'cancel', jsonb_build_object('by', $2::text) FROM u";
	static const char running_sql[] =
		"WITH u AS (UPDATE runs SET state = CASE WHEN state IN ('STARTING', 'RUNNING')"
		"   THEN 'STOPPING' ELSE state END,"
		"   stop_reason = CASE WHEN stop_reason IN ('', 'requeue') THEN 'cancel' ELSE stop_reason END,"
		"   stop_requested_at = coalesce(stop_requested_at, now())"
		"   WHERE job_id = $1::bigint AND live RETURNING id)"
		" INSERT INTO events (kind, tenant_id, job_id, run_id, reason, data)"
		" SELECT 'job.cancel_requested', j.tenant_id, j.id, (SELECT min(id) FROM u), 'cancel',"
		"        jsonb_build_object('by', $2::text) FROM jobs j WHERE j.id = $1::bigint";
	static const char notify_sql[] = "SELECT pg_notify('muster_sched', 'cancel:' || $1::text)";
	static const char get_sql[] = "SELECT " JOB_COLS JOB_FROM " WHERE j.id = $1::bigint";
	struct cancel_arg *ca = arg;
	char idb[24];
	const char *p[2] = { idb, ca->scope };
	PGresult *r = NULL;
	const char *state;
	int ret;

	snprintf(idb, sizeof(idb), "%lld", (long long)ca->id);
	ret = store_db_exec(c, lock_sql, 2, p, &r, err);
	if (ret < 0)
		goto out;
	if (store_db_nrows(r) != 1) {
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no such job");
		goto out;
	}
	state = store_db_get(r, 0, 0);
	p[1] = ca->who ? ca->who : "";
	if (!strcmp(state, "PENDING")) {
		ret = store_db_exec(c, pending_sql, 2, p, NULL, err);
	} else if (!strcmp(state, "STARTING") || !strcmp(state, "RUNNING")) {
		ret = store_db_exec(c, running_sql, 2, p, NULL, err);
	} else {
		ret = mu_error_set(err, MU_ESTATE, "", "the job already ended (%s)", state);
		goto out;
	}
	if (ret < 0)
		goto out;
	ret = store_db_exec(c, notify_sql, 1, p, NULL, err);
	if (ret < 0)
		goto out;
	store_db_clear(r);
	r = NULL;
	ret = store_db_exec(c, get_sql, 1, p, &r, err);
	if (ret < 0)
		goto out;
	store__job_row(ca->a, r, 0, 0, ca->out);
out:
	store_db_clear(r);
	return ret;
}

struct id_at {
	int64_t id;
	size_t at;
};

static int cmp_id_at(const void *a, const void *b)
{
	int64_t x = ((const struct id_at *)a)->id, y = ((const struct id_at *)b)->id;

	return (x > y) - (x < y);
}

int store__job_cancel_pending_in_tx(PGconn *c, const char *scope, const int64_t *ids, size_t n,
				    bool keep_array_heads, const char *who, bool *done,
				    struct mu_error *err)
{
	/* What cancel_tx does to a PENDING job, for all of them in three statements. */
	static const char sql[] =
		"WITH sel AS (SELECT j.id FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
		"   WHERE j.id = ANY($1::bigint[]) AND " IN_SCOPE("$2") " AND j.state = 'PENDING'"
		"     AND NOT ($3::boolean AND j.array_job_id IS NOT DISTINCT FROM j.id)"
		"   ORDER BY j.id FOR UPDATE OF j),"
		" u AS (UPDATE jobs SET state = 'CANCELLED', ended_at = now(), updated_at = now(),"
		"   end_reason = 'cancelled', pending_reason = '', pending_message = '', planned_start = NULL"
		"   FROM sel WHERE jobs.id = sel.id RETURNING jobs.id, jobs.tenant_id),"
		" ev AS (INSERT INTO events (kind, tenant_id, job_id, reason, data)"
		"   SELECT 'job.cancelled', tenant_id, id, 'cancel', jsonb_build_object('by', $4::text) FROM u)"
		" SELECT id, pg_notify('muster_sched', 'cancel:' || id::text) FROM u";
	struct mu_buf b = MU_BUF_INIT;
	const char *p[4] = { NULL, scope, keep_array_heads ? "true" : "false", who ? who : "" };
	PGresult *r = NULL;
	int ret;

	pg_int_array(&b, ids, n);
	mu_buf_addc(&b, '\0');
	p[0] = b.p;
	ret = store_db_exec(c, sql, 4, p, &r, err);
	if (!ret && store_db_nrows(r) > 0) {
		struct id_at *v = mu_malloc(sizeof(*v) * n);

		for (size_t k = 0; k < n; k++)
			v[k] = (struct id_at){ ids[k], k };
		qsort(v, n, sizeof(*v), cmp_id_at);
		for (int i = 0; i < store_db_nrows(r); i++) {
			struct id_at key = { store_db_get_int64(r, i, 0), 0 };
			const struct id_at *hit = bsearch(&key, v, n, sizeof(*v), cmp_id_at);

			if (hit)
				done[hit->at] = true;
		}
		mu_free(v);
	}
	store_db_clear(r);
	mu_buf_release(&b);
	return ret;
}

int store__job_cancel_in_tx(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
			    const char *who, struct store_job *out, struct mu_error *err)
{
	struct cancel_arg ca = { a, scope, id, who, out };

	return cancel_tx(c, &ca, err);
}

int store_job_cancel(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
		     const char *who, struct store_job *out, struct mu_error *err)
{
	struct cancel_arg ca = { a, scope, id, who, out };

	return store_db_tx(c, NULL, 0, cancel_tx, &ca, err);
}

int store_job_check(PGconn *c, struct mu_arena *a, const char *scope, struct store_job *j,
		    int64_t *tenant_id, int64_t *class_id, struct store_job_depstate **states,
		    struct mu_error *err)
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
		goto out_rollback;
	}
	/* validate_job points these into the group's arena, released below */
	j->tenant_path = mu_arena_strdup(a, j->tenant_path);
	j->priority_class = mu_arena_strdup(a, j->priority_class);
	if (j->ndeps) {
		pg_int_array(&ids, j->dep_ids, j->ndeps);
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

/* ---- history (sacct) ------------------------------------------------------------ */

int store_job_history(PGconn *c, struct mu_arena *a, const char *scope,
		      const struct store_job_history_filter *f, struct store_job_history_page *out,
		      struct mu_error *err)
{
	/* the range and the keyset on (ended_at, id) walk jobs_ended_at_id in order */
#define EPOCH_US(p) "('epoch'::timestamptz + (" p ")::bigint * interval '1 microsecond')"
	static const char sql[] =
		"SELECT " JOB_COLS ", (extract(epoch FROM j.ended_at) * 1000000)::bigint" JOB_FROM
		" WHERE j.ended_at IS NOT NULL"
		"   AND j.ended_at >= " EPOCH_US("$1") " AND j.ended_at < " EPOCH_US("$2")
		"   AND (j.ended_at, j.id) > (" EPOCH_US("$3") ", $4::bigint)"
		"   AND " IN_SCOPE("$5")
		"   AND ($6::text[] IS NULL OR j.state = ANY($6::text[]))"
		"   AND ($7::text IS NULL OR EXISTS (SELECT 1 FROM tenants f WHERE f.name = $7"
		"        AND (t.path = f.path OR starts_with(t.path, f.path || '/'))))"
		"   AND ($8::text IS NULL OR j.user_name = $8)"
		"   AND ($9::bigint[] IS NULL OR j.id = ANY($9::bigint[]))"
		" ORDER BY j.ended_at, j.id LIMIT $10::int";
#undef EPOCH_US
	char start[24], end[24], aus[24], aid[24], lim[16];
	struct mu_buf states = MU_BUF_INIT, ids = MU_BUF_INIT;
	const char *p[10];
	PGresult *r = NULL;
	int ret, rows;

	memset(out, 0, sizeof(*out));
	snprintf(start, sizeof(start), "%lld", (long long)(f->start_us > 0 ? f->start_us : -62135596800000000LL));
	snprintf(end, sizeof(end), "%lld", (long long)(f->end_us > 0 ? f->end_us : 253402300799000000LL));
	snprintf(aus, sizeof(aus), "%lld", (long long)(f->after_us ? f->after_us : -62135596800000000LL));
	snprintf(aid, sizeof(aid), "%lld", (long long)f->after_id);
	snprintf(lim, sizeof(lim), "%d", f->limit + 1);
	if (f->nstates)
		pg_text_array(&states, f->states, f->nstates);
	if (f->nids)
		pg_int_array(&ids, f->ids, f->nids);
	p[0] = start;
	p[1] = end;
	p[2] = aus;
	p[3] = aid;
	p[4] = scope;
	p[5] = f->nstates ? states.p : NULL;
	p[6] = f->tenant;
	p[7] = f->user;
	p[8] = f->nids ? ids.p : NULL;
	p[9] = lim;
	ret = store_db_exec(c, sql, 10, p, &r, err);
	if (ret < 0)
		goto out;
	rows = store_db_nrows(r);
	out->n = (size_t)(rows > f->limit ? f->limit : rows);
	out->items = mu_arena_alloc(a, sizeof(*out->items) * (out->n + 1));
	for (size_t i = 0; i < out->n; i++)
		store__job_row(a, r, (int)i, 0, &out->items[i]);
	if (rows > f->limit) {
		out->more = true;
		out->next_us = store_db_get_int64(r, (int)out->n - 1, JOB_NCOLS);
		out->next_id = out->items[out->n - 1].id;
	}
out:
	store_db_clear(r);
	mu_buf_release(&states);
	mu_buf_release(&ids);
	return ret;
}
