/* Changing jobs: hold, release, requeue (scontrol hold/release/requeue) and
 * update (scontrol update), over POST /v1/jobs/{id}/... and PATCH /v1/jobs/{id}. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "alloc.h"
#include "cli_out.h"
#include "cmd.h"

/* Parses the options, answers -h, checks every id before anything is sent.
 * Returns -1 to go on with argv[*first..], else the exit code. */
static int ids_start(int argc, char **argv, struct cli_global *g, const char *cmd, int min_pos,
		     int *first)
{
	struct mu_error err;
	int ret;
	int64_t id;

	mu_error_clear(&err);
	ret = cli_parse_plain(argc, argv, g, min_pos, -1, first, &err);
	if (ret == 1) {
		cli_help(cmd);
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error(cmd, &err);
	if (cli_parse_job_id(argv[*first], &id, &err) < 0)
		return cli_usage_error(cmd, &err);
	return -1;
}

/* hold | release | requeue JOB...: each id checked first, then one request each. */
static int control(struct cli_global *g, int argc, char **argv, const char *verb)
{
	struct cli_session sess;
	struct mu_error err;
	int ret, first;

	ret = ids_start(argc, argv, g, verb, 1, &first);
	if (ret >= 0)
		return ret;
	for (int i = first; i < argc; i++) {
		int64_t id;

		mu_error_clear(&err);
		if (cli_parse_job_id(argv[i], &id, &err) < 0)
			return cli_usage_error(verb, &err);
	}
	ret = cli_session_open(&sess, g);
	if (ret)
		return ret;
	for (int i = first; i < argc; i++) {
		char *path = mu_asprintf("/v1/jobs/%s/%s", argv[i], verb);
		json_t *job = NULL;
		int rc;

		mu_error_clear(&err);
		rc = cli_http_call(&sess.http, "POST", path, NULL, NULL, NULL, &job, &err);
		mu_free(path);
		if (rc < 0) {
			rc = cli_report_about("job", argv[i], &err);
			ret = ret ? ret : rc;
			continue;
		}
		if (sess.json)
			cli_print_json(job);
		json_decref(job);
	}
	cli_session_close(&sess);
	return ret;
}

int cmd_hold(struct cli_global *g, int argc, char **argv)
{
	return control(g, argc, argv, "hold");
}

int cmd_release(struct cli_global *g, int argc, char **argv)
{
	return control(g, argc, argv, "release");
}

int cmd_requeue(struct cli_global *g, int argc, char **argv)
{
	return control(g, argc, argv, "requeue");
}

static void put_rfc3339(time_t t, char *out, size_t n)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/*
 * Slurm's --begin / StartTime forms into RFC 3339 (UTC), as sbatch reads
 * them in local time: now[+N[seconds|minutes|hours|days|weeks]] (a bare N is
 * seconds), HH:MM[:SS] (today, or tomorrow once past), YYYY-MM-DD[THH:MM[:SS]],
 * midnight|noon|teatime|today|tomorrow; an RFC 3339 string with Z or an
 * offset is sent as it is. "" or "none" clears it (*null set).
 */
static int begin_value(const char *s, char *out, size_t n, bool *null, struct mu_error *err)
{
	time_t now = time(NULL), t;
	struct tm tm;
	int h = 0, mi = 0, sec = 0, y, mo, d;
	char rest[16];

	*null = false;
	if (!*s || !strcasecmp(s, "none")) {
		*null = true;
		return 0;
	}
	localtime_r(&now, &tm);
	if (!strncasecmp(s, "now", 3)) {
		const char *p = s + 3;
		long long k = 0, mult = 1;
		char *end = NULL;

		if (*p) {
			if (*p != '+' || !isdigit((unsigned char)p[1]))
				goto bad;
			k = strtoll(p + 1, &end, 10);
			if (!*end || !strcasecmp(end, "s") || !strncasecmp(end, "second", 6))
				mult = 1;
			else if (!strncasecmp(end, "minute", 6) || !strcasecmp(end, "min"))
				mult = 60;
			else if (!strncasecmp(end, "hour", 4) || !strcasecmp(end, "h"))
				mult = 3600;
			else if (!strncasecmp(end, "day", 3) || !strcasecmp(end, "d"))
				mult = 86400;
			else if (!strncasecmp(end, "week", 4))
				mult = 7 * 86400;
			else
				goto bad;
			if (k < 0 || k > 100LL * 365 * 86400 / mult)
				goto bad;
		}
		put_rfc3339(now + (time_t)(k * mult), out, n);
		return 0;
	}
	if (!strcasecmp(s, "midnight") || !strcasecmp(s, "tomorrow")) {
		tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		tm.tm_mday++;
		goto local;
	}
	if (!strcasecmp(s, "today")) {
		tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		goto local;
	}
	if (!strcasecmp(s, "noon") || !strcasecmp(s, "teatime")) {
		tm.tm_hour = s[0] == 'n' || s[0] == 'N' ? 12 : 16;
		tm.tm_min = tm.tm_sec = 0;
		t = mktime(&tm);
		if (t <= now)
			tm.tm_mday++;
		goto local;
	}
	if (strlen(s) >= 20 && (strchr(s + 19, 'Z') || strchr(s + 19, 'z') || strchr(s + 19, '+') ||
				strchr(s + 19, '-'))) {
		snprintf(out, n, "%s", s); /* RFC 3339 already: the server checks it */
		return 0;
	}
	rest[0] = '\0';
	if (sscanf(s, "%d:%d%15s", &h, &mi, rest) >= 2 && strlen(s) <= 8 && !strchr(s, '-')) {
		if (rest[0] && sscanf(rest, ":%d", &sec) != 1)
			goto bad;
		if (h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59)
			goto bad;
		tm.tm_hour = h;
		tm.tm_min = mi;
		tm.tm_sec = sec;
		t = mktime(&tm);
		if (t <= now)
			tm.tm_mday++;
		goto local;
	}
	rest[0] = '\0';
	if (sscanf(s, "%4d-%2d-%2d%15s", &y, &mo, &d, rest) >= 3) {
		h = mi = sec = 0;
		if (rest[0] && sscanf(rest, "T%d:%d:%d", &h, &mi, &sec) < 2)
			goto bad;
		if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59)
			goto bad;
		memset(&tm, 0, sizeof(tm));
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
		tm.tm_hour = h;
		tm.tm_min = mi;
		tm.tm_sec = sec;
		tm.tm_isdst = -1;
		goto local;
	}
bad:
	return mu_error_set(err, MU_EINVAL, "StartTime",
			    "'%s' is not a time: now+N[minutes|hours|days|weeks], HH:MM[:SS], "
			    "YYYY-MM-DD[THH:MM[:SS]], midnight, noon, teatime, tomorrow, or none", s);
local:
	tm.tm_isdst = -1;
	t = mktime(&tm);
	if (t == (time_t)-1)
		goto bad;
	put_rfc3339(t, out, n);
	return 0;
}

