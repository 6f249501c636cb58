/*
 * rest_quotas.c - /v1/tenants/{name}/quota (PUT replaces one quota, GET
 * lists the tenant's, DELETE removes one by ?gpu_model=) and /v1/quotas
 * (every visible quota). Writes are admin-only; reads are scoped.
 */
#include <string.h>

#include "codec_admin.h"
#include "ops_admin.h"
#include "ops_admin_read.h"
#include "rest.h"
#include "store_quota.h"

struct quota_op {
	const char *tenant;
	const char *scope;
	const char *cursor;
	const char *gpu_model;
	int limit;
	struct store_quota q;
};

static struct quota_op *op_new(struct rest_req *rq)
{
	struct quota_op *op = mu_arena_alloc(rq->arena, sizeof(*op));
	op->tenant = rest_param(rq, "name");
	op->scope = rest_scope_path(rq);
	return op;
}

static json_t *encode_items(const struct store_quota_page *page)
{
	json_t *items = json_array();
	for (size_t i = 0; i < page->n; i++)
		json_array_append_new(items, codec_quota_encode(&page->items[i]));
	return items;
}

static int put_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct quota_op *op = arg;
	struct store_quota out;
	int ret = ops_quota_put(db, rq->arena, &rq->who, &op->q, &out, &rq->err);
	if (ret < 0)
		return ret;
	rest_result(rq, 200, codec_quota_encode(&out));
	return 0;
}

int rest_quotas_put(struct rest_req *rq)
{
	static const char *const none[] = { NULL };
	struct quota_op *op = op_new(rq);
	json_t *body;
	int ret;

	if ((ret = rest_query_check(rq, none)) < 0 || (ret = ops_name_check(op->tenant, "tenant", &rq->err)) < 0 ||
	    (ret = rest_body_json(rq, &body)) < 0)
		return ret;
	ret = codec_quota_decode(body, &op->q, &rq->err);
	op->q.gpu_model = op->q.gpu_model ? mu_arena_strdup(rq->arena, op->q.gpu_model) : "";
	op->q.tenant = op->tenant;
	json_decref(body);
	if (ret < 0)
		return ret;
	return rest_defer(rq, put_db, NULL, op);
}

static int get_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct quota_op *op = arg;
	struct store_quota_page page;
	int ret = ops_quota_get(db, rq->arena, &rq->who, op->tenant, &page, &rq->err);
	if (ret < 0)
		return ret;
	rest_result(rq, 200, codec_page_encode(encode_items(&page), NULL));
	return 0;
}

int rest_quotas_get(struct rest_req *rq)
{
	static const char *const none[] = { NULL };
	struct quota_op *op = op_new(rq);
	int ret;

	if ((ret = rest_query_check(rq, none)) < 0)
		return ret;
	return rest_defer(rq, get_db, NULL, op);
}

static int delete_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct quota_op *op = arg;
	int ret = ops_quota_delete(db, &rq->who, op->tenant, op->gpu_model, &rq->err);
	if (ret < 0)
		return ret;
	rest_result(rq, 204, NULL);
	return 0;
}

int rest_quotas_delete(struct rest_req *rq)
{
	static const char *const q[] = { "gpu_model", NULL };
	struct quota_op *op = op_new(rq);
	int ret;

	if ((ret = rest_query_check(rq, q)) < 0 || (ret = ops_name_check(op->tenant, "tenant", &rq->err)) < 0)
		return ret;
	op->gpu_model = rest_query(rq, "gpu_model");
	if (!op->gpu_model)
		op->gpu_model = "";
	if ((ret = ops_gpu_model_check(op->gpu_model, &rq->err)) < 0)
		return ret;
	return rest_defer(rq, delete_db, NULL, op);
}

static int list_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct quota_op *op = arg;
	struct store_quota_page page;
	struct ops_page_args pg = { op->limit, op->cursor };
	int ret = ops_quota_list(db, rq->arena, &rq->who, &pg, &page, &rq->err);
	if (ret < 0)
		return ret;
	rest_result(rq, 200, codec_page_encode(encode_items(&page), page.next_cursor));
	return 0;
}

int rest_quotas_list(struct rest_req *rq)
{
	static const char *const q[] = { "limit", "cursor", NULL };
	struct quota_op *op = op_new(rq);
	int ret;

	if ((ret = rest_query_check(rq, q)) < 0 ||
	    (ret = codec_limit_decode(rest_query(rq, "limit"), &op->limit, &rq->err)) < 0)
		return ret;
	op->cursor = rest_query(rq, "cursor");
	return rest_defer(rq, list_db, NULL, op);
}
