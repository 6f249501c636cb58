/* test_store_db.c - store/db.c and store/migrate.c against a real PostgreSQL
 * started with store/devdb.c in a temp dir. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db.h"
#include "devdb.h"
#include "error.h"
#include "fairtree.h"
#include "migrate.h"
#include "store_int.h"

static char dir[PATH_MAX];
static char url[PATH_MAX + 128];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int setup_db(void **state)
{
	struct mu_error err = { 0 };
	char tmpl[] = "/tmp/muster-unit.XXXXXX";
	(void)state;
	if (!mkdtemp(tmpl))
		return -1;
	chmod(tmpl, 0755);
	snprintf(dir, sizeof(dir), "%s/db", tmpl);
	if (store_devdb_start(dir, url, sizeof(url), &err) != 0) {
		fprintf(stderr, "devdb start: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown_db(void **state)
{
	struct mu_error err = { 0 };
	char top[PATH_MAX];
	(void)state;
	if (store_devdb_stop(dir, &err) != 0)
		fprintf(stderr, "devdb stop: %s\n", err.msg);
	snprintf(top, sizeof(top), "%s", dir);
	*strrchr(top, '/') = '\0';
	nftw(top, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static PGconn *conn(void)
{
	struct mu_error err = { 0 };
	PGconn *c = store_db_connect(url, "test_store_db", &err);
	if (!c)
		fail_msg("connect: %s", err.msg);
	return c;
}

static void sqlstate_table(void **state)
{
	(void)state;
	assert_int_equal(store_db_sqlstate_code("23505"), MU_ECONFLICT);
	assert_int_equal(store_db_sqlstate_code("23503"), MU_ENOTFOUND);
	assert_int_equal(store_db_sqlstate_code("23514"), MU_EINVAL);
	assert_int_equal(store_db_sqlstate_code("23502"), MU_EINVAL);
	assert_int_equal(store_db_sqlstate_code("22001"), MU_ETOOLONG);
	assert_int_equal(store_db_sqlstate_code("22003"), MU_ERANGE);
	assert_int_equal(store_db_sqlstate_code("22P02"), MU_EINVAL);
	assert_int_equal(store_db_sqlstate_code("40001"), MU_EUNAVAIL);
	assert_int_equal(store_db_sqlstate_code("40P01"), MU_EUNAVAIL);
	assert_int_equal(store_db_sqlstate_code("08006"), MU_EUNAVAIL);
	assert_int_equal(store_db_sqlstate_code("57P01"), MU_EUNAVAIL);
	assert_int_equal(store_db_sqlstate_code("42P01"), MU_EINTERNAL);
	assert_int_equal(store_db_sqlstate_code(NULL), MU_EUNAVAIL);
	assert_true(store_db_sqlstate_retryable("40001"));
	assert_true(store_db_sqlstate_retryable("40P01"));
	assert_false(store_db_sqlstate_retryable("23505"));
}

static void connect_failure_is_unavailable(void **state)
{
	struct mu_error err = { 0 };
	char bad[PATH_MAX + 64];
	(void)state;
	snprintf(bad, sizeof(bad), "postgresql:///muster?host=%s/nowhere&port=1", dir);
	assert_null(store_db_connect(bad, "x", &err));
	assert_int_equal(err.code, MU_EUNAVAIL);
	assert_non_null(strstr(err.msg, "connection failed"));
}

static void errors_map_to_codes(void **state)
{
	struct mu_error err = { 0 };
	PGconn *c = conn();
	const char *p[1];
	(void)state;
	assert_int_equal(store_db_exec_simple(c,
		"CREATE TABLE parent (id int PRIMARY KEY, name varchar(3) UNIQUE CHECK (name <> 'bad'));"
		"CREATE TABLE child (id int PRIMARY KEY, parent int REFERENCES parent(id));"
		"INSERT INTO parent VALUES (1, 'a'); INSERT INTO child VALUES (1, 1)", &err), 0);

	p[0] = "a";
	assert_int_equal(store_db_exec(c, "INSERT INTO parent VALUES (2, $1)", 1, p, NULL, &err),
			 MU_ECONFLICT);
	assert_string_equal(err.field, "parent_name_key");
	assert_non_null(strstr(err.msg, "SQLSTATE 23505"));

	assert_int_equal(store_db_exec_simple(c, "INSERT INTO child VALUES (2, 99)", &err), MU_ENOTFOUND);
	assert_string_equal(err.field, "child_parent_fkey");
	assert_int_equal(store_db_exec_simple(c, "DELETE FROM parent WHERE id = 1", &err), MU_ECONFLICT);

	p[0] = "bad";
	assert_int_equal(store_db_exec(c, "INSERT INTO parent VALUES (3, $1)", 1, p, NULL, &err),
			 MU_EINVAL);
	p[0] = "long";
	assert_int_equal(store_db_exec(c, "INSERT INTO parent VALUES (3, $1)", 1, p, NULL, &err),
			 MU_ETOOLONG);
	p[0] = "x";
	assert_int_equal(store_db_exec(c, "SELECT $1::int", 1, p, NULL, &err), MU_EINVAL);
	assert_int_equal(store_db_exec_simple(c, "SELECT * FROM no_such_table", &err), MU_EINTERNAL);

	/* parameters are never SQL */
	p[0] = "'); DROP TABLE parent; --";
	assert_int_equal(store_db_exec(c, "SELECT $1::text", 1, p, NULL, &err), 0);
	{
		int64_t n = 0;
		char s[8];
		assert_int_equal(store_db_query_int64(c, "SELECT count(*) FROM parent", 0, NULL, &n, &err), 0);
		assert_int_equal(n, 1);
		assert_int_equal(store_db_query_text(c, "SELECT NULL", 0, NULL, s, sizeof(s), &err), 0);
		assert_string_equal(s, "");
		assert_int_equal(store_db_query_text(c, "SELECT 1 WHERE false", 0, NULL, s, sizeof(s), &err),
				 MU_ENOTFOUND);
		assert_int_equal(store_db_query_text(c, "SELECT 'abcdefghij'", 0, NULL, s, sizeof(s), &err), 0);
		assert_string_equal(s, "abcdefg");
	}
	{
		PGresult *r = NULL;
		assert_int_equal(store_db_exec(c, "SELECT 42::bigint, NULL, true", 0, NULL, &r, &err), 0);
		assert_int_equal(store_db_nrows(r), 1);
		assert_int_equal(store_db_get_int64(r, 0, 0), 42);
		assert_true(store_db_is_null(r, 0, 1));
		assert_string_equal(store_db_get(r, 0, 1), "");
		assert_true(store_db_get_bool(r, 0, 2));
		assert_true(store_db_is_null(r, 5, 0)); /* out of range reads as NULL */
		store_db_clear(r);
	}
	{
		char *q = store_db_quote_ident("a\"b");
		assert_string_equal(q, "\"a\"\"b\"");
		free(q);
	}
	store_db_close(c);
}

