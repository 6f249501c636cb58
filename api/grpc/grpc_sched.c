/*
 * grpc_sched.c - muster.v1.SchedulerService: GetStatus, Explain, DryRun,
 * Usage and FairShare, the codec of the operations REST's api/rest_sched.c also
 * calls (api/ops/ops_sched.h). Each method's roles are its REST route's
 * (routes.def, as grpc_admin.c reads them); DryRun's JobSpec becomes the
 * JSON body POST /v1/jobs/dry-run takes (grpc_codec_spec_json), so the
 * job's rules and field names are the REST codec's.
 */
#include <jansson.h>
#include <string.h>

#include "grpc_codec.h"
#include "grpc_internal.h"
#include "muster/v1/sched.pb-c.h"
#include "ops_router.h"
#include "ops_sched.h"
#include "ops_submit.h"

enum {
#define REST_ROUTE(method, pattern, handler, roles, summary) handler##_roles = (roles) & REST_ANYONE,
#include "routes.def"
#undef REST_ROUTE
};

static void *A(struct mu_arena *a, size_t n)
{
	return mu_arena_alloc(a, n ? n : 1);
}

static char *S(struct mu_arena *a, const char *s)
{
	return mu_arena_strdup(a, s ? s : "");
}

static int status_run(PGconn *db, struct gcall *c)
{
	Muster__V1__SchedulerStatus *o;
	struct store_sched_status st;
	int ret = ops_sched_status(db, &c->arena, &c->who, &st, &c->err);

	if (ret < 0)
		return ret;
	o = A(&c->arena, sizeof(*o));
	muster__v1__scheduler_status__init(o);
	o->leader = S(&c->arena, st.leader);
	o->epoch = st.epoch;
	o->lease_expires_at = S(&c->arena, st.lease_expires_at);
	if (st.has_cycle) {
		Muster__V1__LastCycle *lc = A(&c->arena, sizeof(*lc));

		muster__v1__last_cycle__init(lc);
		lc->at = S(&c->arena, st.last_cycle_at);
		lc->duration_ms = st.last_cycle_ms;
		lc->pending = st.pending;
		lc->started = st.started;
		lc->preempted = st.preempted;
		o->last_cycle = lc;
	}
	c->resp = &o->base;
	return 0;
}

static int explain_run(PGconn *db, struct gcall *c)
{
	const Muster__V1__ExplainRequest *r = (const void *)c->req;
	Muster__V1__ExplainResponse *o;
	struct store_sched_explain e;
	int ret = ops_sched_explain(db, &c->arena, &c->who, r->job_id, &e, &c->err);

	if (ret < 0)
		return ret;
	o = A(&c->arena, sizeof(*o));
	muster__v1__explain_response__init(o);
	o->job_id = e.job_id;
	o->state = S(&c->arena, e.state);
	o->pending_reason = S(&c->arena, e.reason);
	o->message = S(&c->arena, e.message);
	o->planned_start = S(&c->arena, e.planned_start);
	o->blockers = A(&c->arena, e.nblockers * sizeof(*o->blockers));
	for (size_t i = 0; i < e.nblockers; i++) {
		Muster__V1__Blocker *b = A(&c->arena, sizeof(*b));

		muster__v1__blocker__init(b);
		b->kind = S(&c->arena, e.blockers[i].kind);
		b->job_id = e.blockers[i].job_id;
		b->message = S(&c->arena, e.blockers[i].message);
		o->blockers[o->n_blockers++] = b;
	}
	c->resp = &o->base;
	return 0;
}

