/*
 * store_pclass.h - priority classes (Slurm's QOS). Exactly one class is
 * the default at any time once one is marked: marking another moves the
 * mark. Conventions as in store_tenant.h. Classes are global: every role
 * that may read them sees all of them.
 */
#ifndef STORE_PCLASS_H
#define STORE_PCLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"

struct store_pclass {
	int64_t id;
	const char *name;
	int64_t priority;
	bool preemptible;
	int64_t default_time_limit; /* seconds */
	int64_t max_time_limit;     /* seconds, -1 = no limit */
	int64_t grace_period;       /* seconds */
	bool is_default;
	const char *description;
	const char *created_at;
	const char *updated_at;
};

struct store_pclass_page {
	struct store_pclass *items;
	size_t n;
	const char *next_cursor;
};

/* Which fields of a PATCH are present. */
enum {
	STORE_PCLASS_SET_PRIORITY = 1u << 0,
	STORE_PCLASS_SET_PREEMPTIBLE = 1u << 1,
	STORE_PCLASS_SET_DEFAULT_TIME_LIMIT = 1u << 2,
	STORE_PCLASS_SET_MAX_TIME_LIMIT = 1u << 3,
	STORE_PCLASS_SET_GRACE_PERIOD = 1u << 4,
	STORE_PCLASS_SET_IS_DEFAULT = 1u << 5,
	STORE_PCLASS_SET_DESCRIPTION = 1u << 6,
};

/* Inserts `in` (all fields used; name unique → MU_ECONFLICT "name"). */
int store_pclass_create(PGconn *c, struct mu_arena *a, const struct store_pclass *in,
			struct store_pclass *out, struct mu_error *err) __attribute__((warn_unused_result));
int store_pclass_get(PGconn *c, struct mu_arena *a, const char *name, struct store_pclass *out,
		     struct mu_error *err) __attribute__((warn_unused_result));
int store_pclass_list(PGconn *c, struct mu_arena *a, const char *cursor, int limit,
		      struct store_pclass_page *out, struct mu_error *err) __attribute__((warn_unused_result));
/* Applies the fields of `p` named by `set`. Unmarking the default is
 * MU_ECONFLICT (mark another one instead); a default_time_limit above the
 * max_time_limit that results is MU_ERANGE "default_time_limit". */
int store_pclass_update(PGconn *c, struct mu_arena *a, const char *name, unsigned set,
			const struct store_pclass *p, struct store_pclass *out, struct mu_error *err)
	__attribute__((warn_unused_result));
/* MU_ECONFLICT for the default class, or one that jobs use. */
int store_pclass_delete(PGconn *c, const char *name, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
