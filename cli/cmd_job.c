/* Jobs: submit (sbatch), queue (squeue), show (scontrol show job), cancel (scancel), explain. */
#include "cmd.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "cli_out.h"
#include "duration.h"
#include "slurmtime.h"

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

/* ---- submit --wait ------------------------------------------------------ */

static bool state_ended(const char *state)
{
	return state && (!strcmp(state, "COMPLETED") || !strcmp(state, "FAILED") ||
			 !strcmp(state, "CANCELLED") || !strcmp(state, "TIMEOUT"));
}

/*
 * One look at the job (or all tasks of an array). Returns 1 when every
 * job ended, with *code the worst exit code and `last` (new) the jobs;
 * 0 while any runs; or a negative MU_E* from the server.
 */
static int wait_look(struct cli_session *sess, int64_t id, bool array, int *code, json_t **last,
		     struct mu_error *err)
{
	json_t *items = NULL;
	size_t i;
	json_t *j;
	int ret;

	if (array) {
		char *path = mu_asprintf("/v1/jobs?array_job_id=%" PRId64, id);
		ret = cli_get_all(sess, path, &items, err);
		mu_free(path);
	} else {
		char *path = mu_asprintf("/v1/jobs/%" PRId64, id);
		json_t *job = NULL;
		ret = cli_http_call(&sess->http, "GET", path, NULL, NULL, NULL, &job, err);
		mu_free(path);
		if (ret == 0) {
			items = json_array();
			json_array_append_new(items, job);
		}
	}
	if (ret < 0)
		return ret;
	if (!json_array_size(items)) {
		json_decref(items);
		return mu_error_set(err, MU_ENOTFOUND, "job", "job %" PRId64 " has no tasks", id);
	}
	*code = 0;
	json_array_foreach(items, i, j) {
		const char *state = json_string_value(json_object_get(j, "state"));
		int c;

		if (!state_ended(state)) {
			json_decref(items);
			return 0;
		}
		c = cli_wait_exit_code(state, json_string_value(json_object_get(j, "end_reason")),
				       json_object_get(j, "exit_code"));
		if (c > *code)
			*code = c;
	}
	*last = items;
	return 1;
}

/*
 * Blocks until job `id` ends, as sbatch --wait: polls with a growing
 * interval (0.2 s to 2 s), riding out a server that is down or restarting
 * (connection refused, 502/503/504) for as long as it takes. Prints each
 * job's final state on stdout ("Job 12 COMPLETED ExitCode=0") unless
 * `quiet` (--parsable: the id only), and returns the exit code of
 * cli_wait_exit_code.
 */
static int wait_job(struct cli_session *sess, int64_t id, bool array, bool quiet)
{
	struct timespec ts = { 0, 200 * 1000 * 1000 };
	bool told = false;
	json_t *last = NULL;
	int code = 0;

	for (;;) {
		struct mu_error err;
		int ret;

		mu_error_clear(&err);
		ret = wait_look(sess, id, array, &code, &last, &err);
		if (ret == 1)
			break;
		if (ret < 0 && cli_exit_for(ret) != CLI_EXIT_UNAVAIL)
			return cli_report_about("job", "", &err);
		if (ret < 0 && !told) {
			fprintf(stderr, "muster: waiting for job %" PRId64 ": %s; retrying\n", id,
				err.msg);
			told = true;
		} else if (ret == 0 && told) {
			told = false;
		}
		nanosleep(&ts, NULL);
		ts.tv_nsec += 200 * 1000 * 1000;
		if (ts.tv_nsec >= 1000 * 1000 * 1000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000 * 1000 * 1000;
		}
		if (ts.tv_sec >= 2)
			ts = (struct timespec){ 2, 0 };
	}
	if (sess->json) {
		cli_print_json(array ? last : json_array_get(last, 0));
	} else if (!quiet) {
		size_t i;
		json_t *j;
		json_array_foreach(last, i, j) {
			char *ec = cli_value_text(json_object_get(j, "exit_code"));
			printf("Job %lld %s ExitCode=%s%s%s\n",
			       (long long)json_integer_value(json_object_get(j, "id")),
			       cli_str(json_object_get(j, "state"), "?"), *ec ? ec : "(null)",
			       json_string_length(json_object_get(j, "end_reason")) ? " Reason=" : "",
			       cli_str(json_object_get(j, "end_reason"), ""));
			mu_free(ec);
		}
	}
	json_decref(last);
	return code;
}

