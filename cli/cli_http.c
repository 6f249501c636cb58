/*
 * cli_http.c - the CLI's HTTP/1.1 client over one socket: keep-alive,
 * Content-Length, chunked and read-to-close bodies, deadlines with poll(),
 * TLS through OpenSSL (dlopen'ed for the first https:// connection). It replaced libcurl,
 * whose loading (libcurl and its ~30 shared libraries) was most of a short
 * command's CPU time (docs/cli.md, "The client").
 */
#define _GNU_SOURCE /* memmem */
#include "cli_http.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "alloc.h"

#define MAX_RESPONSE (512L * 1024 * 1024)
#define MAX_HEAD (64 * 1024)
#define CONNECT_TIMEOUT_MS 10000L
#define CALL_TIMEOUT_S 300L

static int problem(long status, const json_t *doc, const char *raw, struct mu_error *err);

/* ---- OpenSSL, loaded only for https:// ------------------------------------
 * libssl and libcrypto cost ~1 ms of every process's start when linked
 * (bench/RESULTS.md, "CLI against Slurm"); an http:// command never loads
 * them. The headers give the types; these are the functions used. */
#define OSSL_SSL_FNS(X) X(SSL_CTX_new) X(TLS_client_method) X(SSL_CTX_ctrl) X(SSL_CTX_set_verify) X(SSL_CTX_load_verify_locations) X(SSL_CTX_set_default_verify_paths) X(SSL_new) X(SSL_set_fd) X(SSL_get0_param) X(SSL_ctrl) X(SSL_set1_host) X(SSL_connect) X(SSL_get_error) X(SSL_read) X(SSL_write) X(SSL_free) X(SSL_CTX_free) X(SSL_get_verify_result)
#define OSSL_CRYPTO_FNS(X) X(X509_VERIFY_PARAM_set1_ip_asc) X(X509_verify_cert_error_string) X(ERR_get_error) X(ERR_peek_error) X(ERR_clear_error) X(ERR_error_string_n)
#define OSSL_DECL(f) __typeof__(&f) f;
static struct {
	OSSL_SSL_FNS(OSSL_DECL)
	OSSL_CRYPTO_FNS(OSSL_DECL)
	bool loaded;
} ossl;

static int ossl_load(struct cli_http *h)
{
	void *ssl, *crypto;

	if (ossl.loaded)
		return 0;
	crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_GLOBAL);
	ssl = crypto ? dlopen("libssl.so.3", RTLD_NOW | RTLD_GLOBAL) : NULL;
	if (!ssl) {
		snprintf(h->why, sizeof(h->why), "TLS: cannot load OpenSSL 3: %s", dlerror());
		return -1;
	}
