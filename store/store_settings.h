/*
 * store_settings.h - the cluster policy settings (store/settings.def, the
 * one table of their names, types, defaults, bounds and docs): read them
 * all, change some.
 *
 * Threading: the table is constant; the functions use the caller's
 * connection alone.
 */
#ifndef STORE_SETTINGS_H
#define STORE_SETTINGS_H

#include <stddef.h>

#include "alloc.h"
#include "db.h"
#include "error.h"

enum store_setting_type { MU_SET_INT, MU_SET_NUM, MU_SET_BOOL, MU_SET_LEVELS };

struct store_setting {
	const char *name;
	enum store_setting_type type;
	const char *default_json;
	double min, max;
	const char *doc;
};

/* The table, in settings.def order; *n gets its length. Static. */
const struct store_setting *store_settings_table(size_t *n);

/* The setting `name`, or NULL. */
const struct store_setting *store_settings_find(const char *name);

/* Every setting's value as JSON text, in table order: (*values)[i] for
 * row i, the stored value or the default when the row is missing (arena). */
int store_settings_get(PGconn *c, struct mu_arena *a, const char ***values, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * Writes n settings (names of the table, values as JSON text the caller
 * checked against their rows: api/codec_settings.c) in one transaction:
 * each value that differs from the stored one writes its row and an event
 * `settings.changed` (data: key, old, new, by); then NOTIFY muster_sched,
 * 'settings' wakes the leader, which reads them on its next cycle.
 */
int store_settings_update(PGconn *c, const char *const *names, const char *const *values, size_t n,
			  const char *who, struct mu_error *err) __attribute__((warn_unused_result));

#endif
