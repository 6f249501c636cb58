/*
 * rest_events.c - GET /v1/events: every event the caller may see, as
 * server-sent events, resumable by id (see rest_events.h, docs/api.md).
 *
 * The hub thread is the only reader of new events. Event ids are assigned
 * at INSERT and become visible at COMMIT, so a lower id may appear after a
 * higher one: the hub reads in id order and stops at a gap until it is
 * older than GAP_MS (as the gRPC Watch does). What it has read, `settled`,
 * never changes again; the ring holds the settled events (floor, settled].
 * While no stream is open nobody reads the ring, so the hub only settles
 * the new ids by the same rule (hub_settle: their ids, not their rows) and
 * empties the ring: a stream opened later starts at the newest event or
 * replays from the table as one that fell behind the floor does.
 *
 * A stream's `cursor` is the last id it has considered (sent or filtered
 * out). On the loop thread it:
 *   - replays from the table (through the pool, up to `settled` as it was
 *     then) while cursor < floor and it has not been live yet;
 *   - else sends the ring's events after the cursor that it may see;
 *   - else waits (rest_hold) in the hub's waiter list; the hub wakes every
 *     waiter after new events and once a second (heartbeats, and so that
 *     a stream whose client left is freed);
 *   - once live, a cursor below the floor means the client fell more than
 *     `buffer` events behind: a final `overflow` event names the cursor.
 * The check for new events and the entry into the waiter list happen under
 * one lock hold, so a wake-up is never lost; no id is sent twice because
 * the cursor only moves forward and both sources are read after it.
 */
#include "rest_events.h"

#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "rest_server.h"
#include "store_event.h"
#include "store_job.h"
#include "store_listen.h"

#define GAP_MS 2000
#define FEED_BATCH 1000
#define SETTLE_BATCH 10000
#define REPLAY_BATCH 1000
#define CHUNK_BYTES (256 * 1024)
#define SAFETY_POLL_MS 5000 /* one table check even without a NOTIFY */
#define MAX_KINDS 32
#define SNDBUF_BYTES (64 * 1024) /* the kernel doubles it: ~128 KiB may sit there */

struct slot {
	int64_t id, job_id;
	char *kind;
	char *tenant_path; /* "" = none */
	char *frame;       /* "id: ..\nevent: ..\ndata: ..\n\n" */
	size_t len;
};

struct stream {
	struct rest_req *rq;
	int64_t cursor;
	int64_t token_id;
	const char *scope;       /* NULL = all */
	bool admin;
	int64_t job_id;          /* 0 = all */
	const char **kinds;
	size_t nkinds;
	const char *tenant_name; /* filter, NULL = none */
	const char *tenant_path; /* its resolved path; NULL with a name = matches nothing */
	bool live;
	bool counted;
	double last_write;
	int64_t replay_upto;
	struct store_event_row *rows;
	size_t nrows;
	struct mu_arena ra;      /* replay rows, reset per batch */
	bool ra_init;
	struct mu_buf out;
	struct stream *next;     /* the waiter list */
};

static struct {
	struct rest_events_config cfg;
	pthread_mutex_t mu;
	struct slot *ring;       /* cfg.buffer slots */
	size_t head, count;      /* oldest at head */
	int64_t floor, settled;
	struct stream *waiters;
	pthread_t thread;
	int wake;
	atomic_bool stop;
	bool running;

	atomic_int open;         /* streams counted: changed on the loop thread only */

	/* loop thread only */
	struct tok_count { int64_t token_id; int n; } *per_token;
	size_t ntok, captok;
} E = { .mu = PTHREAD_MUTEX_INITIALIZER, .wake = -1 };

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- frames --------------------------------------------------------------- */

/* SSE fields end at a line break: kinds are identifiers, but be sure. */
static void add_field(struct mu_buf *b, const char *s)
{
	for (; *s; s++)
		mu_buf_addc(b, *s == '\n' || *s == '\r' ? '_' : *s);
}

