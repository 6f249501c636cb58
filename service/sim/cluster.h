/*
 * cluster.h - the simulated cluster for muster-sim: nodes with topology,
 * tenants with shares and quotas, priority classes and policy settings,
 * from flags (--gpus N, --nodes N --gpus-per-node G) or a JSON file
 * (format in docs/scheduling.md, "Cluster file").
 *
 * Ownership: struct sim_cluster owns every string and array it points to;
 * sim_cluster_init() then sim_cluster_release(). The sched_* arrays are
 * ready to be borrowed by a struct sched_snapshot.
 */
#ifndef MU_SIM_CLUSTER_H
#define MU_SIM_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sched.h"

struct sim_class {
	char *name;
	int priority;
	bool preemptible;
	int64_t grace;
};

struct sim_cluster {
	int nlevels;
	char *levels[SCHED_MAX_LEVELS];
	size_t nnodes;
	struct sched_node *nodes;     /* name/gpu_model point into strings below */
	size_t ntenants;
	struct sched_tenant *tenants; /* [0] = root */
	size_t nclasses;
	struct sim_class *classes;
	int default_class;
	struct sched_settings settings; /* reservation depth, weights... as the file says */
	bool has_depth;               /* the file set reservation_depth */
	bool has_preemption;
	bool has_predict;             /* the file set predict_runtimes */
	double half_life;             /* seconds; 0 = no decay */
	char **strings;               /* everything the structs above point to */
	size_t nstrings, cap_strings;
	size_t cap_tenants;
};

void sim_cluster_init(struct sim_cluster *c);
void sim_cluster_release(struct sim_cluster *c);

/* n nodes of g GPUs each, no topology (a flat pool when g = 1). */
void sim_cluster_uniform(struct sim_cluster *c, size_t n, int g);

/* Parses the cluster JSON in buf[0..len). 0 or MU_EJSON/MU_EPARSE/... with err. */
__attribute__((warn_unused_result))
int sim_cluster_parse(struct sim_cluster *c, const char *buf, size_t len, struct mu_error *err);

/* Index of a tenant by name, adding it under the root with shares 1 when absent. */
int sim_cluster_tenant(struct sim_cluster *c, const char *name);
int sim_cluster_find_tenant(const struct sim_cluster *c, const char *name); /* -1 if absent */
int sim_cluster_class(const struct sim_cluster *c, const char *name);      /* -1 if absent */
int sim_cluster_level(const struct sim_cluster *c, const char *name);      /* -1 if absent */
int64_t sim_cluster_gpus(const struct sim_cluster *c);
int sim_cluster_max_gpus_per_node(const struct sim_cluster *c);

#endif
