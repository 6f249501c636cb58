/*
 * cmd.h - the CLI's commands (one entry point each, returning the process
 * exit code from cli_out.h) and the session helpers they share.
 */
#ifndef CLI_CMD_H
#define CLI_CMD_H

#include <stdbool.h>

#include <jansson.h>

#include "cli_args.h"
#include "cli_http.h"

struct cli_session {
	struct cli_http http;
	bool json;
};

/* Resolves url/token (cli_conf.h) and opens the client. Returns an exit
 * code: 0 on success, else the error was printed. */
int cli_session_open(struct cli_session *s, const struct cli_global *g);
void cli_session_close(struct cli_session *s);

/*
 * GETs `path` (which may already carry a query) and every following page
 * through next_cursor. *items gets a new array of all items. 0 or MU_E*.
 */
int cli_get_all(struct cli_session *s, const char *path, json_t **items, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * The same, page by page: fn(arg, items) gets each page's items (borrowed:
 * freed after fn returns) as it arrives, so a long listing is never held
 * whole (muster queue). 0 or MU_E* (pages before the error were handed on).
 */
typedef void (*cli_page_fn)(void *arg, json_t *items);
int cli_get_pages(struct cli_session *s, const char *path, cli_page_fn fn, void *arg,
		  struct mu_error *err) __attribute__((warn_unused_result));

/*
 * Parses a command that takes only the common options and positionals
 * (options may come after positionals). On 0, argv[*first..argc-1] are the
 * positionals, between min_pos and max_pos of them (max_pos < 0 = any).
 * Returns 1 for --help, or MU_EINVAL with err filled.
 */
int cli_parse_plain(int argc, char **argv, struct cli_global *g, int min_pos, int max_pos,
		    int *first, struct mu_error *err);

/* Prints the usage of `cmd` (or of muster itself when NULL) on stdout. */
void cli_help(const char *cmd);

/* Prints a time from the API ("2026-11-30T06:14:40.123Z") as Slurm does
 * ("2026-11-30T06:14:40"); new string; null -> "Unknown"/"None" per `none`. */
char *cli_time_text(const json_t *v, const char *none);

typedef int (*cli_cmd_fn)(struct cli_global *g, int argc, char **argv);

int cmd_submit(struct cli_global *g, int argc, char **argv);
int cmd_queue(struct cli_global *g, int argc, char **argv);
int cmd_show(struct cli_global *g, int argc, char **argv);
int cmd_cancel(struct cli_global *g, int argc, char **argv);
int cmd_explain(struct cli_global *g, int argc, char **argv);
int cmd_tenants(struct cli_global *g, int argc, char **argv);
int cmd_classes(struct cli_global *g, int argc, char **argv);
int cmd_quota(struct cli_global *g, int argc, char **argv);
int cmd_tokens(struct cli_global *g, int argc, char **argv);
int cmd_nodes(struct cli_global *g, int argc, char **argv);
int cmd_node(struct cli_global *g, int argc, char **argv);
int cmd_usage(struct cli_global *g, int argc, char **argv);
int cmd_fairshare(struct cli_global *g, int argc, char **argv);
int cmd_scheduler(struct cli_global *g, int argc, char **argv);
int cmd_whoami(struct cli_global *g, int argc, char **argv);
int cmd_logs(struct cli_global *g, int argc, char **argv);
int cmd_history(struct cli_global *g, int argc, char **argv);
int cmd_completion(struct cli_global *g, int argc, char **argv);

/* The command table of main.c (borrowed), for `muster completion`. */
struct cli_command_info {
	const char *name;
	cli_cmd_fn fn;
};
const struct cli_command_info *cli_commands(size_t *n);
/* cmd_jobctl.c: scontrol hold/release/requeue/update */
int cmd_hold(struct cli_global *g, int argc, char **argv);
int cmd_release(struct cli_global *g, int argc, char **argv);
int cmd_requeue(struct cli_global *g, int argc, char **argv);
int cmd_update(struct cli_global *g, int argc, char **argv);
/* cmd_settings.c */
int cmd_settings(struct cli_global *g, int argc, char **argv);

#endif
