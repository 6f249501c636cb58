/* sched_metrics.c - see sched_metrics.h. */
#include "sched_metrics.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "alloc.h"
#include "db.h"
#include "fairshare.h"
#include "log.h"
#include "metrics.h"
#include "store_metrics.h"
#include "store_sched_report.h"

static const double cycle_bounds[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
				       0.25, 0.5, 1, 2.5, 5, 10 };

static struct {
	pthread_mutex_t mu;
	struct mu_metrics_hist cycle;
	unsigned long long cycles, full_cycles;
	bool leading;
	int64_t epoch;
} m = { .mu = PTHREAD_MUTEX_INITIALIZER };

static struct mu_metrics_server *server;
static char *url;
static PGconn *conn; /* the metrics thread's */

void sched_metrics_cycle(double cycle_ms, bool full)
{
	pthread_mutex_lock(&m.mu);
	mu_metrics_hist_observe(&m.cycle, cycle_ms / 1000.0);
	m.cycles++;
	if (full)
		m.full_cycles++;
	pthread_mutex_unlock(&m.mu);
}

void sched_metrics_leader(bool leading, int64_t epoch)
{
	pthread_mutex_lock(&m.mu);
	m.leading = leading;
	if (leading)
		m.epoch = epoch;
	pthread_mutex_unlock(&m.mu);
}

/* Fair Tree's level fair share per tenant, as GET /v1/fairshare computes it:
 * shares over usage, both normalised among siblings (+Inf with no usage). */
static int fairshare(PGconn *c, struct mu_buf *b, struct mu_error *err)
{
	struct mu_arena a;
	struct store_sched_fs_tenant *t;
	struct store_sched_fs_user *u;
	struct fairtree_assoc *as;
	size_t nt, nu;
	int ret;

	mu_arena_init(&a, 16384);
	ret = store_sched_fairshare_load(c, &a, &t, &nt, &u, &nu, err);
	if (ret < 0 || !nt)
		goto out;
	if ((ret = plan_fairshare(t, nt, u, nu, &a, &as, err)) < 0)
		goto out;
	mu_metrics_head(b, "muster_fairshare_factor", "gauge",
			"Fair Tree level fair share per tenant: normalised shares over normalised usage (+Inf: no usage).");
	for (size_t i = 0; i < nt; i++) {
		mu_buf_adds(b, "muster_fairshare_factor{tenant=");
		mu_metrics_label(b, t[i].name);
		if (isinf(as[i].level_fs))
			mu_buf_adds(b, "} +Inf\n");
		else
			mu_buf_addf(b, "} %.6g\n", as[i].level_fs);
	}
	mu_metrics_head(b, "muster_fairshare_usage_norm", "gauge",
			"A tenant's decayed usage as a fraction of its siblings'.");
	for (size_t i = 0; i < nt; i++) {
		mu_buf_adds(b, "muster_fairshare_usage_norm{tenant=");
		mu_metrics_label(b, t[i].name);
		mu_buf_addf(b, "} %.6g\n", as[i].usage_norm);
	}
out:
	mu_arena_release(&a);
	return ret < 0 ? ret : 0;
}

static void render(struct mu_buf *b, void *arg)
{
	struct mu_metrics_hist h;
	struct mu_error err = { 0 };
	unsigned long long cycles, full;
	bool leading;
	int64_t epoch;
	int ret;

	(void)arg;
	pthread_mutex_lock(&m.mu);
	h = m.cycle;
	cycles = m.cycles;
	full = m.full_cycles;
	leading = m.leading;
	epoch = m.epoch;
	pthread_mutex_unlock(&m.mu);

	mu_metrics_hist_render(b, "muster_scheduler_cycle_duration_seconds",
			       "Time of one leader cycle, from lease renewal to commit.", &h);
	mu_metrics_head(b, "muster_scheduler_cycles_total", "counter",
			"Cycles this process committed as leader, by kind (full: snapshot and policy core ran).");
	mu_buf_addf(b, "muster_scheduler_cycles_total{kind=\"full\"} %llu\n", full);
	mu_buf_addf(b, "muster_scheduler_cycles_total{kind=\"tick\"} %llu\n", cycles - full);
	mu_metrics_head(b, "muster_scheduler_leader", "gauge", "1 while this process is the leader.");
	mu_buf_addf(b, "muster_scheduler_leader %d\n", leading ? 1 : 0);
	mu_metrics_head(b, "muster_scheduler_epoch", "gauge",
			"The epoch this process last led with (0: never led).");
	mu_buf_addf(b, "muster_scheduler_epoch %lld\n", (long long)epoch);

	if (!conn)
		conn = store_db_connect(url, "muster-scheduler:metrics", &err);
	ret = conn ? store_metrics_scheduler(conn, b, &err) : MU_EUNAVAIL;
	if (!ret)
		ret = fairshare(conn, b, &err);
	if (ret < 0) {
		mu_warn("metrics: cluster figures unavailable: %s", err.msg);
		if (conn && !store_db_ok(conn)) {
			store_db_close(conn);
			conn = NULL;
		}
	}
	mu_metrics_head(b, "muster_scheduler_database_up", "gauge",
			"1 when this scrape could read the cluster figures from the database.");
	mu_buf_addf(b, "muster_scheduler_database_up %d\n", ret < 0 ? 0 : 1);
}

int sched_metrics_start(const char *addr, const char *db_url)
{
	struct mu_error err = { 0 };
	int ret;

	mu_metrics_hist_init(&m.cycle, cycle_bounds, sizeof(cycle_bounds) / sizeof(cycle_bounds[0]));
	if (!addr || !addr[0])
		return 0;
	url = mu_strdup(db_url ? db_url : "");
	ret = mu_metrics_serve(addr, render, NULL, &server, &err);
	if (ret < 0) {
		mu_err("metrics: %s", err.msg);
		return ret;
	}
	mu_info("metrics on http://%s/metrics (port %d)", addr, mu_metrics_port(server));
	return 0;
}

void sched_metrics_stop(void)
{
	mu_metrics_stop(server);
	server = NULL;
	store_db_close(conn);
	conn = NULL;
	mu_free(url);
	url = NULL;
}
