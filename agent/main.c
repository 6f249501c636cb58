/*
 * muster-agent: one per node. Reports the node's GPUs and their health to
 * muster-api over AgentService.Connect, and runs the node's share of each
 * gang as the server's desired state says (see docs/agent.md).
 *
 * One thread: the main loop polls the gRPC completion queue for at most
 * 100 ms, then reaps and polls the runs, reads faults, sends heartbeats.
 * Stopping the agent (TERM/INT) leaves the runs going; the state file lets
 * the next agent adopt them.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ag_metrics.h"
#include "agent.h"
#include "alloc.h"
#include "config.h"
#include "launcher.h"
#include "log.h"
#include "stream.h"
#include "tls.h"

#define AGENT_VERSION "0.1.0"
#define DONE_KEEP_S 600.0 /* a finished run unlisted this long is forgotten */

static char *api_addr, *token_file, *token_flag, *node_name, *address, *topology, *labels, *state_dir;
static char *gpu_backend, *fake_model, *fabric_ifaces, *sysfs_net, *log_level;
static char *cgroups, *cgroup_root, *cgroup_devices, *gpu_dev_dir;
static char *tls_ca, *tls_cert, *tls_key, *srun_dir;
static long long fake_gpus, fake_memory_mb, heartbeat_ms, default_grace_s, min_uid, pids_max;
static long long log_retention_ms;
static bool allow_root_jobs, single_user;

static char *metrics_addr;

static const struct mu_opt opts[] = {
	{ "metrics-addr", "MUSTER_AGENT_METRICS_ADDR", MU_OPT_STR, "",
	  "serve Prometheus metrics on host:port at /metrics (\"\" = off)", &metrics_addr },
	{ "api", "MUSTER_AGENT_API", MU_OPT_STR, "127.0.0.1:9090",
	  "muster-api gRPC address (host:port)", &api_addr },
	{ "token-file", "MUSTER_AGENT_TOKEN_FILE", MU_OPT_STR, "",
	  "file holding this node's agent token (regular, owned by the agent's uid, mode 0600"
	  " or stricter); or MUSTER_AGENT_TOKEN in the environment, dropped by a re-exec",
	  &token_file },
	{ "token", NULL, MU_OPT_STR, "",
	  "refused: argv is readable by every local user (use --token-file)", &token_flag },
	{ "node", "MUSTER_NODE_NAME", MU_OPT_STR, "", "node name (default: the host name)",
	  &node_name },
	{ "address", "MUSTER_NODE_ADDRESS", MU_OPT_STR, "",
	  "address other nodes reach this one on (MASTER_ADDR; default: the node name)",
	  &address },
	{ "topology", "MUSTER_NODE_TOPOLOGY", MU_OPT_STR, "", "topology path, e.g. block-1/rack-3",
	  &topology },
	{ "labels", "MUSTER_NODE_LABELS", MU_OPT_STR, "", "node labels: k=v,k=v", &labels },
	{ "state-dir", "MUSTER_AGENT_STATE_DIR", MU_OPT_STR, "/var/lib/muster-agent",
	  "state file, per-run logs and hostfiles, the fake fault file", &state_dir },
	{ "gpu-backend", "MUSTER_GPU_BACKEND", MU_OPT_STR, "nvml", "nvml | fake", &gpu_backend },
	{ "fake-gpus", "MUSTER_FAKE_GPUS", MU_OPT_INT, "8", "fake backend: GPU count", &fake_gpus },
	{ "fake-gpu-model", "MUSTER_FAKE_GPU_MODEL", MU_OPT_STR, "H100-80GB",
	  "fake backend: GPU model", &fake_model },
	{ "fake-gpu-memory", "MUSTER_FAKE_GPU_MEMORY_MB", MU_OPT_INT, "81920",
	  "fake backend: MiB per GPU", &fake_memory_mb },
	{ "heartbeat-interval", "MUSTER_HEARTBEAT_INTERVAL", MU_OPT_DURATION, "5s",
	  "time between heartbeats", &heartbeat_ms },
	{ "fabric-ifaces", "MUSTER_FABRIC_IFACES", MU_OPT_STR, "",
	  "interfaces carrying training traffic (ib0,ib1); a link down drains the node",
	  &fabric_ifaces },
	{ "sysfs-net", "MUSTER_SYSFS_NET", MU_OPT_STR, "/sys/class/net",
	  "where <iface>/operstate is read", &sysfs_net },
	{ "default-grace", "MUSTER_AGENT_DEFAULT_GRACE", MU_OPT_INT, "30",
	  "grace seconds when a stop order carries none", &default_grace_s },
	{ "min-uid", "MUSTER_AGENT_MIN_UID", MU_OPT_INT, "1000",
	  "jobs of accounts with a lower uid fail (bad_user)", &min_uid },
	{ "allow-root-jobs", "MUSTER_AGENT_ALLOW_ROOT_JOBS", MU_OPT_BOOL, "false",
	  "let a job run as root (uid 0); refused (bad_user) otherwise", &allow_root_jobs },
	{ "single-user", "MUSTER_AGENT_SINGLE_USER", MU_OPT_BOOL, "false",
	  "run every job as the agent's own account, whatever its user", &single_user },
	{ "cgroups", "MUSTER_AGENT_CGROUPS", MU_OPT_STR, "auto",
	  "auto | on (required) | v1 (v1 controllers only) | off: one cgroup per run", &cgroups },
	{ "cgroup-root", "MUSTER_AGENT_CGROUP_ROOT", MU_OPT_STR, "muster",
	  "the runs' cgroups go in <hierarchy>/<root>/<node>/run-<id>", &cgroup_root },
	{ "pids-max", "MUSTER_AGENT_PIDS_MAX", MU_OPT_INT, "0",
	  "most processes and threads of one run on this node (cgroup pids.max; 0 = no limit)",
	  &pids_max },
	{ "cgroup-devices", "MUSTER_AGENT_CGROUP_DEVICES", MU_OPT_STR, "auto",
	  "auto | v1 (devices.deny) | bpf (cgroup v2 device program)", &cgroup_devices },
	{ "gpu-dev-dir", "MUSTER_AGENT_GPU_DEV_DIR", MU_OPT_STR, "",
	  "where GPU i's device node nvidia<i> is (default /dev with nvml, none with fake);"
	  " a run's cgroup denies those of GPUs it was not granted", &gpu_dev_dir },
	{ "log-level", "MUSTER_LOG_LEVEL", MU_OPT_STR, "info", "debug|info|warn|error",
	  &log_level },
	{ "log-retention", "MUSTER_AGENT_LOG_RETENTION", MU_OPT_DURATION, "7d",
	  "how long an ended run's directory (its stdout/stderr logs) stays on the node",
	  &log_retention_ms },
	{ "srun-dir", "MUSTER_AGENT_SRUN_DIR", MU_OPT_STR, "",
	  "the directory of muster's srun, first on script jobs' PATH (default: "
	  MU_SRUN_RELDIR " beside bin/, else " MU_SRUN_DIR "; \"none\": no srun)", &srun_dir },
	{ "tls-ca", "MUSTER_AGENT_TLS_CA", MU_OPT_STR, "",
	  "PEM CA of muster-api's certificate: the stream then uses TLS", &tls_ca },
	{ "tls-cert", "MUSTER_AGENT_TLS_CERT", MU_OPT_STR, "",
	  "PEM client certificate naming this node (when muster-api has --tls-client-ca)", &tls_cert },
	{ "tls-key", "MUSTER_AGENT_TLS_KEY", MU_OPT_STR, "", "PEM private key of --tls-cert (mode 0600)",
	  &tls_key },
};

