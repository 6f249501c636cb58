/*
 * ops_sched.c - the scheduler's read operations (ops_sched.h).
 */
#include "ops_sched.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "codec_job.h"
#include "fairshare.h"
#include "ops_jobs.h"
#include "plan.h"
#include "sched.h"

int ops_sched_status(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		     struct store_sched_status *out, struct mu_error *err)
{
	(void)p;
	return store_sched_status_get(db, a, out, err);
}

int ops_sched_explain(PGconn *db, struct mu_arena *a, const struct ops_principal *p, int64_t id,
		      struct store_sched_explain *out, struct mu_error *err)
{
	int ret = ops_job_id_check(id, err);

	if (ret < 0)
		return ret;
	return store_sched_explain_get(db, a, ops_scope_path(p), id, out, err);
}

/* One plan per process: every worker answers dry-runs from it (plan.h). */
static struct plan *dryrun_plan;
static pthread_once_t dryrun_plan_once = PTHREAD_ONCE_INIT;

static void dryrun_plan_init(void)
{
	dryrun_plan = plan_new(NULL);
}

int ops_sched_dry_run(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		      struct store_job *j, struct ops_dry_run *out, struct mu_error *err)
{
	struct store_job_depstate *states = NULL;
	struct plan_answer ans;
	int64_t tenant_id = 0, class_id = 0;
	/* the same checks, problem codes and field names as a submit's */
	struct admit_problem pb = { 0 };
	int ret = store_job_check(db, a, ops_scope_path(p), j, &tenant_id, &class_id, &states, &pb, err);

	memset(out, 0, sizeof(*out));
	if (ret < 0) {
		codec_job_problem_field(&pb, false, err);
		return ret;
	}
	pthread_once(&dryrun_plan_once, dryrun_plan_init);
	ret = plan_dry_run(dryrun_plan, db, j, tenant_id, class_id, states, &ans, err);
	if (ret < 0)
		return ret;
	out->feasible = ans.feasible;
	if (ans.feasible) {
		time_t tt = (time_t)ans.planned_start;
		struct tm tm;

		gmtime_r(&tt, &tm);
		strftime(out->planned_start, sizeof(out->planned_start), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
	}
	out->reason = ans.reason == SCHED_REASON_NONE ? NULL : sched_reason_name(ans.reason);
	snprintf(out->message, sizeof(out->message), "%s", ans.message);
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

int ops_usage_args(const char *from, const char *to, const char *group_by,
		   struct ops_usage_args *out, struct mu_error *err)
{
	memset(out, 0, sizeof(*out));
	out->from = from && *from ? from : NULL;
	out->to = to && *to ? to : NULL;
	if (group_by && !*group_by)
		group_by = NULL;
	if (out->from && !rfc3339_date(out->from))
		return mu_error_set(err, MU_EINVAL, "from", "not an RFC 3339 timestamp");
	if (out->to && !rfc3339_date(out->to))
		return mu_error_set(err, MU_EINVAL, "to", "not an RFC 3339 timestamp");
	if (group_by && strcmp(group_by, "tenant") && strcmp(group_by, "user"))
		return mu_error_set(err, MU_EINVAL, "group_by", "must be tenant or user");
	out->by_user = group_by && !strcmp(group_by, "user");
	return 0;
}

int ops_sched_usage(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		    const struct ops_usage_args *args, struct ops_usage *out, struct mu_error *err)
{
	memset(out, 0, sizeof(*out));
	out->by_user = args->by_user;
	return store_sched_usage(db, a, ops_scope_path(p), args->from, args->to, args->by_user,
				 &out->from, &out->to, &out->rows, &out->n, err);
}

int ops_sched_fairshare(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
			struct ops_fairshare_row **rows, size_t *nrows, struct mu_error *err)
{
	struct store_sched_fs_tenant *t;
	struct store_sched_fs_user *u;
	size_t nt, nu, n, m = 0;
	struct fairtree_assoc *as;
	struct ops_fairshare_row *out;
	double *raw, *dec;
	int ret = store_sched_fairshare_load(db, a, &t, &nt, &u, &nu, err);

	*rows = NULL;
	*nrows = 0;
	if (ret < 0)
		return ret;
	/* computed over the whole tree (the factors are relative to it), shown
	 * for the caller's subtree only */
	if (plan_fairshare(t, nt, u, nu, a, &as, err) < 0) {
		err->code = MU_EINTERNAL;
		return MU_EINTERNAL;
	}
	n = nt + nu;
	raw = mu_arena_alloc(a, sizeof(*raw) * n);
	dec = mu_arena_alloc(a, sizeof(*dec) * n);
	memset(raw, 0, sizeof(*raw) * n);
	memset(dec, 0, sizeof(*dec) * n);
	for (size_t i = 0; i < nu; i++) {
		raw[nt + i] = u[i].raw;
		dec[nt + i] = u[i].decayed;
	}
	/* A tenant's usage is its subtree's: add each user's up the tree. */
	for (size_t i = nt; i < n; i++)
		for (int q = as[i].parent; q >= 0; q = as[q].parent) {
			raw[q] += raw[i];
			dec[q] += dec[i];
			if (q == 0)
				break;
		}
	out = mu_arena_alloc(a, sizeof(*out) * n);
	for (size_t i = 0; i < n; i++) {
		bool user = i >= nt;
		const struct store_sched_fs_tenant *tt = &t[user ? (size_t)as[i].parent : i];
		struct ops_fairshare_row *r = &out[m];

		if (!ops_tenant_visible(p, tt->path))
			continue;
		r->tenant = tt->name;
		r->path = tt->path;
		r->user = user ? u[i - nt].user : NULL;
		r->shares = user ? 1 : tt->shares;
		r->norm_shares = as[i].shares_norm;
		r->raw_usage = raw[i];
		r->decayed_usage = dec[i];
		r->norm_usage = as[i].usage_norm;
		r->level_fs = as[i].level_fs;
		r->fairshare = user ? as[i].fairshare : 0.0;
		m++;
	}
	*rows = out;
	*nrows = m;
	return 0;
}
