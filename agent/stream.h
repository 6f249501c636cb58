/*
 * stream.h - the AgentService.Connect client (gRPC C core, one completion
 * queue polled from the agent's main loop, so the launcher never waits on
 * the network). Reconnects with jittered exponential backoff.
 */
#ifndef MU_AGENT_STREAM_H
#define MU_AGENT_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "muster/v1/agent.pb-c.h"

struct ag_stream;

/* target "host:port"; auth_header ("Bearer <token>", ag_token_header())
 * is borrowed for the stream's whole life and never copied. */
struct ag_stream *ag_stream_new(const char *target, const char *auth_header);
void ag_stream_free(struct ag_stream *s);
/* True when no call is open and the backoff has passed: open one now. */
bool ag_stream_should_open(const struct ag_stream *s);
/* Opens the call and sends `reg` first (packed here; reg stays the caller's). */
void ag_stream_open(struct ag_stream *s, const Muster__V1__AgentMessage *reg);
/* True while a call is open and RegisterAck came. */
bool ag_stream_ready(const struct ag_stream *s);
/* True once per newly acknowledged stream (then false until the next). */
bool ag_stream_take_new(struct ag_stream *s);
/* Queues a message on the open call; false (dropped) when there is none. */
bool ag_stream_send(struct ag_stream *s, const Muster__V1__AgentMessage *m);
/* Waits up to timeout_ms for the network; each server message goes to
 * on_msg (the message is freed after the callback returns). */
void ag_stream_poll(struct ag_stream *s, int timeout_ms,
		    void (*on_msg)(void *ctx, const Muster__V1__ServerMessage *m), void *ctx);
/* Messages queued on the open call and not yet sent. Heartbeats stop
 * queueing at AG_STREAM_HB_BACKLOG so that run reports always find room. */
#define AG_STREAM_HB_BACKLOG 1024
size_t ag_stream_backlog(const struct ag_stream *s);
/* Cancels the open call (shutdown). */
void ag_stream_cancel(struct ag_stream *s);

#endif
