/* Administration: tenants, quota, tokens, nodes (sacctmgr / scontrol update equivalents). */
#include "cmd.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "config.h"
#include "cli_out.h"
#include "duration.h"

/* Every option of the admin commands; each action says which it accepts. */
enum admin_opt {
	A_PARENT,
	A_SHARES,
	A_DESCRIPTION,
	A_GPU_MODEL,
	A_GUARANTEED,
	A_MAX_GPUS,
	A_MAX_RUNNING,
	A_MAX_PENDING,
	A_MAX_TIME,
	A_NAME,
	A_ROLE,
	A_TENANT,
	A_USER,
	A_NODE,
	A_EXPIRES,
	A_REASON,
	A_PRIORITY,
	A_PREEMPTIBLE,
	A_DEFAULT_TIME,
	A_GRACE,
	A_IS_DEFAULT,
	A_COUNT,
};

static const char *const admin_opt_names[A_COUNT] = {
	"parent",           "shares",           "description",    "gpu-model",
	"guaranteed-gpus",  "max-gpus",         "max-running-jobs", "max-pending-jobs",
	"max-time-limit",   "name",             "role",           "tenant",
	"user",             "node",             "expires-at",     "reason",
	"priority",         "preemptible",      "default-time-limit", "grace-period",
	"default",
};

struct admin_args {
	const char *v[A_COUNT]; /* borrowed from argv; NULL = not given */
	int first;              /* first positional */
};

#define BIT(o) (1u << (o))

static int admin_parse(int argc, char **argv, struct cli_global *g, struct admin_args *a,
		       struct mu_error *err)
{
	struct option longopts[A_COUNT + 5];
	int c;

	memset(a, 0, sizeof(*a));
	for (int i = 0; i < A_COUNT; i++)
		longopts[i] = (struct option){ admin_opt_names[i], required_argument, NULL,
					       CLI_OPT_FIRST_PRIVATE + i };
	{
		const struct option common[] = { CLI_COMMON_LONGOPTS, { NULL, 0, NULL, 0 } };
		memcpy(&longopts[A_COUNT], common, sizeof(common));
	}
	cli_getopt_reset();
	while ((c = cli_getopt_long(argc, argv, ":h", longopts)) != -1) {
		if (cli_common_opt(g, c, optarg))
			continue;
		if (c == CLI_OPT_HELP || c == 'h')
			return 1;
		if (c >= CLI_OPT_FIRST_PRIVATE && c < CLI_OPT_FIRST_PRIVATE + A_COUNT) {
			a->v[c - CLI_OPT_FIRST_PRIVATE] = optarg;
			continue;
		}
		return cli_getopt_error(c, optopt, argv, optind, err);
	}
	a->first = optind;
	return 0;
}

/* Checks the options given against those `action` accepts and the positional count. */
static int admin_check(const struct admin_args *a, unsigned allowed, const char *action,
		       int argc, int npos_min, int npos_max, struct mu_error *err)
{
	int npos = argc - a->first - 1; /* minus the action word */

	for (int i = 0; i < A_COUNT; i++)
		if (a->v[i] && !(allowed & BIT(i)))
			return mu_error_set(err, MU_EINVAL, admin_opt_names[i],
					    "option --%s does not apply to '%s'", admin_opt_names[i],
					    action);
	if (npos < npos_min)
		return mu_error_set(err, MU_EINVAL, "", "'%s' needs %d argument%s", action, npos_min,
				    npos_min == 1 ? "" : "s");
	if (npos > npos_max)
		return mu_error_set(err, MU_EINVAL, "", "unexpected argument for '%s'", action);
	return 0;
}

/* Runs one request and prints its result; returns an exit code. */
static int request(struct cli_session *s, const char *method, const char *path, json_t *body,
		   json_t **out)
{
	struct mu_error err;
	json_t *doc = NULL;
	int ret;

	mu_error_clear(&err);
	ret = cli_http_call(&s->http, method, path, body, NULL, NULL, &doc, &err);
	if (ret < 0)
		return cli_report(&err);
	if (out)
		*out = doc;
	else
		json_decref(doc);
	return CLI_EXIT_OK;
}

