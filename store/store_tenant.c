#include "store_tenant.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

#define TENANT_COLS                                                                   \
	"t.id, t.name, p.name, t.path, t.shares, t.description, " STORE__TS("t.created_at") \
	", " STORE__TS("t.updated_at") ", t.unix_account"
#define TENANT_FROM " FROM tenants t LEFT JOIN tenants p ON p.id = t.parent_id "

const char *store__admin_fmt(char *buf, int64_t v)
{
	snprintf(buf, 24, "%" PRId64, v);
	return buf;
}

const char *store__admin_str(struct mu_arena *a, const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		return NULL;
	return mu_arena_strdup(a, PQgetvalue(r, row, col));
}

int64_t store__admin_i64(const PGresult *r, int row, int col, int64_t if_null)
{
	if (PQgetisnull(r, row, col))
		return if_null;
	return store_db_get_int64(r, row, col);
}

int store__admin_event(PGconn *c, const char *kind, int64_t tenant_id, int64_t node_id,
		       const char *reason, const char *const *kv, int nkv, struct mu_error *err)
{
	char tb[24], nb[24], keys[8][64];
	const char *params[4 + 16] = {
		kind,
		tenant_id ? store__admin_fmt(tb, tenant_id) : NULL,
		node_id ? store__admin_fmt(nb, node_id) : NULL,
		reason ? reason : "",
	};
	char sql[1024];
	size_t len;

	if (nkv > 8)
		nkv = 8;
	len = (size_t)snprintf(sql, sizeof(sql),
			       "INSERT INTO events (kind, tenant_id, node_id, reason, data) VALUES "
			       "($1, $2::bigint, $3::bigint, $4, jsonb_build_object(");
	for (int i = 0; i < nkv; i++) {
		size_t kl = strlen(kv[2 * i]);
		bool num = kl > 0 && kv[2 * i][kl - 1] == '#';
		snprintf(keys[i], sizeof(keys[i]), "%.*s", (int)(num ? kl - 1 : kl), kv[2 * i]);
		params[4 + 2 * i] = keys[i];
		params[5 + 2 * i] = kv[2 * i + 1];
		len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s$%d::text, $%d::%s",
					i ? ", " : "", 5 + 2 * i, 6 + 2 * i, num ? "numeric" : "text");
	}
	snprintf(sql + len, sizeof(sql) - len, "))");
	return store_db_exec(c, sql, 4 + 2 * nkv, params, NULL, err);
}

static void tenant_row(struct mu_arena *a, const PGresult *r, int row, struct store_tenant *t)
{
	t->id = store_db_get_int64(r, row, 0);
	t->name = store__admin_str(a, r, row, 1);
	t->parent = store__admin_str(a, r, row, 2);
	t->path = store__admin_str(a, r, row, 3);
	t->shares = store_db_get_int64(r, row, 4);
	t->description = store__admin_str(a, r, row, 5);
	t->created_at = store__admin_str(a, r, row, 6);
	t->updated_at = store__admin_str(a, r, row, 7);
	t->unix_account = store__admin_str(a, r, row, 8);
}

int store_tenant_get(PGconn *c, struct mu_arena *a, const char *scope, const char *name,
		     struct store_tenant *out, struct mu_error *err)
{
	const char *params[2] = { name, scope };
	PGresult *r = NULL;
	int ret;

	ret = store_db_exec(c,
			    "SELECT " TENANT_COLS TENANT_FROM
			    "WHERE t.name = $1 AND " STORE__IN_SCOPE("t.path", "$2"),
			    2, params, &r, err);
	if (ret < 0)
		return ret;
	if (store_db_nrows(r) != 1)
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no tenant \"%.64s\"", name);
	else
		tenant_row(a, r, 0, out);
	store_db_clear(r);
	return ret;
}

