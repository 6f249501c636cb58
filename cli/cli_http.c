#include "cli_http.h"

#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "alloc.h"

#define MAX_RESPONSE (512L * 1024 * 1024)

struct buf {
	char *data;
	size_t len, cap;
	bool overflow;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct buf *b = userdata;
	size_t n = size * nmemb;

	if (b->len + n > MAX_RESPONSE) {
		b->overflow = true;
		return 0;
	}
	b->data = mu_grow(b->data, &b->cap, b->len + n + 1, 1);
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

/* TLS: MUSTER_CA_FILE (or --cacert, which sets it) is the CA bundle of an
 * https:// server; curl's error buffer says why a handshake failed
 * ("SSL certificate problem: ..."), which curl_easy_strerror does not. */
static char curl_errbuf[CURL_ERROR_SIZE];

static void tls_setopt(CURL *curl)
{
	const char *ca = getenv("MUSTER_CA_FILE");

	curl_errbuf[0] = '\0';
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_errbuf);
	if (ca && *ca)
		curl_easy_setopt(curl, CURLOPT_CAINFO, ca);
}

static const char *curl_reason(CURLcode rc)
{
	return curl_errbuf[0] ? curl_errbuf : curl_easy_strerror(rc);
}

int cli_http_init(struct cli_http *h, const char *url, const char *token)
{
	size_t n = strlen(url);

	memset(h, 0, sizeof(*h));
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return MU_EINTERNAL;
	h->curl = curl_easy_init();
	if (!h->curl)
		return MU_EINTERNAL;
	while (n > 0 && url[n - 1] == '/')
		n--;
	h->base = mu_strndup(url, n);
	if (token && *token)
		h->auth_header = mu_asprintf("Authorization: Bearer %s", token);
	return 0;
}

void cli_http_release(struct cli_http *h)
{
	if (h->curl)
		curl_easy_cleanup(h->curl);
	if (h->auth_header) {
		/* The secret does not linger in freed memory. */
		memset(h->auth_header, 0, strlen(h->auth_header));
		mu_free(h->auth_header);
	}
	mu_free(h->base);
	memset(h, 0, sizeof(*h));
}

char *cli_http_escape(struct cli_http *h, const char *s)
{
	(void)h;
	return cli_url_escape(s);
}

char *cli_url_escape(const char *s)
{
	/* libcurl ignores the handle here since 7.82. */
	char *e = curl_easy_escape(NULL, s, (int)strlen(s));
	char *ret = mu_strdup(e ? e : "");

	curl_free(e);
	return ret;
}

/* The MU_E* code for a problem type URL ("https://muster.dev/problems/<slug>"). */
static int code_for_slug(const char *type)
{
	const char *slash = type ? strrchr(type, '/') : NULL;
	const char *slug = slash ? slash + 1 : type;

	if (!slug || !*slug)
		return 0;
	for (int code = -1; code >= -64; code--)
		if (strcmp(mu_strerror(code), "Unknown error") && !strcmp(mu_err_slug(code), slug))
			return code;
	return 0;
}

static int code_for_status(long status)
{
	switch (status) {
	case 400: return MU_EINVAL;
	case 401: return MU_EUNAUTH;
	case 403: return MU_EFORBIDDEN;
	case 404: return MU_ENOTFOUND;
	case 405: return MU_EMETHOD;
	case 409: return MU_ECONFLICT;
	case 413: return MU_ETOOBIG;
	case 429: return MU_EQUOTA;
	case 502:
	case 503:
	case 504: return MU_EUNAVAIL;
	default: return status >= 400 && status < 500 ? MU_EINVAL : MU_EINTERNAL;
	}
}

/* Fills err from an error answer; returns its code. */
static int problem(long status, json_t *doc, const char *raw, struct mu_error *err)
{
	const char *title = NULL, *detail = NULL, *field = NULL;
	int code = 0;

	if (json_is_object(doc)) {
		title = json_string_value(json_object_get(doc, "title"));
		detail = json_string_value(json_object_get(doc, "detail"));
		field = json_string_value(json_object_get(doc, "field"));
		code = code_for_slug(json_string_value(json_object_get(doc, "type")));
	}
	if (!code)
		code = code_for_status(status);
	if (!title) {
		/* Not a problem document (a proxy, an old server): show its first line. */
		char line[200] = "";
		if (raw && !doc) {
			size_t n = strcspn(raw, "\r\n");
			snprintf(line, sizeof(line), "%.*s", (int)(n < 199 ? n : 199), raw);
		}
		return mu_error_set(err, code, field, "HTTP %ld%s%s", status, *line ? ": " : "",
				    line);
	}
	if (detail && *detail)
		return mu_error_set(err, code, field, "%s: %s", title, detail);
	return mu_error_set(err, code, field, "%s", title);
}

