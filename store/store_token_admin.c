#include "store_token_admin.h"

#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "store_auth.h"
#include "store_tenant.h"

#define TOKEN_COLS                                                                            \
	"k.id, k.name, k.role, t.name, k.user_name, k.node_name, k.prefix, "                  \
	STORE__TS("k.created_at") ", " STORE__TS("k.expires_at") ", " STORE__TS("k.last_used_at")
/* A revoked token is gone for every reader; scope: its tenant in the subtree. */
#define TOKEN_FROM                                                                            \
	" FROM api_tokens k LEFT JOIN tenants t ON t.id = k.tenant_id "                        \
	"WHERE k.revoked_at IS NULL AND ($1::text IS NULL OR (t.path IS NOT NULL AND "        \
	STORE__IN_SCOPE("t.path", "$1") ")) "

static void token_row(struct mu_arena *a, const PGresult *r, int row, struct store_token *k)
{
	k->id = store_db_get_int64(r, row, 0);
	k->name = store__admin_str(a, r, row, 1);
	k->role = store__admin_str(a, r, row, 2);
	k->tenant = store__admin_str(a, r, row, 3);
	k->user = store__admin_str(a, r, row, 4);
	k->node = store__admin_str(a, r, row, 5);
	k->prefix = store__admin_str(a, r, row, 6);
	k->created_at = store__admin_str(a, r, row, 7);
	k->expires_at = store__admin_str(a, r, row, 8);
	k->last_used_at = store__admin_str(a, r, row, 9);
}

int store_token_admin_get(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
			  struct store_token *out, struct mu_error *err)
{
	char ib[24];
	const char *params[2] = { scope, store__admin_fmt(ib, id) };
	PGresult *r = NULL;
	int ret;

	ret = store_db_exec(c, "SELECT " TOKEN_COLS TOKEN_FROM "AND k.id = $2::bigint", 2, params, &r,
			    err);
	if (ret < 0)
		return ret;
	if (store_db_nrows(r) != 1)
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no token %s", params[1]);
	else
		token_row(a, r, 0, out);
	store_db_clear(r);
	return ret;
}

