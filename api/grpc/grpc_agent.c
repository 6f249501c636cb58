/*
 * grpc_agent.c - muster.v1.AgentService.Connect: one bidirectional stream
 * per node agent (protocol in api/proto/muster/v1/agent.proto).
 *
 * Up: Register (pool worker: auth, node check, store_node_register), then
 * Heartbeats and RunStatus, parsed on the CQ thread and handed to the agent
 * thread:
 *   - heartbeats are buffered and flushed every HB_FLUSH_MS in ONE statement
 *     for all nodes (last_heartbeat, up, per-GPU figures), so 1,000 agents at
 *     1/s cost ~4 statements a second;
 *   - a fatal XID or a fabric link down marks the GPU unhealthy / drains the
 *     node (event + NOTIFY muster_sched 'node:<name>');
 *   - RunStatus is applied in arrival order (run_node_status, runs state,
 *     event, NOTIFY muster_sched 'run:<id>').
 * Down: the agent thread sends each stream the full DesiredState of its
 * node whenever it changes: on NOTIFY muster_agents '<node>' (the
 * scheduler), muster_sched 'node:<name>' (drain/resume), after RunStatus,
 * and every resync period (a missed notification costs at most that).
 * Unchanged states are not resent.
 *
 * The channel cannot be wedged (docs/agent.md "The node channel"): one
 * live stream per node (claim), validated Register text, revoked tokens'
 * streams ended (end_revoked), reports retried until they land
 * (apply_reports), no DesiredState over what the agent accepts, and a
 * control_plane tick so that an outage of muster-api or PostgreSQL is not
 * taken for every node's failure.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "api_tls.h"
#include "codec_admin.h"
#include "grpc_internal.h"
#include "log.h"
#include "muster/v1/agent.pb-c.h"
#include "store_agent.h"
#include "store_listen.h"
#include "store_node.h"

#define HB_FLUSH_MS 250
#define MAX_GPUS 64
#define CP_TICK_MS 1000        /* control_plane.heard_at (store_agent_cp_tick) */
#define TOKEN_CHECK_MS 2000    /* revoked agent tokens end their streams (REST's auth-cache TTL) */
#define CLAIM_WAIT_MS 1500     /* a second Connect waits this long for the first to go away */
#define RETRY_MS 1000          /* a status or fault that failed to apply is tried again */
/* The largest DesiredState sent; the agent accepts up to AG_MAX_DESIRED
 * (agent/stream.c), the same 64 MiB. Jobs are capped at submit
 * (settings.job_spec_max_bytes), so only a node with about a thousand
 * capped runs at once gets near it. */
#define MAX_DESIRED_BYTES (64 << 20)

struct kv_entry {
	ProtobufCMessage base;
	char *key;
	char *value;
};

struct agent {
	struct gcall *c;
	int64_t node_id;
	char *node;
	int hb_timeout;
	bool dirty;             /* desired state to recompute */
	bool have_hash;
	uint64_t hash;          /* of the last DesiredState sent (generation 0) */
	int64_t generation;
	char down_links[8][32]; /* fabric links reported down (one drain each) */
	int ndown;
	int64_t token_id;       /* the token the stream was opened with (revocation ends it) */
	int64_t heard_ms;       /* now_ms() of the last message from the agent (G.mu) */
	char peer[64];
	bool too_big_logged;
	struct agent *next;
};


struct fault {
	int64_t node_id;
	char node[256];
	int32_t gpu;            /* -1 for a link */
	int32_t xid;
	char reason[128];
	struct fault *next;
};

struct rstatus {
	int64_t node_id;
	int64_t run_id;
	int phase;
	int32_t exit_code, exit_signal;
	char *log_path, *message, *end_reason;
	struct rstatus *next;
};

static struct {
	pthread_mutex_t mu;
	struct agent *list;
	pthread_t thread;
	int wake;
	bool running;
	int resync_ms;
	int64_t *hb_nodes;
	size_t n_hb_nodes, cap_hb_nodes;
	struct store_agent_gpu_hb *hb;
	size_t n_hb, cap_hb;
	uint64_t hb_received, hb_flushed;
	struct fault *faults;
	struct rstatus *rs_head, *rs_tail;
	char **claims;          /* nodes whose Connect is being set up (pool workers) */
	size_t nclaims, cap_claims;
	char **released;        /* nodes whose stream ended here: their database claim goes */
	size_t nreleased, cap_released;
	char replica[96];       /* this muster-api among its replicas (api_replicas.id) */
} G = { .mu = PTHREAD_MUTEX_INITIALIZER, .wake = -1 };

/* XIDs that mean the GPU (or its NVLink) needs a reset: the node drains. */
static const int fatal_xids[] = { 48, 63, 64, 74, 79, 94, 95, 119 };

static bool fatal_xid(int x)
{
	for (size_t i = 0; i < sizeof(fatal_xids) / sizeof(fatal_xids[0]); i++)
		if (fatal_xids[i] == x)
			return true;
	return false;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wake_agent_thread(void)
{
	uint64_t one = 1;

	if (G.wake >= 0 && write(G.wake, &one, sizeof(one)) < 0)
		mu_debug("grpc agent wake failed");
}

/* ---- Register (pool worker) -------------------------------------------- */

static void agent_free(struct gcall *c)
{
	struct agent *a = c->stream;

	if (!a)
		return;
	mu_free(a->node);
	mu_free(a);
	c->stream = NULL;
}

/* What an agent registers flows into other jobs' hostfiles, MASTER_ADDR,
 * env and logs: UTF-8, at most `max` characters, no control characters. */
static bool plain_text(const char *s, size_t max)
{
	if (!s)
		return true;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return codec_admin_valid_text(s, max);
}

/* An IPv4 or IPv6 literal, or a host name: dot-separated labels of 1..63
 * letters, digits, '-' and '_' (no leading/trailing '-'), 253 at most. */
static bool valid_address(const char *s)
{
	unsigned char ip[16];
	size_t n = s ? strlen(s) : 0, label = 0;

	if (n == 0 || n > 253)
		return false;
	if (inet_pton(AF_INET, s, ip) == 1 || inet_pton(AF_INET6, s, ip) == 1)
		return true;
	for (size_t i = 0; i <= n; i++) {
		char ch = s[i];

		if (ch == '.' || ch == '\0') {
			if (label == 0 || label > 63 || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '_' || (ch == '-' && label > 0)))
			return false;
		label++;
	}
	return true;
}

/* "" or '/'-separated levels of 1..63 of [A-Za-z0-9._-], 255 at most;
 * labels' keys use the same characters (and '/') with 63 at most. */
static bool valid_path(const char *s, size_t max, bool empty_ok)
{
	size_t n = s ? strlen(s) : 0, seg = 0;

	if (n == 0)
		return empty_ok;
	if (n > max)
		return false;
	for (size_t i = 0; i <= n; i++) {
		char ch = s[i];

		if (ch == '/' || ch == '\0') {
			if (seg == 0 || seg > 63)
				return false;
			seg = 0;
			continue;
		}
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '.' || ch == '_' || ch == '-'))
			return false;
		seg++;
	}
	return true;
}

