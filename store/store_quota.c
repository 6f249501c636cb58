#include "store_quota.h"

#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "store_tenant.h"

#define QUOTA_COLS                                                                          \
	"t.name, q.gpu_model, q.guaranteed_gpus, q.max_gpus, q.max_running_jobs, "          \
	"q.max_pending_jobs, q.max_time_limit, " STORE__TS("q.updated_at") ", t.path"
#define QUOTA_FROM " FROM quotas q JOIN tenants t ON t.id = q.tenant_id "

static void quota_row(struct mu_arena *a, const PGresult *r, int row, struct store_quota *q)
{
	q->tenant = store__admin_str(a, r, row, 0);
	q->gpu_model = store__admin_str(a, r, row, 1);
	q->guaranteed_gpus = store__admin_i64(r, row, 2, 0);
	q->max_gpus = store__admin_i64(r, row, 3, -1);
	q->max_running_jobs = store__admin_i64(r, row, 4, -1);
	q->max_pending_jobs = store__admin_i64(r, row, 5, -1);
	q->max_time_limit = store__admin_i64(r, row, 6, -1);
	q->updated_at = store__admin_str(a, r, row, 7);
}

static int quota_rows(struct mu_arena *a, PGresult *r, int limit, struct store_quota_page *out)
{
	int n = store_db_nrows(r);

	if (limit > 0 && n > limit) {
		n = limit;
		/* "<tenant path>|<gpu model>": paths never hold '|'. */
		const char *p = PQgetvalue(r, limit - 1, 8), *m = PQgetvalue(r, limit - 1, 1);
		size_t pl = strlen(p), ml = strlen(m);
		char *cur = mu_arena_alloc(a, pl + ml + 2);
		memcpy(cur, p, pl);
		cur[pl] = '|';
		memcpy(cur + pl + 1, m, ml + 1);
		out->next_cursor = cur;
	}
	out->items = mu_arena_alloc(a, sizeof(*out->items) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		quota_row(a, r, i, &out->items[i]);
	out->n = (size_t)n;
	return 0;
}

int store_quota_get(PGconn *c, struct mu_arena *a, const char *scope, const char *tenant,
		    struct store_quota_page *out, struct mu_error *err)
{
	const char *params[2] = { tenant, scope };
	PGresult *r = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = store_db_exec(c,
			    "SELECT count(*) FROM tenants t WHERE t.name = $1 AND "
			    STORE__IN_SCOPE("t.path", "$2"),
			    2, params, &r, err);
	if (ret < 0)
		return ret;
	if (store_db_get_int64(r, 0, 0) != 1) {
		store_db_clear(r);
		return mu_error_set(err, MU_ENOTFOUND, "", "no tenant \"%.64s\"", tenant);
	}
	store_db_clear(r);
	ret = store_db_exec(c, "SELECT " QUOTA_COLS QUOTA_FROM "WHERE t.name = $1 ORDER BY q.gpu_model",
			    1, params, &r, err);
	if (ret < 0)
		return ret;
	quota_rows(a, r, 0, out);
	store_db_clear(r);
	return 0;
}

int store_quota_list(PGconn *c, struct mu_arena *a, const char *scope, const char *cursor,
		     int limit, struct store_quota_page *out, struct mu_error *err)
{
	char lb[24];
	const char *params[4] = { scope, NULL, NULL, store__admin_fmt(lb, limit + 1) };
	char *cpath = NULL;
	PGresult *r = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	if (cursor) {
		/* "<tenant path>|<gpu model>": paths never hold '|'. */
		const char *bar = strchr(cursor, '|');
		if (!bar)
			return mu_error_set(err, MU_EINVAL, "cursor", "not a cursor this server made");
		cpath = mu_strndup(cursor, (size_t)(bar - cursor));
		params[1] = cpath;
		params[2] = bar + 1;
	}
	ret = store_db_exec(c,
			    "SELECT " QUOTA_COLS QUOTA_FROM "WHERE " STORE__IN_SCOPE("t.path", "$1")
			    " AND ($2::text IS NULL OR (t.path, q.gpu_model) > ($2, $3::text)) "
			    "ORDER BY t.path, q.gpu_model LIMIT $4::int",
			    4, params, &r, err);
	mu_free(cpath);
	if (ret < 0)
		return ret;
	quota_rows(a, r, limit, out);
	store_db_clear(r);
	return 0;
}

struct quota_put {
	const struct store_quota *q;
};

static const char *limit_param(char *buf, int64_t v)
{
	return v < 0 ? NULL : store__admin_fmt(buf, v);
}

static int quota_put_tx(PGconn *c, void *arg, struct mu_error *err)
{
	const struct store_quota *q = ((struct quota_put *)arg)->q;
	char b[5][24];
	const char *params[7] = {
		q->tenant,
		q->gpu_model ? q->gpu_model : "",
		store__admin_fmt(b[0], q->guaranteed_gpus),
		limit_param(b[1], q->max_gpus),
		limit_param(b[2], q->max_running_jobs),
		limit_param(b[3], q->max_pending_jobs),
		limit_param(b[4], q->max_time_limit),
	};
	PGresult *r = NULL;
	int64_t tid;
	int ret;

	ret = store_db_exec(c,
			    "INSERT INTO quotas (tenant_id, gpu_model, guaranteed_gpus, max_gpus, "
			    " max_running_jobs, max_pending_jobs, max_time_limit) "
			    "SELECT t.id, $2, $3::int, $4::int, $5::int, $6::int, $7::int "
			    "FROM tenants t WHERE t.name = $1 "
			    "ON CONFLICT (tenant_id, gpu_model) DO UPDATE SET "
			    " guaranteed_gpus = EXCLUDED.guaranteed_gpus, max_gpus = EXCLUDED.max_gpus, "
			    " max_running_jobs = EXCLUDED.max_running_jobs, "
			    " max_pending_jobs = EXCLUDED.max_pending_jobs, "
			    " max_time_limit = EXCLUDED.max_time_limit, updated_at = now() "
			    "RETURNING tenant_id",
			    7, params, &r, err);
	if (ret < 0)
		return ret;
	if (store_db_nrows(r) != 1) {
		store_db_clear(r);
		return mu_error_set(err, MU_ENOTFOUND, "", "no tenant \"%.64s\"", q->tenant);
	}
	tid = store_db_get_int64(r, 0, 0);
	store_db_clear(r);
	{
		const char *kv[] = { "gpu_model",         params[1], "guaranteed_gpus#", params[2],
				     "max_gpus#",         params[3], "max_running_jobs#", params[4],
				     "max_pending_jobs#", params[5], "max_time_limit#",  params[6] };
		ret = store__admin_event(c, "quota.updated", tid, 0, "", kv, 6, err);
	}
	if (!ret) /* the scheduler plans with it at once, not at its next periodic cycle */
		ret = store_db_exec(c, "SELECT pg_notify('muster_sched', 'quota')", 0, NULL, NULL, err);
	return ret;
}

int store_quota_put(PGconn *c, struct mu_arena *a, const struct store_quota *q,
		    struct store_quota *out, struct mu_error *err)
{
	struct quota_put qp = { .q = q };
	const char *params[2] = { q->tenant, q->gpu_model ? q->gpu_model : "" };
	PGresult *r = NULL;
	int ret = store_db_tx(c, NULL, 0, quota_put_tx, &qp, err);

	if (ret < 0)
		return ret;
	ret = store_db_exec(c, "SELECT " QUOTA_COLS QUOTA_FROM "WHERE t.name = $1 AND q.gpu_model = $2",
			    2, params, &r, err);
	if (ret < 0)
		return ret;
	if (store_db_nrows(r) != 1)
		ret = mu_error_set(err, MU_ENOTFOUND, "", "the quota went away");
	else
		quota_row(a, r, 0, out);
	store_db_clear(r);
	return ret;
}

struct quota_delete {
	const char *tenant, *gpu_model;
};

static int quota_delete_tx(PGconn *c, void *arg, struct mu_error *err)
{
	struct quota_delete *qd = arg;
	const char *params[2] = { qd->tenant, qd->gpu_model };
	PGresult *r = NULL;
	int64_t tid;
	int ret;

	ret = store_db_exec(c,
			    "DELETE FROM quotas q USING tenants t WHERE t.id = q.tenant_id "
			    "AND t.name = $1 AND q.gpu_model = $2 RETURNING q.tenant_id",
			    2, params, &r, err);
	if (ret < 0)
		return ret;
	if (store_db_nrows(r) != 1) {
		store_db_clear(r);
		return mu_error_set(err, MU_ENOTFOUND, "", "tenant \"%.64s\" has no quota for model \"%.64s\"",
				    qd->tenant, qd->gpu_model);
	}
	tid = store_db_get_int64(r, 0, 0);
	store_db_clear(r);
	{
		const char *kv[] = { "gpu_model", qd->gpu_model };
		ret = store__admin_event(c, "quota.deleted", tid, 0, "", kv, 1, err);
	}
	if (!ret)
		ret = store_db_exec(c, "SELECT pg_notify('muster_sched', 'quota')", 0, NULL, NULL, err);
	return ret;
}

int store_quota_delete(PGconn *c, const char *tenant, const char *gpu_model, struct mu_error *err)
{
	struct quota_delete qd = { tenant, gpu_model ? gpu_model : "" };
	return store_db_tx(c, NULL, 0, quota_delete_tx, &qd, err);
}