int store_token_admin_list(PGconn *c, struct mu_arena *a, const char *scope, const char *cursor,
			   int limit, struct store_token_page *out, struct mu_error *err)
{
	char lb[24];
	const char *params[3] = { scope, cursor, store__admin_fmt(lb, limit + 1) };
	PGresult *r = NULL;
	int ret, n;

	memset(out, 0, sizeof(*out));
	if (cursor) {
		size_t len = strlen(cursor);
		if (len == 0 || len > 18 || strspn(cursor, "0123456789") != len)
			return mu_error_set(err, MU_EINVAL, "cursor", "not a cursor this server made");
	}
	ret = store_db_exec(c,
			    "SELECT " TOKEN_COLS TOKEN_FROM
			    "AND ($2::bigint IS NULL OR k.id > $2::bigint) ORDER BY k.id LIMIT $3::int",
			    3, params, &r, err);
	if (ret < 0)
		return ret;
	n = store_db_nrows(r);
	if (n > limit) {
		n = limit;
		out->next_cursor = store__admin_str(a, r, limit - 1, 0);
	}
	out->items = mu_arena_alloc(a, sizeof(*out->items) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		token_row(a, r, i, &out->items[i]);
	out->n = (size_t)n;
	store_db_clear(r);
	return 0;
}

struct token_revoke {
	const char *scope;
	int64_t id;
};

static int token_revoke_tx(PGconn *c, void *arg, struct mu_error *err)
{
	struct token_revoke *tr = arg;
	char ib[24];
	const char *params[2] = { tr->scope, store__admin_fmt(ib, tr->id) };
	PGresult *r = NULL;
	int64_t tenant;
	int ret;

	ret = store_db_exec(c,
			    "UPDATE api_tokens SET revoked_at = now() WHERE id = "
			    "(SELECT k.id" TOKEN_FROM "AND k.id = $2::bigint FOR UPDATE OF k) "
			    "RETURNING tenant_id, name, role",
			    2, params, &r, err);
	if (ret < 0)
		return ret;
	if (store_db_nrows(r) != 1) {
		store_db_clear(r);
		return mu_error_set(err, MU_ENOTFOUND, "", "no token %s", params[1]);
	}
	tenant = store__admin_i64(r, 0, 0, 0);
	store_db_clear(r);
	r = NULL;
	/* the tokens it minted, and theirs, go with it */
	ret = store_db_exec(c,
			    "WITH RECURSIVE d AS (SELECT id FROM api_tokens WHERE parent_id = $1::bigint"
			    "  UNION SELECT k.id FROM api_tokens k JOIN d ON k.parent_id = d.id)"
			    " UPDATE api_tokens SET revoked_at = now()"
			    " WHERE id IN (SELECT id FROM d) AND revoked_at IS NULL",
			    1, params + 1, NULL, err);
	if (ret < 0)
		return ret;
	ret = store_db_exec(c, "SELECT $1::bigint, name, role FROM api_tokens WHERE id = $1::bigint",
			    1, params + 1, &r, err);
	if (ret < 0)
		return ret;
	{
		const char *kv[] = { "token_id#", params[1], "name", store_db_get(r, 0, 1), "role",
				     store_db_get(r, 0, 2) };
		ret = store__admin_event(c, "token.revoked", tenant, 0, "", kv, 3, err);
	}
	store_db_clear(r);
	return ret;
}

int store_token_admin_revoke(PGconn *c, const char *scope, int64_t id, struct mu_error *err)
{
	struct token_revoke tr = { scope, id };
	return store_db_tx(c, NULL, 0, token_revoke_tx, &tr, err);
}

struct token_create {
	struct mu_arena *a;
	const char *scope;
	const char *tenant;
	struct store_token_new *in;
	struct store_token_created *out;
};

static int token_create_tx(PGconn *c, void *arg, struct mu_error *err)
{
	struct token_create *tc = arg;
	PGresult *r = NULL;
	int ret;

	tc->in->tenant_id = 0;
	if (tc->tenant) {
		const char *params[2] = { tc->tenant, tc->scope };
		ret = store_db_exec(c,
				    "SELECT t.id FROM tenants t WHERE t.name = $1 AND "
				    STORE__IN_SCOPE("t.path", "$2") " FOR SHARE",
				    2, params, &r, err);
		if (ret < 0)
			return ret;
		if (store_db_nrows(r) != 1) {
			store_db_clear(r);
			return mu_error_set(err, MU_ENOTFOUND, "tenant", "no tenant \"%.64s\"",
					    tc->tenant);
		}
		tc->in->tenant_id = store_db_get_int64(r, 0, 0);
		store_db_clear(r);
	}
	if (tc->in->expires_at) {
		const char *params[1] = { tc->in->expires_at };
		ret = store_db_exec(c, "SELECT $1::timestamptz > now()", 1, params, &r, err);
		if (ret < 0)
			return mu_error_set(err, MU_EINVAL, "expires_at", "not a time PostgreSQL reads");
		ret = store_db_get_bool(r, 0, 0) ? 0 : mu_error_set(err, MU_ERANGE, "expires_at",
								      "must be in the future");
		store_db_clear(r);
		if (ret < 0)
			return ret;
	}
	if (tc->in->bounded && tc->in->parent_id) {
		/* a token cannot outlive the token that minted it */
		char pb[24];
		const char *params[2] = { store__admin_fmt(pb, tc->in->parent_id),
					  tc->in->expires_at ? tc->in->expires_at : "infinity" };

		ret = store_db_exec(c,
				    "SELECT to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
				    " $2::timestamptz <= expires_at"
				    " FROM api_tokens WHERE id = $1::bigint",
				    2, params, &r, err);
		if (ret < 0)
			return ret;
		if (store_db_nrows(r) == 1 && !store_db_is_null(r, 0, 0)) {
			if (!tc->in->expires_at)
				tc->in->expires_at = mu_arena_strdup(tc->a, store_db_get(r, 0, 0));
			else if (!store_db_get_bool(r, 0, 1))
				ret = mu_error_set(err, MU_EFORBIDDEN, "expires_at",
						   "a token cannot expire after the token creating it (%s)",
						   store_db_get(r, 0, 0));
		}
		store_db_clear(r);
		if (ret < 0)
			return ret;
	}
	return store_auth_token_create(c, tc->a, tc->in, tc->out, err);
}

int store_token_admin_create(PGconn *c, struct mu_arena *a, const char *scope, const char *tenant,
			     struct store_token_new *in, struct store_token_created *out,
			     struct mu_error *err)
{
	struct token_create tc = { a, scope, tenant, in, out };
	return store_db_tx(c, NULL, 0, token_create_tx, &tc, err);
}