static void render(struct mu_buf *b, const struct store_event_row *e)
{
	mu_buf_addf(b, "id: %" PRId64 "\nevent: ", e->id);
	add_field(b, e->kind);
	mu_buf_addf(b, "\ndata: {\"id\":%" PRId64 ",\"at\":", e->id);
	mu_buf_add_json_strz(b, e->at);
	mu_buf_adds(b, ",\"kind\":");
	mu_buf_add_json_strz(b, e->kind);
	mu_buf_adds(b, ",\"reason\":");
	mu_buf_add_json_strz(b, e->reason);
	mu_buf_adds(b, ",\"data\":");
	mu_buf_adds(b, e->data[0] ? e->data : "{}");
	if (e->job_id) {
		mu_buf_addf(b, ",\"job_id\":%" PRId64, e->job_id);
		if (e->run_id)
			mu_buf_addf(b, ",\"run_id\":%" PRId64, e->run_id);
	}
	if (e->node[0]) {
		mu_buf_adds(b, ",\"node\":");
		mu_buf_add_json_strz(b, e->node);
	}
	mu_buf_adds(b, "}\n\n");
}

/* The one visibility rule, for ring and replay alike: job events in the
 * caller's scope (as the job routes), other events to admins only. */
static bool wanted(const struct stream *st, int64_t job_id, const char *kind, const char *tpath)
{
	if (job_id) {
		if (st->scope && !ops_path_within(st->scope, tpath))
			return false;
	} else if (!st->admin) {
		return false;
	}
	if (st->job_id && job_id != st->job_id)
		return false;
	if (st->tenant_name && (!st->tenant_path || !ops_path_within(st->tenant_path, tpath)))
		return false;
	if (st->nkinds) {
		size_t i = 0;

		while (i < st->nkinds && strcmp(st->kinds[i], kind))
			i++;
		if (i == st->nkinds)
			return false;
	}
	return true;
}

/* ---- the hub ------------------------------------------------------------- */

static void wake_hub(void)
{
	uint64_t one = 1;

	if (E.wake >= 0 && write(E.wake, &one, sizeof(one)) < 0)
		mu_debug("events hub wake failed");
}

static void slot_clear(struct slot *s)
{
	mu_free(s->kind);
	mu_free(s->tenant_path);
	mu_free(s->frame);
	memset(s, 0, sizeof(*s));
}

/* Caller holds E.mu. */
static void ring_push(struct slot *s)
{
	size_t cap = E.cfg.buffer;

	if (E.count == cap) {
		struct slot *old = &E.ring[E.head];

		E.floor = old->id;
		slot_clear(old);
		E.head = (E.head + 1) % cap;
		E.count--;
	}
	E.ring[(E.head + E.count) % cap] = *s;
	E.count++;
	E.settled = s->id;
}

/* Wakes every waiting stream (they leave the list). Caller holds E.mu. */
static void wake_all_locked(int rc)
{
	struct stream *w = E.waiters;

	E.waiters = NULL;
	while (w) {
		struct stream *next = w->next;

		w->next = NULL;
		rest_wake(w->rq, rc);
		w = next;
	}
}

/* Whether id, read after `cur`, continues the settled ids: the next one,
 * or past a gap older than GAP_MS (a rolled-back transaction burns ids
 * forever; a slow one fills the gap). */
static bool settles(int64_t id, int64_t cur, int64_t *gap_at, double *gap_since)
{
	if (id != cur + 1) {
		double t = mono_s();

		if (*gap_since == 0 || *gap_at != cur) {
			*gap_at = cur;
			*gap_since = t;
		}
		if ((t - *gap_since) * 1000 < GAP_MS)
			return false;
	}
	*gap_since = 0;
	return true;
}

/*
 * With no stream open: settles the new ids without reading their rows and
 * empties the ring (see the top). Returns 1 when it settled all there was,
 * 0 when a stream opened meanwhile (the caller reads the rows instead: the
 * check is under the lock that start_done takes to read `settled`), <0 on
 * error.
 */