static int check_register(struct gcall *c, const Muster__V1__Register *r)
{
	/* the token's node (an admin typed it) names the node in other jobs' gangs */
	if (!valid_address(r->node_name))
		return mu_error_set(&c->err, MU_EINVAL, "register.node_name",
				    "must be a host name (1..253 characters, no spaces)");
	if (!valid_address(r->address))
		return mu_error_set(&c->err, MU_EINVAL, "register.address",
				    "must be a host name or an IP address (1..253 characters, no spaces)");
	if (!valid_path(r->topology, 255, true))
		return mu_error_set(&c->err, MU_EINVAL, "register.topology",
				    "must be levels of [A-Za-z0-9._-] separated by '/' (255 characters at most)");
	if (!plain_text(r->agent_version, 128))
		return mu_error_set(&c->err, MU_EINVAL, "register.agent_version",
				    "at most 128 characters, UTF-8, no control characters");
	if (r->n_labels > 64)
		return mu_error_set(&c->err, MU_ERANGE, "register.labels", "at most 64 labels");
	for (size_t i = 0; i < r->n_labels; i++)
		if (!valid_path(r->labels[i]->key, 63, false) || !plain_text(r->labels[i]->value, 256))
			return mu_error_set(&c->err, MU_EINVAL, "register.labels",
					    "keys of 1..63 [A-Za-z0-9._/-], values of at most 256 characters"
					    " without control characters");
	for (size_t i = 0; i < r->n_gpus; i++)
		if (!plain_text(r->gpus[i]->uuid, 128) || !plain_text(r->gpus[i]->model, 64))
			return mu_error_set(&c->err, MU_EINVAL, "register.gpus",
					    "uuid (128) / model (64): UTF-8 without control characters");
	return 0;
}

/* ---- one live stream per node ------------------------------------------- */

static bool claimed(const char *node)
{
	for (size_t i = 0; i < G.nclaims; i++)
		if (!strcmp(G.claims[i], node))
			return true;
	return false;
}

static void unclaim(const char *node)
{
	pthread_mutex_lock(&G.mu);
	for (size_t i = 0; i < G.nclaims; i++) {
		if (!strcmp(G.claims[i], node)) {
			mu_free(G.claims[i]);
			G.claims[i] = G.claims[--G.nclaims];
			break;
		}
	}
	pthread_mutex_unlock(&G.mu);
}

/* The refusal of a second live stream for `node`. */
static int taken(struct gcall *c, const char *node)
{
	return mu_error_set(&c->err, MU_ECONFLICT, "register.node_name",
			    "node %.100s already has a live agent stream", node);
}

/*
 * Pool worker: reserves `node` for this Connect. A node has at most one
 * live stream: one that is open (its transport not closed) and heard from
 * within the heartbeat timeout. A second Connect waits CLAIM_WAIT_MS for
 * the first to go away (an agent that just restarted, a client that just
 * cancelled), then is refused with ALREADY_EXISTS. An open stream silent
 * for longer than the timeout is stale (a node that lost power, its TCP
 * connection not yet timed out): the new stream replaces it.
 */
static int claim(PGconn *db, struct gcall *c, const char *node, int hb_timeout_s, bool *fresh)
{
	int64_t until = now_ms() + CLAIM_WAIT_MS;
	struct gcall *stale[8];
	size_t nstale;

	for (;;) {
		struct agent *live = NULL;
		int64_t t = now_ms(), heard = 0;
		char peer[64] = "";

		nstale = 0;
		pthread_mutex_lock(&G.mu);
		for (struct agent *a = G.list; a; a = a->next) {
			if (strcmp(a->node, node))
				continue;
			if (t - a->heard_ms <= (int64_t)hb_timeout_s * 1000) {
				live = a;
				heard = t - a->heard_ms;
				snprintf(peer, sizeof(peer), "%s", a->peer);
			} else if (nstale < 8) {
				gcall_ref(a->c);
				stale[nstale++] = a->c;
			}
		}
		if (!live && !claimed(node)) {
			G.claims = mu_grow(G.claims, &G.cap_claims, G.nclaims + 1, sizeof(*G.claims));
			G.claims[G.nclaims++] = mu_strdup(node);
			pthread_mutex_unlock(&G.mu);
			break;
		}
		pthread_mutex_unlock(&G.mu);
		for (size_t i = 0; i < nstale; i++)
			gcall_unref(stale[i]);
		if (now_ms() >= until) {
			mu_warn("node=%s second agent stream from %s refused: the stream from %s is alive"
				" (heard %.1fs ago)", node, c->peer ? c->peer : "?", live ? peer : "(registering)",
				(double)heard / 1000.0);
			return taken(c, node);
		}
		usleep(20000);
	}
	/* the other replicas' streams: the database's claim, in the same wait */
	for (;;) {
		bool ok = false;
		int ret = store_agent_stream_claim(db, node, G.replica, hb_timeout_s, &ok, fresh, &c->err);

		if (ret == 0 && ok)
			break;
		if (ret == 0 && now_ms() >= until) {
			mu_warn("node=%s agent stream from %s refused: another muster-api replica holds a"
				" live stream for it", node, c->peer ? c->peer : "?");
			ret = taken(c, node);
		}
		if (ret < 0) {
			unclaim(node);
			for (size_t i = 0; i < nstale; i++)
				gcall_unref(stale[i]);
			return ret;
		}
		usleep(50000);
	}
	for (size_t i = 0; i < nstale; i++) {
		mu_warn("node=%s stale agent stream replaced by a new one from %s", node,
			c->peer ? c->peer : "?");
		gcall_stream_finish(stale[i], MU_EUNAVAIL, "replaced by a newer stream for this node");
		gcall_unref(stale[i]);
	}
	return 0;
}

