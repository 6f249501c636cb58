/*
 * alloc.h - allocation wrappers and a bump arena.
 *
 * Allocation failure aborts inside these wrappers (as redis, h2o and Slurm
 * do), so callers never check for NULL. mu_free(NULL) is a no-op.
 */
#ifndef MU_ALLOC_H
#define MU_ALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *mu_malloc(size_t n);                 /* new */
void *mu_calloc(size_t nmemb, size_t size);/* new, zeroed; aborts on overflow */
void *mu_realloc(void *p, size_t n);       /* steals p, returns new */
/* Grows an array to hold at least `need` elements of `size` bytes,
 * doubling capacity; updates *cap. Returns the (possibly moved) array. */
void *mu_grow(void *p, size_t *cap, size_t need, size_t size);
char *mu_strdup(const char *s);            /* new */
char *mu_strndup(const char *s, size_t n); /* new */
char *mu_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* new */
char *mu_vasprintf(const char *fmt, va_list ap);                               /* new */
void mu_free(void *p);

/*
 * A bump arena: many small allocations freed together (one per request in
 * the API, one per cycle in the scheduler). Memory from mu_arena_alloc is
 * owned by the arena and is valid until mu_arena_reset/mu_arena_release.
 */
struct mu_arena_block;
struct mu_arena {
	struct mu_arena_block *head;
	size_t block_size;
};

void mu_arena_init(struct mu_arena *a, size_t block_size); /* 0 = 64 KiB */
void *mu_arena_alloc(struct mu_arena *a, size_t n);        /* 16-byte aligned, zeroed */
char *mu_arena_strdup(struct mu_arena *a, const char *s);
void mu_arena_reset(struct mu_arena *a);                   /* frees all but keeps one block */
void mu_arena_release(struct mu_arena *a);                 /* frees everything */

#endif
