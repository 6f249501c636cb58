/* store_jobctl.c - hold, release, requeue and update of jobs; see store_job.h. */
#include "store_job.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "store_job_int.h"

/* Every change makes a new version, even two in one transaction or within
 * one microsecond of the clock: If-Match must see it. */
#define BUMP "updated_at = greatest(clock_timestamp(), updated_at + interval '1 microsecond')"

/* The locked row every change starts from. */
struct locked {
	char state[16];
	int64_t etag;
	int64_t tenant_id;
	int64_t nodes, min_nodes, time_limit;
	char pclass[64];
	bool held;
};

static int lock_job(PGconn *c, const char *scope, const char *idb, const int64_t *if_match,
		    struct locked *l, struct mu_error *err)
{
	static const char sql[] =
		"SELECT j.state, (extract(epoch FROM j.updated_at) * 1000000)::bigint, j.tenant_id,"
		"       j.nodes, coalesce(j.min_nodes, 0), j.time_limit, pc.name, j.held"
		JOB_FROM " WHERE j.id = $1::bigint AND " IN_SCOPE("$2") " FOR UPDATE OF j";
	const char *p[2] = { idb, scope };
	PGresult *r = NULL;
	int ret;

	ret = store_db_exec(c, sql, 2, p, &r, err);
	if (ret < 0)
		goto out;
	if (store_db_nrows(r) != 1) {
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no such job");
		goto out;
	}
	snprintf(l->state, sizeof(l->state), "%s", store_db_get(r, 0, 0));
	l->etag = store_db_get_int64(r, 0, 1);
	l->tenant_id = store_db_get_int64(r, 0, 2);
	l->nodes = store_db_get_int64(r, 0, 3);
	l->min_nodes = store_db_get_int64(r, 0, 4);
	l->time_limit = store_db_get_int64(r, 0, 5);
	snprintf(l->pclass, sizeof(l->pclass), "%s", store_db_get(r, 0, 6));
	l->held = store_db_get_bool(r, 0, 7);
	if (if_match && *if_match != l->etag)
		ret = mu_error_set(err, MU_EPRECONDITION, "If-Match",
				   "the job changed since that version (now \"%lld\")", (long long)l->etag);
out:
	store_db_clear(r);
	return ret;
}

static int read_job(PGconn *c, struct mu_arena *a, const char *idb, struct store_job *out,
		    struct mu_error *err)
{
	static const char sql[] = "SELECT " JOB_COLS JOB_FROM " WHERE j.id = $1::bigint";
	const char *p[1] = { idb };
	PGresult *r = NULL;
	int ret = store_db_exec(c, sql, 1, p, &r, err);

	if (!ret && store_db_nrows(r) == 1)
		store__job_row(a, r, 0, 0, out);
	else if (!ret)
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no such job");
	store_db_clear(r);
	return ret;
}

static int notify(PGconn *c, const char *what, const char *idb, struct mu_error *err)
{
	const char *p[2] = { what, idb };

	return store_db_exec(c, "SELECT pg_notify('muster_sched', $1 || ':' || $2)", 2, p, NULL, err);
}

/* ---- hold / release / requeue ---------------------------------------------- */

struct ctl_arg {
	struct mu_arena *a;
	const char *scope;
	int64_t id;
	enum store_job_ctl op;
	const int64_t *if_match;
	const char *who;
	struct store_job *out;
};