static int connect_register(PGconn *db, struct gcall *c);

/* Pool worker: one live stream per node, then the registration. */
static int connect_run(PGconn *db, struct gcall *c)
{
	const Muster__V1__AgentMessage *m = (const void *)c->req;
	const char *node;
	bool fresh = false;
	int ret, hb;

	if (m->msg_case != MUSTER__V1__AGENT_MESSAGE__MSG_REGISTER)
		return mu_error_set(&c->err, MU_EINVAL, "register", "the first message must be Register");
	node = m->register_->node_name;
	if (!node || !c->who.node || strcmp(c->who.node, node))
		return connect_register(db, c); /* refused there, with the reason */
	ret = api_tls_check_node(c->call, node, &c->err); /* --tls-client-ca: cert names the node */
	if (ret < 0)
		return ret;
	ret = check_register(c, m->register_);
	if (ret < 0)
		return ret;
	hb = store_agent_heartbeat_timeout(db);
	ret = claim(db, c, node, hb, &fresh);
	if (ret < 0)
		return ret;
	ret = connect_register(db, c);
	/* a node registered just now was nobody's to claim: claim it now (a
	 * twin registering it on another replica at the same time loses) */
	if (ret == 0 && fresh) {
		bool ok = false;

		ret = store_agent_stream_claim(db, node, G.replica, hb, &ok, &fresh, &c->err);
		if (ret == 0 && !ok)
			ret = taken(c, node);
	}
	if (ret < 0) {
		struct mu_error e2 = { 0 };

		unclaim(node);
		/* the database claim too: nothing streams for the node here */
		if (store_agent_stream_release(db, G.replica, &node, 1, &e2) < 0)
			mu_warn("node=%s releasing the stream claim failed: %s", node, e2.msg);
	}
	return ret;
}

static int connect_register(PGconn *db, struct gcall *c)
{
	const Muster__V1__AgentMessage *m = (const void *)c->req;
	const Muster__V1__Register *r;
	struct store_node_reg reg = { 0 };
	struct store_gpu_reg *gpus;
	struct agent *a;
	json_t *labels;
	char *labels_txt;
	int64_t node_id = 0;
	int ret;

	if (m->msg_case != MUSTER__V1__AGENT_MESSAGE__MSG_REGISTER)
		return mu_error_set(&c->err, MU_EINVAL, "register", "the first message must be Register");
	r = m->register_;
	if (!r->node_name || !r->node_name[0] || !codec_admin_valid_text(r->node_name, CODEC_ADMIN_NODE_MAX))
		return mu_error_set(&c->err, MU_EINVAL, "register.node_name", "required (1..253 characters)");
	if (!c->who.node || strcmp(c->who.node, r->node_name))
		return mu_error_set(&c->err, MU_EFORBIDDEN, "register.node_name",
				    "this token speaks for node %.100s only", c->who.node ? c->who.node : "(none)");
	if (r->n_gpus > MAX_GPUS)
		return mu_error_set(&c->err, MU_ERANGE, "register.gpus", "at most %d GPUs", MAX_GPUS);
	gpus = mu_arena_alloc(&c->arena, (r->n_gpus + 1) * sizeof(*gpus));
	for (size_t i = 0; i < r->n_gpus; i++) {
		const Muster__V1__GpuInfo *g = r->gpus[i];

		if (g->index < 0 || g->index >= MAX_GPUS)
			return mu_error_set(&c->err, MU_ERANGE, "register.gpus.index", "must be 0..%d", MAX_GPUS - 1);
		for (size_t k = 0; k < i; k++)
			if (gpus[k].index == g->index)
				return mu_error_set(&c->err, MU_EINVAL, "register.gpus.index", "duplicate index %d",
						    g->index);
		if (!codec_admin_valid_text(g->uuid, 128) || !codec_admin_valid_text(g->model, 64))
			return mu_error_set(&c->err, MU_EINVAL, "register.gpus", "uuid/model too long or not UTF-8");
		gpus[i].index = g->index;
		gpus[i].uuid = g->uuid;
		gpus[i].model = g->model;
		gpus[i].memory_mb = g->memory_mb;
		gpus[i].healthy = true;
		gpus[i].health_reason = "";
	}
	/* a GPU found broken stays broken across agent restarts while its node
	 * is still drained (same UUID); resuming the node, then re-registering,
	 * clears it */
	{
		struct store_agent_broken_gpu *bad;
		size_t nbad;

		ret = store_agent_broken_gpus(db, &c->arena, r->node_name, &bad, &nbad, &c->err);
		if (ret < 0)
			return ret;
		for (size_t k = 0; k < nbad; k++)
			for (size_t i = 0; i < r->n_gpus; i++)
				if (gpus[i].index == bad[k].idx && !strcmp(gpus[i].uuid ? gpus[i].uuid : "", bad[k].uuid)) {
					gpus[i].healthy = false;
					gpus[i].health_reason = bad[k].reason;
				}
	}
	if ((ret = check_register(c, r)) < 0)
		return ret;
	labels = json_object();
	for (size_t i = 0; i < r->n_labels; i++) {
		json_t *v = json_string(r->labels[i]->value);

		if (!v || !codec_admin_valid_text(r->labels[i]->key, 64)) {
			json_decref(v);
			json_decref(labels);
			return mu_error_set(&c->err, MU_EINVAL, "register.labels", "keys and values must be UTF-8");
		}
		json_object_set_new(labels, r->labels[i]->key, v);
	}
	labels_txt = json_dumps(labels, JSON_COMPACT);
	json_decref(labels);
	reg.name = r->node_name;
	reg.address = r->address;
	reg.topology = r->topology;
	reg.gpu_model = r->n_gpus ? r->gpus[0]->model : "";
	reg.labels_json = labels_txt;
	reg.agent_version = r->agent_version;
	reg.gpus = gpus;
	reg.n_gpus = r->n_gpus;
	ret = store_node_register(db, &reg, &node_id, &c->err);
	free(labels_txt);
	if (ret < 0)
		return ret;
	a = mu_calloc(1, sizeof(*a));
	a->c = c;
	a->node_id = node_id;
	a->node = mu_strdup(r->node_name);
	a->hb_timeout = store_agent_heartbeat_timeout(db);
	a->token_id = c->who.token_id;
	a->heard_ms = now_ms();
	snprintf(a->peer, sizeof(a->peer), "%s", c->peer ? c->peer : "?");
	c->stream = a;
	c->stream_free = agent_free;
	mu_info("node=%s agent registered (%zu GPUs, stream from %s)", a->node, r->n_gpus,
		c->peer ? c->peer : "?");
	return 0;
}

