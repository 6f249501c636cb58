/*
 * muster-scheduler: leader election with fencing and the event-driven loop.
 *
 * Every replica connects with application_name muster-scheduler:<host>:<pid>
 * and competes for the leader lock (store_sched.h). A standby polls the lock
 * and the lease; when the lease is older than settings.lease_timeout it
 * terminates the stale leader's session and takes over. The leader runs a
 * cycle on every NOTIFY muster_sched (bursts coalesce: one cycle serves all
 * notifications that arrived before it) and on every tick, and renews the
 * lease at least every second. A leader that cannot renew within the lease
 * timeout by its own clock steps down before writing anything else.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "config.h"
#include "cycle.h"
#include "db.h"
#include "log.h"
#include "migrate.h"
#include "sched_metrics.h"
#include "store_sched.h"

static char *db_url;
static char *log_level;
static long long tick_ms;
static long long poll_ms;
static long long stop_margin_ms;
static bool migrate;
static long long max_cycles;
static long long max_stall_ms;
static long long full_every_ms;
static char *metrics_addr;
static long long rebuild_every_ms;

static const struct mu_opt opts[] = {
	{ "db", "MUSTER_DATABASE_URL", MU_OPT_STR, "", "PostgreSQL URL (libpq URI or key=value)", &db_url },
	{ "tick", "MUSTER_SCHED_TICK", MU_OPT_DURATION, "1s",
	  "cycle at least this often for time-based work (time limits, heartbeats)", &tick_ms },
	{ "full-every", "MUSTER_SCHED_FULL_EVERY", MU_OPT_DURATION, "10s",
	  "a full cycle (snapshot + policy core) at least this often even without events", &full_every_ms },
	{ "rebuild-every", "MUSTER_SCHED_REBUILD_EVERY", MU_OPT_DURATION, "300s",
	  "the policy core rebuilds its kept view of the cluster, and the leader loads its kept"
	  " snapshot whole, at least this often (0: every cycle)",
	  &rebuild_every_ms },
	{ "standby-poll", "MUSTER_SCHED_STANDBY_POLL", MU_OPT_DURATION, "200ms",
	  "how often a standby checks the leader lock and lease", &poll_ms },
	{ "stop-margin", "MUSTER_SCHED_STOP_MARGIN", MU_OPT_DURATION, "5s",
	  "after a stop's grace period, wait this long for agents before ending the run", &stop_margin_ms },
	{ "migrate", "MUSTER_MIGRATE", MU_OPT_BOOL, "true", "apply pending schema migrations at start",
	  &migrate },
	{ "max-stall", "MUSTER_SCHED_MAX_STALL", MU_OPT_DURATION, "30s",
	  "the lease heartbeat stops renewing when the loop shows no progress for this long", &max_stall_ms },
	{ "max-cycles", NULL, MU_OPT_INT, "0", "exit after this many cycles as leader (0 = run forever; benchmarks)",
	  &max_cycles },
	{ "log-level", "MUSTER_LOG_LEVEL", MU_OPT_STR, "info", "debug|info|warn|error", &log_level },
	{ "metrics-addr", "MUSTER_SCHED_METRICS_ADDR", MU_OPT_STR, "",
	  "serve Prometheus metrics on host:port at /metrics (\"\" = off)", &metrics_addr },
};

/* Set by the signal handler and by main, read by the heartbeat thread: an
 * atomic (lock-free, so also safe in a handler), not just sig_atomic_t. */
static atomic_int stopping;

/*
 * The lease heartbeat: a thread with its own session renews the lease every
 * second while this process leads, so a long cycle (seconds at 10k nodes)
 * does not look like a hung leader. It renews only while the loop shows
 * progress (--max-stall), and only while the leader's own session still
 * holds the lock; a stopped process (SIGSTOP, VM pause) stops both threads,
 * so the lease expires and a standby fences it as before.
 */
static struct {
	pthread_mutex_t mu;
	int64_t epoch;
	int pid;         /* the leader session's backend pid; 0 = not leading */
	double progress; /* the loop's last sign of life (monotonic ms) */
	double renewed;  /* the last successful renewal by either thread */
} lease_hb = { .mu = PTHREAD_MUTEX_INITIALIZER };
static char hb_name[240];

