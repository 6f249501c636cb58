/*
 * rest_sched.c - the scheduler's REST endpoints, the JSON codec of the
 * operations api/ops/ops_sched.h writes once for REST and gRPC:
 * GET /v1/scheduler (leader, epoch, last cycle), GET /v1/usage (GPU-hours like
 * sreport), GET /v1/fairshare (the association tree like sshare), GET
 * /v1/jobs/{id}/explain and POST /v1/jobs/dry-run (the submit's checks,
 * then the policy core's answer from the plan service/plan keeps, nothing
 * written).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec_job.h"
#include "jv.h"
#include "ops_sched.h"
#include "ops_submit.h"
#include "rest.h"
#include "store_sched_report.h"

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* ---- GET /v1/scheduler ------------------------------------------------------ */

static int status_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct store_sched_status st;
	json_t *o, *lc = json_null();
	int ret = ops_sched_status(db, rq->arena, &rq->who, &st, &rq->err);

	if (ret < 0)
		return ret;
	if (st.has_cycle)
		lc = json_pack("{s:s, s:f, s:i, s:i, s:i}", "at", st.last_cycle_at, "duration_ms",
			       st.last_cycle_ms, "pending", st.pending, "started", st.started, "preempted",
			       st.preempted);
	o = json_pack("{s:o, s:I, s:o, s:o}", "leader", str_or_null(st.leader), "epoch", (json_int_t)st.epoch,
		      "lease_expires_at", str_or_null(st.lease_expires_at), "last_cycle", lc);
	rest_result(rq, 200, o);
	return 0;
}

int rest_sched_status(struct rest_req *rq)
{
	static const char *const none[] = { NULL };
	int ret = rest_query_check(rq, none);

	if (ret < 0)
		return ret;
	return rest_defer(rq, status_db, NULL, NULL);
}

/* ---- GET /v1/usage ------------------------------------------------------------ */

static int usage_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct ops_usage u;
	json_t *items;
	int ret = ops_sched_usage(db, rq->arena, &rq->who, arg, &u, &rq->err);

	if (ret < 0)
		return ret;
	items = json_array();
	for (size_t i = 0; i < u.n; i++)
		json_array_append_new(items, json_pack("{s:s, s:o, s:I, s:f, s:I}", "tenant", u.rows[i].tenant,
						       "user", str_or_null(u.rows[i].user), "gpu_seconds",
						       (json_int_t)u.rows[i].gpu_seconds, "gpu_hours",
						       (double)u.rows[i].gpu_seconds / 3600.0, "runs",
						       (json_int_t)u.rows[i].runs));
	rest_result(rq, 200, json_pack("{s:s, s:s, s:s, s:o}", "from", u.from, "to", u.to, "group_by",
				       u.by_user ? "user" : "tenant", "items", items));
	return 0;
}

int rest_sched_usage(struct rest_req *rq)
{
	static const char *const q[] = { "from", "to", "group_by", NULL };
	struct ops_usage_args *u = mu_arena_alloc(rq->arena, sizeof(*u));
	const char *from, *to, *g;
	int ret = rest_query_check(rq, q);

	if (ret < 0)
		return ret;
	from = rest_query(rq, "from");
	to = rest_query(rq, "to");
	g = rest_query(rq, "group_by");
	/* an empty value is a bad one here (gRPC's "" means absent) */
	if (from && !*from)
		return mu_error_set(&rq->err, MU_EINVAL, "from", "not an RFC 3339 timestamp");
	if (to && !*to)
		return mu_error_set(&rq->err, MU_EINVAL, "to", "not an RFC 3339 timestamp");
	if (g && !*g)
		return mu_error_set(&rq->err, MU_EINVAL, "group_by", "must be tenant or user");
	ret = ops_usage_args(from, to, g, u, &rq->err);
	if (ret < 0)
		return ret;
	return rest_defer(rq, usage_db, NULL, u);
}

/* ---- GET /v1/fairshare ---------------------------------------------------------- */

