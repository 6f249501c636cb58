/*
 * config.h - one declarative table of flags and MUSTER_* environment
 * variables per daemon, from which parsing, validation and --help come.
 *
 *   static char *db_url;
 *   static long long http_port;
 *   static const struct mu_opt opts[] = {
 *       { "db", "MUSTER_DATABASE_URL", MU_OPT_STR, "", "PostgreSQL URL", &db_url },
 *       ...
 *   };
 *
 * Precedence: built-in default < environment < command-line flag.
 * Flags are `--name value` or `--name=value`; booleans also take `--name`.
 */
#ifndef MU_CONFIG_H
#define MU_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"

enum mu_opt_type {
	MU_OPT_STR,      /* char **: new string (free with mu_free), never NULL */
	MU_OPT_INT,      /* long long * */
	MU_OPT_BOOL,     /* bool *: true/false/1/0/yes/no/on/off */
	MU_OPT_SIZE,     /* long long *: bytes, with optional k/m/g suffix (KiB, MiB, GiB) */
	MU_OPT_DURATION, /* long long *: milliseconds, with suffix ms/s/m/h/d (bare = seconds) */
};

struct mu_opt {
	const char *name; /* long flag, without the leading "--" */
	const char *env;  /* environment variable, or NULL */
	enum mu_opt_type type;
	const char *def;  /* default as text, parsed like any other value; NULL = "" / 0 */
	const char *help;
	void *dst;
};

/*
 * Parses defaults, then the environment, then argv. `--help` prints usage
 * to stdout and exits 0; an error prints one line to stderr plus a hint and
 * returns MU_EINVAL with `err` filled. On success returns the index of the
 * first positional argument (argv[ret..argc-1] are left to the caller; "--"
 * ends options).
 */
int mu_config_parse(const struct mu_opt *opts, size_t nopts, int argc, char **argv,
		    const char *summary, struct mu_error *err);
void mu_config_usage(FILE *out, const struct mu_opt *opts, size_t nopts, const char *prog,
		     const char *summary);
/* Frees the MU_OPT_STR values of the table. */
void mu_config_release(const struct mu_opt *opts, size_t nopts);

/* Value parsers, shared with anything that reads these forms. 0 or MU_EINVAL. */
int mu_parse_bool(const char *s, bool *out);
int mu_parse_int(const char *s, long long *out);
int mu_parse_size(const char *s, long long *out);
int mu_parse_duration_ms(const char *s, long long *out);

#endif