/* ---- the stream (CQ thread) --------------------------------------------- */

static void agent_closed(struct gcall *c)
{
	struct agent **p, *a = NULL;

	pthread_mutex_lock(&G.mu);
	for (p = &G.list; *p; p = &(*p)->next) {
		if ((*p)->c == c) {
			a = *p;
			*p = a->next;
			break;
		}
	}
	/* the agent thread releases its database claim (at a stop,
	 * store_agent_replica_gone releases them all) */
	if (a && !grpc_stopping()) {
		G.released = mu_grow(G.released, &G.cap_released, G.nreleased + 1, sizeof(*G.released));
		G.released[G.nreleased++] = mu_strdup(a->node);
	}
	pthread_mutex_unlock(&G.mu);
	grpc_logs_closed(c);
	if (a) {
		mu_info("node=%s agent stream closed", a->node);
		gcall_unref(c); /* the list's */
		wake_agent_thread();
	}
}

static void on_heartbeat(struct agent *a, const Muster__V1__Heartbeat *h)
{
	struct fault *faults = NULL;

	pthread_mutex_lock(&G.mu);
	G.hb_received++;
	G.hb_nodes = mu_grow(G.hb_nodes, &G.cap_hb_nodes, G.n_hb_nodes + 1, sizeof(*G.hb_nodes));
	G.hb_nodes[G.n_hb_nodes++] = a->node_id;
	for (size_t i = 0; i < h->n_gpus && i < MAX_GPUS; i++) {
		const Muster__V1__GpuHealth *g = h->gpus[i];
		struct store_agent_gpu_hb *e;

		G.hb = mu_grow(G.hb, &G.cap_hb, G.n_hb + 1, sizeof(*G.hb));
		e = &G.hb[G.n_hb++];
		e->node_id = a->node_id;
		e->idx = g->index;
		e->mem_used_mb = g->memory_used_mb;
		e->utilization = g->utilization;
		e->temperature = g->temperature;
		e->ecc_errors = g->ecc_errors;
		e->xid = g->n_xids ? g->xids[g->n_xids - 1] : 0;
		for (size_t k = 0; k < g->n_xids; k++) {
			struct fault *f;

			if (!fatal_xid(g->xids[k]))
				continue;
			f = mu_calloc(1, sizeof(*f));
			f->node_id = a->node_id;
			snprintf(f->node, sizeof(f->node), "%s", a->node);
			f->gpu = g->index;
			f->xid = g->xids[k];
			snprintf(f->reason, sizeof(f->reason), "GPU %d reported XID %d", g->index, g->xids[k]);
			f->next = faults;
			faults = f;
		}
	}
	for (size_t i = 0; i < h->n_links; i++) {
		const Muster__V1__LinkState *l = h->links[i];
		bool known = false;
		int k;

		if (!l->iface)
			continue;
		for (k = 0; k < a->ndown; k++)
			if (!strncmp(a->down_links[k], l->iface, sizeof(a->down_links[k]) - 1))
				known = true;
		if (l->up) {
			/* forget it: a later down drains again (the operator resumes) */
			for (k = 0; k < a->ndown; k++)
				if (!strncmp(a->down_links[k], l->iface, sizeof(a->down_links[k]) - 1))
					a->down_links[k][0] = '\0';
			continue;
		}
		if (known)
			continue;
		for (k = 0; k < a->ndown && a->down_links[k][0]; k++)
			;
		if (k == a->ndown && a->ndown < 8)
			a->ndown++;
		if (k < 8)
			snprintf(a->down_links[k], sizeof(a->down_links[k]), "%s", l->iface);
		struct fault *f = mu_calloc(1, sizeof(*f));

		f->node_id = a->node_id;
		snprintf(f->node, sizeof(f->node), "%s", a->node);
		f->gpu = -1;
		snprintf(f->reason, sizeof(f->reason), "fabric link %.64s down", l->iface);
		f->next = faults;
		faults = f;
	}
	if (faults) {
		struct fault *last = faults;

		while (last->next)
			last = last->next;
		last->next = G.faults;
		G.faults = faults;
	}
	pthread_mutex_unlock(&G.mu);
	if (faults)
		wake_agent_thread();
}

static void on_run_status(struct agent *a, const Muster__V1__RunStatus *s)
{
	struct rstatus *r = mu_calloc(1, sizeof(*r));

	r->node_id = a->node_id;
	r->run_id = s->run_id;
	r->phase = s->phase;
	r->exit_code = s->exit_code;
	r->exit_signal = s->exit_signal;
	/* text the database would refuse would be retried forever (RETRY_MS) */
	r->log_path = mu_strdup(plain_text(s->log_path, 4096) && s->log_path ? s->log_path : "");
	r->message = mu_strdup(!s->message ? "" : plain_text(s->message, 1024) ? s->message
					      : "(message not UTF-8 or too long)");
	r->end_reason = mu_strdup(plain_text(s->end_reason, 64) && s->end_reason ? s->end_reason : "");
	pthread_mutex_lock(&G.mu);
	if (G.rs_tail)
		G.rs_tail->next = r;
	else
		G.rs_head = r;
	G.rs_tail = r;
	pthread_mutex_unlock(&G.mu);
	wake_agent_thread();
}