static int fairshare_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct ops_fairshare_row *r;
	size_t n;
	json_t *items;
	int ret = ops_sched_fairshare(db, rq->arena, &rq->who, &r, &n, &rq->err);

	(void)arg;
	if (ret < 0)
		return ret;
	items = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(items,
				      json_pack("{s:s, s:o, s:s, s:I, s:f, s:f, s:f, s:f, s:o, s:f}", "tenant",
						r[i].tenant, "user", str_or_null(r[i].user), "path", r[i].path,
						"shares", (json_int_t)r[i].shares, "norm_shares", r[i].norm_shares,
						"raw_usage", r[i].raw_usage, "decayed_usage", r[i].decayed_usage,
						"norm_usage", r[i].norm_usage, "level_fs",
						isinf(r[i].level_fs) ? json_null() : json_real(r[i].level_fs),
						"fairshare", r[i].fairshare));
	rest_result(rq, 200, json_pack("{s:o}", "items", items));
	return 0;
}

int rest_sched_fairshare(struct rest_req *rq)
{
	static const char *const none[] = { NULL };
	int ret = rest_query_check(rq, none);

	if (ret < 0)
		return ret;
	return rest_defer(rq, fairshare_db, NULL, NULL);
}

/* ---- GET /v1/jobs/{id}/explain ---------------------------------------------------- */

static int explain_db(PGconn *db, struct rest_req *rq, void *arg)
{
	int64_t *id = arg;
	struct store_sched_explain e;
	json_t *bl;
	int ret = ops_sched_explain(db, rq->arena, &rq->who, *id, &e, &rq->err);

	if (ret < 0)
		return ret;
	bl = json_array();
	for (size_t i = 0; i < e.nblockers; i++)
		json_array_append_new(bl, json_pack("{s:s, s:o, s:s}", "kind", e.blockers[i].kind, "job_id",
						    e.blockers[i].job_id ? json_integer(e.blockers[i].job_id)
									 : json_null(),
						    "message", e.blockers[i].message));
	rest_result(rq, 200, json_pack("{s:I, s:s, s:o, s:s, s:o, s:o}", "job_id", (json_int_t)e.job_id,
				       "state", e.state, "pending_reason", str_or_null(e.reason), "message",
				       e.message ? e.message : "", "planned_start",
				       str_or_null(e.planned_start), "blockers", bl));
	return 0;
}

int rest_sched_explain(struct rest_req *rq)
{
	static const char *const none[] = { NULL };
	const char *s = rest_param(rq, "id");
	int64_t *id = mu_arena_alloc(rq->arena, sizeof(*id));
	char *end = NULL;
	int ret = rest_query_check(rq, none);

	if (ret < 0)
		return ret;
	if (!s || *s < '0' || *s > '9')
		return mu_error_set(&rq->err, MU_ENOTFOUND, "", "no such job");
	*id = strtoll(s, &end, 10);
	if (*end || *id < 1)
		return mu_error_set(&rq->err, MU_ENOTFOUND, "", "no such job");
	return rest_defer(rq, explain_db, NULL, id);
}

/* ---- POST /v1/jobs/dry-run --------------------------------------------------------- */

static int dryrun_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct ops_dry_run d;
	int ret = ops_sched_dry_run(db, rq->arena, &rq->who, arg, &d, &rq->err);

	if (ret < 0)
		return ret;
	rest_result(rq, 200, json_pack("{s:b, s:o, s:o, s:s, s:[]}", "feasible", d.feasible, "planned_start",
				       d.feasible ? json_string(d.planned_start) : json_null(),
				       "pending_reason", str_or_null(d.reason), "message", d.message, "nodes"));
	return 0;
}

int rest_sched_dry_run(struct rest_req *rq)
{
	struct store_job *j = mu_arena_alloc(rq->arena, sizeof(*j));
	json_t *body = NULL;
	int ret = rest_body_json(rq, &body);

	if (ret < 0)
		return ret;
	/* the caller's defaults and rights, as a submit applies them */
	ret = ops_submit_decode(&rq->who, rq->arena, body, "", j, &rq->err);
	if (ret < 0)
		goto out;
	/* strings borrowed from `body` must outlive it: keep it with the request */
	rest_result(rq, 0, body);
	body = NULL;
	ret = rest_defer(rq, dryrun_db, NULL, j);
out:
	json_decref(body);
	return ret;
}