static int list_table(struct cli_session *s, const char *path, size_t ncols,
		      const char *const *hdr, const char *const *keys)
{
	struct mu_error err;
	json_t *items = NULL;
	struct cli_table *t;
	const char **row;
	size_t i;
	json_t *v;
	int ret;

	mu_error_clear(&err);
	ret = cli_get_all(s, path, &items, &err);
	if (ret < 0)
		return cli_report(&err);
	if (s->json) {
		json_t *doc = json_pack("{s:O, s:n}", "items", items, "next_cursor");
		cli_print_json(doc);
		json_decref(doc);
		json_decref(items);
		return CLI_EXIT_OK;
	}
	t = cli_table_new(ncols, hdr);
	row = mu_calloc(ncols, sizeof(char *));
	json_array_foreach(items, i, v) {
		for (size_t c = 0; c < ncols; c++) {
			const json_t *cell = json_object_get(v, keys[c]);
			if (strstr(keys[c], "_at"))
				row[c] = cli_time_text(cell, "-");
			else
				row[c] = json_is_null(cell) || !cell ? mu_strdup("-")
								      : cli_value_text(cell);
		}
		cli_table_add(t, row);
		for (size_t c = 0; c < ncols; c++)
			mu_free((char *)row[c]);
	}
	cli_table_print(t, stdout);
	cli_table_free(t);
	mu_free(row);
	json_decref(items);
	return CLI_EXIT_OK;
}

static void print_obj(struct cli_session *s, const json_t *doc)
{
	if (s->json)
		cli_print_json(doc);
	else
		cli_print_kv(doc, stdout, "");
}

static int set_int_opt(json_t *body, const char *key, const char *val, long long min,
		       long long max, bool nullable, struct mu_error *err)
{
	long long v;
	int ret;

	if (nullable && (!strcasecmp(val, "none") || !strcasecmp(val, "unlimited"))) {
		json_object_set_new(body, key, json_null());
		return 0;
	}
	ret = cli_parse_int(val, key, min, max, &v, err);
	if (ret == 0)
		json_object_set_new(body, key, json_integer(v));
	return ret;
}

static int set_str_opt(json_t *body, const char *key, const char *val, struct mu_error *err)
{
	json_t *s = json_string(val);
	if (!s)
		return mu_error_set(err, MU_EUTF8, key, "--%s: not valid UTF-8", key);
	json_object_set_new(body, key, s);
	return 0;
}

/* The action word and the path-escaped positional after it. */
static char *pos_escaped(struct cli_session *s, char **argv, const struct admin_args *a, int k)
{
	return cli_http_escape(&s->http, argv[a->first + 1 + k]);
}

/*
 * The common start of an admin command: parses its options, answers -h and
 * picks the action (argv's first positional, else `dflt`). Returns -1 to go
 * on, else the exit code to return at once (help shown, usage error told).
 */
static int admin_start(int argc, char **argv, struct cli_global *g, const char *cmd,
		       const char *dflt, struct admin_args *a, const char **action,
		       struct mu_error *err)
{
	int ret;

