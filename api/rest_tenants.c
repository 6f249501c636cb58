/*
 * rest_tenants.c - /v1/tenants: create, list, get, update (including
 * moving a subtree), delete. Writes are admin-only (routes.def); reads are
 * scoped to the caller's subtree, and a tenant outside it answers 404.
 */
#include <string.h>

#include "codec_admin.h"
#include "ops_admin.h"
#include "ops_admin_read.h"
#include "rest.h"
#include "store_tenant.h"

struct tenant_op {
	const char *name;
	const char *scope;
	const char *cursor;
	int limit;
	struct store_tenant_new in;
	struct store_tenant_patch patch;
};

static struct tenant_op *op_new(struct rest_req *rq)
{
	struct tenant_op *op = mu_arena_alloc(rq->arena, sizeof(*op));
	op->name = rest_param(rq, "name");
	op->scope = rest_scope_path(rq);
	return op;
}

/* Decoded strings are borrowed from the body: copy them into the request
 * arena so the body can go before the work is queued. */
static const char *adup(struct rest_req *rq, const char *s)
{
	return s ? mu_arena_strdup(rq->arena, s) : NULL;
}

static int no_query(struct rest_req *rq)
{
	static const char *const none[] = { NULL };
	return rest_query_check(rq, none);
}

static int reply_tenant(struct rest_req *rq, int status, const struct store_tenant *t)
{
	if (status == 201) {
		char *loc = mu_arena_alloc(rq->arena, strlen(t->name) + 16);
		memcpy(loc, "/v1/tenants/", 12);
		memcpy(loc + 12, t->name, strlen(t->name) + 1);
		rest_add_header(rq, "location", loc);
	}
	rest_result(rq, status, codec_tenant_encode(t));
	return 0;
}

static int create_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct tenant_op *op = arg;
	struct store_tenant t;
	int ret = ops_tenant_create(db, rq->arena, &rq->who, &op->in, &t, &rq->err);
	return ret < 0 ? ret : reply_tenant(rq, 201, &t);
}

int rest_tenants_create(struct rest_req *rq)
{
	struct tenant_op *op = op_new(rq);

	json_t *body;
	int ret;

	if ((ret = no_query(rq)) < 0 || (ret = rest_body_json(rq, &body)) < 0)
		return ret;
	ret = codec_tenant_new_decode(body, &op->in, &rq->err);
	op->in.name = adup(rq, op->in.name);
	op->in.parent = adup(rq, op->in.parent);
	op->in.description = adup(rq, op->in.description);
	op->in.unix_account = adup(rq, op->in.unix_account);
	json_decref(body);
	if (ret < 0)
		return ret;
	return rest_defer(rq, create_db, NULL, op);
}

static int list_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct tenant_op *op = arg;
	struct store_tenant_page page;
	json_t *items;
	struct ops_page_args pg = { op->limit, op->cursor };
	int ret = ops_tenant_list(db, rq->arena, &rq->who, &pg, &page, &rq->err);

	if (ret < 0)
		return ret;
	items = json_array();
	for (size_t i = 0; i < page.n; i++)
		json_array_append_new(items, codec_tenant_encode(&page.items[i]));
	rest_result(rq, 200, codec_page_encode(items, page.next_cursor));
	return 0;
}

int rest_tenants_list(struct rest_req *rq)
{
	static const char *const q[] = { "limit", "cursor", NULL };
	struct tenant_op *op = op_new(rq);
	int ret;

	if ((ret = rest_query_check(rq, q)) < 0 ||
	    (ret = codec_limit_decode(rest_query(rq, "limit"), &op->limit, &rq->err)) < 0)
		return ret;
	op->cursor = rest_query(rq, "cursor");
	return rest_defer(rq, list_db, NULL, op);
}

static int get_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct tenant_op *op = arg;
	struct store_tenant t;
	int ret = ops_tenant_get(db, rq->arena, &rq->who, op->name, &t, &rq->err);
	return ret < 0 ? ret : reply_tenant(rq, 200, &t);
}

int rest_tenants_get(struct rest_req *rq)
{
	struct tenant_op *op = op_new(rq);
	int ret;

	if ((ret = no_query(rq)) < 0)
		return ret;
	return rest_defer(rq, get_db, NULL, op);
}

static int update_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct tenant_op *op = arg;
	struct store_tenant t;
	int ret = ops_tenant_update(db, rq->arena, op->name, &op->patch, &t, &rq->err);
	return ret < 0 ? ret : reply_tenant(rq, 200, &t);
}

int rest_tenants_update(struct rest_req *rq)
{
	struct tenant_op *op = op_new(rq);
	json_t *body;
	int ret;

	if ((ret = no_query(rq)) < 0 || (ret = ops_name_check(op->name, "tenant", &rq->err)) < 0 ||
	    (ret = rest_body_json(rq, &body)) < 0)
		return ret;
	ret = codec_tenant_patch_decode(body, &op->patch, &rq->err);
	op->patch.parent = adup(rq, op->patch.parent);
	op->patch.description = adup(rq, op->patch.description);
	op->patch.unix_account = adup(rq, op->patch.unix_account);
	json_decref(body);
	if (ret < 0)
		return ret;
	return rest_defer(rq, update_db, NULL, op);
}

static int delete_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct tenant_op *op = arg;
	int ret = ops_tenant_delete(db, op->name, &rq->err);
	if (ret < 0)
		return ret;
	rest_result(rq, 204, NULL);
	return 0;
}

int rest_tenants_delete(struct rest_req *rq)
{
	struct tenant_op *op = op_new(rq);
	int ret;

	if ((ret = no_query(rq)) < 0 || (ret = ops_name_check(op->name, "tenant", &rq->err)) < 0)
		return ret;
	return rest_defer(rq, delete_db, NULL, op);
}
