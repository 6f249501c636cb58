/* Reports: usage (sreport), fairshare (sshare), whoami. Shapes may grow, so
 * tables take their columns from the server's items. */
#include "cmd.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "cli_out.h"

/* FairshareReport rows as sshare prints them; a tenant row has no user. */
static void fairshare_table(const json_t *items)
{
	static const char *const hdr[] = { "TENANT",   "USER",       "SHARES",
					   "NORM_SHARES", "RAW_USAGE", "DECAYED_USAGE",
					   "NORM_USAGE", "LEVEL_FS",  "FAIRSHARE" };
	static const char *const keys[] = { NULL,         "user",       "shares",
					    "norm_shares", "raw_usage",  "decayed_usage",
					    "norm_usage",  "level_fs",   "fairshare" };
	struct cli_table *t = cli_table_new(9, hdr);
	size_t i;
	json_t *row;

	json_array_foreach(items, i, row) {
		char *cells[9];
		const json_t *path = json_object_get(row, "path");

		cells[0] = cli_value_text(json_is_string(path) ? path : json_object_get(row, "tenant"));
		for (int k = 1; k < 9; k++) {
			const json_t *v = json_object_get(row, keys[k]);
			if (k == 7 && json_is_null(v) && v)
				cells[k] = mu_strdup("inf"); /* no usage: infinitely under its share */
			else if (!v || json_is_null(v))
				cells[k] = mu_strdup("-");
			else
				cells[k] = cli_value_text(v);
		}
		cli_table_add(t, (const char *const *)cells);
		for (int k = 0; k < 9; k++)
			mu_free(cells[k]);
	}
	cli_table_print(t, stdout);
	cli_table_free(t);
}

/* Prints a report answer: a table for {"items": [...]} or [...], else Key=Value. */
static void print_report(struct cli_session *s, const json_t *doc, bool fairshare)
{
	const json_t *items = json_is_array(doc) ? doc : json_object_get(doc, "items");

	if (s->json) {
		cli_print_json(doc);
	} else if (fairshare && json_is_array(items)) {
		fairshare_table(items);
	} else if (json_is_array(items)) {
		if (json_is_object(doc)) {
			/* Totals and periods next to the items, one line each. */
			const char *k;
			json_t *v;
			json_object_foreach((json_t *)doc, k, v) {
				if (!strcmp(k, "items") || !strcmp(k, "next_cursor") || json_is_array(v) ||
				    json_is_object(v))
					continue;
				char *t = cli_value_text(v);
				printf("%s=%s\n", k, t);
				mu_free(t);
			}
		}
		if (cli_print_items_table(items, stdout) == 0)
			printf("(no rows)\n");
	} else {
		cli_print_kv(doc, stdout, "");
	}
}

static int get_report(struct cli_global *g, const char *path, bool fairshare)
{
	struct cli_session s;
	struct mu_error err;
	json_t *doc = NULL;
	long status = 0;
	int ret;

	mu_error_clear(&err);
	ret = cli_session_open(&s, g);
	if (ret)
		return ret;
	ret = cli_http_call(&s.http, "GET", path, NULL, NULL, &status, &doc, &err);
	if (ret < 0 && (status == 404 || status == 405 || status == 501) && !err.field[0]) {
		/* A collection answering 404 is a route this server lacks. */
		fprintf(stderr, "muster: error: this server does not support this report yet "
				"(GET %.*s answered HTTP %ld)\n",
			(int)strcspn(path, "?"), path, status);
		ret = CLI_EXIT_ERROR;
	} else if (ret < 0) {
		ret = cli_report(&err);
	} else {
		print_report(&s, doc, fairshare);
		json_decref(doc);
		ret = CLI_EXIT_OK;
	}
	cli_session_close(&s);
	return ret;
}

enum { OPT_FROM = CLI_OPT_FIRST_PRIVATE, OPT_TO, OPT_GROUP_BY, OPT_TENANT };

int cmd_usage(struct cli_global *g, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "from", required_argument, NULL, OPT_FROM },
		{ "start", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "end", required_argument, NULL, OPT_TO },
		{ "group-by", required_argument, NULL, OPT_GROUP_BY },
		{ "tenant", required_argument, NULL, OPT_TENANT },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	static const char *const keys[] = { "from", "to", "group_by", "tenant" };
	const char *vals[4] = { NULL, NULL, NULL, NULL };
	struct mu_error err;
	char *path = mu_strdup("/v1/usage");
	int ret = 0;
	int c;

	mu_error_clear(&err);
	cli_getopt_reset();
	while ((c = cli_getopt_long(argc, argv, ":hS:E:", longopts)) != -1) {
		if (cli_common_opt(g, c, optarg))
			continue;
		if (c == CLI_OPT_HELP || c == 'h') {
			cli_help("usage");
			goto out;
		}
		if (c == 'S')
			c = OPT_FROM;
		if (c == 'E')
			c = OPT_TO;
		if (c >= OPT_FROM && c <= OPT_TENANT) {
			vals[c - OPT_FROM] = optarg;
			continue;
		}
		ret = cli_usage_error("usage", (cli_getopt_error(c, optopt, argv, optind, &err), &err));
		goto out;
	}
	if (optind < argc) {
		mu_error_set(&err, MU_EINVAL, "", "unexpected argument '%s'", argv[optind]);
		ret = cli_usage_error("usage", &err);
		goto out;
	}
	if (vals[2] && strcmp(vals[2], "tenant") && strcmp(vals[2], "user")) {
		mu_error_set(&err, MU_EINVAL, "group_by", "--group-by must be tenant or user");
		ret = cli_usage_error("usage", &err);
		goto out;
	}
	for (int k = 0; k < 4; k++) {
		char *n, *esc;
		if (!vals[k])
			continue;
		esc = cli_url_escape(vals[k]);
		n = mu_asprintf("%s%s%s=%s", path, strchr(path, '?') ? "&" : "?", keys[k], esc);
		mu_free(esc);
		mu_free(path);
		path = n;
	}
	ret = get_report(g, path, false);
out:
	mu_free(path);
	return ret;
}

int cmd_fairshare(struct cli_global *g, int argc, char **argv)
{
	struct mu_error err;
	int ret, first;

	mu_error_clear(&err);
	ret = cli_parse_plain(argc, argv, g, 0, 0, &first, &err);
	if (ret == 1) {
		cli_help("fairshare");
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error("fairshare", &err);
	return get_report(g, "/v1/fairshare", true);
}

int cmd_whoami(struct cli_global *g, int argc, char **argv)
{
	struct mu_error err;
	int ret, first;

	mu_error_clear(&err);
	ret = cli_parse_plain(argc, argv, g, 0, 0, &first, &err);
	if (ret == 1) {
		cli_help("whoami");
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error("whoami", &err);
	return get_report(g, "/v1/whoami", false);
}

int cmd_scheduler(struct cli_global *g, int argc, char **argv)
{
	struct mu_error err;
	int ret, first;

	mu_error_clear(&err);
	ret = cli_parse_plain(argc, argv, g, 0, 0, &first, &err);
	if (ret == 1) {
		cli_help("scheduler");
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error("scheduler", &err);
	return get_report(g, "/v1/scheduler", false);
}
