#include "store_pclass.h"

#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "store_tenant.h"

#define PCLASS_COLS                                                                         \
	"id, name, priority, preemptible, default_time_limit, max_time_limit, grace_period, " \
	"is_default, description, " STORE__TS("created_at") ", " STORE__TS("updated_at")

static void pclass_row(struct mu_arena *a, const PGresult *r, int row, struct store_pclass *p)
{
	p->id = store_db_get_int64(r, row, 0);
	p->name = store__admin_str(a, r, row, 1);
	p->priority = store_db_get_int64(r, row, 2);
	p->preemptible = store_db_get_bool(r, row, 3);
	p->default_time_limit = store_db_get_int64(r, row, 4);
	p->max_time_limit = store__admin_i64(r, row, 5, -1);
	p->grace_period = store_db_get_int64(r, row, 6);
	p->is_default = store_db_get_bool(r, row, 7);
	p->description = store__admin_str(a, r, row, 8);
	p->created_at = store__admin_str(a, r, row, 9);
	p->updated_at = store__admin_str(a, r, row, 10);
}

int store_pclass_get(PGconn *c, struct mu_arena *a, const char *name, struct store_pclass *out,
		     struct mu_error *err)
{
	const char *params[1] = { name };
	PGresult *r = NULL;
	int ret;

	ret = store_db_exec(c, "SELECT " PCLASS_COLS " FROM priority_classes WHERE name = $1", 1,
			    params, &r, err);
	if (ret < 0)
		return ret;
	if (store_db_nrows(r) != 1)
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no priority class \"%.64s\"", name);
	else
		pclass_row(a, r, 0, out);
	store_db_clear(r);
	return ret;
}

int store_pclass_list(PGconn *c, struct mu_arena *a, const char *cursor, int limit,
		      struct store_pclass_page *out, struct mu_error *err)
{
	char lb[24];
	const char *params[2] = { cursor, store__admin_fmt(lb, limit + 1) };
	PGresult *r = NULL;
	int ret, n;