static int requeue(PGconn *c, const char *idb, const char *who, struct mu_error *err)
{
	static const char busy_sql[] =
		"SELECT stop_reason FROM runs WHERE job_id = $1::bigint AND live AND stop_reason <> ''"
		" ORDER BY id LIMIT 1";
	static const char sql[] =
		"WITH r AS (UPDATE runs SET state = 'STOPPING', stop_reason = 'requeue',"
		"   stop_requested_at = now() WHERE job_id = $1::bigint AND live"
		"   AND state IN ('STARTING', 'RUNNING') AND ended_at IS NULL RETURNING id),"
		" j AS (UPDATE jobs SET " BUMP " WHERE id = $1::bigint RETURNING id, tenant_id),"
		" ev AS (INSERT INTO events (kind, tenant_id, job_id, run_id, reason, data)"
		"   SELECT 'job.requeue_requested', j.tenant_id, j.id, (SELECT min(id) FROM r), 'requeue',"
		"   jsonb_build_object('by', $2::text) FROM j),"
		" nt AS (SELECT pg_notify('muster_agents', n.name) FROM nodes n WHERE n.id IN"
		"   (SELECT a.node_id FROM run_allocations a WHERE a.live AND a.run_id IN (SELECT id FROM r)))"
		" SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM nt)";
	const char *p[2] = { idb, who };
	char reason[32];
	int ret;

	ret = store_db_query_text(c, busy_sql, 1, p, reason, sizeof(reason), err);
	if (ret == 0 && !strcmp(reason, "requeue"))
		return 0; /* asked already: the same answer again */
	if (ret == 0)
		return mu_error_set(err, MU_ESTATE, "", "the job is already stopping (%s)", reason);
	if (ret != MU_ENOTFOUND)
		return ret;
	mu_error_clear(err);
	return store_db_exec(c, sql, 2, p, NULL, err);
}

static int ctl_tx(PGconn *c, void *arg, struct mu_error *err)
{
	static const char hold_sql[] =
		"WITH u AS (UPDATE jobs SET held = true, pending_reason = 'Held',"
		"   pending_message = 'held by ' || $2::text, planned_start = NULL, " BUMP
		"   WHERE id = $1::bigint RETURNING id, tenant_id)"
		" INSERT INTO events (kind, tenant_id, job_id, reason, data)"
		" SELECT 'job.held', tenant_id, id, 'hold', jsonb_build_object('by', $2::text) FROM u";
	static const char release_sql[] =
		"WITH u AS (UPDATE jobs SET held = false, pending_reason = CASE WHEN begin_at > now()"
		"   THEN 'BeginTime' ELSE 'Priority' END, pending_message = '', planned_start = NULL, " BUMP
		"   WHERE id = $1::bigint RETURNING id, tenant_id)"
		" INSERT INTO events (kind, tenant_id, job_id, reason, data)"
		" SELECT 'job.released', tenant_id, id, 'release', jsonb_build_object('by', $2::text) FROM u";
	struct ctl_arg *ca = arg;
	const char *who = ca->who ? ca->who : "";
	const char *p[2];
	struct locked l;
	char idb[24];
	int ret;

	snprintf(idb, sizeof(idb), "%lld", (long long)ca->id);
	ret = lock_job(c, ca->scope, idb, ca->if_match, &l, err);
	if (ret < 0)
		return ret;
	p[0] = idb;
	p[1] = who;
	switch (ca->op) {
	case STORE_JOB_HOLD:
	case STORE_JOB_RELEASE:
		if (strcmp(l.state, "PENDING"))
			return mu_error_set(err, MU_ESTATE, "", "only a pending job can be %s; this one is %s",
					    ca->op == STORE_JOB_HOLD ? "held" : "released", l.state);
		if (l.held == (ca->op == STORE_JOB_HOLD))
			break; /* already so: nothing changes, no event */
		ret = store_db_exec(c, ca->op == STORE_JOB_HOLD ? hold_sql : release_sql, 2, p, NULL, err);
		if (!ret)
			ret = notify(c, ca->op == STORE_JOB_HOLD ? "hold" : "release", idb, err);
		break;
	case STORE_JOB_REQUEUE:
		if (strcmp(l.state, "STARTING") && strcmp(l.state, "RUNNING"))
			return mu_error_set(err, MU_ESTATE, "",
					    "only a starting or running job can be requeued; this one is %s",
					    l.state);
		ret = requeue(c, idb, who, err);
		if (!ret)
			ret = notify(c, "requeue", idb, err);
		break;
	}
	if (ret < 0)
		return ret;
	return read_job(c, ca->a, idb, ca->out, err);
}

