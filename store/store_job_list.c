/* store_job_list.c - reading jobs (store_job.h): list, get, history. */
#include "store_job.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "log.h"
#include "store_int.h"
#include "store_job_int.h"

/* ---- list / get ------------------------------------------------------ */

/* JOB_COLS with the columns of the omitted parts read as NULL. */
static void job_cols(struct mu_buf *b, uint32_t omit)
{
#define JOB_COL_ENTRY(part, sql) { part, sql },
	static const struct {
		int part;
		const char *sql;
	} cols[] = { JOB_COL_LIST(JOB_COL_ENTRY) };
#undef JOB_COL_ENTRY

	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
		if (cols[i].part != JOB_KEEP && (omit >> cols[i].part & 1))
			mu_buf_adds(b, i ? ", NULL" : "NULL");
		else
			mu_buf_adds(b, cols[i].sql);
	}
}

int store_job_list(PGconn *c, struct mu_arena *a, const char *scope,
		   const struct store_job_filter *f, struct store_job_page *out,
		   struct mu_error *err)
{
	/* The page's ids first, from jobs alone (the tenant conditions as
	 * semi-joins a NULL parameter folds away), then the columns of those
	 * ids only, whatever plan the filter gets. Measured at 20,000 jobs, a
	 * page of 1,000: a plain join of jobs and tenants sorted every match
	 * with its columns formatted when the table had no statistics yet (just
	 * after a big batch, before autovacuum's analyze; 30-35 ms) and for a
	 * tenant's scope even with them (39-42 ms); this way 3-4 ms with
	 * statistics, 7-8 ms without. */
	static const char page_sql[] =
		JOB_FROM
		" WHERE j.id = ANY(ARRAY(SELECT j.id FROM jobs j WHERE j.id > $1::bigint"
		"   AND ($2::text IS NULL OR j.tenant_id IN (SELECT id FROM tenants WHERE "
		IN_SCOPE_OF("path", "$2") "))"
		"   AND ($3::text[] IS NULL OR j.state = ANY($3::text[]))"
		"   AND ($4::text IS NULL OR j.tenant_id IN (SELECT t.id FROM tenants t"
		"        JOIN tenants f ON f.name = $4"
		"        WHERE t.path = f.path OR starts_with(t.path, f.path || '/')))"
		"   AND ($5::text IS NULL OR j.user_name = $5)"
		"   AND ($6::jsonb IS NULL OR j.labels @> $6::jsonb)"
		"   AND ($8::bigint IS NULL OR j.array_job_id = $8::bigint)"
		"   AND ($9::int IS NULL OR j.array_task_id = $9::int)"
		"   ORDER BY j.id LIMIT $7::int))"
		" ORDER BY j.id";
	char after[24], lim[16], arr[24], task[16];
	struct mu_buf states = MU_BUF_INIT, sql = MU_BUF_INIT;
	const char *p[9];
	PGresult *r = NULL;
	int ret, rows;

	memset(out, 0, sizeof(*out));
	snprintf(after, sizeof(after), "%lld", (long long)f->after_id);
	snprintf(lim, sizeof(lim), "%d", f->limit + 1);
	if (f->nstates)
		store__text_array(&states, f->states, f->nstates);
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
	mu_buf_adds(&sql, "SELECT ");
	job_cols(&sql, f->omit);
	mu_buf_adds(&sql, page_sql);
	ret = store_db_exec(c, sql.p, 9, p, &r, err);
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
	mu_buf_release(&sql);
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
	out->runs = store__dup(a, r, 0, JOB_NCOLS);
	out->events = store__dup(a, r, 0, JOB_NCOLS + 1);
out:
	store_db_clear(r);
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
		store__text_array(&states, f->states, f->nstates);
	if (f->nids)
		store__int_array(&ids, f->ids, f->nids);
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
