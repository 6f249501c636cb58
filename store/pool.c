/* pool.c - see pool.h. */
#include "pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "alloc.h"
#include "log.h"

#define MAX_KINDS 8

struct group {
	store_pool_group_fn fn;
	size_t max_weight;
	bool busy;
};

struct store_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct store_work *head, *tail;
	size_t queued, max_queue;
	bool stopping;
	struct group groups[MAX_KINDS];
	char *url, *app;
	int nworkers;
	pthread_t *threads;
};

struct worker {
	struct store_pool *pool;
	int index;
};

static bool runnable(const struct store_pool *p, const struct store_work *w)
{
	return w->kind == 0 || !p->groups[w->kind].busy;
}

/* Takes the next runnable item, and for a group every queued item of the
 * same kind within the weight budget. Caller holds the lock. */
static size_t take(struct store_pool *p, struct store_work ***batch, size_t *cap)
{
	struct store_work **pp = &p->head, *prev = NULL, *w;
	size_t n = 0, weight = 0, max_weight = 0;
	int kind = -1;

	while ((w = *pp)) {
		bool pick = false;

		if (kind < 0 && runnable(p, w)) {
			kind = w->kind;
			max_weight = kind ? p->groups[kind].max_weight : 0;
			pick = true;
		} else if (kind > 0 && w->kind == kind &&
			   weight + (w->weight ? w->weight : 1) <= max_weight) {
			pick = true;
		}
		if (!pick) {
			prev = w;
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		if (p->tail == w)
			p->tail = prev;
		w->next = NULL;
		p->queued--;
		*batch = mu_grow(*batch, cap, n + 1, sizeof(**batch));
		(*batch)[n++] = w;
		weight += w->weight ? w->weight : 1;
		if (kind == 0)
			break;
	}
	if (kind > 0)
		p->groups[kind].busy = true;
	return n;
}

static void fail_all(struct store_work **items, size_t n, const struct mu_error *e)
{
	for (size_t i = 0; i < n; i++) {
		items[i]->rc = e->code;
		items[i]->err = *e;
		items[i]->complete(items[i]);
	}
}

/*
 * A connection whose server went away (restart, failover, terminate) still
 * says CONNECTION_OK until libpq next reads from it. Reading what is already
 * there (libpq's socket is non-blocking) turns that into CONNECTION_BAD
 * before a request is spent on it, so the first request after a database
 * restart does not fail with 503 on every worker in turn.
 */
static bool conn_alive(PGconn *c)
{
	PGnotify *n;

	if (!store_db_ok(c))
		return false;
	/* A server that shut down sent a FATAL message and then closed: the
	 * first read takes the message, only a second one sees the EOF. On a
	 * healthy idle connection each read is one recv() that finds nothing. */
	for (int i = 0; i < 2; i++)
		if (!PQconsumeInput(c))
			return false;
	while ((n = PQnotifies(c)))
		PQfreemem(n);
	return store_db_ok(c);
}

static void *worker_main(void *arg)
{
	struct worker *self = arg;
	struct store_pool *p = self->pool;
	struct store_work **batch = NULL;
	size_t cap = 0;
	PGconn *c = NULL;
	char app[96];

	snprintf(app, sizeof(app), "%s-w%d", p->app, self->index);
	for (;;) {
		size_t n;
		int kind;

		pthread_mutex_lock(&p->mu);
		while (!p->stopping && !(n = take(p, &batch, &cap)))
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stopping) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		pthread_mutex_unlock(&p->mu);
		kind = batch[0]->kind;

		if (!conn_alive(c)) {
			struct mu_error e = { 0 };

			store_db_close(c);
			c = store_db_connect(p->url, app, &e);
			if (!c) {
				mu_warn("pool worker=%d database unreachable: %s", self->index, e.msg);
				fail_all(batch, n, &e);
				goto next;
			}
		}
		if (kind == 0) {
			struct store_work *w = batch[0];

			mu_error_clear(&w->err);
			w->rc = w->run(c, w);
			if (w->rc < 0 && !w->err.code)
				mu_error_set(&w->err, w->rc, "", "%s", mu_strerror(w->rc));
			w->complete(w);
		} else {
			p->groups[kind].fn(c, batch, n);
			for (size_t i = 0; i < n; i++)
				batch[i]->complete(batch[i]);
		}
next:
		if (kind > 0) {
			pthread_mutex_lock(&p->mu);
			p->groups[kind].busy = false;
			pthread_cond_broadcast(&p->cv);
			pthread_mutex_unlock(&p->mu);
		}
		if (c && !store_db_ok(c)) {
			store_db_close(c);
			c = NULL;
		}
	}
	store_db_close(c);
	mu_free(batch);
	mu_free(self);
	return NULL;
}

struct store_pool *store_pool_new(const char *url, const char *app, int nworkers, size_t max_queue)
{
	struct store_pool *p = mu_calloc(1, sizeof(*p));

	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->url = mu_strdup(url ? url : "");
	p->app = mu_strdup(app ? app : "muster");
	p->max_queue = max_queue ? max_queue : 65536;
	p->nworkers = nworkers > 0 ? nworkers : 1;
	p->threads = mu_calloc((size_t)p->nworkers, sizeof(*p->threads));
	for (int i = 0; i < p->nworkers; i++) {
		struct worker *w = mu_calloc(1, sizeof(*w));

		w->pool = p;
		w->index = i;
		if (pthread_create(&p->threads[i], NULL, worker_main, w)) {
			mu_err("pool cannot start worker %d", i);
			abort();
		}
	}
	return p;
}

void store_pool_group(struct store_pool *p, int kind, store_pool_group_fn fn, size_t max_weight)
{
	if (kind <= 0 || kind >= MAX_KINDS)
		abort();
	pthread_mutex_lock(&p->mu);
	p->groups[kind].fn = fn;
	p->groups[kind].max_weight = max_weight ? max_weight : 1000;
	pthread_mutex_unlock(&p->mu);
}

int store_pool_submit(struct store_pool *p, struct store_work *w)
{
	int ret = 0;

	pthread_mutex_lock(&p->mu);
	if (p->stopping || p->queued >= p->max_queue ||
	    (w->kind && (w->kind >= MAX_KINDS || !p->groups[w->kind].fn))) {
		ret = MU_EUNAVAIL;
		goto out;
	}
	w->next = NULL;
	if (p->tail)
		p->tail->next = w;
	else
		p->head = w;
	p->tail = w;
	p->queued++;
	pthread_cond_signal(&p->cv);
out:
	pthread_mutex_unlock(&p->mu);
	return ret;
}

size_t store_pool_queued(struct store_pool *p)
{
	size_t n;

	pthread_mutex_lock(&p->mu);
	n = p->queued;
	pthread_mutex_unlock(&p->mu);
	return n;
}

int store_pool_workers(const struct store_pool *p)
{
	return p->nworkers;
}

void store_pool_free(struct store_pool *p)
{
	struct store_work *w;
	struct mu_error e = { 0 };

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	w = p->head;
	p->head = p->tail = NULL;
	p->queued = 0;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	mu_error_set(&e, MU_EUNAVAIL, "", "shutting down");
	while (w) {
		struct store_work *next = w->next;

		w->rc = e.code;
		w->err = e;
		w->complete(w);
		w = next;
	}
	for (int i = 0; i < p->nworkers; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	mu_free(p->threads);
	mu_free(p->url);
	mu_free(p->app);
	mu_free(p);
}
