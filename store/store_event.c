/* store_event.c - event scans for resumable cursors; see store_event.h. */
#include "store_event.h"

#include <stdio.h>

#include "buf.h"
#include "store_int.h"

/* A text[] literal of `items` (new, mu_free). */
static char *text_array(const char *const *items, size_t n)
{
	struct mu_buf b = MU_BUF_INIT;

	store__text_array(&b, items, n);
	return mu_buf_detach(&b);
}

int store_event_scan(PGconn *c, struct mu_arena *a, int64_t after, const struct store_event_filter *f,
		     int limit, struct store_event **out, size_t *n, struct mu_error *err)
{
	static const char sql[] =
		"SELECT e.id,"
		" e.job_id IS NOT NULL"
		"  AND ($2::text IS NULL OR t.path = $2 OR starts_with(t.path, $2 || '/'))"
		"  AND ($3::bigint = 0 OR e.job_id = $3)"
		"  AND (cardinality($4::text[]) = 0 OR e.kind = ANY($4::text[])),"
		" " TS("e.at") ", e.kind, coalesce(e.job_id, 0), coalesce(e.run_id, 0), e.reason,"
		" e.data::text, coalesce(t.name, ''), coalesce(j.state, '')"
		" FROM events e LEFT JOIN tenants t ON t.id = e.tenant_id"
		" LEFT JOIN jobs j ON j.id = e.job_id"
		" WHERE e.id > $1::bigint ORDER BY e.id LIMIT $5::int";
	char cur[24], job[24], lim[16];
	char *kinds = text_array(f->kinds, f->kinds ? f->nkinds : 0);
	const char *params[5] = { cur, f->scope, job, kinds, lim };
	PGresult *res = NULL;
	int ret, rows;

	*out = NULL;
	*n = 0;
	snprintf(cur, sizeof(cur), "%lld", (long long)after);
	snprintf(job, sizeof(job), "%lld", (long long)f->job_id);
	snprintf(lim, sizeof(lim), "%d", limit);
	ret = store_db_exec(c, sql, 5, params, &res, err);
	if (ret < 0)
		goto out;
	rows = store_db_nrows(res);
	*out = mu_arena_alloc(a, sizeof(**out) * (size_t)(rows + 1));
	for (int i = 0; i < rows; i++) {
		struct store_event *e = &(*out)[i];

		e->id = store_db_get_int64(res, i, 0);
		e->visible = store_db_get_bool(res, i, 1);
		if (!e->visible)
			continue;
		e->at = mu_arena_strdup(a, store_db_get(res, i, 2));
		e->kind = mu_arena_strdup(a, store_db_get(res, i, 3));
		e->job_id = store_db_get_int64(res, i, 4);
		e->run_id = store_db_get_int64(res, i, 5);
		e->reason = mu_arena_strdup(a, store_db_get(res, i, 6));
		e->data = mu_arena_strdup(a, store_db_get(res, i, 7));
		e->tenant = mu_arena_strdup(a, store_db_get(res, i, 8));
		e->job_state = mu_arena_strdup(a, store_db_get(res, i, 9));
	}
	*n = (size_t)rows;
out:
	store_db_clear(res);
	mu_free(kinds);
	return ret;
}

int store_event_max_id(PGconn *c, int64_t *out, struct mu_error *err)
{
	return store_db_query_int64(c, "SELECT coalesce(max(id), 0) FROM events", 0, NULL, out, err);
}

int store_event_feed(PGconn *c, struct mu_arena *a, int64_t after, int64_t upto, int limit,
		     struct store_event_row **out, size_t *n, struct mu_error *err)
{
	static const char sql[] =
		"SELECT e.id, " TS_US("e.at") ", e.kind, coalesce(e.job_id, 0), coalesce(e.run_id, 0),"
		" e.reason, e.data::text, coalesce(t.path, ''), coalesce(nd.name, '')"
		" FROM events e LEFT JOIN tenants t ON t.id = e.tenant_id"
		" LEFT JOIN nodes nd ON nd.id = e.node_id"
		" WHERE e.id > $1::bigint AND e.id <= $2::bigint ORDER BY e.id LIMIT $3::int";
	char lo[24], hi[24], lim[16];
	const char *params[3] = { lo, hi, lim };
	PGresult *res = NULL;
	int ret, rows;

	*out = NULL;
	*n = 0;
	snprintf(lo, sizeof(lo), "%lld", (long long)after);
	snprintf(hi, sizeof(hi), "%lld", (long long)upto);
	snprintf(lim, sizeof(lim), "%d", limit);
	ret = store_db_exec(c, sql, 3, params, &res, err);
	if (ret < 0)
		goto out;
	rows = store_db_nrows(res);
	*out = mu_arena_alloc(a, sizeof(**out) * (size_t)(rows + 1));
	for (int i = 0; i < rows; i++) {
		struct store_event_row *e = &(*out)[i];
		char at[STORE_TS_LEN];

		e->id = store_db_get_int64(res, i, 0);
		store__ts_text(res, i, 1, at);
		e->at = mu_arena_strdup(a, at);
		e->kind = mu_arena_strdup(a, store_db_get(res, i, 2));
		e->job_id = store_db_get_int64(res, i, 3);
		e->run_id = store_db_get_int64(res, i, 4);
		e->reason = mu_arena_strdup(a, store_db_get(res, i, 5));
		e->data = mu_arena_strdup(a, store_db_get(res, i, 6));
		e->tenant_path = mu_arena_strdup(a, store_db_get(res, i, 7));
		e->node = mu_arena_strdup(a, store_db_get(res, i, 8));
	}
	*n = (size_t)rows;
out:
	store_db_clear(res);
	return ret;
}

int store_event_ids(PGconn *c, struct mu_arena *a, int64_t after, int limit, int64_t **out,
		    size_t *n, struct mu_error *err)
{
	static const char sql[] = "SELECT id FROM events WHERE id > $1::bigint ORDER BY id LIMIT $2::int";
	char lo[24], lim[16];
	const char *params[2] = { lo, lim };
	PGresult *res = NULL;
	int ret, rows;

	*out = NULL;
	*n = 0;
	snprintf(lo, sizeof(lo), "%lld", (long long)after);
	snprintf(lim, sizeof(lim), "%d", limit);
	ret = store_db_exec(c, sql, 2, params, &res, err);
	if (ret < 0)
		goto out;
	rows = store_db_nrows(res);
	*out = mu_arena_alloc(a, sizeof(**out) * (size_t)(rows + 1));
	for (int i = 0; i < rows; i++)
		(*out)[i] = store_db_get_int64(res, i, 0);
	*n = (size_t)rows;
out:
	store_db_clear(res);
	return ret;
}

int store_event_tenant_path(PGconn *c, struct mu_arena *a, const char *scope, const char *name,
			    const char **out, struct mu_error *err)
{
	static const char sql[] =
		"SELECT path FROM tenants t WHERE t.name = $1"
		" AND ($2::text IS NULL OR t.path = $2 OR starts_with(t.path, $2 || '/'))";
	const char *params[2] = { name, scope };
	PGresult *res = NULL;
	int ret;

	*out = NULL;
	ret = store_db_exec(c, sql, 2, params, &res, err);
	if (ret < 0)
		goto out;
	if (store_db_nrows(res) == 1)
		*out = mu_arena_strdup(a, store_db_get(res, 0, 0));
out:
	store_db_clear(res);
	return ret;
}