static int hub_settle(PGconn *db, struct mu_arena *a, int64_t *gap_at, double *gap_since)
{
	struct mu_error err = { 0 };

	for (;;) {
		int64_t *ids, cur;
		size_t n, i;

		pthread_mutex_lock(&E.mu);
		cur = E.settled;
		pthread_mutex_unlock(&E.mu);
		mu_arena_reset(a);
		if (store_event_ids(db, a, cur, SETTLE_BATCH, &ids, &n, &err) < 0) {
			mu_warn("events hub query failed: %s", err.msg);
			return MU_EUNAVAIL;
		}
		for (i = 0; i < n && settles(ids[i], cur, gap_at, gap_since); i++)
			cur = ids[i];
		pthread_mutex_lock(&E.mu);
		if (atomic_load(&E.open)) {
			pthread_mutex_unlock(&E.mu);
			return 0;
		}
		if (cur > E.settled) {
			for (size_t k = 0; k < E.count; k++)
				slot_clear(&E.ring[(E.head + k) % E.cfg.buffer]);
			E.head = E.count = 0;
			E.floor = E.settled = cur;
		}
		pthread_mutex_unlock(&E.mu);
		if (i < n || n < SETTLE_BATCH)
			return 1;
	}
}

/* Reads what is new; returns how many events were published, <0 on error. */
static int hub_scan(PGconn *db, struct mu_arena *a, int64_t *gap_at, double *gap_since)
{
	struct mu_error err = { 0 };
	int published = 0;
	size_t batch = E.cfg.buffer < FEED_BATCH ? E.cfg.buffer : FEED_BATCH;

	if (!atomic_load(&E.open)) {
		int ret = hub_settle(db, a, gap_at, gap_since);

		if (ret != 0)
			return ret < 0 ? ret : 0;
	}
	for (;;) {
		struct store_event_row *rows;
		size_t n, i;
		int64_t cur;

		pthread_mutex_lock(&E.mu);
		cur = E.settled;
		pthread_mutex_unlock(&E.mu);
		mu_arena_reset(a);
		if (store_event_feed(db, a, cur, INT64_MAX, (int)batch, &rows, &n, &err) < 0) {
			mu_warn("events hub query failed: %s", err.msg);
			return MU_EUNAVAIL;
		}
		for (i = 0; i < n; i++) {
			const struct store_event_row *e = &rows[i];
			struct mu_buf b = MU_BUF_INIT;
			struct slot s;

			if (!settles(e->id, cur, gap_at, gap_since))
				break;
			render(&b, e);
			s.id = e->id;
			s.job_id = e->job_id;
			s.kind = mu_strdup(e->kind);
			s.tenant_path = mu_strdup(e->tenant_path);
			s.len = b.len;
			s.frame = mu_buf_detach(&b);
			pthread_mutex_lock(&E.mu);
			ring_push(&s);
			pthread_mutex_unlock(&E.mu);
			cur = e->id;
			published++;
		}
		if (i < n || n < batch)
			break;
		/* a full batch: let the streams take it before the next one */
		pthread_mutex_lock(&E.mu);
		wake_all_locked(0);
		pthread_mutex_unlock(&E.mu);
	}
	return published;
}

static void *hub_main(void *arg)
{
	PGconn *db = NULL;
	struct mu_arena a;
	double next_connect = 0, last_scan = 0, last_tick = 0;
	int64_t gap_at = 0;
	double gap_since = 0;
	bool scan = true;

	(void)arg;
	mu_arena_init(&a, 0);
	while (!atomic_load(&E.stop)) {
		struct pollfd pf[2] = { { .fd = E.wake, .events = POLLIN }, { .fd = -1 } };
		uint64_t v;
		double now;
		int got = 0;

		if (!db && mono_s() >= next_connect) {
			struct mu_error err = { 0 };

			db = store_db_connect(E.cfg.db_url, "muster-api:events", &err);
			if (db && store_listen(db, (const char *const[]){ "muster_events" }, 1, &err) < 0) {
				store_db_close(db);
				db = NULL;
			}
			if (!db) {
				mu_warn("events hub db: %s", err.msg);
				next_connect = mono_s() + 1;
			}
			scan = true; /* what came while we were away */
		}
		if (db)
			pf[1] = (struct pollfd){ .fd = store_listen_fd(db), .events = POLLIN };
		poll(pf, 2, gap_since ? 100 : 250);
		if (pf[0].revents & POLLIN && read(E.wake, &v, sizeof(v)) < 0)
			mu_debug("events hub wake read failed");
		if (atomic_load(&E.stop))
			break;
		if (db && (pf[1].revents & POLLIN)) {
			if (store_listen_drain(db, NULL, NULL) < 0 || !store_db_ok(db)) {
				store_db_close(db);
				db = NULL;
				continue;
			}
			scan = true;
		}
		now = mono_s();
		if (db && (scan || gap_since || (now - last_scan) * 1000 >= SAFETY_POLL_MS)) {
			got = hub_scan(db, &a, &gap_at, &gap_since);
			last_scan = now;
			scan = false;
			if (got < 0 && !store_db_ok(db)) {
				store_db_close(db);
				db = NULL;
			}
		}
		if (got > 0 || now - last_tick >= 1.0) {
			pthread_mutex_lock(&E.mu);
			wake_all_locked(0);
			pthread_mutex_unlock(&E.mu);
			last_tick = now;
		}
	}
	store_db_close(db);
	mu_arena_release(&a);
	return NULL;
}

