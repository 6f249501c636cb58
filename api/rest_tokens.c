/*
 * rest_tokens.c - /v1/tokens: create (the secret is in this answer only),
 * list, get, delete (= revoke). An admin may create any token; a tenant
 * token only tenant/reader tokens inside its own subtree. Reads and
 * revocation are scoped to the caller's subtree. Revoking flushes this
 * replica's auth cache, so the token fails at once here (and within the
 * cache TTL on other replicas).
 */
#include <stdlib.h>
#include <string.h>

#include "codec_admin.h"
#include "ops_admin.h"
#include "ops_admin_read.h"
#include "rest.h"
#include "store_auth.h"
#include "store_token_admin.h"

struct token_op {
	const char *scope;
	const char *cursor;
	int limit;
	int64_t id;
	const char *tenant;
	struct store_token_new in;
};

static struct token_op *op_new(struct rest_req *rq)
{
	struct token_op *op = mu_arena_alloc(rq->arena, sizeof(*op));
	op->scope = rest_scope_path(rq);
	return op;
}

static const char *adup(struct rest_req *rq, const char *s)
{
	return s ? mu_arena_strdup(rq->arena, s) : NULL;
}

static int no_query(struct rest_req *rq)
{
	static const char *const none[] = { NULL };
	return rest_query_check(rq, none);
}

/* Token ids are positive decimals; anything else cannot exist (404). */
static int parse_id(struct rest_req *rq, int64_t *id)
{
	const char *s = rest_param(rq, "id");
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 18 || strspn(s, "0123456789") != n || (*id = strtoll(s, NULL, 10)) <= 0)
		return mu_error_set(&rq->err, MU_ENOTFOUND, "", "no such token");
	return 0;
}

static int create_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct token_op *op = arg;
	struct store_token_created made;
	struct store_token t;
	char *loc;
	int ret;

	ret = ops_token_create(db, rq->arena, &rq->who, op->tenant, &op->in, &made, &t, &rq->err);
	if (ret < 0)
		return ret;
	loc = mu_arena_alloc(rq->arena, 32);
	snprintf(loc, 32, "/v1/tokens/%lld", (long long)made.id);
	rest_add_header(rq, "location", loc);
	rest_add_header(rq, "cache-control", "no-store");
	rest_result(rq, 201, codec_token_encode(&t, made.secret));
	memset(made.secret, 0, sizeof(made.secret));
	return 0;
}

int rest_tokens_create(struct rest_req *rq)
{
	struct token_op *op = op_new(rq);
	struct codec_token_new in;
	json_t *body;
	int ret;

	if ((ret = no_query(rq)) < 0 || (ret = rest_body_json(rq, &body)) < 0)
		return ret;
	ret = codec_token_new_decode(body, &in, &rq->err);
	if (ret == 0)
		ret = ops_token_new(&rq->who, &in, &op->in, &rq->err);
	if (ret == 0) { /* the body goes before the work runs */
		op->in.name = adup(rq, op->in.name);
		op->in.role = adup(rq, op->in.role);
		op->in.user = adup(rq, op->in.user);
		op->in.node = adup(rq, op->in.node);
		op->in.expires_at = adup(rq, op->in.expires_at);
		op->tenant = adup(rq, in.tenant);
	}
	json_decref(body);
	if (ret < 0)
		return ret;
	return rest_defer(rq, create_db, NULL, op);
}

static int list_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct token_op *op = arg;
	struct store_token_page page;
	json_t *items;
	struct ops_page_args pg = { op->limit, op->cursor };
	int ret = ops_token_list(db, rq->arena, &rq->who, &pg, &page, &rq->err);

	if (ret < 0)
		return ret;
	items = json_array();
	for (size_t i = 0; i < page.n; i++)
		json_array_append_new(items, codec_token_encode(&page.items[i], NULL));
	rest_result(rq, 200, codec_page_encode(items, page.next_cursor));
	return 0;
}

int rest_tokens_list(struct rest_req *rq)
{
	static const char *const q[] = { "limit", "cursor", NULL };
	struct token_op *op = op_new(rq);
	int ret;

	if ((ret = rest_query_check(rq, q)) < 0 ||
	    (ret = codec_limit_decode(rest_query(rq, "limit"), &op->limit, &rq->err)) < 0)
		return ret;
	op->cursor = rest_query(rq, "cursor");
	return rest_defer(rq, list_db, NULL, op);
}

static int get_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct token_op *op = arg;
	struct store_token t;
	int ret = ops_token_get(db, rq->arena, &rq->who, op->id, &t, &rq->err);
	if (ret < 0)
		return ret;
	rest_result(rq, 200, codec_token_encode(&t, NULL));
	return 0;
}

int rest_tokens_get(struct rest_req *rq)
{
	struct token_op *op = op_new(rq);
	int ret;

	if ((ret = no_query(rq)) < 0 || (ret = parse_id(rq, &op->id)) < 0)
		return ret;
	return rest_defer(rq, get_db, NULL, op);
}

static int delete_db(PGconn *db, struct rest_req *rq, void *arg)
{
	struct token_op *op = arg;
	int ret = ops_token_revoke(db, &rq->who, op->id, &rq->err);
	if (ret < 0)
		return ret;
	rest_result(rq, 204, NULL);
	return 0;
}

int rest_tokens_delete(struct rest_req *rq)
{
	struct token_op *op = op_new(rq);
	int ret;

	if ((ret = no_query(rq)) < 0 || (ret = parse_id(rq, &op->id)) < 0)
		return ret;
	return rest_defer(rq, delete_db, NULL, op);
}
