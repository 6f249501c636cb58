/*
 * scenario.c - runs one policy-core scenario file: a cluster, running runs
 * and pending jobs, then expected decisions. Format: tests/unit/sched/README.md.
 *
 * Besides the file's expectations, every scenario is checked against the
 * rules that hold for any decisions: no GPU granted twice or while in use,
 * only UP nodes and healthy GPUs, gangs whole (min_nodes..nodes nodes of
 * gpus_per_node GPUs), required topology kept, quotas kept, reservations
 * apart from one another, a verdict for every job.
 *
 * Links the core only (libc + libm), as the core itself does.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"

#define MAXN 4096

static struct sched_node nodes[MAXN];
static char node_names[MAXN][32];
static char node_models[MAXN][32];
static size_t nnodes;
static struct sched_run runs[MAXN];
static struct sched_alloc run_alloc[MAXN][64];
static size_t nruns;
static struct sched_job jobs[MAXN];
static struct sched_dep job_deps[MAXN][8];
static char job_models[MAXN][32];
static size_t njobs;
static struct sched_tenant tenants[256];
static char tenant_names[256][32];
static struct sched_model_quota model_quotas[256][8];
static char quota_models[256][8][32];
static size_t ntenants;
static struct sched_user users[256];
static char user_names[256][32];
static size_t nusers;
static struct sched_snapshot snap;
static char levels[SCHED_MAX_LEVELS][32];
static char units[SCHED_MAX_LEVELS][MAXN][64];
static size_t nunits[SCHED_MAX_LEVELS];
static struct sched_job probe;
static bool have_probe;
static struct sched_dep probe_deps[8];
static char probe_model[32];

static const char *path;
static int line_no;
static int failures;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s:%d: ", path, line_no);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s:%d: FAIL: ", path, line_no);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	failures++;
}

static void copy(char *dst, size_t n, const char *s)
{
	size_t l = strlen(s);
	if (l >= n)
		l = n - 1;
	memcpy(dst, s, l);
	dst[l] = '\0';
}

static long long num(const char *s)
{
	char *e;
	long long v = strtoll(s, &e, 10);
	if (*s == '\0' || *e)
		die("not a number: \"%s\"", s);
	return v;
}

static int find_node(const char *n)
{
	for (size_t i = 0; i < nnodes; i++)
		if (strcmp(node_names[i], n) == 0)
			return (int)i;
	die("unknown node %s", n);
}

static int find_tenant(const char *n)
{
	for (size_t i = 0; i < ntenants; i++)
		if (strcmp(tenant_names[i], n) == 0)
			return (int)i;
	die("unknown tenant %s", n);
}

static int find_user(const char *n)
{
	for (size_t i = 0; i < nusers; i++)
		if (strcmp(user_names[i], n) == 0)
			return (int)i;
	die("unknown user %s", n);
}

static int find_level(const char *n)
{
	for (int i = 0; i < snap.settings.nlevels; i++)
		if (strcmp(levels[i], n) == 0)
			return i;
	die("unknown level %s", n);
}

static size_t find_job(long long id)
{
	for (size_t i = 0; i < njobs; i++)
		if (jobs[i].id == id)
			return i;
	die("unknown job %lld", id);
}

static size_t find_run(long long id)
{
	for (size_t i = 0; i < nruns; i++)
		if (runs[i].run_id == id)
			return i;
	die("unknown run %lld", id);
}

/* "0-3,5" -> mask */
static uint64_t gpu_list(const char *s)
{
	uint64_t m = 0;
	char buf[128];
	copy(buf, sizeof(buf), s);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(t, '-');
		long long a, b;
		if (dash) {
			*dash = '\0';
			a = num(t);
			b = num(dash + 1);
		} else {
			a = b = num(t);
		}
		if (a < 0 || b > 63 || a > b)
			die("bad GPU range %s", s);
		for (long long i = a; i <= b; i++)
			m |= (uint64_t)1 << i;
	}
	return m;
}

/* "n1:0-3+n2:0,1" -> allocation */
static size_t alloc_list(const char *s, struct sched_alloc *out, size_t max)
{
	char buf[1024];
	size_t n = 0;
	copy(buf, sizeof(buf), s);
	for (char *save = NULL, *t = strtok_r(buf, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
		char *colon = strchr(t, ':');
		if (!colon)
			die("allocation \"%s\" needs NODE:GPUS", t);
		*colon = '\0';
		if (n >= max)
			die("allocation too long");
		out[n] = (struct sched_alloc){ .node = find_node(t), .gpus = gpu_list(colon + 1) };
		n++;
	}
	return n;
}

static int unit_id(int level, const char *prefix)
{
	for (size_t i = 0; i < nunits[level]; i++)
		if (strcmp(units[level][i], prefix) == 0)
			return (int)i;
	copy(units[level][nunits[level]], sizeof(units[0][0]), prefix);
	return (int)nunits[level]++;
}

static void set_topo(struct sched_node *n, const char *topo)
{
	char buf[128];
	int l = 0;
	copy(buf, sizeof(buf), topo);
	for (int i = 0; i < SCHED_MAX_LEVELS; i++)
		n->unit[i] = -1;
	for (char *p = buf;; p++) {
		if (*p == '/' || *p == '\0') {
			char save = *p;
			*p = '\0';
			if (l >= snap.settings.nlevels)
				die("topology %s has more parts than levels", topo);
			n->unit[l] = unit_id(l, buf);
			l++;
			*p = save;
			if (!save)
				break;
		}
	}
	if (l != snap.settings.nlevels)
		die("topology %s has %d part(s), %d level(s) declared", topo, l, snap.settings.nlevels);
}

static uint64_t all(int g)
{
	return g >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << g) - 1);
}

