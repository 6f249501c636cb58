/*
 * cli_args.h - the muster CLI's argument parsing, pure: argv in, JSON request
 * bodies and query pieces out. No I/O except reading the environment for
 * `--env NAME` without a value. Unit tested in tests/unit/cli/.
 *
 * Every parser returns 0, 1 when `--help` was asked for (the caller prints
 * the command's usage and exits 0), or a negative MU_E* code with `err`
 * filled (a usage error: the caller prints it and exits 2).
 *
 * Parsers use getopt_long and reset it themselves; they are not reentrant.
 */
#ifndef CLI_ARGS_H
#define CLI_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"

/* Options every command accepts; all strings are borrowed from argv/env. */
struct cli_global {
	const char *url;   /* --url, or NULL */
	const char *token; /* --token, or NULL */
	bool json;         /* --json: print the server's JSON */
};

enum {
	CLI_OPT_URL = 0x1000,
	CLI_OPT_TOKEN,
	CLI_OPT_JSON,
	CLI_OPT_HELP,
	CLI_OPT_FIRST_PRIVATE, /* commands number their own long-only options from here */
};

#define CLI_COMMON_LONGOPTS                                         \
	{ "url", required_argument, NULL, CLI_OPT_URL },            \
	{ "token", required_argument, NULL, CLI_OPT_TOKEN },        \
	{ "json", no_argument, NULL, CLI_OPT_JSON },                \
	{ "help", no_argument, NULL, CLI_OPT_HELP }

/* Handles a common option; returns true when `c` was one. */
bool cli_common_opt(struct cli_global *g, int c, const char *arg);

/* Resets getopt for a fresh parse of a new argv. */
void cli_getopt_reset(void);

/*
 * getopt_long for every command's parser. With `cli_option_sink` set (only
 * `muster completion`, in a child process of its own) it hands the
 * command's table to the sink instead, which does not return: completion
 * is generated from the very tables the parsers read.
 */
struct option;
extern void (*cli_option_sink)(const char *optstring, const struct option *longopts);
int cli_getopt_long(int argc, char **argv, const char *optstring, const struct option *longopts);

/* Fills `err` for the getopt return `c` ('?' or ':') of argv. Returns MU_EINVAL. */
int cli_getopt_error(int c, int optopt_val, char **argv, int idx, struct mu_error *err);

/*
 * Slurm's --dependency: "afterok:12:13,afterany:14" (all of). Appends one
 * {"type", "job_id"} object per id to `deps` (borrowed, must be an array).
 * `?` (any of), "after", "aftercorr", "singleton" and "+time" are refused
 * with a message that says so.
 */
int cli_parse_dependency(const char *spec, json_t *deps, struct mu_error *err);

/*
 * "KEY=VALUE" for --label and --env into `obj` (borrowed). `what` is
 * "label" or "env" and selects the key rule (labels: [A-Za-z0-9_./-]{1,63};
 * env: [A-Za-z_][A-Za-z0-9_]*). For env, a bare "NAME" takes the value of
 * NAME in this process's environment. A key given twice is an error.
 */
int cli_parse_kv(const char *s, const char *what, json_t *obj, struct mu_error *err);

/* A Slurm --time into seconds (1..2^31-1). */
int cli_parse_time(const char *s, int64_t *secs, struct mu_error *err);

/* A job id: a positive decimal integer. */
int cli_parse_job_id(const char *s, int64_t *id, struct mu_error *err);

/* An integer in [min, max]; `what` names the option in the message. */
int cli_parse_int(const char *s, const char *what, long long min, long long max, long long *out,
		  struct mu_error *err);

/*
 * squeue's --states: comma-separated long names or Slurm's short forms
 * (PD, CF, R, CD, F, CA, TO), any case; "all" means no filter. `*out` gets
 * a new comma-separated list of canonical names (free with mu_free), or
 * NULL for all. Appends to an existing *out (repeated flags accumulate).
 */
int cli_parse_states(const char *s, char **out, struct mu_error *err);

/* The short state code squeue prints for a muster state ("PD", "R", ...). */
const char *cli_state_short(const char *state);

/* muster submit */
struct mu_sbatch;
struct cli_submit {
	struct cli_global g;
	json_t *body;                /* new: the POST /v1/jobs body */
	const char *idempotency_key; /* borrowed, or NULL */
	bool test_only;              /* --test-only: POST /v1/jobs/dry-run */
	bool parsable;               /* --parsable: print only the job id */
	bool wait;                   /* --wait/-W: block until the job (all its tasks) ends */
	json_t *warnings;            /* new: array of one-line warnings (ignored directives) */
	char *script_name;           /* new: the batch script's base name, or NULL */
	struct mu_sbatch *script_sb; /* internal to the parse */
};

/*
 * argv[0] is "submit". `s->g` may be pre-filled with global options.
 * Without -J the name is the command's base name ("wrap" for --wrap), as sbatch does.
 *
 * Slurm's sbatch options without a muster flag of their own (-o, -e, -a,
 * -H, --begin, --signal, --gres, --export, -c, --partition, ...) come from
 * common/sbatch.c's table and mean what they mean in a #SBATCH line.
 * When the first positional names a regular file here that starts with
 * "#!", it is a batch script: this reads it (the one I/O besides getenv),
 * its #SBATCH lines apply where the command line said nothing, its text
 * goes in "script" and the other positionals in "script_args".
 */
int cli_submit_parse(int argc, char **argv, struct cli_submit *s, struct mu_error *err)
	__attribute__((warn_unused_result));
void cli_submit_release(struct cli_submit *s);

/*
 * The exit code of `muster submit --wait` for a job that ended (the table
 * in docs/cli.md): COMPLETED 0; FAILED the job's exit code when it has one
 * in 1..255, else 1; end_reason oom 137; TIMEOUT 124; CANCELLED 130.
 */
int cli_wait_exit_code(const char *state, const char *end_reason, const json_t *exit_code);

/* muster queue */
struct cli_queue {
	struct cli_global g;
	char *states;     /* new comma list, NULL = every state; default active ones */
	const char *tenant; /* borrowed */
	const char *user;   /* borrowed */
	json_t *labels;     /* new array of "k=v" strings */
	const char *format; /* borrowed: squeue's -o/--format ("%.18i %.8j ..."), or NULL */
	bool noheader;      /* --noheader */
	bool start;         /* --start: pending jobs with their planned start */
};

int cli_queue_parse(int argc, char **argv, struct cli_queue *q, struct mu_error *err)
	__attribute__((warn_unused_result));
/* MU_EINVAL naming the first field letter of an squeue -o format muster does not know. */
int cli_queue_format_check(const char *fmt, struct mu_error *err);

/*
 * squeue's array notation for the pending tasks of one array: task ids
 * (ascending, borrowed) as "4-15", "1,3,5-7" or "0-12:4" ranges, with
 * "%K" from the array spec's throttle. Writes "123_[...]" into out.
 */
void cli_array_collapse(int64_t array_job_id, const int64_t *tasks, size_t n, const char *spec,
			char *out, size_t len);
void cli_queue_release(struct cli_queue *q);

/* muster logs JOB [-f] [--node-rank N] [--local-rank R] [--stderr] [--run RUN] */
struct cli_logs {
	struct cli_global g;
	const char *job;      /* borrowed: the job id as given (checked) */
	bool follow;
	long long node_rank, local_rank, run_id; /* run_id 0 = the latest run */
	bool err_stream;
};

int cli_logs_parse(int argc, char **argv, struct cli_logs *l, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