#define OSSL_LOAD(lib, f)                                                              \
	if (!(*(void **)&ossl.f = dlsym(lib, #f))) {                                  \
		snprintf(h->why, sizeof(h->why), "TLS: OpenSSL has no %s", #f);     \
		return -1;                                                             \
	}
#define OSSL_LOAD_SSL(f) OSSL_LOAD(ssl, f)
#define OSSL_LOAD_CRYPTO(f) OSSL_LOAD(crypto, f)
	OSSL_SSL_FNS(OSSL_LOAD_SSL)
	OSSL_CRYPTO_FNS(OSSL_LOAD_CRYPTO)
	ossl.loaded = true;
	return 0;
}

/* ---- URL, connection ----------------------------------------------------- */

static int parse_url(struct cli_http *h, const char *url)
{
	const char *p, *auth, *end, *colon;

	if (!strncmp(url, "http://", 7)) {
		p = url + 7;
	} else if (!strncmp(url, "https://", 8)) {
		p = url + 8;
		h->tls = true;
	} else {
		return MU_EINVAL;
	}
	auth = p;
	end = auth + strcspn(auth, "/?#");
	if (end == auth)
		return MU_EINVAL;
	h->hosthdr = mu_strndup(auth, (size_t)(end - auth));
	if (*auth == '[') {
		const char *rb = memchr(auth, ']', (size_t)(end - auth));

		if (!rb)
			return MU_EINVAL;
		h->host = mu_strndup(auth + 1, (size_t)(rb - auth - 1));
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
	} else {
		colon = memchr(auth, ':', (size_t)(end - auth));
		h->host = mu_strndup(auth, (size_t)((colon ? colon : end) - auth));
	}
	if (colon && colon + 1 < end)
		h->port = mu_strndup(colon + 1, (size_t)(end - colon - 1));
	else
		h->port = mu_strdup(h->tls ? "443" : "80");
	h->prefix = mu_strdup(*end == '/' ? end : "");
	return 0;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before `deadline` (0 = none -> -1 for poll); 0 when past. */
static int left_ms(long deadline)
{
	long l;

	if (!deadline)
		return -1;
	l = deadline - now_ms();
	return l > 0 ? (int)(l > INT32_MAX ? INT32_MAX : l) : 0;
}

static void why(struct cli_http *h, const char *fmt, const char *arg)
{
	snprintf(h->why, sizeof(h->why), fmt, arg);
}

static void drop(struct cli_http *h)
{
	if (h->ssl) {
		ossl.SSL_free(h->ssl);
		h->ssl = NULL;
	}
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	h->rlen = h->roff = 0;
}

static int wait_fd(struct cli_http *h, short ev, long deadline)
{
	struct pollfd p = { .fd = h->fd, .events = ev };
	int r;

	do
		r = poll(&p, 1, left_ms(deadline));
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		why(h, "%s", "Operation timed out");
		return -1;
	}
	if (r < 0) {
		why(h, "%s", strerror(errno));
		return -1;
	}
	return 0;
}

static int tcp_connect(struct cli_http *h)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL, *ai;
	long deadline = now_ms() + CONNECT_TIMEOUT_MS;
	int rc = getaddrinfo(h->host, h->port, &hints, &res);

	if (rc) {
		why(h, "Could not resolve host: %s", h->host);
		return -1;
	}
	why(h, "%s", "Connection refused");
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				ai->ai_protocol);
		int one = 1, soerr = 0;
		socklen_t sl = sizeof(soerr);

		if (fd < 0)
			continue;
		h->fd = fd;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			if (errno != EINPROGRESS || wait_fd(h, POLLOUT, deadline) < 0) {
				if (errno != EINPROGRESS)
					why(h, "%s", strerror(errno));
				goto next;
			}
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
				why(h, "%s", strerror(soerr ? soerr : errno));
				goto next;
			}
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		freeaddrinfo(res);
		return 0;
next:
		close(fd);
		h->fd = -1;
	}
	freeaddrinfo(res);
	return -1;
}

/* ---- TLS ------------------------------------------------------------------ */

static void tls_why(struct cli_http *h)
{
	long v = h->ssl ? ossl.SSL_get_verify_result(h->ssl) : X509_V_OK;
	unsigned long e = ossl.ERR_get_error();
	char buf[200];

	if (v != X509_V_OK) {
		/* The words curl used, which scripts and tests look for. */
		why(h, "SSL certificate problem: %s", ossl.X509_verify_cert_error_string(v));
	} else if (e) {
		ossl.ERR_error_string_n(e, buf, sizeof(buf));
		why(h, "TLS: %s", buf);
	} else if (!h->why[0]) {
		why(h, "%s", "TLS: the connection closed during the handshake");
	}
	ossl.ERR_clear_error();
}

static int tls_start(struct cli_http *h, long deadline)
{
	const char *ca = getenv("MUSTER_CA_FILE");
	unsigned char a6[16];

	if (ossl_load(h) < 0)
		return -1;
	if (!h->ssl_ctx) {
		h->ssl_ctx = ossl.SSL_CTX_new(ossl.TLS_client_method());
		if (!h->ssl_ctx) {
			tls_why(h);
			return -1;
		}
		ossl.SSL_CTX_ctrl(h->ssl_ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL);
		ossl.SSL_CTX_set_verify(h->ssl_ctx, SSL_VERIFY_PEER, NULL);
		if (ca && *ca ? ossl.SSL_CTX_load_verify_locations(h->ssl_ctx, ca, NULL) != 1
			      : ossl.SSL_CTX_set_default_verify_paths(h->ssl_ctx) != 1) {
			snprintf(h->why, sizeof(h->why), "error setting certificate file: %s", ca);
			ossl.ERR_clear_error();
			return -1;
		}
	}
	h->ssl = ossl.SSL_new(h->ssl_ctx);
	if (!h->ssl || ossl.SSL_set_fd(h->ssl, h->fd) != 1) {
		tls_why(h);
		return -1;
	}
	if (inet_pton(AF_INET, h->host, a6) == 1 || inet_pton(AF_INET6, h->host, a6) == 1) {
		ossl.X509_VERIFY_PARAM_set1_ip_asc(ossl.SSL_get0_param(h->ssl), h->host);
	} else {
		ossl.SSL_ctrl(h->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, h->host);
		ossl.SSL_set1_host(h->ssl, h->host);
	}
	h->why[0] = '\0';
	for (;;) {
		int r = ossl.SSL_connect(h->ssl), e;

		if (r == 1)
			return 0;
		e = ossl.SSL_get_error(h->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			if (wait_fd(h, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline) < 0)
				return -1;
			continue;
		}
		tls_why(h);
		return -1;
	}
}

