/* store_sched_report.c - queries behind the scheduler's REST endpoints.
 * See store_sched_report.h. */
#include "store_sched_report.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

int store_sched_status_get(PGconn *c, struct mu_arena *a, struct store_sched_status *o, struct mu_error *err)
{
	PGresult *r = NULL;
	int ret;

	memset(o, 0, sizeof(*o));
	ret = store_db_exec(c,
			    "SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory'"
			    "   AND k.granted AND k.classid = 1836413812::oid AND k.objid = 1701969952::oid"
			    "   AND k.objsubid = 1 AND k.pid = l.backend_pid) THEN l.holder END,"
			    " l.epoch, " TS("l.renewed_at + make_interval(secs => coalesce((SELECT"
			    "   (value #>> '{}')::numeric::int FROM settings WHERE key = 'lease_timeout'), 3))") ","
			    " " TS("l.last_cycle_at") ", l.last_cycle_ms, l.last_load_ms, l.last_commit_ms,"
			    " l.cycles, l.last_pending, l.last_running, l.last_started, l.last_preempted,"
			    " l.last_ended FROM scheduler_lease l WHERE l.id = 1",
			    0, NULL, &r, err);
	if (ret)
		goto out;
	if (store_db_nrows(r) != 1) {
		ret = mu_error_set(err, MU_EUNAVAIL, "", "scheduler tables missing (migration 020)");
		goto out;
	}
	o->leader = store__dup_null(a, r, 0, 0);
	o->epoch = store_db_get_int64(r, 0, 1);
	o->lease_expires_at = store__dup_null(a, r, 0, 2);
	o->last_cycle_at = store__dup_null(a, r, 0, 3);
	o->has_cycle = o->last_cycle_at != NULL;
	o->last_cycle_ms = strtod(store_db_get(r, 0, 4), NULL);
	o->last_load_ms = strtod(store_db_get(r, 0, 5), NULL);
	o->last_commit_ms = strtod(store_db_get(r, 0, 6), NULL);
	o->cycles = store_db_get_int64(r, 0, 7);
	o->pending = (int)store_db_get_int64(r, 0, 8);
	o->running = (int)store_db_get_int64(r, 0, 9);
	o->started = (int)store_db_get_int64(r, 0, 10);
	o->preempted = (int)store_db_get_int64(r, 0, 11);
	o->ended = (int)store_db_get_int64(r, 0, 12);
out:
	store_db_clear(r);
	return ret;
}

static int check_ts(PGconn *c, const char *v, const char *field, struct mu_error *err)
{
	const char *p[1] = { v };
	PGresult *r;

	if (!v)
		return 0;
	r = PQexecParams(c, "SELECT $1::timestamptz", 1, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
		int code = st && st[0] == '2' && st[1] == '2' ? MU_EINVAL : MU_EUNAVAIL;
		PQclear(r);
		if (code == MU_EINVAL)
			return mu_error_set(err, MU_EINVAL, field, "not an RFC 3339 timestamp");
		return store_db_check(c, NULL, err);
	}
	PQclear(r);
	return 0;
}

int store_sched_usage(PGconn *c, struct mu_arena *a, const char *scope, const char *from, const char *to,
		      bool by_user, char **from_out, char **to_out, struct store_sched_usage_row **rows,
		      size_t *n, struct mu_error *err)
{
	const char *p[4] = { from, to, scope, by_user ? "t" : "f" };
	PGresult *r = NULL;
	int ret;

	*rows = NULL;
	*n = 0;
	if ((ret = check_ts(c, from, "from", err)) || (ret = check_ts(c, to, "to", err)))
		return ret;
	ret = store_db_exec(c,
			    "WITH w AS (SELECT coalesce($1::timestamptz, now() - interval '30 days') AS f,"
			    "   coalesce($2::timestamptz, now()) AS t),"
			    " x AS (SELECT t.name AS tenant, CASE WHEN $4::bool THEN u.user_name END AS usr,"
			    "   sum(round(u.gpus * greatest(0, extract(epoch FROM least(u.ended_at, w.t)"
			    "     - greatest(u.started_at, w.f))))"
			    /* an elastic run that shrank: its lost GPUs' seconds, spread
			     * from the start to the (last) shrink, clipped to the window */
			    "     + CASE WHEN r.shrunk_gpu_seconds = 0 THEN 0"
			    "       WHEN r.shrunk_at <= u.started_at THEN CASE WHEN r.shrunk_at >= w.f"
			    "         AND r.shrunk_at < w.t THEN r.shrunk_gpu_seconds ELSE 0 END"
			    "       ELSE round(r.shrunk_gpu_seconds * greatest(0, extract(epoch FROM"
			    "         least(r.shrunk_at, w.t) - greatest(u.started_at, w.f)))"
			    "         / extract(epoch FROM r.shrunk_at - u.started_at)) END)::bigint AS gs,"
			    "   count(*) AS runs"
			    "   FROM usage_records u JOIN tenants t ON t.id = u.tenant_id"
			    "   JOIN runs r ON r.id = u.run_id, w"
			    "   WHERE u.started_at < w.t AND u.ended_at > w.f AND " IN_SCOPE_OF("t.path", "$3")
			    "   GROUP BY 1, 2)"
			    " SELECT " TS("w.f") ", " TS("w.t") ", x.tenant, x.usr, x.gs, x.runs"
			    " FROM w LEFT JOIN x ON true ORDER BY x.tenant, x.usr",
			    4, p, &r, err);
	if (ret)
		goto out;
	*from_out = store__dup_null(a, r, 0, 0);
	*to_out = store__dup_null(a, r, 0, 1);
	*rows = mu_arena_alloc(a, sizeof(**rows) * (size_t)(store_db_nrows(r) + 1));
	for (int i = 0; i < store_db_nrows(r); i++) {
		if (store_db_is_null(r, i, 2))
			continue; /* the window row of an empty report */
		(*rows)[*n] = (struct store_sched_usage_row){ store__dup_null(a, r, i, 2), store__dup_null(a, r, i, 3),
							      store_db_get_int64(r, i, 4),
							      store_db_get_int64(r, i, 5) };
		(*n)++;
	}
out:
	store_db_clear(r);
	return ret;
}

