/*
 * admit.c - job admission checks (admit.h): pure, shared by submit, batch,
 * gRPC, dry-run and PATCH so that they answer alike.
 */
#include "admit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

static int fail(struct admit_problem *pb, int code, size_t job, enum admit_col col, size_t sub,
		const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int fail(struct admit_problem *pb, int code, size_t job, enum admit_col col, size_t sub,
		const char *fmt, ...)
{
	va_list ap;

	pb->set = true;
	pb->code = code;
	pb->job = job;
	pb->col = col;
	pb->sub = sub;
	va_start(ap, fmt);
	vsnprintf(pb->msg, sizeof(pb->msg), fmt, ap);
	va_end(ap);
	return code;
}

bool admit_scope_sees(const char *scope, const char *path)
{
	size_t n;

	if (!scope)
		return true;
	if (!path)
		return false;
	n = strlen(scope);
	return !strncmp(scope, path, n) && (path[n] == '\0' || path[n] == '/');
}

const struct admit_class *admit_class_find(const struct admit_facts *f, const char *name)
{
	for (size_t i = 0; i < f->nclasses; i++)
		if (name ? f->classes[i].name && !strcmp(f->classes[i].name, name) : f->classes[i].is_default)
			return &f->classes[i];
	return NULL;
}

/* A level is one of settings.topology_levels, a JSON array of names made
 * of [a-z0-9_-] (the codec checks the name), so the quoted name is exact. */
static bool level_known(const struct admit_facts *f, const char *level)
{
	char quoted[72];
	size_t n;

	if (!level || !*level)
		return true;
	n = strlen(level);
	if (n + 3 > sizeof(quoted) || strchr(level, '"'))
		return false;
	snprintf(quoted, sizeof(quoted), "\"%s\"", level);
	return f->levels && strstr(f->levels, quoted);
}

/* The smaller of the class's and the tenant's maximum; 0 = none. */
static int64_t time_cap(const struct admit_class *pc, const struct admit_tenant *t)
{
	int64_t cap = pc->max_time > 0 ? pc->max_time : 0;

	if (t && t->max_time > 0 && (!cap || t->max_time < cap))
		cap = t->max_time;
	return cap;
}

static int check_size(const struct admit_facts *f, const struct admit_job *j, size_t index,
		      struct admit_problem *pb)
{
	size_t lc = j->command_len, le = j->env_len, lw = j->workdir_len, sum = lc + le + lw;
	int64_t max = f->spec_max > 0 ? f->spec_max : ADMIT_SPEC_MAX;

	if (sum >= lc && (uint64_t)sum <= (uint64_t)max)
		return 0;
	/* names the largest part */
	return fail(pb, MU_ERANGE, index,
		    le >= lc && le >= lw ? ADMIT_COL_ENV : lc >= lw ? ADMIT_COL_COMMAND : ADMIT_COL_WORKDIR, 0,
		    "command + env + workdir take %zu bytes; at most %lld (settings.job_spec_max_bytes)",
		    sum, (long long)max);
}

static int check_time(const struct admit_class *pc, const struct admit_tenant *t, int64_t tl,
		      size_t index, enum admit_col col, int64_t *out, struct admit_problem *pb)
{
	int64_t cap = time_cap(pc, t);

	if (tl <= 0) {
		tl = pc->default_time;
		if (cap && tl > cap)
			tl = cap;
	} else if (cap && tl > cap) {
		return fail(pb, MU_ERANGE, index, col, 0,
			    "time limit %lld s is over the maximum of %lld seconds", (long long)tl,
			    (long long)cap);
	}
	*out = tl;
	return 0;
}

static int check_deps(const struct admit_facts *f, const struct admit_job *j, size_t index,
		      struct admit_problem *pb)
{
	for (size_t d = 0; d < j->ndeps; d++)
		if (j->self_id && j->dep_ids[d] == j->self_id)
			return fail(pb, MU_EINVAL, index, ADMIT_COL_DEPENDENCIES, 0,
				    "a job cannot depend on itself");
	for (size_t d = 0; d < j->ndeps; d++) {
		const char *path = j->dep_paths ? j->dep_paths[d] : NULL;

		if (!path || !admit_scope_sees(f->scope, path))
			return fail(pb, MU_ENOTFOUND, index, ADMIT_COL_DEPENDENCY, d, "no such job");
	}
	for (size_t d = 0; d < j->ndeps; d++)
		if (j->dep_cycles && j->dep_cycles[d])
			return fail(pb, MU_ECONFLICT, index, ADMIT_COL_DEPENDENCY, d,
				    "job %lld already depends on job %lld: the dependency would make a cycle",
				    (long long)j->dep_ids[d], (long long)j->self_id);
	return 0;
}

int admit_job(const struct admit_facts *f, const struct admit_tenant *t, const struct admit_job *j,
	      size_t index, struct admit_result *out, struct admit_problem *pb)
{
	const struct admit_class *pc;
	int ret;

	pb->set = false;
	if (!t || !admit_scope_sees(f->scope, t->path))
		return fail(pb, MU_ENOTFOUND, index, ADMIT_COL_TENANT, 0, "no such tenant");
	if ((ret = check_size(f, j, index, pb)) < 0)
		return ret;
	if (!level_known(f, j->topo_required))
		return fail(pb, MU_EINVAL, index, ADMIT_COL_TOPO_REQUIRED, 0,
			    "not a topology level of this cluster (settings.topology_levels)");
	if (!level_known(f, j->topo_preferred))
		return fail(pb, MU_EINVAL, index, ADMIT_COL_TOPO_PREFERRED, 0,
			    "not a topology level of this cluster (settings.topology_levels)");
	pc = admit_class_find(f, j->priority_class);
	if (!pc)
		return fail(pb, MU_ENOTFOUND, index, ADMIT_COL_PRIORITY_CLASS, 0, "%s",
			    j->priority_class ? "no such priority class" : "no default priority class");
	if ((ret = check_time(pc, t, j->time_limit, index, ADMIT_COL_TIME_LIMIT, &out->time_limit, pb)) < 0)
		return ret;
	if ((ret = check_deps(f, j, index, pb)) < 0)
		return ret;
	out->class_idx = (size_t)(pc - f->classes);
	return 0;
}

int admit_update(const struct admit_facts *f, const struct admit_tenant *t, const struct admit_job *j,
		 unsigned changed, struct admit_result *out, struct admit_problem *pb)
{
	const struct admit_class *pc;
	int ret;

	pb->set = false;
	if (j->min_nodes > 0 && j->min_nodes > j->nodes)
		return fail(pb, MU_ERANGE, 0,
			    changed & ADMIT_CHANGED_MIN_NODES ? ADMIT_COL_MIN_NODES : ADMIT_COL_NODES, 0,
			    "min_nodes must not exceed nodes");
	pc = admit_class_find(f, j->priority_class);
	if (!pc)
		return fail(pb, MU_ENOTFOUND, 0, ADMIT_COL_PRIORITY_CLASS, 0, "no such priority class");
	/* a stored job always has a time limit; a PATCH never asks for the default */
	if (j->time_limit <= 0)
		return fail(pb, MU_ERANGE, 0, ADMIT_COL_TIME_LIMIT, 0, "must be >= 1");
	ret = check_time(pc, t, j->time_limit, 0,
			 changed & ADMIT_CHANGED_TIME ? ADMIT_COL_TIME_LIMIT : ADMIT_COL_PRIORITY_CLASS,
			 &out->time_limit, pb);
	if (ret < 0)
		return ret;
	if ((changed & ADMIT_CHANGED_DEPS) && (ret = check_deps(f, j, 0, pb)) < 0)
		return ret;
	out->class_idx = (size_t)(pc - f->classes);
	return 0;
}

int admit_quota(const struct admit_tenant *t, int64_t adding, struct admit_problem *pb)
{
	pb->set = false;
	if (t->has_max_pending && t->pending + adding > t->max_pending)
		return fail(pb, MU_EQUOTA, 0, ADMIT_COL_NONE, 0, "tenant %s may have at most %lld pending jobs",
			    t->name, (long long)t->max_pending);
	return 0;
}
