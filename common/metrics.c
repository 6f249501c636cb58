/* metrics.c - see metrics.h. */
#define _GNU_SOURCE
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "alloc.h"

struct mu_metrics_server {
	int fd;
	int port;
	int wake[2]; /* a pipe: stop wakes the poll */
	mu_metrics_fn fn;
	void *arg;
	pthread_t thread;
};

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void reply(int fd, const char *status, const char *ctype, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n",
			 status, ctype, len);

	write_all(fd, head, (size_t)n);
	write_all(fd, body, len);
}

static void serve_one(struct mu_metrics_server *s, int fd)
{
	char req[4096];
	size_t len = 0;
	struct timeval tv = { 2, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (len < sizeof(req) - 1) {
		ssize_t r = recv(fd, req + len, sizeof(req) - 1 - len, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		len += (size_t)r;
		req[len] = '\0';
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
	}
	if (!strncmp(req, "GET /metrics ", 13) || !strncmp(req, "GET /metrics?", 13)) {
		struct mu_buf b = MU_BUF_INIT;

		s->fn(&b, s->arg);
		reply(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", b.p ? b.p : "", b.len);
		mu_buf_release(&b);
	} else if (!strncmp(req, "GET ", 4)) {
		reply(fd, "404 Not Found", "text/plain", "only /metrics here\n", 19);
	} else {
		reply(fd, "405 Method Not Allowed", "text/plain", "GET /metrics\n", 13);
	}
}

static void *loop(void *arg)
{
	struct mu_metrics_server *s = arg;

	for (;;) {
		struct pollfd p[2] = { { s->fd, POLLIN, 0 }, { s->wake[0], POLLIN, 0 } };
		int fd;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_one(s, fd);
		close(fd);
	}
	return NULL;
}

int mu_metrics_serve(const char *addr, mu_metrics_fn fn, void *arg, struct mu_metrics_server **out,
		     struct mu_error *err)
{
	const char *colon = addr ? strrchr(addr, ':') : NULL;
	struct addrinfo hints = { 0 }, *ai = NULL;
	struct mu_metrics_server *s;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256];
	int one = 1, rc, ret;

	*out = NULL;
	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return mu_error_set(err, MU_EINVAL, "metrics-addr", "expected host:port, got %s",
				    addr ? addr : "(none)");
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai);
	if (rc)
		return mu_error_set(err, MU_EINVAL, "metrics-addr", "%s: %s", addr, gai_strerror(rc));
	s = mu_calloc(1, sizeof(*s));
	s->fn = fn;
	s->arg = arg;
	s->wake[0] = s->wake[1] = -1;
	s->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s->fd, ai->ai_addr, ai->ai_addrlen) || listen(s->fd, 16) ||
	    getsockname(s->fd, (struct sockaddr *)&ss, &sl) || pipe2(s->wake, O_CLOEXEC)) {
		ret = mu_error_set(err, MU_EIO, "metrics-addr", "cannot listen on %s: %s", addr,
				   strerror(errno));
		goto out_free;
	}
	s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						 : ((struct sockaddr_in *)&ss)->sin_port);
	if (pthread_create(&s->thread, NULL, loop, s)) {
		ret = mu_error_set(err, MU_EIO, "metrics-addr", "cannot start the metrics thread");
		goto out_free;
	}
	freeaddrinfo(ai);
	*out = s;
	return 0;
out_free:
	freeaddrinfo(ai);
	if (s->fd >= 0)
		close(s->fd);
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	mu_free(s);
	return ret;
}

int mu_metrics_port(const struct mu_metrics_server *s)
{
	return s ? s->port : 0;
}

void mu_metrics_stop(struct mu_metrics_server *s)
{
	if (!s)
		return;
	/* a pipe, not a socket: write(2) (send(2) would fail with ENOTSOCK) */
	while (write(s->wake[1], "x", 1) < 0 && errno == EINTR)
		;
	pthread_join(s->thread, NULL);
	close(s->fd);
	close(s->wake[0]);
	close(s->wake[1]);
	mu_free(s);
}

void mu_metrics_hist_init(struct mu_metrics_hist *h, const double *bounds, size_t n)
{
	memset(h, 0, sizeof(*h));
	h->bounds = bounds;
	h->n = n > MU_METRICS_MAX_BUCKETS ? MU_METRICS_MAX_BUCKETS : n;
}

void mu_metrics_hist_observe(struct mu_metrics_hist *h, double v)
{
	size_t i = 0;

	while (i < h->n && v > h->bounds[i])
		i++;
	h->counts[i]++;
	h->sum += v;
	h->count++;
}

void mu_metrics_head(struct mu_buf *b, const char *name, const char *type, const char *help)
{
	mu_buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void mu_metrics_hist_render(struct mu_buf *b, const char *name, const char *help,
			    const struct mu_metrics_hist *h)
{
	uint64_t cum = 0;

	mu_metrics_head(b, name, "histogram", help);
	for (size_t i = 0; i < h->n; i++) {
		cum += h->counts[i];
		mu_buf_addf(b, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i],
			    (unsigned long long)cum);
	}
	mu_buf_addf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
		    (unsigned long long)h->count, name, h->sum, name, (unsigned long long)h->count);
}

void mu_metrics_label(struct mu_buf *b, const char *v)
{
	mu_buf_addc(b, '"');
	for (const char *p = v ? v : ""; *p; p++) {
		if (*p == '\\' || *p == '"')
			mu_buf_addc(b, '\\');
		if (*p == '\n') {
			mu_buf_adds(b, "\\n");
			continue;
		}
		mu_buf_addc(b, *p);
	}
	mu_buf_addc(b, '"');
}
