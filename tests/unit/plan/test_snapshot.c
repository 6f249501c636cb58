/*
 * test_snapshot.c - service/plan's mapping of stored rows to the core's
 * snapshot: topology units from node paths (a unit per distinct prefix of
 * level+1 components, named by its first node in path order; equal rack
 * names under different blocks are different racks; a prefix of another
 * path is not the same unit; a path too short for a level or empty: -1),
 * and each job's and run's user (the (tenant, name) pair it names, in the
 * snapshot's sorted user list), on random rows checked against a direct
 * computation here.
 * usage: test_plan_snapshot [ITERATIONS] [SEED]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"
#include "store_sched.h"

#include "../prop_rng.h"

#define MAXN 64
#define MAXJ 96

static int fails;

#define CHECK(cond, ...)                                  \
	do {                                              \
		if (!(cond)) {                            \
			fprintf(stderr, __VA_ARGS__);     \
			fputc('\n', stderr);              \
			fails++;                          \
		}                                         \
	} while (0)

/* The first lv+1 components of path, or -1 (too short, empty). */
static int prefix_len(const char *path, int lv)
{
	const char *e = path;
	if (!*path)
		return -1;
	for (int comp = 0;; comp++) {
		const char *slash = strchr(e, '/');
		if (comp == lv)
			return (int)((slash ? slash : e + strlen(e)) - path);
		if (!slash)
			return -1;
		e = slash + 1;
	}
}

/* The unit id the mapping must give node i at level lv: the first node
 * (smallest index) of those whose path has the same prefix. */
static int want_unit(const struct store_sched_node *nodes, size_t n, size_t i, int lv)
{
	int li = prefix_len(nodes[i].topology, lv);
	if (li < 0)
		return -1;
	for (size_t k = 0; k < n; k++)
		if (prefix_len(nodes[k].topology, lv) == li && !memcmp(nodes[k].topology, nodes[i].topology, (size_t)li))
			return (int)k;
	return -1;
}

static void one(int it)
{
	static const char *blocks[] = { "b1", "b2", "b10", "block-1" };
	static const char *racks[] = { "r1", "r10", "r2", "rack-1" };
	static const char *users[] = { "alice", "bob", "al", "alice2", "" };
	char topo[MAXN][32], uname[MAXJ * 2][16];
	struct store_sched_node nodes[MAXN];
	struct store_sched_job jobs[MAXJ];
	struct store_sched_run runs[MAXJ];
	struct store_sched_tenant tenants[3] = { { 1, 0, "root", 1 }, { 2, 1, "a", 1 }, { 3, 1, "b", 1 } };
	struct store_sched_snap db;
	struct scheduler_snap s;
	struct mu_error err = { 0 };
	size_t nn = 1 + rnd(MAXN), nj = rnd(MAXJ), nr = rnd(MAXJ);

	memset(&db, 0, sizeof(db));
	memset(nodes, 0, sizeof(nodes));
	memset(jobs, 0, sizeof(jobs));
	memset(runs, 0, sizeof(runs));
	db.settings.nlevels = 1 + (int)rnd(3);
	strcpy(db.settings.levels[0], "block");
	strcpy(db.settings.levels[1], "rack");
	strcpy(db.settings.levels[2], "node");
	for (size_t i = 0; i < nn; i++) {
		switch (rnd(6)) {
		case 0: topo[i][0] = '\0'; break;
		case 1: snprintf(topo[i], sizeof(topo[i]), "%s", blocks[rnd(4)]); break;
		default:
			snprintf(topo[i], sizeof(topo[i]), "%s/%s%s", blocks[rnd(4)], racks[rnd(4)], rnd(3) ? "" : "/x");
		}
		nodes[i] = (struct store_sched_node){ .id = 100 + (int64_t)i, .name = "n", .address = "",
						      .topology = topo[i], .gpu_model = "h100", .gpu_count = 8,
						      .up = true, .healthy_mask = 0xff };
	}
	/* Users as separate strings, as rows come: equal names, other pointers. */
	for (size_t i = 0; i < nj; i++) {
		snprintf(uname[i], sizeof(uname[i]), "%s", users[rnd(5)]);
		jobs[i] = (struct store_sched_job){ .id = 1000 + (int64_t)i, .tenant_id = 2 + rnd(2), .user = uname[i],
						    .gpu_model = "", .topology_required = "", .topology_preferred = "",
						    .dependencies = "[]", .pending_reason = "", .pending_message = "",
						    .nodes = 1, .gpus_per_node = 1, .time_limit = 60 };
	}
	for (size_t i = 0; i < nr; i++) {
		snprintf(uname[MAXJ + i], sizeof(uname[0]), "%s", users[rnd(5)]);
		runs[i] = (struct store_sched_run){ .id = 1 + (int64_t)i, .job_id = 5000 + (int64_t)i,
						    .tenant_id = rnd(8) ? 2 + rnd(2) : 99 /* no such tenant */,
						    .user = uname[MAXJ + i], .nodes = 1, .gpus_per_node = 1,
						    .time_limit = 60 };
	}
	db.nodes = nodes;
	db.nnodes = nn;
	db.jobs = jobs;
	db.njobs = nj;
	db.runs = runs;
	db.nruns = nr;
	db.tenants = tenants;
	db.ntenants = 3;
	if (scheduler_snap_build(&db, &s, &err) != 0) {
		CHECK(0, "iteration %d: build failed: %s", it, err.msg);
		return;
	}
	for (size_t i = 0; i < nn; i++)
		for (int lv = 0; lv < SCHED_MAX_LEVELS; lv++) {
			int want = lv < db.settings.nlevels ? want_unit(nodes, nn, i, lv) : -1;
			CHECK(s.core.nodes[i].unit[lv] == want, "iteration %d: node %zu \"%s\" level %d: unit %d, want %d",
			      it, i, topo[i], lv, s.core.nodes[i].unit[lv], want);
		}
	for (size_t i = 0; i < nj; i++) {
		int u = s.core.jobs[i].user;
		int t = s.core.jobs[i].tenant;
		CHECK(u >= 0 && (size_t)u < s.core.nusers && s.core.users[u].tenant == t &&
			      !strcmp(s.core.users[u].name, jobs[i].user),
		      "iteration %d: job %zu (tenant %d, user \"%s\") mapped to user %d", it, i, t, jobs[i].user, u);
	}
	for (size_t i = 0; i < nr; i++) {
		int u = s.core.runs[i].user;
		int t = s.core.runs[i].tenant;
		/* a run of no known tenant is charged to the root: its user is found
		 * there or not at all */
		int want = scheduler_snap_user(&s, t, runs[i].user);
		CHECK(u == want && (u < 0 || (s.core.users[u].tenant == t && !strcmp(s.core.users[u].name, runs[i].user))),
		      "iteration %d: run %zu (tenant %d, user \"%s\") mapped to user %d, want %d", it, i, t,
		      runs[i].user, u, want);
	}
	for (size_t u = 1; u < s.core.nusers; u++) {
		const struct sched_user *a = &s.core.users[u - 1], *b = &s.core.users[u];
		CHECK(a->tenant < b->tenant || (a->tenant == b->tenant && strcmp(a->name, b->name) < 0),
		      "iteration %d: users %zu and %zu out of order or repeated", it, u - 1, u);
	}
	scheduler_snap_release(&s);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 300;

	rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 5;
	for (int it = 0; it < iters && fails < 20; it++)
		one(it);
	printf("%d iterations: %d failure(s)\n", iters, fails);
	return fails ? 1 : 0;
}
