/*
 * store_event.h - reading the events table in id order, for cursors that
 * resume (muster-api's gRPC JobService.Watch). Conventions as store_job.h.
 */
#ifndef STORE_EVENT_H
#define STORE_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"

struct store_event {
	int64_t id;
	bool visible;          /* matches the filter below; else only id is set */
	const char *at;        /* RFC 3339 UTC */
	const char *kind;
	int64_t job_id, run_id; /* 0 = none */
	const char *reason;
	const char *data;      /* JSON object text */
	const char *tenant;    /* "" = none */
	const char *job_state; /* the job's state now, "" = no job */
};

struct store_event_filter {
	const char *scope;          /* tenant subtree path, NULL = all */
	int64_t job_id;             /* 0 = every job */
	const char *const *kinds;   /* NULL/0 = every kind */
	size_t nkinds;
};

/*
 * The next `limit` events with id > after, ALL of them in id order (a
 * caller can see gaps: ids still uncommitted or rolled back), each marked
 * visible when it has a job in `scope` and matches job_id/kinds.
 */
int store_event_scan(PGconn *c, struct mu_arena *a, int64_t after, const struct store_event_filter *f,
		     int limit, struct store_event **out, size_t *n, struct mu_error *err)
	__attribute__((warn_unused_result));

/* The highest event id (0 when none). */
int store_event_max_id(PGconn *c, int64_t *out, struct mu_error *err) __attribute__((warn_unused_result));

/*
 * Every event of the feed of muster-api's GET /v1/events, unfiltered:
 * rows with after < id <= upto in id order (at most `limit`). Filtering
 * by scope is the caller's (it holds rows for many streams at once).
 */
struct store_event_row {
	int64_t id;
	const char *at;          /* RFC 3339 UTC */
	const char *kind;
	int64_t job_id, run_id;  /* 0 = none */
	const char *reason;
	const char *data;        /* JSON object text */
	const char *tenant_path; /* the job's tenant's path, "" = none */
	const char *node;        /* the node's name, "" = none */
};

int store_event_feed(PGconn *c, struct mu_arena *a, int64_t after, int64_t upto, int limit,
		     struct store_event_row **out, size_t *n, struct mu_error *err)
	__attribute__((warn_unused_result));

/* The ids of the next `limit` events with id > after, ascending, gaps and
 * all (the feed's hub settles ids with it while no stream reads them). */
int store_event_ids(PGconn *c, struct mu_arena *a, int64_t after, int limit, int64_t **out,
		    size_t *n, struct mu_error *err) __attribute__((warn_unused_result));

/* The path of tenant `name` when it is visible in `scope` (NULL = all);
 * *out = NULL when there is no such tenant there. *out is in `a`. */
int store_event_tenant_path(PGconn *c, struct mu_arena *a, const char *scope, const char *name,
			    const char **out, struct mu_error *err) __attribute__((warn_unused_result));

#endif