struct agent {
	struct ag_node node;
	struct ag_gpus gpus;
	struct ag_stream *stream;
	struct ag_run *runs;
	int nruns;
	size_t cap;
	bool dirty; /* state file out of date */
	int64_t hb_seq;
	double next_hb;
	bool drain;
	char **ifaces;
	int nifaces;
	bool *link_up;
	struct ag_logs *logs;
	double next_prune;
};

static volatile sig_atomic_t quit;
static void on_signal(int sig)
{
	quit = sig;
}

/* True when queued on the open stream; a report that was not is made again
 * (the reconciler sees told_* false), so an exit is never lost. */
static bool status_msg(struct agent *a, const struct ag_run *r, int64_t run_id,
		       Muster__V1__RunPhase phase, const char *msg)
{
	Muster__V1__AgentMessage m = MUSTER__V1__AGENT_MESSAGE__INIT;
	Muster__V1__RunStatus st = MUSTER__V1__RUN_STATUS__INIT;
	st.run_id = run_id;
	st.phase = phase;
	if (r) {
		st.exit_code = r->exit_code;
		st.exit_signal = r->exit_signal;
		st.log_path = (char *)r->dir;
		st.message = (char *)(msg ? msg : r->message);
		st.end_reason = (char *)r->end_reason;
	} else if (msg) {
		st.message = (char *)msg;
	}
	m.msg_case = MUSTER__V1__AGENT_MESSAGE__MSG_RUN_STATUS;
	m.run_status = &st;
	if (!ag_stream_send(a->stream, &m))
		return false;
	mu_info("run=%" PRId64 " reported phase=%d code=%d signal=%d", run_id, (int)phase,
		st.exit_code, st.exit_signal);
	return true;
}

/* The launcher, restart and signal fields (an unknown launcher or signal
 * from a newer server is none: the command runs as given). */
static void spec_from_launch(struct ag_spec *s, const Muster__V1__DesiredRun *d)
{
	enum mu_launcher l = MU_LAUNCHER_NONE;

	if (mu_launcher_parse(d->launcher, &l) != 0)
		mu_warn("run=%" PRId64 " unknown launcher %s: the command runs as given", d->run_id,
			d->launcher);
	s->launcher = (int)l;
	s->min_nodes = d->min_nodes;
	s->restart_count = d->restart_count;
	s->restart_on_shrink = !d->on_shrink || strcmp(d->on_shrink, "keep") != 0;
	if (d->signal_name && *d->signal_name) {
		int sig = mu_signal_parse(d->signal_name);
		s->signal = sig > 0 ? sig : 0;
		s->signal_before_s = d->signal_before_s;
		s->signal_batch_only = d->signal_batch_only;
	}
	/* a restarted gang: ranks renumbered over the kept nodes */
	if (s->restart_count > 0 && ag_spec_renumber(s, node_name) != 0)
		mu_warn("run=%" PRId64 " node %s is not in its gang", d->run_id, node_name);
}

