/* Jobs: submit (sbatch), queue (squeue), show (scontrol show job), cancel (scancel), explain. */
#include "cmd.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "cli_out.h"
#include "duration.h"

static int dry_run(struct cli_session *sess, struct cli_submit *s)
{
	struct mu_error err;
	json_t *resp = NULL;
	long status = 0;
	int ret;

	mu_error_clear(&err);
	ret = cli_http_call(&sess->http, "POST", "/v1/jobs/dry-run", s->body, NULL, &status, &resp,
			    &err);
	if (ret < 0) {
		/* A server without the endpoint: a route miss, not a refused job. */
		if ((status == 404 || status == 405 || status == 501) && !err.field[0]) {
			fprintf(stderr,
				"muster: error: this server does not support --test-only "
				"(POST /v1/jobs/dry-run answered HTTP %ld)\n",
				status);
			return CLI_EXIT_ERROR;
		}
		return cli_report(&err);
	}
	if (sess->json) {
		cli_print_json(resp);
	} else {
		/* DryRunResult: feasible, planned_start, pending_reason, message, nodes. */
		const json_t *start = json_object_get(resp, "planned_start");
		const json_t *nodes = json_object_get(resp, "nodes");
		const char *reason = cli_str(json_object_get(resp, "pending_reason"), NULL);
		const char *msg = cli_str(json_object_get(resp, "message"), "");

		if (json_is_false(json_object_get(resp, "feasible"))) {
			/* sbatch --test-only fails the same way for a request that can never run. */
			fprintf(stderr, "muster: error: the job could never start: %s%s%s\n",
				reason ? reason : "infeasible", *msg ? ": " : "", msg);
			json_decref(resp);
			return CLI_EXIT_ERROR;
		}
		if (json_is_string(start)) {
			char *t = cli_time_text(start, "now");
			char *n = json_array_size(nodes) ? cli_value_text(nodes) : NULL;
			printf("Job would start at %s%s%s\n", t, n ? " on nodes " : "", n ? n : "");
			mu_free(n);
			mu_free(t);
		} else {
			printf("Job would wait with no planned start: %s%s%s\n",
			       reason ? reason : "Unknown", *msg ? ": " : "", msg);
		}
	}
	json_decref(resp);
	return CLI_EXIT_OK;
}

