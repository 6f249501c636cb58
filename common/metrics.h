/*
 * metrics.h - Prometheus text exposition for daemons without an HTTP
 * server (muster-scheduler, muster-agent): a tiny listener thread that
 * answers GET /metrics (and only that) with what a render callback writes,
 * plus helpers to write the text format (histograms, escaped labels).
 *
 * The server is deliberately small: one connection at a time, requests of
 * at most 4 KiB, a 2 s read timeout, HTTP/1.0-style close after each reply.
 * A scrape every few seconds is all it is for.
 *
 * Threading: the render callback runs on the listener thread; it must take
 * its own locks. mu_metrics_hist_* are not locked either.
 */
#ifndef MU_METRICS_H
#define MU_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"

typedef void (*mu_metrics_fn)(struct mu_buf *out, void *arg);

struct mu_metrics_server;

/*
 * Listens on `addr` ("host:port"; port 0 picks one, see mu_metrics_port)
 * and serves until mu_metrics_stop. *out is new. MU_EINVAL for a bad
 * address, MU_EIO when it cannot listen (err says why).
 */
int mu_metrics_serve(const char *addr, mu_metrics_fn fn, void *arg, struct mu_metrics_server **out,
		     struct mu_error *err) __attribute__((warn_unused_result));
int mu_metrics_port(const struct mu_metrics_server *s);
/* Stops the thread and frees the server; NULL is a no-op. */
void mu_metrics_stop(struct mu_metrics_server *s);

/* A histogram with fixed upper bounds (seconds, bytes...). */
#define MU_METRICS_MAX_BUCKETS 24
struct mu_metrics_hist {
	const double *bounds; /* borrowed, ascending */
	size_t n;
	uint64_t counts[MU_METRICS_MAX_BUCKETS + 1]; /* per bucket, last = +Inf */
	double sum;
	uint64_t count;
};
void mu_metrics_hist_init(struct mu_metrics_hist *h, const double *bounds, size_t n);
void mu_metrics_hist_observe(struct mu_metrics_hist *h, double v);
/* # HELP / # TYPE and the _bucket/_sum/_count lines. */
void mu_metrics_hist_render(struct mu_buf *b, const char *name, const char *help,
			    const struct mu_metrics_hist *h);

/* "# HELP name help\n# TYPE name type\n" */
void mu_metrics_head(struct mu_buf *b, const char *name, const char *type, const char *help);
/* A label value, escaped for the text format (\\, \", \n), quotes included. */
void mu_metrics_label(struct mu_buf *b, const char *v);

#endif