/* ---- raw I/O: >0 bytes, 0 end of stream, -1 error (h->why says) ---------- */

static ssize_t io_read(struct cli_http *h, char *p, size_t n, long deadline)
{
	for (;;) {
		ssize_t r;

		if (h->ssl) {
			int e;

			ossl.ERR_clear_error();
			r = ossl.SSL_read(h->ssl, p, (int)(n > INT32_MAX ? INT32_MAX : n));
			if (r > 0)
				return r;
			e = ossl.SSL_get_error(h->ssl, (int)r);
			if (e == SSL_ERROR_ZERO_RETURN)
				return 0;
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
				if (wait_fd(h, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline) < 0)
					return -1;
				continue;
			}
			if (e == SSL_ERROR_SYSCALL && !ossl.ERR_peek_error()) {
				if (r == 0 || errno == ECONNRESET)
					return 0; /* closed without close_notify: the caller judges */
				why(h, "%s", strerror(errno));
				return -1;
			}
			tls_why(h);
			return -1;
		}
		r = recv(h->fd, p, n, 0);
		if (r >= 0)
			return r;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if (wait_fd(h, POLLIN, deadline) < 0)
				return -1;
			continue;
		}
		if (errno == ECONNRESET)
			return 0;
		why(h, "%s", strerror(errno));
		return -1;
	}
}

/* SSL_write through write(2): a peer gone would raise SIGPIPE and kill the
 * CLI, so the signal is blocked around it and a pending one taken back. */
static ssize_t ssl_write_nosigpipe(SSL *ssl, const char *p, size_t n)
{
	sigset_t pipe_set, old;
	struct timespec zero = { 0, 0 };
	ssize_t r;
	int saved;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigprocmask(SIG_BLOCK, &pipe_set, &old);
	r = ossl.SSL_write(ssl, p, (int)(n > INT32_MAX ? INT32_MAX : n));
	saved = errno;
	while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
		;
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return r;
}

static int io_write(struct cli_http *h, const char *p, size_t n, long deadline)
{
	while (n > 0) {
		ssize_t r;

		if (h->ssl) {
			int e;

			ossl.ERR_clear_error();
			r = ssl_write_nosigpipe(h->ssl, p, n);
			if (r <= 0) {
				e = ossl.SSL_get_error(h->ssl, (int)r);
				if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
					if (wait_fd(h, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT,
						    deadline) < 0)
						return -1;
					continue;
				}
				if (e == SSL_ERROR_SYSCALL && !ossl.ERR_peek_error())
					why(h, "%s", strerror(errno ? errno : EPIPE));
				else
					tls_why(h);
				return -1;
			}
		} else {
			r = send(h->fd, p, n, MSG_NOSIGNAL);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK) {
					if (wait_fd(h, POLLOUT, deadline) < 0)
						return -1;
					continue;
				}
				why(h, "%s", strerror(errno));
				return -1;
			}
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* More bytes into the read buffer: 1, 0 at end of stream, -1 error. */
static int fill(struct cli_http *h, long deadline)
{
	ssize_t r;

	if (h->roff > 0) {
		memmove(h->rbuf, h->rbuf + h->roff, h->rlen - h->roff);
		h->rlen -= h->roff;
		h->roff = 0;
	}
	if (h->rcap - h->rlen < 16384)
		h->rbuf = mu_grow(h->rbuf, &h->rcap, h->rlen + 16384, 1);
	r = io_read(h, h->rbuf + h->rlen, h->rcap - h->rlen, deadline);
	if (r <= 0)
		return (int)r;
	h->rlen += (size_t)r;
	return 1;
}

