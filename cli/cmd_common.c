#include "cmd.h"

#include <getopt.h>
#include <pthread.h>
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

/* One page's GET, run on its own thread while the page before is parsed. */
struct page_fetch {
	struct cli_http *http;
	char *url;
	struct cli_http_header next; /* the server's next cursor, ahead of the body */
	char *body;
	size_t len;
	int ret;
	struct mu_error err;
	pthread_t thread;
	bool running;
};

static void *page_fetch_run(void *arg)
{
	struct page_fetch *f = arg;

	f->ret = cli_http_get_bytes(f->http, f->url, &f->next, 1, &f->body, &f->len, &f->err);
	return NULL;
}

static char *page_url(const char *path, struct cli_http *h, const char *cursor)
{
	const char *sep = strchr(path, '?') ? "&" : "?";
	char *esc, *url;

	if (!cursor)
		return mu_asprintf("%s%slimit=1000", path, sep);
	esc = cli_http_escape(h, cursor);
	url = mu_asprintf("%s%slimit=1000&cursor=%s", path, sep, esc);
	mu_free(esc);
	return url;
}

static void page_fetch_start(struct page_fetch *f, struct cli_http *h, char *url)
{
	memset(f, 0, sizeof(*f));
	f->http = h;
	f->url = url;
	f->next.name = "muster-next-cursor";
	mu_error_clear(&f->err);
	if (pthread_create(&f->thread, NULL, page_fetch_run, f) == 0) {
		f->running = true;
		return;
	}
	page_fetch_run(f); /* no thread to be had: fetch it now */
}

static void page_fetch_wait(struct page_fetch *f)
{
	if (f->running)
		pthread_join(f->thread, NULL);
	f->running = false;
	mu_free(f->url);
	f->url = NULL;
}

static void page_fetch_drop(struct page_fetch *f)
{
	page_fetch_wait(f);
	mu_free(f->body);
	f->body = NULL;
}

/*
 * The pages of a listing, in order. When the server names the next cursor
 * in a header, the next page is asked for while this one is parsed and
 * handed on (the session's connection belongs to that fetch meanwhile);
 * otherwise one after the other from the body's next_cursor.
 */
int cli_get_pages(struct cli_session *s, const char *path, cli_page_fn fn, void *arg,
		  struct mu_error *err)
{
	struct page_fetch f[2];
	int cur = 0, ret = 0;

	memset(f, 0, sizeof(f));
	page_fetch_start(&f[cur], &s->http, page_url(path, &s->http, NULL));
	for (;;) {
		struct page_fetch *p = &f[cur], *q = &f[!cur];
		const char *ahead = p->next.value;
		char *cursor = NULL;
		json_t *page, *next, *items;
		json_error_t jerr;

		page_fetch_wait(p);
		if (p->ret < 0) {
			*err = p->err;
			ret = p->ret;
			goto fail;
		}
		if (*ahead)
			page_fetch_start(q, &s->http, page_url(path, &s->http, ahead));
		page = p->body ? json_loadb(p->body, p->len, JSON_ALLOW_NUL, &jerr) : NULL;
		mu_free(p->body);
		p->body = NULL;
		items = json_object_get(page, "items");
		if (!json_is_array(items)) {
			ret = mu_error_set(err, MU_EJSON, "", page ? "server answer has no 'items' list"
							      : "server sent invalid JSON: %s",
					   p->len ? jerr.text : "empty answer");
			json_decref(page);
			goto fail;
		}
		next = json_object_get(page, "next_cursor");
		if (json_is_string(next) && json_string_length(next))
			cursor = mu_strdup(json_string_value(next));
		else if (json_is_integer(next))
			cursor = mu_asprintf("%lld", (long long)json_integer_value(next));
		/* A page without items but with a cursor would loop forever on a bad server. */
		if ((cursor && json_array_size(items) == 0) ||
		    (*ahead && (!cursor || strcmp(cursor, ahead)))) {
			ret = mu_error_set(err, MU_EJSON, "", cursor && !json_array_size(items)
					   ? "server sent an empty page with a cursor"
					   : "server sent two different next cursors");
			mu_free(cursor);
			json_decref(page);
			goto fail;
		}
		fn(arg, items);
		json_decref(page);
		if (!cursor)
			break;
		if (!*ahead)
			page_fetch_start(q, &s->http, page_url(path, &s->http, cursor));
		mu_free(cursor);
		cur = !cur;
	}
	return 0;
fail:
	page_fetch_drop(&f[!cur]);
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
