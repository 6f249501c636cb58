/*
 * devdb.h - the embedded dev database: a private PostgreSQL cluster in a
 * state directory, on a Unix socket only. `make run`, the tests and
 * muster-devdb all use this code.
 *
 * Layout of a state directory D:
 *   D/data/          the cluster (PGDATA), owned by the server's user
 *   D/socket/        the Unix socket directory (listen_addresses = '')
 *   D/postgres.log   the server log
 *   D/devdb.lock     flock(2)ed while start/stop run, so they serialise
 * The server runs as `postgres` (via runuser) when the caller is root, else
 * as the caller. Its superuser is `postgres`; the database is `muster`.
 * fsync stays on: durability measured here is real.
 *
 * The URL: postgresql:///muster?host=D/socket&port=P&user=postgres
 *
 * Binaries: $MUSTER_PG_BINDIR, else the installed major matching
 * D/data/PG_VERSION, else the newest /usr/lib/postgresql/N/bin.
 *
 * Not thread-safe (runs child processes); meant for CLIs and tests.
 */
#ifndef STORE_DEVDB_H
#define STORE_DEVDB_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define STORE_DEVDB_PORT 5432 /* the socket's name; nothing listens on TCP */

/*
 * Creates the cluster when D has none (D is created), starts it when it is
 * not running (recovering from a crash and clearing a stale postmaster.pid
 * left by one), waits until it accepts connections and creates database
 * `muster`. Idempotent. On success writes the URL into url[urlsz].
 * Returns 0 or MU_E* with a message meant for a human in err.
 */
int store_devdb_start(const char *dir, char *url, size_t urlsz, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Stops the server (fast shutdown) and waits for it. Not running = 0. */
int store_devdb_stop(const char *dir, struct mu_error *err) __attribute__((warn_unused_result));

/* The URL of D's database (whether or not it runs). MU_EINVAL when the
 * socket path would be too long for a Unix socket. */
int store_devdb_url(const char *dir, char *url, size_t urlsz, struct mu_error *err)
	__attribute__((warn_unused_result));

/* *initialised: D holds a cluster; *running: its server accepts connections. */
int store_devdb_status(const char *dir, bool *initialised, bool *running, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
