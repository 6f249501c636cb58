/*
 * store_tenant.h - tenants: the tree of org/team/project with fair-share
 * weights, and the small helpers every admin store module shares.
 *
 * Every function takes a connection the caller owns and uses it alone
 * (one pool worker). Writes run in their own transaction and write their
 * event row in it. Strings returned in structs are allocated in the arena
 * `a` the caller passes (valid until it is reset or released).
 *
 * Visibility: `scope` is the path of the tenant whose subtree the caller
 * may see (a tenant or tenant-bound reader token: rest_scope_path()), or
 * NULL for the whole tree (admin, global reader). A tenant outside the scope is MU_ENOTFOUND, never
 * MU_EFORBIDDEN, so existence does not leak.
 *
 * Errors: 0 or a negative MU_E* code with `err` (may be NULL) filled.
 */
#ifndef STORE_TENANT_H
#define STORE_TENANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"

struct store_tenant {
	int64_t id;
	const char *name;
	const char *parent;      /* NULL for root */
	const char *path;        /* "root/ml/vision" */
	int64_t shares;
	const char *description;
	const char *unix_account; /* "" = the jobs run as their own users */
	const char *created_at;  /* RFC 3339 UTC */
	const char *updated_at;
};

/* A page of a list: items in the arena; next_cursor NULL on the last page. */
struct store_tenant_page {
	struct store_tenant *items;
	size_t n;
	const char *next_cursor;
};

/* Body of a create. `parent` NULL = "root"; `description` NULL = "". */
struct store_tenant_new {
	const char *name;
	const char *parent;
	int64_t shares;
	const char *description;
	const char *unix_account; /* NULL = "" */
};

/* A PATCH: only the fields whose bit is set in `set` change. */
enum {
	STORE_TENANT_SET_SHARES = 1u << 0,
	STORE_TENANT_SET_DESCRIPTION = 1u << 1,
	STORE_TENANT_SET_PARENT = 1u << 2,
	STORE_TENANT_SET_UNIX_ACCOUNT = 1u << 3,
};
struct store_tenant_patch {
	unsigned set;
	int64_t shares;
	const char *description;
	const char *parent;
	const char *unix_account;
};

/* Creates a tenant under its parent (MU_ENOTFOUND field "parent" when the
 * parent does not exist; MU_ECONFLICT field "name" when the name is taken). */
int store_tenant_create(PGconn *c, struct mu_arena *a, const struct store_tenant_new *in,
			struct store_tenant *out, struct mu_error *err) __attribute__((warn_unused_result));
int store_tenant_get(PGconn *c, struct mu_arena *a, const char *scope, const char *name,
		     struct store_tenant *out, struct mu_error *err) __attribute__((warn_unused_result));
/* Tree order (by path). `cursor` NULL = first page; limit 1..1000. */
int store_tenant_list(PGconn *c, struct mu_arena *a, const char *scope, const char *cursor, int limit,
		      struct store_tenant_page *out, struct mu_error *err) __attribute__((warn_unused_result));
/* Changes shares/description and re-parents (moving the whole subtree's
 * paths); refuses moving root and cycles (MU_EINVAL field "parent"). */
int store_tenant_update(PGconn *c, struct mu_arena *a, const char *name,
			const struct store_tenant_patch *p, struct store_tenant *out,
			struct mu_error *err) __attribute__((warn_unused_result));
/* MU_ECONFLICT when it is root, has children, active jobs or job history. */
int store_tenant_delete(PGconn *c, const char *name, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * Internal to the admin store modules (store_tenant, store_quota,
 * store_pclass, store_node, store_token_admin).
 */
#define STORE__TS(col) "to_char((" col ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
/* A subtree test of the path column `col` against the scope path param `n`. */
#define STORE__IN_SCOPE(col, n) \
	"(" n "::text IS NULL OR " col " = " n " OR starts_with(" col ", " n " || '/'))"

/*
 * Inserts one event row; ids of 0 are NULL. `kv` holds `nkv` key/value
 * pairs (2*nkv strings, nkv <= 8) for its data object: a value NULL is JSON
 * null; a key ending in '#' (the '#' dropped) makes its value a number.
 */
int store__admin_event(PGconn *c, const char *kind, int64_t tenant_id, int64_t node_id,
		       const char *reason, const char *const *kv, int nkv, struct mu_error *err);
/* Arena copy of a result cell, NULL when SQL NULL. */
const char *store__admin_str(struct mu_arena *a, const PGresult *r, int row, int col);
/* The cell as an integer, `if_null` when SQL NULL. */
int64_t store__admin_i64(const PGresult *r, int row, int col, int64_t if_null);
/* Formats v in buf (at least 24 bytes) and returns buf. */
const char *store__admin_fmt(char *buf, int64_t v);

#endif