/* DesiredRun -> ag_spec (new strings; ag_spec_free). */
static void spec_from(struct ag_spec *s, const Muster__V1__DesiredRun *d)
{
	memset(s, 0, sizeof(*s));
	s->run_id = d->run_id;
	s->job_id = d->job_id;
	s->attempt = d->attempt;
	s->job_name = mu_strdup(d->job_name);
	/* a tenant mapped to one service account runs every job as it */
	s->user = mu_strdup(d->unix_account && *d->unix_account ? d->unix_account : d->user);
	s->argv = mu_calloc(d->n_command + 1, sizeof(char *));
	for (size_t i = 0; i < d->n_command; i++)
		s->argv[i] = mu_strdup(d->command[i]);
	s->env = mu_calloc(d->n_env + 1, sizeof(char *));
	for (size_t i = 0; i < d->n_env; i++) {
		size_t len = strlen(d->env[i]->key) + strlen(d->env[i]->value) + 2;
		s->env[i] = mu_malloc(len);
		snprintf(s->env[i], len, "%s=%s", d->env[i]->key, d->env[i]->value);
	}
	s->workdir = mu_strdup(d->workdir);
	s->procs_per_node = d->procs_per_node;
	s->gpus_per_node = d->gpus_per_node;
	s->node_rank = d->node_rank;
	s->ngpu_indices = (int)d->n_gpu_indices;
	s->gpu_indices = mu_calloc(d->n_gpu_indices + 1, sizeof(int));
	for (size_t i = 0; i < d->n_gpu_indices; i++)
		s->gpu_indices[i] = d->gpu_indices[i];
	s->nnodes = (int)d->n_nodes;
	s->nodes = mu_calloc(d->n_nodes + 1, sizeof(*s->nodes));
	for (size_t i = 0; i < d->n_nodes; i++) {
		s->nodes[i].name = mu_strdup(d->nodes[i]->name);
		s->nodes[i].address = mu_strdup(d->nodes[i]->address);
		s->nodes[i].gpus = d->nodes[i]->gpus;
	}
	s->master_addr = mu_strdup(d->master_addr);
	s->master_port = d->master_port;
	s->time_limit_s = d->time_limit_s;
	s->stop = d->stop;
	s->grace_period_s = d->grace_period_s;
	s->mem_per_node = d->mem_per_node;
	s->cpus_per_node = d->cpus_per_node;
	spec_from_launch(s, d);
	s->stdout_pattern = mu_strdup(d->stdout_pattern ? d->stdout_pattern : "");
	s->stderr_pattern = mu_strdup(d->stderr_pattern ? d->stderr_pattern : "");
	if (d->array_spec && d->array_spec[0]) {
		s->array_job_id = d->array_job_id;
		s->array_task_id = d->array_task_id;
		s->array_spec = mu_strdup(d->array_spec);
	}
}

/* Rewrites a live run's hostfile when its gang changed (elastic shrink). */
static void sync_gang(struct ag_run *r, const Muster__V1__DesiredRun *d)
{
	struct ag_gang_node *g = mu_calloc(d->n_nodes + 1, sizeof(*g));
	struct ag_spec s = { .run_id = d->run_id, .nodes = g, .nnodes = (int)d->n_nodes };
	char path[4200];
	bool changed = false;

	for (size_t i = 0; i < d->n_nodes; i++)
		g[i] = (struct ag_gang_node){ d->nodes[i]->name, d->nodes[i]->address, d->nodes[i]->gpus };
	snprintf(path, sizeof(path), "%s/hostfile", r->dir);
	if (ag_update_hostfile(&s, path, &changed) != 0)
		mu_warn("run=%" PRId64 " cannot rewrite %s", r->run_id, path);
	else if (changed)
		mu_info("run=%" PRId64 " gang now %zu node(s), this node rank %d: hostfile rewritten,"
			" processes kept (pgid=%d)", r->run_id, d->n_nodes, d->node_rank, (int)r->pgid);
	mu_free(g);
}

/* How long a failed exit of an on_shrink-restart run is held back: a
 * peer's death fails the others' collectives before the scheduler has
 * shrunk the gang, and that shrink, not the failure, is what happened. */
#define RESTART_HOLD_S 10.0

/* The kept nodes of a shrunk gang (on_shrink restart): a higher
 * restart_count than the processes had orders them stopped (TERM, grace,
 * KILL of the cgroup) and started again with the renumbered world. */
static void restart_check(struct agent *a, struct ag_run *r, const Muster__V1__DesiredRun *d)
{
	if (!r->restart_on_shrink || r->restart || d->restart_count <= r->restart_count)
		return;
	if (r->state == AG_RUN_DONE && r->hold_until <= 0)
		return; /* ended and told: nothing left to restart */
	r->restart = mu_calloc(1, sizeof(*r->restart));
	spec_from(r->restart, d);
	mu_info("run=%" PRId64 " gang shrank to %zu node(s): restart %d, this node rank %d,"
		" master %s:%d", r->run_id, d->n_nodes, d->restart_count, r->restart->node_rank,
		r->restart->master_addr, r->restart->master_port);
	if (r->state == AG_RUN_LIVE)
		ag_run_stop(r, d->grace_period_s > 0 ? d->grace_period_s : (int)default_grace_s,
			    "restart: the gang shrank");
	a->dirty = true;
}

static void drop_restart(struct ag_run *r)
{
	if (!r || !r->restart)
		return;
	ag_spec_free(r->restart);
	mu_free(r->restart);
	r->restart = NULL;
}

/* Starts a stopped run again from its restart spec. */
static void restart_run(struct agent *a, struct ag_run *r)
{
	struct ag_spec *sp = r->restart;
	double deadline = r->deadline, signal_at = r->signal_at;
	int64_t deadline_epoch = r->deadline_epoch;
	bool signal_sent = r->signal_sent;
	int rc;

	r->restart = NULL;
	rc = ag_run_start(r, sp, &a->node);
	/* the time limit is the run's, not the restart's */
	if (rc == 0 && deadline > 0) {
		r->deadline = deadline;
		r->deadline_epoch = deadline_epoch;
		r->signal_at = signal_at;
		r->signal_sent = signal_sent;
	}
	ag_spec_free(sp);
	mu_free(sp);
	a->dirty = true;
	if (rc == 0) {
		r->told_running = status_msg(a, r, r->run_id, MUSTER__V1__RUN_PHASE__RUN_PHASE_RUNNING, "");
	} else {
		r->ended = ag_now();
		r->told_exit = status_msg(a, r, r->run_id,
					  MUSTER__V1__RUN_PHASE__RUN_PHASE_FAILED_TO_START, NULL);
	}
}

