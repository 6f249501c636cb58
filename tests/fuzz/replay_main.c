/*
 * replay_main.c - a plain main for every fuzz driver: feeds each regular
 * file named on the command line, or found (sorted by name) in a folder
 * named there, to the driver's LLVMFuzzerTestOneInput. CTest runs it over
 * the checked-in seed corpora so every build exercises the drivers' decoders
 * and invariants without clang; the drivers abort() on a broken invariant.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0, got;

	if (!f) {
		perror(path);
		return -1;
	}
	do {
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got > 0);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	size_t files = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		struct dirent **ents;
		int n;

		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]))
				return 1;
			files++;
			continue;
		}
		n = scandir(argv[i], &ents, NULL, by_name);
		if (n < 0) {
			perror(argv[i]);
			return 1;
		}
		for (int k = 0; k < n; k++) {
			char path[4096];
			struct stat est;

			snprintf(path, sizeof(path), "%s/%s", argv[i], ents[k]->d_name);
			if (ents[k]->d_name[0] != '.' && stat(path, &est) == 0 && S_ISREG(est.st_mode)) {
				if (replay_file(path))
					return 1;
				files++;
			}
			free(ents[k]);
		}
		free(ents);
	}
	printf("replayed %zu input(s), no invariant broken\n", files);
	return files ? 0 : 1;
}