/* A serialization failure inside store_db_tx: the first attempt reads the
 * counter, another session bumps it, the update then fails with 40001 and
 * store_db_tx runs the function again, which succeeds. */
struct bump {
	PGconn *other;
	int attempts;
};

static int bump_fn(PGconn *c, void *argp, struct mu_error *err)
{
	struct bump *b = argp;
	int64_t v;
	int ret;

	b->attempts++;
	ret = store_db_query_int64(c, "SELECT v FROM counter", 0, NULL, &v, err);
	if (ret)
		return ret;
	if (b->attempts == 1) {
		struct mu_error e2 = { 0 };
		assert_int_equal(store_db_exec_simple(b->other, "UPDATE counter SET v = v + 100", &e2), 0);
	}
	return store_db_exec_simple(c, "UPDATE counter SET v = v + 1", err);
}

static int swallow_fn(PGconn *c, void *argp, struct mu_error *err)
{
	struct mu_error ignored;
	(void)argp;
	(void)err;
	/* a bug: the error is ignored and 0 returned; COMMIT must not hide it */
	if (store_db_exec_simple(c, "SELECT 1/0", &ignored) == 0)
		return MU_EINTERNAL;
	return 0;
}

static void tx_retries_serialization_failures(void **state)
{
	struct mu_error err = { 0 };
	PGconn *c = conn();
	struct bump b = { conn(), 0 };
	int64_t v = 0;
	(void)state;
	assert_int_equal(store_db_exec_simple(c, "CREATE TABLE counter (v int); INSERT INTO counter VALUES (0)",
					      &err), 0);
	assert_int_equal(store_db_tx(c, "BEGIN ISOLATION LEVEL REPEATABLE READ", 3, bump_fn, &b, &err), 0);
	assert_int_equal(b.attempts, 2);
	assert_int_equal(store_db_query_int64(c, "SELECT v FROM counter", 0, NULL, &v, &err), 0);
	assert_int_equal(v, 101);

	assert_int_equal(store_db_tx(c, NULL, 3, swallow_fn, NULL, &err), MU_EINTERNAL);
	assert_non_null(strstr(err.msg, "rolled back"));
	assert_true(store_db_ok(c));
	store_db_close(b.other);
	store_db_close(c);
}

static void embedded_migrations_are_ordered(void **state)
{
	(void)state;
	assert_true(store_migrations_count() >= 1);
	assert_int_equal(store_migration_at(0)->version, 1);
	assert_string_equal(store_migration_at(0)->name, "001_init");
	for (size_t i = 0; i < store_migrations_count(); i++) {
		const struct store_migration *m = store_migration_at(i);
		assert_int_equal(strlen(m->checksum), 64);
		assert_int_equal(strlen(m->sql), m->len);
		if (i)
			assert_true(m->version > store_migration_at(i - 1)->version);
	}
	assert_null(store_migration_at(store_migrations_count()));
	assert_int_equal(store_migrations_latest(),
			 store_migration_at(store_migrations_count() - 1)->version);
}

