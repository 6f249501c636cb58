/*
 * cli_out.h - how the CLI prints: aligned tables (squeue/sinfo style),
 * Key=Value blocks (scontrol style), JSON, and one-line errors.
 */
#ifndef CLI_OUT_H
#define CLI_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "error.h"

/* Exit codes of `muster` (documented in docs/cli.md). */
enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_ERROR = 1,    /* anything else, including a request the server refused (400, 409, 429) */
	CLI_EXIT_USAGE = 2,    /* bad flags or arguments, caught before any request */
	CLI_EXIT_NOTFOUND = 3, /* 404: no such job/tenant/node/token, or not visible to this token */
	CLI_EXIT_AUTH = 4,     /* 401/403: missing, invalid or insufficient token */
	CLI_EXIT_UNAVAIL = 5,  /* server unreachable, or 502/503/504 */
};

/* The exit code for a negative MU_E* code from cli_http_call. */
int cli_exit_for(int code);

/* "muster: error: <err->msg> (field: x)" on stderr; returns cli_exit_for(err->code). */
int cli_report(const struct mu_error *err);
/* The same with the object first: "muster: error: job 12: <msg>". */
int cli_report_about(const char *what, const char *name, const struct mu_error *err);
/* A usage error: "muster: error: <msg> (see 'muster <cmd> --help')"; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const struct mu_error *err);

/* Prints `doc` (borrowed) as indented JSON plus a newline on stdout. */
void cli_print_json(const json_t *doc);

/* The string value of v (borrowed), or `dflt` when v is not a string. */
const char *cli_str(const json_t *v, const char *dflt);

/* A scalar (or array/object, flattened) as text; new string. null -> "" */
char *cli_value_text(const json_t *v);

/* A table of strings, columns padded to their widest cell. */
struct cli_table;
struct cli_table *cli_table_new(size_t ncols, const char *const *headers); /* new */
/* Adds one row; `cells` (ncols strings, NULL = "") are copied. */
void cli_table_add(struct cli_table *t, const char *const *cells);
void cli_table_print(const struct cli_table *t, FILE *out);
/* The same; `header` false leaves the header row out (squeue --noheader). */
void cli_table_print_opt(const struct cli_table *t, FILE *out, bool header);
void cli_table_free(struct cli_table *t);

/*
 * Prints an array of objects as a table whose columns are the keys of the
 * first item, upper-cased (used for endpoints whose shape may grow:
 * usage, fairshare). Returns the number of rows.
 */
size_t cli_print_items_table(const json_t *items, FILE *out);

/* Prints an object as "Key=Value" lines (nested objects flattened with '.'). */
void cli_print_kv(const json_t *obj, FILE *out, const char *indent);

#endif
