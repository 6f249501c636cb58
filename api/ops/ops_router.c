/*
 * ops_router.c - the REST router over routes.def (ops_router.h).
 */
#include "ops_router.h"

#include <stdio.h>
#include <string.h>

#include "error.h"
#include "jv.h"

const struct ops_route_def ops_routes[] = {
#define REST_ROUTE(m, pattern, handler, roles, summary) { #m, pattern, roles, summary },
#include "routes.def"
#undef REST_ROUTE
};
const size_t ops_nroutes = sizeof(ops_routes) / sizeof(ops_routes[0]);

static char *astrndup(struct mu_arena *a, const char *s, size_t n)
{
	char *d = mu_arena_alloc(a, n + 1);

	memcpy(d, s, n);
	return d;
}

static int unhex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

const char *ops_router_decode(struct mu_arena *a, const char *s, size_t n, bool query)
{
	char *o = mu_arena_alloc(a, n + 1);
	size_t j = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && unhex(s[i + 1]) >= 0 && unhex(s[i + 2]) >= 0) {
			o[j++] = (char)(unhex(s[i + 1]) * 16 + unhex(s[i + 2]));
			i += 2;
		} else if (query && s[i] == '+') {
			o[j++] = ' ';
		} else {
			o[j++] = s[i];
		}
	}
	o[j] = '\0';
	if (memchr(o, '\0', j) || !jv_utf8_valid(o, j))
		return NULL;
	return o;
}

bool ops_router_query(struct mu_arena *a, const char *q, size_t n, struct ops_query *out)
{
	size_t i = 0;

	out->n = 0;
	out->too_many = false;
	while (i < n) {
		size_t end = i, eq;

		while (end < n && q[end] != '&')
			end++;
		eq = i;
		while (eq < end && q[eq] != '=')
			eq++;
		if (end > i) {
			const char *k, *v;

			if (out->n == OPS_ROUTER_MAX_QUERY) {
				out->too_many = true;
				return true;
			}
			k = ops_router_decode(a, q + i, eq - i, true);
			v = eq < end ? ops_router_decode(a, q + eq + 1, end - eq - 1, true) : "";
			if (!k || !v)
				return false;
			out->keys[out->n] = k;
			out->vals[out->n] = v;
			out->n++;
		}
		i = end + 1;
	}
	return true;
}

bool ops_router_match(struct mu_arena *a, const char *pattern, const char *path, size_t plen,
		      struct ops_route_match *m)
{
	const char *p = pattern, *s = path, *end = path + plen;

	m->np = 0;
	while (*p && s < end) {
		const char *pseg_end, *sseg_end;

		if (*p != '/' || *s != '/')
			return false;
		p++;
		s++;
		pseg_end = strchr(p, '/');
		if (!pseg_end)
			pseg_end = p + strlen(p);
		sseg_end = memchr(s, '/', (size_t)(end - s));
		if (!sseg_end)
			sseg_end = end;
		if (*p == '{') {
			const char *v;

			if (sseg_end == s || m->np == OPS_ROUTER_MAX_PARAMS)
				return false;
			v = ops_router_decode(a, s, (size_t)(sseg_end - s), false);
			if (!v)
				return false;
			m->names[m->np] = astrndup(a, p + 1, (size_t)(pseg_end - p - 2));
			m->vals[m->np] = v;
			m->np++;
		} else if ((size_t)(pseg_end - p) != (size_t)(sseg_end - s) ||
			   memcmp(p, s, (size_t)(pseg_end - p))) {
			return false;
		}
		p = pseg_end;
		s = sseg_end;
	}
	return !*p && s == end;
}

int ops_router_find(struct mu_arena *a, const char *method, size_t mlen, const char *path,
		    size_t plen, struct ops_route_match *m)
{
	bool path_matched = false;

	m->route = -1;
	for (size_t i = 0; i < ops_nroutes; i++) {
		if (!ops_router_match(a, ops_routes[i].pattern, path, plen, m))
			continue;
		path_matched = true;
		if (strlen(ops_routes[i].method) == mlen &&
		    !memcmp(ops_routes[i].method, method, mlen)) {
			m->route = (int)i;
			return (int)i;
		}
	}
	m->np = 0;
	return path_matched ? MU_EMETHOD : MU_ENOTFOUND;
}

void ops_router_methods(struct mu_arena *a, const char *path, size_t plen, char *buf, size_t size)
{
	struct ops_route_match m;
	size_t n;

	n = (size_t)snprintf(buf, size, "OPTIONS");
	for (size_t i = 0; i < ops_nroutes && n < size; i++) {
		const char *meth = ops_routes[i].method;

		if (!ops_router_match(a, ops_routes[i].pattern, path, plen, &m) || strstr(buf, meth))
			continue;
		n += (size_t)snprintf(buf + n, size - n, ", %s", meth);
	}
}
