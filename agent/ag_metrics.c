/* ag_metrics.c - see ag_metrics.h. */
#include "ag_metrics.h"

#include <pthread.h>
#include <string.h>

#include "alloc.h"
#include "log.h"
#include "metrics.h"

struct xid_count {
	int xid;
	unsigned long long n;
};

static struct {
	pthread_mutex_t mu;
	struct ag_gpu gpu[AG_MAX_GPUS];
	int ngpus;
	int seen[AG_MAX_GPUS]; /* XIDs of gpu[i].xids already counted */
	struct xid_count xids[AG_MAX_GPUS][AG_METRICS_MAX_XIDS];
	int nxid[AG_MAX_GPUS];
	int live_runs;
	bool connected;
	unsigned long long runs_started, reconnects;
} m = { .mu = PTHREAD_MUTEX_INITIALIZER };

static struct mu_metrics_server *server;
static char *node;

void ag_metrics_gpus(const struct ag_gpus *g)
{
	pthread_mutex_lock(&m.mu);
	m.ngpus = g->n < AG_MAX_GPUS ? g->n : AG_MAX_GPUS;
	for (int i = 0; i < m.ngpus; i++) {
		const struct ag_gpu *x = &g->gpu[i];

		m.gpu[i] = *x;
		if (x->nxids < m.seen[i])
			m.seen[i] = 0;
		for (int k = m.seen[i]; k < x->nxids; k++) {
			int j = 0;

			while (j < m.nxid[i] && m.xids[i][j].xid != x->xids[k])
				j++;
			if (j == m.nxid[i]) {
				if (j == AG_METRICS_MAX_XIDS)
					continue; /* bounded: the rest count nowhere */
				m.xids[i][j].xid = x->xids[k];
				m.nxid[i]++;
			}
			m.xids[i][j].n++;
		}
		m.seen[i] = x->nxids;
	}
	pthread_mutex_unlock(&m.mu);
}

void ag_metrics_xids_cleared(void)
{
	pthread_mutex_lock(&m.mu);
	memset(m.seen, 0, sizeof(m.seen));
	pthread_mutex_unlock(&m.mu);
}

void ag_metrics_runs(int live, bool stream_connected)
{
	pthread_mutex_lock(&m.mu);
	m.live_runs = live;
	m.connected = stream_connected;
	pthread_mutex_unlock(&m.mu);
}

void ag_metrics_run_started(void)
{
	pthread_mutex_lock(&m.mu);
	m.runs_started++;
	pthread_mutex_unlock(&m.mu);
}

void ag_metrics_stream_reconnect(void)
{
	pthread_mutex_lock(&m.mu);
	m.reconnects++;
	pthread_mutex_unlock(&m.mu);
}

static void gpu_labels(struct mu_buf *b, const char *name, const struct ag_gpu *x, bool model)
{
	mu_buf_addf(b, "%s{node=", name);
	mu_metrics_label(b, node);
	mu_buf_addf(b, ",gpu=\"%d\"", x->index);
	if (model) {
		mu_buf_adds(b, ",model=");
		mu_metrics_label(b, x->model);
	}
	mu_buf_addc(b, '}');
}

