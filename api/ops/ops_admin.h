/*
 * ops_admin.h - the admin operations whose rules go beyond "call the store
 * with the caller's scope", written once for REST (api/rest_tokens.c,
 * rest_tenants.c) and gRPC (api/grpc/grpc_admin.c): who may mint which
 * token, what a created token looks like, and which changes must forget
 * cached principals (ops_auth.h) before they are answered.
 *
 * The admin reads are ops_admin_read.h; the other admin writes are one
 * codec + store call each on either side (docs/design.md, Known gaps).
 */
#ifndef MU_OPS_ADMIN_H
#define MU_OPS_ADMIN_H

#include <stdint.h>

#include "alloc.h"
#include "codec_admin.h"
#include "db.h"
#include "error.h"
#include "ops_principal.h"
#include "store_auth.h"
#include "store_tenant.h"
#include "store_token_admin.h"

/*
 * A token create by `p` (pure: the codec's authorization, then the
 * parent and the bound): *out is filled from *in (strings borrowed from
 * it), *in's tenant may be defaulted to the caller's. 0, or MU_EFORBIDDEN
 * naming the field.
 */
int ops_token_new(const struct ops_principal *p, struct codec_token_new *in,
		  struct store_token_new *out, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Creates it in the caller's scope; *t is the new token as a list shows it
 * (strings borrowed from *in and *made; made->secret is the caller's to
 * show once and wipe). */
int ops_token_create(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		     const char *tenant, struct store_token_new *in, struct store_token_created *made,
		     struct store_token *t, struct mu_error *err) __attribute__((warn_unused_result));

/* Revokes a token in the caller's scope (and those it minted), then
 * forgets cached principals. */
int ops_token_revoke(PGconn *db, const struct ops_principal *p, int64_t id, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Changes a tenant; a move (STORE_TENANT_SET_PARENT) forgets cached
 * principals (they hold tenant paths). Admin only (the route's roles). */
int ops_tenant_update(PGconn *db, struct mu_arena *a, const char *name,
		      const struct store_tenant_patch *patch, struct store_tenant *out,
		      struct mu_error *err) __attribute__((warn_unused_result));

/* Deletes a tenant, then forgets cached principals (its tokens went). */
int ops_tenant_delete(PGconn *db, const char *name, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
