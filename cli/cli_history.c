/* cli_history.c - see cli_history.h. */
#include "cli_history.h"

#include <ctype.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "buf.h"
#include "cli_http.h"
#include "cli_out.h"
#include "slurmtime.h"

enum col {
	C_JOBID, C_JOBNAME, C_USER, C_TENANT, C_STATE, C_EXITCODE, C_ELAPSED, C_NNODES,
	C_ALLOCGPUS, C_GPUHOURS, C_SUBMIT, C_START, C_END, C_REASON, C_TIMELIMIT, C_QOS,
};

/* sacct's names (any case); Account is sacct's word for a tenant. */
static const struct {
	const char *name;
	enum col col;
	int width;
} cols[] = {
	{ "JobID", C_JOBID, 12 },	 { "JobName", C_JOBNAME, 10 },	   { "User", C_USER, 9 },
	{ "Tenant", C_TENANT, 10 },	 { "Account", C_TENANT, 10 },	   { "State", C_STATE, 10 },
	{ "ExitCode", C_EXITCODE, 8 },	 { "Elapsed", C_ELAPSED, 10 },	   { "NNodes", C_NNODES, 8 },
	{ "AllocGPUs", C_ALLOCGPUS, 9 }, { "GPUHours", C_GPUHOURS, 9 },	   { "Submit", C_SUBMIT, 19 },
	{ "Start", C_START, 19 },	 { "End", C_END, 19 },		   { "Reason", C_REASON, 10 },
	{ "Timelimit", C_TIMELIMIT, 10 }, { "QOS", C_QOS, 10 },
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))

static const char default_format[] = "JobID,JobName,Tenant,User,State,ExitCode,Elapsed,AllocGPUs";

const char *cli_history_fields(void)
{
	return "JobID,JobName,User,Tenant,Account,State,ExitCode,Elapsed,NNodes,AllocGPUs,GPUHours,"
	       "Submit,Start,End,Reason,Timelimit,QOS";
}

static int parse_format(const char *spec, struct cli_history *h, struct mu_error *err)
{
	char *copy = mu_strdup(spec);
	char *tok, *save = NULL;
	int ret = 0;

	h->ncols = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *pct = strchr(tok, '%');
		long w = 0;
		size_t i;

		if (pct) {
			char *end;
			*pct = '\0';
			w = strtol(pct + 1, &end, 10);
			if (!isdigit((unsigned char)pct[1]) || *end || w < 1 || w > 256) {
				ret = mu_error_set(err, MU_EINVAL, "format",
						   "--format %s%%%s: the width must be 1..256", tok, pct + 1);
				goto out;
			}
		}
		for (i = 0; i < NCOLS; i++)
			if (!strcasecmp(tok, cols[i].name))
				break;
		if (i == NCOLS) {
			ret = mu_error_set(err, MU_EINVAL, "format", "unknown --format field '%s' (%s)", tok,
					   cli_history_fields());
			goto out;
		}
		if (h->ncols == CLI_HISTORY_MAX_COLS) {
			ret = mu_error_set(err, MU_ERANGE, "format", "at most %d --format fields",
					   CLI_HISTORY_MAX_COLS);
			goto out;
		}
		h->cols[h->ncols].field = (int)i;
		h->cols[h->ncols++].width = w ? (int)w : cols[i].width;
	}
	if (!h->ncols)
		ret = mu_error_set(err, MU_EINVAL, "format", "empty --format");
out:
	mu_free(copy);
	return ret;
}

static void add_param(struct mu_buf *q, const char *key, const char *val)
{
	char *esc = cli_url_escape(val);

	mu_buf_addf(q, "%s%s=%s", q->len ? "&" : "", key, esc);
	mu_free(esc);
}

static int add_time(struct mu_buf *q, const char *key, const char *opt, const char *val, int64_t now,
		    struct mu_error *err)
{
	char text[32];
	int64_t t;

	if (mu_slurmtime_parse(val, now, 0, &t) != 0)
		return mu_error_set(err, MU_EINVAL, opt,
				    "invalid %s '%s' (forms: now-1days, 16:00, 2027-01-31T08:00, MMDD[YY], "
				    "today, midnight, ...)",
				    opt, val);
	mu_slurmtime_rfc3339(t < 0 ? 0 : t, text, sizeof(text));
	add_param(q, key, text);
	return 0;
}