static void on_desired(struct agent *a, const Muster__V1__DesiredState *ds)
{
	int nw = (int)ds->n_runs;
	struct ag_desired *want = mu_calloc((size_t)nw + 1, sizeof(*want));
	for (int i = 0; i < nw; i++) {
		want[i].run_id = ds->runs[i]->run_id;
		want[i].stop = ds->runs[i]->stop;
	}
	if (ds->drain != a->drain)
		mu_info("node=%s drain=%d %s", node_name, (int)ds->drain, ds->drain_reason);
	a->drain = ds->drain;
	int max = 2 * (nw + a->nruns) + 1;
	struct ag_action *acts = mu_calloc((size_t)max, sizeof(*acts));
	int n = ag_reconcile_plan(want, nw, a->runs, a->nruns, ds->drain, acts, max);
	mu_debug("node=%s desired generation=%lld runs=%d actions=%d", node_name,
		 (long long)ds->generation, nw, n);
	for (int i = 0; i < n; i++) {
		const struct ag_action *act = &acts[i];
		const Muster__V1__DesiredRun *d = act->desired >= 0 ? ds->runs[act->desired] : NULL;
		struct ag_run *r = act->actual >= 0 ? &a->runs[act->actual] : NULL;
		switch (act->kind) {
		case AG_ACT_START: {
			struct ag_spec spec;
			spec_from(&spec, d);
			a->runs = mu_grow(a->runs, &a->cap, (size_t)a->nruns + 1, sizeof(*a->runs));
			r = &a->runs[a->nruns++];
			int rc = ag_run_start(r, &spec, &a->node);
			ag_spec_free(&spec);
			ag_metrics_run_started();
			a->dirty = true;
			ag_state_save(state_dir, a->runs, a->nruns); /* before anyone hears of it */
			a->dirty = false;
			if (rc == 0) {
				r->told_running = status_msg(a, r, r->run_id,
							     MUSTER__V1__RUN_PHASE__RUN_PHASE_RUNNING, "");
			} else {
				r->ended = ag_now();
				r->told_exit = status_msg(a, r, r->run_id,
							  MUSTER__V1__RUN_PHASE__RUN_PHASE_FAILED_TO_START, NULL);
			}
			break;
		}
		case AG_ACT_STOP:
			drop_restart(r); /* a stop order wins over a pending restart */
			ag_run_stop(r, d->grace_period_s > 0 ? d->grace_period_s : (int)default_grace_s,
				    d->stop_reason[0] ? d->stop_reason : "stop ordered");
			a->dirty = true;
			break;
		case AG_ACT_KILL:
			drop_restart(r);
			ag_run_stop(r, -1, "not in the desired state");
			a->dirty = true;
			break;
		case AG_ACT_REPORT_RUNNING:
			r->told_running = status_msg(a, r, r->run_id, MUSTER__V1__RUN_PHASE__RUN_PHASE_RUNNING,
						     "");
			break;
		case AG_ACT_REPORT_EXIT:
			if (r) {
				r->told_exit = status_msg(a, r, r->run_id,
							  MUSTER__V1__RUN_PHASE__RUN_PHASE_EXITED, NULL);
			} else {
				status_msg(a, NULL, act->run_id, MUSTER__V1__RUN_PHASE__RUN_PHASE_EXITED,
					   "stopped before it started");
			}
			break;
		}
	}
	/* An elastic run that shrank lists fewer nodes: same run, same
	 * processes; only the hostfile follows the new membership. */
	for (int i = 0; i < nw; i++) {
		const Muster__V1__DesiredRun *d = ds->runs[i];
		if (d->stop || !d->n_nodes)
			continue;
		for (int k = 0; k < a->nruns; k++) {
			if (a->runs[k].run_id == d->run_id && a->runs[k].state == AG_RUN_LIVE)
				sync_gang(&a->runs[k], d);
			if (a->runs[k].run_id == d->run_id)
				restart_check(a, &a->runs[k], d);
		}
	}
	/* forget finished runs the server stopped listing long ago */
	double now = ag_now();
	int k = 0;
	for (int i = 0; i < a->nruns; i++) {
		struct ag_run *r = &a->runs[i];
		bool listed = false;
		for (int j = 0; j < nw && !listed; j++)
			listed = want[j].run_id == r->run_id;
		if (r->state == AG_RUN_DONE && !listed && now - r->ended > DONE_KEEP_S) {
			a->dirty = true;
			drop_restart(r); /* a restart nobody wants any more */
			continue;
		}
		a->runs[k++] = *r;
	}
	a->nruns = k;
	mu_free(acts);
	mu_free(want);
}

/* ---- logs: requests go to the reader thread, answers back on the stream -- */

static void send_log_chunk(struct agent *a, int64_t request_id, int64_t offset,
			   const struct ag_log_chunk *c, const char *error)
{
	Muster__V1__AgentMessage m = MUSTER__V1__AGENT_MESSAGE__INIT;
	Muster__V1__LogChunk lc = MUSTER__V1__LOG_CHUNK__INIT;

	lc.request_id = request_id;
	lc.offset = offset;
	if (c) {
		lc.data.data = c->data;
		lc.data.len = c->len;
		lc.size = c->size;
		lc.ended = c->ended;
	}
	lc.error = (char *)(error ? error : "");
	m.msg_case = MUSTER__V1__AGENT_MESSAGE__MSG_LOG_CHUNK;
	m.log_chunk = &lc;
	if (!ag_stream_send(a->stream, &m))
		mu_debug("logs request=%" PRId64 " answer dropped: no stream", request_id);
}

