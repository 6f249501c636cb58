/* rest_metrics.c - see rest_metrics.h. */
#include "rest_metrics.h"

#include <stdatomic.h>

static _Atomic unsigned long long submits[2][2]; /* [api][batch] */
static _Atomic unsigned long long batch_jobs[2];
static _Atomic long long streams[3];
static _Atomic unsigned long long grpc_auth_failures, grpc_lookups;

void rest_metrics_grpc_token_lookup(void)
{
	atomic_fetch_add(&grpc_lookups, 1);
}

void rest_metrics_grpc_auth_failed(void)
{
	atomic_fetch_add(&grpc_auth_failures, 1);
}

void rest_metrics_submitted(enum rest_metrics_api api, bool batch, size_t jobs)
{
	atomic_fetch_add(&submits[api & 1][batch], 1);
	if (batch)
		atomic_fetch_add(&batch_jobs[api & 1], jobs);
}

void rest_metrics_event_streams_add(enum rest_metrics_stream kind, int delta)
{
	if ((unsigned)kind < 3)
		atomic_fetch_add(&streams[kind], delta);
}

void rest_metrics_api_render(struct mu_buf *b)
{
	static const char *const apis[] = { "rest", "grpc" };
	static const char *const kinds[] = { "sse", "watch", "logs" };

	mu_buf_adds(b, "# HELP muster_api_submits_total Accepted submit requests (replays excluded), by API and kind.\n"
		       "# TYPE muster_api_submits_total counter\n");
	for (int a = 0; a < 2; a++)
		for (int k = 0; k < 2; k++)
			mu_buf_addf(b, "muster_api_submits_total{api=\"%s\",kind=\"%s\"} %llu\n", apis[a],
				    k ? "batch" : "single", (unsigned long long)atomic_load(&submits[a][k]));
	mu_buf_adds(b, "# HELP muster_api_batch_jobs_total Jobs created by accepted batch submits.\n"
		       "# TYPE muster_api_batch_jobs_total counter\n");
	for (int a = 0; a < 2; a++)
		mu_buf_addf(b, "muster_api_batch_jobs_total{api=\"%s\"} %llu\n", apis[a],
			    (unsigned long long)atomic_load(&batch_jobs[a]));
	mu_buf_adds(b, "# HELP muster_api_grpc_auth_failures_total gRPC calls with a missing or invalid token.\n"
		       "# TYPE muster_api_grpc_auth_failures_total counter\n");
	mu_buf_addf(b, "muster_api_grpc_auth_failures_total %llu\n",
		    (unsigned long long)atomic_load(&grpc_auth_failures));
	mu_buf_adds(b, "# HELP muster_api_grpc_token_lookups_total gRPC token lookups that went to the database.\n"
		       "# TYPE muster_api_grpc_token_lookups_total counter\n");
	mu_buf_addf(b, "muster_api_grpc_token_lookups_total %llu\n",
		    (unsigned long long)atomic_load(&grpc_lookups));
	mu_buf_adds(b, "# HELP muster_api_event_streams Event streams open now, by kind.\n"
		       "# TYPE muster_api_event_streams gauge\n");
	for (int k = 0; k < 3; k++)
		mu_buf_addf(b, "muster_api_event_streams{kind=\"%s\"} %lld\n", kinds[k],
			    (long long)atomic_load(&streams[k]));
}
