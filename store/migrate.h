/*
 * migrate.h - the schema migrations compiled into every binary.
 *
 * store/migrations/NNN_name.sql files are embedded at build time (in numeric
 * order; adding a file needs no CMake edit). Each file runs in its own
 * transaction, so it must not contain BEGIN/COMMIT or statements that cannot
 * run in a transaction (CREATE INDEX CONCURRENTLY, ALTER TYPE ... ADD VALUE
 * used in the same file). Applied migrations are recorded in
 * schema_migrations(version, name, checksum, applied_at); never edit an
 * applied file: its checksum changes and binaries refuse the database.
 *
 * Numbers: 001-009 core model, 010-019 API, 020-029 scheduler, 030-039
 * agents. A pending migration numbered below one already applied (another
 * area's range) is applied too: areas do not depend on each other's order.
 *
 * Concurrency: store_migrate takes the session advisory lock
 * STORE_MIGRATE_LOCK_KEY for its whole run, so two replicas starting at
 * once apply each migration exactly once (the second waits, then finds
 * nothing to do). Other advisory-lock users must pick other keys.
 */
#ifndef STORE_MIGRATE_H
#define STORE_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "error.h"

/* "muster" + 0x0001 as a bigint key for pg_advisory_lock. */
#define STORE_MIGRATE_LOCK_KEY INT64_C(0x6d75737465720001)

struct store_migration {
	int version;          /* 1 for 001_init.sql */
	const char *name;     /* "001_init" */
	const char *sql;      /* the file's text, NUL-terminated */
	size_t len;
	const char *checksum; /* SHA-256 of the file, lowercase hex */
};

/* The embedded migrations in ascending version order (static storage). */
size_t store_migrations_count(void);
const struct store_migration *store_migration_at(size_t i);
int store_migrations_latest(void); /* highest embedded version, 0 if none */

/*
 * Applies every pending migration in order, each in its own transaction,
 * and records it. Refuses (MU_ESTATE, nothing applied) when the database
 * holds a version this binary does not know (a newer muster migrated it) or
 * an applied migration whose checksum differs from the embedded file.
 * Returns 0 or a MU_E* code; a failing migration is rolled back whole and
 * its SQL error is in err. Logs one line per applied migration.
 */
int store_migrate(PGconn *c, struct mu_error *err) __attribute__((warn_unused_result));
/* The same; *applied (may be NULL) gets how many this call applied. */
int store_migrate_n(PGconn *c, int *applied, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * For /readyz: *current = true when the database holds exactly the
 * embedded migrations with matching checksums (no table yet = false).
 * Returns 0, or a MU_E* code when the database cannot be asked.
 */
int store_migrations_current(PGconn *c, bool *current, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Internal: the generated table (migrations_gen.c). */
extern const struct store_migration store__migrations[];
extern const size_t store__migrations_count;

#endif