int rest_events_start(const struct rest_events_config *cfg)
{
	struct mu_error err = { 0 };
	PGconn *db;
	int64_t max = 0;
	int ret;

	E.cfg = *cfg;
	if (E.cfg.buffer < 16)
		E.cfg.buffer = 16;
	E.ring = mu_calloc(E.cfg.buffer, sizeof(*E.ring));
	/* a stream without a cursor starts at the newest event */
	db = store_db_connect(cfg->db_url, "muster-api:events", &err);
	if (!db) {
		mu_err("events db: %s", err.msg);
		return MU_EIO;
	}
	ret = store_event_max_id(db, &max, &err);
	store_db_close(db);
	if (ret < 0) {
		mu_err("events db: %s", err.msg);
		return MU_EIO;
	}
	E.floor = E.settled = max;
	E.wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (E.wake < 0)
		return MU_EIO;
	atomic_store(&E.stop, false);
	pthread_create(&E.thread, NULL, hub_main, NULL);
	E.running = true;
	return 0;
}

void rest_events_stop(void)
{
	if (!E.running)
		return;
	atomic_store(&E.stop, true);
	wake_hub();
	pthread_join(E.thread, NULL);
	E.running = false;
	close(E.wake);
	E.wake = -1;
	/* streams still listed stay reachable from E.waiters: the loop is gone */
	for (size_t i = 0; i < E.count; i++)
		slot_clear(&E.ring[(E.head + i) % E.cfg.buffer]);
	mu_free(E.ring);
	E.ring = NULL;
	E.count = 0;
}

/* ---- caps (loop thread) --------------------------------------------------- */

static struct tok_count *tok_find(int64_t token_id, bool add)
{
	for (size_t i = 0; i < E.ntok; i++)
		if (E.per_token[i].token_id == token_id)
			return &E.per_token[i];
	if (!add)
		return NULL;
	E.per_token = mu_grow(E.per_token, &E.captok, E.ntok + 1, sizeof(*E.per_token));
	E.per_token[E.ntok] = (struct tok_count){ token_id, 0 };
	return &E.per_token[E.ntok++];
}

static void uncount(struct stream *st)
{
	struct tok_count *t;

	if (!st->counted)
		return;
	st->counted = false;
	atomic_fetch_sub(&E.open, 1);
	t = tok_find(st->token_id, false);
	if (t && --t->n == 0)
		*t = E.per_token[--E.ntok];
}

/* The request's context is being freed: whatever state it ended in. */
static void stream_free(void *arg)
{
	struct stream *st = arg;

	uncount(st);
	mu_buf_release(&st->out);
	if (st->ra_init)
		mu_arena_release(&st->ra);
}

/* ---- one stream (loop thread) --------------------------------------------- */

static void pump(struct rest_req *rq, void *arg);

static void send_out(struct stream *st, bool final)
{
	st->last_write = mono_s();
	rest_stream_send(st->rq, st->out.p, st->out.len, final, false, pump, st);
	mu_buf_reset(&st->out);
}

static void woke(struct rest_req *rq, void *arg, int rc)
{
	struct stream *st = arg;
	bool idle;

	if (rq->gone)
		return;
	if (rc < 0) {
		mu_buf_adds(&st->out, ": server shutting down\n\n");
		send_out(st, true);
		return;
	}
	pthread_mutex_lock(&E.mu);
	idle = E.settled <= st->cursor;
	pthread_mutex_unlock(&E.mu);
	if (idle && mono_s() - st->last_write >= E.cfg.heartbeat_s) {
		mu_buf_adds(&st->out, ": heartbeat\n\n");
		send_out(st, false);
		return;
	}
	pump(rq, st);
}