static void agent_on_msg(struct gcall *c, grpc_byte_buffer *buf)
{
	struct agent *a = c->stream;
	Muster__V1__AgentMessage *m;

	if (!buf) {
		/* half-close (the agent is leaving) or the stream broke */
		gcall_stream_finish(c, 0, NULL);
		return;
	}
	m = (Muster__V1__AgentMessage *)gcall_unpack(buf, &muster__v1__agent_message__descriptor);
	grpc_byte_buffer_destroy(buf);
	if (!m) {
		gcall_stream_finish(c, MU_EINVAL, "not a valid muster.v1.AgentMessage");
		return;
	}
	pthread_mutex_lock(&G.mu);
	a->heard_ms = now_ms(); /* alive (claim) */
	pthread_mutex_unlock(&G.mu);
	switch (m->msg_case) {
	case MUSTER__V1__AGENT_MESSAGE__MSG_HEARTBEAT:
		on_heartbeat(a, m->heartbeat);
		break;
	case MUSTER__V1__AGENT_MESSAGE__MSG_RUN_STATUS:
		if (m->run_status->run_id < 1 || m->run_status->phase < 1 || m->run_status->phase > 3) {
			protobuf_c_message_free_unpacked(&m->base, NULL);
			gcall_stream_finish(c, MU_EINVAL, "run_status: run_id and phase are required");
			return;
		}
		on_run_status(a, m->run_status);
		break;
	case MUSTER__V1__AGENT_MESSAGE__MSG_LOG_CHUNK:
		grpc_logs_on_chunk(c, m->log_chunk);
		break;
	case MUSTER__V1__AGENT_MESSAGE__MSG_REGISTER:
		protobuf_c_message_free_unpacked(&m->base, NULL);
		gcall_stream_finish(c, MU_EINVAL, "Register only once per stream");
		return;
	default:
		break; /* empty message: ignore */
	}
	protobuf_c_message_free_unpacked(&m->base, NULL);
	gcall_stream_recv(c, agent_on_msg);
}

/* Pool worker, after connect_run succeeded: ack, list, first desired state. */
static void connect_start(struct gcall *c)
{
	struct agent *a = c->stream;
	Muster__V1__ServerMessage sm = MUSTER__V1__SERVER_MESSAGE__INIT;
	Muster__V1__RegisterAck ack = MUSTER__V1__REGISTER_ACK__INIT;

	c->on_closed = agent_closed;
	gcall_stream_open(c);
	ack.node_id = a->node_id;
	ack.heartbeat_timeout_s = a->hb_timeout;
	sm.msg_case = MUSTER__V1__SERVER_MESSAGE__MSG_ACK;
	sm.ack = &ack;
	gcall_stream_send(c, &sm.base);
	a->dirty = true;
	gcall_ref(c); /* the list's */
	pthread_mutex_lock(&G.mu);
	a->heard_ms = now_ms();
	a->next = G.list;
	G.list = a;
	pthread_mutex_unlock(&G.mu);
	unclaim(a->node); /* listed now: the list answers for it */
	/* A client gone before it was listed found nothing to unlist in
	 * agent_closed(): unlist it now (whichever runs second finds nothing). */
	pthread_mutex_lock(&c->mu);
	bool gone = c->closed;
	pthread_mutex_unlock(&c->mu);
	if (gone)
		agent_closed(c);
	if (grpc_stopping())
		gcall_stream_finish(c, MU_EUNAVAIL, "server shutting down");
	wake_agent_thread();
	gcall_stream_recv(c, agent_on_msg);
}

/* ---- the agent thread: heartbeats, faults, run status ------------------- */

static void flush_heartbeats(PGconn *db)
{
	struct mu_error err = { 0 };
	struct store_agent_gpu_hb *hb;
	int64_t *nodes;
	size_t nn, nh;

	pthread_mutex_lock(&G.mu);
	nodes = G.hb_nodes;
	nn = G.n_hb_nodes;
	hb = G.hb;
	nh = G.n_hb;
	G.hb_nodes = NULL;
	G.n_hb_nodes = G.cap_hb_nodes = 0;
	G.hb = NULL;
	G.n_hb = G.cap_hb = 0;
	pthread_mutex_unlock(&G.mu);
	if (store_agent_heartbeats(db, G.replica, nodes, nn, hb, nh, &err) < 0)
		mu_warn("grpc heartbeats=%zu flush failed: %s", nn, err.msg);
	else
		G.hb_flushed += nn;
	mu_free(nodes);
	mu_free(hb);
}

/*
 * After the heartbeats (which set the owner of every node heard): the
 * database claims of streams that ended here, unless the node has a stream
 * here again (listed, or a Connect being set up: it holds the claim now).
 */
static void release_streams(PGconn *db)
{
	struct mu_error err = { 0 };
	char **names;
	size_t n = 0, kept = 0;

	pthread_mutex_lock(&G.mu);
	names = mu_calloc(G.nreleased + 1, sizeof(*names));
	for (size_t i = 0; i < G.nreleased; i++) {
		char *name = G.released[i];
		bool listed = false;

		for (struct agent *a = G.list; a && !listed; a = a->next)
			listed = !strcmp(a->node, name);
		if (listed)
			mu_free(name);
		else if (claimed(name)) /* decided once that Connect is listed or gone */
			G.released[kept++] = name;
		else
			names[n++] = name;
	}
	G.nreleased = kept;
	pthread_mutex_unlock(&G.mu);
	if (n && store_agent_stream_release(db, G.replica, (const char *const *)names, n, &err) < 0)
		mu_warn("grpc agents: releasing %zu stream claims failed: %s", n, err.msg);
	for (size_t i = 0; i < n; i++)
		mu_free(names[i]);
	mu_free(names);
}

/* While the database is unreachable heartbeats would pile up without
 * bound (1,000 nodes x 8 GPUs a second); the next ones after it is back say
 * the same, and control_plane.heard_since gives every node a whole timeout
 * to be heard again. Faults and run reports are kept (G.faults, G.rs_*). */
static void drop_heartbeats(void)
{
	pthread_mutex_lock(&G.mu);
	G.n_hb_nodes = 0;
	G.n_hb = 0;
	pthread_mutex_unlock(&G.mu);
}

static int apply_fault(PGconn *db, const struct fault *f)
{
	struct mu_error err = { 0 };
	int ret;

	mu_warn("node=%s %s: %s", f->node, f->reason,
		f->gpu >= 0 ? "GPU unhealthy, node drained" : "node drained, its gangs fail");
	ret = store_agent_fault(db, f->node_id, f->node, f->gpu, f->xid, f->reason, &err);
	if (ret < 0)
		mu_warn("node=%s fault not recorded yet (retried in %d ms): %s", f->node, RETRY_MS, err.msg);
	return ret;
}


static const char *const phase_names[] = { "", "RUNNING", "EXITED", "FAILED_TO_START" };

static void mark_dirty(int64_t node_id, const char *name)
{
	pthread_mutex_lock(&G.mu);
	for (struct agent *a = G.list; a; a = a->next)
		if ((node_id && a->node_id == node_id) || (name && !strcmp(a->node, name)) || (!node_id && !name))
			a->dirty = true;
	pthread_mutex_unlock(&G.mu);
}

