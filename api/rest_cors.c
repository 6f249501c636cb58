/* rest_cors.c - the CORS allow-list; see rest_cors.h. */
#include "rest_cors.h"

#include <stdbool.h>

#include "buf.h"

#include <string.h>

#include "alloc.h"
#include "error.h"
#include "log.h"

#define MAX_ORIGINS 32

static char *origins[MAX_ORIGINS];
static size_t norigins;

static const char expose[] = "Location, Retry-After, ETag, Muster-Run-Id, Muster-Node, "
			     "Muster-Next-Offset, Muster-Log-Size, Muster-Log-Ended";
static const char allow_headers[] = "Authorization, Content-Type, Idempotency-Key, If-Match, "
				    "Last-Event-ID";

static bool origin_ok(const char *s, size_t n)
{
	const char *p;

	if (n > 7 && !strncmp(s, "http://", 7))
		p = s + 7;
	else if (n > 8 && !strncmp(s, "https://", 8))
		p = s + 8;
	else
		return false;
	for (; p < s + n; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' ||
		      *p == ':' || *p == '[' || *p == ']'))
			return false;
	return true;
}

int rest_cors_init(const char *list)
{
	const char *s = list ? list : "";

	while (*s) {
		size_t n;

		while (*s == ',' || *s == ' ')
			s++;
		n = strcspn(s, ", ");
		if (!n)
			break;
		while (n > 1 && s[n - 1] == '/')
			n--; /* "https://x/" means the origin "https://x" */
		if (!origin_ok(s, n) || norigins == MAX_ORIGINS) {
			mu_err("cors: not an origin (scheme://host[:port], lowercase, at most %d): %.*s",
			       MAX_ORIGINS, (int)(n > 200 ? 200 : n), s);
			return MU_EINVAL;
		}
		origins[norigins] = mu_malloc(n + 1);
		memcpy(origins[norigins], s, n);
		origins[norigins][n] = '\0';
		norigins++;
		s += strcspn(s, ", ");
	}
	if (norigins)
		mu_info("cors: %zu allowed origin(s)", norigins);
	return 0;
}

static const h2o_header_t *find(h2o_req_t *req, const char *name)
{
	ssize_t i = h2o_find_header_by_str(&req->headers, name, strlen(name), -1);

	return i < 0 ? NULL : &req->headers.entries[i];
}

static bool on_list(const char *origin, size_t len)
{
	for (size_t i = 0; i < norigins; i++)
		if (strlen(origins[i]) == len && !memcmp(origins[i], origin, len))
			return true;
	return false;
}

/* The request's Origin when it is on the list, else NULL. */
static const h2o_header_t *allowed(h2o_req_t *req)
{
	const h2o_header_t *h;

	if (!norigins || !(h = find(req, "origin")))
		return NULL;
	return on_list(h->value.base, h->value.len) ? h : NULL;
}

void rest_cors_raw_headers(const char *origin, size_t len, struct mu_buf *out)
{
	if (!norigins)
		return;
	mu_buf_adds(out, "Vary: Origin\r\n");
	if (!origin || !on_list(origin, len))
		return;
	mu_buf_adds(out, "Access-Control-Allow-Origin: ");
	mu_buf_add(out, origin, len);
	mu_buf_addf(out, "\r\nAccess-Control-Expose-Headers: %s\r\n", expose);
}

static void add(h2o_req_t *req, const char *name, const char *v, size_t len)
{
	h2o_add_header_by_str(&req->pool, &req->res.headers, name, strlen(name), 0, NULL,
			      h2o_strdup(&req->pool, v, len).base, len);
}

void rest_cors_response(h2o_req_t *req)
{
	const h2o_header_t *o;

	if (!norigins)
		return;
	add(req, "vary", "Origin", 6);
	if (!(o = allowed(req)))
		return;
	add(req, "access-control-allow-origin", o->value.base, o->value.len);
	add(req, "access-control-expose-headers", expose, strlen(expose));
}

void rest_cors_preflight(h2o_req_t *req, const char *methods)
{
	const h2o_header_t *o;

	if (!norigins)
		return;
	add(req, "vary", "Origin", 6);
	if (!(o = allowed(req)) || !find(req, "access-control-request-method"))
		return;
	add(req, "access-control-allow-origin", o->value.base, o->value.len);
	add(req, "access-control-allow-methods", methods, strlen(methods));
	add(req, "access-control-allow-headers", allow_headers, strlen(allow_headers));
	add(req, "access-control-max-age", "600", 3);
}