static void render(struct mu_buf *b, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m.mu);
	mu_metrics_head(b, "muster_agent_gpu_utilization_ratio", "gauge", "GPU utilisation, 0 to 1.");
	for (int i = 0; i < m.ngpus; i++) {
		gpu_labels(b, "muster_agent_gpu_utilization_ratio", &m.gpu[i], true);
		mu_buf_addf(b, " %.2f\n", m.gpu[i].utilization / 100.0);
	}
	mu_metrics_head(b, "muster_agent_gpu_memory_used_bytes", "gauge", "GPU memory in use.");
	for (int i = 0; i < m.ngpus; i++) {
		gpu_labels(b, "muster_agent_gpu_memory_used_bytes", &m.gpu[i], true);
		mu_buf_addf(b, " %lld\n", m.gpu[i].memory_used_mb * 1048576LL);
	}
	mu_metrics_head(b, "muster_agent_gpu_memory_total_bytes", "gauge", "GPU memory in all.");
	for (int i = 0; i < m.ngpus; i++) {
		gpu_labels(b, "muster_agent_gpu_memory_total_bytes", &m.gpu[i], true);
		mu_buf_addf(b, " %lld\n", m.gpu[i].memory_mb * 1048576LL);
	}
	mu_metrics_head(b, "muster_agent_gpu_temperature_celsius", "gauge", "GPU temperature.");
	for (int i = 0; i < m.ngpus; i++) {
		gpu_labels(b, "muster_agent_gpu_temperature_celsius", &m.gpu[i], true);
		mu_buf_addf(b, " %d\n", m.gpu[i].temperature);
	}
	mu_metrics_head(b, "muster_agent_gpu_healthy", "gauge", "1 while the GPU is healthy.");
	for (int i = 0; i < m.ngpus; i++) {
		gpu_labels(b, "muster_agent_gpu_healthy", &m.gpu[i], true);
		mu_buf_addf(b, " %d\n", m.gpu[i].healthy ? 1 : 0);
	}
	mu_metrics_head(b, "muster_gpu_ecc_errors_total", "counter",
			"ECC errors the driver counted on the GPU.");
	for (int i = 0; i < m.ngpus; i++) {
		gpu_labels(b, "muster_gpu_ecc_errors_total", &m.gpu[i], false);
		mu_buf_addf(b, " %lld\n", m.gpu[i].ecc_errors);
	}
	mu_metrics_head(b, "muster_gpu_xid_errors_total", "counter",
			"XID errors seen on the GPU since the agent started, by XID.");
	for (int i = 0; i < m.ngpus; i++)
		for (int k = 0; k < m.nxid[i]; k++) {
			mu_buf_adds(b, "muster_gpu_xid_errors_total{node=");
			mu_metrics_label(b, node);
			mu_buf_addf(b, ",gpu=\"%d\",xid=\"%d\"} %llu\n", m.gpu[i].index, m.xids[i][k].xid,
				    m.xids[i][k].n);
		}
	mu_metrics_head(b, "muster_agent_runs", "gauge", "Runs with processes on this node now.");
	mu_buf_adds(b, "muster_agent_runs{node=");
	mu_metrics_label(b, node);
	mu_buf_addf(b, "} %d\n", m.live_runs);
	mu_metrics_head(b, "muster_agent_runs_started_total", "counter", "Runs this agent started.");
	mu_buf_adds(b, "muster_agent_runs_started_total{node=");
	mu_metrics_label(b, node);
	mu_buf_addf(b, "} %llu\n", m.runs_started);
	mu_metrics_head(b, "muster_agent_stream_connected", "gauge",
			"1 while the stream to muster-api is registered.");
	mu_buf_adds(b, "muster_agent_stream_connected{node=");
	mu_metrics_label(b, node);
	mu_buf_addf(b, "} %d\n", m.connected ? 1 : 0);
	mu_metrics_head(b, "muster_agent_stream_reconnects_total", "counter",
			"Times the stream to muster-api closed and was opened again.");
	mu_buf_adds(b, "muster_agent_stream_reconnects_total{node=");
	mu_metrics_label(b, node);
	mu_buf_addf(b, "} %llu\n", m.reconnects);
	pthread_mutex_unlock(&m.mu);
}

int ag_metrics_start(const char *addr, const char *node_name)
{
	struct mu_error err = { 0 };
	int ret;

	if (!addr || !addr[0])
		return 0;
	node = mu_strdup(node_name);
	ret = mu_metrics_serve(addr, render, NULL, &server, &err);
	if (ret < 0) {
		mu_err("node=%s metrics: %s", node_name, err.msg);
		return ret;
	}
	mu_info("node=%s metrics on http://%s/metrics (port %d)", node_name, addr,
		mu_metrics_port(server));
	return 0;
}

void ag_metrics_stop(void)
{
	mu_metrics_stop(server);
	server = NULL;
	mu_free(node);
	node = NULL;
}
