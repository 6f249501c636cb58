/*
 * ops_principal.h - who is calling, and what that lets them see and do:
 * the one copy of the rules REST (api/rest_<area>.c) and gRPC (api/grpc/)
 * both apply. Pure: no I/O, no threads; unit-tested (tests/unit/api/
 * test_ops_principal.c).
 *
 * A principal is built once per call from a token lookup
 * (ops_principal_from_store, or the shared cache in ops_auth.h) and read by
 * the rules below; its strings are borrowed (the call's arena).
 */
#ifndef MU_OPS_PRINCIPAL_H
#define MU_OPS_PRINCIPAL_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* Roles, as a bitmask: a route or method lists the roles allowed to call it. */
enum ops_role {
	OPS_ROLE_ADMIN = 1 << 0,
	OPS_ROLE_TENANT = 1 << 1,
	OPS_ROLE_READER = 1 << 2,
	OPS_ROLE_AGENT = 1 << 3,
};
#define OPS_PUBLIC 0 /* no token needed */
#define OPS_ADMIN (OPS_ROLE_ADMIN)
#define OPS_WRITERS (OPS_ROLE_ADMIN | OPS_ROLE_TENANT)
#define OPS_READERS (OPS_ROLE_ADMIN | OPS_ROLE_TENANT | OPS_ROLE_READER)
#define OPS_ANYONE (OPS_ROLE_ADMIN | OPS_ROLE_TENANT | OPS_ROLE_READER | OPS_ROLE_AGENT)
#define OPS_ROLE_MASK 0xff
/* Not a role: a REST route flag that selects the --max-batch-body limit. */
#define OPS_BIG_BODY (1 << 8)

struct ops_principal {
	int role;                /* one OPS_ROLE_*; 0 = anonymous (public route) */
	int64_t token_id;
	int64_t tenant_id;       /* 0 = not scoped to a tenant (admin, global reader) */
	const char *tenant;      /* tenant name, or NULL when not scoped */
	const char *tenant_path; /* "root/ml/vision", or NULL when not scoped */
	const char *user;        /* token's user_name, "" when none */
	const char *node;        /* agent tokens: the node name, else NULL */
};

/* The role named by the database ("admin", "tenant", "reader", "agent"):
 * its OPS_ROLE_* bit, 0 for anything else (NULL included). */
int ops_role_parse(const char *name);
/* The name of one OPS_ROLE_* bit, "" for anything else. */
const char *ops_role_name(int role);

struct store_principal;
/* From a token lookup: strings borrowed from *p; user "" when none. */
void ops_principal_from_store(struct ops_principal *out, const struct store_principal *p);

/*
 * Tenant scope: the caller's subtree root path, or NULL when the caller
 * sees everything (admin, global reader). A tenant token without a tenant
 * (the schema forbids it) sees nothing rather than everything. Store
 * queries filter with `($1::text IS NULL OR t.path = $1 OR
 * starts_with(t.path, $1 || '/'))`; anything outside answers 404.
 */
const char *ops_scope_path(const struct ops_principal *p);
/* tenant_path equals the scope or starts with scope + "/". */
bool ops_tenant_visible(const struct ops_principal *p, const char *tenant_path);
/* The same for a scope held apart from its principal (an event stream's):
 * `path` is `root` or below it; false when path is NULL. */
bool ops_path_within(const char *root, const char *path);

/*
 * A new job's tenant and user from the caller (submit, batch, dry-run):
 * an admin names the tenant and may name the user (default: the token's);
 * anyone else may not name a user (403 on `user`) and defaults to the
 * token's tenant. *tenant / *user are NULL when the body did not set them;
 * fields are named `prefix` + key (batch: "jobs.3."). 0, or MU_EMISSING /
 * MU_EFORBIDDEN with err filled.
 */
int ops_job_owner(const struct ops_principal *p, const char **tenant, const char **user,
		  const char *prefix, struct mu_error *err);

/* Whether the caller may read a job's env values (admins and the job's
 * own user; others see the names only). */
bool ops_job_env_visible(const struct ops_principal *p, const char *job_user);

/* Whether the caller may read node `name`: anyone but an agent, and an
 * agent for its own node only. */
bool ops_node_visible(const struct ops_principal *p, const char *name);

#endif