static void add_node(const char *name, char **kv, int nkv)
{
	if (nnodes >= MAXN)
		die("too many nodes");
	struct sched_node *n = &nodes[nnodes];
	copy(node_names[nnodes], sizeof(node_names[0]), name);
	memset(n, 0, sizeof(*n));
	n->name = node_names[nnodes];
	n->gpu_model = node_models[nnodes];
	n->gpu_count = 8;
	for (int i = 0; i < SCHED_MAX_LEVELS; i++)
		n->unit[i] = -1;
	uint64_t bad = 0;
	for (int i = 0; i < nkv; i++) {
		char *k = kv[i], *v = strchr(k, '=');
		if (!v)
			die("expected key=value, got %s", k);
		*v++ = '\0';
		if (strcmp(k, "topo") == 0)
			set_topo(n, v);
		else if (strcmp(k, "gpus") == 0)
			n->gpu_count = (int)num(v);
		else if (strcmp(k, "model") == 0)
			copy(node_models[nnodes], sizeof(node_models[0]), v);
		else if (strcmp(k, "state") == 0)
			n->state = strcmp(v, "up") == 0 ? SCHED_NODE_UP : strcmp(v, "drain") == 0 ? SCHED_NODE_DRAIN
			           : strcmp(v, "down") == 0 ? SCHED_NODE_DOWN : (die("bad state %s", v), 0);
		else if (strcmp(k, "unhealthy") == 0)
			bad = gpu_list(v);
		else if (strcmp(k, "used") == 0)
			n->used |= gpu_list(v);
		else if (strcmp(k, "fabric") == 0)
			n->fabric_down = strcmp(v, "down") == 0 ? true : strcmp(v, "up") == 0 ? false
			                 : (die("bad fabric %s", v), false);
		else
			die("unknown node key %s", k);
		v[-1] = '=';
	}
	n->healthy = all(n->gpu_count) & ~bad;
	nnodes++;
}

static bool parse_bool(const char *v)
{
	return strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0;
}

static size_t parse_deps(const char *s, struct sched_dep *out)
{
	char buf[256];
	size_t n = 0;
	copy(buf, sizeof(buf), s);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char type[32], state[32];
		long long id;
		if (sscanf(t, "%31[a-z]:%lld:%31[a-z]", type, &id, state) != 3)
			die("dependency %s is not TYPE:ID:STATE", t);
		if (n >= 8)
			die("too many dependencies");
		out[n].job_id = id;
		out[n].type = strcmp(type, "afterok") == 0 ? SCHED_DEP_AFTEROK
		              : strcmp(type, "afterany") == 0 ? SCHED_DEP_AFTERANY
		              : strcmp(type, "afternotok") == 0 ? SCHED_DEP_AFTERNOTOK : (die("bad type %s", type), 0);
		out[n].state = strcmp(state, "active") == 0 ? SCHED_DEP_ACTIVE
		               : strcmp(state, "ok") == 0 ? SCHED_DEP_OK
		               : strcmp(state, "notok") == 0 ? SCHED_DEP_NOTOK
		               : strcmp(state, "missing") == 0 ? SCHED_DEP_MISSING : (die("bad state %s", state), 0);
		n++;
	}
	return n;
}

static void parse_job(struct sched_job *j, struct sched_dep *deps, char *model, long long id, char **kv, int nkv)
{
	memset(j, 0, sizeof(*j));
	j->id = id;
	j->user = -1;
	j->priority = 100;
	j->preemptible = true;
	j->nodes = 1;
	j->gpus_per_node = 1;
	j->topo_required = j->topo_preferred = -1;
	j->time_limit = 3600;
	j->gpu_model = model;
	for (int i = 0; i < nkv; i++) {
		char *k = kv[i], *v = strchr(k, '=');
		if (!v)
			die("expected key=value, got %s", k);
		*v++ = '\0';
		if (strcmp(k, "tenant") == 0)
			j->tenant = find_tenant(v);
		else if (strcmp(k, "user") == 0)
			j->user = find_user(v);
		else if (strcmp(k, "prio") == 0)
			j->priority = (int)num(v);
		else if (strcmp(k, "submit") == 0)
			j->submit = num(v);
		else if (strcmp(k, "nodes") == 0)
			j->nodes = (int)num(v);
		else if (strcmp(k, "gpn") == 0)
			j->gpus_per_node = (int)num(v);
		else if (strcmp(k, "min_nodes") == 0)
			j->min_nodes = (int)num(v);
		else if (strcmp(k, "model") == 0)
			copy(model, 32, v);
		else if (strcmp(k, "required") == 0)
			j->topo_required = find_level(v);
		else if (strcmp(k, "preferred") == 0)
			j->topo_preferred = find_level(v);
		else if (strcmp(k, "limit") == 0)
			j->time_limit = num(v);
		else if (strcmp(k, "predicted") == 0)
			j->predicted_runtime = num(v);
		else if (strcmp(k, "held") == 0)
			j->held = parse_bool(v);
		else if (strcmp(k, "array") == 0)
			j->array_job_id = num(v);
		else if (strcmp(k, "throttle") == 0)
			j->array_throttle = (int)num(v);
		else if (strcmp(k, "deps") == 0) {
			j->ndeps = parse_deps(v, deps);
			j->deps = deps;
		} else
			die("unknown job key %s", k);
		v[-1] = '=';
	}
}

static void parse_settings(char **kv, int nkv)
{
	struct sched_settings *s = &snap.settings;
	for (int i = 0; i < nkv; i++) {
		char *k = kv[i], *v = strchr(k, '=');
		if (!v)
			die("expected key=value, got %s", k);
		*v++ = '\0';
		if (strcmp(k, "order") == 0)
			s->order = strcmp(v, "fcfs") == 0 ? SCHED_ORDER_FCFS : SCHED_ORDER_MULTIFACTOR;
		else if (strcmp(k, "depth") == 0)
			s->reservation_depth = (int)num(v);
		else if (strcmp(k, "predict") == 0)
			s->predict = parse_bool(v);
		else if (strcmp(k, "preemption") == 0)
			s->preemption = parse_bool(v);
		else if (strcmp(k, "no_backfill") == 0)
			s->no_backfill = parse_bool(v);
		else if (strcmp(k, "weight_fairshare") == 0)
			s->weight_fairshare = (double)num(v);
		else if (strcmp(k, "weight_age") == 0)
			s->weight_age = (double)num(v);
		else if (strcmp(k, "weight_size") == 0)
			s->weight_size = (double)num(v);
		else if (strcmp(k, "max_age") == 0)
			s->max_age = num(v);
		else if (strcmp(k, "levels") == 0) {
			char buf[128];
			copy(buf, sizeof(buf), v);
			s->nlevels = 0;
			for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (s->nlevels >= SCHED_MAX_LEVELS)
					die("too many levels");
				copy(levels[s->nlevels], sizeof(levels[0]), t);
				s->levels[s->nlevels] = levels[s->nlevels];
				s->nlevels++;
			}
		} else
			die("unknown setting %s", k);
		v[-1] = '=';
	}
}

/* ------------------------------------------------------------ generic checks */

static struct sched_decisions dec;

static bool in_subtree(int a, int t)
{
	for (; t >= 0; t = tenants[t].parent)
		if (t == a)
			return true;
	return false;
}

