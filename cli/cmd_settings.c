/* settings: the cluster policy settings (GET/PATCH /v1/settings), like
 * `scontrol show config` for reading and an admin's `set` for changing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cli_out.h"
#include "cmd.h"

/* KEY=VALUE: VALUE is JSON when it parses (4, true, ["a","b"]); a list
 * "block,rack" or a bare word is a string, or for topology_levels the
 * list of names ("" = no levels). */
static int add_setting(json_t *body, const char *arg, struct mu_error *err)
{
	const char *eq = strchr(arg, '=');
	char *key;
	json_t *v;

	if (!eq || eq == arg)
		return mu_error_set(err, MU_EINVAL, "", "expected KEY=VALUE, not '%s'", arg);
	key = mu_strndup(arg, (size_t)(eq - arg));
	v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
	if (!strcmp(key, "topology_levels") && !json_is_array(v)) {
		const char *p = eq + 1;

		json_decref(v);
		v = json_array();
		while (*p) {
			size_t n = strcspn(p, ",");

			json_array_append_new(v, json_stringn(p, n));
			p += n + (p[n] == ',');
		}
	} else if (!v) {
		v = json_string(eq + 1);
	}
	if (!v) {
		mu_free(key);
		return mu_error_set(err, MU_EINVAL, "", "'%s' is not valid UTF-8", arg);
	}
	json_object_set_new(body, key, v);
	mu_free(key);
	return 0;
}

static void print_settings(const json_t *all, char **keys, int nkeys)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)all, k, v) {
		bool want = nkeys == 0;
		char *text;

		for (int i = 0; i < nkeys && !want; i++)
			want = !strcmp(keys[i], k);
		if (!want)
			continue;
		text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		printf("%-20s = %s\n", k, text);
		free(text);
	}
}

int cmd_settings(struct cli_global *g, int argc, char **argv)
{
	struct cli_session sess;
	struct mu_error err;
	json_t *body = NULL, *out = NULL;
	const char *verb;
	int ret, first;

	mu_error_clear(&err);
	ret = cli_parse_plain(argc, argv, g, 0, -1, &first, &err);
	if (ret == 1) {
		cli_help("settings");
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error("settings", &err);
	verb = first < argc ? argv[first] : "get";
	if (strcmp(verb, "get") && strcmp(verb, "set")) {
		mu_error_set(&err, MU_EINVAL, "", "unknown subcommand '%s' (get, set)", verb);
		return cli_usage_error("settings", &err);
	}
	if (!strcmp(verb, "set")) {
		if (first + 1 >= argc) {
			mu_error_set(&err, MU_EINVAL, "", "set needs KEY=VALUE");
			return cli_usage_error("settings", &err);
		}
		body = json_object();
		for (int i = first + 1; i < argc; i++) {
			if (add_setting(body, argv[i], &err) < 0) {
				json_decref(body);
				return cli_usage_error("settings", &err);
			}
		}
	}
	ret = cli_session_open(&sess, g);
	if (ret) {
		json_decref(body);
		return ret;
	}
	if (cli_http_call(&sess.http, body ? "PATCH" : "GET", "/v1/settings", body, NULL, NULL, &out,
			  &err) < 0)
		ret = cli_report(&err);
	else if (sess.json)
		cli_print_json(out);
	else if (!body)
		print_settings(out, argv + first + 1, first + 1 < argc ? argc - first - 1 : 0);
	cli_session_close(&sess);
	json_decref(out);
	json_decref(body);
	return ret;
}