static int replay_run(PGconn *db, struct rest_req *rq, void *arg)
{
	struct stream *st = arg;

	(void)rq;
	mu_arena_reset(&st->ra);
	return store_event_feed(db, &st->ra, st->cursor, st->replay_upto, REPLAY_BATCH, &st->rows,
				&st->nrows, &rq->err);
}

static void replay_done(struct rest_req *rq, void *arg, int rc)
{
	struct stream *st = arg;

	if (rq->gone)
		return;
	if (rc < 0) {
		/* the client resumes from the last id it got */
		mu_warn("events stream replay failed: %s", rq->err.msg);
		rest_stream_send(rq, NULL, 0, false, true, NULL, NULL);
		return;
	}
	for (size_t i = 0; i < st->nrows; i++) {
		const struct store_event_row *e = &st->rows[i];

		if (wanted(st, e->job_id, e->kind, e->tenant_path))
			render(&st->out, e);
	}
	st->cursor = st->nrows == REPLAY_BATCH ? st->rows[st->nrows - 1].id : st->replay_upto;
	mu_arena_reset(&st->ra);
	st->rows = NULL;
	st->nrows = 0;
	if (st->out.len)
		send_out(st, false);
	else
		pump(rq, st);
}

/* Sends what is next, or waits for it. Runs after each piece is on its way. */
static void pump(struct rest_req *rq, void *arg)
{
	struct stream *st = arg;

	pthread_mutex_lock(&E.mu);
	if (st->cursor < E.floor) {
		int64_t upto = E.settled;

		pthread_mutex_unlock(&E.mu);
		if (st->live) {
			mu_info("token=%" PRId64 " events stream overflows at id=%" PRId64, st->token_id,
				st->cursor);
			mu_buf_addf(&st->out, "id: %" PRId64 "\nevent: overflow\ndata: {\"last_id\":%" PRId64
				    ",\"buffer\":%zu}\n\n", st->cursor, st->cursor, E.cfg.buffer);
			send_out(st, true);
			return;
		}
		st->replay_upto = upto;
		rest_defer(rq, replay_run, replay_done, st);
		return;
	}
	st->live = true;
	if (E.settled > st->cursor) {
		size_t cap = E.cfg.buffer, i = 0;

		/* the first slot after the cursor: ids in the ring ascend */
		while (i < E.count && E.ring[(E.head + i) % cap].id <= st->cursor)
			i++;
		for (; i < E.count && st->out.len < CHUNK_BYTES; i++) {
			const struct slot *s = &E.ring[(E.head + i) % cap];

			if (wanted(st, s->job_id, s->kind, s->tenant_path))
				mu_buf_add(&st->out, s->frame, s->len);
			st->cursor = s->id;
		}
		pthread_mutex_unlock(&E.mu);
		if (st->out.len)
			send_out(st, false);
		else
			pump(rq, st); /* all filtered out: look again */
		return;
	}
	/* nothing new: wait, listed under the same lock hold as the check */
	rest_hold(rq, woke, st);
	st->next = E.waiters;
	E.waiters = st;
	pthread_mutex_unlock(&E.mu);
}

/* ---- the handler ------------------------------------------------------------ */