int store_sched_fairshare_load(PGconn *c, struct mu_arena *a, struct store_sched_fs_tenant **t, size_t *nt,
			       struct store_sched_fs_user **u, size_t *nu, struct mu_error *err)
{
	PGresult *r = NULL;
	int ret = store_db_exec(c,
				"SELECT id, coalesce(parent_id, 0), name, path, shares FROM tenants"
				" ORDER BY parent_id IS NOT NULL, path",
				0, NULL, &r, err);
	if (ret)
		goto out;
	*nt = (size_t)store_db_nrows(r);
	*t = mu_arena_alloc(a, sizeof(**t) * (*nt + 1));
	for (size_t i = 0; i < *nt; i++)
		(*t)[i] = (struct store_sched_fs_tenant){ store_db_get_int64(r, (int)i, 0),
							  store_db_get_int64(r, (int)i, 1),
							  store__dup_null(a, r, (int)i, 2), store__dup_null(a, r, (int)i, 3),
							  (int)store_db_get_int64(r, (int)i, 4) };
	store_db_clear(r);
	r = NULL;
	ret = store_db_exec(c,
			    "WITH hl AS (SELECT coalesce((SELECT (value #>> '{}')::numeric FROM settings"
			    "   WHERE key = 'half_life'), 0) AS h),"
			    " raw AS (SELECT tenant_id, user_name, sum(gpu_seconds) AS s FROM usage_records"
			    "   GROUP BY 1, 2),"
			    " dec AS (SELECT tenant_id, user_name, muster_decay(value,"
			    "   extract(epoch FROM now() - updated_at), hl.h) AS v FROM usage_decayed, hl)"
			    " SELECT coalesce(raw.tenant_id, dec.tenant_id), coalesce(raw.user_name, dec.user_name),"
			    "   coalesce(raw.s, 0), coalesce(dec.v, 0)"
			    " FROM raw FULL JOIN dec ON dec.tenant_id = raw.tenant_id AND dec.user_name = raw.user_name"
			    " ORDER BY 1, 2",
			    0, NULL, &r, err);
	if (ret)
		goto out;
	*nu = (size_t)store_db_nrows(r);
	*u = mu_arena_alloc(a, sizeof(**u) * (*nu + 1));
	for (size_t i = 0; i < *nu; i++)
		(*u)[i] = (struct store_sched_fs_user){ store_db_get_int64(r, (int)i, 0), store__dup_null(a, r, (int)i, 1),
							strtod(store_db_get(r, (int)i, 2), NULL),
							strtod(store_db_get(r, (int)i, 3), NULL) };
out:
	store_db_clear(r);
	return ret;
}

int store_sched_explain_get(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
			    struct store_sched_explain *o, struct mu_error *err)
{
	char ids[32];
	const char *p[2] = { ids, scope };
	PGresult *r = NULL;
	int ret;
	size_t cap;

