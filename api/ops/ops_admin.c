/*
 * ops_admin.c - the admin operations with rules of their own (ops_admin.h).
 */
#include "ops_admin.h"

#include <stdio.h>
#include <string.h>

#include "ops_auth.h"
#include "store_settings.h"

int ops_name_check(const char *name, const char *what, struct mu_error *err)
{
	if (!name || !codec_admin_valid_name(name))
		return mu_error_set(err, MU_ENOTFOUND, "", "no such %s", what);
	return 0;
}

int ops_node_name_check(const char *name, struct mu_error *err)
{
	if (!name || !*name || !codec_admin_valid_text(name, CODEC_ADMIN_NODE_MAX))
		return mu_error_set(err, MU_ENOTFOUND, "", "no such node");
	return 0;
}

int ops_gpu_model_check(const char *model, struct mu_error *err)
{
	if (model && !codec_admin_valid_text(model, CODEC_ADMIN_GPU_MODEL_MAX))
		return mu_error_set(err, MU_EINVAL, "gpu_model", "must be UTF-8 of at most %d characters",
				    CODEC_ADMIN_GPU_MODEL_MAX);
	return 0;
}

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

int ops_tenant_create(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		      const struct store_tenant_new *in, struct store_tenant *out, struct mu_error *err)
{
	(void)p;
	return store_tenant_create(db, a, in, out, err);
}

int ops_quota_put(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		  const struct store_quota *in, struct store_quota *out, struct mu_error *err)
{
	(void)p;
	return store_quota_put(db, a, in, out, err);
}

int ops_quota_delete(PGconn *db, const struct ops_principal *p, const char *tenant,
		     const char *gpu_model, struct mu_error *err)
{
	(void)p;
	return store_quota_delete(db, tenant, gpu_model ? gpu_model : "", err);
}

int ops_pclass_create(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		      const struct store_pclass *in, struct store_pclass *out, struct mu_error *err)
{
	(void)p;
	return store_pclass_create(db, a, in, out, err);
}

int ops_pclass_update(PGconn *db, struct mu_arena *a, const struct ops_principal *p, const char *name,
		      unsigned set, const struct store_pclass *in, struct store_pclass *out,
		      struct mu_error *err)
{
	(void)p;
	return store_pclass_update(db, a, name, set, in, out, err);
}

int ops_pclass_delete(PGconn *db, const struct ops_principal *p, const char *name,
		      struct mu_error *err)
{
	(void)p;
	return store_pclass_delete(db, name, err);
}

int ops_node_drain(PGconn *db, struct mu_arena *a, const struct ops_principal *p, const char *name,
		   bool drain, const char *reason, struct store_node *out, struct mu_error *err)
{
	int ret = store_node_drain(db, name, drain, drain ? (reason ? reason : "") : NULL, err);

	(void)p;
	if (ret < 0)
		return ret;
	return store_node_get(db, a, name, out, err);
}

int ops_settings_update(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
			const char *const *names, const char *const *vals, size_t n,
			const char ***values, struct mu_error *err)
{
	char who[64];
	int ret;

	snprintf(who, sizeof(who), "token:%lld", (long long)p->token_id);
	ret = store_settings_update(db, names, vals, n, who, err);
	if (ret < 0)
		return ret;
	return store_settings_get(db, a, values, err);
}
