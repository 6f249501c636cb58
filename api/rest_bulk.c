/*
 * rest_bulk.c - one request for many jobs: POST /v1/jobs/cancel
 * {"ids":[...], "array":bool} cancels each id as POST /v1/jobs/{id}/cancel
 * (?array=true when "array" is true) would, and answers each id's outcome
 * Not all or nothing: an id that fails (not found, ended) changes nothing
 * and the others go on, all in one transaction (store_job_cancel_many: one
 * commit); an id outside the caller's scope is "not found", never touched. `muster cancel 1 2 3` uses it (scancel's many ids, one round trip).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "jv.h"
#include "rest.h"
#include "rest_server.h"
#include "ops_jobs.h"

#define BULK_MAX_IDS 10000

struct bulk {
	int64_t *ids;
	size_t n;
	bool array;
};

static int cancel_all(PGconn *db, struct rest_req *rq, void *arg)
{
	struct bulk *bk = arg;
	struct store_job_cancel_item *items = mu_arena_alloc(rq->arena, bk->n * sizeof(*items));
	struct mu_buf b = MU_BUF_INIT;
	size_t ok = 0;
	int ret;

	for (size_t i = 0; i < bk->n; i++)
		items[i].id = bk->ids[i];
	ret = ops_job_cancel_many(db, rq->arena, &rq->who, bk->array, items, bk->n, &rq->err);
	if (ret < 0)
		return ret;
	mu_buf_adds(&b, "{\"results\":[");
	for (size_t i = 0; i < bk->n; i++) {
		mu_buf_addf(&b, "%s{\"id\":%lld,", i ? "," : "", (long long)items[i].id);
		if (items[i].code < 0) {
			mu_buf_adds(&b, "\"ok\":false,\"problem\":");
			rest_problem_render(&items[i].err, items[i].code, &b);
		} else {
			ok++;
			mu_buf_adds(&b, "\"ok\":true,\"state\":");
			mu_buf_add_json_strz(&b, items[i].state);
			if (items[i].tasks)
				mu_buf_addf(&b, ",\"tasks_cancelled\":%lld", (long long)items[i].tasks);
		}
		mu_buf_addc(&b, '}');
	}
	mu_buf_addf(&b, "],\"cancelled\":%zu,\"failed\":%zu}", ok, bk->n - ok);
	rest_result_text(rq, 200, "application/json", b.p, b.len);
	mu_buf_release(&b);
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* {"ids": [1..10,000 distinct job ids], "array": bool (optional)} */
static int parse(struct rest_req *rq, json_t *body, struct bulk *bk)
{
	static const char *const fields[] = { "ids", "array", NULL };
	json_t *ids;
	size_t i;
	json_t *v;
	int ret = jv_object(body, fields, "", "", &rq->err);

	if (ret < 0)
		return ret;
	ret = jv_bool(body, "array", false, &bk->array, "", &rq->err);
	if (ret < 0)
		return ret;
	ids = json_object_get(body, "ids");
	if (!ids || json_is_null(ids))
		return mu_error_set(&rq->err, MU_EMISSING, "ids", "required");
	if (!json_is_array(ids))
		return mu_error_set(&rq->err, MU_ETYPE, "ids", "must be an array of job ids");
	bk->n = json_array_size(ids);
	if (bk->n < 1 || bk->n > BULK_MAX_IDS)
		return mu_error_set(&rq->err, MU_ERANGE, "ids", "must hold 1..%d job ids", BULK_MAX_IDS);
	bk->ids = mu_arena_alloc(rq->arena, bk->n * sizeof(*bk->ids));
	json_array_foreach(ids, i, v) {
		char field[48];

		snprintf(field, sizeof(field), "ids.%zu", i);
		if (!json_is_integer(v))
			return mu_error_set(&rq->err, MU_ETYPE, field, "must be a job id (an integer)");
		bk->ids[i] = json_integer_value(v);
		if (bk->ids[i] < 1)
			return mu_error_set(&rq->err, MU_ERANGE, field, "must be a job id (>= 1)");
	}
	/* Distinct: a repeated id would be cancelled, then "already ended". */
	{
		int64_t *s = mu_arena_alloc(rq->arena, bk->n * sizeof(*s));

		memcpy(s, bk->ids, bk->n * sizeof(*s));
		qsort(s, bk->n, sizeof(*s), cmp_id);
		for (i = 1; i < bk->n; i++)
			if (s[i] == s[i - 1])
				return mu_error_set(&rq->err, MU_EINVAL, "ids", "job %lld is listed twice",
						    (long long)s[i]);
	}
	return 0;
}

int rest_jobs_cancel_many(struct rest_req *rq)
{
	struct bulk *bk = mu_arena_alloc(rq->arena, sizeof(*bk));
	json_t *body = NULL;
	int ret;

	memset(bk, 0, sizeof(*bk));
	ret = rest_body_json(rq, &body);
	if (ret < 0)
		return ret;
	ret = parse(rq, body, bk);
	json_decref(body);
	if (ret < 0)
		return ret;
	return rest_defer(rq, cancel_all, NULL, bk);
}
