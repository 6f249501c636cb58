/* store_metrics.c - see store_metrics.h. */
#include "store_metrics.h"

#include <stdio.h>
#include <string.h>

#include "metrics.h"

/* One query whose rows are (labels..., value): appended as `name{...} value`. */
static int series(PGconn *c, struct mu_buf *b, const char *name, const char *type,
		  const char *help, const char *const *labels, int nlabels, const char *sql,
		  struct mu_error *err)
{
	PGresult *r = NULL;
	int ret = store_db_exec(c, sql, 0, NULL, &r, err);

	if (ret < 0)
		return ret;
	mu_metrics_head(b, name, type, help);
	for (int i = 0; i < store_db_nrows(r); i++) {
		mu_buf_adds(b, name);
		if (nlabels) {
			mu_buf_addc(b, '{');
			for (int k = 0; k < nlabels; k++) {
				mu_buf_addf(b, "%s%s=", k ? "," : "", labels[k]);
				mu_metrics_label(b, store_db_get(r, i, k));
			}
			mu_buf_addc(b, '}');
		}
		mu_buf_addf(b, " %s\n", store_db_get(r, i, nlabels));
	}
	store_db_clear(r);
	return 0;
}

int store_metrics_scheduler(PGconn *c, struct mu_buf *out, struct mu_error *err)
{
	static const char *const st_tenant[] = { "state", "tenant" };
	static const char *const reason[] = { "reason" };
	static const char *const st_model[] = { "state", "model" };
	struct mu_buf b = MU_BUF_INIT;
	int ret;

	/* every state for every tenant (zeros included), so rates and alerts
	 * see a series from the start */
	ret = series(c, &b, "muster_jobs", "gauge", "Jobs by state and tenant.", st_tenant, 2,
		     "WITH s(state) AS (VALUES ('PENDING'),('STARTING'),('RUNNING'),('COMPLETED'),"
		     " ('FAILED'),('CANCELLED'),('TIMEOUT')),"
		     " n AS (SELECT state, tenant_id, count(*) AS n FROM jobs GROUP BY 1, 2)"
		     " SELECT s.state, t.name, coalesce(n.n, 0) FROM s CROSS JOIN tenants t"
		     " LEFT JOIN n ON n.state = s.state AND n.tenant_id = t.id ORDER BY 2, 1",
		     err);
	if (!ret)
		ret = series(c, &b, "muster_jobs_pending", "gauge", "Pending jobs by reason.", reason, 1,
			     "SELECT pending_reason, count(*) FROM jobs WHERE state = 'PENDING'"
			     " GROUP BY 1 ORDER BY 1",
			     err);
	if (!ret)
		ret = series(c, &b, "muster_gpus", "gauge",
			     "GPUs by state (allocated, idle, unhealthy, draining, down) and model.",
			     st_model, 2,
			     "WITH s(state) AS (VALUES ('allocated'),('idle'),('unhealthy'),('draining'),('down')),"
			     " m AS (SELECT DISTINCT model FROM gpus),"
			     " a AS (SELECT DISTINCT node_id, gpu_index FROM run_allocations"
			     "       WHERE live AND gpu_index >= 0),"
			     " g AS (SELECT CASE WHEN NOT g.healthy THEN 'unhealthy' WHEN NOT n.up THEN 'down'"
			     "       WHEN a.node_id IS NOT NULL THEN 'allocated' WHEN n.drain THEN 'draining'"
			     "       ELSE 'idle' END AS state, g.model, count(*) AS n"
			     "       FROM gpus g JOIN nodes n ON n.id = g.node_id"
			     "       LEFT JOIN a ON a.node_id = g.node_id AND a.gpu_index = g.idx GROUP BY 1, 2)"
			     " SELECT s.state, m.model, coalesce(g.n, 0) FROM s CROSS JOIN m"
			     " LEFT JOIN g ON g.state = s.state AND g.model = m.model ORDER BY 2, 1",
			     err);
	if (!ret)
		ret = series(c, &b, "muster_scheduler_reservations", "gauge",
			     "Pending jobs holding a planned start (backfill reservations).", NULL, 0,
			     "SELECT count(*) FROM jobs WHERE state = 'PENDING' AND planned_start IS NOT NULL",
			     err);
	if (!ret)
		ret = series(c, &b, "muster_scheduler_starts_total", "counter",
			     "Runs started (every attempt of every job).", NULL, 0,
			     "SELECT count(*) FROM runs", err);
	if (!ret)
		ret = series(c, &b, "muster_scheduler_preemptions_total", "counter",
			     "Runs ended by preemption.", NULL, 0,
			     "SELECT count(*) FROM runs WHERE state = 'PREEMPTED'", err);
	if (!ret)
		ret = series(c, &b, "muster_scheduler_requeues_total", "counter",
			     "Jobs put back to pending after a failed or preempted run (retries).", NULL, 0,
			     "SELECT coalesce(sum(retries), 0) FROM jobs", err);
	if (!ret)
		mu_buf_add(out, b.p ? b.p : "", b.len);
	mu_buf_release(&b);
	return ret;
}