int store_tenant_list(PGconn *c, struct mu_arena *a, const char *scope, const char *cursor,
		      int limit, struct store_tenant_page *out, struct mu_error *err)
{
	char lb[24];
	const char *params[3] = { scope, cursor, store__admin_fmt(lb, limit + 1) };
	PGresult *r = NULL;
	int ret, n;

	memset(out, 0, sizeof(*out));
	ret = store_db_exec(c,
			    "SELECT " TENANT_COLS TENANT_FROM "WHERE " STORE__IN_SCOPE("t.path", "$1")
			    " AND ($2::text IS NULL OR t.path > $2) ORDER BY t.path LIMIT $3::int",
			    3, params, &r, err);
	if (ret < 0)
		return ret;
	n = store_db_nrows(r);
	if (n > limit) {
		n = limit;
		out->next_cursor = store__admin_str(a, r, limit - 1, 3);
	}
	out->items = mu_arena_alloc(a, sizeof(*out->items) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		tenant_row(a, r, i, &out->items[i]);
	out->n = (size_t)n;
	store_db_clear(r);
	return 0;
}

/* A change of the tenant tree or shares: the scheduler plans with it at once, not at its next
 * periodic cycle (its snapshot reads the tenants whole every refresh). */
static int tenant_notify(PGconn *c, int ret, struct mu_error *err)
{
	return ret ? ret : store_db_exec(c, "SELECT pg_notify('muster_sched', 'tenant')", 0, NULL, NULL, err);
}

struct tenant_create {
	const struct store_tenant_new *in;
	int64_t id;
};

static int tenant_create_tx(PGconn *c, void *arg, struct mu_error *err)
{
	struct tenant_create *tc = arg;
	const struct store_tenant_new *in = tc->in;
	char sb[24];
	const char *params[5] = { in->name, in->parent ? in->parent : "root",
				  store__admin_fmt(sb, in->shares), in->description ? in->description : "",
				  in->unix_account ? in->unix_account : "" };
	PGresult *r = NULL;
	int ret;

	if (strcmp(in->name, "root") == 0)
		return mu_error_set(err, MU_ECONFLICT, "name", "tenant \"root\" exists already");
	ret = store_db_exec(c,
			    "INSERT INTO tenants (name, parent_id, path, shares, description, unix_account) "
			    "SELECT $1, p.id, p.path || '/' || $1, $3::int, $4, $5 FROM tenants p "
			    "WHERE p.name = $2 RETURNING id",
			    5, params, &r, err);
	if (ret == MU_ECONFLICT)
		return mu_error_set(err, MU_ECONFLICT, "name", "tenant \"%s\" exists already", in->name);
	if (ret < 0)
		return ret;
	if (store_db_nrows(r) != 1) {
		store_db_clear(r);
		return mu_error_set(err, MU_ENOTFOUND, "parent", "no tenant \"%.64s\"", params[1]);
	}
	tc->id = store_db_get_int64(r, 0, 0);
	store_db_clear(r);
	{
		const char *kv[] = { "name", in->name, "parent", params[1], "shares#", params[2],
				     "unix_account", params[4] };
		return tenant_notify(c, store__admin_event(c, "tenant.created", tc->id, 0, "", kv, 4, err), err);
	}
}

int store_tenant_create(PGconn *c, struct mu_arena *a, const struct store_tenant_new *in,
			struct store_tenant *out, struct mu_error *err)
{
	struct tenant_create tc = { .in = in };
	int ret = store_db_tx(c, NULL, 0, tenant_create_tx, &tc, err);

	if (ret < 0)
		return ret;
	return store_tenant_get(c, a, NULL, in->name, out, err);
}

struct tenant_update {
	const char *name;
	const struct store_tenant_patch *p;
};

static int tenant_update_tx(PGconn *c, void *arg, struct mu_error *err)
{
	struct tenant_update *tu = arg;
	const struct store_tenant_patch *p = tu->p;
	const char *params[4];
	char sb[24], ib[24];
	PGresult *r = NULL;
	const char *kv[8];
	int nkv = 0;
	int64_t id;
	char *old_path = NULL;
	int ret;

	if (p->set & STORE_TENANT_SET_PARENT) {
		/* Moves are serialised: two concurrent moves could otherwise
		 * each pass the cycle check and together make a cycle. */
		ret = store_db_exec_simple(c, "LOCK TABLE tenants IN SHARE ROW EXCLUSIVE MODE", err);
		if (ret < 0)
			goto out;
	}
	params[0] = tu->name;
	ret = store_db_exec(c, "SELECT id, path FROM tenants WHERE name = $1 FOR UPDATE", 1, params,
			    &r, err);
	if (ret < 0)
		goto out;
	if (store_db_nrows(r) != 1) {
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no tenant \"%.64s\"", tu->name);
		goto out;
	}
	id = store_db_get_int64(r, 0, 0);
	old_path = mu_strdup(store_db_get(r, 0, 1));
	store_db_clear(r);
	r = NULL;

	if (p->set & STORE_TENANT_SET_PARENT) {
		const char *np_path;
		size_t ol = strlen(old_path);

		if (strcmp(tu->name, "root") == 0) {
			ret = mu_error_set(err, MU_EINVAL, "parent", "root has no parent");
			goto out;
		}
		params[0] = p->parent;
		ret = store_db_exec(c, "SELECT id, path FROM tenants WHERE name = $1", 1, params, &r, err);
		if (ret < 0)
			goto out;
		if (store_db_nrows(r) != 1) {
			ret = mu_error_set(err, MU_ENOTFOUND, "parent", "no tenant \"%.64s\"", p->parent);
			goto out;
		}
		np_path = store_db_get(r, 0, 1);
		if (strcmp(np_path, old_path) == 0 ||
		    (strncmp(np_path, old_path, ol) == 0 && np_path[ol] == '/')) {
			ret = mu_error_set(err, MU_EINVAL, "parent",
					   "\"%.64s\" is \"%.64s\" or under it: that would make a cycle",
					   p->parent, tu->name);
			goto out;
		}
		params[0] = store__admin_fmt(ib, id);
		params[1] = store_db_get(r, 0, 0);
		ret = store_db_exec(c, "UPDATE tenants SET parent_id = $2::bigint WHERE id = $1::bigint",
				    2, params, NULL, err);
		if (ret < 0)
			goto out;
		/* Names are unique and end every path, so no intermediate state
		 * of this update can collide with another row's path. */
		params[0] = old_path;
		params[1] = np_path;
		params[2] = tu->name;
		ret = store_db_exec(c,
				    "UPDATE tenants SET path = $2 || '/' || $3 || substr(path, length($1) + 1), "
				    "updated_at = now() WHERE path = $1 OR starts_with(path, $1 || '/')",
				    3, params, NULL, err);
		if (ret < 0)
			goto out;
		kv[2 * nkv] = "parent";
		kv[2 * nkv++ + 1] = p->parent;
		store_db_clear(r);
		r = NULL;
	}
	params[0] = store__admin_fmt(ib, id);
	params[1] = (p->set & STORE_TENANT_SET_SHARES) ? store__admin_fmt(sb, p->shares) : NULL;
	params[2] = (p->set & STORE_TENANT_SET_DESCRIPTION) ? p->description : NULL;
	params[3] = (p->set & STORE_TENANT_SET_UNIX_ACCOUNT) ? (p->unix_account ? p->unix_account : "")
							      : NULL;
	ret = store_db_exec(c,
			    "UPDATE tenants SET shares = COALESCE($2::int, shares), "
			    "description = COALESCE($3, description), "
			    "unix_account = COALESCE($4, unix_account), updated_at = now() "
			    "WHERE id = $1::bigint",
			    4, params, NULL, err);
	if (ret < 0)
		goto out;
	if (p->set & STORE_TENANT_SET_SHARES) {
		kv[2 * nkv] = "shares#";
		kv[2 * nkv++ + 1] = params[1];
	}
	if (p->set & STORE_TENANT_SET_DESCRIPTION) {
		kv[2 * nkv] = "description";
		kv[2 * nkv++ + 1] = p->description;
	}
	if (p->set & STORE_TENANT_SET_UNIX_ACCOUNT) {
		kv[2 * nkv] = "unix_account";
		kv[2 * nkv++ + 1] = params[3];
	}
	ret = tenant_notify(c, store__admin_event(c, "tenant.updated", id, 0, "", kv, nkv, err), err);
out:
	store_db_clear(r);
	mu_free(old_path);
	return ret;
}