int store_job_control(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
		      enum store_job_ctl op, const int64_t *if_match, const char *who,
		      struct store_job *out, struct mu_error *err)
{
	struct ctl_arg ca = { a, scope, id, op, if_match, who, out };

	return store_db_tx(c, NULL, 0, ctl_tx, &ca, err);
}

/* ---- update ------------------------------------------------------------------ */

struct upd_arg {
	struct mu_arena *a;
	const char *scope;
	int64_t id;
	const struct store_job_patch *p;
	const int64_t *if_match;
	const char *who;
	struct store_job *out;
	struct admit_problem *pb;
};

/* The admission checks of the fields the PATCH changes (admit_update):
 * min_nodes <= nodes, the time limit against the (new) class's and the tenant's maximum, the
 * class exists, every dependency names a job the caller sees and never the
 * job itself. The facts in two set-based reads. */
static int check_admit(PGconn *c, const struct upd_arg *ua, const struct locked *l,
		       const char *tid, int64_t *class_id, struct mu_error *err)
{
	static const char class_sql[] =
		"SELECT pc.id, pc.name, coalesce(pc.max_time_limit, 0)::bigint,"
		"       coalesce((SELECT q.max_time_limit FROM quotas q WHERE q.tenant_id = $2::bigint"
		"                 AND q.gpu_model = ''), 0)::bigint"
		"  FROM priority_classes pc WHERE pc.name = $1";
	/* each job named, its tenant path, and whether it already depends
	 * (through any chain of stored dependencies) on the job itself */
	static const char deps_sql[] =
		"WITH RECURSIVE r(root, id) AS ("
		"  SELECT x, x FROM unnest($1::bigint[]) x"
		"  UNION"
		"  SELECT r.root, (d->>'job_id')::bigint FROM r JOIN jobs j ON j.id = r.id"
		"    CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(j.dependencies) = 'array'"
		"      THEN j.dependencies ELSE '[]'::jsonb END) d"
		"   WHERE jsonb_typeof(d->'job_id') = 'number' AND r.id <> $2::bigint)"
		"SELECT j.id, t.path, EXISTS (SELECT 1 FROM r WHERE r.root = j.id AND r.id = $2::bigint)"
		"  FROM jobs j JOIN tenants t ON t.id = j.tenant_id WHERE j.id = ANY($1::bigint[])";
	const struct store_job_patch *pt = ua->p;
	const char *p[2] = { pt->has_class ? pt->priority_class : l->pclass, tid };
	struct admit_class pc = { 0 };
	struct admit_tenant t = { .path = "" };
	struct admit_facts f = { .scope = ua->scope, .classes = &pc };
	struct admit_job j = {
		.priority_class = p[0],
		.time_limit = pt->has_time_limit ? pt->time_limit : l->time_limit,
		.dep_ids = pt->dep_ids, .ndeps = pt->has_deps ? pt->ndeps : 0, .self_id = ua->id,
		.nodes = pt->has_nodes ? pt->nodes : l->nodes,
		.min_nodes = pt->has_min_nodes ? pt->min_nodes : l->min_nodes,
	};
	struct admit_result res;
	struct admit_problem pb;
	struct mu_buf ids = MU_BUF_INIT;
	const char **paths = NULL;
	bool *cycles = NULL;
	char self[24];
	PGresult *r = NULL;
	int ret;

	ret = store_db_exec(c, class_sql, 2, p, &r, err);
	if (ret < 0)
		goto out;
	if (store_db_nrows(r) == 1) {
		*class_id = store_db_get_int64(r, 0, 0);
		pc.name = mu_arena_strdup(ua->a, store_db_get(r, 0, 1));
		pc.max_time = store_db_get_int64(r, 0, 2);
		t.max_time = store_db_get_int64(r, 0, 3);
		f.nclasses = 1;
	}
	store_db_clear(r);
	r = NULL;
	if (j.ndeps) {
		store__int_array(&ids, j.dep_ids, j.ndeps);
		snprintf(self, sizeof(self), "%lld", (long long)ua->id);
		p[0] = ids.p;
		p[1] = self;
		ret = store_db_exec(c, deps_sql, 2, p, &r, err);
		if (ret < 0)
			goto out;
		paths = mu_arena_alloc(ua->a, sizeof(*paths) * j.ndeps);
		cycles = mu_arena_alloc(ua->a, sizeof(*cycles) * j.ndeps);
		for (size_t d = 0; d < j.ndeps; d++) {
			paths[d] = NULL;
			cycles[d] = false;
			for (int i = 0; i < store_db_nrows(r); i++)
				if (store_db_get_int64(r, i, 0) == j.dep_ids[d]) {
					paths[d] = mu_arena_strdup(ua->a, store_db_get(r, i, 1));
					cycles[d] = store_db_get_bool(r, i, 2);
				}
		}
		j.dep_paths = paths;
		j.dep_cycles = cycles;
	}
	if (admit_update(&f, &t, &j,
			 (pt->has_time_limit ? ADMIT_CHANGED_TIME : 0u) | (pt->has_deps ? ADMIT_CHANGED_DEPS : 0u) |
				 (pt->has_min_nodes ? ADMIT_CHANGED_MIN_NODES : 0u),
			 &res, &pb) < 0) {
		if (ua->pb)
			*ua->pb = pb;
		ret = mu_error_set(err, pb.code, "", "%s", pb.msg);
	}
out:
	store_db_clear(r);
	mu_buf_release(&ids);
	return ret;
}

