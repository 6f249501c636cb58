/*
 * store_int.h - what the files of store/ share: SQL fragments and row and
 * parameter helpers. Internal to store/ (the double underscore).
 */
#ifndef STORE_INT_H
#define STORE_INT_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "buf.h"

/* A timestamp column as RFC 3339 text in UTC, milliseconds. */
#define TS(col) "to_char((" col ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

/* TS's text built here from TS_US's value: the same characters (to_char
 * truncates to the millisecond; NULL for a timestamp not finite gives ""),
 * without a to_char per row where a scan returns thousands of rows. `out`
 * holds at least STORE_TS_LEN bytes. */
#define TS_US(col)                                                                                 \
	"CASE WHEN isfinite(" col ") THEN (extract(epoch FROM " col ") * 1000000)::bigint END"
#define STORE_TS_LEN 96
void store__ts_text(const PGresult *r, int row, int col, char *out);

/* Tenant path column `path` is within scope parameter p ($N, NULL = all);
 * IN_SCOPE(p) for the usual `t.path`. */
#define IN_SCOPE_OF(path, p) "(" p "::text IS NULL OR " path " = " p " OR starts_with(" path ", " p " || '/'))"
#define IN_SCOPE(p) IN_SCOPE_OF("t.path", p)

/* Column `col` of row `row` copied into a (borrowed from the arena). */
char *store__dup(struct mu_arena *a, const PGresult *r, int row, int col);
/* The same, NULL for SQL NULL. */
char *store__dup_null(struct mu_arena *a, const PGresult *r, int row, int col);

/* Appends `s` quoted as one element of a PostgreSQL array literal. */
void store__pg_text(struct mu_buf *b, const char *s);
/* Appends a PostgreSQL array literal ("{...}") of texts / of integers,
 * for $N::text[] and $N::bigint[] parameters. */
void store__text_array(struct mu_buf *b, const char *const *v, size_t n);
void store__int_array(struct mu_buf *b, const int64_t *v, size_t n);

/* CLOCK_MONOTONIC in milliseconds, for the debug timings. */
double store__mono_ms(void);

/* qsort/bsearch order of int64_t values (or of records led by one). */
int store__cmp_i64(const void *x, const void *y);

#endif