int cli_history_parse(int argc, char **argv, int64_t now, struct cli_history *h,
		      struct mu_error *err)
{
	static const struct option longopts[] = {
		{ "starttime", required_argument, NULL, 'S' },
		{ "endtime", required_argument, NULL, 'E' },
		{ "user", required_argument, NULL, 'u' },
		{ "accounts", required_argument, NULL, 'A' },
		{ "tenant", required_argument, NULL, 'A' },
		{ "state", required_argument, NULL, 's' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "format", required_argument, NULL, 'o' },
		{ "parsable2", no_argument, NULL, 'P' },
		{ "noheader", no_argument, NULL, 'n' },
		{ "allusers", no_argument, NULL, 'a' },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	const char *start = NULL, *end = NULL, *jobs = NULL, *format = default_format;
	struct mu_buf q;
	char *states = NULL;
	int ret = 0, c;

	mu_buf_init(&q);
	h->query = NULL;
	h->parsable = h->noheader = false;
	h->ncols = 0;
	cli_getopt_reset();
	while ((c = cli_getopt_long(argc, argv, "+:hS:E:u:A:s:j:o:Pna", longopts)) != -1) {
		if (cli_common_opt(&h->g, c, optarg))
			continue;
		switch (c) {
		case 'h':
		case CLI_OPT_HELP:
			ret = 1;
			goto out;
		case 'S': start = optarg; break;
		case 'E': end = optarg; break;
		case 'u': add_param(&q, "user", optarg); break;
		case 'A': add_param(&q, "tenant", optarg); break;
		case 's': ret = cli_parse_states(optarg, &states, err); break;
		case 'j': jobs = optarg; break;
		case 'o': format = optarg; break;
		case 'P': h->parsable = true; break;
		case 'n': h->noheader = true; break;
		case 'a': break; /* sacct --allusers: the token decides what is visible */
		default: ret = cli_getopt_error(c, optopt, argv, optind, err); break;
		}
		if (ret < 0)
			goto out;
	}
	if (optind < argc) {
		ret = mu_error_set(err, MU_EINVAL, "", "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if ((ret = parse_format(format, h, err)) < 0)
		goto out;
	if (jobs) {
		for (const char *p = jobs; *p; p++)
			if (!isdigit((unsigned char)*p) && *p != ',') {
				ret = mu_error_set(err, MU_EINVAL, "jobs", "-j takes job ids: 12 or 12,13");
				goto out;
			}
		add_param(&q, "job", jobs);
	}
	/* sacct's default window: since midnight, or unbounded for named jobs */
	if (start || !jobs)
		ret = add_time(&q, "start", "--starttime", start ? start : "midnight", now, err);
	if (!ret && end)
		ret = add_time(&q, "end", "--endtime", end, now, err);
	if (ret < 0)
		goto out;
	if (states)
		add_param(&q, "state", states);
	h->query = mu_buf_detach(&q);
out:
	mu_free(states);
	mu_buf_release(&q);
	return ret;
}

void cli_history_release(struct cli_history *h)
{
	mu_free(h->query);
	h->query = NULL;
}

static int64_t epoch(const json_t *v)
{
	int64_t t;
	return json_is_string(v) && mu_slurmtime_parse_rfc3339(json_string_value(v), &t) == 0 ? t : -1;
}

static void cell(const struct cli_history *h, int i, const char *text, FILE *out)
{
	int w = h->cols[i].width;
	int len = (int)strlen(text);

	if (h->parsable) {
		fprintf(out, "%s%s", i ? "|" : "", text);
		return;
	}
	if (i)
		fputc(' ', out);
	if (len > w) /* sacct marks a cut cell with '+' */
		fprintf(out, "%.*s+", w - 1, text);
	else
		fprintf(out, "%*s", w, text);
}

void cli_history_header(const struct cli_history *h, FILE *out)
{
	if (h->noheader)
		return;
	for (int i = 0; i < h->ncols; i++)
		cell(h, i, cols[h->cols[i].field].name, out);
	fputc('\n', out);
	if (h->parsable)
		return;
	for (int i = 0; i < h->ncols; i++) {
		if (i)
			fputc(' ', out);
		for (int k = 0; k < h->cols[i].width; k++)
			fputc('-', out);
	}
	fputc('\n', out);
}

/* As sacct prints times: "2026-11-30T06:14:40" (UTC here), or "Unknown". */
static char *time_text(const json_t *v)
{
	const char *s = json_string_value(v);
	return s && strlen(s) >= 19 ? mu_strndup(s, 19) : mu_strdup("Unknown");
}

static void elapsed_text(int64_t s, char *buf, size_t n)
{
	if (s < 0)
		s = 0;
	if (s >= 86400)
		snprintf(buf, n, "%lld-%02lld:%02lld:%02lld", (long long)(s / 86400),
			 (long long)(s / 3600 % 24), (long long)(s / 60 % 60), (long long)(s % 60));
	else
		snprintf(buf, n, "%02lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60),
			 (long long)(s % 60));
}

void cli_history_row(const struct cli_history *h, const json_t *job, FILE *out)
{
	int64_t st = epoch(json_object_get(job, "started_at"));
	int64_t en = epoch(json_object_get(job, "ended_at"));
	int64_t secs = st >= 0 && en >= st ? en - st : 0;
	long long gpus = (long long)(json_integer_value(json_object_get(job, "nodes")) *
				     json_integer_value(json_object_get(job, "gpus_per_node")));
	const char *state = json_string_value(json_object_get(job, "state"));
	const char *reason = json_string_value(json_object_get(job, "end_reason"));

	for (int i = 0; i < h->ncols; i++) {
		char buf[64];
		char *own = NULL;
		const char *text = buf;

		switch (cols[h->cols[i].field].col) {
		case C_JOBID:
			snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(json_object_get(job, "id")));
			break;
		case C_JOBNAME: text = own = cli_value_text(json_object_get(job, "name")); break;
		case C_USER: text = own = cli_value_text(json_object_get(job, "user")); break;
		case C_TENANT: text = own = cli_value_text(json_object_get(job, "tenant")); break;
		case C_QOS: text = own = cli_value_text(json_object_get(job, "priority_class")); break;
		case C_STATE:
			/* sacct's word for a job its memory limit killed */
			text = reason && !strcmp(reason, "oom") ? "OUT_OF_MEMORY" : state ? state : "?";
			break;
		case C_EXITCODE: {
			const json_t *ec = json_object_get(job, "exit_code");
			long long v = json_is_integer(ec) ? (long long)json_integer_value(ec) : 0;
			/* sacct's code:signal; muster records a signal death as 128+N */
			if (v > 128 && v < 160)
				snprintf(buf, sizeof(buf), "0:%lld", v - 128);
			else
				snprintf(buf, sizeof(buf), "%lld:0", v);
			break;
		}
		case C_ELAPSED: elapsed_text(secs, buf, sizeof(buf)); break;
		case C_NNODES:
			snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(json_object_get(job, "nodes")));
			break;
		case C_ALLOCGPUS: snprintf(buf, sizeof(buf), "%lld", gpus); break;
		case C_GPUHOURS: snprintf(buf, sizeof(buf), "%.2f", (double)gpus * (double)secs / 3600.0); break;
		case C_SUBMIT: text = own = time_text(json_object_get(job, "created_at")); break;
		case C_START: text = own = time_text(json_object_get(job, "started_at")); break;
		case C_END: text = own = time_text(json_object_get(job, "ended_at")); break;
		case C_REASON: text = reason && *reason ? reason : "None"; break;
		case C_TIMELIMIT: {
			int64_t tl = json_integer_value(json_object_get(job, "time_limit"));
			if (tl >= 86400)
				elapsed_text(tl, buf, sizeof(buf));
			else
				snprintf(buf, sizeof(buf), "%02lld:%02lld:%02lld", (long long)(tl / 3600),
					 (long long)(tl / 60 % 60), (long long)(tl % 60));
			break;
		}
		}
		cell(h, i, text, out);
		mu_free(own);
	}
	fputc('\n', out);
}
