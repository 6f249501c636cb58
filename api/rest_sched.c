/*
 * rest_sched.c - the scheduler's REST endpoints: GET /v1/scheduler (leader,
 * epoch, last cycle), GET /v1/usage (GPU-hours like sreport), GET
 * /v1/fairshare (the association tree like sshare), GET
 * /v1/jobs/{id}/explain and POST /v1/jobs/dry-run (the submit's checks,
 * then the policy core's answer from the plan service/plan keeps, nothing
 * written).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec_job.h"
#include "fairtree.h"
#include "jv.h"
#include "plan.h"
#include "rest.h"
#include "rest_jobs.h"
#include "sched.h"
#include "store_job.h"
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
	int ret = store_sched_status_get(db, rq->arena, &st, &rq->err);

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

struct usage_arg {
	const char *from, *to;
	bool by_user;
};

static int usage_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct usage_arg *u = arg;
	struct store_sched_usage_row *rows;
	size_t n;
	char *from, *to;
	json_t *items;
	int ret = store_sched_usage(db, rq->arena, rest_scope_path(rq), u->from, u->to, u->by_user, &from,
				    &to, &rows, &n, &rq->err);

	if (ret < 0)
		return ret;
	items = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(items, json_pack("{s:s, s:o, s:I, s:f, s:I}", "tenant", rows[i].tenant,
						       "user", str_or_null(rows[i].user), "gpu_seconds",
						       (json_int_t)rows[i].gpu_seconds, "gpu_hours",
						       (double)rows[i].gpu_seconds / 3600.0, "runs",
						       (json_int_t)rows[i].runs));
	rest_result(rq, 200, json_pack("{s:s, s:s, s:s, s:o}", "from", from, "to", to, "group_by",
				       u->by_user ? "user" : "tenant", "items", items));
	return 0;
}

/* RFC 3339 starts with a full date; PostgreSQL would also take "yesterday". */
static bool rfc3339_date(const char *s)
{
	static const char shape[] = "dddd-dd-dd";
	for (size_t i = 0; i < sizeof(shape) - 1; i++) {
		if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
			return false;
	}
	return s[10] == '\0' || s[10] == 'T' || s[10] == 't' || s[10] == ' ';
}

int rest_sched_usage(struct rest_req *rq)
{
	static const char *const q[] = { "from", "to", "group_by", NULL };
	struct usage_arg *u = mu_arena_alloc(rq->arena, sizeof(*u));
	const char *g;
	int ret = rest_query_check(rq, q);

	if (ret < 0)
		return ret;
	u->from = rest_query(rq, "from");
	u->to = rest_query(rq, "to");
	if (u->from && !rfc3339_date(u->from))
		return mu_error_set(&rq->err, MU_EINVAL, "from", "not an RFC 3339 timestamp");
	if (u->to && !rfc3339_date(u->to))
		return mu_error_set(&rq->err, MU_EINVAL, "to", "not an RFC 3339 timestamp");
	g = rest_query(rq, "group_by");
	if (g && strcmp(g, "tenant") && strcmp(g, "user"))
		return mu_error_set(&rq->err, MU_EINVAL, "group_by", "must be tenant or user");
	u->by_user = g && !strcmp(g, "user");
	return rest_defer(rq, usage_db, NULL, u);
}

/* ---- GET /v1/fairshare ---------------------------------------------------------- */