	mu_error_clear(err);
	ret = admin_parse(argc, argv, g, a, err);
	if (ret == 1) {
		cli_help(cmd);
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error(cmd, err);
	*action = a->first < argc ? argv[a->first] : dflt;
	if (a->first >= argc)
		a->first--; /* "muster tenants" alone = list; keep the positional count right */
	return -1;
}

/*
 * create/update/delete/show of the resource `escaped` (already URL-escaped)
 * under `collection`: prints the resource for show or --json, else one line
 * "Created <what> <display>" like scontrol/sacctmgr do.
 */
static int crud_named(struct cli_session *s, const char *action, const char *collection,
		      const char *escaped, const char *what, const char *display, json_t *body)
{
	char *path = mu_asprintf("%s/%s", collection, escaped);
	json_t *doc = NULL;
	int ret;

	if (!strcmp(action, "create"))
		ret = request(s, "POST", collection, body, &doc);
	else if (!strcmp(action, "update"))
		ret = request(s, "PATCH", path, body, &doc);
	else if (!strcmp(action, "delete"))
		ret = request(s, "DELETE", path, NULL, &doc);
	else
		ret = request(s, "GET", path, NULL, &doc);
	if (ret)
		goto out;
	if (!strcmp(action, "show") || s->json) {
		if (doc)
			print_obj(s, doc);
	} else {
		printf("%s %s %s\n",
		       !strcmp(action, "create")   ? "Created"
		       : !strcmp(action, "update") ? "Updated"
						   : "Deleted",
		       what, display);
	}
out:
	json_decref(doc);
	mu_free(path);
	return ret;
}

int cmd_tenants(struct cli_global *g, int argc, char **argv)
{
	static const char *const hdr[] = { "NAME", "PARENT", "PATH", "SHARES", "DESCRIPTION" };
	static const char *const keys[] = { "name", "parent", "path", "shares", "description" };
	struct admin_args a;
	struct cli_session s;
	struct mu_error err;
	const char *action = ""; /* set by admin_start; -O3 cannot see it */
	json_t *body = NULL;
	char *name = NULL;
	int ret;

	ret = admin_start(argc, argv, g, "tenants", "list", &a, &action, &err);
	if (ret >= 0)
		return ret;
	body = json_object();
	if (!strcmp(action, "list")) {
		ret = admin_check(&a, 0, action, argc, 0, 0, &err);
	} else if (!strcmp(action, "show") || !strcmp(action, "delete")) {
		ret = admin_check(&a, 0, action, argc, 1, 1, &err);
	} else if (!strcmp(action, "create") || !strcmp(action, "update")) {
		ret = admin_check(&a, BIT(A_PARENT) | BIT(A_SHARES) | BIT(A_DESCRIPTION), action, argc,
				  1, 1, &err);
		if (!ret && !strcmp(action, "create"))
			ret = set_str_opt(body, "name", argv[a.first + 1], &err);
		if (!ret && a.v[A_PARENT])
			ret = set_str_opt(body, "parent", a.v[A_PARENT], &err);
		if (!ret && a.v[A_SHARES])
			ret = set_int_opt(body, "shares", a.v[A_SHARES], 0, 1000000, false, &err);
		if (!ret && a.v[A_DESCRIPTION])
			ret = set_str_opt(body, "description", a.v[A_DESCRIPTION], &err);
		if (!ret && !strcmp(action, "update") && json_object_size(body) == 0)
			ret = mu_error_set(&err, MU_EINVAL, "",
					   "nothing to update (--shares, --description, --parent)");
	} else {
		ret = mu_error_set(&err, MU_EINVAL, "",
				   "unknown action '%s' (list, create, show, update, delete)", action);
	}
	if (ret < 0) {
		ret = cli_usage_error("tenants", &err);
		goto out;
	}
	ret = cli_session_open(&s, g);
	if (ret)
		goto out;
	if (!strcmp(action, "list")) {
		ret = list_table(&s, "/v1/tenants", 5, hdr, keys);
		goto out_close;
	}
	name = pos_escaped(&s, argv, &a, 0);
	ret = crud_named(&s, action, "/v1/tenants", name, "tenant", argv[a.first + 1], body);
out_close:
	cli_session_close(&s);
out:
	json_decref(body);
	mu_free(name);
	return ret;
}

static const char *const quota_keys[] = { "guaranteed_gpus", "max_gpus", "max_running_jobs",
					  "max_pending_jobs", "max_time_limit" };

static void quota_table(const json_t *items, bool with_tenant)
{
	static const char *const hdr[] = { "TENANT",      "GPU_MODEL",   "GUARANTEED", "MAX_GPUS",
					   "MAX_RUNNING", "MAX_PENDING", "MAX_TIME" };
	struct cli_table *t = cli_table_new(with_tenant ? 7 : 6, with_tenant ? hdr : hdr + 1);
	size_t i;
	json_t *q;

	json_array_foreach(items, i, q) {
		char *cells[7] = { 0 };
		const json_t *model = json_object_get(q, "gpu_model");
		int c = 0;

		if (with_tenant)
			cells[c++] = cli_value_text(json_object_get(q, "tenant"));
		cells[c++] = json_string_length(model) ? cli_value_text(model) : mu_strdup("(any)");
		for (size_t k = 0; k < 5; k++) {
			const json_t *v = json_object_get(q, quota_keys[k]);
			if (!json_is_integer(v)) {
				cells[c++] = mu_strdup("-");
			} else if (k == 4) {
				char buf[32];
				mu_duration_format(json_integer_value(v), buf, sizeof(buf));
				cells[c++] = mu_strdup(buf);
			} else {
				cells[c++] = cli_value_text(v);
			}
		}
		cli_table_add(t, (const char *const *)cells);
		for (int k = 0; k < c; k++)
			mu_free(cells[k]);
	}
	cli_table_print(t, stdout);
	cli_table_free(t);
}

/* Finds the quota row for `model` ("" = any) in a quota list; borrowed or NULL. */
static json_t *quota_find(const json_t *items, const char *model)
{
	size_t i;
	json_t *q;

	json_array_foreach(items, i, q) {
		const char *m = json_string_value(json_object_get(q, "gpu_model"));
		if (!strcmp(m ? m : "", model))
			return q;
	}
	return NULL;
}

int cmd_quota(struct cli_global *g, int argc, char **argv)
{
	static const unsigned set_opts = BIT(A_GPU_MODEL) | BIT(A_GUARANTEED) | BIT(A_MAX_GPUS) |
					 BIT(A_MAX_RUNNING) | BIT(A_MAX_PENDING) | BIT(A_MAX_TIME);
	struct admin_args a;
	struct cli_session s;
	struct mu_error err;
	const char *action = ""; /* set by admin_start; -O3 cannot see it */
	json_t *body = json_object();
	json_t *doc = NULL;
	char *tenant = NULL, *path = NULL;
	int ret;

	ret = admin_start(argc, argv, g, "quota", "show", &a, &action, &err);
	if (ret >= 0)
		goto out;
	if (!strcmp(action, "show")) {
		ret = admin_check(&a, 0, action, argc, 0, 1, &err);
	} else if (!strcmp(action, "clear")) {
		ret = admin_check(&a, BIT(A_GPU_MODEL), action, argc, 1, 1, &err);
	} else if (!strcmp(action, "set")) {
		static const int opt_of[5] = { A_GUARANTEED, A_MAX_GPUS, A_MAX_RUNNING, A_MAX_PENDING,
					       A_MAX_TIME };
		ret = admin_check(&a, set_opts, action, argc, 1, 1, &err);
		/* guaranteed_gpus has no "no limit": none means 0. */
		if (a.v[A_GUARANTEED] && (!strcasecmp(a.v[A_GUARANTEED], "none") ||
					  !strcasecmp(a.v[A_GUARANTEED], "unlimited")))
			json_object_set_new(body, "guaranteed_gpus", json_integer(0));
		else if (a.v[A_GUARANTEED])
			ret = set_int_opt(body, "guaranteed_gpus", a.v[A_GUARANTEED], 0, 1000000,
					  false, &err);
		for (int k = 1; !ret && k < 4; k++)
			if (a.v[opt_of[k]])
				ret = set_int_opt(body, quota_keys[k], a.v[opt_of[k]], 0, 2147483647,
						  true, &err);
		if (!ret && a.v[A_MAX_TIME]) {
			int64_t secs;
			if (!strcasecmp(a.v[A_MAX_TIME], "none") ||
			    !strcasecmp(a.v[A_MAX_TIME], "unlimited"))
				json_object_set_new(body, "max_time_limit", json_null());
			else if ((ret = cli_parse_time(a.v[A_MAX_TIME], &secs, &err)) == 0)
				json_object_set_new(body, "max_time_limit", json_integer(secs));
		}
		if (!ret && json_object_size(body) == 0)
			ret = mu_error_set(&err, MU_EINVAL, "",
					   "nothing to set (--guaranteed-gpus, --max-gpus, "
					   "--max-running-jobs, --max-pending-jobs, --max-time-limit)");
	} else {
		ret = mu_error_set(&err, MU_EINVAL, "", "unknown action '%s' (show, set, clear)",
				   action);
	}
	if (ret < 0) {
		ret = cli_usage_error("quota", &err);
		goto out;
	}
	ret = cli_session_open(&s, g);
	if (ret)
		goto out;
	if (a.first + 1 >= argc) { /* "quota show" without a tenant: every visible quota */
		ret = request(&s, "GET", "/v1/quotas", NULL, &doc);
		if (!ret) {
			if (s.json)
				cli_print_json(doc);
			else
				quota_table(json_object_get(doc, "items"), true);
		}
		goto out_close;
	}
	tenant = pos_escaped(&s, argv, &a, 0);
	path = mu_asprintf("/v1/tenants/%s/quota", tenant);
	if (!strcmp(action, "show")) {
		ret = request(&s, "GET", path, NULL, &doc);
		if (!ret) {
			if (s.json)
				cli_print_json(doc);
			else
				quota_table(json_object_get(doc, "items"), false);
		}
	} else if (!strcmp(action, "clear")) {
		char *m = cli_http_escape(&s.http, a.v[A_GPU_MODEL] ? a.v[A_GPU_MODEL] : "");
		char *p = mu_asprintf("%s?gpu_model=%s", path, m);
		ret = request(&s, "DELETE", p, NULL, NULL);
		mu_free(m);
		mu_free(p);
		if (!ret && !s.json)
			printf("Cleared quota of tenant %s\n", argv[a.first + 1]);
	} else {
		/* PUT replaces the whole row: start from the current one so that
		 * "quota set --max-gpus 8" keeps the other limits. */
		const char *model = a.v[A_GPU_MODEL] ? a.v[A_GPU_MODEL] : "";
		json_t *cur = NULL, *row;
		json_t *put = json_object();

		ret = request(&s, "GET", path, NULL, &cur);
		if (ret) {
			json_decref(put);
			goto out_close;
		}
		row = quota_find(json_object_get(cur, "items"), model);
		json_object_set_new(put, "gpu_model", json_string(model));
		for (size_t k = 0; k < 5; k++) {
			json_t *v = json_object_get(body, quota_keys[k]);
			if (!v && row)
				v = json_object_get(row, quota_keys[k]);
			/* An absent limit is no limit; guaranteed_gpus may not be null. */
			if (v && !json_is_null(v))
				json_object_set(put, quota_keys[k], v);
		}
		json_decref(cur);
		ret = request(&s, "PUT", path, put, &doc);
		json_decref(put);
		if (!ret) {
			if (s.json)
				cli_print_json(doc);
			else
				printf("Set quota of tenant %s\n", argv[a.first + 1]);
		}
	}
out_close:
	cli_session_close(&s);
out:
	json_decref(doc);
	json_decref(body);
	mu_free(tenant);
	mu_free(path);
	return ret;
}

int cmd_tokens(struct cli_global *g, int argc, char **argv)
{
	static const char *const hdr[] = { "ID",   "NAME",   "ROLE",    "TENANT", "USER",
					   "NODE", "PREFIX", "CREATED", "EXPIRES" };
	static const char *const keys[] = { "id",   "name",   "role",       "tenant",    "user",
					    "node", "prefix", "created_at", "expires_at" };
	static const unsigned create_opts = BIT(A_NAME) | BIT(A_ROLE) | BIT(A_TENANT) | BIT(A_USER) |
					    BIT(A_NODE) | BIT(A_EXPIRES);
	struct admin_args a;
	struct cli_session s;
	struct mu_error err;
	const char *action = ""; /* set by admin_start; -O3 cannot see it */
	json_t *body = json_object();
	json_t *doc = NULL;
	int ret;

	ret = admin_start(argc, argv, g, "tokens", "list", &a, &action, &err);
	if (ret >= 0)
		goto out;
	if (!strcmp(action, "list")) {
		ret = admin_check(&a, 0, action, argc, 0, 0, &err);
	} else if (!strcmp(action, "show")) {
		ret = admin_check(&a, 0, action, argc, 1, 1, &err);
	} else if (!strcmp(action, "revoke") || !strcmp(action, "delete")) {
		ret = admin_check(&a, 0, action, argc, 1, 1000000, &err);
	} else if (!strcmp(action, "create")) {
		static const struct { int opt; const char *key; } m[] = {
			{ A_NAME, "name" }, { A_ROLE, "role" }, { A_TENANT, "tenant" },
			{ A_USER, "user" }, { A_NODE, "node" }, { A_EXPIRES, "expires_at" },
		};
		ret = admin_check(&a, create_opts, action, argc, 0, 0, &err);
		for (size_t k = 0; !ret && k < sizeof(m) / sizeof(m[0]); k++)
			if (a.v[m[k].opt])
				ret = set_str_opt(body, m[k].key, a.v[m[k].opt], &err);
		if (!ret && !a.v[A_ROLE])
			ret = mu_error_set(&err, MU_EINVAL, "role",
					   "--role is required (admin, tenant, reader, agent)");
	} else {
		ret = mu_error_set(&err, MU_EINVAL, "", "unknown action '%s' (create, list, show, revoke)",
				   action);
	}
	for (int i = a.first + 1; !ret && strcmp(action, "create") && i < argc; i++) {
		int64_t id;
		if (cli_parse_job_id(argv[i], &id, &err) < 0)
			ret = mu_error_set(&err, MU_EINVAL, "", "invalid token id '%s'", argv[i]);
	}
	if (ret < 0) {
		ret = cli_usage_error("tokens", &err);
		goto out;
	}
	ret = cli_session_open(&s, g);
	if (ret)
		goto out;
	if (!strcmp(action, "list")) {
		ret = list_table(&s, "/v1/tokens", 9, hdr, keys);
	} else if (!strcmp(action, "create")) {
		ret = request(&s, "POST", "/v1/tokens", body, &doc);
		if (!ret) {
			if (s.json) {
				cli_print_json(doc);
			} else {
				/* The secret alone on stdout, so TOKEN=$(muster tokens create ...) works. */
				printf("%s\n", cli_str(json_object_get(doc, "token"), ""));
				fprintf(stderr, "muster: created token %lld (%s); the secret is shown only "
						"once\n",
					(long long)json_integer_value(json_object_get(doc, "id")),
					cli_str(json_object_get(doc, "role"), "?"));
			}
		}
	} else if (!strcmp(action, "show")) {
		char *p = mu_asprintf("/v1/tokens/%s", argv[a.first + 1]);
		ret = request(&s, "GET", p, NULL, &doc);
		mu_free(p);
		if (!ret)
			print_obj(&s, doc);
	} else {
		for (int i = a.first + 1; i < argc; i++) {
			char *p = mu_asprintf("/v1/tokens/%s", argv[i]);
			int rc = request(&s, "DELETE", p, NULL, NULL);
			mu_free(p);
			if (rc)
				ret = ret ? ret : rc;
			else if (!s.json)
				printf("Revoked token %s\n", argv[i]);
		}
	}
	cli_session_close(&s);
out:
	json_decref(doc);
	json_decref(body);
	return ret;
}

static void nodes_table(const json_t *items)
{
	static const char *const hdr[] = { "NAME", "STATE", "GPU_MODEL", "GPUS", "ALLOC",
					   "HEALTHY", "TOPOLOGY", "HEARTBEAT", "REASON" };
	struct cli_table *t = cli_table_new(9, hdr);
	size_t i, j;
	json_t *n, *gpu;

	json_array_foreach(items, i, n) {
		const json_t *gpus = json_object_get(n, "gpus");
		long long alloc = 0, healthy = 0;
		char cnt[32], al[32], he[32];
		char *name = cli_value_text(json_object_get(n, "name"));
		char *state = cli_value_text(json_object_get(n, "state"));
		char *model = cli_value_text(json_object_get(n, "gpu_model"));
		char *topo = cli_value_text(json_object_get(n, "topology"));
		char *hb = cli_time_text(json_object_get(n, "last_heartbeat"), "never");
		char *reason = json_is_string(json_object_get(n, "drain_reason"))
				       ? cli_value_text(json_object_get(n, "drain_reason"))
				       : mu_strdup("-");

		json_array_foreach(gpus, j, gpu) {
			alloc += json_is_true(json_object_get(gpu, "allocated"));
			healthy += json_is_true(json_object_get(gpu, "healthy"));
		}
		snprintf(cnt, sizeof(cnt), "%lld",
			 (long long)json_integer_value(json_object_get(n, "gpu_count")));
		snprintf(al, sizeof(al), "%lld", alloc);
		snprintf(he, sizeof(he), "%lld/%zu", healthy, json_array_size(gpus));
		cli_table_add(t, (const char *const[]){ name, state, model, cnt, al, he, topo, hb,
							*reason ? reason : "-" });
		mu_free(name);
		mu_free(state);
		mu_free(model);
		mu_free(topo);
		mu_free(hb);
		mu_free(reason);
	}
	cli_table_print(t, stdout);
	cli_table_free(t);
}

int cmd_nodes(struct cli_global *g, int argc, char **argv)
{
	struct cli_session s;
	struct mu_error err;
	json_t *items = NULL;
	int ret, first;

	mu_error_clear(&err);
	ret = cli_parse_plain(argc, argv, g, 0, 0, &first, &err);
	if (ret == 1) {
		cli_help("nodes");
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error("nodes", &err);
	ret = cli_session_open(&s, g);
	if (ret)
		return ret;
	ret = cli_get_all(&s, "/v1/nodes", &items, &err);
	if (ret < 0) {
		ret = cli_report(&err);
	} else {
		if (s.json) {
			json_t *doc = json_pack("{s:O, s:n}", "items", items, "next_cursor");
			cli_print_json(doc);
			json_decref(doc);
		} else {
			nodes_table(items);
		}
		json_decref(items);
		ret = CLI_EXIT_OK;
	}
	cli_session_close(&s);
	return ret;
}

static void show_node(const json_t *n)
{
	const json_t *gpus = json_object_get(n, "gpus");
	size_t i;
	json_t *gpu;

	json_t *top = json_deep_copy(n);
	json_object_del(top, "gpus");
	cli_print_kv(top, stdout, "");
	json_decref(top);
	json_array_foreach(gpus, i, gpu) {
		char *line = cli_value_text(gpu);
		printf("Gpu=%s\n", line);
		mu_free(line);
	}
}

int cmd_node(struct cli_global *g, int argc, char **argv)
{
	struct admin_args a;
	struct cli_session s;
	struct mu_error err;
	const char *action = ""; /* set by admin_start; -O3 cannot see it */
	json_t *body = json_object();
	json_t *doc = NULL;
	char *name = NULL, *path = NULL;
	int ret;

	ret = admin_start(argc, argv, g, "node", "", &a, &action, &err);
	if (ret >= 0)
		goto out;
	if (!strcmp(action, "show") || !strcmp(action, "resume")) {
		ret = admin_check(&a, 0, action, argc, 1, 1, &err);
	} else if (!strcmp(action, "drain")) {
		ret = admin_check(&a, BIT(A_REASON), action, argc, 1, 1, &err);
		if (!ret)
			ret = set_str_opt(body, "reason", a.v[A_REASON] ? a.v[A_REASON] : "", &err);
	} else {
		ret = mu_error_set(&err, MU_EINVAL, "", "%s action '%s' (show, drain, resume)",
				   *action ? "unknown" : "missing", action);
	}
	if (ret < 0) {
		ret = cli_usage_error("node", &err);
		goto out;
	}
	ret = cli_session_open(&s, g);
	if (ret)
		goto out;
	name = pos_escaped(&s, argv, &a, 0);
	if (!strcmp(action, "show")) {
		path = mu_asprintf("/v1/nodes/%s", name);
		ret = request(&s, "GET", path, NULL, &doc);
		if (!ret) {
			if (s.json)
				cli_print_json(doc);
			else
				show_node(doc);
		}
	} else {
		path = mu_asprintf("/v1/nodes/%s/%s", name, action);
		ret = request(&s, "POST", path, !strcmp(action, "drain") ? body : NULL, &doc);
		if (!ret) {
			if (s.json)
				cli_print_json(doc);
			else
				printf("Node %s: %s\n", argv[a.first + 1],
				       json_string_value(json_object_get(doc, "state"))
					       ? json_string_value(json_object_get(doc, "state"))
					       : action);
		}
	}
	cli_session_close(&s);
out:
	json_decref(doc);
	json_decref(body);
	mu_free(name);
	mu_free(path);
	return ret;
}

int cmd_classes(struct cli_global *g, int argc, char **argv)
{
	static const char *const hdr[] = { "NAME",      "PRIORITY", "PREEMPTIBLE", "DEFAULT_TIME",
					   "MAX_TIME",  "GRACE",    "DEFAULT",     "DESCRIPTION" };
	static const unsigned field_opts = BIT(A_PRIORITY) | BIT(A_PREEMPTIBLE) |
					   BIT(A_DEFAULT_TIME) | BIT(A_MAX_TIME) | BIT(A_GRACE) |
					   BIT(A_IS_DEFAULT) | BIT(A_DESCRIPTION);
	struct admin_args a;
	struct cli_session s;
	struct mu_error err;
	const char *action = ""; /* set by admin_start; -O3 cannot see it */
	json_t *body = json_object();
	char *name = NULL;
	int ret;

	ret = admin_start(argc, argv, g, "classes", "list", &a, &action, &err);
	if (ret >= 0)
		goto out;
	if (!strcmp(action, "list")) {
		ret = admin_check(&a, 0, action, argc, 0, 0, &err);
	} else if (!strcmp(action, "show") || !strcmp(action, "delete")) {
		ret = admin_check(&a, 0, action, argc, 1, 1, &err);
	} else if (!strcmp(action, "create") || !strcmp(action, "update")) {
		ret = admin_check(&a, field_opts, action, argc, 1, 1, &err);
		if (!ret && !strcmp(action, "create"))
			ret = set_str_opt(body, "name", argv[a.first + 1], &err);
		if (!ret && !strcmp(action, "create") && !a.v[A_PRIORITY])
			ret = mu_error_set(&err, MU_EINVAL, "priority", "--priority is required");
		if (!ret && a.v[A_PRIORITY])
			ret = set_int_opt(body, "priority", a.v[A_PRIORITY], -1000000000, 1000000000,
					  false, &err);
		for (int k = 0; !ret && k < 2; k++) {
			const char *v = a.v[k ? A_IS_DEFAULT : A_PREEMPTIBLE];
			bool b;
			if (!v)
				continue;
			if (mu_parse_bool(v, &b) < 0)
				ret = mu_error_set(&err, MU_EINVAL, "", "--%s takes yes or no, not '%s'",
						   k ? "default" : "preemptible", v);
			else
				json_object_set_new(body, k ? "is_default" : "preemptible",
						    json_boolean(b));
		}
		for (int k = 0; !ret && k < 2; k++) {
			const char *v = a.v[k ? A_MAX_TIME : A_DEFAULT_TIME];
			const char *key = k ? "max_time_limit" : "default_time_limit";
			int64_t secs;
			if (!v)
				continue;
			if (k && (!strcasecmp(v, "none") || !strcasecmp(v, "unlimited")))
				json_object_set_new(body, key, json_null());
			else if ((ret = cli_parse_time(v, &secs, &err)) == 0)
				json_object_set_new(body, key, json_integer(secs));
		}
		if (!ret && a.v[A_GRACE])
			ret = set_int_opt(body, "grace_period", a.v[A_GRACE], 0, 86400, false, &err);
		if (!ret && a.v[A_DESCRIPTION])
			ret = set_str_opt(body, "description", a.v[A_DESCRIPTION], &err);
		if (!ret && !strcmp(action, "update") && json_object_size(body) == 0)
			ret = mu_error_set(&err, MU_EINVAL, "", "nothing to update");
	} else {
		ret = mu_error_set(&err, MU_EINVAL, "",
				   "unknown action '%s' (list, create, show, update, delete)", action);
	}
	if (ret < 0) {
		ret = cli_usage_error("classes", &err);
		goto out;
	}
	ret = cli_session_open(&s, g);
	if (ret)
		goto out;
	if (!strcmp(action, "list")) {
		json_t *items = NULL;
		ret = cli_get_all(&s, "/v1/priority-classes", &items, &err);
		if (ret < 0) {
			ret = cli_report(&err);
		} else if (s.json) {
			json_t *page = json_pack("{s:O, s:n}", "items", items, "next_cursor");
			cli_print_json(page);
			json_decref(page);
		} else {
			struct cli_table *t = cli_table_new(8, hdr);
			size_t i;
			json_t *c;
			json_array_foreach(items, i, c) {
				char *cells[8];
				char dt[32], mt[32];
				const json_t *max = json_object_get(c, "max_time_limit");

				mu_duration_format(json_integer_value(json_object_get(c, "default_time_limit")),
						   dt, sizeof(dt));
				if (json_is_integer(max))
					mu_duration_format(json_integer_value(max), mt, sizeof(mt));
				else
					snprintf(mt, sizeof(mt), "-");
				cells[0] = cli_value_text(json_object_get(c, "name"));
				cells[1] = cli_value_text(json_object_get(c, "priority"));
				cells[2] = cli_value_text(json_object_get(c, "preemptible"));
				cells[3] = mu_strdup(dt);
				cells[4] = mu_strdup(mt);
				cells[5] = mu_asprintf("%llds", (long long)json_integer_value(
									json_object_get(c, "grace_period")));
				cells[6] = cli_value_text(json_object_get(c, "is_default"));
				cells[7] = cli_value_text(json_object_get(c, "description"));
				cli_table_add(t, (const char *const *)cells);
				for (int k = 0; k < 8; k++)
					mu_free(cells[k]);
			}
			cli_table_print(t, stdout);
			cli_table_free(t);
			ret = CLI_EXIT_OK;
		}
		json_decref(items);
		goto out_close;
	}
	name = pos_escaped(&s, argv, &a, 0);
	ret = crud_named(&s, action, "/v1/priority-classes", name, "priority class", argv[a.first + 1], body);
out_close:
	cli_session_close(&s);
out:
	json_decref(body);
	mu_free(name);
	return ret;
}