static int upd_tx(PGconn *c, void *arg, struct mu_error *err)
{
	static const char sql[] =
		"WITH u AS (UPDATE jobs SET"
		"   time_limit = coalesce($2::int, time_limit),"
		"   priority_class_id = coalesce($3::int, priority_class_id),"
		"   nodes = coalesce($4::int, nodes),"
		"   min_nodes = CASE WHEN $5::bool THEN nullif($6::int, 0) ELSE min_nodes END,"
		"   gpus_per_node = coalesce($7::int, gpus_per_node),"
		"   dependencies = coalesce($8::jsonb, dependencies),"
		"   labels = coalesce($9::jsonb, labels),"
		"   begin_at = CASE WHEN $10::bool THEN CASE WHEN $11::bigint > 0"
		"     THEN to_timestamp($11::bigint) END ELSE begin_at END,"
		"   name = coalesce($12::text, name),"
		"   pending_reason = CASE WHEN held THEN 'Held' WHEN (CASE WHEN $10::bool THEN"
		"     CASE WHEN $11::bigint > 0 THEN to_timestamp($11::bigint) END ELSE begin_at END) > now()"
		"     THEN 'BeginTime' ELSE 'Priority' END,"
		"   pending_message = CASE WHEN held THEN pending_message ELSE '' END,"
		"   planned_start = NULL, " BUMP
		"   WHERE id = $1::bigint RETURNING id, tenant_id)"
		" INSERT INTO events (kind, tenant_id, job_id, reason, data)"
		" SELECT 'job.updated', tenant_id, id, 'update',"
		"   jsonb_build_object('by', $13::text, 'fields', $14::jsonb) FROM u";
	struct upd_arg *ua = arg;
	const struct store_job_patch *pt = ua->p;
	char idb[24], tid[24], cid[24], tl[24], nn[24], mn[24], gp[24], bg[24];
	const char *p[14];
	int64_t class_id = 0;
	struct locked l;
	int ret;

	snprintf(idb, sizeof(idb), "%lld", (long long)ua->id);
	ret = lock_job(c, ua->scope, idb, ua->if_match, &l, err);
	if (ret < 0)
		return ret;
	if (strcmp(l.state, "PENDING"))
		return mu_error_set(err, MU_ESTATE, "", "only a pending job can be updated; this one is %s",
				    l.state);
	snprintf(tid, sizeof(tid), "%lld", (long long)l.tenant_id);
	ret = check_admit(c, ua, &l, tid, &class_id, err);
	if (ret < 0)
		return ret;
	snprintf(cid, sizeof(cid), "%lld", (long long)class_id);
	snprintf(tl, sizeof(tl), "%lld", (long long)pt->time_limit);
	snprintf(nn, sizeof(nn), "%lld", (long long)pt->nodes);
	snprintf(mn, sizeof(mn), "%lld", (long long)pt->min_nodes);
	snprintf(gp, sizeof(gp), "%lld", (long long)pt->gpus_per_node);
	snprintf(bg, sizeof(bg), "%lld", (long long)pt->begin);
	p[0] = idb;
	p[1] = pt->has_time_limit ? tl : NULL;
	p[2] = pt->has_class ? cid : NULL;
	p[3] = pt->has_nodes ? nn : NULL;
	p[4] = pt->has_min_nodes ? "true" : "false";
	p[5] = mn;
	p[6] = pt->has_gpus ? gp : NULL;
	p[7] = pt->has_deps ? pt->dependencies : NULL;
	p[8] = pt->has_labels ? pt->labels : NULL;
	p[9] = pt->has_begin ? "true" : "false";
	p[10] = bg;
	p[11] = pt->has_name ? pt->name : NULL;
	p[12] = ua->who ? ua->who : "";
	p[13] = pt->fields ? pt->fields : "[]";
	ret = store_db_exec(c, sql, 14, p, NULL, err);
	if (!ret)
		ret = notify(c, "update", idb, err);
	if (ret < 0)
		return ret;
	return read_job(c, ua->a, idb, ua->out, err);
}