static int dry_run_run(PGconn *db, struct gcall *c)
{
	const Muster__V1__DryRunRequest *r = (const void *)c->req;
	Muster__V1__DryRunResponse *o;
	struct store_job j;
	struct ops_dry_run d;
	json_t *body;
	int ret;

	if (!r->job)
		return mu_error_set(&c->err, MU_EMISSING, "job", "required");
	body = grpc_codec_spec_json(r->job, &c->err);
	if (!body)
		return c->err.code;
	ret = ops_submit_decode(&c->who, &c->arena, body, "", &j, &c->err);
	if (ret == 0)
		ret = ops_sched_dry_run(db, &c->arena, &c->who, &j, &d, &c->err);
	json_decref(body); /* after the store: j borrows its strings */
	if (ret < 0)
		return ret;
	o = A(&c->arena, sizeof(*o));
	muster__v1__dry_run_response__init(o);
	o->feasible = d.feasible;
	o->planned_start = S(&c->arena, d.planned_start);
	o->pending_reason = S(&c->arena, d.reason);
	o->message = S(&c->arena, d.message);
	c->resp = &o->base;
	return 0;
}

static int usage_run(PGconn *db, struct gcall *c)
{
	const Muster__V1__UsageRequest *r = (const void *)c->req;
	Muster__V1__UsageResponse *o;
	struct ops_usage_args args;
	struct ops_usage u;
	int ret = ops_usage_args(r->from, r->to, r->group_by, &args, &c->err);

	if (ret < 0)
		return ret;
	ret = ops_sched_usage(db, &c->arena, &c->who, &args, &u, &c->err);
	if (ret < 0)
		return ret;
	o = A(&c->arena, sizeof(*o));
	muster__v1__usage_response__init(o);
	o->from = S(&c->arena, u.from);
	o->to = S(&c->arena, u.to);
	o->group_by = S(&c->arena, u.by_user ? "user" : "tenant");
	o->items = A(&c->arena, u.n * sizeof(*o->items));
	for (size_t i = 0; i < u.n; i++) {
		Muster__V1__UsageRow *x = A(&c->arena, sizeof(*x));

		muster__v1__usage_row__init(x);
		x->tenant = S(&c->arena, u.rows[i].tenant);
		x->user = S(&c->arena, u.rows[i].user);
		x->gpu_seconds = u.rows[i].gpu_seconds;
		x->gpu_hours = (double)u.rows[i].gpu_seconds / 3600.0;
		x->runs = u.rows[i].runs;
		o->items[o->n_items++] = x;
	}
	c->resp = &o->base;
	return 0;
}

static int fairshare_run(PGconn *db, struct gcall *c)
{
	Muster__V1__FairShareResponse *o;
	struct ops_fairshare_row *r;
	size_t n;
	int ret = ops_sched_fairshare(db, &c->arena, &c->who, &r, &n, &c->err);

	if (ret < 0)
		return ret;
	o = A(&c->arena, sizeof(*o));
	muster__v1__fair_share_response__init(o);
	o->items = A(&c->arena, n * sizeof(*o->items));
	for (size_t i = 0; i < n; i++) {
		Muster__V1__FairShareRow *x = A(&c->arena, sizeof(*x));

		muster__v1__fair_share_row__init(x);
		x->tenant = S(&c->arena, r[i].tenant);
		x->user = S(&c->arena, r[i].user);
		x->path = S(&c->arena, r[i].path);
		x->shares = r[i].shares;
		x->norm_shares = r[i].norm_shares;
		x->raw_usage = r[i].raw_usage;
		x->decayed_usage = r[i].decayed_usage;
		x->norm_usage = r[i].norm_usage;
		x->level_fs = r[i].level_fs;
		x->fairshare = r[i].fairshare;
		o->items[o->n_items++] = x;
	}
	c->resp = &o->base;
	return 0;
}

#define SCHED(m, route, req, fn)                                                                  \
	{ "/muster.v1.SchedulerService/" m, GK_UNARY, route##_roles, &muster__v1__##req##__descriptor, \
	  fn, NULL, 0 }

const struct gmethod grpc_sched_methods[] = {
	SCHED("GetStatus", rest_sched_status, get_status_request, status_run),
	SCHED("Explain", rest_sched_explain, explain_request, explain_run),
	SCHED("DryRun", rest_sched_dry_run, dry_run_request, dry_run_run),
	SCHED("Usage", rest_sched_usage, usage_request, usage_run),
	SCHED("FairShare", rest_sched_fairshare, fair_share_request, fairshare_run),
	{ NULL, 0, 0, NULL, NULL, NULL, 0 },
};
