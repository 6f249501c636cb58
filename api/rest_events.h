/*
 * rest_events.h - GET /v1/events, the server-sent event stream (see
 * docs/api.md "Event stream"). The handler is declared by routes.def; this
 * is its setup.
 *
 * One reader thread (the "hub") owns a database session that LISTENs on
 * muster_events (migration 120), reads each new event once, in id order,
 * into a ring of the last `buffer` events, and wakes the streams. Each
 * stream filters the ring on the loop thread; one that resumes from an id
 * older than the ring reads the table through the pool first.
 */
#ifndef MU_REST_EVENTS_H
#define MU_REST_EVENTS_H

#include <stddef.h>

struct rest_events_config {
	const char *db_url;    /* borrowed; the hub's own session */
	size_t buffer;         /* events kept for live streams; a stream further behind overflows */
	int max_streams;       /* open streams in all (429 above) */
	int max_per_token;     /* open streams per token (429 above) */
	int heartbeat_s;       /* a comment line after this many idle seconds */
};

/* Starts the hub thread. Returns 0, or MU_EIO. Call before serving. */
int rest_events_start(const struct rest_events_config *cfg) __attribute__((warn_unused_result));

/* Stops the hub thread (the loop has stopped; open streams are dropped). */
void rest_events_stop(void);

#endif
