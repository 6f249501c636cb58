#include "cmd.h"

#include <getopt.h>
#include <string.h>

#include "alloc.h"
#include "cli_conf.h"
#include "cli_out.h"

int cli_session_open(struct cli_session *s, const struct cli_global *g)
{
	struct cli_conf conf;
	struct mu_error err;
	int ret;

	memset(s, 0, sizeof(*s));
	s->json = g->json;
	mu_error_clear(&err);
	ret = cli_conf_resolve(g->url, g->token, &conf, &err);
	if (ret < 0) {
		err.code = MU_EINVAL;
		cli_report(&err);
		return CLI_EXIT_USAGE;
	}
	if (strncmp(conf.url, "http://", 7) && strncmp(conf.url, "https://", 8)) {
		mu_error_set(&err, MU_EINVAL, "url", "invalid server URL '%s' (want http://HOST:PORT)",
			     conf.url);
		cli_conf_release(&conf);
		cli_report(&err);
		return CLI_EXIT_USAGE;
	}
	ret = cli_http_init(&s->http, conf.url, conf.token);
	cli_conf_release(&conf);
	if (ret < 0) {
		mu_error_set(&err, ret, "", "invalid server URL");
		return cli_report(&err);
	}
	return 0;
}

void cli_session_close(struct cli_session *s)
{
	cli_http_release(&s->http);
}

int cli_get_pages(struct cli_session *s, const char *path, cli_page_fn fn, void *arg,
		  struct mu_error *err)
{
	char *cursor = NULL;
	int ret = 0;

	for (;;) {
		const char *sep = strchr(path, '?') ? "&" : "?";
		char *esc = cursor ? cli_http_escape(&s->http, cursor) : NULL;
		char *url = esc ? mu_asprintf("%s%slimit=1000&cursor=%s", path, sep, esc)
				: mu_asprintf("%s%slimit=1000", path, sep);
		json_t *page = NULL;
		json_t *next, *items;

		ret = cli_http_call(&s->http, "GET", url, NULL, NULL, NULL, &page, err);
		mu_free(url);
		mu_free(esc);
		if (ret < 0)
			goto out;
		items = json_object_get(page, "items");
		if (!json_is_array(items)) {
			json_decref(page);
			ret = mu_error_set(err, MU_EJSON, "", "server answer has no 'items' list");
			goto out;
		}
		next = json_object_get(page, "next_cursor");
		mu_free(cursor);
		cursor = NULL;
		if (json_is_string(next) && json_string_length(next))
			cursor = mu_strdup(json_string_value(next));
		else if (json_is_integer(next))
			cursor = mu_asprintf("%lld", (long long)json_integer_value(next));
		/* A page without items but with a cursor would loop forever on a bad server. */
		if (cursor && json_array_size(items) == 0) {
			json_decref(page);
			ret = mu_error_set(err, MU_EJSON, "", "server sent an empty page with a cursor");
			goto out;
		}
		fn(arg, items);
		json_decref(page);
		if (!cursor)
			break;
	}
out:
	mu_free(cursor);
	return ret;
}

static void add_page(void *arg, json_t *items)
{
	json_array_extend(arg, items);
}

int cli_get_all(struct cli_session *s, const char *path, json_t **items, struct mu_error *err)
{
	json_t *all = json_array();
	int ret = cli_get_pages(s, path, add_page, all, err);

	*items = NULL;
	if (ret < 0) {
		json_decref(all);
		return ret;
	}
	*items = all;
	return 0;
}

int cli_parse_plain(int argc, char **argv, struct cli_global *g, int min_pos, int max_pos,
		    int *first, struct mu_error *err)
{
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int npos;
	int c;

	cli_getopt_reset();
	/* Permuting mode: "muster show 12 --json" works like "muster show --json 12". */
	while ((c = cli_getopt_long(argc, argv, ":h", longopts)) != -1) {
		if (cli_common_opt(g, c, optarg))
			continue;
		if (c == CLI_OPT_HELP || c == 'h')
			return 1;
		return cli_getopt_error(c, optopt, argv, optind, err);
	}
	*first = optind;
	npos = argc - optind;
	if (npos < min_pos)
		return mu_error_set(err, MU_EINVAL, "", "missing argument");
	if (max_pos >= 0 && npos > max_pos)
		return mu_error_set(err, MU_EINVAL, "", "unexpected argument '%s'",
				    argv[optind + max_pos]);
	return 0;
}

char *cli_time_text(const json_t *v, const char *none)
{
	const char *s = json_string_value(v);
	size_t n;

	if (!s || !*s)
		return mu_strdup(none);
	/* RFC 3339 UTC to the second, as scontrol prints times. */
	n = strcspn(s, ".Z+");
	if (n > 19)
		n = 19;
	return mu_strndup(s, n);
}