/*
 * RunStatus reports in arrival order, then faults. One that fails to apply
 * (the database went away, a deadlock) goes back to the head of its queue
 * with everything after it, in order, and is tried again after RETRY_MS:
 * never dropped. Their text was made acceptable on arrival (plain_text),
 * so what fails is the database, not the report. Returns false when
 * something is left for later.
 */
static bool apply_reports(PGconn *db)
{
	struct rstatus *rs, *rs_last;
	struct fault *faults;
	bool ok = true;

	pthread_mutex_lock(&G.mu);
	rs = G.rs_head;
	G.rs_head = G.rs_tail = NULL;
	faults = G.faults;
	G.faults = NULL;
	pthread_mutex_unlock(&G.mu);
	while (rs) {
		struct rstatus *next = rs->next;
		struct store_agent_status st = { rs->node_id, rs->run_id, phase_names[rs->phase], rs->exit_code,
						  rs->exit_signal, rs->log_path, rs->message,
						  rs->end_reason };
		struct mu_error err = { 0 };

		if (store_agent_run_status(db, &st, NULL, &err) < 0) {
			mu_warn("run=%lld status %s not applied yet (retried in %d ms): %s", (long long)rs->run_id,
				phase_names[rs->phase], RETRY_MS, err.msg);
			ok = false;
			break;
		}
		mark_dirty(rs->node_id, NULL);
		mu_free(rs->log_path);
		mu_free(rs->message);
		mu_free(rs->end_reason);
		mu_free(rs);
		rs = next;
	}
	while (ok && faults) {
		struct fault *next = faults->next;

		if (apply_fault(db, faults) < 0) {
			ok = false;
			break;
		}
		mark_dirty(faults->node_id, NULL);
		mu_free(faults);
		faults = next;
	}
	if (ok)
		return true;
	/* back in front of what arrived meanwhile */
	pthread_mutex_lock(&G.mu);
	if (rs) {
		for (rs_last = rs; rs_last->next; rs_last = rs_last->next)
			;
		rs_last->next = G.rs_head;
		if (!G.rs_head)
			G.rs_tail = rs_last;
		G.rs_head = rs;
	}
	if (faults) {
		/* G.faults is pushed at its head: newer ones first, so ours go last */
		struct fault **p = &G.faults;

		while (*p)
			p = &(*p)->next;
		*p = faults;
	}
	pthread_mutex_unlock(&G.mu);
	return false;
}

/* ---- desired state ------------------------------------------------------ */

