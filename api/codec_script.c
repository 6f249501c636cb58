/* codec_script.c - see codec_script.h. */
#include "codec_script.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "jv.h"
#include "sbatch.h"

/*
 * $1 is the script, the rest its arguments. The file is private (mktemp
 * makes it 0600 in the job's TMPDIR), removed when the shell exits; the
 * kernel runs it by its "#!" line, sh itself when it has none (ENOEXEC).
 */
static const char wrapper[] =
	"f=$(mktemp \"${TMPDIR:-/tmp}/muster-batch.XXXXXX\") || exit 1\n"
	"trap 'rm -f \"$f\"' EXIT\n"
	"trap 'exit 143' TERM\n"
	"trap 'exit 130' INT\n"
	"printf '%s' \"$1\" >\"$f\" && chmod 700 \"$f\" || exit 1\n"
	"shift\n"
	"\"$f\" \"$@\"\n";

/* --batch-host: sbatch's shape, the script once on the rank-0 node (its
 * first process), which starts its own launcher from $MUSTER_HOSTFILE;
 * every other process of the gang ends at once (its node stays the run's
 * until the run ends). */
static const char wrapper_batch_host[] =
	"[ \"${NODE_RANK:-0}\" = 0 ] && [ \"${LOCAL_RANK:-0}\" = 0 ] || exit 0\n"
	"f=$(mktemp \"${TMPDIR:-/tmp}/muster-batch.XXXXXX\") || exit 1\n"
	"trap 'rm -f \"$f\"' EXIT\n"
	"trap 'exit 143' TERM\n"
	"trap 'exit 130' INT\n"
	"printf '%s' \"$1\" >\"$f\" && chmod 700 \"$f\" || exit 1\n"
	"shift\n"
	"\"$f\" \"$@\"\n";

int codec_script_is_command(const json_t *command)
{
	const char *runner = json_string_value(json_array_get(command, 2));

	return json_array_size(command) >= 5 && runner &&
	       (!strcmp(runner, wrapper) || !strcmp(runner, wrapper_batch_host)) &&
	       !strcmp(json_string_value(json_array_get(command, 3)) ?: "", CODEC_SCRIPT_ARGV0);
}

static void merge_env(json_t *body, json_t *add)
{
	json_t *env = json_object_get(body, "env");
	const char *k;
	json_t *v;

	if (!json_is_object(env)) {
		if (!env || json_is_null(env))
			json_object_set(body, "env", add);
		return; /* a wrong type: codec_job_decode names it */
	}
	json_object_foreach(add, k, v)
		if (!json_object_get(env, k))
			json_object_set(env, k, v);
}

int codec_script_apply(json_t *body, const char *prefix, struct mu_error *err)
{
	const json_t *script = json_object_get(body, "script");
	const json_t *args = json_object_get(body, "script_args");
	struct mu_sbatch sb;
	json_t *command;
	size_t i;
	json_t *a;
	int ret;

	if (!script || json_is_null(script)) {
		if (args && !json_is_null(args))
			return jv_fail(err, MU_EINVAL, prefix, "script_args", "only with \"script\"");
		if (json_object_get(body, "batch_host") && !json_is_null(json_object_get(body, "batch_host")))
			return jv_fail(err, MU_EINVAL, prefix, "batch_host", "only with \"script\"");
		return 0;
	}
	if (!json_is_string(script))
		return jv_fail(err, MU_ETYPE, prefix, "script", "must be a string");
	if (json_string_length(script) > MU_SBATCH_MAX_SCRIPT)
		return jv_fail(err, MU_ETOOLONG, prefix, "script", "at most %d bytes",
			       MU_SBATCH_MAX_SCRIPT);
	if (strlen(json_string_value(script)) != json_string_length(script))
		return jv_fail(err, MU_EINVAL, prefix, "script", "must not contain NUL");
	if (json_string_length(script) == 0)
		return jv_fail(err, MU_EINVAL, prefix, "script", "must not be empty");
	if (json_object_get(body, "command") && !json_is_null(json_object_get(body, "command")))
		return jv_fail(err, MU_EINVAL, prefix, "command",
			       "not with \"script\" (its arguments go in \"script_args\")");
	if (args && !json_is_null(args)) {
		if (!json_is_array(args))
			return jv_fail(err, MU_ETYPE, prefix, "script_args", "must be an array of strings");
		if (json_array_size(args) > 1000)
			return jv_fail(err, MU_ERANGE, prefix, "script_args", "at most 1000 items");
		json_array_foreach(args, i, a) {
			char key[40];
			snprintf(key, sizeof(key), "script_args.%zu", i);
			if ((ret = jv_check_str(a, 4096, prefix, key, err)) < 0)
				return ret;
		}
	}
	mu_sbatch_init(&sb, (int64_t)time(NULL), false);
	ret = mu_sbatch_parse_script(&sb, json_string_value(script), json_string_length(script), err);
	if (ret < 0) {
		char msg[sizeof(err->msg)];
		snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
		ret = jv_fail(err, ret, prefix, "script", "%s", msg);
		goto out;
	}
	for (i = 0; i < sb.nfields; i++) {
		json_t *v = json_loads(sb.fields[i].json, JSON_DECODE_ANY, NULL);

		if (!v) {
			ret = jv_fail(err, MU_EINTERNAL, prefix, "script", "directive %s", sb.fields[i].name);
			goto out;
		}
		if (!strcmp(sb.fields[i].name, "env"))
			merge_env(body, v);
		else if (!json_object_get(body, sb.fields[i].name))
			json_object_set(body, sb.fields[i].name, v);
		json_decref(v);
	}
	/* sbatch's defaults: stdout (and stderr, without -e) in slurm-%j.out in
	 * the workdir; a script it read from stdin is named "sbatch" */
	if (!json_object_get(body, "output"))
		json_object_set_new(body, "output", json_string(json_object_get(body, "array")
									? "slurm-%A_%a.out"
									: "slurm-%j.out"));
	if (!json_object_get(body, "name"))
		json_object_set_new(body, "name", json_string("sbatch"));
	if (!json_object_get(body, "nodes"))
		json_object_set_new(body, "nodes", json_integer(1));
	if (!json_object_get(body, "gpus_per_node"))
		json_object_set_new(body, "gpus_per_node", json_integer(0));
	{
		const json_t *bh = json_object_get(body, "batch_host");
		if (bh && !json_is_boolean(bh) && !json_is_null(bh)) {
			ret = jv_fail(err, MU_ETYPE, prefix, "batch_host", "must be a boolean");
			goto out;
		}
		command = json_pack("[s, s, s, s, O]", "/bin/sh", "-c",
				    json_is_true(bh) ? wrapper_batch_host : wrapper, CODEC_SCRIPT_ARGV0,
				    script);
	}
	json_array_foreach(args, i, a)
		json_array_append(command, a);
	json_object_set_new(body, "command", command);
	ret = 0;
out:
	mu_sbatch_release(&sb);
	return ret;
}