int cmd_submit(struct cli_global *g, int argc, char **argv)
{
	struct cli_submit s = { .g = *g };
	struct cli_session sess;
	struct mu_error err;
	json_t *job = NULL;
	size_t i;
	json_t *w;
	int ret;

	mu_error_clear(&err);
	ret = cli_submit_parse(argc, argv, &s, &err);
	if (ret == 1) {
		cli_help("submit");
		ret = CLI_EXIT_OK;
		goto out_release;
	}
	if (ret < 0) {
		ret = cli_usage_error("submit", &err);
		goto out_release;
	}
	/* sbatch prints one line per ignored option; so do we, before anything is sent */
	json_array_foreach(s.warnings, i, w)
		fprintf(stderr, "muster: warning: %s\n", json_string_value(w));
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
	if (sess.json && !s.wait)
		cli_print_json(job);
	else if (s.parsable)
		printf("%lld\n", (long long)json_integer_value(json_object_get(job, "id")));
	else if (!sess.json)
		printf("Submitted job %lld\n",
		       (long long)json_integer_value(json_object_get(job, "id")));
	ret = CLI_EXIT_OK;
	if (s.wait) {
		/* the id line must reach a pipe before the wait, as sbatch's does */
		fflush(stdout);
		ret = wait_job(&sess, json_integer_value(json_object_get(job, "id")),
			       json_object_get(s.body, "array") != NULL, s.parsable);
	}
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

/*
 * squeue's job id text: "123", an array task "123_7", or for the pending
 * tasks of an array one line "123_[4-15%4]" at the first one's place. The
 * listing comes page by page in id order, where the pending tasks of an
 * array are adjacent: struct collapse holds only the run being collapsed
 * (its first task's job, the task ids, and the array's other tasks met
 * meanwhile, which print after it as they did), never the listing.
 */
struct collapse {
	json_t *first;       /* the run's first pending task (a reference), or NULL */
	int64_t aj;          /* its array_job_id */
	int64_t *tasks;
	size_t n, cap;
	json_t *others;      /* the array's non-pending tasks seen during the run */
};

typedef void (*row_fn)(void *arg, const json_t *job, const char *id);

static void collapse_flush(struct collapse *c, row_fn row, void *arg)
{
	char out[96];
	size_t i;
	json_t *o;

	if (!c->first)
		return;
	for (size_t a = 1; a < c->n; a++) /* insertion sort: listings come in id order already */
		for (size_t b = a; b > 0 && c->tasks[b - 1] > c->tasks[b]; b--) {
			int64_t t = c->tasks[b];
			c->tasks[b] = c->tasks[b - 1];
			c->tasks[b - 1] = t;
		}
	if (c->n == 1)
		snprintf(out, sizeof(out), "%lld_%lld", (long long)c->aj, (long long)c->tasks[0]);
	else
		cli_array_collapse(c->aj, c->tasks, c->n,
				   json_string_value(json_object_get(c->first, "array")), out,
				   sizeof(out));
	row(arg, c->first, out);
	json_array_foreach(c->others, i, o) {
		snprintf(out, sizeof(out), "%lld_%lld", (long long)c->aj,
			 (long long)json_integer_value(json_object_get(o, "array_task_id")));
		row(arg, o, out);
	}
	json_decref(c->first);
	json_array_clear(c->others);
	c->first = NULL;
	c->n = 0;
}

/* One job of the listing, in order: its line now, or later with its run. */
static void collapse_add(struct collapse *c, json_t *job, row_fn row, void *arg)
{
	const json_t *aj = json_object_get(job, "array_job_id");
	const json_t *task = json_object_get(job, "array_task_id");
	bool pending = !strcmp(cli_str(json_object_get(job, "state"), ""), "PENDING");
	char out[96];

	if (!json_is_integer(aj) || json_integer_value(aj) < 1 || !json_is_integer(task)) {
		collapse_flush(c, row, arg);
		snprintf(out, sizeof(out), "%lld",
			 (long long)json_integer_value(json_object_get(job, "id")));
		row(arg, job, out);
		return;
	}
	if (c->first && json_integer_value(aj) == c->aj) {
		if (pending) {
			c->tasks = mu_grow(c->tasks, &c->cap, c->n + 1, sizeof(*c->tasks));
			c->tasks[c->n++] = json_integer_value(task);
		} else {
			json_array_append(c->others, job);
		}
		return;
	}
	collapse_flush(c, row, arg);
	if (!pending) {
		snprintf(out, sizeof(out), "%lld_%lld", (long long)json_integer_value(aj),
			 (long long)json_integer_value(task));
		row(arg, job, out);
		return;
	}
	c->first = json_incref(job);
	c->aj = json_integer_value(aj);
	c->tasks = mu_grow(c->tasks, &c->cap, 1, sizeof(*c->tasks));
	c->tasks[0] = json_integer_value(task);
	c->n = 1;
}

/* One squeue -o field of a job (new string). */
static char *queue_field(char letter, const json_t *job, const char *id)
{
	long long nodes = json_integer_value(json_object_get(job, "nodes"));
	long long gpn = json_integer_value(json_object_get(job, "gpus_per_node"));
	const char *state = json_string_value(json_object_get(job, "state"));
	char buf[64];

	switch (letter) {
	case 'i': return mu_strdup(id);
	case 'j': return cli_value_text(json_object_get(job, "name"));
	case 'u': return cli_value_text(json_object_get(job, "user"));
	case 'a': return cli_value_text(json_object_get(job, "tenant"));
	case 'q': return cli_value_text(json_object_get(job, "priority_class"));
	case 't': return mu_strdup(cli_state_short(state));
	case 'T': return mu_strdup(state ? state : "?");
	case 'P': return mu_strdup("gpu"); /* one pool: squeue's partition column */
	case 'D': snprintf(buf, sizeof(buf), "%lld", nodes); return mu_strdup(buf);
	case 'C': snprintf(buf, sizeof(buf), "%lld", nodes * gpn); return mu_strdup(buf);
	case 'b':
		snprintf(buf, sizeof(buf), "gpu:%lld", gpn);
		return mu_strdup(gpn ? buf : "N/A");
	case 'l':
		mu_duration_format(json_integer_value(json_object_get(job, "time_limit")), buf, sizeof(buf));
		return mu_strdup(buf);
	case 'M': {
		const char *st = json_string_value(json_object_get(job, "started_at"));
		int64_t t0;
		if (!st || mu_slurmtime_parse_rfc3339(st, &t0) != 0)
			return mu_strdup("0:00");
		mu_duration_format((int64_t)time(NULL) - t0, buf, sizeof(buf));
		return mu_strdup(buf);
	}
	case 'L': {
		const char *st = json_string_value(json_object_get(job, "started_at"));
		int64_t tl = json_integer_value(json_object_get(job, "time_limit"));
		int64_t left = tl, t0;
		if (st && mu_slurmtime_parse_rfc3339(st, &t0) == 0)
			left = tl - ((int64_t)time(NULL) - t0);
		mu_duration_format(left > 0 ? left : 0, buf, sizeof(buf));
		return mu_strdup(buf);
	}
	case 'S': return cli_time_text(json_object_get(job, state && !strcmp(state, "PENDING")
									? "planned_start" : "started_at"), "N/A");
	case 'V': return cli_time_text(json_object_get(job, "created_at"), "N/A");
	case 'e': return cli_time_text(json_object_get(job, "ended_at"), "N/A");
	case 'r':
	case 'R': {
		const json_t *r = json_object_get(job, "pending_reason");
		if (json_is_string(r) && json_string_length(r))
			return letter == 'R' ? mu_asprintf("(%s)", json_string_value(r)) : cli_value_text(r);
		return mu_strdup(letter == 'R' ? "" : "None");
	}
	default: return mu_strdup("");
	}
}

static const char *queue_header(char letter)
{
	switch (letter) {
	case 'i': return "JOBID";
	case 'j': return "NAME";
	case 'u': return "USER";
	case 'a': return "ACCOUNT";
	case 'q': return "QOS";
	case 't': return "ST";
	case 'T': return "STATE";
	case 'P': return "PARTITION";
	case 'D': return "NODES";
	case 'C': return "GPUS";
	case 'b': return "TRES_PER_NODE";
	case 'l': return "TIME_LIMIT";
	case 'M': return "TIME";
	case 'L': return "TIME_LEFT";
	case 'S': return "START_TIME";
	case 'V': return "SUBMIT_TIME";
	case 'e': return "END_TIME";
	case 'r': return "REASON";
	case 'R': return "NODELIST(REASON)";
	default: return "";
	}
}

/* One line of an squeue -o format: "%.18i" right-aligned in 18, "%-8j" left, "%j" bare. */
static void queue_format_line(const char *fmt, const json_t *job, const char *id, FILE *out)
{
	for (const char *p = fmt; *p; p++) {
		bool right = false, left = false;
		int width = 0;
		char *text;

		if (*p != '%') {
			fputc(*p, out);
			continue;
		}
		p++;
		if (*p == '.')
			right = true, p++;
		else if (*p == '-')
			left = true, p++;
		while (isdigit((unsigned char)*p))
			width = width * 10 + (*p++ - '0');
		if (*p == '%') {
			fputc('%', out);
			continue;
		}
		text = job ? queue_field(*p, job, id) : mu_strdup(queue_header(*p));
		if (width && (int)strlen(text) > width)
			text[width] = '\0'; /* squeue cuts to the width */
		if (!width)
			fputs(text, out);
		else if (right || !left)
			fprintf(out, right ? "%*s" : "%-*s", width, text);
		else
			fprintf(out, "%-*s", width, text);
		mu_free(text);
	}
	fputc('\n', out);
}

static void queue_row(struct cli_table *t, const json_t *job, const char *idtext)
{
	long long nodes = json_integer_value(json_object_get(job, "nodes"));
	long long gpn = json_integer_value(json_object_get(job, "gpus_per_node"));
	const json_t *min = json_object_get(job, "min_nodes");
	const char *state = json_string_value(json_object_get(job, "state"));
	const json_t *reason = json_object_get(job, "pending_reason");
	char id[96], n[48], gpus[32], tl[32];
	char *tenant = cli_value_text(json_object_get(job, "tenant"));
	char *user = cli_value_text(json_object_get(job, "user"));
	char *name = cli_value_text(json_object_get(job, "name"));
	char *why;

	if (!*name) { /* an empty cell would shift the columns for `awk` */
		mu_free(name);
		name = mu_strdup("-");
	}

	snprintf(id, sizeof(id), "%s", idtext);
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

/* squeue --start: when each pending job should start. */
static void queue_start_row(struct cli_table *t, const json_t *job, const char *id)
{
	char *tenant = cli_value_text(json_object_get(job, "tenant"));
	char *user = cli_value_text(json_object_get(job, "user"));
	char *name = cli_value_text(json_object_get(job, "name"));
	char *start = cli_time_text(json_object_get(job, "planned_start"), "N/A");
	char *why = queue_field('r', job, id);
	char n[32], gpus[32];

	snprintf(n, sizeof(n), "%lld", (long long)json_integer_value(json_object_get(job, "nodes")));
	snprintf(gpus, sizeof(gpus), "%lld",
		 (long long)(json_integer_value(json_object_get(job, "nodes")) *
			     json_integer_value(json_object_get(job, "gpus_per_node"))));
	cli_table_add(t, (const char *const[]){ id, tenant, user, *name ? name : "-",
						cli_state_short(json_string_value(json_object_get(job, "state"))),
						start, n, gpus, why });
	mu_free(tenant);
	mu_free(user);
	mu_free(name);
	mu_free(start);
	mu_free(why);
}

/* Where muster queue's rows go as pages arrive. */
struct queue_out {
	const struct cli_queue *q;
	struct cli_table *t;  /* the table (its rows are text), or NULL for -o */
	struct collapse c;
	size_t njson;         /* --json: items printed so far */
};

static void queue_emit(void *arg, const json_t *job, const char *id)
{
	struct queue_out *o = arg;

	if (o->q->format)
		queue_format_line(o->q->format, job, id, stdout);
	else if (o->q->start)
		queue_start_row(o->t, job, id);
	else
		queue_row(o->t, job, id);
}

/* --json as cli_print_json would print {"items": [...], "next_cursor": null},
 * one item at a time. */
static void queue_json_page(struct queue_out *o, json_t *items)
{
	size_t i;
	json_t *v;

	json_array_foreach(items, i, v) {
		char *text = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);

		fputs(o->njson++ ? ",\n    " : "{\n  \"items\": [\n    ", stdout);
		for (const char *p = text; *p; p++) {
			fputc(*p, stdout);
			if (*p == '\n')
				fputs("    ", stdout);
		}
		free(text);
	}
}

static void queue_page(void *arg, json_t *items)
{
	struct queue_out *o = arg;
	size_t i;
	json_t *v;

	if (o->q->g.json) {
		queue_json_page(o, items);
		return;
	}
	json_array_foreach(items, i, v)
		collapse_add(&o->c, v, queue_emit, o);
	if (o->q->format)
		fflush(stdout); /* each page on the terminal as it comes */
}

int cmd_queue(struct cli_global *g, int argc, char **argv)
{
	static const char *const hdr[] = { "JOBID", "TENANT", "USER",       "NAME",  "ST",
					   "NODES", "GPUS",   "TIME_LIMIT", "REASON" };
	static const char *const start_hdr[] = { "JOBID", "TENANT", "USER", "NAME", "ST",
						 "START_TIME", "NODES", "GPUS", "REASON" };
	struct cli_queue q = { .g = *g };
	struct queue_out o = { .q = &q };
	struct cli_session sess;
	struct mu_error err;
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
	q.g.json = sess.json;
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
	/* The table shows a few columns: ask for only those (squeue-sized pages,
	 * ~a fifth of the whole jobs' JSON to send and parse); -o and --json may
	 * show any field and get them all. */
	if (!q.g.json && !q.format)
		path = query_append(path, &sess, "fields",
				    q.start ? "state,tenant,user,name,nodes,min_nodes,gpus_per_node,"
					      "pending_reason,end_reason,planned_start,array"
					    : "state,tenant,user,name,nodes,min_nodes,gpus_per_node,"
					      "time_limit,pending_reason,end_reason,array");
	/* Rows go out page by page: a table keeps only its cells' text (for the
	 * column widths), -o lines and --json items are printed at once. */
	o.c.others = json_array();
	if (!q.g.json && !q.format)
		o.t = cli_table_new(9, q.start ? start_hdr : hdr);
	if (!q.g.json && q.format && !q.noheader)
		queue_format_line(q.format, NULL, NULL, stdout);
	ret = cli_get_pages(&sess, path, queue_page, &o, &err);
	if (ret < 0) {
		if (o.njson)
			fputs("\n", stdout);
		fflush(stdout);
		ret = cli_report(&err);
		goto out_close;
	}
	if (q.g.json) {
		fputs(o.njson ? "\n  ],\n  \"next_cursor\": null\n}\n"
			      : "{\n  \"items\": [],\n  \"next_cursor\": null\n}\n", stdout);
	} else {
		collapse_flush(&o.c, queue_emit, &o);
		if (o.t)
			cli_table_print_opt(o.t, stdout, !q.noheader);
	}
	ret = CLI_EXIT_OK;
out_close:
	cli_session_close(&sess);
	json_decref(o.c.first);
	json_decref(o.c.others);
	mu_free(o.c.tasks);
	if (o.t)
		cli_table_free(o.t);
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
/* Launcher=, OnShrink=, Signal= and the launch line each node runs. */
static void show_launch(const json_t *job)
{
	const json_t *sig = json_object_get(job, "signal");
	const json_t *argv = json_object_get(job, "launch_argv");
	size_t i;
	json_t *a;

	kv("Launcher", json_object_get(job, "launcher"), "none");
	kv("OnShrink", json_object_get(job, "on_shrink"), "restart");
	if (json_is_object(sig))
		printf(" Signal=%s%s@%lld", json_is_true(json_object_get(sig, "batch_only")) ? "B:" : "",
		       json_string_value(json_object_get(sig, "name")),
		       (long long)json_integer_value(json_object_get(sig, "before")));
	else
		printf(" Signal=(null)");
	printf("\n  ");
	if (!json_is_array(argv))
		return;
	printf(" LaunchLine=");
	json_array_foreach(argv, i, a)
		printf("%s%s", i ? " " : "", json_string_value(a));
	printf("\n  ");
}

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
	show_launch(job);
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

/* One cancel the old way: POST /v1/jobs/{id}/cancel (array tasks, --json). */
static int cancel_one(struct cli_session *sess, const char *arg)
{
	struct mu_error err;
	json_t *job = NULL;
	char *path;
	int rc;

	mu_error_clear(&err);
	path = cancel_path(sess, arg, &err);
	rc = path ? cli_http_call(&sess->http, "POST", path, NULL, NULL, NULL, &job, &err) : err.code;
	mu_free(path);
	if (rc < 0)
		return cli_report_about("job", arg, &err);
	if (sess->json)
		cli_print_json(job);
	json_decref(job);
	return 0;
}

#define CANCEL_BATCH 10000 /* POST /v1/jobs/cancel takes up to 10,000 ids */

/*
 * Bare ids argv[at[0..n)] in one POST /v1/jobs/cancel {"ids", "array": true}
 * per 10,000 (scancel's many ids, one round trip); each failing id is
 * reported as its own cancel would be. A server without the route (404,
 * 405) gets one request per id. Returns the first failure's exit code.
 */
static int cancel_many(struct cli_session *sess, char **argv, const int *at, size_t n)
{
	int ret = 0;

	for (size_t off = 0; off < n; off += CANCEL_BATCH) {
		size_t m = n - off < CANCEL_BATCH ? n - off : CANCEL_BATCH;
		json_t *body = json_object(), *ids = json_array(), *doc = NULL, *r;
		struct mu_error err;
		size_t i;
		int rc;

		for (i = 0; i < m; i++)
			json_array_append_new(ids, json_integer(strtoll(argv[at[off + i]], NULL, 10)));
		json_object_set_new(body, "ids", ids);
		json_object_set_new(body, "array", json_true());
		mu_error_clear(&err);
		rc = cli_http_call(&sess->http, "POST", "/v1/jobs/cancel", body, NULL, NULL, &doc, &err);
		json_decref(body);
		if (rc == MU_EMETHOD || (rc == MU_ENOTFOUND && !err.field[0])) {
			for (i = 0; i < m; i++) { /* an older server */
				rc = cancel_one(sess, argv[at[off + i]]);
				ret = ret ? ret : rc;
			}
			continue;
		}
		if (rc < 0)
			return cli_report(&err);
		json_array_foreach(json_object_get(doc, "results"), i, r) {
			const json_t *p = json_object_get(r, "problem");

			if (json_is_true(json_object_get(r, "ok")) || i >= m)
				continue;
			mu_error_clear(&err);
			cli_http_problem(json_integer_value(json_object_get(p, "status")), p, &err);
			rc = cli_report_about("job", argv[at[off + i]], &err);
			ret = ret ? ret : rc;
		}
		json_decref(doc);
	}
	return ret;
}

struct id_at {
	int64_t id;
	int at;
};

static int by_id(const void *a, const void *b)
{
	const struct id_at *x = a, *y = b;

	return x->id != y->id ? (x->id > y->id) - (x->id < y->id) : x->at - y->at;
}

static int by_at(const void *a, const void *b)
{
	return ((const struct id_at *)a)->at - ((const struct id_at *)b)->at;
}

/* Drops repeated ids of bare[0..n) (the first stays, order kept): scancel 5 5
 * cancels 5 once, and the bulk route refuses a repeat. Returns the new n. */
static size_t unique_ids(char **argv, int *bare, size_t n)
{
	struct id_at *v = mu_malloc(sizeof(*v) * (n ? n : 1));
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		v[i] = (struct id_at){ strtoll(argv[bare[i]], NULL, 10), bare[i] };
	qsort(v, n, sizeof(*v), by_id);
	for (size_t i = 0; i < n; i++)
		if (!m || v[m - 1].id != v[i].id)
			v[m++] = v[i];
	qsort(v, m, sizeof(*v), by_at);
	for (size_t i = 0; i < m; i++)
		bare[i] = v[i].at;
	mu_free(v);
	return m;
}

int cmd_cancel(struct cli_global *g, int argc, char **argv)
{
	struct cli_session sess;
	struct mu_error err;
	int ret, first;
	int *bare;
	char *inbulk;
	size_t nbare = 0;

	/* Every id is checked before anything is cancelled. */
	mu_error_clear(&err);
	ret = cli_parse_plain(argc, argv, g, 1, -1, &first, &err);
	if (ret == 1) {
		cli_help("cancel");
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error("cancel", &err);
	bare = mu_malloc(sizeof(*bare) * (size_t)(argc - first));
	for (int i = first; i < argc; i++) {
		int64_t id;
		long long task;

		if (cancel_id(argv[i], &id, &task, &err) < 0) {
			mu_free(bare);
			return cli_usage_error("cancel", &err);
		}
		if (task < 0 && !g->json)
			bare[nbare++] = i;
	}
	inbulk = mu_malloc((size_t)argc);
	memset(inbulk, 0, (size_t)argc);
	for (size_t k = 0; k < nbare; k++)
		inbulk[bare[k]] = 1;
	nbare = unique_ids(argv, bare, nbare);
	ret = cli_session_open(&sess, g);
	if (ret) {
		mu_free(bare);
		mu_free(inbulk);
		return ret;
	}
	/* Array tasks (and --json, which prints each job) one by one; the rest at once. */
	for (int i = first; i < argc; i++) {
		int rc;

		if (inbulk[i])
			continue;
		rc = cancel_one(&sess, argv[i]);
		ret = ret ? ret : rc;
	}
	if (nbare) {
		int rc = cancel_many(&sess, argv, bare, nbare);

		ret = ret ? ret : rc;
	}
	mu_free(bare);
	mu_free(inbulk);
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
