/*
 * store_auth.h - API tokens: lookup by secret (the auth middleware) and
 * creation (POST /v1/tokens, the MUSTER_ADMIN_TOKEN bootstrap).
 *
 * Secrets are "mst_" + 43 base64url characters (256 random bits); only
 * their SHA-256 (lowercase hex) is stored, with a short `prefix` so an
 * operator can recognise a token in a list. A secret never leaves
 * store_auth_token_create except through its `out->secret`.
 *
 * Strings returned in structs live in the arena `a` the caller passes.
 * Errors: 0 or a negative MU_E* code with `err` (may be NULL) filled.
 * Threading: one connection per thread; everything else is reentrant.
 */
#ifndef STORE_AUTH_H
#define STORE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"

#define STORE_AUTH_SECRET_MAX 64  /* buffer size for a secret, NUL included */
#define STORE_AUTH_PREFIX_LEN 12  /* "mst_" + 8 characters */

/* What a valid token says about its holder. */
struct store_principal {
	int64_t token_id;
	const char *role;        /* admin|tenant|reader|agent */
	int64_t tenant_id;       /* 0 when the token has no tenant */
	const char *tenant;      /* NULL when none */
	const char *tenant_path; /* NULL when none */
	const char *user;        /* "" when none */
	const char *node;        /* NULL unless an agent token */
};

/* SHA-256 of `secret` as 64 lowercase hex digits + NUL. */
void store_auth_hash(const char *secret, char hex[65]);

/* SHA-256 of any bytes as 64 lowercase hex digits (request fingerprints). */
void store_sha256_hex(const void *data, size_t len, char hex[65]);

/* A new random secret ("mst_..."), NUL-terminated, from the OS CSPRNG. */
void store_auth_secret_new(char secret[STORE_AUTH_SECRET_MAX]);

/*
 * Finds the live token (not revoked, not expired) whose secret is `secret`.
 * MU_EUNAUTH when there is none; MU_EUNAVAIL when the database failed.
 */
int store_auth_lookup(PGconn *c, struct mu_arena *a, const char *secret,
		      struct store_principal *out, struct mu_error *err)
	__attribute__((warn_unused_result));

struct store_token_new {
	const char *name;        /* NULL = "" */
	const char *role;        /* admin|tenant|reader|agent (checked by the schema) */
	int64_t tenant_id;       /* 0 = none (required for role tenant) */
	const char *user;        /* NULL = "" */
	const char *node;        /* NULL = none */
	const char *expires_at;  /* RFC 3339, NULL = never */
	int64_t parent_id;       /* the minting token (revoked with it), 0 = none */
	bool bounded;            /* non-admin mint: expires no later than the parent
				  * (store_token_admin_create fills expires_at) */
};

struct store_token_created {
	int64_t id;
	char secret[STORE_AUTH_SECRET_MAX]; /* shown to the user once, never stored */
	char prefix[STORE_AUTH_PREFIX_LEN + 1];
	const char *created_at;  /* RFC 3339 UTC (arena) */
	const char *expires_at;  /* NULL = never (arena) */
};

/*
 * Creates a token with a fresh secret and writes a `token.created` event, in
 * one statement (runs inside the caller's transaction when one is open).
 * MU_EINVAL for a role/tenant combination the schema rejects.
 */
int store_auth_token_create(PGconn *c, struct mu_arena *a, const struct store_token_new *in,
			    struct store_token_created *out, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * Makes `secret` a live admin token named `name` (muster-api's
 * MUSTER_ADMIN_TOKEN): the token of that name gets this secret's hash, or a
 * new one is created. Idempotent; safe when replicas start at once.
 */
int store_auth_upsert_admin(PGconn *c, const char *name, const char *secret,
			    struct mu_error *err) __attribute__((warn_unused_result));

#endif
