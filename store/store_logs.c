/* store_logs.c - see store_logs.h. */
#include "store_logs.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

int store_logs_target(PGconn *c, struct mu_arena *a, const char *scope, int64_t job_id,
		      int64_t run_id, int64_t node_rank, struct store_log_target *out,
		      struct mu_error *err)
{
	static const char sql[] =
		"SELECT j.state, j.procs_per_node, r.id, r.attempt, r.state, r.live,"
		"       (SELECT n.name FROM run_allocations al JOIN nodes n ON n.id = al.node_id"
		"         WHERE al.run_id = r.id AND al.node_rank = $4::int LIMIT 1),"
		"       (SELECT coalesce(max(al.node_rank) + 1, 0) FROM run_allocations al"
		"         WHERE al.run_id = r.id)"
		"  FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
		"  LEFT JOIN LATERAL (SELECT * FROM runs x WHERE x.job_id = j.id"
		"                      AND ($3::bigint = 0 OR x.id = $3::bigint)"
		"                    ORDER BY x.attempt DESC LIMIT 1) r ON true"
		" WHERE j.id = $1::bigint"
		"   AND ($2::text IS NULL OR t.path = $2 OR starts_with(t.path, $2 || '/'))";
	char jb[24], rb[24], nb[24];
	const char *p[4] = { jb, scope, rb, nb };
	PGresult *r = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	snprintf(jb, sizeof(jb), "%lld", (long long)job_id);
	snprintf(rb, sizeof(rb), "%lld", (long long)run_id);
	snprintf(nb, sizeof(nb), "%lld", (long long)(node_rank > 1000000 ? -1 : node_rank));
	ret = store_db_exec(c, sql, 4, p, &r, err);
	if (ret < 0)
		goto out;
	if (store_db_nrows(r) != 1) {
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no such job");
		goto out;
	}
	out->job_id = job_id;
	out->job_state = mu_arena_strdup(a, store_db_get(r, 0, 0));
	out->procs_per_node = store_db_get_int64(r, 0, 1);
	if (store_db_is_null(r, 0, 2)) {
		if (run_id)
			ret = mu_error_set(err, MU_ENOTFOUND, "run_id", "job %lld has no run %lld",
					   (long long)job_id, (long long)run_id);
		else
			ret = mu_error_set(err, MU_ESTATE, "", "job %lld has not started: no logs yet (%s)",
					   (long long)job_id, out->job_state);
		goto out;
	}
	out->run_id = store_db_get_int64(r, 0, 2);
	out->attempt = store_db_get_int64(r, 0, 3);
	out->run_state = mu_arena_strdup(a, store_db_get(r, 0, 4));
	out->run_live = store_db_get_bool(r, 0, 5);
	out->nodes = store_db_get_int64(r, 0, 7);
	if (store_db_is_null(r, 0, 6)) {
		ret = mu_error_set(err, MU_ERANGE, "node_rank", "run %lld has node ranks 0..%lld",
				   (long long)out->run_id, (long long)out->nodes - 1);
		goto out;
	}
	out->node = mu_arena_strdup(a, store_db_get(r, 0, 6));
out:
	store_db_clear(r);
	return ret;
}
