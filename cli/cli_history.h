/*
 * cli_history.h - `muster history` (sacct): its options and its --format
 * columns, pure (argv and job JSON in, text out). Unit-tested in
 * tests/unit/cli/test_cli_slurm.c.
 */
#ifndef CLI_HISTORY_H
#define CLI_HISTORY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "cli_args.h"
#include "error.h"

#define CLI_HISTORY_MAX_COLS 32

struct cli_history_col {
	int field; /* index into the column table (cli_history.c) */
	int width; /* sacct's "%N", or the column's default */
};

struct cli_history {
	struct cli_global g;
	char *query;     /* new: "start=...&end=...&user=..." for GET /v1/history */
	struct cli_history_col cols[CLI_HISTORY_MAX_COLS];
	int ncols;
	bool parsable;   /* -P/--parsable2: '|' between fields, none at the end */
	bool noheader;   /* -n/--noheader */
};

/*
 * argv[0] is "history". -S/--starttime and -E/--endtime take Slurm's time
 * forms (common/slurmtime.h; default: since midnight, unbounded with -j),
 * -u/--user, -A/--accounts (tenant), -s/--state, -j/--jobs, -o/--format,
 * -P, -n. `now` is the time the relative forms read. Returns 0, 1 for
 * --help, or MU_E* with err filled.
 */
int cli_history_parse(int argc, char **argv, int64_t now, struct cli_history *h,
		      struct mu_error *err) __attribute__((warn_unused_result));
void cli_history_release(struct cli_history *h);

/* The header (and sacct's dashes line unless parsable), one row per job. */
void cli_history_header(const struct cli_history *h, FILE *out);
void cli_history_row(const struct cli_history *h, const json_t *job, FILE *out);

/* Every --format name, comma-separated (for help and completion). */
const char *cli_history_fields(void);

#endif