	memset(o, 0, sizeof(*o));
	snprintf(ids, sizeof(ids), "%" PRId64, id);
	ret = store_db_exec(c,
			    "SELECT j.state, CASE WHEN j.state = 'PENDING' THEN"
			    "   CASE WHEN j.held THEN 'Held' ELSE j.pending_reason END END,"
			    " j.pending_message, " TS("j.planned_start") ", j.gpu_model"
			    " FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
			    " WHERE j.id = $1::bigint AND " IN_SCOPE_OF("t.path", "$2"),
			    2, p, &r, err);
	if (ret)
		goto out;
	if (store_db_nrows(r) != 1) {
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no such job");
		goto out;
	}
	o->job_id = id;
	o->state = store__dup_null(a, r, 0, 0);
	o->reason = store__dup_null(a, r, 0, 1);
	o->message = store__dup_null(a, r, 0, 2);
	o->planned_start = store__dup_null(a, r, 0, 3);
	if (strcmp(o->state, "PENDING") != 0) {
		if (!o->message[0])
			o->message = mu_arena_strdup(a, "the job is not pending");
		goto out;
	}
	store_db_clear(r);
	r = NULL;
	/* What blocks it: unfinished dependencies, then the runs holding GPUs
	 * of its model that end first (their limits bound its start). A job
	 * outside the caller's scope is not named: its GPUs, nodes and end are
	 * the cluster's to see (GET /v1/nodes), its id and tenant are not. */
	ret = store_db_exec(c,
			    "(SELECT 'dependency', CASE WHEN " IN_SCOPE_OF("dt.path", "$2") " THEN d.id END,"
			    "   CASE WHEN " IN_SCOPE_OF("dt.path", "$2") " THEN 'job ' || d.id"
			    "   ELSE 'a job of another tenant' END || ' is ' || d.state"
			    "   || ' (' || (x->>'type') || ')', 0 AS ord"
			    " FROM jobs p, jsonb_array_elements(p.dependencies) x JOIN jobs d"
			    "   ON d.id = (x->>'job_id')::bigint JOIN tenants dt ON dt.id = d.tenant_id"
			    " WHERE p.id = $1::bigint AND d.state IN ('PENDING', 'STARTING', 'RUNNING'))"
			    " UNION ALL"
			    " (SELECT 'job', CASE WHEN " IN_SCOPE_OF("rt.path", "$2") " THEN r.job_id END,"
			    "   'holds ' || r.nodes * r.gpus_per_node || ' GPUs on '"
			    "   || (SELECT string_agg(DISTINCT n.name, ',') FROM run_allocations a JOIN nodes n"
			    "     ON n.id = a.node_id WHERE a.run_id = r.id AND a.live) || ' until at most '"
			    "   || " TS("coalesce(r.started_at, r.created_at) + make_interval(secs => r.time_limit)")
			    "   , 1"
			    " FROM runs r JOIN jobs rj ON rj.id = r.job_id JOIN tenants rt ON rt.id = rj.tenant_id, jobs p"
			    " WHERE p.id = $1::bigint AND r.live AND (p.gpu_model = '' OR"
			    "   EXISTS (SELECT 1 FROM run_allocations a JOIN nodes n ON n.id = a.node_id"
			    "     WHERE a.run_id = r.id AND a.live AND n.gpu_model = p.gpu_model))"
			    "   AND p.pending_reason IN ('Resources', 'Reservation', 'Priority', 'Preempting')"
			    " ORDER BY coalesce(r.started_at, r.created_at) + make_interval(secs => r.time_limit)"
			    " LIMIT 5)"
			    " ORDER BY 4",
			    2, p, &r, err);
	if (ret)
		goto out;
	cap = (size_t)store_db_nrows(r);
	o->blockers = mu_arena_alloc(a, sizeof(*o->blockers) * (cap + 1));
	for (size_t i = 0; i < cap; i++) {
		o->blockers[i].kind = store__dup_null(a, r, (int)i, 0);
		o->blockers[i].job_id = store_db_get_int64(r, (int)i, 1);
		o->blockers[i].message = store__dup_null(a, r, (int)i, 2);
	}
	o->nblockers = cap;
out:
	store_db_clear(r);
	return ret;
}

int store_sched_probe_resolve(PGconn *c, const char *scope, const char *tenant, const char *klass,
			      int64_t *tenant_id, int *class_id, int64_t *time_limit, struct mu_error *err)
{
	const char *p[3] = { tenant, scope, klass };
	PGresult *r = NULL;
	int ret = store_db_exec(c,
				"SELECT (SELECT t.id FROM tenants t WHERE t.name = $1 AND " IN_SCOPE_OF("t.path", "$2")
				"), pc.id, pc.default_time_limit FROM priority_classes pc"
				" WHERE ($3::text IS NULL AND pc.is_default) OR pc.name = $3",
				3, p, &r, err);
	if (ret)
		goto out;
	if (store_db_nrows(r) != 1) {
		ret = mu_error_set(err, MU_EINVAL, "priority_class", klass ? "no such priority class"
									    : "no default priority class");
		goto out;
	}
	if (store_db_is_null(r, 0, 0)) {
		ret = mu_error_set(err, MU_ENOTFOUND, "tenant", "no such tenant");
		goto out;
	}
	*tenant_id = store_db_get_int64(r, 0, 0);
	*class_id = (int)store_db_get_int64(r, 0, 1);
	if (*time_limit <= 0)
		*time_limit = store_db_get_int64(r, 0, 2);
out:
	store_db_clear(r);
	return ret;
}

int store_sched_snap_load_ro(PGconn *c, struct store_sched_snap *snap, struct mu_error *err)
{
	int ret = store_db_exec_simple(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);

	if (ret)
		return ret;
	ret = store_sched_snap_load(c, snap, err);
	PQclear(PQexec(c, ret ? "ROLLBACK" : "COMMIT"));
	return ret;
}
