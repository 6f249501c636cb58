/* migrate.c - see migrate.h. */
#include "migrate.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "log.h"

#define LOCK_KEY_STR "7887337266164662273" /* STORE_MIGRATE_LOCK_KEY in decimal */

_Static_assert(STORE_MIGRATE_LOCK_KEY == INT64_C(7887337266164662273), "LOCK_KEY_STR is stale");

size_t store_migrations_count(void)
{
	return store__migrations_count;
}

const struct store_migration *store_migration_at(size_t i)
{
	return i < store__migrations_count ? &store__migrations[i] : NULL;
}

int store_migrations_latest(void)
{
	return store__migrations_count ? store__migrations[store__migrations_count - 1].version : 0;
}

static const struct store_migration *find(int version)
{
	for (size_t i = 0; i < store__migrations_count; i++)
		if (store__migrations[i].version == version)
			return &store__migrations[i];
	return NULL;
}

/* Rows of schema_migrations (version, checksum), or an empty result when the
 * table does not exist yet. *res is new. */
static int read_applied(PGconn *c, PGresult **res, struct mu_error *err)
{
	int64_t exists = 0;
	int ret = store_db_query_int64(
		c, "SELECT (to_regclass('schema_migrations') IS NOT NULL)::int", 0, NULL, &exists, err);

	*res = NULL;
	if (ret)
		return ret;
	if (!exists)
		return store_db_exec(c, "SELECT 1 WHERE false", 0, NULL, res, err);
	return store_db_exec(c, "SELECT version, checksum, name FROM schema_migrations ORDER BY version",
			     0, NULL, res, err);
}

/* Checks the applied rows against the embedded table. Returns 0 when the
 * database is not ahead of or different from this binary; counts the
 * embedded migrations already applied into *napplied. */
static int validate(const PGresult *rows, size_t *napplied, struct mu_error *err)
{
	*napplied = 0;
	for (int i = 0; i < store_db_nrows(rows); i++) {
		int v = (int)store_db_get_int64(rows, i, 0);
		const struct store_migration *m = find(v);
		if (!m)
			return mu_error_set(err, MU_ESTATE, "",
					    "the database has migration %03d (%s) that this binary does "
					    "not know: it was migrated by a newer muster; upgrade this binary",
					    v, store_db_get(rows, i, 2));
		if (strcmp(m->checksum, store_db_get(rows, i, 1)) != 0)
			return mu_error_set(err, MU_ESTATE, "",
					    "migration %s was changed after it was applied (checksum "
					    "%.12s in the database, %.12s in this binary): never edit an "
					    "applied migration, add a new one",
					    m->name, store_db_get(rows, i, 1), m->checksum);
		(*napplied)++;
	}
	return 0;
}

static bool is_applied(const PGresult *rows, int version)
{
	for (int i = 0; i < store_db_nrows(rows); i++)
		if (store_db_get_int64(rows, i, 0) == version)
			return true;
	return false;
}

struct apply_arg {
	const struct store_migration *m;
};

static int apply_one(PGconn *c, void *argp, struct mu_error *err)
{
	const struct store_migration *m = ((struct apply_arg *)argp)->m;
	char version[16];
	const char *params[3] = { version, m->name, m->checksum };
	int ret;

	snprintf(version, sizeof(version), "%d", m->version);
	ret = store_db_exec_simple(c, m->sql, err);
	if (ret) {
		char why[sizeof(err->msg)];
		if (err) {
			memcpy(why, err->msg, sizeof(why));
			mu_error_set(err, ret, err->field, "migration %s failed: %s", m->name, why);
		}
		return ret;
	}
	return store_db_exec(c,
			     "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
			     3, params, NULL, err);
}

int store_migrate_n(PGconn *c, int *applied, struct mu_error *err)
{
	PGresult *rows = NULL;
	size_t napplied = 0;
	int count = 0;
	int ret;

	if (applied)
		*applied = 0;
	/* Session lock: held across the per-migration transactions below and
	 * released by the server if this process dies. */
	ret = store_db_exec_simple(c, "SELECT pg_advisory_lock(" LOCK_KEY_STR ")", err);
	if (ret)
		return ret;

	ret = store_db_exec_simple(c,
				   "SET client_min_messages = warning;"
				   "CREATE TABLE IF NOT EXISTS schema_migrations ("
				   " version    integer PRIMARY KEY,"
				   " name       text NOT NULL,"
				   " checksum   text NOT NULL,"
				   " applied_at timestamptz NOT NULL DEFAULT now());"
				   "RESET client_min_messages",
				   err);
	if (ret)
		goto out_unlock;
	ret = read_applied(c, &rows, err);
	if (ret)
		goto out_unlock;
	ret = validate(rows, &napplied, err);
	if (ret)
		goto out_unlock;

	for (size_t i = 0; i < store__migrations_count; i++) {
		struct apply_arg arg = { &store__migrations[i] };
		if (is_applied(rows, arg.m->version))
			continue;
		ret = store_db_tx(c, NULL, 1, apply_one, &arg, err);
		if (ret)
			goto out_unlock;
		mu_info("migration=%s applied", arg.m->name);
		count++;
	}
	if (applied)
		*applied = count;

out_unlock:
	store_db_clear(rows);
	store_db_rollback(c);
	if (store_db_ok(c))
		PQclear(PQexec(c, "SELECT pg_advisory_unlock(" LOCK_KEY_STR ")"));
	return ret;
}

int store_migrate(PGconn *c, struct mu_error *err)
{
	return store_migrate_n(c, NULL, err);
}

int store_migrations_current(PGconn *c, bool *current, struct mu_error *err)
{
	PGresult *rows = NULL;
	struct mu_error verr;
	size_t napplied = 0;
	int ret;

	*current = false;
	ret = read_applied(c, &rows, err);
	if (ret)
		goto out;
	*current = validate(rows, &napplied, &verr) == 0 && napplied == store__migrations_count;
out:
	store_db_clear(rows);
	return ret;
}