int cli_http_call(struct cli_http *h, const char *method, const char *path, json_t *body,
		  const char *idem_key, long *status, json_t **out, struct mu_error *err)
{
	CURL *curl = h->curl;
	struct curl_slist *hdrs = NULL;
	struct buf resp = { 0 };
	char *url = mu_asprintf("%s%s", h->base, path);
	char *payload = NULL;
	char *idem = NULL;
	json_t *doc = NULL;
	json_error_t jerr;
	long code = 0;
	CURLcode rc;
	int ret = 0;

	*out = NULL;
	curl_easy_reset(curl);
	tls_setopt(curl);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &resp);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, 300L);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, "muster-cli/0.1");
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	hdrs = curl_slist_append(hdrs, "Accept: application/json, application/problem+json");
	if (h->auth_header)
		hdrs = curl_slist_append(hdrs, h->auth_header);
	if (idem_key) {
		idem = mu_asprintf("Idempotency-Key: %s", idem_key);
		hdrs = curl_slist_append(hdrs, idem);
	}
	if (body) {
		payload = json_dumps(body, JSON_COMPACT);
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, payload);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
	} else if (!strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH")) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, 0L);
	}
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);

	rc = curl_easy_perform(curl);
	if (rc != CURLE_OK) {
		if (resp.overflow)
			ret = mu_error_set(err, MU_ETOOBIG, "", "response from %s is over %ld MiB",
					   h->base, MAX_RESPONSE >> 20);
		else
			ret = mu_error_set(err, MU_EUNAVAIL, "", "Service unavailable: cannot reach %s: %s", h->base,
					   curl_reason(rc));
		goto out;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
	if (status)
		*status = code;
	if (resp.len > 0)
		doc = json_loadb(resp.data, resp.len, JSON_ALLOW_NUL, &jerr);
	if (code < 200 || code > 299) {
		ret = problem(code, doc, resp.data, err);
		goto out;
	}
	if (resp.len > 0 && !doc) {
		ret = mu_error_set(err, MU_EJSON, "", "server sent invalid JSON (HTTP %ld): %s", code,
				   jerr.text);
		goto out;
	}
	*out = doc;
	doc = NULL;
out:
	json_decref(doc);
	curl_slist_free_all(hdrs);
	if (payload)
		free(payload);
	mu_free(idem);
	mu_free(resp.data);
	mu_free(url);
	return ret;
}

/* ---- streamed bodies (muster logs) --------------------------------------- */

struct stream_ctx {
	CURL *curl;
	cli_http_sink sink;
	void *arg;
	struct buf err_body;   /* a non-2xx answer, kept for problem() */
	bool sink_stopped;
	struct cli_http_header *hdrs;
	size_t nhdrs;
};

static size_t on_stream_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct stream_ctx *s = userdata;
	size_t n = size * nmemb;
	long code = 0;

	curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code < 200 || code > 299)
		return on_data(ptr, size, nmemb, &s->err_body);
	if (s->sink(s->arg, ptr, n)) {
		s->sink_stopped = true;
		return 0;
	}
	return n;
}

static size_t on_stream_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct stream_ctx *s = userdata;
	size_t n = size * nmemb;

	for (size_t i = 0; i < s->nhdrs; i++) {
		size_t k = strlen(s->hdrs[i].name);

		if (n > k + 1 && ptr[k] == ':' && !strncasecmp(ptr, s->hdrs[i].name, k)) {
			const char *v = ptr + k + 1;
			size_t vl = n - k - 1;

			while (vl && (*v == ' ' || *v == '\t'))
				v++, vl--;
			while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
				vl--;
			snprintf(s->hdrs[i].value, sizeof(s->hdrs[i].value), "%.*s", (int)vl, v);
		}
	}
	return n;
}

int cli_http_stream(struct cli_http *h, const char *path, long timeout_s, cli_http_sink sink,
		    void *arg, struct cli_http_header *hdrs, size_t nhdrs, long *status,
		    struct mu_error *err)
{
	CURL *curl = h->curl;
	struct curl_slist *hl = NULL;
	struct stream_ctx s = { .curl = curl, .sink = sink, .arg = arg, .hdrs = hdrs, .nhdrs = nhdrs };
	char *url = mu_asprintf("%s%s", h->base, path);
	json_t *doc = NULL;
	json_error_t jerr;
	long code = 0;
	CURLcode rc;
	int ret = 0;

	for (size_t i = 0; i < nhdrs; i++)
		hdrs[i].value[0] = '\0';
	curl_easy_reset(curl);
	tls_setopt(curl);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_stream_data);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_stream_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, &s);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, "muster-cli/0.1");
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	hl = curl_slist_append(hl, "Accept: text/plain, application/problem+json");
	if (h->auth_header)
		hl = curl_slist_append(hl, h->auth_header);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hl);
	rc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
	if (status)
		*status = code;
	if (rc != CURLE_OK && !(s.sink_stopped && rc == CURLE_WRITE_ERROR)) {
		if (code >= 200 && code <= 299)
			ret = mu_error_set(err, MU_EUNAVAIL, "", "Service unavailable: the stream from %s broke"
					   " (the node's agent went away?): %s", h->base, curl_reason(rc));
		else
			ret = mu_error_set(err, MU_EUNAVAIL, "", "Service unavailable: cannot reach %s: %s",
					   h->base, curl_reason(rc));
		goto out;
	}
	if (code < 200 || code > 299) {
		if (s.err_body.len > 0)
			doc = json_loadb(s.err_body.data, s.err_body.len, JSON_ALLOW_NUL, &jerr);
		ret = problem(code, doc, s.err_body.data, err);
	}
out:
	json_decref(doc);
	curl_slist_free_all(hl);
	mu_free(s.err_body.data);
	mu_free(url);
	return ret;
}
