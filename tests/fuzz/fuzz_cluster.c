/*
 * fuzz_cluster - libFuzzer driver for the muster-sim cluster file reader (service/sim/cluster.c): no crash;
 * an accepted file is a valid snapshot for the policy core (one cycle runs).
 *
 * Built as a libFuzzer target with -DMUSTER_FUZZ=ON and clang; linked with
 * replay_main.c (muster_fuzz_driver) it gets a plain main that replays the files and folders
 * given as arguments, so CI runs the seed corpus without clang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_cluster c;
	struct mu_error err = { 0 };
	sim_cluster_init(&c);
	if (sim_cluster_parse(&c, (const char *)data, size, &err) == 0) {
		if (c.nnodes == 0)
			abort();
		for (size_t i = 0; i < c.nnodes; i++) {
			const struct sched_node *n = &c.nodes[i];
			if (n->gpu_count < 0 || n->gpu_count > SCHED_MAX_GPUS)
				abort();
			for (int l = 0; l < c.nlevels; l++)
				if (n->unit[l] < -1 || n->unit[l] >= (int)c.nnodes)
					abort();
		}
		/* the parsed cluster is a valid snapshot for the core */
		struct sched_job job = { .id = 1, .nodes = 1, .gpus_per_node = 1, .time_limit = 60, .user = -1,
			                 .topo_required = c.nlevels > 0 ? 0 : -1, .topo_preferred = -1 };
		struct sched_snapshot s = { .now = 0, .settings = c.settings, .nnodes = c.nnodes, .nodes = c.nodes,
			                    .njobs = 1, .jobs = &job, .ntenants = c.ntenants, .tenants = c.tenants };
		struct sched_decisions d;
		sched_decisions_init(&d);
		if (c.nnodes <= 4096 && sched_cycle(&s, &d) != 0)
			abort();
		sched_decisions_release(&d);
	} else if (err.msg[0] == '\0') {
		abort();
	}
	sim_cluster_release(&c);
	return 0;
}