/* ---- one exchange ---------------------------------------------------------- */

/* Receives body bytes; returns 0, 1 to stop reading (the sink is done), -1 overflow. */
typedef int (*body_fn)(void *arg, long status, const char *p, size_t n);

struct exchange {
	const char *method, *path, *accept;
	const char *idem_key;
	const char *body;
	size_t body_len;
	long timeout_s;
	struct cli_http_header *hdrs;
	size_t nhdrs;
	body_fn on_body;
	void *arg;
	/* out */
	long status;
	bool got_head;   /* the status line and headers came */
	bool stopped;    /* on_body said stop */
	bool overflow;
	bool cut;        /* the body ended early */
};

static void want_header(struct exchange *x, const char *name, size_t nl, const char *v, size_t vl)
{
	for (size_t i = 0; i < x->nhdrs; i++)
		if (strlen(x->hdrs[i].name) == nl && !strncasecmp(name, x->hdrs[i].name, nl))
			snprintf(x->hdrs[i].value, sizeof(x->hdrs[i].value), "%.*s", (int)vl, v);
}

static int deliver(struct exchange *x, const char *p, size_t n)
{
	int r = n ? x->on_body(x->arg, x->status, p, n) : 0;

	if (r > 0)
		x->stopped = true;
	if (r < 0)
		x->overflow = true;
	return r;
}

/* Parses the head in rbuf[roff..end); sets length (-1 none) and flags. */
static int parse_head(struct cli_http *h, struct exchange *x, size_t end, long long *length,
		      bool *chunked, bool *keep)
{
	char *line = h->rbuf + h->roff, *stop = h->rbuf + end;
	int minor = 1;

	*length = -1;
	*chunked = false;
	if (sscanf(line, "HTTP/1.%d %ld", &minor, &x->status) != 2 || x->status < 100) {
		why(h, "%s", "the server did not answer HTTP/1.x");
		return -1;
	}
	*keep = minor >= 1;
	line = strstr(line, "\r\n") + 2;
	while (line < stop) {
		char *eol = strstr(line, "\r\n");
		char *colon = memchr(line, ':', (size_t)(eol - line));
		const char *v;
		size_t nl, vl;

		if (eol == line)
			break;
		if (colon) {
			nl = (size_t)(colon - line);
			v = colon + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			vl = (size_t)(eol - v);
			while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (nl == 14 && !strncasecmp(line, "content-length", 14))
				*length = strtoll(v, NULL, 10);
			else if (nl == 17 && !strncasecmp(line, "transfer-encoding", 17))
				*chunked = vl >= 7 && !strncasecmp(v + vl - 7, "chunked", 7);
			else if (nl == 10 && !strncasecmp(line, "connection", 10))
				*keep = !(vl == 5 && !strncasecmp(v, "close", 5));
			want_header(x, line, nl, v, vl);
		}
		line = eol + 2;
	}
	return 0;
}

/* The head's end (index past "\r\n\r\n") once it is all in, reading as needed;
 * 0 when the connection ended before any byte, -1 on error. */
static long read_head(struct cli_http *h, long deadline)
{
	for (;;) {
		if (h->rlen > h->roff) {
			char *s = h->rbuf + h->roff;
			size_t n = h->rlen - h->roff;
			char *e = memmem(s, n, "\r\n\r\n", 4);

			if (e) {
				*e = '\r';
				return (long)(e + 4 - h->rbuf);
			}
			if (n > MAX_HEAD) {
				why(h, "%s", "the response headers are too big");
				return -1;
			}
		}
		{
			bool had = h->rlen > h->roff;
			int r = fill(h, deadline);

			if (r < 0)
				return -1;
			if (r == 0) {
				why(h, "%s", had ? "the connection closed mid-answer"
						 : "Empty reply from server");
				return had ? -1 : 0;
			}
		}
	}
}

