/*
 * cli_http.h - the CLI's REST client: HTTP/1.1 over one kept-alive socket
 * (TLS through OpenSSL for https://), JSON in and out,
 * RFC 9457 problems turned into MU_E* codes with "title: detail" messages.
 *
 * The bearer token is only ever put in the Authorization header; no message
 * this module produces contains it.
 */
#ifndef CLI_HTTP_H
#define CLI_HTTP_H

#include <jansson.h>

#include "error.h"

#include <stdbool.h>
#include <stddef.h>

struct cli_http {
	char *base;         /* new: the URL without a trailing '/' */
	char *auth_header;  /* new: "Authorization: Bearer ...", or NULL */
	char *host, *port;  /* new: where to connect */
	char *hosthdr;      /* new: the Host header ("host:port" as in the URL) */
	char *prefix;       /* new: the URL's path ("" or "/api"), put before each path */
	bool tls;           /* https:// */
	int fd;             /* the kept connection, or -1 */
	void *ssl, *ssl_ctx; /* SSL *, SSL_CTX * (https only) */
	char *rbuf;         /* bytes read and not yet used: rbuf[roff..rlen) */
	size_t rlen, roff, rcap;
	char why[256];      /* why the last exchange failed */
};

/* `url` and `token` are copied; token may be NULL (no Authorization header).
 * MU_EINVAL when url is not http(s)://HOST[:PORT][/PATH]. Nothing connects yet. */
int cli_http_init(struct cli_http *h, const char *url, const char *token)
	__attribute__((warn_unused_result));
void cli_http_release(struct cli_http *h);

/*
 * METHOD base+path (path starts with '/' and is already escaped). `body`
 * is borrowed (NULL = no body). `idem_key` adds an Idempotency-Key header.
 * On a 2xx answer returns 0 with *out = the parsed body (new; NULL when the
 * body is empty) and *status set. Otherwise returns a negative MU_E* code:
 * MU_EUNAVAIL when the server cannot be reached, else the code of the
 * problem's type (or of the HTTP status), with err->msg = "Title: detail"
 * and err->field = the problem's field. `status` may be NULL.
 */
int cli_http_call(struct cli_http *h, const char *method, const char *path, json_t *body,
		  const char *idem_key, long *status, json_t **out, struct mu_error *err)
	__attribute__((warn_unused_result));

/* err from an RFC 9457 problem document (one item of a bulk answer, say), as
 * cli_http_call does for an error answer of HTTP `status`; returns its code. */
int cli_http_problem(long status, const json_t *doc, struct mu_error *err);

/* A response header the caller wants (name lowercase); value "" when absent. */
struct cli_http_header {
	const char *name;
	char value[64];
};

/* GET base+path as cli_http_call does, but a 2xx body is handed back as
 * bytes (*body new, NUL-terminated, NULL when empty; *len), unparsed, and
 * hdrs[0..nhdrs) get the values of the headers they name. */
int cli_http_get_bytes(struct cli_http *h, const char *path, struct cli_http_header *hdrs,
		       size_t nhdrs, char **body, size_t *len, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Receives a piece of a streamed 2xx body; returns 0, or non-zero to stop. */
typedef int (*cli_http_sink)(void *arg, const char *p, size_t n);

/*
 * GET base+path, handing each piece of a 2xx body to `sink` as it arrives
 * (any content type: `muster logs`). An error answer is read whole and
 * turned into MU_E* and err as cli_http_call does. `hdrs[0..nhdrs)` get the
 * values of the headers they name. `timeout_s` 0 = none (a follow may last).
 * A 2xx body cut short (the server ended the transfer as broken, or the
 * connection dropped) is MU_EUNAVAIL.
 */
int cli_http_stream(struct cli_http *h, const char *path, long timeout_s, cli_http_sink sink,
		    void *arg, struct cli_http_header *hdrs, size_t nhdrs, long *status,
		    struct mu_error *err) __attribute__((warn_unused_result));

/* Percent-escapes one path segment or query value; new string (mu_free). */
char *cli_http_escape(struct cli_http *h, const char *s);
/* The same without a client. */
char *cli_url_escape(const char *s);

#endif
