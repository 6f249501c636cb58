/* store_auth.c - see store_auth.h. */
#include "store_auth.h"

#include <libpq-fe.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_int.h"

void store_sha256_hex(const void *data, size_t len, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
	for (unsigned int i = 0; i < 32; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[64] = '\0';
}

void store_auth_hash(const char *secret, char hex[65])
{
	store_sha256_hex(secret, strlen(secret), hex);
}

void store_auth_secret_new(char secret[STORE_AUTH_SECRET_MAX])
{
	static const char b64url[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char raw[33] = { 0 };
	size_t o = 0;

	if (RAND_bytes(raw, 32) != 1) {
		mu_err("auth: RAND_bytes failed");
		abort();
	}
	memcpy(secret, "mst_", 4);
	o = 4;
	/* 32 bytes = 256 bits -> 43 base64url characters (no padding). */
	for (size_t i = 0; i < 33; i += 3) {
		unsigned v = (unsigned)raw[i] << 16 | (unsigned)(i + 1 < 33 ? raw[i + 1] : 0) << 8 |
			     (unsigned)(i + 2 < 33 ? raw[i + 2] : 0);
		for (int k = 3; k >= 0 && o < 4 + 43; k--)
			secret[o++] = b64url[(v >> (6 * k)) & 63];
	}
	secret[o] = '\0';
}

int store_auth_lookup(PGconn *c, struct mu_arena *a, const char *secret,
		      struct store_principal *out, struct mu_error *err)
{
	/* The lookup also stamps last_used_at, at most once a minute per token,
	 * so a busy token costs one row write a minute, not one per request
	 * (and the API's auth cache already spares most lookups). */
	static const char sql[] =
		"WITH k AS (SELECT k.id, k.role, coalesce(k.tenant_id, 0) AS tenant_id, t.name,"
		"                  t.path, k.user_name, k.node_name, k.last_used_at"
		"             FROM api_tokens k LEFT JOIN tenants t ON t.id = k.tenant_id"
		"            WHERE k.secret_sha256 = $1 AND k.revoked_at IS NULL"
		"              AND (k.expires_at IS NULL OR k.expires_at > now())),"
		" u AS (UPDATE api_tokens SET last_used_at = now()"
		"        WHERE id = (SELECT id FROM k WHERE last_used_at IS NULL"
		"                       OR last_used_at < now() - interval '1 minute'))"
		" SELECT id, role, tenant_id, name, path, user_name, node_name FROM k";
	char hex[65];
	const char *params[1] = { hex };
	PGresult *r = NULL;
	int ret;

	store_auth_hash(secret, hex);
	ret = store_db_exec(c, sql, 1, params, &r, err);
	if (ret < 0)
		goto out;
	if (store_db_nrows(r) != 1) {
		ret = mu_error_set(err, MU_EUNAUTH, "", "invalid, revoked or expired token");
		goto out;
	}
	memset(out, 0, sizeof(*out));
	out->token_id = store_db_get_int64(r, 0, 0);
	out->role = mu_arena_strdup(a, store_db_get(r, 0, 1));
	out->tenant_id = store_db_get_int64(r, 0, 2);
	out->tenant = store__dup_null(a, r, 0, 3);
	out->tenant_path = store__dup_null(a, r, 0, 4);
	out->user = mu_arena_strdup(a, store_db_get(r, 0, 5));
	out->node = store__dup_null(a, r, 0, 6);
out:
	store_db_clear(r);
	return ret;
}

int store_auth_token_create(PGconn *c, struct mu_arena *a, const struct store_token_new *in,
			    struct store_token_created *out, struct mu_error *err)
{
	static const char sql[] =
		"WITH k AS (INSERT INTO api_tokens"
		"  (name, secret_sha256, prefix, role, tenant_id, user_name, node_name, expires_at,"
		"   parent_id)"
		"  VALUES ($1, $2, $3, $4, $5::bigint, $6, $7, $8::timestamptz, $9::bigint)"
		"  RETURNING id, created_at, expires_at, tenant_id, role, name),"
		" e AS (INSERT INTO events (kind, tenant_id, data)"
		"  SELECT 'token.created', tenant_id,"
		"         jsonb_build_object('token_id', id, 'role', role, 'name', name) FROM k)"
		" SELECT id, " TS("created_at") ", " TS("expires_at") " FROM k";
	char hex[65];
	char tenant[32], parent[32];
	const char *params[9];
	PGresult *r = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	store_auth_secret_new(out->secret);
	memcpy(out->prefix, out->secret, STORE_AUTH_PREFIX_LEN);
	out->prefix[STORE_AUTH_PREFIX_LEN] = '\0';
	store_auth_hash(out->secret, hex);
	snprintf(tenant, sizeof(tenant), "%lld", (long long)in->tenant_id);
	params[0] = in->name ? in->name : "";
	params[1] = hex;
	params[2] = out->prefix;
	params[3] = in->role;
	params[4] = in->tenant_id ? tenant : NULL;
	params[5] = in->user ? in->user : "";
	params[6] = in->node;
	params[7] = in->expires_at;
	snprintf(parent, sizeof(parent), "%lld", (long long)in->parent_id);
	params[8] = in->parent_id ? parent : NULL;
	ret = store_db_exec(c, sql, 9, params, &r, err);
	if (ret < 0)
		goto out;
	out->id = store_db_get_int64(r, 0, 0);
	out->created_at = mu_arena_strdup(a, store_db_get(r, 0, 1));
	out->expires_at = store__dup_null(a, r, 0, 2);
out:
	store_db_clear(r);
	if (ret < 0)
		memset(out->secret, 0, sizeof(out->secret));
	return ret;
}

struct upsert_arg {
	const char *const *params;
};

static int upsert_admin_tx(PGconn *c, void *arg, struct mu_error *err)
{
	const struct upsert_arg *u = arg;
	static const char sql[] =
		"WITH u AS (UPDATE api_tokens SET secret_sha256 = $2, prefix = $3, revoked_at = NULL,"
		"        expires_at = NULL, role = 'admin', tenant_id = NULL"
		"  WHERE id = (SELECT min(id) FROM api_tokens"
		"              WHERE (name = $1 AND role = 'admin') OR secret_sha256 = $2)"
		"  RETURNING id)"
		" INSERT INTO api_tokens (name, secret_sha256, prefix, role)"
		" SELECT $1, $2, $3, 'admin' WHERE NOT EXISTS (SELECT 1 FROM u)";
	int ret;

	/* Replicas starting at once: the lock orders them, so the second sees
	 * the first's row (its statement snapshot is taken after the lock). */
	ret = store_db_exec_simple(c, "SELECT pg_advisory_xact_lock(7887321460001)", err);
	if (ret < 0)
		return ret;
	return store_db_exec(c, sql, 3, u->params, NULL, err);
}

int store_auth_upsert_admin(PGconn *c, const char *name, const char *secret, struct mu_error *err)
{
	char hex[65];
	char prefix[STORE_AUTH_PREFIX_LEN + 1] = { 0 };
	const char *params[3] = { name, hex, prefix };
	struct upsert_arg u = { params };

	store_auth_hash(secret, hex);
	memcpy(prefix, secret, strnlen(secret, STORE_AUTH_PREFIX_LEN));
	return store_db_tx(c, NULL, 0, upsert_admin_tx, &u, err);
}