/* Hands `n` bytes of body on (n < 0: to the end of the stream). 0, or -1 cut/error. */
static int body_bytes(struct cli_http *h, struct exchange *x, long long n, long deadline)
{
	while (n != 0) {
		size_t have = h->rlen - h->roff;

		if (have == 0) {
			int r = fill(h, deadline);

			if (r < 0)
				return -1;
			if (r == 0) {
				if (n < 0)
					return 0;
				x->cut = true;
				why(h, "%s", "the connection closed before the body's end");
				return -1;
			}
			continue;
		}
		if (n > 0 && (long long)have > n)
			have = (size_t)n;
		if (deliver(x, h->rbuf + h->roff, have))
			return -1;
		h->roff += have;
		if (n > 0)
			n -= (long long)have;
	}
	return 0;
}

/* One line of a chunked body (without CRLF) into *line; 0 or -1. */
static int chunk_line(struct cli_http *h, struct exchange *x, char **line, long deadline)
{
	for (;;) {
		char *s = h->rbuf + h->roff;
		char *e = h->rlen > h->roff ? memmem(s, h->rlen - h->roff, "\r\n", 2) : NULL;
		int r;

		if (e) {
			*e = '\0';
			*line = s;
			h->roff = (size_t)(e + 2 - h->rbuf);
			return 0;
		}
		if (h->rlen - h->roff > 4096) {
			why(h, "%s", "bad chunk in the answer");
			return -1;
		}
		r = fill(h, deadline);
		if (r <= 0) {
			if (r == 0) {
				x->cut = true;
				why(h, "%s", "the connection closed before the body's end");
			}
			return -1;
		}
	}
}

static int chunked_body(struct cli_http *h, struct exchange *x, long deadline)
{
	for (;;) {
		char *line, *end;
		long long size;

		if (chunk_line(h, x, &line, deadline) < 0)
			return -1;
		size = strtoll(line, &end, 16);
		if (end == line || size < 0) {
			why(h, "%s", "bad chunk in the answer");
			return -1;
		}
		if (size == 0) {
			do /* trailers, up to the empty line */
				if (chunk_line(h, x, &line, deadline) < 0)
					return -1;
			while (*line);
			return 0;
		}
		if (body_bytes(h, x, size, deadline) < 0 || chunk_line(h, x, &line, deadline) < 0)
			return -1;
	}
}

static char *request_head(struct cli_http *h, const struct exchange *x)
{
	char *idem = x->idem_key ? mu_asprintf("Idempotency-Key: %s\r\n", x->idem_key) : NULL;
	char *cl = x->body ? mu_asprintf("Content-Type: application/json\r\nContent-Length: %zu\r\n",
					 x->body_len)
			   : NULL;
	bool needs_len = !strcmp(x->method, "POST") || !strcmp(x->method, "PUT") ||
			 !strcmp(x->method, "PATCH");
	char *head = mu_asprintf("%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: muster-cli/0.1\r\n"
				 "Accept: %s\r\n%s%s%s%s%s",
				 x->method, h->prefix, x->path, h->hosthdr, x->accept,
				 h->auth_header ? h->auth_header : "", h->auth_header ? "\r\n" : "",
				 idem ? idem : "", cl ? cl : "",
				 !x->body && needs_len ? "Content-Length: 0\r\n\r\n" : "\r\n");

	mu_free(idem);
	mu_free(cl);
	return head;
}

/*
 * Sends the request and reads the answer, on the kept connection when there
 * is one. A kept connection the server closed meanwhile (nothing came back)
 * is replaced once. 0 when an answer came whole (or the sink stopped it),
 * else -1 with h->why saying why.
 */