static uint64_t fnv64(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static char *S(struct mu_arena *m, const char *s)
{
	return mu_arena_strdup(m, s ? s : "");
}

static void *A(struct mu_arena *m, size_t n)
{
	return mu_arena_alloc(m, n ? n : 1);
}

/* Fills r's command/env/gang from the JSON columns. */
static void desired_json(struct mu_arena *m, Muster__V1__DesiredRun *r, const char *cmd, const char *env,
			 const char *gang)
{
	json_t *v = json_loads(cmd, JSON_DECODE_ANY, NULL), *x;
	const char *k;
	size_t i;

	if (json_is_array(v)) {
		r->command = A(m, json_array_size(v) * sizeof(char *));
		json_array_foreach(v, i, x)
			r->command[r->n_command++] = S(m, json_string_value(x));
	}
	json_decref(v);
	v = json_loads(env, JSON_DECODE_ANY, NULL);
	if (json_is_object(v)) {
		r->env = A(m, json_object_size(v) * sizeof(*r->env));
		json_object_foreach(v, k, x) {
			Muster__V1__DesiredRun__EnvEntry *e = A(m, sizeof(*e));

			muster__v1__desired_run__env_entry__init(e);
			e->key = S(m, k);
			e->value = S(m, json_string_value(x));
			r->env[r->n_env++] = e;
		}
	}
	json_decref(v);
	v = json_loads(gang, JSON_DECODE_ANY, NULL);
	if (json_is_array(v)) {
		r->nodes = A(m, json_array_size(v) * sizeof(*r->nodes));
		json_array_foreach(v, i, x) {
			Muster__V1__GangNode *gn = A(m, sizeof(*gn));

			muster__v1__gang_node__init(gn);
			gn->rank = (int32_t)json_integer_value(json_object_get(x, "rank"));
			gn->name = S(m, json_string_value(json_object_get(x, "name")));
			gn->address = S(m, json_string_value(json_object_get(x, "address")));
			gn->gpus = (int32_t)json_integer_value(json_object_get(x, "gpus"));
			r->nodes[r->n_nodes++] = gn;
		}
	}
	json_decref(v);
}

struct snap {
	struct agent *a;
	struct gcall *c;
	int64_t node_id;
	Muster__V1__DesiredState ds;
	size_t cap;
};

static void push_desired(PGconn *db, struct snap *sn, size_t n)
{
	struct store_desired_run *runs = NULL;
	struct store_desired_node *nodes = NULL;
	size_t nruns, nnodes;
	int64_t *ids = mu_calloc(n, sizeof(*ids));
	struct mu_error err = { 0 };
	struct mu_arena m;

	mu_arena_init(&m, 0);
	for (size_t i = 0; i < n; i++) {
		ids[i] = sn[i].node_id;
		muster__v1__desired_state__init(&sn[i].ds);
	}
	if (store_agent_desired(db, &m, ids, n, &runs, &nruns, &nodes, &nnodes, &err) < 0) {
		mu_warn("grpc desired state query failed: %s", err.msg);
		mark_dirty(0, NULL); /* retry next round */
		goto out;
	}
	for (size_t i = 0; i < nruns; i++) {
		const struct store_desired_run *d = &runs[i];
		Muster__V1__DesiredRun *r = A(&m, sizeof(*r));

		muster__v1__desired_run__init(r);
		r->run_id = d->run_id;
		r->job_id = d->job_id;
		r->attempt = d->attempt;
		r->job_name = S(&m, d->job_name);
		r->tenant = S(&m, d->tenant);
		r->user = S(&m, d->user);
		r->workdir = S(&m, d->workdir);
		r->procs_per_node = d->procs_per_node;
		r->node_rank = d->node_rank;
		r->gpu_indices = d->gpus;
		r->n_gpu_indices = d->n_gpus;
		r->master_addr = S(&m, d->master_addr);
		r->master_port = d->master_port;
		r->time_limit_s = d->time_limit;
		r->stop = d->stop;
		r->stop_reason = S(&m, d->stop_reason);
		r->grace_period_s = d->grace_period;
		r->gpus_per_node = d->gpus_per_node;
		r->mem_per_node = d->mem_per_node;
		r->cpus_per_node = d->cpus_per_node;
		r->unix_account = S(&m, d->unix_account);
		r->launcher = S(&m, d->launcher);
		r->min_nodes = d->min_nodes;
		r->on_shrink = S(&m, d->on_shrink);
		r->restart_count = d->restart_count;
		r->signal_name = S(&m, d->signal_name);
		r->signal_before_s = d->signal_before;
		r->signal_batch_only = d->signal_batch_only;
		r->stdout_pattern = S(&m, d->stdout_pattern);
		r->stderr_pattern = S(&m, d->stderr_pattern);
		r->array_job_id = d->array_job_id;
		r->array_task_id = d->array_task_id;
		r->array_spec = S(&m, d->array_spec);
		desired_json(&m, r, d->command_json, d->env_json, d->gang_json);
		/* the launch contract needs a rendezvous even if the scheduler left it empty */
		if (!r->master_addr[0] && r->n_nodes)
			r->master_addr = r->nodes[0]->address;
		if (!r->master_port)
			r->master_port = 20000 + (int32_t)(r->run_id % 10000);
		for (size_t k = 0; k < n; k++) {
			Muster__V1__DesiredState *ds = &sn[k].ds;

			if (sn[k].node_id != d->node_id)
				continue;
			ds->runs = mu_grow(ds->runs, &sn[k].cap, ds->n_runs + 1, sizeof(*ds->runs));
			ds->runs[ds->n_runs++] = r;
		}
	}
	for (size_t i = 0; i < nnodes; i++) {
		for (size_t k = 0; k < n; k++) {
			if (sn[k].node_id != nodes[i].node_id)
				continue;
			sn[k].ds.drain = nodes[i].drain;
			sn[k].ds.drain_reason = S(&m, nodes[i].drain_reason);
		}
	}
	for (size_t k = 0; k < n; k++) {
		Muster__V1__ServerMessage sm = MUSTER__V1__SERVER_MESSAGE__INIT;
		size_t len = protobuf_c_message_get_packed_size(&sn[k].ds.base);
		uint8_t *buf = mu_malloc(len ? len : 1);
		uint64_t h;
		bool send;

		if (len > MAX_DESIRED_BYTES) {
			/* never a partial state: runs it left out would be killed.
			 * The agent keeps the last one it got. */
			if (!sn[k].a->too_big_logged)
				mu_err("node=%s desired state of %zu runs is %zu bytes, over the %d the agent"
				       " accepts: not sent (lower settings.job_spec_max_bytes)", sn[k].a->node,
				       sn[k].ds.n_runs, len, MAX_DESIRED_BYTES);
			sn[k].a->too_big_logged = true;
			mu_free(buf);
			continue;
		}
		sn[k].a->too_big_logged = false;
		protobuf_c_message_pack(&sn[k].ds.base, buf);
		h = fnv64(buf, len);
		mu_free(buf);
		pthread_mutex_lock(&G.mu);
		send = !sn[k].a->have_hash || sn[k].a->hash != h;
		if (send) {
			sn[k].a->have_hash = true;
			sn[k].a->hash = h;
			sn[k].ds.generation = ++sn[k].a->generation;
		}
		pthread_mutex_unlock(&G.mu);
		if (!send)
			continue;
		sm.msg_case = MUSTER__V1__SERVER_MESSAGE__MSG_DESIRED;
		sm.desired = &sn[k].ds;
		if (!gcall_stream_send(sn[k].c, &sm.base))
			continue;
		mu_debug("node=%s desired generation=%lld runs=%zu", sn[k].a->node,
			 (long long)sn[k].ds.generation, sn[k].ds.n_runs);
	}
out:
	for (size_t k = 0; k < n; k++)
		mu_free(sn[k].ds.runs);
	mu_free(ids);
	mu_arena_release(&m);
}

static void push_dirty(PGconn *db)
{
	struct snap *sn = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&G.mu);
	for (struct agent *a = G.list; a; a = a->next) {
		if (!a->dirty)
			continue;
		a->dirty = false;
		sn = mu_grow(sn, &cap, n + 1, sizeof(*sn));
		memset(&sn[n], 0, sizeof(sn[n]));
		sn[n].a = a;
		sn[n].c = a->c;
		sn[n].node_id = a->node_id;
		gcall_ref(a->c); /* keeps a (the call's stream) alive */
		n++;
	}
	pthread_mutex_unlock(&G.mu);
	for (size_t off = 0; off < n; off += 500)
		push_desired(db, sn + off, n - off < 500 ? n - off : 500);
	for (size_t i = 0; i < n; i++)
		gcall_unref(sn[i].c);
	mu_free(sn);
}

/* Streams whose token was revoked (or expired) since they opened end with
 * UNAUTHENTICATED within TOKEN_CHECK_MS, like a cached REST principal. */
static void end_revoked(PGconn *db)
{
	struct mu_error err = { 0 };
	int64_t *ids = NULL, *dead = NULL;
	size_t n = 0, cap = 0, ndead = 0;

	pthread_mutex_lock(&G.mu);
	for (struct agent *a = G.list; a; a = a->next) {
		ids = mu_grow(ids, &cap, n + 1, sizeof(*ids));
		ids[n++] = a->token_id;
	}
	pthread_mutex_unlock(&G.mu);
	if (store_agent_dead_tokens(db, ids, n, &dead, &ndead, &err) < 0)
		mu_warn("grpc agents: token check failed: %s", err.msg);
	for (size_t i = 0; i < ndead; i++) {
		struct gcall *end[64];
		size_t nend = 0;

		pthread_mutex_lock(&G.mu);
		for (struct agent *a = G.list; a && nend < 64; a = a->next) {
			if (a->token_id != dead[i])
				continue;
			mu_warn("node=%s agent token %lld revoked or expired: its stream from %s ends", a->node,
				(long long)a->token_id, a->peer);
			gcall_ref(a->c);
			end[nend++] = a->c;
		}
		pthread_mutex_unlock(&G.mu);
		for (size_t k = 0; k < nend; k++) {
			gcall_stream_finish(end[k], MU_EUNAUTH, "the agent token was revoked or expired");
			gcall_unref(end[k]);
		}
	}
	mu_free(dead);
	mu_free(ids);
}

static void on_notify(void *arg, const char *channel, const char *payload)
{
	(void)arg;
	if (!strcmp(channel, "muster_agents"))
		mark_dirty(0, payload[0] ? payload : NULL);
	else if (!strncmp(payload, "node:", 5))
		mark_dirty(0, payload + 5);
}

