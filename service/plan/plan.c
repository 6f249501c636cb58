/* plan.c - dry-run answers from one planned snapshot. See plan.h. */
#include "plan.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "log.h"
#include "snapshot.h"
#include "store_plan.h"
#include "store_sched.h"

/*
 * One loaded plan; shared by the requests answering from it. Its rows are
 * borrowed from one of the plan's two kept snapshots (store_sched_keep:
 * loaded whole once, then refreshed with only the rows changed since), used
 * in turn: a reload refreshes the keep the current plan does not use, once
 * the older plan built from it is released (a refresh frees what the
 * keep's previous snapshot pointed to).
 */
struct entry {
	struct plan *plan;
	int refs;                   /* under plan.mu */
	int keep;                   /* the index of the keep db belongs to */
	int64_t generation;
	double loaded_ms;           /* monotonic */
	const struct store_sched_snap *db; /* borrowed from plan.keeps[keep] */
	struct scheduler_snap snap; /* borrows db */
	struct sched_explainer *x;  /* borrows snap.core */
	pthread_mutex_t probe_mu;   /* a probe uses the explainer's scratch */
};

struct plan {
	pthread_mutex_t mu;
	pthread_cond_t loaded;
	pthread_cond_t freed;       /* an entry was freed (by_keep changed) */
	struct entry *cur;
	bool loading;
	int max_age_ms;
	struct store_sched_keep *keeps[2];
	struct entry *by_keep[2];   /* the live entry borrowing each keep, or NULL; under mu */
};

static double mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Frees e (p->mu held when e was published: by_keep names it). */
static void entry_free(struct entry *e)
{
	if (!e)
		return;
	sched_explainer_free(e->x);
	scheduler_snap_release(&e->snap);
	if (e->plan->by_keep[e->keep] == e) {
		e->plan->by_keep[e->keep] = NULL;
		pthread_cond_broadcast(&e->plan->freed);
	}
	pthread_mutex_destroy(&e->probe_mu);
	mu_free(e);
}

/* Drops one reference (p->mu held). */
static void entry_unref_locked(struct entry *e)
{
	if (e && --e->refs == 0)
		entry_free(e);
}

struct plan *plan_new(const struct plan_opts *o)
{
	struct plan *p = mu_calloc(1, sizeof(*p));

	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->loaded, NULL);
	pthread_cond_init(&p->freed, NULL);
	p->max_age_ms = o && o->max_age_ms > 0 ? o->max_age_ms : 30000;
	p->keeps[0] = store_sched_keep_new();
	p->keeps[1] = store_sched_keep_new();
	return p;
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	entry_unref_locked(p->cur);
	p->cur = NULL;
	pthread_mutex_unlock(&p->mu);
	store_sched_keep_free(p->keeps[0]);
	store_sched_keep_free(p->keeps[1]);
	pthread_cond_destroy(&p->freed);
	pthread_cond_destroy(&p->loaded);
	pthread_mutex_destroy(&p->mu);
	mu_free(p);
}

/* Loads a new entry from keep k (no entry borrows it): the generation and
 * the refreshed snapshot in one read-only REPEATABLE READ view, so the
 * generation names exactly what was read. */
static int load(struct plan *p, int k, PGconn *c, struct entry **out, struct mu_error *err)
{
	struct entry *e = mu_calloc(1, sizeof(*e));
	struct store_sched_settings set;
	struct store_sched_keep_stats ks = { 0 };
	double t0 = mono_ms();
	int ret;

	pthread_mutex_init(&e->probe_mu, NULL);
	e->plan = p;
	e->keep = k;
	e->refs = 1;
	*out = NULL;
	ret = store_db_exec_simple(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
	if (ret < 0)
		goto out_free;
	ret = store_plan_generation(c, &e->generation, err);
	if (!ret)
		ret = store_sched_settings_load(c, &set, err);
	if (!ret)
		ret = store_sched_keep_refresh(c, &set, p->keeps[k], &e->db, &ks, err);
	if (ret) {
		store_db_rollback(c);
		store_sched_keep_reset(p->keeps[k]); /* half refreshed: load it whole next time */
		goto out_free;
	}
	ret = store_db_exec_simple(c, "COMMIT", err);
	if (ret < 0) {
		store_sched_keep_reset(p->keeps[k]);
		goto out_free;
	}
	ret = scheduler_snap_build(e->db, &e->snap, err);
	if (ret < 0)
		goto out_free;
	if (sched_explainer_new(&e->snap.core, &e->x)) {
		ret = mu_error_set(err, MU_EINTERNAL, "", "policy core refused the snapshot");
		goto out_free;
	}
	e->loaded_ms = mono_ms();
	mu_debug("plan: generation %lld loaded (%zu nodes, %zu pending, %zu runs; %s: %zu jobs, %zu runs,"
		 " %zu nodes read) in %.1f ms",
		 (long long)e->generation, e->db->nnodes, e->db->njobs, e->db->nruns, ks.whole ? "whole" : "changes",
		 ks.jobs, ks.runs, ks.nodes, e->loaded_ms - t0);
	*out = e;
	return 0;
out_free:
	entry_free(e);
	return ret;
}

/*
 * A referenced entry to answer from (see plan.h for the policy). `force`:
 * the kept one lacks something the request names (a tenant or class newer
 * than it), so only a plan loaded at the current generation will do.
 */
static int acquire(struct plan *p, PGconn *c, bool force, struct entry **out, bool *reloaded,
		   struct mu_error *err)
{
	int64_t gen = 0;
	struct entry *e = NULL;
	int ret = store_plan_generation(c, &gen, err);

	*out = NULL;
	*reloaded = false;
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct entry *cur = p->cur;
		bool fresh = cur && cur->generation == gen && mono_ms() - cur->loaded_ms < p->max_age_ms;

		if (cur && fresh && !force) {
			cur->refs++;
			*out = cur;
			goto out_unlock;
		}
		if (!p->loading)
			break;
		if (cur && !force) {
			/* another request reloads: answer from the plan it replaces */
			cur->refs++;
			*out = cur;
			goto out_unlock;
		}
		pthread_cond_wait(&p->loaded, &p->mu);
		force = false; /* what the other request loaded is at least as new */
	}
	p->loading = true;
	/* The keep the current plan does not borrow; the older plan built from
	 * it is released by the requests answering from it (none can take it
	 * again: they take p->cur). */
	int k = p->cur ? 1 - p->cur->keep : 0;
	while (p->by_keep[k])
		pthread_cond_wait(&p->freed, &p->mu);
	pthread_mutex_unlock(&p->mu);
	ret = load(p, k, c, &e, err);
	pthread_mutex_lock(&p->mu);
	p->loading = false;
	if (!ret) {
		p->by_keep[k] = e;
		entry_unref_locked(p->cur);
		p->cur = e;
		e->refs++; /* the caller's */
		*out = e;
		*reloaded = true;
	}
	pthread_cond_broadcast(&p->loaded);
out_unlock:
	pthread_mutex_unlock(&p->mu);
	return ret;
}

