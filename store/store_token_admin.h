/*
 * store_token_admin.h - listing, reading and revoking API tokens (creation
 * and lookup are store_auth's). Never returns a secret or its hash.
 * Revoked tokens are kept for audit but are no longer listed or found.
 * Conventions (arena, scope, errors) as in store_tenant.h: a token is in
 * scope when its tenant is in the scope's subtree.
 */
#ifndef STORE_TOKEN_ADMIN_H
#define STORE_TOKEN_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"

struct store_token {
	int64_t id;
	const char *name;
	const char *role;        /* admin|tenant|reader|agent */
	const char *tenant;      /* NULL when none */
	const char *user;
	const char *node;        /* NULL unless an agent token */
	const char *prefix;
	const char *created_at;
	const char *expires_at;  /* NULL = never */
	const char *last_used_at;
};

struct store_token_page {
	struct store_token *items;
	size_t n;
	const char *next_cursor;
};

struct store_token_new;
struct store_token_created;

/*
 * Creates a token (store_auth_token_create) for the tenant named `tenant`
 * (NULL = none), which must be in `scope` (else MU_ENOTFOUND, field
 * "tenant"); in->expires_at, when set, must be in the future (MU_ERANGE,
 * field "expires_at"). in->tenant_id is set here. One transaction.
 */
int store_token_admin_create(PGconn *c, struct mu_arena *a, const char *scope, const char *tenant,
			     struct store_token_new *in, struct store_token_created *out,
			     struct mu_error *err) __attribute__((warn_unused_result));
int store_token_admin_get(PGconn *c, struct mu_arena *a, const char *scope, int64_t id,
			  struct store_token *out, struct mu_error *err) __attribute__((warn_unused_result));
/* Ascending id; `cursor` is the last id seen (decimal), NULL = first page. */
int store_token_admin_list(PGconn *c, struct mu_arena *a, const char *scope, const char *cursor,
			   int limit, struct store_token_page *out, struct mu_error *err)
	__attribute__((warn_unused_result));
/* Sets revoked_at and writes token.revoked. MU_ENOTFOUND when outside the
 * scope, unknown or already revoked. */
int store_token_admin_revoke(PGconn *c, const char *scope, int64_t id, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
