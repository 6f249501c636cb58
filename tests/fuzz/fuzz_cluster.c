/*
 * fuzz_cluster - libFuzzer driver for the muster-sim cluster file reader (service/sim/cluster.c): no crash;
 * an accepted file is a valid snapshot for the policy core (one cycle runs).
 *
 * Built as a libFuzzer target with -DMUSTER_FUZZ=ON and clang; with
 * MU_FUZZ_REPLAY_MAIN it gets a plain main that replays the files and folders
 * given as arguments, so CI runs the seed corpus without clang.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

#ifdef MU_FUZZ_REPLAY_MAIN
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	size_t cap = 4096, n = 0, r;
	uint8_t *buf = malloc(cap);
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	if (!buf)
		return 1;
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, bad = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad |= replay_file(argv[i]);
			files++;
			continue;
		}
		struct dirent **list;
		int n = scandir(argv[i], &list, NULL, alphasort);
		for (int k = 0; k < n; k++) {
			char p[4096];
			if (list[k]->d_name[0] != '.') {
				snprintf(p, sizeof(p), "%s/%s", argv[i], list[k]->d_name);
				bad |= replay_file(p);
				files++;
			}
			free(list[k]);
		}
		free(list);
	}
	printf("replayed %d input(s)\n", files);
	return bad || files == 0;
}
#endif
