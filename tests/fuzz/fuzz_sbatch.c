/*
 * fuzz_sbatch - libFuzzer driver for the #SBATCH reader and the output
 * pattern expander (common/sbatch.c) and Slurm's time forms
 * (common/slurmtime.c): no crash, every field it sets is non-empty JSON
 * text, a refusal has a message, and an expansion always ends in a NUL
 * within its buffer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbatch.h"
#include "slurmtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mu_sbatch sb;
	struct mu_error err = { 0 };
	struct mu_sbatch_subst v = { .job_id = 7, .array_job_id = 5, .array_task_id = 2,
				     .job_name = "n", .node = "h", .user = "u" };
	char *text = malloc(size + 1);
	char out[64];
	int64_t t;
	int ret;

	memcpy(text, data, size);
	text[size] = '\0';
	mu_sbatch_init(&sb, 1796207400, false);
	ret = mu_sbatch_parse_script(&sb, (const char *)data, size, &err);
	if (ret == 0) {
		for (size_t i = 0; i < sb.nfields; i++)
			if (!sb.fields[i].json || !sb.fields[i].json[0] || sb.fields[i].name[0] == '_')
				abort();
	} else if (!err.msg[0]) {
		abort();
	}
	mu_sbatch_release(&sb);
	if (mu_sbatch_expand(text, &v, out, sizeof(out)) < 0 && strlen(out) != sizeof(out) - 1)
		abort();
	if (strlen(out) >= sizeof(out))
		abort();
	/* an accepted time prints as RFC 3339 and reads back the same */
	if (mu_slurmtime_parse(text, 1796207400, MU_SLURMTIME_FUTURE, &t) == 0) {
		char rfc[32];
		int64_t back;
		mu_slurmtime_rfc3339(t, rfc, sizeof(rfc));
		if (rfc[0] && (mu_slurmtime_parse_rfc3339(rfc, &back) != 0 || back != t))
			abort();
	}
	if (mu_slurmtime_parse_rfc3339(text, &t) == 0 && t < -62167219200LL)
		abort();
	free(text);
	return 0;
}
