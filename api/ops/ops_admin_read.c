/*
 * ops_admin_read.c - the admin reads (ops_admin_read.h).
 */
#include "ops_admin_read.h"

#include "codec_admin.h"
#include "ops_admin.h"
#include "store_settings.h"

static int check_name(const char *name, const char *what, struct mu_error *err)
{
	return ops_name_check(name, what, err);
}

int ops_tenant_list(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		    const struct ops_page_args *pg, struct store_tenant_page *out, struct mu_error *err)
{
	int ret = codec_cursor_check(CODEC_CURSOR_TENANTS, pg->cursor, err);

	if (ret < 0)
		return ret;
	return store_tenant_list(db, a, ops_scope_path(p), pg->cursor, pg->limit, out, err);
}

int ops_tenant_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p, const char *name,
		   struct store_tenant *out, struct mu_error *err)
{
	int ret = check_name(name, "tenant", err);

	if (ret < 0)
		return ret;
	return store_tenant_get(db, a, ops_scope_path(p), name, out, err);
}

int ops_quota_list(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		   const struct ops_page_args *pg, struct store_quota_page *out, struct mu_error *err)
{
	int ret = codec_cursor_check(CODEC_CURSOR_QUOTAS, pg->cursor, err);

	if (ret < 0)
		return ret;
	return store_quota_list(db, a, ops_scope_path(p), pg->cursor, pg->limit, out, err);
}

int ops_quota_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p, const char *tenant,
		  struct store_quota_page *out, struct mu_error *err)
{
	int ret = check_name(tenant, "tenant", err);

	if (ret < 0)
		return ret;
	return store_quota_get(db, a, ops_scope_path(p), tenant, out, err);
}

int ops_pclass_list(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		    const struct ops_page_args *pg, struct store_pclass_page *out, struct mu_error *err)
{
	int ret = codec_cursor_check(CODEC_CURSOR_PCLASSES, pg->cursor, err);

	(void)p; /* classes are cluster-wide: every reader sees them all */
	if (ret < 0)
		return ret;
	return store_pclass_list(db, a, pg->cursor, pg->limit, out, err);
}

int ops_pclass_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p, const char *name,
		   struct store_pclass *out, struct mu_error *err)
{
	int ret = check_name(name, "priority class", err);

	(void)p;
	if (ret < 0)
		return ret;
	return store_pclass_get(db, a, name, out, err);
}

int ops_token_list(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		   const struct ops_page_args *pg, struct store_token_page *out, struct mu_error *err)
{
	return store_token_admin_list(db, a, ops_scope_path(p), pg->cursor, pg->limit, out, err);
}

int ops_token_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p, int64_t id,
		  struct store_token *out, struct mu_error *err)
{
	if (id <= 0)
		return mu_error_set(err, MU_ENOTFOUND, "", "no such token");
	return store_token_admin_get(db, a, ops_scope_path(p), id, out, err);
}

int ops_node_list(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		  const struct ops_page_args *pg, struct store_node_page *out, struct mu_error *err)
{
	int ret = codec_cursor_check(CODEC_CURSOR_NODES, pg->cursor, err);

	(void)p; /* readers and up (agents read only their own, by name) */
	if (ret < 0)
		return ret;
	return store_node_list(db, a, pg->cursor, pg->limit, out, err);
}

int ops_node_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p, const char *name,
		 struct store_node *out, struct mu_error *err)
{
	int ret = ops_node_name_check(name, err);

	if (ret < 0)
		return ret;
	if (!ops_node_visible(p, name))
		return mu_error_set(err, MU_ENOTFOUND, "", "no such node");
	return store_node_get(db, a, name, out, err);
}

int ops_settings_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		     const char ***values, struct mu_error *err)
{
	(void)p; /* the policy is public to every reader */
	return store_settings_get(db, a, values, err);
}
