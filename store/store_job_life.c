/* store_job_life.c - the lifecycle of a job the store drives (store_job.h):
 * cancel; hold, release, requeue and PATCH are store_jobctl.c. */
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
		"WITH u AS (UPDATE jobs SET " CANCEL_PENDING_SET
		"   WHERE id = $1::bigint RETURNING id, tenant_id) " CANCELLED_EVENTS("$2");
	static const char running_sql[] =
		"WITH u AS (UPDATE runs SET state = CASE WHEN state IN ('STARTING', 'RUNNING')"
		"   THEN 'STOPPING' ELSE state END,"
		"   " CANCEL_STOP_REASON ","
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
		" u AS (UPDATE jobs SET " CANCEL_PENDING_SET
		"   FROM sel WHERE jobs.id = sel.id RETURNING jobs.id, jobs.tenant_id),"
		" ev AS (" CANCELLED_EVENTS("$4") ")"
		" SELECT id, pg_notify('muster_sched', 'cancel:' || id::text) FROM u";
	struct mu_buf b = MU_BUF_INIT;
	const char *p[4] = { NULL, scope, keep_array_heads ? "true" : "false", who ? who : "" };
	PGresult *r = NULL;
	int ret;

	store__int_array(&b, ids, n);
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