int store_job_update(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
		     const struct store_job_patch *p, const int64_t *if_match, const char *who,
		     struct store_job *out, struct admit_problem *pb, struct mu_error *err)
{
	struct upd_arg ua = { a, scope, id, p, if_match, who, out, pb };

	return store_db_tx(c, NULL, 0, upd_tx, &ua, err);
}

/* ---- cancel of a whole array ----------------------------------------------- */

struct carr_arg {
	struct mu_arena *a;
	const char *scope;
	int64_t id;
	const char *who;
	struct store_job *out;
	int64_t *n;
};

static int carr_tx(PGconn *c, void *arg, struct mu_error *err)
{
	static const char lock_sql[] =
		"SELECT count(*), count(*) FILTER (WHERE x.state IN ('PENDING', 'STARTING', 'RUNNING'))"
		"  FROM (SELECT j.state FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
		"   WHERE j.array_job_id = $1::bigint AND " IN_SCOPE("$2")
		"   ORDER BY j.id FOR UPDATE OF j) x";
	static const char pending_sql[] =
		"WITH u AS (UPDATE jobs SET " CANCEL_PENDING_SET
		"   WHERE array_job_id = $1::bigint AND state = 'PENDING' RETURNING id, tenant_id) "
		CANCELLED_EVENTS("$2");
	static const char running_sql[] =
		"WITH u AS (UPDATE runs SET state = CASE WHEN state IN ('STARTING', 'RUNNING')"
		"   THEN 'STOPPING' ELSE state END,"
		"   " CANCEL_STOP_REASON ","
		"   stop_requested_at = coalesce(stop_requested_at, now())"
		"   WHERE live AND job_id IN (SELECT id FROM jobs WHERE array_job_id = $1::bigint"
		"     AND state IN ('STARTING', 'RUNNING')) RETURNING id, job_id)"
		" INSERT INTO events (kind, tenant_id, job_id, run_id, reason, data)"
		" SELECT 'job.cancel_requested', j.tenant_id, j.id, u.id, 'cancel',"
		"        jsonb_build_object('by', $2::text) FROM u JOIN jobs j ON j.id = u.job_id";
	struct carr_arg *ca = arg;
	char idb[24];
	const char *p[2] = { idb, ca->scope };
	PGresult *r = NULL;
	int ret;

	snprintf(idb, sizeof(idb), "%lld", (long long)ca->id);
	ret = store_db_exec(c, lock_sql, 2, p, &r, err);
	if (ret < 0)
		goto out;
	if (!store_db_get_int64(r, 0, 0)) {
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no such job array");
		goto out;
	}
	*ca->n = store_db_get_int64(r, 0, 1);
	if (!*ca->n) {
		ret = mu_error_set(err, MU_ESTATE, "", "every task of the array already ended");
		goto out;
	}
	p[1] = ca->who ? ca->who : "";
	ret = store_db_exec(c, pending_sql, 2, p, NULL, err);
	if (!ret)
		ret = store_db_exec(c, running_sql, 2, p, NULL, err);
	if (!ret)
		ret = notify(c, "cancel", idb, err);
	if (!ret)
		ret = read_job(c, ca->a, idb, ca->out, err);
out:
	store_db_clear(r);
	return ret;
}