static int exchange(struct cli_http *h, struct exchange *x)
{
	long deadline = x->timeout_s > 0 ? now_ms() + x->timeout_s * 1000 : 0;
	char *head = request_head(h, x);
	int ret = -1;

	for (int attempt = 0; attempt < 2; attempt++) {
		bool reused = h->fd >= 0, sent_all;
		char send_why[sizeof(h->why)];
		long long length;
		bool chunked, keep;
		long end;

		h->why[0] = '\0';
		if (!reused) {
			if (tcp_connect(h) < 0)
				break;
			if (h->tls && tls_start(h, now_ms() + CONNECT_TIMEOUT_MS) < 0) {
				drop(h);
				break;
			}
		}
		if (io_write(h, head, strlen(head), deadline) < 0) {
			drop(h);
			if (reused)
				continue;
			break;
		}
		/* A server may refuse a body from its headers (413) and close while
		 * it is still being sent: its answer is then read all the same. */
		sent_all = !x->body || io_write(h, x->body, x->body_len, deadline) == 0;
		snprintf(send_why, sizeof(send_why), "%s", h->why);
		for (;;) {
			end = read_head(h, deadline);
			if (end <= 0)
				break;
			if (parse_head(h, x, (size_t)end, &length, &chunked, &keep) < 0) {
				end = -1;
				break;
			}
			h->roff = (size_t)end;
			if (x->status >= 200)
				break;
			x->status = 0; /* 1xx: another head follows */
		}
		if (end == 0 && reused && sent_all) {
			drop(h);
			continue;
		}
		if (end <= 0) {
			if (!sent_all)
				snprintf(h->why, sizeof(h->why), "%s", send_why);
			drop(h);
			break;
		}
		if (!sent_all)
			keep = false;
		x->got_head = true;
		if (x->status == 204 || x->status == 304 || !strcmp(x->method, "HEAD"))
			ret = 0;
		else if (chunked)
			ret = chunked_body(h, x, deadline);
		else if (length >= 0)
			ret = body_bytes(h, x, length, deadline);
		else {
			keep = false;
			ret = body_bytes(h, x, -1, deadline);
		}
		if (x->stopped || x->overflow)
			ret = 0;
		if (ret < 0 || !keep || x->stopped || x->overflow)
			drop(h);
		break;
	}
	mu_free(head);
	return ret;
}

/* ---- public --------------------------------------------------------------- */

int cli_http_init(struct cli_http *h, const char *url, const char *token)
{
	size_t n = strlen(url);

	memset(h, 0, sizeof(*h));
	h->fd = -1;
	while (n > 0 && url[n - 1] == '/')
		n--;
	h->base = mu_strndup(url, n);
	if (token && *token)
		h->auth_header = mu_asprintf("Authorization: Bearer %s", token);
	return parse_url(h, h->base);
}

void cli_http_release(struct cli_http *h)
{
	drop(h);
	if (h->ssl_ctx)
		ossl.SSL_CTX_free(h->ssl_ctx);
	if (h->auth_header) {
		/* The secret does not linger in freed memory. */
		memset(h->auth_header, 0, strlen(h->auth_header));
		mu_free(h->auth_header);
	}
	mu_free(h->base);
	mu_free(h->host);
	mu_free(h->port);
	mu_free(h->hosthdr);
	mu_free(h->prefix);
	mu_free(h->rbuf);
	memset(h, 0, sizeof(*h));
	h->fd = -1;
}

char *cli_http_escape(struct cli_http *h, const char *s)
{
	(void)h;
	return cli_url_escape(s);
}

char *cli_url_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *e = mu_malloc(3 * n + 1), *o = e;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return e;
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

int cli_http_problem(long status, const json_t *doc, struct mu_error *err)
{
	return problem(status, doc, NULL, err);
}

/* Fills err from an error answer; returns its code. */
static int problem(long status, const json_t *doc, const char *raw, struct mu_error *err)
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


struct buf {
	char *data;
	size_t len, cap;
};

