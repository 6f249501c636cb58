/*
 * ops_principal.c - the principal rules shared by REST and gRPC
 * (ops_principal.h).
 */
#include "ops_principal.h"

#include <string.h>

#include "jv.h"
#include "store_auth.h"

static const struct {
	int bit;
	const char *name;
} role_names[] = {
	{ OPS_ROLE_ADMIN, "admin" },
	{ OPS_ROLE_TENANT, "tenant" },
	{ OPS_ROLE_READER, "reader" },
	{ OPS_ROLE_AGENT, "agent" },
};
#define NROLES (sizeof(role_names) / sizeof(role_names[0]))

int ops_role_parse(const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < NROLES; i++)
		if (!strcmp(role_names[i].name, name))
			return role_names[i].bit;
	return 0;
}

const char *ops_role_name(int role)
{
	for (size_t i = 0; i < NROLES; i++)
		if (role_names[i].bit == role)
			return role_names[i].name;
	return "";
}

void ops_principal_from_store(struct ops_principal *out, const struct store_principal *p)
{
	out->role = ops_role_parse(p->role);
	out->token_id = p->token_id;
	out->tenant_id = p->tenant_id;
	out->tenant = p->tenant;
	out->tenant_path = p->tenant_path;
	out->user = p->user ? p->user : "";
	out->node = p->node;
}

const char *ops_scope_path(const struct ops_principal *p)
{
	if (p->role == OPS_ROLE_ADMIN)
		return NULL;
	/* a tenant token always has a tenant (schema CHECK); should one ever
	 * lack it, it sees nothing rather than everything */
	if (!p->tenant_path && p->role == OPS_ROLE_TENANT)
		return "\x01none";
	return p->tenant_path;
}

bool ops_path_within(const char *root, const char *path)
{
	size_t n = strlen(root);

	if (!path)
		return false;
	return !strncmp(root, path, n) && (path[n] == '\0' || path[n] == '/');
}

bool ops_tenant_visible(const struct ops_principal *p, const char *tenant_path)
{
	const char *scope = ops_scope_path(p);

	return !scope || ops_path_within(scope, tenant_path);
}

int ops_job_owner(const struct ops_principal *p, const char **tenant, const char **user,
		  const char *prefix, struct mu_error *err)
{
	const char *own_user = p->user ? p->user : "";

	if (p->role == OPS_ROLE_ADMIN) {
		if (!*tenant)
			return jv_fail(err, MU_EMISSING, prefix, "tenant",
				       "required with an admin token");
		if (!*user)
			*user = own_user;
		return 0;
	}
	if (*user)
		return jv_fail(err, MU_EFORBIDDEN, prefix, "user", "only an admin may set the user");
	*user = own_user;
	if (!*tenant)
		*tenant = p->tenant;
	if (!*tenant)
		return jv_fail(err, MU_EMISSING, prefix, "tenant", "required");
	return 0;
}

bool ops_job_env_visible(const struct ops_principal *p, const char *job_user)
{
	if (p->role == OPS_ROLE_ADMIN)
		return true;
	return p->user && p->user[0] && job_user && !strcmp(p->user, job_user);
}

bool ops_node_visible(const struct ops_principal *p, const char *name)
{
	if (p->role != OPS_ROLE_AGENT)
		return true;
	return p->node && name && !strcmp(p->node, name);
}
