/*
 * fuzz_cluster - libFuzzer driver for the muster-sim cluster file reader (service/sim/cluster.c): no crash;
 * an accepted file is a valid snapshot for the policy core (one cycle runs, and gives the same
 * decisions through the incremental view).
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
		struct sched_decisions d, dv;
		sched_decisions_init(&d);
		sched_decisions_init(&dv);
		if (c.nnodes <= 4096) {
			if (sched_cycle(&s, &d) != 0)
				abort();
			/* and through the incremental view (snapshot.delta): the same decisions */
			struct sched_delta none = { 0 };
			s.delta = &none;
			if (sched_cycle(&s, &dv) != 0 || dv.nstarts != d.nstarts || dv.nreservations != d.nreservations ||
			    dv.verdicts[0].reason != d.verdicts[0].reason ||
			    dv.verdicts[0].planned_start != d.verdicts[0].planned_start)
				abort();
			for (size_t i = 0; i < d.nstarts; i++)
				for (size_t k = 0; k < d.starts[i].nalloc; k++)
					if (dv.starts[i].nalloc != d.starts[i].nalloc ||
					    dv.starts[i].alloc[k].node != d.starts[i].alloc[k].node ||
					    dv.starts[i].alloc[k].gpus != d.starts[i].alloc[k].gpus)
						abort();
		}
		sched_decisions_release(&d);
		sched_decisions_release(&dv);
	} else if (err.msg[0] == '\0') {
		abort();
	}
	sim_cluster_release(&c);
	return 0;
}
