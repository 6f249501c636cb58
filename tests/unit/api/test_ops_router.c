/*
 * The REST router (api/ops/ops_router.c) as a pure function: every
 * routes.def row, 404 and 405, percent-encoding, trailing and double
 * slashes, dot segments, NUL and invalid UTF-8, overlong paths, and the
 * query splitter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ops_router.h"

struct fx {
	struct mu_arena a;
	struct ops_route_match m;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	mu_arena_init(&f->a, 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	mu_arena_release(&f->a);
	free(f);
	return 0;
}

static int find(struct fx *f, const char *method, const char *path)
{
	return ops_router_find(&f->a, method, strlen(method), path, strlen(path), &f->m);
}

static int route_of(const char *method, const char *pattern)
{
	for (size_t i = 0; i < ops_nroutes; i++)
		if (!strcmp(ops_routes[i].method, method) && !strcmp(ops_routes[i].pattern, pattern))
			return (int)i;
	return -1;
}

/* A concrete path for a pattern: each {param} becomes "p<k>x". */
static void concrete(const char *pattern, char *out, size_t size, int *nparams)
{
	size_t n = 0;

	*nparams = 0;
	for (const char *p = pattern; *p && n + 8 < size; p++) {
		if (*p == '{') {
			n += (size_t)snprintf(out + n, size - n, "p%dx", (*nparams)++);
			while (*p && *p != '}')
				p++;
		} else {
			out[n++] = *p;
		}
	}
	out[n] = '\0';
}

/* Every row routes to itself (no row shadows another), its parameters
 * come back by name, another method is 405, and the path with a trailing
 * slash, a leading doubled slash or two more segments is 404. */
static void every_row(void **state)
{
	struct fx *f = *state;

	assert_true(ops_nroutes > 40);
	for (size_t i = 0; i < ops_nroutes; i++) {
		const struct ops_route_def *r = &ops_routes[i];
		char path[512], alt[600];
		int np;

		concrete(r->pattern, path, sizeof(path), &np);
		assert_int_equal(find(f, r->method, path), (int)i);
		assert_int_equal(f->m.route, (int)i);
		assert_int_equal((int)f->m.np, np);
		for (int k = 0; k < np; k++) {
			char want[16];

			snprintf(want, sizeof(want), "p%dx", k);
			assert_string_equal(f->m.vals[k], want);
			assert_non_null(strstr(r->pattern, f->m.names[k]));
		}
		assert_int_equal(find(f, "TRACE", path), MU_EMETHOD);
		assert_int_equal(find(f, "OPTIONS", path), MU_EMETHOD);
		snprintf(alt, sizeof(alt), "%s/", path);
		assert_int_equal(find(f, r->method, alt), MU_ENOTFOUND);
		snprintf(alt, sizeof(alt), "/%s", path);
		assert_int_equal(find(f, r->method, alt), MU_ENOTFOUND);
		snprintf(alt, sizeof(alt), "%s/zz/extra", path); /* no route is that deep */
		assert_int_equal(find(f, r->method, alt), MU_ENOTFOUND);
		assert_true(r->roles == OPS_PUBLIC || (r->roles & OPS_ROLE_MASK) != 0);
	}
}