/* GPUs of an allocation on nodes of `model` (NULL: every model). */
static long long gpus_on(const struct sched_alloc *a, size_t na, const char *model)
{
	long long g = 0;
	for (size_t k = 0; k < na; k++)
		if (!model || strcmp(nodes[a[k].node].gpu_model, model) == 0)
			g += __builtin_popcountll(a[k].gpus);
	return g;
}

/* Per-model max_gpus, over the subtree, on that model's nodes: only growth is checked. */
static void check_model_quotas(void)
{
	for (size_t t = 0; t < ntenants; t++)
		for (size_t k = 0; k < tenants[t].nmodel_quotas; k++) {
			const struct sched_model_quota *m = &tenants[t].model_quotas[k];
			long long before = 0, after;
			if (m->max_gpus < 0)
				continue;
			for (size_t i = 0; i < nruns; i++)
				if (in_subtree((int)t, runs[i].tenant))
					before += gpus_on(runs[i].alloc, runs[i].nalloc, m->gpu_model);
			after = before;
			for (size_t i = 0; i < dec.nstarts; i++)
				if (in_subtree((int)t, jobs[dec.starts[i].job].tenant))
					after += gpus_on(dec.starts[i].alloc, dec.starts[i].nalloc, m->gpu_model);
			if (after > m->max_gpus && after > before)
				fail("rule: tenant %s would use %lld %s GPUs, max_gpus for it %d", tenant_names[t], after,
				     m->gpu_model, m->max_gpus);
		}
}

/* The core's planning end of a running run (docs/scheduling.md, "Backfill"). */
static int64_t run_end(const struct sched_run *r)
{
	int64_t lim = r->start + (r->time_limit > 0 ? r->time_limit : 1), end = lim;
	if (snap.settings.predict && r->predicted_end > snap.now && r->predicted_end < lim)
		end = r->predicted_end;
	if (r->stopping && snap.now + r->grace < end)
		end = snap.now + r->grace;
	for (size_t i = 0; i < dec.npreemptions; i++)
		if (dec.preemptions[i].run_id == r->run_id && snap.now + r->grace < end)
			end = snap.now + r->grace;
	return end <= snap.now ? snap.now + 1 : end;
}

/* What a limit over subtree t on `model` counts at time x (runs, this cycle's starts, reservations). */
static long long use_at(int t, const char *model, int64_t x, bool *started)
{
	long long u = 0;
	*started = false;
	for (size_t i = 0; i < nruns; i++)
		if (in_subtree(t, runs[i].tenant) && run_end(&runs[i]) > x)
			u += gpus_on(runs[i].alloc, runs[i].nalloc, model);
	for (size_t i = 0; i < dec.nstarts; i++) {
		const struct sched_start *st = &dec.starts[i];
		long long g = gpus_on(st->alloc, st->nalloc, model);
		if (in_subtree(t, jobs[st->job].tenant) && st->planned_end > x && g) {
			u += g;
			*started = true;
		}
	}
	for (size_t i = 0; i < dec.nreservations; i++) {
		const struct sched_reservation *y = &dec.reservations[i];
		if (in_subtree(t, jobs[y->job].tenant) && y->start <= x && x < y->end)
			u += gpus_on(y->alloc, y->nalloc, model);
	}
	return u;
}

/*
 * A reservation holds its tenant's quota: at its planned start, no limit
 * over its tenant is exceeded because of a job this cycle started.
 */
static void check_reserved_quota(void)
{
	for (size_t r = 0; r < dec.nreservations; r++) {
		const struct sched_reservation *x = &dec.reservations[r];
		for (int t = jobs[x->job].tenant; t >= 0; t = tenants[t].parent) {
			bool started;
			if (tenants[t].max_gpus >= 0 && use_at(t, NULL, x->start, &started) > tenants[t].max_gpus && started)
				fail("rule: at job %" PRId64 "'s reserved start %" PRId64 " tenant %s would use %lld GPUs, max_gpus %d",
				     x->job_id, x->start, tenant_names[t], use_at(t, NULL, x->start, &started), tenants[t].max_gpus);
			for (size_t k = 0; k < tenants[t].nmodel_quotas; k++) {
				const struct sched_model_quota *m = &tenants[t].model_quotas[k];
				if (m->max_gpus >= 0 && use_at(t, m->gpu_model, x->start, &started) > m->max_gpus && started)
					fail("rule: at job %" PRId64 "'s reserved start tenant %s would use %lld %s GPUs, max %d",
					     x->job_id, tenant_names[t], use_at(t, m->gpu_model, x->start, &started), m->gpu_model,
					     m->max_gpus);
			}
		}
	}
}

