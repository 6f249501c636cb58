/*
 * fuzz_swf - libFuzzer driver for the SWF trace reader (service/sim/trace.c): no crash, and every accepted
 * job is consistent (processors > 0, 0 <= run time <= limit); a refused
 * input names its line; --lenient never refuses.
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

#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace t;
	for (int lenient = 0; lenient < 2; lenient++) {
		struct mu_error err = { 0 };
		trace_init(&t);
		int ret = trace_parse_swf((const char *)data, size, lenient, &t, &err);
		if (ret == 0) {
			for (size_t i = 0; i < t.njobs; i++) {
				const struct trace_job *j = &t.jobs[i];
				if (j->procs <= 0 || j->runtime < 0 || j->runtime > j->limit || j->limit < 1 || j->line == 0)
					abort();
			}
		} else if (lenient || err.msg[0] == '\0' || strncmp(err.msg, "line ", 5) != 0) {
			abort(); /* lenient never fails on SWF; errors name their line */
		}
		trace_release(&t);
	}
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