static int fairshare_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct store_sched_fs_tenant *t;
	struct store_sched_fs_user *u;
	size_t nt, nu, n;
	struct fairtree_assoc *as;
	double *raw, *dec;
	json_t *items;
	int ret = store_sched_fairshare_load(db, rq->arena, &t, &nt, &u, &nu, &rq->err);

	if (ret < 0)
		return ret;
	if (!nt)
		return mu_error_set(&rq->err, MU_EINTERNAL, "", "no root tenant");
	n = nt + nu;
	as = mu_arena_alloc(rq->arena, sizeof(*as) * n);
	raw = mu_arena_alloc(rq->arena, sizeof(*raw) * n);
	dec = mu_arena_alloc(rq->arena, sizeof(*dec) * n);
	for (size_t i = 0; i < nt; i++) {
		as[i].parent = -1;
		for (size_t k = 0; k < nt && i; k++)
			if (t[k].id == t[i].parent_id)
				as[i].parent = (int)k;
		as[i].shares = t[i].shares;
		as[i].name = t[i].name;
	}
	for (size_t i = 0; i < nu; i++) {
		struct fairtree_assoc *x = &as[nt + i];
		x->parent = 0;
		for (size_t k = 0; k < nt; k++)
			if (t[k].id == u[i].tenant_id)
				x->parent = (int)k;
		x->is_user = true;
		x->shares = 1;
		x->usage = u[i].decayed;
		x->name = u[i].user;
		raw[nt + i] = u[i].raw;
		dec[nt + i] = u[i].decayed;
	}
	/* A tenant's usage is its subtree's: add each user's up the tree. */
	for (size_t i = nt; i < n; i++)
		for (int p = as[i].parent; p >= 0; p = as[p].parent) {
			raw[p] += raw[i];
			dec[p] += dec[i];
			if (p == 0)
				break;
		}
	if (fairtree_compute(as, n) < 0)
		return mu_error_set(&rq->err, MU_EINTERNAL, "", "fair share: malformed tenant tree");
	items = json_array();
	for (size_t i = 0; i < n; i++) {
		bool user = i >= nt;
		const struct store_sched_fs_tenant *tt = &t[user ? (size_t)as[i].parent : i];
		json_t *lfs = isinf(as[i].level_fs) ? json_null() : json_real(as[i].level_fs);
		if (!rest_tenant_visible(rq, tt->path)) {
			json_decref(lfs);
			continue;
		}
		json_array_append_new(items,
				      json_pack("{s:s, s:o, s:s, s:i, s:f, s:f, s:f, s:f, s:o, s:f}", "tenant",
						tt->name, "user", user ? json_string(u[i - nt].user) : json_null(),
						"path", tt->path, "shares", user ? 1 : tt->shares, "norm_shares",
						as[i].shares_norm, "raw_usage", raw[i], "decayed_usage", dec[i],
						"norm_usage", as[i].usage_norm, "level_fs", lfs, "fairshare",
						user ? as[i].fairshare : 0.0));
	}
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
	int ret = store_sched_explain_get(db, rq->arena, rest_scope_path(rq), *id, &e, &rq->err);

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

static void format_ts(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

/* One plan per process: every worker answers dry-runs from it (plan.h). */
static struct plan *dryrun_plan;
static pthread_once_t dryrun_plan_once = PTHREAD_ONCE_INIT;

static void dryrun_plan_init(void)
{
	dryrun_plan = plan_new(NULL);
}

static int dryrun_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct store_job *j = arg;
	struct store_job_depstate *states = NULL;
	struct plan_answer ans;
	int64_t tenant_id = 0, class_id = 0;
	char when[40];
	json_t *o;
	/* The same checks, problem codes and field names as a submit's. */
	struct admit_problem pb = { 0 };
	int ret = store_job_check(db, rq->arena, rest_scope_path(rq), j, &tenant_id, &class_id, &states,
				  &pb, &rq->err);

	if (ret < 0) {
		codec_job_problem_field(&pb, false, &rq->err);
		return ret;
	}
	pthread_once(&dryrun_plan_once, dryrun_plan_init);
	ret = plan_dry_run(dryrun_plan, db, j, tenant_id, class_id, states, &ans, &rq->err);
	if (ret < 0)
		return ret;
	if (ans.feasible)
		format_ts(ans.planned_start, when, sizeof(when));
	o = json_pack("{s:b, s:o, s:o, s:s, s:[]}", "feasible", ans.feasible, "planned_start",
		      ans.feasible ? json_string(when) : json_null(), "pending_reason",
		      ans.reason == SCHED_REASON_NONE ? json_null() : json_string(sched_reason_name(ans.reason)),
		      "message", ans.message, "nodes");
	rest_result(rq, 200, o);
	return 0;
}

int rest_sched_dry_run(struct rest_req *rq)
{
	struct store_job *j = mu_arena_alloc(rq->arena, sizeof(*j));
	json_t *body = NULL;
	int ret = rest_body_json(rq, &body);

	if (ret < 0)
		return ret;
	ret = codec_job_decode(body, rq->arena, "", j, &rq->err);
	if (ret < 0)
		goto out;
	/* The caller's defaults and rights, as a submit applies them. */
	ret = rest_jobs_principal(rq, j, &rq->err);
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