static void on_log_request(struct agent *a, const Muster__V1__LogRequest *q)
{
	struct ag_log_job j = { 0 };

	j.request_id = q->request_id;
	j.run_id = q->run_id;
	j.local_rank = q->local_rank;
	j.err_stream = q->stream == MUSTER__V1__LOG_STREAM__LOG_STREAM_STDERR;
	j.offset = q->offset;
	j.limit = q->limit > 0 ? (size_t)q->limit : 0;
	/* a run we remember says whether it ended; a directory left by a run
	 * already forgotten (kept for --log-retention) has ended for sure */
	j.run_done = true;
	for (int i = 0; i < a->nruns; i++) {
		if (a->runs[i].run_id != q->run_id)
			continue;
		j.run_done = a->runs[i].state == AG_RUN_DONE;
		if (j.local_rank >= a->runs[i].nprocs && a->runs[i].nprocs > 0) {
			send_log_chunk(a, q->request_id, q->offset, NULL,
				       "invalid: local_rank beyond this run's processes on the node");
			return;
		}
	}
	if (!ag_logs_submit(a->logs, &j))
		send_log_chunk(a, q->request_id, q->offset, NULL, "busy: too many log reads queued");
}

static void on_log_done(void *ctx, struct ag_log_job *j)
{
	struct agent *a = ctx;

	send_log_chunk(a, j->request_id, j->offset, &j->out, j->rc < 0 ? j->out.error : NULL);
}

/* Every so often: drop the directories of runs ended past the retention. */
static void prune_logs(struct agent *a)
{
	double every = (double)log_retention_ms / 4000.0;
	int64_t *live;
	int n = 0;

	if (ag_now() < a->next_prune)
		return;
	a->next_prune = ag_now() + (every < 1 ? 1 : every > 60 ? 60 : every);
	live = mu_calloc((size_t)a->nruns + 1, sizeof(*live));
	/* kept: runs with processes, and ended ones this agent saw end less than
	 * the retention ago (a run whose keeper was KILLed left no exit file to
	 * date its directory); runs forgotten go by the directory's time */
	for (int i = 0; i < a->nruns; i++)
		if (a->runs[i].state != AG_RUN_DONE ||
		    (a->runs[i].ended > 0 && ag_now() - a->runs[i].ended < (double)log_retention_ms / 1000.0))
			live[n++] = a->runs[i].run_id;
	ag_logs_prune(state_dir, log_retention_ms / 1000, live, n);
	mu_free(live);
}

static void on_msg(void *ctx, const Muster__V1__ServerMessage *m)
{
	struct agent *a = ctx;
	if (m->msg_case == MUSTER__V1__SERVER_MESSAGE__MSG_DESIRED)
		on_desired(a, m->desired);
	else if (m->msg_case == MUSTER__V1__SERVER_MESSAGE__MSG_LOG_REQUEST)
		on_log_request(a, m->log_request);
}

static void send_register(struct agent *a)
{
	Muster__V1__AgentMessage m = MUSTER__V1__AGENT_MESSAGE__INIT;
	Muster__V1__Register reg = MUSTER__V1__REGISTER__INIT;
	Muster__V1__GpuInfo gi[AG_MAX_GPUS], *gp[AG_MAX_GPUS];
	Muster__V1__Register__LabelsEntry le[64], *lp[64];
	int64_t *live = mu_calloc((size_t)a->nruns + 1, sizeof(int64_t));
	char *lab = mu_strdup(labels);
	size_t nl = 0;
	reg.node_name = node_name;
	reg.address = address;
	reg.topology = topology;
	reg.agent_version = AGENT_VERSION;
	for (int i = 0; i < a->gpus.n; i++) {
		muster__v1__gpu_info__init(&gi[i]);
		gi[i].index = a->gpus.gpu[i].index;
		gi[i].uuid = a->gpus.gpu[i].uuid;
		gi[i].model = a->gpus.gpu[i].model;
		gi[i].memory_mb = a->gpus.gpu[i].memory_mb;
		gp[i] = &gi[i];
	}
	reg.n_gpus = (size_t)a->gpus.n;
	reg.gpus = gp;
	for (char *save = NULL, *kv = strtok_r(lab, ",", &save); kv && nl < 64;
	     kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq)
			continue;
		*eq = '\0';
		muster__v1__register__labels_entry__init(&le[nl]);
		le[nl].key = kv;
		le[nl].value = eq + 1;
		lp[nl] = &le[nl];
		nl++;
	}
	reg.n_labels = nl;
	reg.labels = lp;
	for (int i = 0; i < a->nruns; i++)
		if (a->runs[i].state != AG_RUN_DONE)
			live[reg.n_running_run_ids++] = a->runs[i].run_id;
	reg.running_run_ids = live;
	m.msg_case = MUSTER__V1__AGENT_MESSAGE__MSG_REGISTER;
	m.register_ = &reg;
	for (int i = 0; i < a->nruns; i++)
		a->runs[i].told_running = a->runs[i].told_exit = false; /* a new stream */
	for (int i = 0; i < a->nruns; i++)
		a->runs[i].told_exit = a->runs[i].hold_until > 0; /* a held exit stays held */
	ag_stream_open(a->stream, &m);
	mu_free(lab);
	mu_free(live);
}