static void check_rules(void)
{
	uint64_t *taken = calloc(nnodes + 1, sizeof(uint64_t));
	long long *tg = calloc(ntenants + 1, sizeof(long long));
	long long *tj = calloc(ntenants + 1, sizeof(long long));
	for (size_t i = 0; i < nruns; i++)
		for (int t = runs[i].tenant; t >= 0; t = tenants[t].parent) {
			for (size_t k = 0; k < runs[i].nalloc; k++)
				tg[t] += __builtin_popcountll(runs[i].alloc[k].gpus);
			tj[t]++;
		}
	if (dec.nverdicts != njobs)
		fail("rule: %zu verdicts for %zu jobs", dec.nverdicts, njobs);
	for (size_t i = 0; i < dec.nstarts; i++) {
		const struct sched_start *s = &dec.starts[i];
		const struct sched_job *j = &jobs[s->job];
		int nmin = j->min_nodes > 0 ? j->min_nodes : j->nodes;
		if (s->nalloc < (size_t)nmin || s->nalloc > (size_t)j->nodes)
			fail("rule: job %" PRId64 " got %zu nodes, asked %d..%d", j->id, s->nalloc, nmin, j->nodes);
		if (dec.verdicts[s->job].reason != SCHED_REASON_NONE)
			fail("rule: started job %" PRId64 " has reason %s", j->id, sched_reason_name(dec.verdicts[s->job].reason));
		int unit = -2;
		for (size_t k = 0; k < s->nalloc; k++) {
			const struct sched_alloc *a = &s->alloc[k];
			const struct sched_node *n = &nodes[a->node];
			if (__builtin_popcountll(a->gpus) != j->gpus_per_node)
				fail("rule: job %" PRId64 " got %d GPUs on %s", j->id, __builtin_popcountll(a->gpus), n->name);
			if (n->state != SCHED_NODE_UP || (a->gpus & ~n->healthy))
				fail("rule: job %" PRId64 " placed on a node not up or an unhealthy GPU (%s)", j->id, n->name);
			if (a->gpus & (n->used | taken[a->node]))
				fail("rule: job %" PRId64 " got a busy GPU on %s", j->id, n->name);
			if (j->gpu_model && *j->gpu_model && strcmp(j->gpu_model, n->gpu_model) != 0)
				fail("rule: job %" PRId64 " wants %s, got %s", j->id, j->gpu_model, n->gpu_model);
			taken[a->node] |= a->gpus;
			if (j->topo_required >= 0) {
				int u = n->unit[j->topo_required];
				if (unit != -2 && (u != unit || u < 0))
					fail("rule: job %" PRId64 " spans two %s units", j->id, levels[j->topo_required]);
				unit = u;
			}
			for (size_t q = 0; q < k; q++)
				if (s->alloc[q].node == a->node)
					fail("rule: job %" PRId64 " has node %s twice", j->id, n->name);
		}
		for (int t = j->tenant; t >= 0; t = tenants[t].parent) {
			tg[t] += (long long)s->nalloc * j->gpus_per_node;
			tj[t]++;
		}
		for (size_t d = 0; d < j->ndeps; d++)
			if (j->deps[d].state == SCHED_DEP_ACTIVE)
				fail("rule: job %" PRId64 " started before dependency %" PRId64 " ended", j->id, j->deps[d].job_id);
		if (j->held)
			fail("rule: held job %" PRId64 " started", j->id);
		if (j->array_throttle > 0) { /* never more than K live runs of an array */
			long long live = 0;

			for (size_t ri = 0; ri < nruns; ri++)
				live += runs[ri].array_job_id == j->array_job_id;
			for (size_t o = 0; o < dec.nstarts; o++)
				live += jobs[dec.starts[o].job].array_job_id == j->array_job_id;
			if (live > j->array_throttle)
				fail("rule: array %" PRId64 " has %lld live runs, throttle %d", j->array_job_id, live,
				     j->array_throttle);
		}
	}
	for (size_t t = 0; t < ntenants; t++) {
		/* runs already over a quota are the snapshot's business; only growth is checked */
		long long before_g = 0, before_j = 0;
		for (size_t i = 0; i < nruns; i++)
			for (int x = runs[i].tenant; x >= 0; x = tenants[x].parent)
				if ((size_t)x == t) {
					for (size_t k = 0; k < runs[i].nalloc; k++)
						before_g += __builtin_popcountll(runs[i].alloc[k].gpus);
					before_j++;
				}
		if (tenants[t].max_gpus >= 0 && tg[t] > tenants[t].max_gpus && tg[t] > before_g)
			fail("rule: tenant %s would use %lld GPUs, max_gpus %d", tenant_names[t], tg[t], tenants[t].max_gpus);
		if (tenants[t].max_running_jobs >= 0 && tj[t] > tenants[t].max_running_jobs && tj[t] > before_j)
			fail("rule: tenant %s would run %lld jobs, max %d", tenant_names[t], tj[t],
			     tenants[t].max_running_jobs);
	}
	check_model_quotas();
	check_reserved_quota();
	/* reservations never overlap one another on a GPU */
	for (size_t a = 0; a < dec.nreservations; a++)
		for (size_t b = a + 1; b < dec.nreservations; b++) {
			const struct sched_reservation *x = &dec.reservations[a], *y = &dec.reservations[b];
			if (!(x->start < y->end && y->start < x->end))
				continue;
			for (size_t i = 0; i < x->nalloc; i++)
				for (size_t k = 0; k < y->nalloc; k++)
					if (x->alloc[i].node == y->alloc[k].node && (x->alloc[i].gpus & y->alloc[k].gpus))
						fail("rule: reservations of jobs %" PRId64 " and %" PRId64 " overlap", x->job_id, y->job_id);
		}
	/* starts never take a reserved GPU before the reserved job is done with... the start */
	for (size_t a = 0; a < dec.nreservations; a++) {
		const struct sched_reservation *x = &dec.reservations[a];
		for (size_t i = 0; i < dec.nstarts; i++) {
			const struct sched_start *s = &dec.starts[i];
			if (s->planned_end <= x->start)
				continue;
			for (size_t p = 0; p < x->nalloc; p++)
				for (size_t k = 0; k < s->nalloc; k++)
					if (x->alloc[p].node == s->alloc[k].node && (x->alloc[p].gpus & s->alloc[k].gpus))
						fail("rule: job %" PRId64 " backfilled onto GPUs reserved for job %" PRId64, s->job_id,
						     x->job_id);
		}
	}
	free(taken);
	free(tg);
	free(tj);
}

/* ------------------------------------------------------------ expectations */

static const struct sched_start *start_of(long long id)
{
	for (size_t i = 0; i < dec.nstarts; i++)
		if (dec.starts[i].job_id == id)
			return &dec.starts[i];
	return NULL;
}

static const struct sched_reservation *resv_of(long long id)
{
	for (size_t i = 0; i < dec.nreservations; i++)
		if (dec.reservations[i].job_id == id)
			return &dec.reservations[i];
	return NULL;
}

static bool same_nodes(const struct sched_alloc *a, size_t na, const char *list)
{
	char buf[1024];
	size_t n = 0;
	copy(buf, sizeof(buf), list);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int node = find_node(t);
		bool found = false;
		for (size_t k = 0; k < na; k++)
			found |= a[k].node == node;
		if (!found)
			return false;
		n++;
	}
	return n == na;
}

static bool same_alloc(const struct sched_alloc *a, size_t na, const char *list)
{
	struct sched_alloc want[64];
	size_t nw = alloc_list(list, want, 64);
	if (nw != na)
		return false;
	for (size_t i = 0; i < nw; i++) {
		bool found = false;
		for (size_t k = 0; k < na; k++)
			found |= a[k].node == want[i].node && a[k].gpus == want[i].gpus;
		if (!found)
			return false;
	}
	return true;
}

static void alloc_str(const struct sched_alloc *a, size_t na, char *buf, size_t len)
{
	size_t u = 0;
	buf[0] = '\0';
	for (size_t k = 0; k < na && u < len; k++)
		u += (size_t)snprintf(buf + u, len - u, "%s%s:%#" PRIx64, k ? "+" : "", nodes[a[k].node].name, a[k].gpus);
}

static const char *kv_get(char **kv, int nkv, const char *key)
{
	size_t kl = strlen(key);
	for (int i = 0; i < nkv; i++)
		if (strncmp(kv[i], key, kl) == 0 && kv[i][kl] == '=')
			return kv[i] + kl + 1;
	return NULL;
}

