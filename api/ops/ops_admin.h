/*
 * ops_admin.h - the admin writes, written once for REST (api/rest_tokens.c,
 * rest_tenants.c, rest_quotas.c, rest_pclasses.c, rest_nodes.c,
 * rest_settings.c) and gRPC (api/grpc/grpc_admin.c): who may mint which
 * token, what a created token looks like, which changes must forget cached
 * principals (ops_auth.h) before they are answered, which keys cannot
 * exist, and the store call. Roles are the route's (routes.def: admin for
 * all but the tokens), checked by each face before the call.
 *
 * The bodies are decoded by the shared codecs (api/codec_admin.h) on each
 * face; gRPC builds REST's JSON body first (api/grpc/grpc_codec.h).
 *
 * The admin reads are ops_admin_read.h; the other admin writes are one
 * codec + store call each on either side (docs/design.md, Known gaps).
 */
#ifndef MU_OPS_ADMIN_H
#define MU_OPS_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "codec_admin.h"
#include "db.h"
#include "error.h"
#include "ops_principal.h"
#include "store_auth.h"
#include "store_node.h"
#include "store_pclass.h"
#include "store_quota.h"
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

/*
 * Keys that cannot exist: MU_ENOTFOUND (field "", "no such <what>")
 * without asking the database. Pure. Each face calls the check of the key
 * first, before decoding a body, so a bad key is not-found whatever the
 * body holds; the reads (ops_admin_read.h) call them too.
 */
/* A tenant or priority class name (codec_admin_valid_name). */
int ops_name_check(const char *name, const char *what, struct mu_error *err)
	__attribute__((warn_unused_result));
/* A node name: 1..CODEC_ADMIN_NODE_MAX characters of UTF-8. */
int ops_node_name_check(const char *name, struct mu_error *err) __attribute__((warn_unused_result));
/* A quota's GPU model ("" = the all-models quota): MU_EINVAL naming
 * "gpu_model" when not UTF-8 of at most CODEC_ADMIN_GPU_MODEL_MAX. */
int ops_gpu_model_check(const char *model, struct mu_error *err) __attribute__((warn_unused_result));

/* The writes below take keys already checked (above) and bodies already
 * decoded; *out is the object afterwards (strings in `a`). */
int ops_tenant_create(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		      const struct store_tenant_new *in, struct store_tenant *out, struct mu_error *err)
	__attribute__((warn_unused_result));
/* Creates or replaces (in->tenant, in->gpu_model)'s quota. */
int ops_quota_put(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		  const struct store_quota *in, struct store_quota *out, struct mu_error *err)
	__attribute__((warn_unused_result));
int ops_quota_delete(PGconn *db, const struct ops_principal *p, const char *tenant,
		     const char *gpu_model, struct mu_error *err) __attribute__((warn_unused_result));
int ops_pclass_create(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		      const struct store_pclass *in, struct store_pclass *out, struct mu_error *err)
	__attribute__((warn_unused_result));
/* The fields of *in named by `set` (codec_pclass_patch_decode). */
int ops_pclass_update(PGconn *db, struct mu_arena *a, const struct ops_principal *p, const char *name,
		      unsigned set, const struct store_pclass *in, struct store_pclass *out,
		      struct mu_error *err) __attribute__((warn_unused_result));
int ops_pclass_delete(PGconn *db, const struct ops_principal *p, const char *name,
		      struct mu_error *err) __attribute__((warn_unused_result));
/* Drains (reason, "" = none) or resumes node `name`; *out is the node after. */
int ops_node_drain(PGconn *db, struct mu_arena *a, const struct ops_principal *p, const char *name,
		   bool drain, const char *reason, struct store_node *out, struct mu_error *err)
	__attribute__((warn_unused_result));
/* Changes settings (decoded by codec_settings_decode), all or nothing; each
 * change an event by "token:N". *values: every setting afterwards. */
int ops_settings_update(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
			const char *const *names, const char *const *vals, size_t n,
			const char ***values, struct mu_error *err) __attribute__((warn_unused_result));

#endif