static void send_heartbeat(struct agent *a)
{
	Muster__V1__AgentMessage m = MUSTER__V1__AGENT_MESSAGE__INIT;
	Muster__V1__Heartbeat hb = MUSTER__V1__HEARTBEAT__INIT;
	Muster__V1__GpuHealth gh[AG_MAX_GPUS], *gp[AG_MAX_GPUS];
	Muster__V1__LinkState ls[64], *lp[64];
	int32_t xids[AG_MAX_GPUS][AG_MAX_XIDS];
	hb.seq = ++a->hb_seq;
	for (int i = 0; i < a->gpus.n; i++) {
		struct ag_gpu *g = &a->gpus.gpu[i];
		muster__v1__gpu_health__init(&gh[i]);
		gh[i].index = g->index;
		gh[i].memory_used_mb = g->memory_used_mb;
		gh[i].utilization = g->utilization;
		gh[i].temperature = g->temperature;
		gh[i].ecc_errors = g->ecc_errors;
		for (int k = 0; k < g->nxids; k++)
			xids[i][k] = g->xids[k];
		gh[i].n_xids = (size_t)g->nxids;
		gh[i].xids = xids[i];
		gp[i] = &gh[i];
	}
	hb.n_gpus = (size_t)a->gpus.n;
	hb.gpus = gp;
	for (int i = 0; i < a->nifaces && i < 64; i++) {
		muster__v1__link_state__init(&ls[i]);
		ls[i].iface = a->ifaces[i];
		ls[i].up = a->link_up[i];
		lp[i] = &ls[i];
	}
	hb.n_links = (size_t)(a->nifaces < 64 ? a->nifaces : 64);
	hb.links = lp;
	m.msg_case = MUSTER__V1__AGENT_MESSAGE__MSG_HEARTBEAT;
	m.heartbeat = &hb;
	/* a stalled server (paused, overloaded): keep the outbox for run
	 * reports; the XIDs wait for the next heartbeat */
	if (ag_stream_backlog(a->stream) < AG_STREAM_HB_BACKLOG && ag_stream_send(a->stream, &m)) {
		for (int i = 0; i < a->gpus.n; i++)
			a->gpus.gpu[i].nxids = 0; /* delivered (or the stream fails and we resend none) */
		ag_metrics_xids_cleared();
	}
}

/* Faults and links; true when something new must go out now. */
static bool poll_health(struct agent *a)
{
	bool urgent = false;
	ag_gpus_poll(&a->gpus);
	ag_metrics_gpus(&a->gpus);
	for (int i = 0; i < a->gpus.n; i++)
		if (a->gpus.gpu[i].nxids)
			urgent = true;
	for (int i = 0; i < a->nifaces; i++) {
		bool up = ag_link_up(sysfs_net, a->ifaces[i]);
		if (up != a->link_up[i]) {
			mu_warn("link=%s %s", a->ifaces[i], up ? "up" : "down");
			a->link_up[i] = up;
			urgent = true;
		}
	}
	return urgent;
}

/* Before the flag table is parsed: a token in the environment makes the
 * agent re-exec itself without it (token.c); the new image finds the token
 * on an inherited fd. Nonzero: exit. */
static int load_token_early(char **argv)
{
	struct mu_error err = { 0 };
	const char *fd = getenv(AG_TOKEN_FD_ENV);

	for (char **p = argv + 1; *p; p++) {
		if (!strcmp(*p, "--"))
			break;
		if (!strcmp(*p, "--token") || !strncmp(*p, "--token=", 8)) {
			fprintf(stderr, "muster-agent: --token is refused: a command line is readable"
					" by every local user (ps, /proc/<pid>/cmdline). Put the token in"
					" a file of mode 0600 and pass --token-file FILE\n");
			return 2;
		}
	}
	if (ag_token_reexec(argv, &err) != 0)
		goto fail;
	if (fd) {
		char *end;
		long v = strtol(fd, &end, 10);

		unsetenv(AG_TOKEN_FD_ENV);
		if (*end || v < 3 || v > 1 << 20) {
			mu_error_set(&err, MU_EINVAL, "token", AG_TOKEN_FD_ENV " is not an fd");
			goto fail;
		}
		if (ag_token_load_fd((int)v, &err) != 0)
			goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "muster-agent: %s\n", err.msg);
	return 2;
}

/* After the flag table: --token-file, unless the environment gave one. */
static int load_token(struct mu_error *err)
{
	if (!*token_file)
		return 0;
	if (ag_token_loaded())
		return mu_error_set(err, MU_EINVAL, "token-file",
				    "give the token once: --token-file or MUSTER_AGENT_TOKEN, not both");
	return ag_token_load_file(token_file, err);
}

static void split_ifaces(struct agent *a)
{
	char *copy = mu_strdup(fabric_ifaces);
	size_t cap = 0;
	for (char *save = NULL, *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		a->ifaces = mu_grow(a->ifaces, &cap, (size_t)a->nifaces + 1, sizeof(char *));
		a->ifaces[a->nifaces++] = mu_strdup(t);
	}
	a->link_up = mu_calloc((size_t)a->nifaces + 1, sizeof(bool));
	for (int i = 0; i < a->nifaces; i++)
		a->link_up[i] = ag_link_up(sysfs_net, a->ifaces[i]);
	mu_free(copy);
}

/* Owned by root or this agent and writable by no one else: the jobs of
 * other accounts run what is in it. */
static bool safe_path(const char *path, bool dir)
{
	struct stat st;

	return stat(path, &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) &&
	       (st.st_uid == 0 || st.st_uid == geteuid()) && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
	       (st.st_mode & S_IXOTH);
}

/* The srun directory (docs/agent.md, "Script jobs"): --srun-dir, else
 * <this binary's dir>/../MU_SRUN_RELDIR (the install tree's layout, and the
 * build tree's: muster-agent in build/agent, srun in build/libexec/...),
 * else MU_SRUN_DIR. new, or NULL (no srun) with a warning. */
