/* store_int.c - see store_int.h. */
#include "store_int.h"

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

double store__mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