	memset(out, 0, sizeof(*out));
	ret = store_db_exec(c,
			    "SELECT " PCLASS_COLS " FROM priority_classes "
			    "WHERE $1::text IS NULL OR name > $1 ORDER BY name LIMIT $2::int",
			    2, params, &r, err);
	if (ret < 0)
		return ret;
	n = store_db_nrows(r);
	if (n > limit) {
		n = limit;
		out->next_cursor = store__admin_str(a, r, limit - 1, 1);
	}
	out->items = mu_arena_alloc(a, sizeof(*out->items) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		pclass_row(a, r, i, &out->items[i]);
	out->n = (size_t)n;
	store_db_clear(r);
	return 0;
}

/* Takes the default mark off every class; serialised so that two
 * concurrent "make me the default" both succeed, the later one winning. */
static int clear_default(PGconn *c, struct mu_error *err)
{
	int ret = store_db_exec_simple(c, "LOCK TABLE priority_classes IN SHARE ROW EXCLUSIVE MODE", err);
	if (ret < 0)
		return ret;
	return store_db_exec_simple(
		c, "UPDATE priority_classes SET is_default = false, updated_at = now() WHERE is_default",
		err);
}

static int pclass_event(PGconn *c, const char *kind, const char *name, struct mu_error *err)
{
	const char *kv[] = { "name", name };
	return store__admin_event(c, kind, 0, 0, "", kv, 1, err);
}

static int pclass_create_tx(PGconn *c, void *arg, struct mu_error *err)
{
	const struct store_pclass *p = arg;
	char b[4][24];
	const char *params[8] = {
		p->name,
		store__admin_fmt(b[0], p->priority),
		p->preemptible ? "true" : "false",
		store__admin_fmt(b[1], p->default_time_limit),
		p->max_time_limit < 0 ? NULL : store__admin_fmt(b[2], p->max_time_limit),
		store__admin_fmt(b[3], p->grace_period),
		p->is_default ? "true" : "false",
		p->description ? p->description : "",
	};
	int ret;

	if (p->is_default && (ret = clear_default(c, err)) < 0)
		return ret;
	ret = store_db_exec(c,
			    "INSERT INTO priority_classes (name, priority, preemptible, "
			    " default_time_limit, max_time_limit, grace_period, is_default, description) "
			    "VALUES ($1, $2::int, $3::bool, $4::int, $5::int, $6::int, $7::bool, $8)",
			    8, params, NULL, err);
	if (ret == MU_ECONFLICT)
		return mu_error_set(err, MU_ECONFLICT, "name", "priority class \"%s\" exists already",
				    p->name);
	if (ret < 0)
		return ret;
	return pclass_event(c, "priority_class.created", p->name, err);
}

int store_pclass_create(PGconn *c, struct mu_arena *a, const struct store_pclass *in,
			struct store_pclass *out, struct mu_error *err)
{
	int ret = store_db_tx(c, NULL, 0, pclass_create_tx, (void *)in, err);
	if (ret < 0)
		return ret;
	return store_pclass_get(c, a, in->name, out, err);
}

struct pclass_update {
	const char *name;
	unsigned set;
	const struct store_pclass *p;
};

static int pclass_update_tx(PGconn *c, void *arg, struct mu_error *err)
{
	struct pclass_update *pu = arg;
	const struct store_pclass *p = pu->p;
	unsigned set = pu->set;
	char b[4][24];
	const char *params[9];
	PGresult *r = NULL;
	int ret;

	params[0] = pu->name;
	ret = store_db_exec(c, "SELECT is_default FROM priority_classes WHERE name = $1 FOR UPDATE", 1,
			    params, &r, err);
	if (ret < 0)
		return ret;
	if (store_db_nrows(r) != 1) {
		store_db_clear(r);
		return mu_error_set(err, MU_ENOTFOUND, "", "no priority class \"%.64s\"", pu->name);
	}
	if ((set & STORE_PCLASS_SET_IS_DEFAULT) && !p->is_default && store_db_get_bool(r, 0, 0)) {
		store_db_clear(r);
		return mu_error_set(err, MU_ECONFLICT, "is_default",
				    "\"%s\" is the default class: make another class the default instead",
				    pu->name);
	}
	store_db_clear(r);
	if ((set & STORE_PCLASS_SET_IS_DEFAULT) && p->is_default && (ret = clear_default(c, err)) < 0)
		return ret;
	params[1] = (set & STORE_PCLASS_SET_PRIORITY) ? store__admin_fmt(b[0], p->priority) : NULL;
	params[2] = (set & STORE_PCLASS_SET_PREEMPTIBLE) ? (p->preemptible ? "true" : "false") : NULL;
	params[3] = (set & STORE_PCLASS_SET_DEFAULT_TIME_LIMIT)
			    ? store__admin_fmt(b[1], p->default_time_limit)
			    : NULL;
	params[4] = (set & STORE_PCLASS_SET_MAX_TIME_LIMIT) ? "true" : "false";
	params[5] = p->max_time_limit < 0 ? NULL : store__admin_fmt(b[2], p->max_time_limit);
	params[6] = (set & STORE_PCLASS_SET_GRACE_PERIOD) ? store__admin_fmt(b[3], p->grace_period)
							  : NULL;
	params[7] = (set & STORE_PCLASS_SET_IS_DEFAULT) ? (p->is_default ? "true" : "false") : NULL;
	params[8] = (set & STORE_PCLASS_SET_DESCRIPTION) ? p->description : NULL;
	ret = store_db_exec(c,
			    "UPDATE priority_classes SET priority = COALESCE($2::int, priority), "
			    " preemptible = COALESCE($3::bool, preemptible), "
			    " default_time_limit = COALESCE($4::int, default_time_limit), "
			    " max_time_limit = CASE WHEN $5::bool THEN $6::int ELSE max_time_limit END, "
			    " grace_period = COALESCE($7::int, grace_period), "
			    " is_default = COALESCE($8::bool, is_default), "
			    " description = COALESCE($9, description), updated_at = now() "
			    "WHERE name = $1 "
			    "RETURNING max_time_limit IS NULL OR default_time_limit <= max_time_limit",
			    9, params, &r, err);
	if (ret < 0)
		return ret;
	if (!store_db_get_bool(r, 0, 0)) {
		store_db_clear(r);
		return mu_error_set(err, MU_ERANGE,
				    (set & STORE_PCLASS_SET_DEFAULT_TIME_LIMIT) ? "default_time_limit"
										: "max_time_limit",
				    "default_time_limit must not exceed max_time_limit");
	}
	store_db_clear(r);
	return pclass_event(c, "priority_class.updated", pu->name, err);
}

int store_pclass_update(PGconn *c, struct mu_arena *a, const char *name, unsigned set,
			const struct store_pclass *p, struct store_pclass *out, struct mu_error *err)
{
	struct pclass_update pu = { name, set, p };
	int ret = store_db_tx(c, NULL, 0, pclass_update_tx, &pu, err);
	if (ret < 0)
		return ret;
	return store_pclass_get(c, a, name, out, err);
}

static int pclass_delete_tx(PGconn *c, void *arg, struct mu_error *err)
{
	const char *name = arg;
	const char *params[1] = { name };
	PGresult *r = NULL;
	int ret;

	ret = store_db_exec(c,
			    "SELECT p.is_default, "
			    " EXISTS (SELECT 1 FROM jobs j WHERE j.priority_class_id = p.id "
			    "         AND j.state IN ('PENDING', 'STARTING', 'RUNNING')), "
			    " EXISTS (SELECT 1 FROM jobs j WHERE j.priority_class_id = p.id) "
			    "FROM priority_classes p WHERE p.name = $1 FOR UPDATE",
			    1, params, &r, err);
	if (ret < 0)
		return ret;
	if (store_db_nrows(r) != 1)
		ret = mu_error_set(err, MU_ENOTFOUND, "", "no priority class \"%.64s\"", name);
	else if (store_db_get_bool(r, 0, 0))
		ret = mu_error_set(err, MU_ECONFLICT, "",
				   "\"%s\" is the default class: make another class the default first",
				   name);
	else if (store_db_get_bool(r, 0, 1))
		ret = mu_error_set(err, MU_ECONFLICT, "", "priority class \"%s\" is used by active jobs",
				   name);
	else if (store_db_get_bool(r, 0, 2))
		ret = mu_error_set(err, MU_ECONFLICT, "",
				   "priority class \"%s\" is used by finished jobs (kept for accounting)",
				   name);
	store_db_clear(r);
	if (ret < 0)
		return ret;
	ret = store_db_exec(c, "DELETE FROM priority_classes WHERE name = $1", 1, params, NULL, err);
	if (ret < 0)
		return ret;
	return pclass_event(c, "priority_class.deleted", name, err);
}

int store_pclass_delete(PGconn *c, const char *name, struct mu_error *err)
{
	return store_db_tx(c, NULL, 0, pclass_delete_tx, (void *)name, err);
}
