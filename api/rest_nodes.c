/*
 * rest_nodes.c - /v1/nodes: list and get (with the derived state and
 * per-GPU allocation), drain and resume (admin; event + NOTIFY
 * muster_sched 'node:<name>'). An agent token may read its own node only;
 * any other name answers 404 to it.
 */
#include <string.h>

#include "codec_admin.h"
#include "ops_admin.h"
#include "ops_admin_read.h"
#include "rest.h"
#include "store_node.h"

struct node_op {
	const char *name;
	const char *cursor;
	const char *reason;
	int limit;
};

static int no_query(struct rest_req *rq)
{
	static const char *const none[] = { NULL };
	return rest_query_check(rq, none);
}

/* Fills op->name; names that cannot be stored answer 404 here. */
static int node_name(struct rest_req *rq, struct node_op *op)
{
	op->name = rest_param(rq, "name");
	return ops_node_name_check(op->name, &rq->err);
}

static int list_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct node_op *op = arg;
	struct store_node_page page;
	json_t *items;
	struct ops_page_args pg = { op->limit, op->cursor };
	int ret = ops_node_list(db, rq->arena, &rq->who, &pg, &page, &rq->err);

	if (ret < 0)
		return ret;
	items = json_array();
	for (size_t i = 0; i < page.n; i++)
		json_array_append_new(items, codec_node_encode(&page.items[i]));
	rest_result(rq, 200, codec_page_encode(items, page.next_cursor));
	return 0;
}

int rest_nodes_list(struct rest_req *rq)
{
	static const char *const q[] = { "limit", "cursor", NULL };
	struct node_op *op = mu_arena_alloc(rq->arena, sizeof(*op));
	int ret;

	if ((ret = rest_query_check(rq, q)) < 0 ||
	    (ret = codec_limit_decode(rest_query(rq, "limit"), &op->limit, &rq->err)) < 0)
		return ret;
	op->cursor = rest_query(rq, "cursor");
	return rest_defer(rq, list_db, NULL, op);
}

static int get_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct node_op *op = arg;
	struct store_node n;
	int ret = ops_node_get(db, rq->arena, &rq->who, op->name, &n, &rq->err);
	if (ret < 0)
		return ret;
	rest_result(rq, 200, codec_node_encode(&n));
	return 0;
}

int rest_nodes_get(struct rest_req *rq)
{
	struct node_op *op = mu_arena_alloc(rq->arena, sizeof(*op));
	int ret;

	if ((ret = no_query(rq)) < 0)
		return ret;
	op->name = rest_param(rq, "name");
	return rest_defer(rq, get_db, NULL, op);
}

static int drain_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct node_op *op = arg;
	struct store_node n;
	int ret = ops_node_drain(db, rq->arena, &rq->who, op->name, op->reason != NULL, op->reason, &n,
				 &rq->err);
	if (ret < 0)
		return ret;
	rest_result(rq, 200, codec_node_encode(&n));
	return 0;
}

static int drain_or_resume(struct rest_req *rq, bool drain)
{
	struct node_op *op = mu_arena_alloc(rq->arena, sizeof(*op));
	json_t *body = NULL;
	int ret;

	if ((ret = no_query(rq)) < 0 || (ret = node_name(rq, op)) < 0)
		return ret;
	if (drain) {
		if (rq->body_len > 0 && (ret = rest_body_json(rq, &body)) < 0)
			return ret;
		ret = codec_drain_decode(body, &op->reason, &rq->err);
		op->reason = mu_arena_strdup(rq->arena, ret == 0 ? op->reason : "");
		json_decref(body);
		if (ret < 0)
			return ret;
	} else if (rq->body_len > 0) {
		if ((ret = rest_body_json(rq, &body)) < 0)
			return ret;
		/* resume takes no fields: {} or no body */
		if (json_object_size(body) > 0) {
			const char *key = json_object_iter_key(json_object_iter(body));
			ret = mu_error_set(&rq->err, MU_EUNKNOWNFIELD, key, "unknown field \"%.64s\"", key);
		}
		json_decref(body);
		if (ret < 0)
			return ret;
	}
	return rest_defer(rq, drain_db, NULL, op);
}

int rest_nodes_drain(struct rest_req *rq)
{
	return drain_or_resume(rq, true);
}

int rest_nodes_resume(struct rest_req *rq)
{
	return drain_or_resume(rq, false);
}
