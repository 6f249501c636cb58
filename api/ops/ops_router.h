/*
 * ops_router.h - the REST router as a pure function: (method, path, query)
 * -> (route, params) | 404 | 405, over the one route table api/routes.def.
 * No I/O, no globals but the constant table: unit-tested
 * (tests/unit/api/test_ops_router.c, a row per routes.def line) and fuzzed
 * (tests/fuzz/fuzz_router.c). rest.c (the framework) and rest_gate.c (the
 * first request's headers) both route through it.
 *
 * Patterns are literal segments and `{param}` segments (one whole,
 * non-empty segment each). Matching is exact and byte-wise on the raw path:
 * no trailing-slash, double-slash or dot-segment folding (those paths are
 * 404), and percent-decoding applies to parameter values only. A parameter
 * or query part that decodes to invalid UTF-8 or holds a NUL does not
 * match (the path) or is refused (the query).
 */
#ifndef MU_OPS_ROUTER_H
#define MU_OPS_ROUTER_H

#include <stdbool.h>
#include <stddef.h>

#include "alloc.h"
#include "ops_principal.h"

/* The role masks routes.def rows use (api/rest.h documents them). */
#define REST_PUBLIC OPS_PUBLIC
#define REST_ADMIN OPS_ADMIN
#define REST_WRITERS OPS_WRITERS
#define REST_READERS OPS_READERS
#define REST_ANYONE OPS_ANYONE
#define REST_BIG_BODY OPS_BIG_BODY

#define OPS_ROUTER_MAX_PARAMS 4
#define OPS_ROUTER_MAX_QUERY 64

struct ops_route_def {
	const char *method;  /* "GET", ... */
	const char *pattern; /* "/v1/jobs/{id}" */
	int roles;           /* OPS_* mask, | OPS_BIG_BODY */
	const char *summary;
};

/* routes.def, in file order (rest.c's handler table has the same order). */
extern const struct ops_route_def ops_routes[];
extern const size_t ops_nroutes;

struct ops_route_match {
	int route;                                /* index into ops_routes, or -1 */
	size_t np;
	const char *names[OPS_ROUTER_MAX_PARAMS]; /* "id" (arena) */
	const char *vals[OPS_ROUTER_MAX_PARAMS];  /* decoded (arena) */
};

/*
 * Routes `method` (mlen bytes) + raw `path` (plen bytes, no query). The
 * route index (>= 0, *m filled), MU_ENOTFOUND when no pattern matches the
 * path, MU_EMETHOD when one does with another method (OPTIONS always
 * counts as another method). Strings go to `a`.
 */
int ops_router_find(struct mu_arena *a, const char *method, size_t mlen, const char *path,
		    size_t plen, struct ops_route_match *m);

/* One pattern against a raw path (params into *m). */
bool ops_router_match(struct mu_arena *a, const char *pattern, const char *path, size_t plen,
		      struct ops_route_match *m);

/* The methods the path answers, for Allow: "OPTIONS, GET, POST"
 * (truncated to `size`). */
void ops_router_methods(struct mu_arena *a, const char *path, size_t plen, char *buf, size_t size);

/* %xx-decodes (and '+' -> ' ' when `query`) into `a`; NULL when the result
 * is not valid UTF-8 or holds a NUL. A '%' not followed by two hex digits
 * stays as it is. */
const char *ops_router_decode(struct mu_arena *a, const char *s, size_t n, bool query);

struct ops_query {
	size_t n;
	bool too_many; /* more than OPS_ROUTER_MAX_QUERY parts: the rest dropped */
	const char *keys[OPS_ROUTER_MAX_QUERY], *vals[OPS_ROUTER_MAX_QUERY];
};

/* Splits a raw query string (after '?') on '&' and '=' and decodes each
 * part ("" for `?name`; empty parts skipped). false when a part is not
 * valid UTF-8 (or decodes to a NUL). */
bool ops_router_query(struct mu_arena *a, const char *q, size_t n, struct ops_query *out);

#endif
