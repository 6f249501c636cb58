/*
 * codec_script.h - the `script` field of a job body (POST /v1/jobs, the
 * batch route, dry-run, gRPC): an sbatch-style batch script whose #SBATCH
 * directives are read by common/sbatch.c, as the CLI reads them.
 *
 * Pure (jansson + libc; `now` for --begin's relative forms is time(NULL)).
 */
#ifndef MU_CODEC_SCRIPT_H
#define MU_CODEC_SCRIPT_H

#include <jansson.h>

#include "error.h"

/* argv[0] of a script job's command: the shell that writes the script to a
 * private file and runs it with its own interpreter ("#!" line). */
#define CODEC_SCRIPT_ARGV0 "muster-batch"

/*
 * When `body` has a "script": checks it (a string of at most
 * MU_SBATCH_MAX_SCRIPT bytes, no NUL; "command" absent; "script_args" an
 * optional array of strings), reads its directives and sets each field
 * they give that `body` lacks (the body wins, as the command line wins in
 * sbatch; "env" entries add up), then sbatch's defaults (name "sbatch"),
 * and finally "command" = the launcher shell + script + script_args.
 * `body` is changed in place. Without "script", a "script_args" is an
 * error; else nothing changes. 0 or MU_E* with err naming the field
 * (`prefix` first, as codec_job_decode does).
 */
int codec_script_apply(json_t *body, const char *prefix, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Whether `command` (a decoded job's argv JSON array) is a script job's. */
int codec_script_is_command(const json_t *command);

#endif
