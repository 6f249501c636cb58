/*
 * store_listen.h - LISTEN/NOTIFY for long-lived sessions that are not the
 * scheduler's (muster-api's gRPC watch and agent threads), so that callers
 * outside store/ never touch libpq. The connection is the caller's
 * (store_db_connect) and is used by one thread.
 */
#ifndef STORE_LISTEN_H
#define STORE_LISTEN_H

#include <stddef.h>

#include "db.h"
#include "error.h"

/* LISTEN on each of `channels` (plain identifiers, not quoted). */
int store_listen(PGconn *c, const char *const *channels, size_t n, struct mu_error *err)
	__attribute__((warn_unused_result));

/* The session's socket, to poll() for readability beside other fds; -1 when broken. */
int store_listen_fd(const PGconn *c);

/*
 * Reads what the server sent (non-blocking) and calls fn(arg, channel,
 * payload) for every notification received so far, also those that
 * arrived with earlier query results. Strings are borrowed for the call.
 * Returns 0, or MU_EUNAVAIL when the connection broke.
 */
int store_listen_drain(PGconn *c, void (*fn)(void *arg, const char *channel, const char *payload),
		       void *arg);

#endif
