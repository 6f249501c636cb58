/*
 * rest_pclasses.c - /v1/priority-classes: CRUD. Classes are global: every
 * reader sees all of them; writes are admin-only.
 */
#include <string.h>

#include "codec_admin.h"
#include "ops_admin.h"
#include "ops_admin_read.h"
#include "rest.h"
#include "store_pclass.h"

struct pclass_op {
	const char *name;
	const char *cursor;
	int limit;
	unsigned set;
	struct store_pclass p;
};

static struct pclass_op *op_new(struct rest_req *rq)
{
	struct pclass_op *op = mu_arena_alloc(rq->arena, sizeof(*op));
	op->name = rest_param(rq, "name");
	return op;
}

static int no_query(struct rest_req *rq)
{
	static const char *const none[] = { NULL };
	return rest_query_check(rq, none);
}

/* Copies the decoded strings out of the body (see rest_tenants.c). */
static void own_strings(struct rest_req *rq, struct store_pclass *p)
{
	if (p->name)
		p->name = mu_arena_strdup(rq->arena, p->name);
	if (p->description)
		p->description = mu_arena_strdup(rq->arena, p->description);
}

static int reply(struct rest_req *rq, int status, const struct store_pclass *p)
{
	if (status == 201) {
		size_t n = strlen(p->name);
		char *loc = mu_arena_alloc(rq->arena, n + 24);
		memcpy(loc, "/v1/priority-classes/", 21);
		memcpy(loc + 21, p->name, n + 1);
		rest_add_header(rq, "location", loc);
	}
	rest_result(rq, status, codec_pclass_encode(p));
	return 0;
}

static int create_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct pclass_op *op = arg;
	struct store_pclass out;
	int ret = ops_pclass_create(db, rq->arena, &rq->who, &op->p, &out, &rq->err);
	return ret < 0 ? ret : reply(rq, 201, &out);
}

int rest_pclasses_create(struct rest_req *rq)
{
	struct pclass_op *op = op_new(rq);
	json_t *body;
	int ret;

	if ((ret = no_query(rq)) < 0 || (ret = rest_body_json(rq, &body)) < 0)
		return ret;
	ret = codec_pclass_new_decode(body, &op->p, &rq->err);
	own_strings(rq, &op->p);
	json_decref(body);
	if (ret < 0)
		return ret;
	return rest_defer(rq, create_db, NULL, op);
}

static int list_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct pclass_op *op = arg;
	struct store_pclass_page page;
	json_t *items;
	struct ops_page_args pg = { op->limit, op->cursor };
	int ret = ops_pclass_list(db, rq->arena, &rq->who, &pg, &page, &rq->err);

	if (ret < 0)
		return ret;
	items = json_array();
	for (size_t i = 0; i < page.n; i++)
		json_array_append_new(items, codec_pclass_encode(&page.items[i]));
	rest_result(rq, 200, codec_page_encode(items, page.next_cursor));
	return 0;
}

int rest_pclasses_list(struct rest_req *rq)
{
	static const char *const q[] = { "limit", "cursor", NULL };
	struct pclass_op *op = op_new(rq);
	int ret;

	if ((ret = rest_query_check(rq, q)) < 0 ||
	    (ret = codec_limit_decode(rest_query(rq, "limit"), &op->limit, &rq->err)) < 0)
		return ret;
	op->cursor = rest_query(rq, "cursor");
	return rest_defer(rq, list_db, NULL, op);
}

static int get_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct pclass_op *op = arg;
	struct store_pclass out;
	int ret = ops_pclass_get(db, rq->arena, &rq->who, op->name, &out, &rq->err);
	return ret < 0 ? ret : reply(rq, 200, &out);
}

int rest_pclasses_get(struct rest_req *rq)
{
	struct pclass_op *op = op_new(rq);
	int ret;

	if ((ret = no_query(rq)) < 0)
		return ret;
	return rest_defer(rq, get_db, NULL, op);
}

static int update_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct pclass_op *op = arg;
	struct store_pclass out;
	int ret = ops_pclass_update(db, rq->arena, &rq->who, op->name, op->set, &op->p, &out, &rq->err);
	return ret < 0 ? ret : reply(rq, 200, &out);
}

int rest_pclasses_update(struct rest_req *rq)
{
	struct pclass_op *op = op_new(rq);
	json_t *body;
	int ret;

	if ((ret = no_query(rq)) < 0 || (ret = ops_name_check(op->name, "priority class", &rq->err)) < 0 ||
	    (ret = rest_body_json(rq, &body)) < 0)
		return ret;
	ret = codec_pclass_patch_decode(body, &op->set, &op->p, &rq->err);
	own_strings(rq, &op->p);
	json_decref(body);
	if (ret < 0)
		return ret;
	return rest_defer(rq, update_db, NULL, op);
}

static int delete_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct pclass_op *op = arg;
	int ret = ops_pclass_delete(db, &rq->who, op->name, &rq->err);
	if (ret < 0)
		return ret;
	rest_result(rq, 204, NULL);
	return 0;
}

int rest_pclasses_delete(struct rest_req *rq)
{
	struct pclass_op *op = op_new(rq);
	int ret;

	if ((ret = no_query(rq)) < 0 || (ret = ops_name_check(op->name, "priority class", &rq->err)) < 0)
		return ret;
	return rest_defer(rq, delete_db, NULL, op);
}