static void release(struct plan *p, struct entry *e)
{
	pthread_mutex_lock(&p->mu);
	entry_unref_locked(e);
	pthread_mutex_unlock(&p->mu);
}

static int cmp_state(const void *x, const void *y)
{
	int64_t a = ((const struct store_sched_depstate *)x)->job_id, b = ((const struct store_sched_depstate *)y)->job_id;
	return (a > b) - (a < b);
}

static bool has_class(const struct store_sched_snap *db, int64_t id)
{
	for (size_t i = 0; i < db->nclasses; i++)
		if (db->classes[i].id == id)
			return true;
	return false;
}

int plan_dry_run(struct plan *p, PGconn *c, const struct store_job *j, int64_t tenant_id, int64_t class_id,
		 const struct store_job_depstate *states, struct plan_answer *out, struct mu_error *err)
{
	size_t nd = j->ndeps;
	struct store_sched_edge *edges = mu_calloc(nd + 1, sizeof(*edges));
	struct store_sched_depstate *st = mu_calloc(nd + 1, sizeof(*st));
	struct sched_dep *deps = mu_calloc(nd + 1, sizeof(*deps));
	struct store_sched_job row = { 0 };
	struct sched_job probe;
	struct entry *e = NULL;
	bool reloaded = false;
	int ret;

	memset(out, 0, sizeof(*out));
	/* The request as a stored row, so that the one job mapper maps it. */
	row.tenant_id = tenant_id;
	row.user = (char *)(j->user ? j->user : "");
	row.gpu_model = (char *)(j->gpu_model ? j->gpu_model : "");
	row.topology_required = (char *)(j->topo_required ? j->topo_required : "");
	row.topology_preferred = (char *)(j->topo_preferred ? j->topo_preferred : "");
	row.priority_class_id = (int)class_id;
	row.nodes = (int)j->nodes;
	row.min_nodes = j->min_nodes > 0 ? (int)j->min_nodes : (int)j->nodes;
	row.gpus_per_node = (int)j->gpus_per_node;
	row.time_limit = (int)j->time_limit;
	row.dep_count = nd;
	for (size_t k = 0; k < nd; k++) {
		edges[k] = (struct store_sched_edge){ 0, states[k].job_id, STORE_SCHED_AFTEROK };
		st[k] = (struct store_sched_depstate){ states[k].job_id, (char *)states[k].state, states[k].exit_code };
	}
	if (j->dependencies && nd) {
		/* The types from the request's decoded dependencies (codec_job
		 * checked them; their job ids are j->dep_ids, in order). */
		json_t *arr = json_loads(j->dependencies, 0, NULL), *it;
		size_t k;
		json_array_foreach(arr, k, it) {
			const char *type = json_string_value(json_object_get(it, "type"));
			if (k >= nd || !type)
				continue;
			edges[k].type = !strcmp(type, "afterany")     ? STORE_SCHED_AFTERANY
					: !strcmp(type, "afternotok") ? STORE_SCHED_AFTERNOTOK
								      : STORE_SCHED_AFTEROK;
		}
		json_decref(arr);
	}
	qsort(st, nd, sizeof(*st), cmp_state);

	ret = acquire(p, c, false, &e, &reloaded, err);
	if (ret < 0)
		goto out;
	if (!reloaded && (scheduler_snap_tenant(&e->snap, tenant_id) < 0 || !has_class(e->db, class_id))) {
		release(p, e);
		e = NULL;
		ret = acquire(p, c, true, &e, &reloaded, err);
		if (ret < 0)
			goto out;
	}
	row.created_at = e->db->settings.now;
	scheduler_snap_job(&e->snap, &row, edges, st, nd, deps, &probe);
	pthread_mutex_lock(&e->probe_mu);
	ret = sched_explainer_probe(e->x, &probe, &out->planned_start, &out->reason, out->message);
	pthread_mutex_unlock(&e->probe_mu);
	if (ret) {
		ret = mu_error_set(err, MU_EINTERNAL, "", "policy core refused the probe");
		goto out;
	}
	out->feasible = out->planned_start != SCHED_NEVER;
	out->generation = e->generation;
	out->reloaded = reloaded;
out:
	if (e)
		release(p, e);
	mu_free(edges);
	mu_free(st);
	mu_free(deps);
	return ret;
}
