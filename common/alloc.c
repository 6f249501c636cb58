#include "alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
	fprintf(stderr, "muster: out of memory allocating %zu bytes\n", n);
	abort();
}

void *mu_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *mu_calloc(size_t nmemb, size_t size)
{
	void *p;
	if (size && nmemb > SIZE_MAX / size)
		oom(SIZE_MAX);
	p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		oom(nmemb * size);
	return p;
}

void *mu_realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

void *mu_grow(void *p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap;
	if (need <= c)
		return p;
	if (c < 8)
		c = 8;
	while (c < need) {
		if (c > SIZE_MAX / 2 / size)
			oom(SIZE_MAX);
		c *= 2;
	}
	*cap = c;
	return mu_realloc(p, c * size);
}

char *mu_strdup(const char *s)
{
	return mu_strndup(s, strlen(s));
}

char *mu_strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d = mu_malloc(len + 1);
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

char *mu_vasprintf(const char *fmt, va_list ap)
{
	va_list ap2;
	int n;
	char *s;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		abort();
	s = mu_malloc((size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

char *mu_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	s = mu_vasprintf(fmt, ap);
	va_end(ap);
	return s;
}

void mu_free(void *p)
{
	free(p);
}

struct mu_arena_block {
	struct mu_arena_block *next;
	size_t size;
	size_t used;
	_Alignas(16) unsigned char data[];
};

void mu_arena_init(struct mu_arena *a, size_t block_size)
{
	a->head = NULL;
	a->block_size = block_size ? block_size : 64 * 1024;
}

void *mu_arena_alloc(struct mu_arena *a, size_t n)
{
	struct mu_arena_block *b = a->head;
	size_t need = (n + 15) & ~(size_t)15;
	void *p;

	if (need < n)
		oom(n);
	if (!b || b->size - b->used < need) {
		size_t sz = need > a->block_size ? need : a->block_size;
		b = mu_malloc(sizeof(*b) + sz);
		b->size = sz;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	p = b->data + b->used;
	b->used += need;
	memset(p, 0, n);
	return p;
}

char *mu_arena_strdup(struct mu_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = mu_arena_alloc(a, n);
	memcpy(d, s, n);
	return d;
}

void mu_arena_reset(struct mu_arena *a)
{
	struct mu_arena_block *b = a->head, *next;
	if (!b)
		return;
	for (next = b->next; next; ) {
		struct mu_arena_block *n2 = next->next;
		free(next);
		next = n2;
	}
	b->next = NULL;
	b->used = 0;
}

void mu_arena_release(struct mu_arena *a)
{
	struct mu_arena_block *b = a->head;
	while (b) {
		struct mu_arena_block *next = b->next;
		free(b);
		b = next;
	}
	a->head = NULL;
}
