/*
 * cli_conf.h - where the CLI finds its server and token.
 *
 * Precedence, per setting: --url/--token flag > MUSTER_URL/MUSTER_TOKEN >
 * the config file ($MUSTER_CONFIG, else ~/.config/muster/config) > the
 * default URL http://127.0.0.1:8080 (no default token).
 *
 * File format: one "key = value" per line (keys `url`, `token`), '#'
 * comments and blank lines ignored, a value may be wrapped in double quotes.
 */
#ifndef CLI_CONF_H
#define CLI_CONF_H

#include "error.h"

#define CLI_DEFAULT_URL "http://127.0.0.1:8080"

struct cli_conf {
	char *url;   /* new */
	char *token; /* new, or NULL */
};

/*
 * Reads `path` into conf (only the keys it sets replace conf's values).
 * A missing file is not an error unless `must_exist`. Returns 0, or
 * MU_EIO / MU_EPARSE with err naming the file and line.
 */
int cli_conf_read_file(const char *path, int must_exist, struct cli_conf *conf,
		       struct mu_error *err) __attribute__((warn_unused_result));

/* Resolves url and token by the precedence above. flag_* may be NULL. */
int cli_conf_resolve(const char *flag_url, const char *flag_token, struct cli_conf *conf,
		     struct mu_error *err) __attribute__((warn_unused_result));

void cli_conf_release(struct cli_conf *conf);

#endif
