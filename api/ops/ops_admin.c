/*
 * ops_admin.c - the admin operations with rules of their own (ops_admin.h).
 */
#include "ops_admin.h"

#include <string.h>

#include "ops_auth.h"

int ops_token_new(const struct ops_principal *p, struct codec_token_new *in,
		  struct store_token_new *out, struct mu_error *err)
{
	bool admin = p->role == OPS_ROLE_ADMIN;
	int ret = codec_token_new_authorize(in, admin, p->tenant, p->user, err);

	if (ret < 0)
		return ret;
	memset(out, 0, sizeof(*out));
	out->name = in->name;
	out->role = in->role;
	out->user = in->user;
	out->node = in->node;
	out->expires_at = in->expires_at;
	out->parent_id = p->token_id;
	out->bounded = !admin;
	return 0;
}

int ops_token_create(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		     const char *tenant, struct store_token_new *in, struct store_token_created *made,
		     struct store_token *t, struct mu_error *err)
{
	int ret = store_token_admin_create(db, a, ops_scope_path(p), tenant, in, made, err);

	if (ret < 0)
		return ret;
	memset(t, 0, sizeof(*t));
	t->id = made->id;
	t->name = in->name;
	t->role = in->role;
	t->tenant = tenant;
	t->user = in->user;
	t->node = in->node;
	t->prefix = made->prefix;
	t->created_at = made->created_at;
	t->expires_at = made->expires_at;
	return 0;
}

int ops_token_revoke(PGconn *db, const struct ops_principal *p, int64_t id, struct mu_error *err)
{
	int ret = store_token_admin_revoke(db, ops_scope_path(p), id, err);

	if (ret < 0)
		return ret;
	ops_auth_flush();
	return 0;
}

int ops_tenant_update(PGconn *db, struct mu_arena *a, const char *name,
		      const struct store_tenant_patch *patch, struct store_tenant *out,
		      struct mu_error *err)
{
	int ret = store_tenant_update(db, a, name, patch, out, err);

	if (ret < 0)
		return ret;
	if (patch->set & STORE_TENANT_SET_PARENT)
		ops_auth_flush();
	return 0;
}

int ops_tenant_delete(PGconn *db, const char *name, struct mu_error *err)
{
	int ret = store_tenant_delete(db, name, err);

	if (ret < 0)
		return ret;
	ops_auth_flush();
	return 0;
}