static void *agent_main(void *arg)
{
	static const char *const channels[] = { "muster_agents", "muster_sched" };

	PGconn *db = NULL;
	int64_t next_connect = 0, next_flush = 0, next_resync = 0, next_tick = 0, next_retry = 0;
	int64_t next_token_check = 0;

	(void)arg;
	while (!grpc_stopping()) {
		struct pollfd pf[2] = { { .fd = G.wake, .events = POLLIN }, { .fd = -1 } };
		uint64_t v;
		int64_t t;

		if (!db && now_ms() >= next_connect) {
			struct mu_error err = { 0 };

			db = store_db_connect(grpc_db_url(), "muster-api:grpc-agents", &err);
			if (db && store_listen(db, channels, 2, &err) < 0) {
				store_db_close(db);
				db = NULL;
			}
			if (!db) {
				mu_warn("grpc agents db: %s", err.msg);
				next_connect = now_ms() + 1000;
			} else {
				mark_dirty(0, NULL); /* notifications may have been missed */
			}
		}
		if (db)
			pf[1] = (struct pollfd){ .fd = store_listen_fd(db), .events = POLLIN };
		poll(pf, 2, HB_FLUSH_MS);
		if (pf[0].revents & POLLIN && read(G.wake, &v, sizeof(v)) < 0)
			mu_debug("grpc agent wake read failed");
		if (!db)
			drop_heartbeats(); /* stale by the time the database is back */
		if (grpc_stopping() || !db)
			continue;
		if (store_listen_drain(db, on_notify, NULL) < 0 || !store_db_ok(db)) {
			store_db_close(db);
			db = NULL;
			continue;
		}
		t = now_ms();
		if (t >= next_tick) {
			struct mu_error err = { 0 };

			if (store_agent_cp_tick(db, G.replica, &err) < 0)
				mu_warn("grpc agents: control-plane tick failed: %s", err.msg);
			next_tick = t + CP_TICK_MS;
		}
		/* run status first, in arrival order: it changes desired states */
		if (t >= next_retry && !apply_reports(db))
			next_retry = now_ms() + RETRY_MS;
		if (t >= next_token_check) {
			end_revoked(db);
			next_token_check = t + TOKEN_CHECK_MS;
		}
		t = now_ms();
		if (t >= next_flush) {
			flush_heartbeats(db);
			next_flush = t + HB_FLUSH_MS;
		}
		release_streams(db);
		if (t >= next_resync) {
			mark_dirty(0, NULL);
			next_resync = t + G.resync_ms;
		}
		push_dirty(db);
	}
	if (db) {
		struct mu_error err = { 0 };

		flush_heartbeats(db); /* what arrived before the stop is kept */
		/* the streams end with us: another replica may take them at once */
		if (store_agent_replica_gone(db, G.replica, &err) < 0)
			mu_warn("grpc agents: releasing this replica's streams failed: %s", err.msg);
	}
	store_db_close(db);
	return NULL;
}

int grpc_agent_start(void)
{
	const char *rs = getenv("MUSTER_GRPC_RESYNC_MS");
	unsigned char rnd[6];
	char host[64] = "";

	G.resync_ms = rs && atoi(rs) > 0 ? atoi(rs) : 5000;
	/* a name for the operator (host, pid) made unique by random bytes */
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return MU_EIO;
	gethostname(host, sizeof(host) - 1);
	snprintf(G.replica, sizeof(G.replica), "%.63s-%d-%02x%02x%02x%02x%02x%02x", host, (int)getpid(),
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	G.wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (G.wake < 0)
		return MU_EIO;
	pthread_create(&G.thread, NULL, agent_main, NULL);
	G.running = true;
	return 0;
}

void grpc_agent_stop(void)
{
	struct agent *list;

	if (!G.running)
		return;
	wake_agent_thread();
	pthread_join(G.thread, NULL);
	G.running = false;
	pthread_mutex_lock(&G.mu);
	mu_info("grpc heartbeats received=%llu flushed=%llu unflushed=%zu",
		(unsigned long long)G.hb_received, (unsigned long long)G.hb_flushed, G.n_hb_nodes);
	list = G.list;
	G.list = NULL;
	pthread_mutex_unlock(&G.mu);
	while (list) {
		struct agent *next = list->next;
		struct gcall *c = list->c;

		gcall_stream_finish(c, MU_EUNAVAIL, "server shutting down");
		gcall_unref(c);
		list = next;
	}
	while (G.rs_head) {
		struct rstatus *next = G.rs_head->next;

		mu_free(G.rs_head->log_path);
		mu_free(G.rs_head->message);
		mu_free(G.rs_head->end_reason);
		mu_free(G.rs_head);
		G.rs_head = next;
	}
	G.rs_tail = NULL;
	while (G.faults) {
		struct fault *next = G.faults->next;

		mu_free(G.faults);
		G.faults = next;
	}
	for (size_t i = 0; i < G.nreleased; i++)
		mu_free(G.released[i]);
	mu_free(G.released);
	G.released = NULL;
	G.nreleased = G.cap_released = 0;
	for (size_t i = 0; i < G.nclaims; i++)
		mu_free(G.claims[i]);
	mu_free(G.claims);
	G.claims = NULL;
	G.nclaims = G.cap_claims = 0;
	mu_free(G.hb_nodes);
	mu_free(G.hb);
	G.hb_nodes = NULL;
	G.hb = NULL;
	G.n_hb = G.n_hb_nodes = G.cap_hb = G.cap_hb_nodes = 0;
	close(G.wake);
	G.wake = -1;
}

/* For the log broker (grpc_logs.c): the newest open stream of `node`. */
struct gcall *grpc_agent_find(const char *node)
{
	struct gcall *c = NULL;

	pthread_mutex_lock(&G.mu);
	for (struct agent *a = G.list; a && !c; a = a->next) {
		if (!strcmp(a->node, node)) {
			c = a->c;
			gcall_ref(c);
		}
	}
	pthread_mutex_unlock(&G.mu);
	return c;
}

const struct gmethod grpc_agent_methods[] = {
	{ "/muster.v1.AgentService/Connect", GK_BIDI, GR_AGENT, &muster__v1__agent_message__descriptor,
	  connect_run, connect_start, 0 },
	{ NULL, 0, 0, NULL, NULL, NULL, 0 },
};