int cmd_submit(struct cli_global *g, int argc, char **argv)
{
	struct cli_submit s = { .g = *g };
	struct cli_session sess;
	struct mu_error err;
	json_t *job = NULL;
	int ret;

	mu_error_clear(&err);
	ret = cli_submit_parse(argc, argv, &s, &err);
	if (ret == 1) {
		cli_help("submit");
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error("submit", &err);
	ret = cli_session_open(&sess, &s.g);
	if (ret)
		goto out_release;
	if (s.test_only) {
		ret = dry_run(&sess, &s);
		goto out_close;
	}
	ret = cli_http_call(&sess.http, "POST", "/v1/jobs", s.body, s.idempotency_key, NULL, &job,
			    &err);
	if (ret < 0) {
		ret = cli_report(&err);
		goto out_close;
	}
	if (sess.json)
		cli_print_json(job);
	else if (s.parsable)
		printf("%lld\n", (long long)json_integer_value(json_object_get(job, "id")));
	else
		printf("Submitted job %lld\n", (long long)json_integer_value(json_object_get(job, "id")));
	ret = CLI_EXIT_OK;
	json_decref(job);
out_close:
	cli_session_close(&sess);
out_release:
	cli_submit_release(&s);
	return ret;
}

static char *query_append(char *q, struct cli_session *s, const char *key, const char *val)
{
	char *esc = cli_http_escape(&s->http, val);
	char *n = mu_asprintf("%s%s%s=%s", q, strchr(q, '?') ? "&" : "?", key, esc);

	mu_free(esc);
	mu_free(q);
	return n;
}

static void queue_row(struct cli_table *t, const json_t *job)
{
	long long nodes = json_integer_value(json_object_get(job, "nodes"));
	long long gpn = json_integer_value(json_object_get(job, "gpus_per_node"));
	const json_t *min = json_object_get(job, "min_nodes");
	const char *state = json_string_value(json_object_get(job, "state"));
	const json_t *reason = json_object_get(job, "pending_reason");
	char id[32], n[48], gpus[32], tl[32];
	char *tenant = cli_value_text(json_object_get(job, "tenant"));
	char *user = cli_value_text(json_object_get(job, "user"));
	char *name = cli_value_text(json_object_get(job, "name"));
	char *why;

	if (!*name) { /* an empty cell would shift the columns for `awk` */
		mu_free(name);
		name = mu_strdup("-");
	}

	snprintf(id, sizeof(id), "%lld", (long long)json_integer_value(json_object_get(job, "id")));
	if (json_is_integer(min) && json_integer_value(min) != nodes)
		snprintf(n, sizeof(n), "%lld-%lld", (long long)json_integer_value(min), nodes);
	else
		snprintf(n, sizeof(n), "%lld", nodes);
	snprintf(gpus, sizeof(gpus), "%lld", nodes * gpn);
	mu_duration_format(json_integer_value(json_object_get(job, "time_limit")), tl, sizeof(tl));
	if (json_is_string(reason) && json_string_length(reason))
		why = cli_value_text(reason);
	else if (json_is_string(json_object_get(job, "end_reason")) &&
		 json_string_length(json_object_get(job, "end_reason")))
		why = cli_value_text(json_object_get(job, "end_reason"));
	else
		why = mu_strdup("None");
	cli_table_add(t, (const char *const[]){ id, tenant, user, name, cli_state_short(state), n,
						gpus, tl, why });
	mu_free(tenant);
	mu_free(user);
	mu_free(name);
	mu_free(why);
}

int cmd_queue(struct cli_global *g, int argc, char **argv)
{
	static const char *const hdr[] = { "JOBID", "TENANT", "USER",       "NAME",  "ST",
					   "NODES", "GPUS",   "TIME_LIMIT", "REASON" };
	struct cli_queue q = { .g = *g };
	struct cli_session sess;
	struct mu_error err;
	json_t *items = NULL;
	char *path = mu_strdup("/v1/jobs");
	size_t i;
	json_t *v;
	int ret;

	mu_error_clear(&err);
	ret = cli_queue_parse(argc, argv, &q, &err);
	if (ret == 1) {
		cli_help("queue");
		ret = CLI_EXIT_OK;
		goto out_release;
	}
	if (ret < 0) {
		ret = cli_usage_error("queue", &err);
		goto out_release;
	}
	ret = cli_session_open(&sess, &q.g);
	if (ret)
		goto out_release;
	if (q.states) {
		/* Canonical names joined by ',' need no escaping; keep them readable. */
		char *n = mu_asprintf("%s?state=%s", path, q.states);
		mu_free(path);
		path = n;
	}
	if (q.tenant)
		path = query_append(path, &sess, "tenant", q.tenant);
	if (q.user)
		path = query_append(path, &sess, "user", q.user);
	json_array_foreach(q.labels, i, v)
		path = query_append(path, &sess, "label", json_string_value(v));
	ret = cli_get_all(&sess, path, &items, &err);
	if (ret < 0) {
		ret = cli_report(&err);
		goto out_close;
	}
	if (sess.json) {
		json_t *doc = json_pack("{s:O, s:n}", "items", items, "next_cursor");
		cli_print_json(doc);
		json_decref(doc);
	} else {
		struct cli_table *t = cli_table_new(9, hdr);
		json_array_foreach(items, i, v)
			queue_row(t, v);
		cli_table_print(t, stdout);
		cli_table_free(t);
	}
	ret = CLI_EXIT_OK;
	json_decref(items);
out_close:
	cli_session_close(&sess);
out_release:
	mu_free(path);
	cli_queue_release(&q);
	return ret;
}

/*
 * Fetches one job (or its explain) and returns an exit code; *doc is new on
 * success. The error is printed unless `quiet` is given, which then gets it.
 */
static int get_job(struct cli_session *sess, const char *idtext, const char *suffix, json_t **doc,
		   struct mu_error *quiet)
{
	struct mu_error err;
	int64_t id;
	char *path;
	int ret;

	mu_error_clear(&err);
	if (cli_parse_job_id(idtext, &id, &err) < 0)
		return cli_usage_error(NULL, &err);
	path = mu_asprintf("/v1/jobs/%" PRId64 "%s", id, suffix);
	ret = cli_http_call(&sess->http, "GET", path, NULL, NULL, NULL, doc, &err);
	mu_free(path);
	if (ret < 0 && quiet) {
		*quiet = err;
		return cli_exit_for(ret);
	}
	if (ret < 0)
		return cli_report(&err);
	return CLI_EXIT_OK;
}

static void kv(const char *key, const json_t *v, const char *none)
{
	char *t = json_is_null(v) || !v ? mu_strdup(none) : cli_value_text(v);
	printf(" %s=%s", key, *t ? t : none);
	mu_free(t);
}

static void kv_time(const char *key, const json_t *v, const char *none)
{
	char *t = cli_time_text(v, none);
	printf(" %s=%s", key, t);
	mu_free(t);
}

static void show_deps(const json_t *deps)
{
	size_t i;
	json_t *d;

	printf(" Dependency=");
	if (!json_array_size(deps)) {
		printf("(null)");
		return;
	}
	json_array_foreach(deps, i, d)
		printf("%s%s:%lld", i ? "," : "", cli_str(json_object_get(d, "type"), "?"),
		       (long long)json_integer_value(json_object_get(d, "job_id")));
}

/* argv joined as a shell would read it back: plain words bare, others single-quoted. */
static void show_command(const json_t *argv)
{
	size_t i;
	json_t *a;

	printf(" Command=");
	json_array_foreach(argv, i, a) {
		const char *s = json_string_value(a);
		bool plain = s && *s;

		for (const char *p = s; plain && *p; p++)
			if (!isalnum((unsigned char)*p) && !strchr("-_./=:,+@%", *p))
				plain = false;
		if (i)
			putchar(' ');
		if (plain) {
			fputs(s, stdout);
			continue;
		}
		putchar('\'');
		for (const char *p = s ? s : ""; *p; p++) {
			if (*p == '\'')
				fputs("'\\''", stdout);
			else
				putchar(*p);
		}
		putchar('\'');
	}
}

static void show_job(const json_t *job)
{
	const json_t *topo = json_object_get(job, "topology");
	const json_t *runs = json_object_get(job, "runs");
	const json_t *events = json_object_get(job, "events");
	const json_t *env = json_object_get(job, "env");
	char tl[32];
	size_t i;
	json_t *r;

	printf("JobId=%lld", (long long)json_integer_value(json_object_get(job, "id")));
	kv("JobName", json_object_get(job, "name"), "");
	printf("\n  ");
	kv("Tenant", json_object_get(job, "tenant"), "");
	kv("UserId", json_object_get(job, "user"), "");
	kv("PriorityClass", json_object_get(job, "priority_class"), "(null)");
	printf("\n  ");
	kv("JobState", json_object_get(job, "state"), "");
	kv("Reason", json_object_get(job, "pending_reason"), "None");
	show_deps(json_object_get(job, "dependencies"));
	printf("\n  ");
	kv("PendingMessage", json_object_get(job, "pending_message"), "(null)");
	kv_time("PlannedStart", json_object_get(job, "planned_start"), "Unknown");
	printf("\n  ");
	kv("NumNodes", json_object_get(job, "nodes"), "");
	kv("MinNodes", json_object_get(job, "min_nodes"), "(null)");
	kv("GpusPerNode", json_object_get(job, "gpus_per_node"), "0");
	kv("GpuModel", json_object_get(job, "gpu_model"), "(any)");
	kv("ProcsPerNode", json_object_get(job, "procs_per_node"), "1");
	printf("\n  ");
	if (json_is_string(json_object_get(topo, "required")))
		printf(" Topology=required:%s", json_string_value(json_object_get(topo, "required")));
	else if (json_is_string(json_object_get(topo, "preferred")))
		printf(" Topology=preferred:%s", json_string_value(json_object_get(topo, "preferred")));
	else
		printf(" Topology=(null)");
	mu_duration_format(json_integer_value(json_object_get(job, "time_limit")), tl, sizeof(tl));
	printf(" TimeLimit=%s", tl);
	kv("MaxRetries", json_object_get(job, "max_retries"), "0");
	kv("Retries", json_object_get(job, "retries"), "0");
	kv("ExitCode", json_object_get(job, "exit_code"), "(null)");
	kv("EndReason", json_object_get(job, "end_reason"), "(null)");
	printf("\n  ");
	kv_time("SubmitTime", json_object_get(job, "created_at"), "Unknown");
	kv_time("StartTime", json_object_get(job, "started_at"), "Unknown");
	kv_time("EndTime", json_object_get(job, "ended_at"), "Unknown");
	printf("\n  ");
	show_command(json_object_get(job, "command"));
	printf("\n  ");
	kv("WorkDir", json_object_get(job, "workdir"), "(null)");
	printf("\n  ");
	kv("Labels", json_object_get(job, "labels"), "(null)");
	printf("\n  ");
	/* Names only: values may hold secrets; --json shows everything. */
	printf(" Env=");
	if (json_object_size(env)) {
		const char *k;
		json_t *ev;
		int first = 1;
		json_object_foreach((json_t *)env, k, ev) {
			printf("%s%s", first ? "" : ",", k);
			first = 0;
		}
	} else {
		printf("(null)");
	}
	printf("\n");
	json_array_foreach(runs, i, r) {
		const json_t *nodes = json_object_get(r, "nodes");
		size_t j;
		json_t *nd;

		printf("  Run=%lld", (long long)json_integer_value(json_object_get(r, "id")));
		kv("Attempt", json_object_get(r, "attempt"), "");
		kv("State", json_object_get(r, "state"), "");
		kv_time("Start", json_object_get(r, "started_at"), "Unknown");
		kv_time("End", json_object_get(r, "ended_at"), "Unknown");
		kv("ExitCode", json_object_get(r, "exit_code"), "(null)");
		kv("StopReason", json_object_get(r, "stop_reason"), "(null)");
		printf("\n     Nodes=");
		json_array_foreach(nodes, j, nd) {
			char *gpus = cli_value_text(json_object_get(nd, "gpus"));
			printf("%s%s[rank=%lld,gpus=%s]", j ? "," : "",
			       cli_str(json_object_get(nd, "node"), "?"),
			       (long long)json_integer_value(json_object_get(nd, "rank")), gpus);
			mu_free(gpus);
		}
		if (!json_array_size(nodes))
			printf("(null)");
		printf("\n");
	}
	json_array_foreach(events, i, r) {
		char *at = cli_time_text(json_object_get(r, "at"), "Unknown");
		const json_t *reason = json_object_get(r, "reason");
		printf("  Event=%lld At=%s Kind=%s",
		       (long long)json_integer_value(json_object_get(r, "id")), at,
		       cli_str(json_object_get(r, "kind"), "?"));
		if (json_is_string(reason) && json_string_length(reason))
			printf(" Reason=%s", json_string_value(reason));
		printf("\n");
		mu_free(at);
	}
}

/*
 * The common start of commands that take job ids (show, cancel): parses the
 * options, answers -h, and checks every id before anything is sent. Returns
 * -1 to go on with argv[*first..], else the exit code to return at once.
 */
static int job_ids_start(int argc, char **argv, struct cli_global *g, const char *cmd, int *first)
{
	struct mu_error err;
	int ret;

	mu_error_clear(&err);
	ret = cli_parse_plain(argc, argv, g, 1, -1, first, &err);
	if (ret == 1) {
		cli_help(cmd);
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error(cmd, &err);
	for (int i = *first; i < argc; i++) {
		int64_t id;
		if (cli_parse_job_id(argv[i], &id, &err) < 0)
			return cli_usage_error(cmd, &err);
	}
	return -1;
}

int cmd_show(struct cli_global *g, int argc, char **argv)
{
	struct cli_session sess;
	int ret, first;

	ret = job_ids_start(argc, argv, g, "show", &first);
	if (ret >= 0)
		return ret;
	ret = cli_session_open(&sess, g);
	if (ret)
		return ret;
	for (int i = first; i < argc; i++) {
		json_t *job = NULL;
		int rc = get_job(&sess, argv[i], "", &job, NULL);
		if (rc) {
			ret = ret ? ret : rc;
			continue;
		}
		if (sess.json)
			cli_print_json(job);
		else {
			if (i > first)
				printf("\n");
			show_job(job);
		}
		json_decref(job);
	}
	cli_session_close(&sess);
	return ret;
}

/* "123" or an array task "123_7" (array id, task index); task -1 = none. */
static int cancel_id(const char *s, int64_t *id, long long *task, struct mu_error *err)
{
	const char *us = strchr(s, '_');
	char head[32];

	*task = -1;
	if (!us)
		return cli_parse_job_id(s, id, err);
	if ((size_t)(us - s) >= sizeof(head))
		return mu_error_set(err, MU_EINVAL, "", "'%s' is not a job id (N or ARRAY_TASK)", s);
	memcpy(head, s, (size_t)(us - s));
	head[us - s] = '\0';
	if (cli_parse_job_id(head, id, err) < 0 ||
	    cli_parse_int(us + 1, "array task", 0, 9999999, task, err) < 0)
		return mu_error_set(err, MU_EINVAL, "", "'%s' is not a job id (N or ARRAY_TASK)", s);
	return 0;
}

/* The path that cancels `arg`: an array task is looked up by its index;
 * a bare id cancels the whole array when it names one (scancel's shape). */
static char *cancel_path(struct cli_session *sess, const char *arg, struct mu_error *err)
{
	json_t *page = NULL, *items;
	long long task;
	int64_t id;
	char *q, *path = NULL;

	if (cancel_id(arg, &id, &task, err) < 0)
		return NULL;
	if (task < 0)
		return mu_asprintf("/v1/jobs/%lld/cancel?array=true", (long long)id);
	q = mu_asprintf("/v1/jobs?array_job_id=%lld&array_task_id=%lld&limit=1", (long long)id, task);
	if (cli_http_call(&sess->http, "GET", q, NULL, NULL, NULL, &page, err) == 0) {
		items = json_object_get(page, "items");
		if (json_array_size(items) == 1)
			path = mu_asprintf("/v1/jobs/%lld/cancel", (long long)json_integer_value(
						   json_object_get(json_array_get(items, 0), "id")));
		else
			mu_error_set(err, MU_ENOTFOUND, "", "no such array task");
	}
	json_decref(page);
	mu_free(q);
	return path;
}

int cmd_cancel(struct cli_global *g, int argc, char **argv)
{
	struct cli_session sess;
	struct mu_error err;
	int ret, first;

	/* Every id is checked before anything is cancelled. */
	mu_error_clear(&err);
	ret = cli_parse_plain(argc, argv, g, 1, -1, &first, &err);
	if (ret == 1) {
		cli_help("cancel");
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error("cancel", &err);
	for (int i = first; i < argc; i++) {
		int64_t id;
		long long task;

		if (cancel_id(argv[i], &id, &task, &err) < 0)
			return cli_usage_error("cancel", &err);
	}
	ret = cli_session_open(&sess, g);
	if (ret)
		return ret;
	for (int i = first; i < argc; i++) {
		char *path;
		json_t *job = NULL;
		int rc;

		mu_error_clear(&err);
		path = cancel_path(&sess, argv[i], &err);
		rc = path ? cli_http_call(&sess.http, "POST", path, NULL, NULL, NULL, &job, &err) : err.code;
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

/* Explanation: job_id, state, pending_reason, message, planned_start, blockers. */
static void show_explain(const json_t *e)
{
	const json_t *blockers = json_object_get(e, "blockers");
	char *start = cli_time_text(json_object_get(e, "planned_start"), "Unknown");
	size_t i;
	json_t *b;

	printf("JobId=%lld JobState=%s Reason=%s\n",
	       (long long)json_integer_value(json_object_get(e, "job_id")),
	       cli_str(json_object_get(e, "state"), "?"),
	       cli_str(json_object_get(e, "pending_reason"), "None"));
	printf("   Message=%s\n", cli_str(json_object_get(e, "message"), ""));
	printf("   PlannedStart=%s\n", start);
	json_array_foreach(blockers, i, b) {
		const json_t *jid = json_object_get(b, "job_id");
		printf("   Blocker=%s", cli_str(json_object_get(b, "kind"), "?"));
		if (json_is_integer(jid))
			printf(" JobId=%lld", (long long)json_integer_value(jid));
		printf(" %s\n", cli_str(json_object_get(b, "message"), ""));
	}
	mu_free(start);
}

int cmd_explain(struct cli_global *g, int argc, char **argv)
{
	struct cli_session sess;
	struct mu_error err;
	json_t *doc = NULL;
	int ret, first;

	mu_error_clear(&err);
	ret = cli_parse_plain(argc, argv, g, 1, 1, &first, &err);
	if (ret == 1) {
		cli_help("explain");
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error("explain", &err);
	{
		int64_t id;
		if (cli_parse_job_id(argv[first], &id, &err) < 0)
			return cli_usage_error("explain", &err);
	}
	ret = cli_session_open(&sess, g);
	if (ret)
		return ret;
	ret = get_job(&sess, argv[first], "/explain", &doc, &err);
	if (ret == CLI_EXIT_NOTFOUND && !err.field[0]) {
		/* Tell "no such job" from "no explain endpoint": the job itself answers. */
		json_t *job = NULL;
		if (get_job(&sess, argv[first], "", &job, NULL) == CLI_EXIT_OK) {
			fprintf(stderr, "muster: error: this server does not support explain yet "
					"(GET /v1/jobs/%s/explain answered HTTP 404)\n",
				argv[first]);
			ret = CLI_EXIT_ERROR;
		}
		json_decref(job);
	} else if (ret) {
		cli_report(&err);
	}
	if (!ret) {
		if (sess.json)
			cli_print_json(doc);
		else
			show_explain(doc);
		json_decref(doc);
	}
	cli_session_close(&sess);
	return ret;
}