static bool ran;

static bool same_allocs(const struct sched_alloc *a, const struct sched_alloc *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].node != b[i].node || a[i].gpus != b[i].gpus)
			return false;
	return true;
}

/*
 * Two decisions are the same, field by field (messages included); with
 * `unnamed`, b's reservations may come without nodes
 * (settings.unnamed_reservations).
 */
static void same_decisions(const struct sched_decisions *a, const struct sched_decisions *b, const char *how,
                           bool unnamed)
{
	bool same = a->nstarts == b->nstarts && a->npreemptions == b->npreemptions && a->nshrinks == b->nshrinks &&
	            a->nreservations == b->nreservations && a->nfails == b->nfails && a->nverdicts == b->nverdicts;
	for (size_t i = 0; same && i < a->nstarts; i++) {
		const struct sched_start *x = &a->starts[i], *y = &b->starts[i];
		same = x->job == y->job && x->planned_end == y->planned_end && x->nalloc == y->nalloc &&
		       same_allocs(x->alloc, y->alloc, x->nalloc);
	}
	for (size_t i = 0; same && i < a->npreemptions; i++)
		same = a->preemptions[i].run == b->preemptions[i].run && a->preemptions[i].run_id == b->preemptions[i].run_id &&
		       a->preemptions[i].for_job_id == b->preemptions[i].for_job_id &&
		       a->preemptions[i].reason == b->preemptions[i].reason;
	for (size_t i = 0; same && i < a->nshrinks; i++)
		same = a->shrinks[i].run == b->shrinks[i].run && a->shrinks[i].nalloc == b->shrinks[i].nalloc &&
		       same_allocs(a->shrinks[i].alloc, b->shrinks[i].alloc, a->shrinks[i].nalloc);
	for (size_t i = 0; same && i < a->nreservations; i++) {
		const struct sched_reservation *x = &a->reservations[i], *y = &b->reservations[i];
		same = x->job == y->job && x->start == y->start && x->end == y->end &&
		       ((unnamed && y->nalloc == 0) || (x->nalloc == y->nalloc && same_allocs(x->alloc, y->alloc, x->nalloc)));
	}
	for (size_t i = 0; same && i < a->nfails; i++)
		same = a->fails[i].job == b->fails[i].job && strcmp(a->fails[i].message, b->fails[i].message) == 0;
	for (size_t i = 0; same && i < a->nverdicts; i++) {
		const struct sched_verdict *x = &a->verdicts[i], *y = &b->verdicts[i];
		same = x->reason == y->reason && x->planned_start == y->planned_start && x->priority == y->priority &&
		       strcmp(x->message, y->message) == 0;
	}
	if (!same) {
		fail("rule: the decisions %s differ from those without a delta", how);
		for (size_t i = 0; i < a->nstarts && i < b->nstarts; i++) {
			char x[256], y[256];
			alloc_str(a->starts[i].alloc, a->starts[i].nalloc, x, sizeof(x));
			alloc_str(b->starts[i].alloc, b->starts[i].nalloc, y, sizeof(y));
			fprintf(stderr, "  start %zu: job %zu %s / job %zu %s\n", i, a->starts[i].job, x, b->starts[i].job, y);
		}
		for (size_t i = 0; i < a->nreservations && i < b->nreservations; i++) {
			char x[256], y[256];
			alloc_str(a->reservations[i].alloc, a->reservations[i].nalloc, x, sizeof(x));
			alloc_str(b->reservations[i].alloc, b->reservations[i].nalloc, y, sizeof(y));
			fprintf(stderr, "  resv %zu: job %zu t=%lld %s / job %zu t=%lld %s\n", i, a->reservations[i].job,
			        (long long)a->reservations[i].start, x, b->reservations[i].job,
			        (long long)b->reservations[i].start, y);
		}
		for (size_t i = 0; i < a->nverdicts && i < b->nverdicts; i++)
			if (a->verdicts[i].reason != b->verdicts[i].reason || strcmp(a->verdicts[i].message, b->verdicts[i].message))
				fprintf(stderr, "  verdict %zu: %s %s / %s %s\n", i, sched_reason_name(a->verdicts[i].reason),
				        a->verdicts[i].message, sched_reason_name(b->verdicts[i].reason), b->verdicts[i].message);
		fprintf(stderr, "  counts: starts %zu/%zu pre %zu/%zu shr %zu/%zu res %zu/%zu fail %zu/%zu\n", a->nstarts,
		        b->nstarts, a->npreemptions, b->npreemptions, a->nshrinks, b->nshrinks, a->nreservations,
		        b->nreservations, a->nfails, b->nfails);
	}
}

/*
 * delta.by_runs (muster-sim's delta): the core keeps a cycle's starts in its
 * view. The same snapshot again with an empty by_runs delta reads them back
 * (they were not reported); then the starts applied as the simulator does
 * (GPUs used, runs added, jobs gone) against a full cycle over that snapshot.
 */
