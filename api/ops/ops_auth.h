/*
 * ops_auth.h - token -> principal, with the one cache REST (the gate and
 * the framework) and gRPC share.
 *
 * Entries are keyed by the SHA-256 of the secret (store_auth_hash): a
 * valid token is remembered for OPS_AUTH_TTL_S, a refused one for
 * OPS_AUTH_NEG_TTL_S (a token created meanwhile has a fresh random secret,
 * so a negative entry never hides a valid token). Anything that revokes or
 * re-scopes tokens (revoke, tenant delete or move) calls ops_auth_flush on
 * this replica; other replicas see it within the TTL.
 *
 * Threading: every function is safe from any thread (one mutex; lookups
 * copy the entry out under it).
 */
#ifndef MU_OPS_AUTH_H
#define MU_OPS_AUTH_H

#include <stdbool.h>

#include "alloc.h"
#include "db.h"
#include "error.h"
#include "ops_principal.h"

#define OPS_AUTH_TTL_S 2.0
#define OPS_AUTH_NEG_TTL_S 5.0

/*
 * 1: a fresh valid entry (copied into *out, strings in `a`, when out is
 * not NULL); -1: a fresh negative entry; 0: unknown (or stale).
 */
int ops_auth_cached(const char *sha, struct mu_arena *a, struct ops_principal *out);
/* The hash was valid at its last lookup, even if that entry went stale
 * (its holder is spared the per-address auth-failure budget). */
bool ops_auth_known_good(const char *sha);
void ops_auth_remember(const char *sha, const struct ops_principal *p);
void ops_auth_remember_bad(const char *sha);
/* Forgets every entry (after revoking or re-scoping tokens). */
void ops_auth_flush(void);

/*
 * On a database worker: the principal of `secret` (hash `sha`, from
 * store_auth_hash), from the cache or else the database (then remembered,
 * good or bad; *asked_db set). MU_EUNAUTH for a missing, expired or
 * revoked token; MU_EUNAVAIL when the database failed (not remembered).
 */
int ops_auth_check(PGconn *db, struct mu_arena *a, const char *secret, const char *sha,
		   struct ops_principal *out, struct mu_error *err, bool *asked_db)
	__attribute__((warn_unused_result));

#endif
