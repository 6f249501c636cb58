/* muster history (sacct): ended jobs from GET /v1/history, each page printed as it comes. */
#include "cmd.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "cli_history.h"
#include "cli_out.h"

int cmd_history(struct cli_global *g, int argc, char **argv)
{
	struct cli_history h = { .g = *g };
	struct cli_session sess;
	struct mu_error err;
	char *cursor = NULL;
	bool first = true;
	int ret;

	mu_error_clear(&err);
	ret = cli_history_parse(argc, argv, (int64_t)time(NULL), &h, &err);
	if (ret == 1) {
		cli_help("history");
		ret = CLI_EXIT_OK;
		goto out_release;
	}
	if (ret < 0) {
		ret = cli_usage_error("history", &err);
		goto out_release;
	}
	if ((ret = cli_session_open(&sess, &h.g)))
		goto out_release;
	if (sess.json)
		printf("{\"items\": [");
	else
		cli_history_header(&h, stdout);
	for (;;) {
		char *esc = cursor ? cli_http_escape(&sess.http, cursor) : NULL;
		char *path = mu_asprintf("/v1/history?%s&limit=1000%s%s", h.query, esc ? "&cursor=" : "",
					 esc ? esc : "");
		json_t *page = NULL, *next;
		size_t i;
		json_t *j;

		ret = cli_http_call(&sess.http, "GET", path, NULL, NULL, NULL, &page, &err);
		mu_free(path);
		mu_free(esc);
		if (ret < 0) {
			if (sess.json)
				printf("]}\n");
			ret = cli_report(&err);
			goto out_close;
		}
		json_array_foreach(json_object_get(page, "items"), i, j) {
			if (sess.json) {
				char *t = json_dumps(j, JSON_COMPACT);
				printf("%s\n  %s", first ? "" : ",", t);
				free(t);
			} else {
				cli_history_row(&h, j, stdout);
			}
			first = false;
		}
		next = json_object_get(page, "next_cursor");
		mu_free(cursor);
		cursor = json_is_string(next) && json_array_size(json_object_get(page, "items"))
				 ? mu_strdup(json_string_value(next))
				 : NULL;
		json_decref(page);
		if (!cursor)
			break;
	}
	if (sess.json)
		printf("%s], \"next_cursor\": null}\n", first ? "" : "\n");
	ret = CLI_EXIT_OK;
out_close:
	mu_free(cursor);
	cli_session_close(&sess);
out_release:
	cli_history_release(&h);
	return ret;
}