static void same_by_runs(void)
{
	static struct sched_node nodes2[MAXN];
	static struct sched_run runs2[MAXN];
	static struct sched_job jobs2[MAXN];
	static size_t added[MAXN];
	struct sched_decisions d2, d3;
	struct sched_delta none = { 0 };
	none.by_runs = true;
	sched_decisions_init(&d2);
	sched_decisions_init(&d3);
	snap.delta = &none;
	for (int k = 0; k < 3; k++) { /* built, then kept starts read back twice */
		if (sched_cycle(&snap, &d2) != 0)
			die("sched_cycle by_runs: %s", d2.error);
		same_decisions(&dec, &d2, k ? "with a by_runs delta (starts read back)" : "with a by_runs delta", false);
	}
	struct sched_snapshot s2 = snap;
	memcpy(nodes2, nodes, nnodes * sizeof(*nodes));
	memcpy(runs2, runs, nruns * sizeof(*runs));
	size_t nr = nruns, nj = 0, na = 0, ncopies = d2.nstarts;
	int64_t id = 1;
	for (size_t i = 0; i < nruns; i++)
		if (runs[i].run_id >= id)
			id = runs[i].run_id + 1;
	bool *gone = calloc(njobs + 1, sizeof(bool));
	struct sched_alloc **copies = calloc(ncopies + 1, sizeof(*copies));
	for (size_t i = 0; i < d2.nstarts && nr < MAXN; i++) {
		const struct sched_start *st = &d2.starts[i];
		const struct sched_job *j = &jobs[st->job];
		copies[i] = malloc((st->nalloc + 1) * sizeof(struct sched_alloc));
		memcpy(copies[i], st->alloc, st->nalloc * sizeof(struct sched_alloc));
		for (size_t a = 0; a < st->nalloc; a++)
			nodes2[st->alloc[a].node].used |= st->alloc[a].gpus;
		gone[st->job] = true;
		added[na++] = nr;
		runs2[nr++] = (struct sched_run){ .run_id = id++, .job_id = j->id, .tenant = j->tenant, .user = j->user,
		                                  .priority = j->priority, .preemptible = j->preemptible,
		                                  .start = snap.now, .time_limit = j->time_limit,
		                                  .array_job_id = j->array_job_id, .nalloc = st->nalloc,
		                                  .alloc = copies[i] };
	}
	for (size_t i = 0; i < njobs; i++)
		if (!gone[i])
			jobs2[nj++] = jobs[i];
	s2.nodes = nodes2;
	s2.runs = runs2;
	s2.nruns = nr;
	s2.jobs = jobs2;
	s2.njobs = nj;
	struct sched_delta next = { 0, NULL, na, added, 0, NULL, true };
	s2.delta = NULL;
	if (sched_cycle(&s2, &d3) != 0)
		die("sched_cycle after the starts: %s", d3.error);
	s2.delta = &next;
	if (sched_cycle(&s2, &d2) != 0)
		die("sched_cycle by_runs after the starts: %s", d2.error);
	same_decisions(&d3, &d2, "with the starts applied by runs (by_runs)", false);
	for (size_t i = 0; i < ncopies; i++)
		free(copies[i]);
	free(copies);
	free(gone);
	snap.delta = NULL;
	sched_decisions_release(&d2);
	sched_decisions_release(&d3);
}

/*
 * The incremental view must change nothing: the same snapshot through a
 * delta (first call: the view is built; then an empty delta: it is reused;
 * then every node changed and every run removed and added again).
 */
static void same_with_delta(void)
{
	static int all_nodes[MAXN];
	static size_t all_runs[MAXN];
	static int64_t all_ids[MAXN];
	struct sched_decisions d2;
	struct sched_delta none = { 0 }, every = { nnodes, all_nodes, nruns, all_runs, nruns, all_ids, false };
	for (size_t i = 0; i < nnodes; i++)
		all_nodes[i] = (int)i;
	for (size_t i = 0; i < nruns; i++) {
		all_runs[i] = i;
		all_ids[i] = runs[i].run_id;
	}
	sched_decisions_init(&d2);
	snap.delta = &none;
	const char *how[4] = { "with a delta (view built)", "with an empty delta (view reused)",
	                       "with every node and run in the delta", "with a delta and unnamed reservations" };
	for (int k = 0; k < 4; k++) {
		snap.delta = k == 2 ? &every : &none;
		snap.settings.unnamed_reservations = k == 3;
		if (sched_cycle(&snap, &d2) != 0)
			die("sched_cycle %s: %s", how[k], d2.error);
		same_decisions(&dec, &d2, how[k], k == 3);
	}
	snap.delta = NULL;
	snap.settings.unnamed_reservations = false;
	sched_decisions_release(&d2);
	same_by_runs();
}

static void run_core(void)
{
	if (ran)
		return;
	snap.nnodes = nnodes;
	snap.nodes = nodes;
	snap.nruns = nruns;
	snap.runs = runs;
	snap.njobs = njobs;
	snap.jobs = jobs;
	snap.ntenants = ntenants;
	snap.tenants = tenants;
	snap.nusers = nusers;
	snap.users = users;
	if (sched_cycle(&snap, &dec) != 0)
		die("sched_cycle: %s", dec.error);
	check_rules();
	same_with_delta();
	ran = true;
}