static int start_run(PGconn *db, struct rest_req *rq, void *arg)
{
	struct stream *st = arg;
	struct store_job job;
	int ret;

	if (st->job_id) {
		ret = store_job_get(db, rq->arena, st->scope, st->job_id, &job, &rq->err);
		if (ret < 0)
			return ret;
	}
	if (st->tenant_name) {
		ret = store_event_tenant_path(db, rq->arena, st->scope, st->tenant_name,
					      &st->tenant_path, &rq->err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static void start_done(struct rest_req *rq, void *arg, int rc)
{
	struct stream *st = arg;

	if (rc < 0 || rq->gone)
		return; /* the framework answers with rq->err; stream_free uncounts */
	if (st->cursor < 0) {
		pthread_mutex_lock(&E.mu);
		st->cursor = E.settled;
		pthread_mutex_unlock(&E.mu);
	}
	rest_add_header(rq, "cache-control", "no-store");
	rest_add_header(rq, "x-accel-buffering", "no");
	rest_stream_begin(rq, 200, "text/event-stream");
	rest_stream_sndbuf(rq, SNDBUF_BYTES);
	/* a comment at once, so that the client knows the stream is open */
	mu_buf_adds(&st->out, ": muster events\nretry: 2000\n\n");
	send_out(st, false);
}

static bool kind_ok(const char *s, size_t n)
{
	if (!n || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		      s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

static int too_many(struct rest_req *rq, const char *what)
{
	struct mu_error e = { 0 };
	struct mu_buf b = MU_BUF_INIT;

	mu_error_set(&e, MU_EQUOTA, "", "too many open event streams (%s); retry later", what);
	rest_problem_render(&e, MU_EQUOTA, &b);
	rest_add_header(rq, "retry-after", "5");
	rest_result_buf(rq, 429, "application/problem+json", &b);
	return 0;
}

int rest_events(struct rest_req *rq)
{
	static const char *const allowed[] = { "after", "job", "kinds", "tenant", NULL };
	struct stream *st;
	const char *after = rest_header(rq, "last-event-id"), *s;
	struct tok_count *t;
	int ret;

	ret = rest_query_check(rq, allowed);
	if (ret < 0)
		return ret;
	st = mu_arena_alloc(rq->arena, sizeof(*st));
	memset(st, 0, sizeof(*st));
	st->rq = rq;
	st->cursor = -1;
	st->token_id = rq->who.token_id;
	st->scope = rest_scope_path(rq);
	st->admin = rq->who.role == OPS_ROLE_ADMIN;
	if (after) {
		while (*after == ' ')
			after++;
		if (!rest_parse_int(after, 0, INT64_MAX, &st->cursor))
			return mu_error_set(&rq->err, MU_EINVAL, "Last-Event-ID",
					    "must be an event id (an integer >= 0)");
	} else if ((s = rest_query(rq, "after"))) {
		if (!rest_parse_int(s, 0, INT64_MAX, &st->cursor))
			return mu_error_set(&rq->err, MU_EINVAL, "after", "must be an integer >= 0");
	}
	if ((s = rest_query(rq, "job")) && !rest_parse_int(s, 1, INT64_MAX, &st->job_id))
		return mu_error_set(&rq->err, MU_EINVAL, "job", "must be a job id");
	if ((s = rest_query(rq, "kinds"))) {
		st->kinds = mu_arena_alloc(rq->arena, sizeof(*st->kinds) * MAX_KINDS);
		for (;;) {
			const char *comma = strchr(s, ',');
			size_t n = comma ? (size_t)(comma - s) : strlen(s);
			char *k;

			if (!kind_ok(s, n))
				return mu_error_set(&rq->err, MU_EINVAL, "kinds",
						    "a comma list of event kinds ([a-z0-9._-], 1..64 each)");
			if (st->nkinds == MAX_KINDS)
				return mu_error_set(&rq->err, MU_EINVAL, "kinds", "at most %d kinds",
						    MAX_KINDS);
			k = mu_arena_alloc(rq->arena, n + 1);
			memcpy(k, s, n);
			k[n] = '\0';
			st->kinds[st->nkinds++] = k;
			if (!comma)
				break;
			s = comma + 1;
		}
	}
	if ((s = rest_query(rq, "tenant"))) {
		if (!*s || strlen(s) > 128)
			return mu_error_set(&rq->err, MU_EINVAL, "tenant", "must be a tenant name");
		st->tenant_name = s;
	}
	if (atomic_load(&E.open) >= E.cfg.max_streams)
		return too_many(rq, "server");
	t = tok_find(st->token_id, true);
	if (t->n >= E.cfg.max_per_token) {
		if (!t->n)
			*t = E.per_token[--E.ntok];
		return too_many(rq, "this token");
	}
	t->n++;
	atomic_fetch_add(&E.open, 1);
	st->counted = true;
	mu_arena_init(&st->ra, 0);
	st->ra_init = true;
	rest_on_free(rq, stream_free, st);
	return rest_defer(rq, start_run, start_done, st);
}
