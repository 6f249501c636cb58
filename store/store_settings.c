/* store_settings.c - see store_settings.h. */
#include "store_settings.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

static const struct store_setting table[] = {
#define MU_SETTING(name, type, def, lo, hi, doc) { #name, type, def, lo, hi, doc },
#include "settings.def"
#undef MU_SETTING
};

const struct store_setting *store_settings_table(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}

const struct store_setting *store_settings_find(const char *name)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(table[i].name, name))
			return &table[i];
	return NULL;
}

int store_settings_get(PGconn *c, struct mu_arena *a, const char ***values, struct mu_error *err)
{
	size_t n = sizeof(table) / sizeof(table[0]);
	const char **v = mu_arena_alloc(a, sizeof(*v) * (n + 1));
	PGresult *r = NULL;
	int ret;

	for (size_t i = 0; i < n; i++)
		v[i] = table[i].default_json;
	ret = store_db_exec(c, "SELECT key, value::text FROM settings ORDER BY key", 0, NULL, &r, err);
	if (ret < 0)
		goto out;
	for (int i = 0; i < store_db_nrows(r); i++) {
		const struct store_setting *s = store_settings_find(store_db_get(r, i, 0));

		if (s) /* only the table's settings are shown */
			v[s - table] = mu_arena_strdup(a, store_db_get(r, i, 1));
	}
	*values = v;
out:
	store_db_clear(r);
	return ret;
}

struct upd {
	const char *const *names, *const *values;
	size_t n;
	const char *who;
};

static int upd_tx(PGconn *c, void *arg, struct mu_error *err)
{
	static const char sql[] =
		"WITH o AS (SELECT value FROM settings WHERE key = $1),"
		" u AS (INSERT INTO settings (key, value, updated_at) VALUES ($1, $2::jsonb, now())"
		"   ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = now()"
		"   WHERE settings.value IS DISTINCT FROM excluded.value RETURNING key)"
		" INSERT INTO events (kind, reason, data)"
		" SELECT 'settings.changed', $1, jsonb_build_object('key', $1::text, 'old',"
		"   (SELECT value FROM o), 'new', $2::jsonb, 'by', $3::text) FROM u";
	struct upd *u = arg;
	int ret = 0;

	for (size_t i = 0; i < u->n && !ret; i++) {
		const char *p[3] = { u->names[i], u->values[i], u->who ? u->who : "" };

		ret = store_db_exec(c, sql, 3, p, NULL, err);
	}
	if (!ret)
		ret = store_db_exec(c, "SELECT pg_notify('muster_sched', 'settings')", 0, NULL, NULL, err);
	return ret;
}

int store_settings_update(PGconn *c, const char *const *names, const char *const *values, size_t n,
			  const char *who, struct mu_error *err)
{
	struct upd u = { names, values, n, who };

	for (size_t i = 0; i < n; i++)
		if (!store_settings_find(names[i]))
			return mu_error_set(err, MU_EUNKNOWNFIELD, names[i], "not a setting");
	return store_db_tx(c, NULL, 0, upd_tx, &u, err);
}