static void expect(char **w, int nw)
{
	if (nw < 2)
		die("expect what?");
	run_core();
	const char *what = w[0];
	char got[512];
	if (strcmp(what, "start") == 0) {
		long long id = num(w[1]);
		const struct sched_start *s = start_of(id);
		if (!s) {
			size_t j = find_job(id);
			fail("job %lld should start; reason %s: %s", id, sched_reason_name(dec.verdicts[j].reason),
			     dec.verdicts[j].message);
			return;
		}
		const char *nl = kv_get(w + 2, nw - 2, "nodes"), *gl = kv_get(w + 2, nw - 2, "gpus");
		const char *cnt = kv_get(w + 2, nw - 2, "count");
		alloc_str(s->alloc, s->nalloc, got, sizeof(got));
		if (nl && !same_nodes(s->alloc, s->nalloc, nl))
			fail("job %lld should start on nodes %s, got %s", id, nl, got);
		if (gl && !same_alloc(s->alloc, s->nalloc, gl))
			fail("job %lld should start on %s, got %s", id, gl, got);
		if (cnt && (long long)s->nalloc != num(cnt))
			fail("job %lld should get %s node(s), got %zu", id, cnt, s->nalloc);
	} else if (strcmp(what, "nostart") == 0) {
		long long id = num(w[1]);
		if (start_of(id))
			fail("job %lld should not start", id);
	} else if (strcmp(what, "reason") == 0) {
		if (nw < 3)
			die("expect reason JOB NAME");
		long long id = num(w[1]);
		size_t j = find_job(id);
		const struct sched_verdict *v = &dec.verdicts[j];
		if (strcmp(sched_reason_name(v->reason), w[2]) != 0)
			fail("job %lld reason should be %s, got %s (%s)", id, w[2], sched_reason_name(v->reason), v->message);
		const char *st = kv_get(w + 3, nw - 3, "start");
		if (st && v->planned_start != num(st))
			fail("job %lld planned start should be %s, got %" PRId64, id, st, v->planned_start);
		if (!v->message[0])
			fail("job %lld has no message", id);
		/* message= is the rest of the line, its words joined by one space */
		char msg[512] = "";
		int from = nw;
		for (int k = 3; k < nw && from == nw; k++)
			if (strncmp(w[k], "message=", 8) == 0)
				from = k;
		for (int k = from; k < nw; k++) {
			const char *word = k == from ? w[k] + 8 : w[k];
			if (strlen(msg) + strlen(word) + 2 > sizeof(msg))
				die("message= too long");
			if (k > from)
				strcat(msg, " ");
			strcat(msg, word);
		}
		if (msg[0] && !strstr(v->message, msg))
			fail("job %lld message should mention \"%s\": %s", id, msg, v->message);
	} else if (strcmp(what, "reserve") == 0) {
		long long id = num(w[1]);
		const struct sched_reservation *r = resv_of(id);
		if (!r) {
			fail("job %lld should have a reservation", id);
			return;
		}
		const char *st = kv_get(w + 2, nw - 2, "start"), *nl = kv_get(w + 2, nw - 2, "nodes");
		const char *gl = kv_get(w + 2, nw - 2, "gpus");
		alloc_str(r->alloc, r->nalloc, got, sizeof(got));
		if (st && r->start != num(st))
			fail("job %lld reservation should start at %s, got %" PRId64, id, st, r->start);
		if (nl && !same_nodes(r->alloc, r->nalloc, nl))
			fail("job %lld reservation should be on %s, got %s", id, nl, got);
		if (gl && !same_alloc(r->alloc, r->nalloc, gl))
			fail("job %lld reservation should be on %s, got %s", id, gl, got);
	} else if (strcmp(what, "noreserve") == 0) {
		if (resv_of(num(w[1])))
			fail("job %s should have no reservation", w[1]);
	} else if (strcmp(what, "preempt") == 0) {
		long long id = num(w[1]);
		find_run(id);
		const struct sched_preemption *p = NULL;
		for (size_t i = 0; i < dec.npreemptions; i++)
			if (dec.preemptions[i].run_id == id)
				p = &dec.preemptions[i];
		if (!p) {
			fail("run %lld should be preempted", id);
			return;
		}
		const char *f = kv_get(w + 2, nw - 2, "for"), *r = kv_get(w + 2, nw - 2, "reason");
		if (f && p->for_job_id != num(f))
			fail("run %lld preempted for job %" PRId64 ", expected %s", id, p->for_job_id, f);
		if (r && strcmp(sched_preempt_reason_name(p->reason), r) != 0)
			fail("run %lld preempted for reason %s, expected %s", id, sched_preempt_reason_name(p->reason), r);
	} else if (strcmp(what, "nopreempt") == 0) {
		long long id = num(w[1]);
		for (size_t i = 0; i < dec.npreemptions; i++)
			if (dec.preemptions[i].run_id == id)
				fail("run %lld should not be preempted", id);
	} else if (strcmp(what, "npreempt") == 0) {
		if ((long long)dec.npreemptions != num(w[1]))
			fail("%zu preemptions, expected %s", dec.npreemptions, w[1]);
	} else if (strcmp(what, "nstarts") == 0) {
		if ((long long)dec.nstarts != num(w[1]))
			fail("%zu starts, expected %s", dec.nstarts, w[1]);
	} else if (strcmp(what, "fail") == 0) {
		long long id = num(w[1]);
		bool found = false;
		for (size_t i = 0; i < dec.nfails; i++)
			found |= dec.fails[i].job_id == id && dec.fails[i].message[0];
		if (!found)
			fail("job %lld should fail", id);
	} else if (strcmp(what, "shrink") == 0) {
		long long id = num(w[1]);
		const char *nl = kv_get(w + 2, nw - 2, "nodes");
		const struct sched_shrink *s = NULL;
		for (size_t i = 0; i < dec.nshrinks; i++)
			if (dec.shrinks[i].run_id == id)
				s = &dec.shrinks[i];
		if (!s) {
			fail("run %lld should shrink", id);
			return;
		}
		alloc_str(s->alloc, s->nalloc, got, sizeof(got));
		if (nl && !same_nodes(s->alloc, s->nalloc, nl))
			fail("run %lld should keep %s, got %s", id, nl, got);
	} else if (strcmp(what, "probe") == 0) {
		if (!have_probe)
			die("no probe declared");
		int64_t t;
		enum sched_reason r;
		char msg[160];
		if (sched_explain(&snap, &probe, &t, &r, msg) != 0)
			die("sched_explain failed");
		const char *st = kv_get(w + 1, nw - 1, "start"), *rs = kv_get(w + 1, nw - 1, "reason");
		if (st && t != (strcmp(st, "never") == 0 ? SCHED_NEVER : num(st)))
			fail("probe should start at %s, got %" PRId64 " (%s)", st, t, msg);
		if (rs && strcmp(sched_reason_name(r), rs) != 0)
			fail("probe reason should be %s, got %s (%s)", rs, sched_reason_name(r), msg);
		/* the dry run must not change the plan */
		struct sched_decisions again;
		sched_decisions_init(&again);
		if (sched_cycle(&snap, &again) != 0 || again.nstarts != dec.nstarts ||
		    again.nreservations != dec.nreservations)
			fail("the dry run changed the plan");
		sched_decisions_release(&again);
	} else {
		die("unknown expectation %s", what);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s SCENARIO\n", argv[0]);
		return 2;
	}
	path = argv[1];
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		return 2;
	}
	memset(&snap, 0, sizeof(snap));
	snap.settings.order = SCHED_ORDER_FCFS;
	snap.settings.reservation_depth = 1;
	snap.settings.max_age = 604800;
	tenants[0] = (struct sched_tenant){ "root", -1, 1, 0, 0, -1, -1, 0, NULL };
	copy(tenant_names[0], sizeof(tenant_names[0]), "root");
	tenants[0].name = tenant_names[0];
	ntenants = 1;
	sched_decisions_init(&dec);
	char line[2048];
	int nexpect = 0;
	while (fgets(line, sizeof(line), f)) {
		line_no++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *w[64];
		int nw = 0;
		for (char *save = NULL, *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
			if (nw >= 64)
				die("too many words");
			w[nw++] = t;
		}
		if (nw == 0)
			continue;
		if (strcmp(w[0], "expect") == 0) {
			expect(w + 1, nw - 1);
			nexpect++;
			continue;
		}
		if (ran)
			die("declarations must come before expectations");
		if (strcmp(w[0], "now") == 0 && nw == 2) {
			snap.now = num(w[1]);
		} else if (strcmp(w[0], "settings") == 0) {
			parse_settings(w + 1, nw - 1);
		} else if (strcmp(w[0], "tenant") == 0 && nw >= 2) {
			struct sched_tenant *t = &tenants[ntenants];
			copy(tenant_names[ntenants], sizeof(tenant_names[0]), w[1]);
			*t = (struct sched_tenant){ tenant_names[ntenants], 0, 1, 0, 0, -1, -1, 0, NULL };
			for (int i = 2; i < nw; i++) {
				char *v = strchr(w[i], '=');
				if (!v)
					die("expected key=value");
				*v++ = '\0';
				if (strcmp(w[i], "parent") == 0)
					t->parent = find_tenant(v);
				else if (strcmp(w[i], "shares") == 0)
					t->shares = (double)num(v);
				else if (strcmp(w[i], "usage") == 0)
					t->usage = (double)num(v);
				else if (strcmp(w[i], "guaranteed") == 0)
					t->guaranteed_gpus = (int)num(v);
				else if (strcmp(w[i], "max_gpus") == 0)
					t->max_gpus = (int)num(v);
				else if (strcmp(w[i], "max_jobs") == 0)
					t->max_running_jobs = (int)num(v);
				else
					die("unknown tenant key %s", w[i]);
			}
			ntenants++;
		} else if (strcmp(w[0], "quota") == 0 && nw >= 3) {
			int t = find_tenant(w[1]);
			size_t k = tenants[t].nmodel_quotas;
			if (k >= 8)
				die("too many model quotas");
			struct sched_model_quota *m = &model_quotas[t][k];
			*m = (struct sched_model_quota){ NULL, 0, -1 };
			for (int i = 2; i < nw; i++) {
				char *v = strchr(w[i], '=');
				if (!v)
					die("expected key=value");
				*v++ = '\0';
				if (strcmp(w[i], "model") == 0) {
					copy(quota_models[t][k], sizeof(quota_models[0][0]), v);
					m->gpu_model = quota_models[t][k];
				} else if (strcmp(w[i], "guaranteed") == 0)
					m->guaranteed_gpus = (int)num(v);
				else if (strcmp(w[i], "max_gpus") == 0)
					m->max_gpus = (int)num(v);
				else
					die("unknown quota key %s", w[i]);
			}
			if (!m->gpu_model)
				die("quota needs model=");
			tenants[t].model_quotas = model_quotas[t];
			tenants[t].nmodel_quotas = k + 1;
		} else if (strcmp(w[0], "user") == 0 && nw >= 2) {
			struct sched_user *u = &users[nusers];
			copy(user_names[nusers], sizeof(user_names[0]), w[1]);
			*u = (struct sched_user){ user_names[nusers], 0, 1, 0, 0, { 0, 0 } };
			for (int i = 2; i < nw; i++) {
				char *v = strchr(w[i], '=');
				if (!v)
					die("expected key=value");
				*v++ = '\0';
				if (strcmp(w[i], "tenant") == 0)
					u->tenant = find_tenant(v);
				else if (strcmp(w[i], "shares") == 0)
					u->shares = (double)num(v);
				else if (strcmp(w[i], "usage") == 0)
					u->usage = (double)num(v);
				else if (strcmp(w[i], "recent") == 0) {
					long long a = 0, b = 0;
					int n = sscanf(v, "%lld,%lld", &a, &b);
					u->nrecent = n;
					u->recent_runtime[0] = a;
					u->recent_runtime[1] = b;
				} else
					die("unknown user key %s", w[i]);
			}
			nusers++;
		} else if (strcmp(w[0], "node") == 0 && nw >= 2) {
			add_node(w[1], w + 2, nw - 2);
		} else if (strcmp(w[0], "nodes") == 0 && nw >= 3) {
			long long n = num(w[2]);
			char name[32];
			for (long long i = 1; i <= n; i++) {
				char *kv[32];
				char store[32][128];
				int nkv = nw - 3 < 32 ? nw - 3 : 32;
				for (int k = 0; k < nkv; k++) {
					copy(store[k], sizeof(store[k]), w[3 + k]);
					kv[k] = store[k];
				}
				snprintf(name, sizeof(name), "%s%lld", w[1], i);
				add_node(name, kv, nkv);
			}
		} else if (strcmp(w[0], "run") == 0 && nw >= 2) {
			if (nruns >= MAXN)
				die("too many runs");
			struct sched_run *r = &runs[nruns];
			memset(r, 0, sizeof(*r));
			r->run_id = num(w[1]);
			r->job_id = r->run_id;
			r->user = -1;
			r->priority = 100;
			r->preemptible = true;
			r->time_limit = 3600;
			for (int i = 2; i < nw; i++) {
				char *v = strchr(w[i], '=');
				if (!v)
					die("expected key=value");
				*v++ = '\0';
				if (strcmp(w[i], "job") == 0)
					r->job_id = num(v);
				else if (strcmp(w[i], "tenant") == 0)
					r->tenant = find_tenant(v);
				else if (strcmp(w[i], "user") == 0)
					r->user = find_user(v);
				else if (strcmp(w[i], "prio") == 0)
					r->priority = (int)num(v);
				else if (strcmp(w[i], "preemptible") == 0)
					r->preemptible = parse_bool(v);
				else if (strcmp(w[i], "stopping") == 0)
					r->stopping = parse_bool(v);
				else if (strcmp(w[i], "start") == 0)
					r->start = num(v);
				else if (strcmp(w[i], "limit") == 0)
					r->time_limit = num(v);
				else if (strcmp(w[i], "predicted_end") == 0)
					r->predicted_end = num(v);
				else if (strcmp(w[i], "grace") == 0)
					r->grace = num(v);
				else if (strcmp(w[i], "min_nodes") == 0)
					r->min_nodes = (int)num(v);
				else if (strcmp(w[i], "array") == 0)
					r->array_job_id = num(v);
				else if (strcmp(w[i], "alloc") == 0) {
					r->nalloc = alloc_list(v, run_alloc[nruns], 64);
					r->alloc = run_alloc[nruns];
				} else
					die("unknown run key %s", w[i]);
			}
			for (size_t k = 0; k < r->nalloc; k++) {
				if (nodes[r->alloc[k].node].used & r->alloc[k].gpus)
					die("run %lld: GPUs already used", (long long)r->run_id);
				nodes[r->alloc[k].node].used |= r->alloc[k].gpus;
			}
			nruns++;
		} else if (strcmp(w[0], "job") == 0 && nw >= 2) {
			if (njobs >= MAXN)
				die("too many jobs");
			parse_job(&jobs[njobs], job_deps[njobs], job_models[njobs], num(w[1]), w + 2, nw - 2);
			njobs++;
		} else if (strcmp(w[0], "probe") == 0) {
			parse_job(&probe, probe_deps, probe_model, 0, w + 1, nw - 1);
			have_probe = true;
		} else {
			die("unknown declaration %s", w[0]);
		}
	}
	fclose(f);
	run_core();
	sched_decisions_release(&dec);
	if (nexpect == 0)
		die("a scenario needs at least one expectation");
	if (failures) {
		fprintf(stderr, "%s: %d failure(s)\n", path, failures);
		return 1;
	}
	printf("%s: ok (%d expectations)\n", path, nexpect);
	return 0;
}
