/*
 * admit.h - job admission: the checks a job must pass against the
 * cluster's stored state before it is written (submit, batch, gRPC), planned
 * without writing (dry-run) or changed (PATCH). Pure (libc only): the caller
 * gathers the facts (tenant, priority classes, the jobs dependencies name,
 * settings caps) and gets back at most one problem per check, named by
 * (job index, column), never by an API field name: the API names fields
 * (api/codec_job.c codec_job_problem_field), the store never does.
 *
 * Checks, in this order, the first failure being the answer:
 *   tenant      the named tenant exists and the caller's scope sees it
 *   size        command + env + workdir <= settings.job_spec_max_bytes
 *   topology    required, then preferred, is a level of settings.topology_levels
 *   class       the named class exists (NULL: the default class exists)
 *   time limit  <= min(class max, tenant max); 0 takes the class default, capped
 *   dependencies  each names a job the scope sees (and, in a PATCH, not itself
 *               nor a job that already depends on it: a cycle is MU_ECONFLICT)
 * and, per request, the tenant's quota on pending jobs (admit_quota).
 *
 * Strings are borrowed; nothing is allocated.
 */
#ifndef MU_ADMIT_H
#define MU_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* settings.job_spec_max_bytes when unset or not positive */
#define ADMIT_SPEC_MAX 65536

/* The stored column (of jobs, or the job as a whole) a problem is about. */
enum admit_col {
	ADMIT_COL_NONE = 0,       /* the request as a whole (the quota) */
	ADMIT_COL_TENANT,
	ADMIT_COL_PRIORITY_CLASS,
	ADMIT_COL_TIME_LIMIT,
	ADMIT_COL_TOPO_REQUIRED,
	ADMIT_COL_TOPO_PREFERRED,
	ADMIT_COL_COMMAND,
	ADMIT_COL_ENV,
	ADMIT_COL_WORKDIR,
	ADMIT_COL_DEPENDENCY,     /* one edge: `sub` is its index */
	ADMIT_COL_DEPENDENCIES,   /* the list as a whole */
	ADMIT_COL_NODES,
	ADMIT_COL_MIN_NODES,
	ADMIT_NCOLS
};

struct admit_problem {
	bool set;           /* false: no problem */
	int code;           /* negative MU_E* */
	size_t job;         /* index of the job in its request */
	enum admit_col col;
	size_t sub;         /* ADMIT_COL_DEPENDENCY: the edge's index */
	char msg[192];
};

struct admit_tenant {
	const char *name;
	const char *path;   /* "root/ml" */
	bool has_max_pending;
	int64_t max_pending;
	int64_t max_time;   /* quota max_time_limit, 0 = none */
	int64_t pending;    /* pending jobs now (plus those the caller accepted since) */
};

struct admit_class {
	const char *name;
	int64_t default_time;
	int64_t max_time;   /* 0 = none */
	bool is_default;
};

/* What every check of a job reads besides the job. */
struct admit_facts {
	const char *scope;  /* the caller's subtree, NULL = all */
	const struct admit_class *classes;
	size_t nclasses;
	const char *levels; /* settings.topology_levels as JSON text, NULL = none */
	int64_t spec_max;   /* <= 0: ADMIT_SPEC_MAX */
};

/* What the checks read of a decoded job. */
struct admit_job {
	const char *priority_class;  /* NULL = the default class */
	int64_t time_limit;          /* 0 = the class default */
	const char *topo_required;   /* NULL or "" = unset */
	const char *topo_preferred;
	size_t command_len, env_len, workdir_len; /* as stored JSON text */
	const int64_t *dep_ids;
	const char *const *dep_paths; /* the tenant path of each dep_ids[d]; NULL = no such job */
	size_t ndeps;
	int64_t nodes, min_nodes;    /* a PATCH (min_nodes 0 = not elastic) */
	int64_t self_id;             /* a PATCH: the job itself (may not be a dependency); 0 = none */
	const bool *dep_cycles;      /* a PATCH: per edge, the job it names already depends,
				      * directly or not, on the job itself; NULL = none */
};

/* What a job that passed gets resolved to. */
struct admit_result {
	size_t class_idx;            /* into facts.classes */
	int64_t time_limit;          /* the default applied */
};

/* Does `scope` (NULL = all) see tenant path `path`? */
bool admit_scope_sees(const char *scope, const char *path);

/* The class `name` names (NULL: the default one), or NULL. */
const struct admit_class *admit_class_find(const struct admit_facts *f, const char *name);

/*
 * Every check above for job `index` of a request, whose tenant is `t`
 * (NULL: no tenant of that name). Returns 0 with *out filled, or the
 * problem's code with *pb filled.
 */
int admit_job(const struct admit_facts *f, const struct admit_tenant *t, const struct admit_job *j,
	      size_t index, struct admit_result *out, struct admit_problem *pb);

/* What a PATCH changes, for admit_update (bits). */
enum {
	ADMIT_CHANGED_TIME = 1,      /* the time limit (else an over-the-cap limit is the class's problem) */
	ADMIT_CHANGED_DEPS = 2,      /* the dependencies: j->ndeps edges are checked */
	ADMIT_CHANGED_MIN_NODES = 4, /* min_nodes (else min_nodes > nodes is the nodes' problem) */
};

/*
 * A PATCH of a pending job of tenant `t`: the checks of the fields it
 * changes (`changed`, ADMIT_CHANGED_*). `j` holds the job after the change
 * (its nodes, min_nodes, class and time limit, changed or not): first
 * min_nodes <= nodes, then the class and time limit, then the dependencies.
 */
int admit_update(const struct admit_facts *f, const struct admit_tenant *t, const struct admit_job *j,
		 unsigned changed, struct admit_result *out, struct admit_problem *pb);

/* The tenant's quota on pending jobs when a request adds `adding` to it
 * (t->pending counts what is pending already). */
int admit_quota(const struct admit_tenant *t, int64_t adding, struct admit_problem *pb);

#endif
