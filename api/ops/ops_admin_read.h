/*
 * ops_admin_read.h - the admin reads, one function each for REST
 * (api/rest_tenants.c, rest_quotas.c, rest_pclasses.c, rest_tokens.c,
 * rest_nodes.c, rest_settings.c) and gRPC (api/grpc/grpc_admin.c
 * AdminService): tenants, quotas, priority classes, tokens, nodes and the
 * settings, listed and got.
 *
 * Each one, in this order:
 *   - roles: the route's (api/routes.def); REST's framework and gRPC's
 *     method table (grpc_admin.c reads them by handler name) check them
 *     before the call, so a function here runs for an allowed role only;
 *   - its key: a name or id that cannot exist is MU_ENOTFOUND (field "")
 *     without asking the database; an agent reads its own node only;
 *   - its page: `limit` comes decoded (REST codec_limit_decode, gRPC
 *     ops_page_size: one range), the cursor's shape is checked here
 *     (codec_cursor_check: MU_EINVAL naming "cursor");
 *   - the caller's tenant scope (ops_scope_path): tenants, quotas and
 *     tokens outside it are absent from a list and MU_ENOTFOUND to a get.
 *     Classes, nodes and settings are cluster-wide.
 *
 * Results are the store's structs in `a`, for either codec. Database
 * worker threads only.
 */
#ifndef MU_OPS_ADMIN_READ_H
#define MU_OPS_ADMIN_READ_H

#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"
#include "ops_principal.h"
#include "store_node.h"
#include "store_pclass.h"
#include "store_quota.h"
#include "store_tenant.h"
#include "store_token_admin.h"

/* A page asked for: limit 1..1000 (decoded by the codec), cursor NULL =
 * the first page. */
struct ops_page_args {
	int limit;
	const char *cursor;
};

int ops_tenant_list(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		    const struct ops_page_args *pg, struct store_tenant_page *out, struct mu_error *err)
	__attribute__((warn_unused_result));
int ops_tenant_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p, const char *name,
		   struct store_tenant *out, struct mu_error *err) __attribute__((warn_unused_result));

/* Every visible quota; and one tenant's quotas (one per GPU model). */
int ops_quota_list(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		   const struct ops_page_args *pg, struct store_quota_page *out, struct mu_error *err)
	__attribute__((warn_unused_result));
int ops_quota_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p, const char *tenant,
		  struct store_quota_page *out, struct mu_error *err) __attribute__((warn_unused_result));

int ops_pclass_list(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		    const struct ops_page_args *pg, struct store_pclass_page *out, struct mu_error *err)
	__attribute__((warn_unused_result));
int ops_pclass_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p, const char *name,
		   struct store_pclass *out, struct mu_error *err) __attribute__((warn_unused_result));

/* Tokens: never their secrets. The token list's cursor is the last id
 * seen (the store reads it). */
int ops_token_list(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		   const struct ops_page_args *pg, struct store_token_page *out, struct mu_error *err)
	__attribute__((warn_unused_result));
int ops_token_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p, int64_t id,
		  struct store_token *out, struct mu_error *err) __attribute__((warn_unused_result));

int ops_node_list(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		  const struct ops_page_args *pg, struct store_node_page *out, struct mu_error *err)
	__attribute__((warn_unused_result));
/* Agents: their own node only (ops_node_visible). */
int ops_node_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p, const char *name,
		 struct store_node *out, struct mu_error *err) __attribute__((warn_unused_result));

/* Every setting's value as JSON text, in store/settings.def order. */
int ops_settings_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		     const char ***values, struct mu_error *err) __attribute__((warn_unused_result));

#endif
