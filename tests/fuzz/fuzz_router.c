/*
 * fuzz_router.c - libFuzzer driver for the REST router (api/ops/ops_router.c):
 * paths and queries.
 *
 * Input: "METHOD path[?query]" (up to the first space is the method; no
 * space = the first byte picks one of the table's methods and the rest is
 * the target). Invariants: a match names a route whose method is the
 * request's, whose pattern has as many {param} segments as the match has
 * values, each value valid UTF-8 without NUL; rebuilding the path from the
 * pattern and the re-encoded values routes to the same row; 404/405 leave
 * no parameters; the Allow list starts with OPTIONS and fits its buffer;
 * query parts are valid UTF-8 without NUL and at most the maximum.
 *
 * Linked with replay_main.c it runs the seed corpus under CTest.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "jv.h"
#include "ops_router.h"

static void require(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

static void check_value(const char *v)
{
	require(v != NULL, "value present");
	require(jv_utf8_valid(v, strlen(v)), "value is UTF-8");
}

/* The pattern with each {param} replaced by its value, %-encoded. */
static size_t rebuild(const char *pattern, const struct ops_route_match *m, char *out, size_t size)
{
	size_t n = 0, k = 0;

	for (const char *p = pattern; *p; p++) {
		if (*p == '{') {
			for (const unsigned char *v = (const unsigned char *)m->vals[k++]; *v; v++)
				n += (size_t)snprintf(out + n, size - n, "%%%02X", *v);
			while (*p != '}')
				p++;
		} else {
			out[n++] = *p;
		}
		require(n < size, "rebuilt path fits");
	}
	out[n] = '\0';
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data, *sp = memchr(in, ' ', size);
	const char *method, *target, *q;
	size_t mlen, tlen, plen;
	struct mu_arena a;
	struct ops_route_match m;
	struct ops_query qs;
	char allow[128];
	int r;

	if (size > 65536)
		return 0;
	if (sp) {
		method = in;
		mlen = (size_t)(sp - in);
		target = sp + 1;
		tlen = size - mlen - 1;
	} else {
		if (!size)
			return 0;
		method = ops_routes[data[0] % ops_nroutes].method;
		mlen = strlen(method);
		target = in + 1;
		tlen = size - 1;
	}
	q = memchr(target, '?', tlen);
	plen = q ? (size_t)(q - target) : tlen;

	mu_arena_init(&a, 0);
	r = ops_router_find(&a, method, mlen, target, plen, &m);
	if (r >= 0) {
		const struct ops_route_def *d = &ops_routes[r];
		size_t braces = 0;
		char *path;
		struct ops_route_match again;

		require((size_t)r < ops_nroutes, "route in range");
		require(m.route == r, "match names the route");
		require(strlen(d->method) == mlen && !memcmp(d->method, method, mlen), "same method");
		for (const char *p = d->pattern; *p; p++)
			braces += *p == '{';
		require(m.np == braces, "one value per {param}");
		for (size_t i = 0; i < m.np; i++) {
			check_value(m.vals[i]);
			require(m.vals[i][0] != '\0', "values are not empty");
			require(strchr(d->pattern, '{') != NULL, "params only where the pattern has them");
		}
		path = mu_arena_alloc(&a, plen * 3 + 256);
		size_t n = rebuild(d->pattern, &m, path, plen * 3 + 256);
		require(ops_router_find(&a, method, mlen, path, n, &again) == r, "rebuilt path routes back");
	} else {
		require(r == MU_ENOTFOUND || r == MU_EMETHOD, "404 or 405");
		require(m.np == 0 && m.route == -1, "no params on a miss");
	}
	ops_router_methods(&a, target, plen, allow, sizeof(allow));
	require(!strncmp(allow, "OPTIONS", 7) && strlen(allow) < sizeof(allow), "Allow list");
	require((r == MU_ENOTFOUND) == !strcmp(allow, "OPTIONS"), "Allow agrees with 404");
	if (q && ops_router_query(&a, q + 1, tlen - plen - 1, &qs)) {
		require(qs.n <= OPS_ROUTER_MAX_QUERY, "query bound");
		for (size_t i = 0; i < qs.n; i++) {
			check_value(qs.keys[i]);
			check_value(qs.vals[i]);
		}
	}
	mu_arena_release(&a);
	return 0;
}