static char *find_srun_dir(void)
{
	char exe[4096], cand[8192];
	ssize_t n;

	if (!strcmp(srun_dir, "none"))
		return NULL;
	if (*srun_dir) {
		snprintf(cand, sizeof(cand), "%s/srun", srun_dir);
		if (safe_path(srun_dir, true) && safe_path(cand, false))
			return mu_strdup(srun_dir);
		mu_warn("node=%s --srun-dir %s: no srun there, or not owned by root (or this agent) "
			"and writable only by it: script jobs get no srun", node_name, srun_dir);
		return NULL;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		snprintf(cand, sizeof(cand), "%s/../%s/srun", exe, MU_SRUN_RELDIR);
		if (safe_path(cand, false)) {
			*strrchr(cand, '/') = '\0';
			char *real = realpath(cand, NULL);
			char *dir = real && safe_path(real, true) ? mu_strdup(real) : NULL;
			free(real);
			if (dir)
				return dir;
		}
	}
	snprintf(cand, sizeof(cand), "%s/srun", MU_SRUN_DIR);
	if (safe_path(MU_SRUN_DIR, true) && safe_path(cand, false))
		return mu_strdup(MU_SRUN_DIR);
	mu_warn("node=%s no srun found (%s): script jobs that call srun fail", node_name, MU_SRUN_DIR);
	return NULL;
}

/* Identity policy, cgroups, GPU device nodes: what every run shares. */
static int setup_node(struct agent *a, struct mu_error *err)
{
	struct ag_node *n = &a->node;
	struct stat st;
	char path[4200];

	n->state_dir = state_dir;
	n->name = node_name;
	/* the node's name is a directory of its cgroups and of the state file's lines */
	bool ok = *node_name && strcmp(node_name, ".") && strcmp(node_name, "..");
	for (const char *p = node_name; *p && ok; p++)
		ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		     *p == '.' || *p == '_' || *p == '-';
	if (!ok) {
		fprintf(stderr, "muster-agent: --node %s: letters, digits, '.', '_' and '-' only\n",
			node_name);
		return MU_EINVAL;
	}
	if (pids_max < 0 || pids_max > 4194304) {
		fprintf(stderr, "muster-agent: --pids-max must be 0..4194304\n");
		return MU_EINVAL;
	}
	n->pids_max = (int)pids_max;
	n->srun_dir = find_srun_dir();
	if (n->srun_dir)
		mu_info("node=%s script jobs get srun from %s", node_name, n->srun_dir);
	if (ag_runas_policy_init(&n->runas, (long)min_uid, allow_root_jobs, single_user) != 0) {
		fprintf(stderr, "muster-agent: uid %d has no passwd entry\n", (int)geteuid());
		return MU_EINVAL;
	}
	if (single_user)
		mu_info("node=%s single-user: every job runs as %s (uid %d), whatever its user",
			node_name, n->runas.agent_user, (int)n->runas.agent_uid);
	else if (n->runas.agent_uid != 0)
		mu_warn("node=%s this agent is not root: it can run jobs of its own user %s only;"
			" jobs of other users fail (bad_user). --single-user runs every job as %s",
			node_name, n->runas.agent_user, n->runas.agent_user);
	else
		mu_info("node=%s jobs run as their user's account (uid >= %lld%s)", node_name, min_uid,
			allow_root_jobs ? ", root allowed" : "");
	if (ag_cg_detect(&n->cg, cgroups, "/sys/fs/cgroup", cgroup_root, err) != 0) {
		fprintf(stderr, "muster-agent: --cgroups %s: %s\n", cgroups, err->msg);
		return MU_EINVAL;
	}
	if (!strcmp(cgroup_devices, "bpf"))
		n->cg.devices_bpf = n->cg.v2[0] != 0;
	else if (!strcmp(cgroup_devices, "v1"))
		n->cg.devices_bpf = false;
	else if (strcmp(cgroup_devices, "auto")) {
		fprintf(stderr, "muster-agent: --cgroup-devices must be auto, v1 or bpf\n");
		return MU_EINVAL;
	}
	const char *dev = *gpu_dev_dir ? gpu_dev_dir : a->gpus.kind == AG_GPU_NVML ? "/dev" : "";
	n->ngpu_devs = *dev ? a->gpus.n : 0;
	int found = 0;
	for (int i = 0; i < n->ngpu_devs; i++) {
		snprintf(path, sizeof(path), "%s/nvidia%d", dev, a->gpus.gpu[i].minor);
		if (stat(path, &st) == 0 && S_ISCHR(st.st_mode)) {
			n->gpu_dev[i] = st.st_rdev;
			found++;
		} else {
			mu_warn("gpu=%d no device node %s: not confined", i, path);
		}
	}
	mu_info("node=%s cgroups=%s root=%s v2=%s devices=%s gpu devices=%d/%d in %s", node_name,
		ag_cg_mode_name(&n->cg), cgroup_root, n->cg.v2[0] ? n->cg.v2 : "-",
		n->cg.devices_bpf ? "bpf" : n->cg.v1[AG_CG_DEVICES] ? "v1" : "-", found, a->gpus.n,
		*dev ? dev : "-");
	return 0;
}