/* One update key: muster's JSON name, and Slurm's scontrol names. */
static const struct ukey {
	const char *field;
	const char *aliases; /* '|'-separated, compared without case */
} ukeys[] = {
	{ "time_limit", "time_limit|TimeLimit|time|t" },
	{ "priority_class", "priority_class|QOS|class" },
	{ "nodes", "nodes|NumNodes|N" },
	{ "min_nodes", "min_nodes|MinNodes" },
	{ "gpus_per_node", "gpus_per_node|GpusPerNode|gpus" },
	{ "dependencies", "dependencies|Dependency|d" },
	{ "labels", "labels|label" },
	{ "begin", "begin|StartTime|BeginTime" },
	{ "name", "name|JobName|Name" },
};

static const struct ukey *find_key(const char *k, size_t len)
{
	for (size_t i = 0; i < sizeof(ukeys) / sizeof(ukeys[0]); i++) {
		const char *a = ukeys[i].aliases;

		while (*a) {
			size_t n = strcspn(a, "|");

			if (n == len && !strncasecmp(a, k, len))
				return &ukeys[i];
			a += n + (a[n] == '|');
		}
	}
	return NULL;
}

/* Adds KEY=VALUE to the PATCH body. */
static int add_update(json_t *body, const char *arg, struct mu_error *err)
{
	const char *eq = strchr(arg, '=');
	const struct ukey *k;
	const char *v;
	long long n;
	int64_t secs;

	if (!eq || eq == arg)
		return mu_error_set(err, MU_EINVAL, "", "expected KEY=VALUE, not '%s'", arg);
	k = find_key(arg, (size_t)(eq - arg));
	if (!k)
		return mu_error_set(err, MU_EINVAL, "", "unknown key '%.*s' (TimeLimit, QOS, NumNodes, "
				    "MinNodes, GpusPerNode, Dependency, StartTime, JobName, label)",
				    (int)(eq - arg), arg);
	v = eq + 1;
	if (!strcmp(k->field, "time_limit")) {
		if (cli_parse_time(v, &secs, err) < 0)
			return MU_EINVAL;
		json_object_set_new(body, k->field, json_integer(secs));
	} else if (!strcmp(k->field, "nodes") || !strcmp(k->field, "gpus_per_node") ||
		   !strcmp(k->field, "min_nodes")) {
		if (!strcmp(k->field, "min_nodes") && (!*v || !strcasecmp(v, "none"))) {
			json_object_set_new(body, k->field, json_null());
			return 0;
		}
		if (cli_parse_int(v, k->field, !strcmp(k->field, "gpus_per_node") ? 0 : 1, 10000, &n,
				  err) < 0)
			return MU_EINVAL;
		json_object_set_new(body, k->field, json_integer(n));
	} else if (!strcmp(k->field, "dependencies")) {
		json_t *deps = json_array();

		if (*v && strcasecmp(v, "none") && cli_parse_dependency(v, deps, err) < 0) {
			json_decref(deps);
			return MU_EINVAL;
		}
		json_object_set_new(body, k->field, deps);
	} else if (!strcmp(k->field, "labels")) {
		json_t *labels = json_object_get(body, "labels");

		if (!*v || !strcasecmp(v, "none")) { /* label= clears them all */
			json_object_set_new(body, "labels", json_object());
			return 0;
		}
		if (!json_is_object(labels)) {
			labels = json_object();
			json_object_set_new(body, "labels", labels);
		}
		if (cli_parse_kv(v, "label", labels, err) < 0)
			return MU_EINVAL;
	} else if (!strcmp(k->field, "begin")) {
		char ts[64];
		bool null;

		if (begin_value(v, ts, sizeof(ts), &null, err) < 0)
			return MU_EINVAL;
		json_object_set_new(body, k->field, null ? json_null() : json_string(ts));
	} else {
		json_object_set_new(body, k->field, json_string(v));
	}
	return 0;
}

/* update JOB KEY=VALUE...: one PATCH with every change (all or nothing). */
int cmd_update(struct cli_global *g, int argc, char **argv)
{
	struct cli_session sess;
	struct mu_error err;
	json_t *body = json_object(), *job = NULL;
	char *path = NULL;
	int ret, first;

	ret = ids_start(argc, argv, g, "update", 2, &first);
	if (ret >= 0)
		goto out;
	mu_error_clear(&err);
	for (int i = first + 1; i < argc; i++) {
		if (add_update(body, argv[i], &err) < 0) {
			ret = cli_usage_error("update", &err);
			goto out;
		}
	}
	ret = cli_session_open(&sess, g);
	if (ret)
		goto out;
	path = mu_asprintf("/v1/jobs/%s", argv[first]);
	if (cli_http_call(&sess.http, "PATCH", path, body, NULL, NULL, &job, &err) < 0)
		ret = cli_report_about("job", argv[first], &err);
	else if (sess.json)
		cli_print_json(job);
	cli_session_close(&sess);
out:
	mu_free(path);
	json_decref(job);
	json_decref(body);
	return ret;
}