static void hb_set(int64_t epoch, int pid, double now)
{
	pthread_mutex_lock(&lease_hb.mu);
	lease_hb.epoch = epoch;
	lease_hb.pid = pid;
	lease_hb.progress = now;
	lease_hb.renewed = now;
	pthread_mutex_unlock(&lease_hb.mu);
}

static void hb_progress(double now, double renewed)
{
	pthread_mutex_lock(&lease_hb.mu);
	lease_hb.progress = now;
	if (renewed > lease_hb.renewed)
		lease_hb.renewed = renewed;
	pthread_mutex_unlock(&lease_hb.mu);
}

static double hb_renewed(void)
{
	pthread_mutex_lock(&lease_hb.mu);
	double r = lease_hb.renewed;
	pthread_mutex_unlock(&lease_hb.mu);
	return r;
}

static void sleep_ms(long ms);

static void *heartbeat(void *arg)
{
	PGconn *c = NULL;
	struct mu_error err = { 0 };
	bool stalled = false;

	(void)arg;
	while (!stopping) {
		int64_t epoch;
		int pid, ret;
		double progress, now;

		sleep_ms(1000);
		pthread_mutex_lock(&lease_hb.mu);
		epoch = lease_hb.epoch;
		pid = lease_hb.pid;
		progress = lease_hb.progress;
		pthread_mutex_unlock(&lease_hb.mu);
		if (!pid)
			continue;
		now = scheduler_now_ms();
		if (now - progress > (double)max_stall_ms) {
			if (!stalled)
				mu_err("leader: epoch=%" PRId64 " loop stalled for %.0f ms; lease no longer renewed",
				       epoch, now - progress);
			stalled = true;
			continue;
		}
		stalled = false;
		if (!c && !(c = store_db_connect(db_url, hb_name, &err)))
			continue;
		ret = store_sched_renew_for(c, epoch, pid, &err);
		if (!ret) {
			pthread_mutex_lock(&lease_hb.mu);
			if (lease_hb.pid == pid && lease_hb.epoch == epoch && now > lease_hb.renewed)
				lease_hb.renewed = now;
			pthread_mutex_unlock(&lease_hb.mu);
		} else if (ret != MU_ENOTLEADER) {
			store_db_close(c);
			c = NULL;
		}
	}
	store_db_close(c);
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/*
 * Standby: returns 0 once this session leads (*epoch set), MU_EUNAVAIL when
 * the session broke, or 1 when asked to stop.
 */
static int standby(PGconn *c, const char *holder, int64_t *epoch)
{
	struct mu_error err = { 0 };
	double mismatch_since = 0;
	int last_seen_pid = -1;

	for (;;) {
		struct store_sched_lease l;
		bool leader = false, done = false;
		int n = 0, ret;

		if (stopping)
			return 1;
		ret = store_sched_try_lead(c, holder, &leader, epoch, &err);
		if (ret)
			goto fail;
		if (leader)
			return 0;
		ret = store_sched_lease_get(c, &l, &err);
		if (ret)
			goto fail;
		if (l.lock_pid != last_seen_pid) {
			mu_info("standby: leader is %s (backend pid %d, epoch %" PRId64 ")",
				l.holder[0] ? l.holder : "?", l.lock_pid, l.epoch);
			last_seen_pid = l.lock_pid;
		}
		/* A lock holder whose lease does not name it is a leader that
		 * has just taken the lock and not yet stamped the lease: give it
		 * a full lease period of our own clock before fencing it too. */
		bool stale = false;
		if (l.lock_pid && l.lock_pid == l.lease_pid) {
			mismatch_since = 0;
			stale = l.age_s > (double)l.lease_timeout;
		} else if (l.lock_pid) {
			if (!mismatch_since)
				mismatch_since = scheduler_now_ms();
			stale = scheduler_now_ms() - mismatch_since > l.lease_timeout * 1000.0;
		} else {
			mismatch_since = 0;
		}
		if (stale) {
			ret = store_sched_terminate(c, l.lock_pid, &done, &err);
			if (ret)
				goto fail;
			if (done)
				mu_warn("standby: fenced stale leader %s (backend pid %d, epoch %" PRId64
					", lease %.1f s old > %d s): session terminated",
					l.holder, l.lock_pid, l.epoch, l.age_s, l.lease_timeout);
			mismatch_since = 0;
			/* The backend exits within milliseconds; retry the lock soon. */
			for (int i = 0; i < 50 && !stopping; i++) {
				ret = store_sched_try_lead(c, holder, &leader, epoch, &err);
				if (ret)
					goto fail;
				if (leader)
					return 0;
				sleep_ms(10);
			}
			continue;
		}
		ret = store_sched_wait(c, (int)poll_ms, &n, NULL);
		if (ret)
			return MU_EUNAVAIL;
		continue;
fail:
		mu_warn("standby: %s", err.msg);
		return store_db_ok(c) ? ret : MU_EUNAVAIL;
	}
}

/* Leader: returns when leadership or the session is lost, or on stop. */
static int lead(PGconn *c, int64_t epoch, const struct scheduler_cycle_opts *co, long long *cycles)
{
	struct mu_error err = { 0 };
	double last_renew = scheduler_now_ms(), last_cycle = 0, last_full = 0;
	int wake = 1; /* a new leader cycles at once: a takeover must not wait */
	int wake_submit = 0;
	double last_time_work = 0;
	int lease_timeout_ms = 3000;
	struct store_sched_lease l;

	if (!store_sched_lease_get(c, &l, &err))
		lease_timeout_ms = l.lease_timeout * 1000;
	hb_set(epoch, store_sched_backend_pid(c), last_renew);
	sched_metrics_leader(true, epoch);
	mu_info("leader: epoch=%" PRId64 " (lease timeout %d ms)", epoch, lease_timeout_ms);
	for (;;) {
		double now = scheduler_now_ms();
		int ret = 0;

		if (stopping)
			return 1;
		hb_progress(now, last_renew);
		if (hb_renewed() > last_renew)
			last_renew = hb_renewed();
		/* Our own clock says the lease may have expired (e.g. we were
		 * stopped): a standby may lead already. Never write again on
		 * this session. */
		if (now - last_renew > lease_timeout_ms) {
			mu_warn("leader: epoch=%" PRId64 " lease not renewed for %.0f ms; stepping down", epoch,
				now - last_renew);
			return MU_ENOTLEADER;
		}
		/* Renew here when the heartbeat thread has not (its session may be
		 * down): a lease is only ever renewed by a real UPDATE. */
		if (now - last_renew >= 1000) {
			ret = store_sched_renew(c, epoch, &err);
			if (!ret)
				last_renew = now;
		}
		if (!ret && (wake || now - last_cycle >= (double)tick_ms)) {
			struct store_sched_stats st;
			struct scheduler_cycle_opts o = *co;
			bool full = false;
			/* Events (NOTIFY) get a full cycle; a tick only does the
			 * time-based work unless it changed something or a full
			 * cycle is due (planned starts, anything written without
			 * a NOTIFY). */
			o.full = wake || now - last_full >= (double)full_every_ms;
			/* Only submits woke us and the time-based work ran within a
			 * tick: go straight to placement (submit latency). */
			o.time_work = !(wake && wake == wake_submit && now - last_time_work < (double)tick_ms);
			if (o.time_work || !o.full)
				last_time_work = now;
			wake = wake_submit = 0;
			last_cycle = now;
			ret = scheduler_cycle_run(c, epoch, &o, &st, &full, &err);
			if (!ret)
				sched_metrics_cycle(st.cycle_ms, full);
			if (!ret && full)
				last_full = now;
			if (!ret)
				(*cycles)++;
			if (!ret && max_cycles && *cycles >= max_cycles)
				return 1;
		}
		if (ret == MU_ENOTLEADER) {
			mu_warn("leader: epoch=%" PRId64 " fenced: %s; stepping down", epoch, err.msg);
			return ret;
		}
		if (ret == MU_EUNAVAIL || !store_db_ok(c)) {
			mu_warn("leader: epoch=%" PRId64 " database session lost (%s); stepping down", epoch,
				err.msg);
			return MU_EUNAVAIL;
		}
		if (ret)
			mu_err("leader: epoch=%" PRId64 " cycle rolled back: %s", epoch, err.msg);

		double next = last_cycle + (double)tick_ms;
		if (last_renew + 1000 < next)
			next = last_renew + 1000;
		if (hb_renewed() > last_renew)
			last_renew = hb_renewed();
		int timeout = (int)(next - scheduler_now_ms());
		if (timeout < 0)
			timeout = 0;
		if (store_sched_wait(c, timeout, &wake, &wake_submit)) {
			/* Typically the session was terminated by a standby that
			 * fenced us while we were stopped. */
			mu_warn("leader: epoch=%" PRId64 " database session lost after %.0f ms without"
				" renewal; stepping down", epoch, scheduler_now_ms() - last_renew);
			return MU_EUNAVAIL;
		}
	}
}

int main(int argc, char **argv)
{
	struct mu_error err = { 0 };
	char host[128] = "localhost", holder[200];
	struct scheduler_cycle_opts co;
	long long cycles = 0;
	int backoff_ms = 100, ret;

	mu_log_set_prog("muster-scheduler");
	if (mu_config_parse(opts, sizeof(opts) / sizeof(opts[0]), argc, argv,
			    "The muster scheduler: one leader among any number of replicas.", &err) < 0)
		return 2;
	if (mu_log_set_level_name(log_level)) {
		fprintf(stderr, "muster-scheduler: bad --log-level %s\n", log_level);
		return 2;
	}
	gethostname(host, sizeof(host) - 1);
	snprintf(holder, sizeof(holder), "muster-scheduler:%s:%d", host, (int)getpid());
	co.stop_margin_s = (int)(stop_margin_ms / 1000);

	snprintf(hb_name, sizeof(hb_name), "%s:lease", holder);
	if (sched_metrics_start(metrics_addr, db_url) < 0)
		return 2;
	pthread_t hb;
	if (pthread_create(&hb, NULL, heartbeat, NULL)) {
		mu_err("cannot start the lease heartbeat thread");
		return 1;
	}

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct scheduler_keep keep; /* the core's view between cycles; a new term rebuilds it */
	scheduler_keep_init(&keep, rebuild_every_ms);
	co.keep = &keep;
	while (!stopping) {
		PGconn *c = store_db_connect(db_url, holder, &err);
		int64_t epoch = 0;

		if (!c) {
			mu_warn("%s; retrying in %d ms", err.msg, backoff_ms);
			sleep_ms(backoff_ms);
			backoff_ms = backoff_ms < 1000 ? backoff_ms * 2 : 1000;
			continue;
		}
		backoff_ms = 100;
		if (migrate && store_migrate(c, &err)) {
			mu_err("migrations: %s", err.msg);
			store_db_close(c);
			if (err.code == MU_ESTATE)
				return 1;
			sleep_ms(1000);
			continue;
		}
		if (store_sched_listen(c, &err)) {
			mu_warn("LISTEN: %s", err.msg);
			store_db_close(c);
			continue;
		}
		mu_info("%s: standing by", holder);
		ret = standby(c, holder, &epoch);
		if (ret == 0) {
			ret = lead(c, epoch, &co, &cycles);
			hb_set(0, 0, 0);
			sched_metrics_leader(false, 0);
		}
		/* Closing the session releases the lock: a standby leads within
		 * its poll interval. After losing leadership we start over as a
		 * standby on a fresh session. */
		store_db_close(c);
		if (ret == 1)
			break;
		sleep_ms(ret == MU_ENOTLEADER ? 200 : 100);
	}
	stopping = 1; /* also after --max-cycles: ends the heartbeat thread */
	pthread_join(hb, NULL);
	sched_metrics_stop();
	mu_info("%s: stopped", holder);
	scheduler_keep_release(&keep);
	mu_config_release(opts, sizeof(opts) / sizeof(opts[0]));
	return 0;
}