int store_tenant_update(PGconn *c, struct mu_arena *a, const char *name,
			const struct store_tenant_patch *p, struct store_tenant *out,
			struct mu_error *err)
{
	struct tenant_update tu = { .name = name, .p = p };
	int ret = store_db_tx(c, NULL, 0, tenant_update_tx, &tu, err);

	if (ret < 0)
		return ret;
	return store_tenant_get(c, a, NULL, name, out, err);
}

static int tenant_delete_tx(PGconn *c, void *arg, struct mu_error *err)
{
	const char *name = arg;
	const char *params[1] = { name };
	char ib[24];
	PGresult *r = NULL;
	int64_t id;
	int ret;

	ret = store_db_exec(c,
			    "SELECT t.id, "
			    " EXISTS (SELECT 1 FROM tenants k WHERE k.parent_id = t.id), "
			    " EXISTS (SELECT 1 FROM jobs j WHERE j.tenant_id = t.id "
			    "         AND j.state IN ('PENDING', 'STARTING', 'RUNNING')), "
			    " EXISTS (SELECT 1 FROM jobs j WHERE j.tenant_id = t.id) "
			    " OR EXISTS (SELECT 1 FROM usage_records u WHERE u.tenant_id = t.id) "
			    "FROM tenants t WHERE t.name = $1 FOR UPDATE OF t",
			    1, params, &r, err);
	if (ret < 0)
		goto out;
	if (store_db_nrows(r) != 1) {
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no tenant \"%.64s\"", name);
		goto out;
	}
	id = store_db_get_int64(r, 0, 0);
	if (strcmp(name, "root") == 0) {
		ret = mu_error_set(err, MU_ECONFLICT, "", "root cannot be deleted");
		goto out;
	}
	if (store_db_get_bool(r, 0, 1)) {
		ret = mu_error_set(err, MU_ECONFLICT, "", "tenant \"%s\" has child tenants", name);
		goto out;
	}
	if (store_db_get_bool(r, 0, 2)) {
		ret = mu_error_set(err, MU_ECONFLICT, "", "tenant \"%s\" has active jobs", name);
		goto out;
	}
	if (store_db_get_bool(r, 0, 3)) {
		ret = mu_error_set(err, MU_ECONFLICT, "",
				   "tenant \"%s\" has job history (kept for accounting)", name);
		goto out;
	}
	params[0] = store__admin_fmt(ib, id);
	ret = store_db_exec(c, "DELETE FROM tenants WHERE id = $1::bigint", 1, params, NULL, err);
	if (ret == MU_ECONFLICT)
		ret = mu_error_set(err, MU_ECONFLICT, "", "tenant \"%s\" is still referenced", name);
	if (ret < 0)
		goto out;
	{
		const char *kv[] = { "name", name };
		ret = tenant_notify(c, store__admin_event(c, "tenant.deleted", id, 0, "", kv, 1, err), err);
	}
out:
	store_db_clear(r);
	return ret;
}

int store_tenant_delete(PGconn *c, const char *name, struct mu_error *err)
{
	return store_db_tx(c, NULL, 0, tenant_delete_tx, (void *)name, err);
}
