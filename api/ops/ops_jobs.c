/*
 * ops_jobs.c - the job operations shared by REST and gRPC (ops_jobs.h).
 */
#include "ops_jobs.h"

#include <stdio.h>

#include "codec_job.h"

void ops_actor(const struct ops_principal *p, char *buf, size_t size)
{
	if (p->user && *p->user)
		snprintf(buf, size, "token:%lld (%s)", (long long)p->token_id, p->user);
	else
		snprintf(buf, size, "token:%lld", (long long)p->token_id);
}

int ops_job_id_check(int64_t id, struct mu_error *err)
{
	if (id < 1)
		return mu_error_set(err, MU_ENOTFOUND, "", "no such job");
	return 0;
}

static void redact(const struct ops_principal *p, struct mu_arena *a, struct store_job *j)
{
	if (!ops_job_env_visible(p, j->user))
		codec_job_redact_env(j, a);
}

int ops_job_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p, int64_t id,
		struct store_job *out, struct mu_error *err)
{
	int ret = store_job_get(db, a, ops_scope_path(p), id, out, err);

	if (ret < 0)
		return ret;
	redact(p, a, out);
	return 0;
}

int ops_job_list(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		 const struct store_job_filter *f, struct store_job_page *out, struct mu_error *err)
{
	int ret = store_job_list(db, a, ops_scope_path(p), f, out, err);

	if (ret < 0)
		return ret;
	for (size_t i = 0; i < out->n; i++)
		redact(p, a, &out->items[i]);
	return 0;
}

int ops_job_cancel(PGconn *db, struct mu_arena *a, const struct ops_principal *p, int64_t id,
		   bool array, struct store_job *out, struct mu_error *err)
{
	char who[128];
	int ret;

	ops_actor(p, who, sizeof(who));
	if (array) {
		int64_t n = 0;

		ret = store_job_cancel_array(db, a, ops_scope_path(p), id, who, out, &n, err);
		if (ret != MU_ENOTFOUND)
			goto done;
		mu_error_clear(err); /* not an array: the job alone */
	}
	ret = store_job_cancel(db, a, ops_scope_path(p), id, who, out, err);
done:
	if (ret < 0)
		return ret;
	redact(p, a, out);
	return 0;
}

int ops_job_control(PGconn *db, struct mu_arena *a, const struct ops_principal *p, int64_t id,
		    enum store_job_ctl op, const int64_t *if_match, struct store_job *out,
		    struct mu_error *err)
{
	char who[128];
	int ret;

	ops_actor(p, who, sizeof(who));
	ret = store_job_control(db, a, ops_scope_path(p), id, op, if_match, who, out, err);
	if (ret < 0)
		return ret;
	redact(p, a, out);
	return 0;
}

int ops_job_cancel_many(PGconn *db, struct mu_arena *a, const struct ops_principal *p, bool array,
			struct store_job_cancel_item *items, size_t n, struct mu_error *err)
{
	char who[128];

	ops_actor(p, who, sizeof(who));
	return store_job_cancel_many(db, a, ops_scope_path(p), array, who, items, n, err);
}

int ops_job_update(PGconn *db, struct mu_arena *a, const struct ops_principal *p, int64_t id,
		   const struct store_job_patch *patch, const int64_t *if_match,
		   struct store_job *out, struct mu_error *err)
{
	struct admit_problem pb = { 0 };
	char who[128];
	int ret;

	ops_actor(p, who, sizeof(who));
	ret = store_job_update(db, a, ops_scope_path(p), id, patch, if_match, who, out, &pb, err);
	if (ret < 0) {
		codec_job_problem_field(&pb, false, err);
		return ret;
	}
	redact(p, a, out);
	return 0;
}