static void not_found_and_method(void **state)
{
	struct fx *f = *state;

	assert_int_equal(find(f, "GET", ""), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "v1/jobs"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/v1"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/v1/nope"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/v1//jobs"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/v1/jobs//"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/v1/jobs/"), MU_ENOTFOUND); /* empty {id} */
	assert_int_equal(find(f, "get", "/v1/jobs"), MU_EMETHOD);     /* methods are case-sensitive */
	assert_int_equal(find(f, "DELETE", "/v1/jobs"), MU_EMETHOD);
	assert_int_equal(find(f, "GE", "/v1/jobs"), MU_EMETHOD);
	assert_int_equal(find(f, "GETX", "/v1/jobs"), MU_EMETHOD);
	assert_int_equal(f->m.np, 0);
	assert_int_equal(f->m.route, -1);
}

/* Literal segments win where a parameter could match too: /v1/jobs/batch
 * is the batch route for POST, a job id for GET. */
static void literal_and_param(void **state)
{
	struct fx *f = *state;

	assert_int_equal(find(f, "POST", "/v1/jobs/batch"), route_of("POST", "/v1/jobs/batch"));
	assert_int_equal(find(f, "POST", "/v1/jobs/dry-run"), route_of("POST", "/v1/jobs/dry-run"));
	assert_int_equal(find(f, "GET", "/v1/jobs/batch"), route_of("GET", "/v1/jobs/{id}"));
	assert_string_equal(f->m.vals[0], "batch");
	assert_int_equal(find(f, "PATCH", "/v1/jobs/42"), route_of("PATCH", "/v1/jobs/{id}"));
	assert_string_equal(f->m.names[0], "id");
	assert_string_equal(f->m.vals[0], "42");
}

static void percent_encoding(void **state)
{
	struct fx *f = *state;
	int get_tenant = route_of("GET", "/v1/tenants/{name}");

	assert_int_equal(find(f, "GET", "/v1/jobs/%31%32"), route_of("GET", "/v1/jobs/{id}"));
	assert_string_equal(f->m.vals[0], "12");
	/* an encoded slash stays inside its segment */
	assert_int_equal(find(f, "GET", "/v1/tenants/a%2Fb"), get_tenant);
	assert_string_equal(f->m.vals[0], "a/b");
	/* '+' is a plus in a path (a space only in queries) */
	assert_int_equal(find(f, "GET", "/v1/tenants/a+b"), get_tenant);
	assert_string_equal(f->m.vals[0], "a+b");
	/* a broken escape stays as it is */
	assert_int_equal(find(f, "GET", "/v1/tenants/a%4"), get_tenant);
	assert_string_equal(f->m.vals[0], "a%4");
	assert_int_equal(find(f, "GET", "/v1/tenants/%zz"), get_tenant);
	assert_string_equal(f->m.vals[0], "%zz");
	/* UTF-8 decodes; literal segments are never decoded */
	assert_int_equal(find(f, "GET", "/v1/tenants/%C3%A9"), get_tenant);
	assert_string_equal(f->m.vals[0], "\xc3\xa9");
	assert_int_equal(find(f, "GET", "/v1/%6aobs"), MU_ENOTFOUND);
	/* NUL and invalid UTF-8 in a parameter: no match */
	assert_int_equal(find(f, "GET", "/v1/tenants/%00"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/v1/tenants/a%00b"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/v1/tenants/%ff"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/v1/tenants/%C3"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/v1/tenants/\xff"), MU_ENOTFOUND);
}

static void raw_nul(void **state)
{
	struct fx *f = *state;
	static const char path[] = "/v1/jobs/1\0/cancel";
	static const char lit[] = "/v1/jo\0bs";

	assert_int_equal(ops_router_find(&f->a, "POST", 4, path, sizeof(path) - 1, &f->m),
			 MU_ENOTFOUND);
	assert_int_equal(ops_router_find(&f->a, "GET", 3, lit, sizeof(lit) - 1, &f->m), MU_ENOTFOUND);
	/* plen bounds the path: bytes after it are not looked at */
	assert_int_equal(ops_router_find(&f->a, "GET", 3, "/v1/jobsXYZ", 8, &f->m),
			 route_of("GET", "/v1/jobs"));
}

/* Dot segments are not resolved: "." and ".." are parameter values (the
 * handler refuses them as ids or names) and never climb out of a route. */
static void dot_segments(void **state)
{
	struct fx *f = *state;

	assert_int_equal(find(f, "GET", "/v1/jobs/."), route_of("GET", "/v1/jobs/{id}"));
	assert_string_equal(f->m.vals[0], ".");
	assert_int_equal(find(f, "GET", "/v1/jobs/.."), route_of("GET", "/v1/jobs/{id}"));
	assert_int_equal(find(f, "GET", "/v1/jobs/../tenants"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/v1/./jobs"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/./v1/jobs"), MU_ENOTFOUND);
	assert_int_equal(find(f, "GET", "/v1/jobs/%2e%2e"), route_of("GET", "/v1/jobs/{id}"));
	assert_string_equal(f->m.vals[0], "..");
}

static void overlong(void **state)
{
	struct fx *f = *state;
	size_t n = 200000;
	char *p = malloc(n + 16);

	memcpy(p, "/v1/jobs/", 9);
	memset(p + 9, 'a', n);
	p[9 + n] = '\0';
	assert_int_equal(find(f, "GET", p), route_of("GET", "/v1/jobs/{id}"));
	assert_int_equal(strlen(f->m.vals[0]), n);
	memset(p, '/', n);
	p[n] = '\0';
	assert_int_equal(find(f, "GET", p), MU_ENOTFOUND);
	memset(p, '%', n);
	memcpy(p, "/v1/tenants/", 12);
	assert_int_equal(find(f, "GET", p), route_of("GET", "/v1/tenants/{name}"));
	free(p);
}

static void methods_list(void **state)
{
	struct fx *f = *state;
	char buf[128];

	ops_router_methods(&f->a, "/v1/jobs", 8, buf, sizeof(buf));
	assert_string_equal(buf, "OPTIONS, POST, GET");
	ops_router_methods(&f->a, "/v1/jobs/7", 10, buf, sizeof(buf));
	assert_string_equal(buf, "OPTIONS, GET, PATCH");
	ops_router_methods(&f->a, "/v1/tenants/x", 13, buf, sizeof(buf));
	assert_string_equal(buf, "OPTIONS, GET, PATCH, DELETE");
	ops_router_methods(&f->a, "/nope", 5, buf, sizeof(buf));
	assert_string_equal(buf, "OPTIONS");
	ops_router_methods(&f->a, "/v1/tenants/x", 13, buf, 12); /* truncated, terminated */
	assert_true(strlen(buf) < 12);
}

static bool query(struct fx *f, const char *q, struct ops_query *out)
{
	return ops_router_query(&f->a, q, strlen(q), out);
}

static void queries(void **state)
{
	struct fx *f = *state;
	struct ops_query q;
	char big[1024];
	size_t n = 0;

	assert_true(query(f, "a=1&b=&c&&d=%20+x&a=2&e=x=y", &q));
	assert_int_equal(q.n, 6);
	assert_string_equal(q.keys[0], "a");
	assert_string_equal(q.vals[0], "1");
	assert_string_equal(q.vals[1], "");
	assert_string_equal(q.keys[2], "c");
	assert_string_equal(q.vals[2], "");
	assert_string_equal(q.keys[3], "d");
	assert_string_equal(q.vals[3], "  x");
	assert_string_equal(q.vals[4], "2");
	assert_string_equal(q.vals[5], "x=y");
	assert_false(q.too_many);
	assert_true(query(f, "", &q));
	assert_int_equal(q.n, 0);
	assert_true(query(f, "&&&", &q));
	assert_int_equal(q.n, 0);
	assert_true(query(f, "k%3D=v%26", &q));
	assert_string_equal(q.keys[0], "k=");
	assert_string_equal(q.vals[0], "v&");
	assert_false(query(f, "a=%ff", &q));
	assert_false(query(f, "a=%00", &q));
	assert_false(query(f, "%c3=1", &q));
	for (int i = 0; i < 70; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "k%d=v&", i);
	assert_true(query(f, big, &q));
	assert_true(q.too_many);
	assert_int_equal(q.n, OPS_ROUTER_MAX_QUERY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_row, setup, teardown),
		cmocka_unit_test_setup_teardown(not_found_and_method, setup, teardown),
		cmocka_unit_test_setup_teardown(literal_and_param, setup, teardown),
		cmocka_unit_test_setup_teardown(percent_encoding, setup, teardown),
		cmocka_unit_test_setup_teardown(raw_nul, setup, teardown),
		cmocka_unit_test_setup_teardown(dot_segments, setup, teardown),
		cmocka_unit_test_setup_teardown(overlong, setup, teardown),
		cmocka_unit_test_setup_teardown(methods_list, setup, teardown),
		cmocka_unit_test_setup_teardown(queries, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
