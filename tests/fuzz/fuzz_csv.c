/*
 * fuzz_csv - libFuzzer driver for the CSV trace reader (service/sim/trace.c): no crash, every accepted job
 * is consistent, a refused input names its line.
 *
 * Built as a libFuzzer target with -DMUSTER_FUZZ=ON and clang; linked with
 * replay_main.c (muster_fuzz_driver) it gets a plain main that replays the files and folders
 * given as arguments, so CI runs the seed corpus without clang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace t;
	for (int lenient = 0; lenient < 2; lenient++) {
		struct mu_error err = { 0 };
		trace_init(&t);
		int ret = trace_parse_csv((const char *)data, size, lenient, &t, &err);
		if (ret == 0) {
			for (size_t i = 0; i < t.njobs; i++) {
				const struct trace_job *j = &t.jobs[i];
				if ((j->procs <= 0 && j->nodes <= 0) || j->runtime < 0 || j->runtime > j->limit ||
				    j->gpus_per_node < 0 || j->gpus_per_node > 64 || j->min_nodes > j->nodes)
					abort();
				if (j->tenant >= (int)t.nnames || j->user >= (int)t.nnames)
					abort();
			}
		} else if (err.msg[0] == '\0' || strncmp(err.msg, "line ", 5) != 0) {
			abort();
		}
		trace_release(&t);
	}
	return 0;
}
