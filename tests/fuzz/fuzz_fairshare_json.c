/*
 * fuzz_fairshare_json - libFuzzer driver for the `muster-sim --fairshare`
 * reader (sim_fairshare_eval) and, behind it, the Fair Tree core.
 *
 * Besides "no crash, no sanitizer report", it checks what must hold for any
 * accepted input: the output is one JSON object whose "associations" are
 * well formed and whose fairshare values lie in (0, 1]; a refused input has
 * an error code and a message and wrote nothing.
 *
 * Built as a libFuzzer target only with -DMUSTER_FUZZ=ON and clang. Linked with
 * replay_main.c (muster_fuzz_driver) it gets a plain main that replays files and folders
 * given as arguments, so CI runs the seed corpus without clang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fairshare_cli.h"

static void check_output(const char *out, size_t len)
{
	json_error_t jerr;
	json_t *doc = json_loadb(out, len, 0, &jerr), *list, *a;
	size_t i;

	if (!doc || !(list = json_object_get(doc, "associations")) || !json_is_array(list))
		abort();
	json_array_foreach(list, i, a) {
		json_t *fs = json_object_get(a, "fairshare"), *lfs = json_object_get(a, "level_fs");
		if (!json_is_string(json_object_get(a, "tenant")) || !lfs)
			abort();
		if (json_is_string(lfs) && strcmp(json_string_value(lfs), "inf") != 0)
			abort();
		if (json_object_get(a, "user") && (!json_is_number(fs) || json_number_value(fs) <= 0 ||
						   json_number_value(fs) > 1))
			abort();
	}
	json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mu_error err = { 0 };
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int ret;

	if (!f)
		abort();
	ret = sim_fairshare_eval((const char *)data, size, f, &err);
	if (fclose(f) != 0)
		abort();
	if (ret == 0)
		check_output(out, len);
	else if (ret > 0 || err.code != ret || err.msg[0] == '\0' || len != 0)
		abort();
	free(out);
	return 0;
}
