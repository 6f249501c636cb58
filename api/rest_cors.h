/*
 * rest_cors.h - cross-origin access to the REST API (docs/api.md "CORS").
 *
 * An allow-list of exact origins ("https://portal.example.com"), empty by
 * default: then no response carries CORS headers and browsers allow only
 * same-origin pages (the portal at /ui/ is one). Requests from an origin
 * not on the list are answered as usual but without CORS headers, so the
 * browser refuses the page the answer. Tokens are bearer headers, never
 * cookies: credentials are not allowed and "*" is not offered.
 */
#ifndef MU_REST_CORS_H
#define MU_REST_CORS_H

#include <h2o.h>

/* Sets the allow-list from a comma (or space) separated list; NULL or "" =
 * none. Returns 0, or MU_EINVAL (an entry that is not scheme://host[:port]). */
int rest_cors_init(const char *origins) __attribute__((warn_unused_result));

/* Adds Access-Control-Allow-Origin (+ Vary, Expose-Headers) to `req`'s
 * response when its Origin is allowed. Loop thread, before the reply goes. */
void rest_cors_response(h2o_req_t *req);

/* The same headers as raw HTTP/1 lines ("Name: value\r\n") for an answer
 * written without h2o (the gate's refusals); `origin` NULL = none sent. */
struct mu_buf;
void rest_cors_raw_headers(const char *origin, size_t len, struct mu_buf *out);

/* Adds the preflight headers (Allow-Methods `methods`, Allow-Headers,
 * Max-Age) when the Origin is allowed and it asks for a method. */
void rest_cors_preflight(h2o_req_t *req, const char *methods);

#endif