int main(int argc, char **argv)
{
	struct mu_error err = { 0 };
	struct agent a;
	int rc = 1;
	memset(&a, 0, sizeof(a));
	mu_log_set_prog("muster-agent");
	if (load_token_early(argv) != 0)
		return 2;
	if (mu_config_parse(opts, sizeof(opts) / sizeof(opts[0]), argc, argv,
			    "muster-agent: runs this node's share of muster gangs", &err) < 0)
		return 2;
	if (mu_log_set_level_name(log_level) != 0) {
		fprintf(stderr, "muster-agent: --log-level: unknown level %s\n", log_level);
		goto out;
	}
	if (!*node_name) {
		char host[256] = "";
		gethostname(host, sizeof(host) - 1);
		mu_free(node_name);
		node_name = mu_strdup(host);
	}
	if (!*address) {
		mu_free(address);
		address = mu_strdup(node_name);
	}
	if (load_token(&err) != 0) {
		fprintf(stderr, "muster-agent: %s\n", err.msg);
		goto out;
	}
	if (!ag_token_loaded()) {
		fprintf(stderr, "muster-agent: --token-file (MUSTER_AGENT_TOKEN_FILE) is required: a"
				" file, mode 0600, holding the agent token for node %s (POST /v1/tokens"
				" {\"role\":\"agent\",\"node\":\"%s\"})\n",
			node_name, node_name);
		goto out;
	}
	if (ag_tls_load(tls_ca, tls_cert, tls_key, &err) != 0) {
		fprintf(stderr, "muster-agent: %s\n", err.msg);
		goto out;
	}
	if (log_retention_ms < 1000) {
		fprintf(stderr, "muster-agent: --log-retention must be at least 1s\n");
		goto out;
	}
	if (heartbeat_ms < 100) {
		fprintf(stderr, "muster-agent: --heartbeat-interval must be at least 100ms\n");
		goto out;
	}
	if (mkdir(state_dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "muster-agent: --state-dir %s: %s\n", state_dir, strerror(errno));
		goto out;
	}
	if (strcmp(gpu_backend, "fake") == 0) {
		if (ag_gpus_open_fake(&a.gpus, (int)fake_gpus, fake_model, fake_memory_mb, node_name,
				      state_dir) != 0) {
			fprintf(stderr, "muster-agent: --fake-gpus must be 0..%d\n", AG_MAX_GPUS);
			goto out;
		}
	} else if (strcmp(gpu_backend, "nvml") == 0) {
		if (ag_gpus_open_nvml(&a.gpus, &err) != 0) {
			fprintf(stderr, "muster-agent: --gpu-backend nvml: %s\n", err.msg);
			goto out;
		}
	} else {
		fprintf(stderr, "muster-agent: --gpu-backend must be nvml or fake, not %s\n",
			gpu_backend);
		goto out;
	}
	split_ifaces(&a);
	if (setup_node(&a, &err) != 0)
		goto out;
	if (ag_state_load(state_dir, &a.node.cg, &a.runs, &a.nruns) != 0) {
		fprintf(stderr, "muster-agent: cannot read %s/agent.state\n", state_dir);
		goto out;
	}
	a.cap = (size_t)a.nruns;
	srandom((unsigned)time(NULL) ^ (unsigned)getpid());
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (ag_metrics_start(metrics_addr, node_name) < 0)
		goto out;
	a.stream = ag_stream_new(api_addr, ag_token_header());
	a.logs = ag_logs_new(state_dir);
	mu_info("node=%s address=%s api=%s gpus=%d backend=%s state=%s runs=%d", node_name, address,
		api_addr, a.gpus.n, gpu_backend, state_dir, a.nruns);
	while (!quit) {
		if (ag_stream_should_open(a.stream))
			send_register(&a);
		ag_stream_poll(a.stream, 100, on_msg, &a);
		if (ag_stream_take_new(a.stream))
			a.next_hb = 0; /* a first heartbeat at once */
		ag_reap(a.runs, a.nruns);
		for (int i = 0; i < a.nruns; i++) {
			struct ag_run *r = &a.runs[i];
			bool was_live = r->state == AG_RUN_LIVE;
			if (r->state == AG_RUN_DONE && r->restart) {
				restart_run(&a, r);
				continue;
			}
			if (r->state == AG_RUN_DONE && r->hold_until > 0 && ag_now() >= r->hold_until) {
				r->hold_until = 0; /* no shrink came: the failure is the job's */
				r->told_exit = status_msg(&a, r, r->run_id,
							  MUSTER__V1__RUN_PHASE__RUN_PHASE_EXITED, NULL);
			}
			if (ag_run_poll(r)) {
				r->ended = ag_now();
				a.dirty = true;
				if (r->restart) {
					restart_run(&a, r);
					continue;
				}
				if (was_live && r->restart_on_shrink && (r->exit_code || r->exit_signal)) {
					r->hold_until = r->ended + RESTART_HOLD_S;
					r->told_exit = true; /* the reconciler waits with us */
					mu_info("run=%" PRId64 " failed (code=%d signal=%d): held %.0fs for a shrink",
						r->run_id, r->exit_code, r->exit_signal, RESTART_HOLD_S);
					continue;
				}
				/* not told now (no stream, a full outbox): the next
				 * desired state that still lists it gets it reported */
				r->told_exit = status_msg(&a, r, r->run_id,
							  MUSTER__V1__RUN_PHASE__RUN_PHASE_EXITED, NULL);
			}
		}
		if (a.dirty && ag_state_save(state_dir, a.runs, a.nruns) == 0)
			a.dirty = false;
		ag_logs_take(a.logs, on_log_done, &a);
		prune_logs(&a);
		bool urgent = poll_health(&a);
		{
			int live = 0;
			for (int i = 0; i < a.nruns; i++)
				live += a.runs[i].state != AG_RUN_DONE;
			ag_metrics_runs(live, ag_stream_ready(a.stream));
		}
		if (ag_stream_ready(a.stream) && (urgent || ag_now() >= a.next_hb)) {
			send_heartbeat(&a);
			a.next_hb = ag_now() + (double)heartbeat_ms / 1000.0;
		}
	}
	int live = 0;
	for (int i = 0; i < a.nruns; i++)
		live += a.runs[i].state != AG_RUN_DONE;
	mu_info("node=%s signal=%d: exiting; %d live runs left to the next agent", node_name,
		(int)quit, live);
	ag_state_save(state_dir, a.runs, a.nruns);
	rc = 0;
out:
	ag_metrics_stop();
	ag_logs_free(a.logs);
	if (a.stream)
		ag_stream_free(a.stream);
	ag_gpus_close(&a.gpus);
	for (int i = 0; i < a.nifaces; i++)
		mu_free(a.ifaces[i]);
	mu_free(a.ifaces);
	mu_free(a.link_up);
	mu_free(a.runs);
	mu_free((char *)a.node.srun_dir); /* find_srun_dir's */
	mu_config_release(opts, sizeof(opts) / sizeof(opts[0]));
	ag_token_wipe();
	return rc;
}
