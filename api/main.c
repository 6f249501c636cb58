/*
 * main.c - muster-api: configuration, migrations, the bootstrap admin
 * token, the database pool, then the REST server until SIGINT/SIGTERM.
 */
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_grpc.h"
#include "api_tls.h"
#include "config.h"
#include "db.h"
#include "log.h"
#include "migrate.h"
#include "pool.h"
#include "rest_cors.h"
#include "rest_events.h"
#include "rest_jobs.h"
#include "rest_server.h"
#include "rest_ui.h"
#include "store_auth.h"

static char *db_url, *http_addr, *grpc_addr, *admin_token, *log_level;
static char *tls_cert, *tls_key, *tls_client_ca;
static long long max_body, max_batch_body, db_pool, max_queue;
static long long max_conns, max_conns_per_addr, auth_fail_burst, auth_fail_rate;
static bool no_migrate;
static char *ui_dir, *cors_origins;
static long long events_buffer, sse_max, sse_max_token, sse_heartbeat;

static const struct mu_opt opts[] = {
	{ "db", "MUSTER_DATABASE_URL", MU_OPT_STR, "", "PostgreSQL URL (libpq URI or key=value)", &db_url },
	{ "http-addr", "MUSTER_HTTP_ADDR", MU_OPT_STR, "127.0.0.1:8080", "REST listen address host:port", &http_addr },
	{ "grpc-addr", "MUSTER_GRPC_ADDR", MU_OPT_STR, "127.0.0.1:9090", "gRPC listen address host:port (\"off\" = no gRPC)", &grpc_addr },
	{ "admin-token", "MUSTER_ADMIN_TOKEN", MU_OPT_STR, "", "secret made a live admin token named bootstrap-admin at start", &admin_token },
	{ "max-body", "MUSTER_MAX_BODY", MU_OPT_SIZE, "1m", "largest request body (413 above)", &max_body },
	{ "max-batch-body", "MUSTER_MAX_BATCH_BODY", MU_OPT_SIZE, "64m", "largest body of POST /v1/jobs/batch", &max_batch_body },
	{ "db-pool", "MUSTER_DB_POOL", MU_OPT_INT, "4", "database worker threads (one connection each)", &db_pool },
	{ "db-queue", "MUSTER_DB_QUEUE", MU_OPT_INT, "65536", "queued database work items before 503", &max_queue },
	{ "no-migrate", "MUSTER_NO_MIGRATE", MU_OPT_BOOL, "false", "do not apply migrations at start", &no_migrate },
	{ "max-conns", "MUSTER_MAX_CONNS", MU_OPT_INT, "4096", "open REST connections, all clients (503 above)", &max_conns },
	{ "max-conns-per-addr", "MUSTER_MAX_CONNS_PER_ADDR", MU_OPT_INT, "256", "open REST connections per client address, IPv6 per /64 (503 above)", &max_conns_per_addr },
	{ "auth-fail-burst", "MUSTER_AUTH_FAIL_BURST", MU_OPT_INT, "50", "failed logins an address may make at once before 429", &auth_fail_burst },
	{ "auth-fail-rate", "MUSTER_AUTH_FAIL_RATE", MU_OPT_INT, "5", "failed logins per second an address regains after the burst", &auth_fail_rate },
	{ "log-level", "MUSTER_LOG_LEVEL", MU_OPT_STR, "info", "debug|info|warn|error", &log_level },
	{ "ui-dir", "MUSTER_UI_DIR", MU_OPT_STR, MUSTER_UI_DIR_DEFAULT, "the web portal's built files, served at /ui/", &ui_dir },
	{ "cors-origins", "MUSTER_CORS_ORIGINS", MU_OPT_STR, "", "origins allowed to call the API from a browser (comma list; empty = same origin only)", &cors_origins },
	{ "events-buffer", "MUSTER_EVENTS_BUFFER", MU_OPT_INT, "10000", "events kept for live /v1/events streams (a stream further behind gets overflow)", &events_buffer },
	{ "sse-max-streams", "MUSTER_SSE_MAX_STREAMS", MU_OPT_INT, "1000", "open /v1/events streams in all (429 above)", &sse_max },
	{ "sse-max-per-token", "MUSTER_SSE_MAX_PER_TOKEN", MU_OPT_INT, "8", "open /v1/events streams per token (429 above)", &sse_max_token },
	{ "sse-heartbeat", "MUSTER_SSE_HEARTBEAT", MU_OPT_INT, "15", "seconds of silence before a /v1/events heartbeat comment", &sse_heartbeat },
	{ "tls-cert", "MUSTER_TLS_CERT", MU_OPT_STR, "", "PEM certificate chain: REST and gRPC serve TLS only (re-read on SIGHUP)", &tls_cert },
	{ "tls-key", "MUSTER_TLS_KEY", MU_OPT_STR, "", "PEM private key of --tls-cert (mode 0600)", &tls_key },
	{ "tls-client-ca", "MUSTER_TLS_CLIENT_CA", MU_OPT_STR, "", "CA of agents' client certificates: AgentService then needs one naming the node", &tls_client_ca },
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static int startup_db(void)
{
	struct mu_error err = { 0 };
	PGconn *c = store_db_connect(db_url, "muster-api", &err);
	int ret;

	if (!c) {
		mu_err("db %s", err.msg);
		return MU_EUNAVAIL;
	}
	if (!no_migrate) {
		ret = store_migrate(c, &err);
		if (ret < 0) {
			mu_err("db migrations failed: %s", err.msg);
			goto out;
		}
	}
	ret = 0;
	if (admin_token[0]) {
		ret = store_auth_upsert_admin(c, "bootstrap-admin", admin_token, &err);
		if (ret < 0)
			mu_err("token=bootstrap-admin cannot be stored: %s", err.msg);
		else
			mu_info("token=bootstrap-admin admin token from MUSTER_ADMIN_TOKEN is live");
	}
out:
	store_db_close(c);
	return ret;
}

int main(int argc, char **argv)
{
	struct mu_error err = { 0 };
	struct rest_config cfg = { 0 };
	struct api_grpc_config gcfg = { 0 };
	struct rest_events_config ecfg = { 0 };
	struct store_pool *pool;
	int ret;

	/* Batches move multi-megabyte bodies and replies: keep such buffers in
	 * the heap rather than mmap/munmap (and page-fault) them per request. */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	/* ... in one heap: a batch is decoded on a pool worker, whose own arena
	 * would be unmapped and faulted in again per batch (~15% of its CPU). */
	mallopt(M_ARENA_MAX, 1);
	mu_log_set_prog("muster-api");
	ret = mu_config_parse(opts, NOPTS, argc, argv,
			      "muster-api: the REST (and later gRPC) front of muster", &err);
	if (ret < 0)
		return 2;
	if (mu_log_set_level_name(log_level) < 0) {
		fprintf(stderr, "muster-api: --log-level: expected debug|info|warn|error\n");
		return 2;
	}
	if (db_pool < 1 || db_pool > 256 || max_body < 1 || max_batch_body < 1) {
		fprintf(stderr, "muster-api: --db-pool must be 1..256 and body limits positive\n");
		return 2;
	}
	if (events_buffer < 16 || events_buffer > 10000000 || sse_max < 1 || sse_max_token < 1 ||
	    sse_heartbeat < 1 || sse_heartbeat > 3600) {
		fprintf(stderr, "muster-api: --events-buffer must be 16..10000000, --sse-max-* >= 1, "
				"--sse-heartbeat 1..3600\n");
		return 2;
	}
	if (rest_cors_init(cors_origins) < 0)
		return 2;
	{
		struct api_tls_config tcfg = { tls_cert, tls_key, tls_client_ca };

		if (api_tls_init(&tcfg, &err) < 0) {
			fprintf(stderr, "muster-api: --%s: %s\n", err.field, err.msg);
			ret = 2;
			goto out;
		}
	}
	if (max_conns < 1 || max_conns_per_addr < 1 || auth_fail_burst < 1 || auth_fail_rate < 1) {
		fprintf(stderr, "muster-api: --max-conns, --max-conns-per-addr, --auth-fail-burst and --auth-fail-rate must be >= 1\n");
		return 2;
	}
	if (startup_db() < 0) {
		ret = 1;
		goto out;
	}
	pool = store_pool_new(db_url, "muster-api", (int)db_pool, (size_t)max_queue);
	rest_jobs_init(pool);
	cfg.http_addr = http_addr;
	cfg.max_body = (size_t)max_body;
	cfg.max_batch_body = (size_t)max_batch_body;
	cfg.pool = pool;
	cfg.db_url = db_url;
	cfg.max_conns = max_conns;
	cfg.max_conns_per_addr = max_conns_per_addr;
	cfg.auth_fail_burst = auth_fail_burst;
	cfg.auth_fail_rate = auth_fail_rate;
	gcfg.addr = grpc_addr;
	gcfg.pool = pool;
	gcfg.db_url = db_url;
	ecfg.db_url = db_url;
	ecfg.buffer = (size_t)events_buffer;
	ecfg.max_streams = (int)sse_max;
	ecfg.max_per_token = (int)sse_max_token;
	ecfg.heartbeat_s = (int)sse_heartbeat;
	rest_ui_load(ui_dir);
	if (api_grpc_start(&gcfg) < 0 || rest_events_start(&ecfg) < 0)
		ret = 1;
	else
		ret = rest_server_run(&cfg) < 0 ? 1 : 0;
	rest_events_stop();
	api_grpc_stop();
	store_pool_free(pool);
out:
	api_tls_release();
	mu_config_release(opts, NOPTS);
	return ret;
}
