/*
 * db.h - PostgreSQL connection helpers: connect with keepalives, run SQL
 * with parameters, map SQLSTATEs to MU_E* codes, run retried transactions.
 *
 * Only store/ sources call libpq; other modules may hold a PGconn * (declared
 * here as the opaque libpq type) and pass it to store functions.
 *
 * Error mapping (store_db_sqlstate_code):
 *   23505 unique_violation         -> MU_ECONFLICT
 *   23503 foreign_key_violation    -> MU_ENOTFOUND (insert/update names a missing row)
 *                                     MU_ECONFLICT (delete of a row still referenced)
 *   23514 check, 23502 not null,
 *   22xxx data exceptions, P0001   -> MU_EINVAL (22001 -> MU_ETOOLONG,
 *                                     22003 -> MU_ERANGE, 22021 -> MU_EUTF8)
 *   40001 serialization_failure,
 *   40P01 deadlock_detected        -> MU_EUNAVAIL, and retryable: store_db_tx
 *                                     retries them itself
 *   08xxx, 57P0x, 53xxx, 55P03,
 *   57014, lost connection         -> MU_EUNAVAIL
 *   anything else                  -> MU_EINTERNAL
 * err->field gets the constraint name when PostgreSQL reports one (e.g.
 * "tenants_name_key"), else ""; err->msg the server's primary message. The
 * API should translate constraint names into its own field names.
 *
 * Threading: a PGconn is used by one thread at a time; everything else here
 * is reentrant.
 */
#ifndef STORE_DB_H
#define STORE_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct pg_conn PGconn;     /* libpq's opaque types */
typedef struct pg_result PGresult;

/*
 * Connects to `url` (a libpq URI or "key=value" string; NULL or "" uses the
 * PG* environment), with application_name (the URL may override it),
 * client_encoding UTF8, connect_timeout 10 s and TCP keepalives
 * (idle 30 s, interval 10 s, count 3, tcp_user_timeout 60 s) so a
 * partitioned server is noticed. Returns a new connection (store_db_close
 * it) or NULL with MU_EUNAVAIL in err.
 */
PGconn *store_db_connect(const char *url, const char *application_name, struct mu_error *err)
	__attribute__((warn_unused_result));
void store_db_close(PGconn *c); /* NULL is a no-op */

/* SQLSTATE (5 chars) -> MU_E* code per the table above; NULL -> MU_EUNAVAIL. */
int store_db_sqlstate_code(const char *sqlstate);
/* 40001 and 40P01: the same transaction may succeed when run again. */
bool store_db_sqlstate_retryable(const char *sqlstate);

/*
 * Checks a result from any libpq call (PQexec*, PQgetResult). Returns 0 when
 * it succeeded (COMMAND_OK, TUPLES_OK, SINGLE_TUPLE, COPY_*, EMPTY_QUERY),
 * else the mapped MU_E* code with err filled. `res` NULL means the
 * connection failed (MU_EUNAVAIL, message from PQerrorMessage(c)). Borrows
 * both.
 */
int store_db_check(PGconn *c, const PGresult *res, struct mu_error *err);

/*
 * Runs one statement with text parameters (NULL entries are SQL NULL) and
 * text results. Returns 0 or a MU_E* code. When `res` is not NULL it gets
 * the new result on success (PQclear it; store_db_clear works too) and NULL
 * on failure; otherwise the result is cleared here.
 */
int store_db_exec(PGconn *c, const char *sql, int nparams, const char *const *params,
		  PGresult **res, struct mu_error *err) __attribute__((warn_unused_result));
/* Runs one or more statements without parameters (simple query protocol). */
int store_db_exec_simple(PGconn *c, const char *sql, struct mu_error *err)
	__attribute__((warn_unused_result));
void store_db_clear(PGresult *res); /* NULL is a no-op */

/* Result accessors (borrowed results). A NULL value reads as "" / 0 / false. */
int store_db_nrows(const PGresult *res);
const char *store_db_get(const PGresult *res, int row, int col); /* borrowed; "" for NULL */
bool store_db_is_null(const PGresult *res, int row, int col);
int64_t store_db_get_int64(const PGresult *res, int row, int col);
bool store_db_get_bool(const PGresult *res, int row, int col); /* 't' -> true */

/* Runs a query expected to return one row of one column and copies it
 * into `out` (truncating; "" for NULL or no row). Returns 0, MU_ENOTFOUND
 * when there was no row, or a MU_E* code. */
int store_db_query_text(PGconn *c, const char *sql, int nparams, const char *const *params,
			char *out, size_t outsz, struct mu_error *err)
	__attribute__((warn_unused_result));
int store_db_query_int64(PGconn *c, const char *sql, int nparams, const char *const *params,
			 int64_t *out, struct mu_error *err) __attribute__((warn_unused_result));

/*
 * Runs fn(c, arg, err) inside BEGIN ... COMMIT (`begin_sql` NULL = "BEGIN";
 * e.g. "BEGIN ISOLATION LEVEL SERIALIZABLE"). fn returns 0 to commit or a
 * MU_E* code to roll back. When fn or the COMMIT fails with a retryable
 * SQLSTATE (MU_EUNAVAIL on a still-open connection) the whole transaction
 * is run again, up to `attempts` times in all (0 = 5), with a short backoff.
 * Returns 0 or the last MU_E* code. fn must not COMMIT itself.
 */
typedef int (*store_db_tx_fn)(PGconn *c, void *arg, struct mu_error *err);
int store_db_tx(PGconn *c, const char *begin_sql, int attempts, store_db_tx_fn fn, void *arg,
		struct mu_error *err) __attribute__((warn_unused_result));

/* Quotes `s` as an SQL identifier ("..."). Returns new memory (mu_free). */
char *store_db_quote_ident(const char *s);

/* Rolls back the open transaction, if any, ignoring errors (cleanup paths). */
void store_db_rollback(PGconn *c);

/* true when the connection is usable (CONNECTION_OK). */
bool store_db_ok(const PGconn *c);

#endif
