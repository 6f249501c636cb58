/*
 * sbatch.h - Slurm's batch-script directives and options, read into muster
 * REST job fields. Pure (libc only): used by the CLI (`muster submit
 * script.sh`, and its Slurm-only options) and by the API (the `script`
 * field of POST /v1/jobs), so both read a script the same way. Unit-tested
 * (tests/unit/common/test_sbatch.c) and fuzzed (tests/fuzz/fuzz_sbatch.c).
 *
 * Directives are read as sbatch reads them: lines "#SBATCH OPTIONS..." from
 * the top of the script up to the first line that is neither blank nor a
 * comment; the words split as a shell would (quotes, backslashes), an
 * unquoted word starting with '#' ends the line. "-N 2", "-N2", "--nodes 2"
 * and "--nodes=2" all work.
 *
 * Each option has one of three fates (the table in sbatch.c, which also
 * generates the docs table and shell completion):
 *   apply  - sets REST fields (nodes, time_limit, name, output, array, ...)
 *   warn   - no meaning in muster (--mail-type, --partition): one warning line
 *   refuse - asks for resources muster cannot honour (--constraint,
 *            --nodelist): MU_EINVAL naming the option
 * An option not in the table is a warning too ("unknown").
 *
 * Results are REST field name -> JSON text ("4", "\"train\"", "true",
 * "{\"name\":\"USR1\",\"before\":60}"); a later option replaces an earlier
 * one's field (env entries add up). Consumers apply a field only where
 * their own input (the command line, the request body) has none.
 */
#ifndef MU_SBATCH_H
#define MU_SBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Largest script accepted (one argv string of the job's command: below
 * Linux's 128 KiB MAX_ARG_STRLEN). */
#define MU_SBATCH_MAX_SCRIPT (100 * 1024)
#define MU_SBATCH_MAX_FIELDS 32
#define MU_SBATCH_MAX_WARNINGS 32

struct mu_sbatch_field {
	char name[32]; /* REST field */
	char *json;    /* owned: its JSON text */
};

struct mu_sbatch {
	int64_t now;           /* for --begin's relative forms */
	bool from_cli;         /* --export=NAME (no value) may read getenv() */
	size_t nfields;
	struct mu_sbatch_field fields[MU_SBATCH_MAX_FIELDS];
	size_t nwarnings;
	char warnings[MU_SBATCH_MAX_WARNINGS][160]; /* "line 3: --mail-type is ignored ..." */
	long long cpus_per_task; /* folded into cpus_per_node by mu_sbatch_finish */
	long long ntasks_per_node;
};

/* Fates, and the table's shape for the docs and completion generators. */
enum mu_sbatch_fate { MU_SBATCH_APPLY, MU_SBATCH_WARN, MU_SBATCH_REFUSE };

struct mu_sbatch_option {
	const char *name;  /* long name without "--" */
	char short_name;   /* 0 = none */
	bool has_arg;
	enum mu_sbatch_fate fate;
	const char *help;  /* what it does in muster, or why it is refused/ignored */
};

/* The table (static, borrowed): entries 0..mu_sbatch_noptions()-1. */
size_t mu_sbatch_noptions(void);
const struct mu_sbatch_option *mu_sbatch_option_at(size_t i);

void mu_sbatch_init(struct mu_sbatch *sb, int64_t now, bool from_cli);
void mu_sbatch_release(struct mu_sbatch *sb);

/*
 * Reads the directives of `script` (`len` bytes, NUL not needed). 0, or
 * MU_EINVAL/MU_ERANGE/MU_ETOOBIG with err->msg "line N: ..." naming the
 * option. Warnings accumulate in sb->warnings.
 */
int mu_sbatch_parse_script(struct mu_sbatch *sb, const char *script, size_t len,
			   struct mu_error *err) __attribute__((warn_unused_result));

/*
 * One option by its long name (no dashes) or its one-letter short name,
 * with its value (NULL for a flag). `line` > 0 prefixes messages with
 * "line N: ". 0 or MU_E* with err filled.
 */
int mu_sbatch_option(struct mu_sbatch *sb, const char *name, const char *value, int line,
		     struct mu_error *err) __attribute__((warn_unused_result));

/*
 * Folds the derived fields in: --ntasks and --gpus spread over the nodes,
 * --cpus-per-task times processes per node, --mem-per-gpu/--mem-per-cpu
 * times GPUs/CPUs per node (all from this sb's own values). Call after the
 * last mu_sbatch_option; mu_sbatch_parse_script does it itself. 0 or
 * MU_EINVAL/MU_ERANGE (a total that does not divide over the nodes).
 */
int mu_sbatch_finish(struct mu_sbatch *sb, struct mu_error *err) __attribute__((warn_unused_result));

/* The JSON text of field `name`, or NULL (borrowed). */
const char *mu_sbatch_get(const struct mu_sbatch *sb, const char *name);

/* Does the script start with "#!"? (sbatch requires it.) */
bool mu_sbatch_has_shebang(const char *script, size_t len);

/*
 * sbatch's output file patterns: %j job id, %x job name, %A array job id,
 * %a array task id, %N first node's name, %n node rank, %t task rank, %u
 * user, %% a '%'. A digit between '%' and the letter zero-pads ("%4a").
 * Array fields (%A, %a) of a job outside an array print as Slurm's do:
 * %A the job id, %a "4294967294". Unknown letters are kept as written.
 * Writes at most `len`-1 bytes; returns MU_ETOOLONG when cut, else 0.
 */
struct mu_sbatch_subst {
	int64_t job_id;
	int64_t array_job_id;  /* 0 = not in an array */
	int64_t array_task_id;
	const char *job_name;
	const char *node;
	int node_rank;
	int task_rank;
	const char *user;
};

int mu_sbatch_expand(const char *pattern, const struct mu_sbatch_subst *v, char *out, size_t len)
	__attribute__((warn_unused_result));

#endif
