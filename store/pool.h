/*
 * pool.h - a bounded pool of database worker threads, each with its own
 * connection, so that an event loop never waits on PostgreSQL.
 *
 * A submitter fills a struct store_work and hands it over with
 * store_pool_submit; a worker runs it with its connection and then calls
 * `complete(w)` ON THE WORKER THREAD (the submitter's hook: typically it
 * posts a message to the event loop). The work item is the submitter's
 * memory: the pool only links it while queued.
 *
 * Group commit: items whose `kind` is registered with store_pool_group are
 * not run one by one: a worker takes every queued item of that kind (up to
 * the group's weight budget, at least one) and passes them to the group
 * function together, which writes them in one transaction. At most one
 * group of a kind is in flight at a time per pool, so requests arriving
 * while a group commits form the next, larger group.
 *
 * Connections: opened lazily, reopened after a failure (store_db_ok false
 * after a run). When the database cannot be reached, items complete with
 * rc = MU_EUNAVAIL.
 *
 * Threading: store_pool_submit/store_pool_queued are thread-safe.
 */
#ifndef STORE_POOL_H
#define STORE_POOL_H

#include <stddef.h>

#include "db.h"
#include "error.h"

struct store_work;
typedef int (*store_work_fn)(PGconn *c, struct store_work *w);
typedef void (*store_work_done_fn)(struct store_work *w);
/* Runs a group; sets every items[i]->rc. */
typedef void (*store_pool_group_fn)(PGconn *c, struct store_work **items, size_t n);

struct store_work {
	int kind;                   /* 0 = alone (run), else a registered group kind */
	size_t weight;              /* group budget units (e.g. jobs); 0 counts as 1 */
	store_work_fn run;          /* kind 0: returns rc */
	store_work_done_fn complete;/* required; called once, on the worker thread */
	void *arg;                  /* the submitter's */
	int rc;                     /* out: 0 or MU_E* */
	struct mu_error err;        /* out: filled when rc < 0 (by run or the pool) */
	struct store_work *next;    /* pool-private */
};

struct store_pool;

/* New pool of `nworkers` threads connecting to `url`; `max_queue` bounds
 * queued items (0 = 65536). `app` is the application_name. */
struct store_pool *store_pool_new(const char *url, const char *app, int nworkers, size_t max_queue);
/* Registers a group kind (before the first submit). max_weight 0 = 1000. */
void store_pool_group(struct store_pool *p, int kind, store_pool_group_fn fn, size_t max_weight);
/* Queues w. MU_EUNAVAIL (w untouched, complete not called) when the queue is full or the pool stops. */
int store_pool_submit(struct store_pool *p, struct store_work *w) __attribute__((warn_unused_result));
size_t store_pool_queued(struct store_pool *p);
int store_pool_workers(const struct store_pool *p);
/* Stops: queued items complete with MU_EUNAVAIL, workers finish their
 * current item and exit, connections close. NULL is a no-op. */
void store_pool_free(struct store_pool *p);

#endif