static int buf_add(struct buf *b, const char *p, size_t n)
{
	if (b->len + n > MAX_RESPONSE)
		return -1;
	b->data = mu_grow(b->data, &b->cap, b->len + n + 1, 1);
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

static int to_buf(void *arg, long status, const char *p, size_t n)
{
	(void)status;
	return buf_add(arg, p, n);
}

/* One call: a 2xx answer's body bytes in *resp (the caller frees
 * resp->data), an error answer turned into MU_E* as cli_http_call says. */
static int call_raw(struct cli_http *h, const char *method, const char *path, const char *payload,
		    const char *idem_key, struct cli_http_header *hdrs, size_t nhdrs, long *status,
		    struct buf *resp, struct mu_error *err)
{
	struct exchange x = {
		.method = method, .path = path, .idem_key = idem_key,
		.accept = "application/json, application/problem+json",
		.body = payload, .body_len = payload ? strlen(payload) : 0,
		.timeout_s = CALL_TIMEOUT_S, .hdrs = hdrs, .nhdrs = nhdrs, .on_body = to_buf,
		.arg = resp,
	};
	json_t *doc;
	json_error_t jerr;
	int ret;

	for (size_t i = 0; i < nhdrs; i++)
		hdrs[i].value[0] = '\0';
	if (exchange(h, &x) < 0)
		return mu_error_set(err, MU_EUNAVAIL, "", "Service unavailable: cannot reach %s: %s",
				    h->base, h->why);
	if (x.overflow)
		return mu_error_set(err, MU_ETOOBIG, "", "response from %s is over %ld MiB", h->base,
				    MAX_RESPONSE >> 20);
	if (status)
		*status = x.status;
	if (x.status >= 200 && x.status <= 299)
		return 0;
	doc = resp->len > 0 ? json_loadb(resp->data, resp->len, JSON_ALLOW_NUL, &jerr) : NULL;
	ret = problem(x.status, doc, resp->data, err);
	json_decref(doc);
	return ret;
}

int cli_http_call(struct cli_http *h, const char *method, const char *path, json_t *body,
		  const char *idem_key, long *status, json_t **out, struct mu_error *err)
{
	struct buf resp = { 0 };
	char *payload = body ? json_dumps(body, JSON_COMPACT) : NULL;
	long st = 0;
	json_error_t jerr;
	int ret;

	*out = NULL;
	ret = call_raw(h, method, path, payload, idem_key, NULL, 0, &st, &resp, err);
	if (status)
		*status = st;
	if (ret == 0 && resp.len > 0 && !(*out = json_loadb(resp.data, resp.len, JSON_ALLOW_NUL, &jerr)))
		ret = mu_error_set(err, MU_EJSON, "", "server sent invalid JSON (HTTP %ld): %s", st,
				   jerr.text);
	if (payload)
		free(payload);
	mu_free(resp.data);
	return ret;
}

int cli_http_get_bytes(struct cli_http *h, const char *path, struct cli_http_header *hdrs,
		       size_t nhdrs, char **body, size_t *len, struct mu_error *err)
{
	struct buf resp = { 0 };
	int ret = call_raw(h, "GET", path, NULL, NULL, hdrs, nhdrs, NULL, &resp, err);

	if (ret < 0) {
		mu_free(resp.data);
		resp.data = NULL;
		resp.len = 0;
	}
	*body = resp.data;
	*len = resp.len;
	return ret;
}

/* ---- streamed bodies (muster logs, muster queue) ------------------------- */

struct stream_ctx {
	cli_http_sink sink;
	void *arg;
	struct buf err_body;   /* a non-2xx answer, kept for problem() */
};

static int to_sink(void *arg, long status, const char *p, size_t n)
{
	struct stream_ctx *s = arg;

	if (status < 200 || status > 299)
		return buf_add(&s->err_body, p, n);
	return s->sink(s->arg, p, n) ? 1 : 0;
}

int cli_http_stream(struct cli_http *h, const char *path, long timeout_s, cli_http_sink sink,
		    void *arg, struct cli_http_header *hdrs, size_t nhdrs, long *status,
		    struct mu_error *err)
{
	struct stream_ctx s = { .sink = sink, .arg = arg };
	struct exchange x = {
		.method = "GET", .path = path, .accept = "text/plain, application/problem+json",
		.timeout_s = timeout_s, .hdrs = hdrs, .nhdrs = nhdrs, .on_body = to_sink, .arg = &s,
	};
	json_t *doc = NULL;
	json_error_t jerr;
	int ret = 0;

	for (size_t i = 0; i < nhdrs; i++)
		hdrs[i].value[0] = '\0';
	if (exchange(h, &x) < 0) {
		if (x.got_head && x.status >= 200 && x.status <= 299)
			ret = mu_error_set(err, MU_EUNAVAIL, "", "Service unavailable: the stream from %s broke"
					   " (the node's agent went away?): %s", h->base, h->why);
		else
			ret = mu_error_set(err, MU_EUNAVAIL, "", "Service unavailable: cannot reach %s: %s",
					   h->base, h->why);
		goto out;
	}
	if (status)
		*status = x.status;
	if (x.status < 200 || x.status > 299) {
		if (s.err_body.len > 0)
			doc = json_loadb(s.err_body.data, s.err_body.len, JSON_ALLOW_NUL, &jerr);
		ret = problem(x.status, doc, s.err_body.data, err);
	}
out:
	json_decref(doc);
	mu_free(s.err_body.data);
	return ret;
}
