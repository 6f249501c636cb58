/*
 * store_node.h - nodes and their GPUs: listing with the state derived from
 * health, drain and live allocations; drain/resume; and the registration
 * upsert agents use. Conventions as in store_tenant.h.
 *
 * Derived state: DOWN when not up; else DRAINING (drained with live
 * allocations) or DRAINED; else IDLE (no live allocation), ALLOCATED (every
 * GPU allocated) or MIXED.
 */
#ifndef STORE_NODE_H
#define STORE_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"

struct store_gpu {
	int64_t index;
	const char *uuid;
	const char *model;
	int64_t memory_mb;
	bool healthy;
	const char *health_reason;
	bool allocated;          /* in a live allocation */
	int64_t utilization;     /* percent */
	int64_t temperature;     /* Celsius */
	int64_t memory_used_mb;
};

struct store_node {
	int64_t id;
	const char *name;
	const char *address;
	const char *topology;    /* "block-1/rack-3" */
	const char *gpu_model;
	int64_t gpu_count;
	const char *state;       /* IDLE|MIXED|ALLOCATED|DRAINING|DRAINED|DOWN */
	const char *drain_reason;
	const char *labels_json; /* a JSON object, as text */
	const char *last_heartbeat; /* NULL when never */
	const char *agent_version;
	struct store_gpu *gpus;
	size_t n_gpus;
};

struct store_node_page {
	struct store_node *items;
	size_t n;
	const char *next_cursor;
};

/* What an agent reports when it registers. Strings borrowed. */
struct store_gpu_reg {
	int64_t index;
	const char *uuid;
	const char *model;
	int64_t memory_mb;
	bool healthy;
	const char *health_reason;
};
struct store_node_reg {
	const char *name;
	const char *address;
	const char *topology;
	const char *gpu_model;
	const char *labels_json;   /* NULL = "{}" */
	const char *agent_version;
	const struct store_gpu_reg *gpus;
	size_t n_gpus;             /* gpu_count */
};

/* MU_ENOTFOUND when there is no such node. */
int store_node_get(PGconn *c, struct mu_arena *a, const char *name, struct store_node *out, struct mu_error *err) __attribute__((warn_unused_result));
/* By name; `cursor` NULL = first page; limit 1..1000. */
int store_node_list(PGconn *c, struct mu_arena *a, const char *cursor, int limit,
		    struct store_node_page *out, struct mu_error *err) __attribute__((warn_unused_result));
/* Sets or clears drain, writes node.drain / node.resume and NOTIFYs
 * muster_sched 'node:<name>' in the same transaction. `reason` may be NULL. */
int store_node_drain(PGconn *c, const char *name, bool drain, const char *reason,
		     struct mu_error *err) __attribute__((warn_unused_result));
/* Creates or updates the node and its GPU rows (rows beyond n_gpus go),
 * marks it up with a fresh heartbeat, writes node.registered and NOTIFYs
 * muster_sched. *node_id (may be NULL) gets the node's id. */
int store_node_register(PGconn *c, const struct store_node_reg *reg, int64_t *node_id,
			struct mu_error *err) __attribute__((warn_unused_result));

#endif
