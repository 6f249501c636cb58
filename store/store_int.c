/* store_int.c - see store_int.h. */
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "db.h"

char *store__dup(struct mu_arena *a, const PGresult *r, int row, int col)
{
	return mu_arena_strdup(a, store_db_get(r, row, col));
}

char *store__dup_null(struct mu_arena *a, const PGresult *r, int row, int col)
{
	return store_db_is_null(r, row, col) ? NULL : store__dup(a, r, row, col);
}

void store__pg_text(struct mu_buf *b, const char *s)
{
	mu_buf_addc(b, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			mu_buf_addc(b, '\\');
		mu_buf_addc(b, *s);
	}
	mu_buf_addc(b, '"');
}

void store__text_array(struct mu_buf *b, const char *const *v, size_t n)
{
	mu_buf_addc(b, '{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			mu_buf_addc(b, ',');
		store__pg_text(b, v[i]);
	}
	mu_buf_addc(b, '}');
}

void store__int_array(struct mu_buf *b, const int64_t *v, size_t n)
{
	mu_buf_addc(b, '{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			mu_buf_addc(b, ',');
		mu_buf_add_int(b, v[i]);
	}
	mu_buf_addc(b, '}');
}

void store__ts_text(const PGresult *r, int row, int col, char *out)
{
	long long us, sec, rem;
	time_t t;
	struct tm tm;

	*out = 0;
	if (store_db_is_null(r, row, col))
		return;
	us = strtoll(store_db_get(r, row, col), NULL, 10);
	sec = us / 1000000;
	rem = us % 1000000;
	if (rem < 0) { /* before 1970: floor, as the timestamp's own fields */
		rem += 1000000;
		sec--;
	}
	t = (time_t)sec;
	if (!gmtime_r(&t, &tm))
		return;
	snprintf(out, STORE_TS_LEN, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(rem / 1000));
}

int store__cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

double store__mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
