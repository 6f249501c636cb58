/*
 * node_register_probe.c - drives store_node_register() (the upsert agents
 * will use) from the integration tests:
 *
 *   admin_node_register_probe DB_URL NAME GPUS [UNHEALTHY_INDEX]
 *
 * registers NAME at 10.1.0.1 with GPUS fake H100s (one unhealthy when asked)
 * and prints the node id.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "store_node.h"

int main(int argc, char **argv)
{
	struct store_gpu_reg gpus[64];
	char uuids[64][32];
	struct store_node_reg reg = {
		.address = "10.1.0.1",
		.topology = "block-9/rack-9",
		.gpu_model = "H100",
		.labels_json = "{\"probe\": \"yes\"}",
		.agent_version = "probe-1",
		.gpus = gpus,
	};
	struct mu_error err = { 0 };
	PGconn *c;
	int64_t id = 0;
	long n, bad = -1;
	int ret;

	if (argc < 4) {
		fprintf(stderr, "usage: %s DB_URL NAME GPUS [UNHEALTHY_INDEX]\n", argv[0]);
		return 2;
	}
	n = strtol(argv[3], NULL, 10);
	if (n < 0 || n > 64)
		return 2;
	if (argc > 4)
		bad = strtol(argv[4], NULL, 10);
	reg.name = argv[2];
	reg.n_gpus = (size_t)n;
	for (long i = 0; i < n; i++) {
		snprintf(uuids[i], sizeof(uuids[i]), "GPU-probe-%ld", i);
		gpus[i] = (struct store_gpu_reg){ .index = i, .uuid = uuids[i], .model = "H100",
						  .memory_mb = 81920, .healthy = i != bad,
						  .health_reason = i == bad ? "xid 79" : "" };
	}
	c = store_db_connect(argv[1], "node-probe", &err);
	if (!c) {
		fprintf(stderr, "connect: %s\n", err.msg);
		return 1;
	}
	ret = store_node_register(c, &reg, &id, &err);
	store_db_close(c);
	if (ret < 0) {
		fprintf(stderr, "register: %s (%s)\n", err.msg, mu_err_slug(ret));
		return 1;
	}
	printf("%" PRId64 "\n", id);
	return 0;
}