int store_job_cancel_array(PGconn *c, struct mu_arena *a, const char *scope, int64_t array_job_id,
			   const char *who, struct store_job *out, int64_t *ncancelled,
			   struct mu_error *err)
{
	struct carr_arg ca = { a, scope, array_job_id, who, out, ncancelled };

	return store_db_tx(c, NULL, 0, carr_tx, &ca, err);
}

/* ---- cancel of many ids in one transaction --------------------------------- */

struct cmany_arg {
	struct mu_arena *a;
	const char *scope;
	bool array;
	const char *who;
	struct store_job_cancel_item *items;
	size_t n;
};

static int cmany_tx(PGconn *c, void *arg, struct mu_error *err)
{
	struct cmany_arg *m = arg;
	int64_t *ids = mu_arena_alloc(m->a, m->n * sizeof(*ids));
	bool *done = mu_arena_alloc(m->a, m->n * sizeof(*done));
	int ret;

	/* The common case, pending lone jobs, in one statement; the rest (arrays,
	 * running jobs, ids not found or ended) one by one as their own cancel. */
	for (size_t i = 0; i < m->n; i++) {
		ids[i] = m->items[i].id;
		done[i] = false;
	}
	ret = store__job_cancel_pending_in_tx(c, m->scope, ids, m->n, m->array, m->who, done, err);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < m->n; i++) {
		struct store_job_cancel_item *it = &m->items[i];
		struct store_job job;

		mu_error_clear(&it->err);
		it->tasks = 0;
		if (done[i]) {
			it->code = 0;
			it->state = "CANCELLED";
			continue;
		}
		ret = MU_ENOTFOUND;
		if (m->array) {
			struct carr_arg ca = { m->a, m->scope, it->id, m->who, &job, &it->tasks };

			ret = carr_tx(c, &ca, &it->err);
			if (ret == MU_ENOTFOUND)
				mu_error_clear(&it->err);
		}
		if (ret == MU_ENOTFOUND) {
			it->tasks = 0;
			ret = store__job_cancel_in_tx(c, m->a, m->scope, it->id, m->who, &job,
						      &it->err);
		}
		it->state = ret < 0 ? NULL : job.state;
		/* not found / ended wrote nothing; anything else ends the transaction */
		if (ret < 0 && ret != MU_ENOTFOUND && ret != MU_ESTATE) {
			*err = it->err;
			return ret;
		}
		it->code = ret;
	}
	return 0;
}

int store_job_cancel_many(PGconn *c, struct mu_arena *a, const char *scope, bool array,
			  const char *who, struct store_job_cancel_item *items, size_t n,
			  struct mu_error *err)
{
	struct cmany_arg m = { a, scope, array, who, items, n };

	return store_db_tx(c, NULL, 0, cmany_tx, &m, err);
}