static void migrations_current_for_readyz(void **state)
{
	struct mu_error err = { 0 };
	PGconn *c = conn();
	bool current = true;
	int applied = -1;
	(void)state;
	assert_int_equal(store_migrations_current(c, &current, &err), 0);
	assert_false(current); /* no schema_migrations yet */
	assert_int_equal(store_migrate_n(c, &applied, &err), 0);
	assert_int_equal(applied, (int)store_migrations_count());
	assert_int_equal(store_migrations_current(c, &current, &err), 0);
	assert_true(current);
	assert_int_equal(store_migrate_n(c, &applied, &err), 0);
	assert_int_equal(applied, 0);

	assert_int_equal(store_db_exec_simple(c, "INSERT INTO schema_migrations VALUES (998, '998_x', 'x')",
					      &err), 0);
	assert_int_equal(store_migrations_current(c, &current, &err), 0);
	assert_false(current);
	assert_int_equal(store_migrate(c, &err), MU_ESTATE);
	assert_non_null(strstr(err.msg, "998"));
	assert_int_equal(store_db_exec_simple(c, "DELETE FROM schema_migrations WHERE version = 998", &err), 0);
	/* the lock was released on the failure path: this would block otherwise */
	assert_int_equal(store_migrate(c, &err), 0);
	store_db_close(c);
}

/* Migration 180's muster_decay(), which every SQL site of fair-share decay
 * calls, computes what the core's fairtree_decay() does. */
static void decay_sql_matches_core(void **state)
{
	static const double cases[][3] = {
		{ 1000, 0, 604800 },      { 1000, 604800, 604800 }, { 12345.5, 86400, 604800 },
		{ 1e9, 2592000, 604800 }, { 7, 100, 0 },            { 7, -5, 60 },
		{ 0, 10, 10 },            { 3.5, 1e7, 1 },          { 1e12, 1.5, 2.25 },
		{ 42, 1, -1 },            { 5e6, 31536000, 604800 }, { 1, 1070, 1 },
		{ 1, 1080, 1 },           { 1e300, 1100, 1 },       { 1e-300, 1000, 1 },
		{ 3e-320, 2, 1 },         { 1e9, 1030, 1 },
	};
	struct mu_error err = { 0 };
	PGconn *c = conn();
	(void)state;
	assert_int_equal(store_migrate(c, &err), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char v[3][40];
		const char *p[3] = { v[0], v[1], v[2] };
		PGresult *r = NULL;
		double sql, core = fairtree_decay(cases[i][0], cases[i][1], cases[i][2]);

		for (int k = 0; k < 3; k++)
			snprintf(v[k], sizeof(v[k]), "%.17g", cases[i][k]);
		if (store_db_exec(c, "SELECT muster_decay($1::float8, $2::float8, $3::float8)", 3, p, &r, &err) < 0)
			fail_msg("muster_decay: %s", err.msg);
		sql = strtod(store_db_get(r, 0, 0), NULL);
		store_db_clear(r);
		if (fabs(sql - core) > 1e-12 * fabs(core) + 1e-300)
			fail_msg("muster_decay(%s, %s, %s) = %.17g, fairtree_decay %.17g", v[0], v[1], v[2], sql,
				 core);
	}
	store_db_close(c);
}

/* store__ts_text from TS_US gives TS's text (store_event_feed reads its
 * thousands of rows so), whatever the fraction and the session's zone. */
static void ts_text_matches_to_char(void **state)
{
	static const char *const cases[] = {
		"2026-12-02 20:37:40.823999+00", "2026-12-02 20:37:40.000999+00", "2026-12-02 20:37:40+00",
		"1999-12-31 23:59:59.999999+00", "1969-12-31 23:59:59.999+00",    "1965-06-01 12:00:00.0005+00",
		"0999-01-01 00:00:00.5+00",      "2024-02-29 23:00:00.123456-05", "infinity",
		"-infinity",                     "now",
	};
	struct mu_error err = { 0 };
	PGconn *c = conn();
	(void)state;

	if (store_db_exec_simple(c, "SET TIME ZONE 'Asia/Kolkata'", &err) < 0)
		fail_msg("set: %s", err.msg);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *p[1] = { cases[i] };
		PGresult *r = NULL;
		char got[STORE_TS_LEN];

		if (store_db_exec(c, "SELECT " TS("$1::timestamptz") ", " TS_US("$1::timestamptz"), 1, p,
				  &r, &err) < 0)
			fail_msg("%s: %s", cases[i], err.msg);
		store__ts_text(r, 0, 1, got);
		if (strcmp(got, store_db_get(r, 0, 0)))
			fail_msg("%s: store__ts_text %s, to_char %s", cases[i], got, store_db_get(r, 0, 0));
		store_db_clear(r);
	}
	store_db_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sqlstate_table),
		cmocka_unit_test(embedded_migrations_are_ordered),
		cmocka_unit_test(connect_failure_is_unavailable),
		cmocka_unit_test(errors_map_to_codes),
		cmocka_unit_test(tx_retries_serialization_failures),
		cmocka_unit_test(migrations_current_for_readyz),
		cmocka_unit_test(decay_sql_matches_core),
		cmocka_unit_test(ts_text_matches_to_char),
	};
	return cmocka_run_group_tests(tests, setup_db, teardown_db);
}
