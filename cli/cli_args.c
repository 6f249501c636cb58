#include "cli_args.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "duration.h"

bool cli_common_opt(struct cli_global *g, int c, const char *arg)
{
	switch (c) {
	case CLI_OPT_URL:
		g->url = arg;
		return true;
	case CLI_OPT_TOKEN:
		g->token = arg;
		return true;
	case CLI_OPT_JSON:
		g->json = true;
		return true;
	default:
		return false;
	}
}

void cli_getopt_reset(void)
{
	/* glibc: optind = 0 re-initialises its internal state (the "+" mode too). */
	optind = 0;
	opterr = 0;
}

int cli_getopt_error(int c, int optopt_val, char **argv, int idx, struct mu_error *err)
{
	const char *arg = (idx > 0 && argv[idx - 1]) ? argv[idx - 1] : "?";

	if (c == ':')
		return mu_error_set(err, MU_EINVAL, "", "option '%s' needs a value", arg);
	if (optopt_val > 0 && optopt_val < 0x100 && strncmp(arg, "--", 2) != 0)
		return mu_error_set(err, MU_EINVAL, "", "unknown option '-%c'", optopt_val);
	return mu_error_set(err, MU_EINVAL, "", "unknown or malformed option '%s'", arg);
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

int cli_parse_int(const char *s, const char *what, long long min, long long max, long long *out,
		  struct mu_error *err)
{
	char *end;
	long long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return mu_error_set(err, MU_EINVAL, what, "%s: expected an integer, got '%s'", what,
				    s ? s : "");
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end)
		return mu_error_set(err, MU_EINVAL, what, "%s: expected an integer, got '%s'", what, s);
	if (errno == ERANGE || v < min || v > max)
		return mu_error_set(err, MU_ERANGE, what, "%s: %s is out of range %lld..%lld", what, s,
				    min, max);
	*out = v;
	return 0;
}

int cli_parse_job_id(const char *s, int64_t *id, struct mu_error *err)
{
	long long v;

	if (!all_digits(s))
		return mu_error_set(err, MU_EINVAL, "job", "invalid job id '%s'", s);
	if (cli_parse_int(s, "job", 1, INT64_MAX, &v, err) < 0)
		return mu_error_set(err, MU_EINVAL, "job", "invalid job id '%s'", s);
	*id = v;
	return 0;
}

int cli_parse_time(const char *s, int64_t *secs, struct mu_error *err)
{
	int64_t v;
	int ret;

	if (!strcasecmp(s, "unlimited") || !strcasecmp(s, "infinite"))
		return mu_error_set(err, MU_EINVAL, "time", "--time must be finite (got '%s')", s);
	ret = mu_duration_parse_slurm(s, &v);
	if (ret == MU_ERANGE)
		return mu_error_set(err, MU_ERANGE, "time", "--time '%s' is too long", s);
	if (ret < 0)
		return mu_error_set(err, MU_EINVAL, "time",
				    "invalid --time '%s' (forms: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, "
				    "D-HH:MM:SS)",
				    s);
	if (v < 1)
		return mu_error_set(err, MU_ERANGE, "time", "--time must be at least one second");
	*secs = v;
	return 0;
}

static const char *const dep_types[] = { "afterok", "afterany", "afternotok" };

int cli_parse_dependency(const char *spec, json_t *deps, struct mu_error *err)
{
	char *copy = mu_strdup(spec);
	char *item, *save_item = NULL;
	int ret = 0;
	int n = 0;

	if (strchr(spec, '?')) {
		ret = mu_error_set(err, MU_EINVAL, "dependency",
				   "'?' (any of) dependencies are not supported; ',' means all of");
		goto out;
	}
	for (item = strtok_r(copy, ",", &save_item); item; item = strtok_r(NULL, ",", &save_item)) {
		char *colon = strchr(item, ':');
		const char *type = NULL;
		char *id, *save_id = NULL;

		if (!strcmp(item, "singleton")) { /* after earlier jobs of this name and user */
			json_t *d = json_object();

			json_object_set_new(d, "type", json_string("singleton"));
			json_array_append_new(deps, d);
			n++;
			continue;
		}
		if (!strncmp(item, "singleton:", 10)) {
			ret = mu_error_set(err, MU_EINVAL, "dependency", "singleton takes no job ids");
			goto out;
		}
		if (!colon) {
			ret = mu_error_set(err, MU_EINVAL, "dependency",
					   "dependency '%s' must be TYPE:JOBID[:JOBID...]", item);
			goto out;
		}
		*colon = '\0';
		for (size_t i = 0; i < sizeof(dep_types) / sizeof(dep_types[0]); i++)
			if (!strcmp(item, dep_types[i]))
				type = dep_types[i];
		if (!type) {
			ret = mu_error_set(err, MU_EINVAL, "dependency",
					   "dependency type '%s' is not supported (use afterok, afterany "
					   "or afternotok)",
					   item);
			goto out;
		}
		/* strtok_r would fold "1::2" and a trailing ':'; Slurm refuses them, so do we. */
		id = colon + 1;
		if (!*id || *id == ':' || id[strlen(id) - 1] == ':' || strstr(id, "::")) {
			ret = mu_error_set(err, MU_EINVAL, "dependency",
					   "dependency '%s' needs job ids: %s:JOBID[:JOBID...]", type,
					   type);
			goto out;
		}
		for (id = strtok_r(id, ":", &save_id); id; id = strtok_r(NULL, ":", &save_id)) {
			int64_t jid;

			if (strchr(id, '+')) {
				ret = mu_error_set(err, MU_EINVAL, "dependency",
						   "time offsets ('+%s') are not supported",
						   strchr(id, '+') + 1);
				goto out;
			}
			if (cli_parse_job_id(id, &jid, err) < 0) {
				ret = mu_error_set(err, MU_EINVAL, "dependency",
						   "invalid job id '%s' in dependency", id);
				goto out;
			}
			json_array_append_new(deps, json_pack("{s:s, s:I}", "type", type, "job_id",
							      (json_int_t)jid));
		}
		n++;
	}
	if (n == 0 || spec[0] == ',' || spec[strlen(spec) - 1] == ',' || strstr(spec, ",,"))
		ret = mu_error_set(err, MU_EINVAL, "dependency", "malformed --dependency '%s'", spec);
out:
	mu_free(copy);
	return ret;
}

static bool label_key_ok(const char *k, size_t n)
{
	if (n < 1 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)k[i]) && !strchr("_./-", k[i]))
			return false;
	return true;
}

static bool env_key_ok(const char *k, size_t n)
{
	if (n < 1 || n > 256 || isdigit((unsigned char)k[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)k[i]) && k[i] != '_')
			return false;
	return true;
}

int cli_parse_kv(const char *s, const char *what, json_t *obj, struct mu_error *err)
{
	bool is_env = !strcmp(what, "env");
	const char *eq = strchr(s, '=');
	size_t klen = eq ? (size_t)(eq - s) : strlen(s);
	const char *val = eq ? eq + 1 : NULL;
	char *key = mu_strndup(s, klen);
	int ret = 0;

	if (is_env ? !env_key_ok(key, klen) : !label_key_ok(key, klen)) {
		ret = mu_error_set(err, MU_EINVAL, what,
				   is_env ? "invalid --env name '%s' (letters, digits, '_'; not "
					    "starting with a digit)"
					  : "invalid --label key '%s' (1-63 of letters, digits, '_./-')",
				   key);
		goto out;
	}
	if (!val && is_env) {
		val = getenv(key);
		if (!val) {
			ret = mu_error_set(err, MU_EINVAL, what,
					   "--env %s: not set in this environment (use %s=VALUE)", key,
					   key);
			goto out;
		}
	} else if (!val) {
		ret = mu_error_set(err, MU_EINVAL, what, "--%s '%s' must be KEY=VALUE", what, s);
		goto out;
	}
	if (json_object_get(obj, key)) {
		ret = mu_error_set(err, MU_EINVAL, what, "--%s %s given twice", what, key);
		goto out;
	}
	json_object_set_new(obj, key, json_string(val));
	if (!json_object_get(obj, key))
		ret = mu_error_set(err, MU_EUTF8, what, "--%s %s: value is not valid UTF-8", what,
				   key);
out:
	mu_free(key);
	return ret;
}

static const struct {
	const char *name;
	const char *abbrev;
} states[] = {
	{ "PENDING", "PD" },   { "STARTING", "CF" },  { "RUNNING", "R" },  { "COMPLETED", "CD" },
	{ "FAILED", "F" },     { "CANCELLED", "CA" }, { "TIMEOUT", "TO" },
};

const char *cli_state_short(const char *state)
{
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		if (state && !strcmp(state, states[i].name))
			return states[i].abbrev;
	return "??";
}

int cli_parse_states(const char *s, char **out, struct mu_error *err)
{
	char *copy = mu_strdup(s);
	char *tok, *save = NULL;
	char *acc = *out ? mu_strdup(*out) : NULL;
	bool all = false;
	int ret = 0;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const char *name = NULL;

		if (!strcasecmp(tok, "all")) {
			all = true;
			continue;
		}
		if (!strcasecmp(tok, "CANCELED"))
			tok = "CANCELLED";
		for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
			if (!strcasecmp(tok, states[i].name) || !strcasecmp(tok, states[i].abbrev))
				name = states[i].name;
		if (!name) {
			ret = mu_error_set(err, MU_EINVAL, "state",
					   "unknown job state '%s' (PENDING|PD, STARTING|CF, RUNNING|R, "
					   "COMPLETED|CD, FAILED|F, CANCELLED|CA, TIMEOUT|TO, all)",
					   tok);
			goto out;
		}
		if (acc) {
			char *n = mu_asprintf("%s,%s", acc, name);
			mu_free(acc);
			acc = n;
		} else {
			acc = mu_strdup(name);
		}
	}
	if (!all && !acc) {
		ret = mu_error_set(err, MU_EINVAL, "state", "empty --state");
		goto out;
	}
	mu_free(*out);
	*out = all ? NULL : acc;
	if (all)
		mu_free(acc);
	acc = NULL;
out:
	mu_free(acc);
	mu_free(copy);
	return ret;
}

enum {
	OPT_GPUS_PER_NODE = CLI_OPT_FIRST_PRIVATE,
	OPT_MIN_NODES,
	OPT_PRIORITY_CLASS,
	OPT_DEPENDENCY,
	OPT_LABEL,
	OPT_ENV,
	OPT_WORKDIR,
	OPT_GPU_MODEL,
	OPT_PROCS_PER_NODE,
	OPT_MEM,
	OPT_CPUS_PER_NODE,
	OPT_TOPOLOGY,
	OPT_MAX_RETRIES,
	OPT_IDEMPOTENCY_KEY,
	OPT_TEST_ONLY,
	OPT_PARSABLE,
	OPT_USER,
	OPT_WRAP,
};

/* "8" or "a100:8" (Slurm's --gpus-per-node=[type:]number). */
static int parse_gpus_per_node(const char *s, json_t *body, struct mu_error *err)
{
	const char *colon = strrchr(s, ':');
	const char *num = colon ? colon + 1 : s;
	long long v;
	int ret;

	ret = cli_parse_int(num, "gpus-per-node", 0, 64, &v, err);
	if (ret < 0)
		return ret;
	if (colon) {
		if (colon == s)
			return mu_error_set(err, MU_EINVAL, "gpus-per-node",
					    "--gpus-per-node '%s': empty GPU type", s);
		json_object_set_new(body, "gpu_model", json_stringn(s, (size_t)(colon - s)));
	}
	json_object_set_new(body, "gpus_per_node", json_integer(v));
	return 0;
}

/* "4" or Slurm's "2-4" (min-max). */
static int parse_nodes(const char *s, json_t *body, struct mu_error *err)
{
	const char *dash = strchr(s, '-');
	char *min = dash ? mu_strndup(s, (size_t)(dash - s)) : NULL;
	long long lo = 0, hi;
	int ret;

	ret = cli_parse_int(dash ? dash + 1 : s, "nodes", 1, 10000, &hi, err);
	if (!ret && min)
		ret = cli_parse_int(min, "nodes", 1, 10000, &lo, err);
	if (ret < 0)
		goto out;
	if (min && lo > hi) {
		ret = mu_error_set(err, MU_ERANGE, "nodes", "--nodes %s: minimum above maximum", s);
		goto out;
	}
	json_object_set_new(body, "nodes", json_integer(hi));
	if (min)
		json_object_set_new(body, "min_nodes", json_integer(lo));
out:
	mu_free(min);
	return ret;
}

static int parse_topology(const char *s, json_t *body, struct mu_error *err)
{
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : 0;
	const char *mode;

	if (!colon || !colon[1])
		return mu_error_set(err, MU_EINVAL, "topology",
				    "--topology '%s' must be required:LEVEL or preferred:LEVEL", s);
	if (n == 8 && !strncmp(s, "required", 8))
		mode = "required";
	else if (n == 9 && !strncmp(s, "preferred", 9))
		mode = "preferred";
	else
		return mu_error_set(err, MU_EINVAL, "topology",
				    "--topology '%s' must be required:LEVEL or preferred:LEVEL", s);
	json_object_set_new(body, "topology", json_pack("{s:s}", mode, colon + 1));
	return 0;
}

static int set_string(json_t *body, const char *key, const char *val, struct mu_error *err)
{
	json_t *s = json_string(val);

	if (!s)
		return mu_error_set(err, MU_EUTF8, key, "--%s: not valid UTF-8", key);
	json_object_set_new(body, key, s);
	return 0;
}

int cli_submit_parse(int argc, char **argv, struct cli_submit *s, struct mu_error *err)
{
	static const struct option longopts[] = {
		{ "nodes", required_argument, NULL, 'N' },
		{ "time", required_argument, NULL, 't' },
		{ "job-name", required_argument, NULL, 'J' },
		{ "tenant", required_argument, NULL, 'A' },
		{ "account", required_argument, NULL, 'A' },
		{ "qos", required_argument, NULL, 'q' },
		{ "chdir", required_argument, NULL, 'D' },
		{ "gpus-per-node", required_argument, NULL, OPT_GPUS_PER_NODE },
		{ "min-nodes", required_argument, NULL, OPT_MIN_NODES },
		{ "priority-class", required_argument, NULL, OPT_PRIORITY_CLASS },
		{ "dependency", required_argument, NULL, 'd' },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ "env", required_argument, NULL, OPT_ENV },
		{ "workdir", required_argument, NULL, OPT_WORKDIR },
		{ "gpu-model", required_argument, NULL, OPT_GPU_MODEL },
		{ "procs-per-node", required_argument, NULL, OPT_PROCS_PER_NODE },
		{ "ntasks-per-node", required_argument, NULL, OPT_PROCS_PER_NODE },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "cpus-per-node", required_argument, NULL, OPT_CPUS_PER_NODE },
		{ "topology", required_argument, NULL, OPT_TOPOLOGY },
		{ "max-retries", required_argument, NULL, OPT_MAX_RETRIES },
		{ "idempotency-key", required_argument, NULL, OPT_IDEMPOTENCY_KEY },
		{ "test-only", no_argument, NULL, OPT_TEST_ONLY },
		{ "parsable", no_argument, NULL, OPT_PARSABLE },
		{ "user", required_argument, NULL, OPT_USER },
		{ "wrap", required_argument, NULL, OPT_WRAP },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	json_t *body = json_object();
	json_t *deps = json_array();
	json_t *labels = json_object();
	json_t *env = json_object();
	json_t *command = json_array();
	const char *wrap = NULL;
	long long v;
	int64_t secs;
	int ret = 0;
	int c;

	s->body = NULL;
	s->idempotency_key = NULL;
	s->test_only = s->parsable = false;
	json_object_set_new(body, "nodes", json_integer(1));
	json_object_set_new(body, "gpus_per_node", json_integer(0));

	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, "+:hN:t:J:A:q:D:d:", longopts, NULL)) != -1) {
		if (cli_common_opt(&s->g, c, optarg))
			continue;
		switch (c) {
		case 'h':
		case CLI_OPT_HELP:
			ret = 1;
			goto out;
		case 'N':
			ret = parse_nodes(optarg, body, err);
			break;
		case OPT_MIN_NODES:
			ret = cli_parse_int(optarg, "min-nodes", 1, 10000, &v, err);
			if (!ret)
				json_object_set_new(body, "min_nodes", json_integer(v));
			break;
		case OPT_GPUS_PER_NODE:
			ret = parse_gpus_per_node(optarg, body, err);
			break;
		case 't':
			ret = cli_parse_time(optarg, &secs, err);
			if (!ret)
				json_object_set_new(body, "time_limit", json_integer(secs));
			break;
		case 'J':
			ret = set_string(body, "name", optarg, err);
			break;
		case 'A':
			ret = set_string(body, "tenant", optarg, err);
			break;
		case OPT_USER:
			ret = set_string(body, "user", optarg, err);
			break;
		case 'q':
		case OPT_PRIORITY_CLASS:
			ret = set_string(body, "priority_class", optarg, err);
			break;
		case 'd':
			ret = cli_parse_dependency(optarg, deps, err);
			break;
		case OPT_LABEL:
			ret = cli_parse_kv(optarg, "label", labels, err);
			break;
		case OPT_ENV:
			ret = cli_parse_kv(optarg, "env", env, err);
			break;
		case 'D':
		case OPT_WORKDIR:
			ret = set_string(body, "workdir", optarg, err);
			break;
		case OPT_GPU_MODEL:
			ret = set_string(body, "gpu_model", optarg, err);
			break;
		case OPT_PROCS_PER_NODE:
			ret = cli_parse_int(optarg, "procs-per-node", 1, 1024, &v, err);
			if (!ret)
				json_object_set_new(body, "procs_per_node", json_integer(v));
			break;
		case OPT_MEM: /* Slurm's --mem: the API parses "64G" or bytes */
			ret = set_string(body, "mem_per_node", optarg, err);
			break;
		case OPT_CPUS_PER_NODE:
			ret = cli_parse_int(optarg, "cpus-per-node", 1, 65536, &v, err);
			if (!ret)
				json_object_set_new(body, "cpus_per_node", json_integer(v));
			break;
		case OPT_TOPOLOGY:
			ret = parse_topology(optarg, body, err);
			break;
		case OPT_MAX_RETRIES:
			ret = cli_parse_int(optarg, "max-retries", 0, 100, &v, err);
			if (!ret)
				json_object_set_new(body, "max_retries", json_integer(v));
			break;
		case OPT_IDEMPOTENCY_KEY:
			s->idempotency_key = optarg;
			break;
		case OPT_TEST_ONLY:
			s->test_only = true;
			break;
		case OPT_PARSABLE:
			s->parsable = true;
			break;
		case OPT_WRAP:
			wrap = optarg;
			break;
		default:
			ret = cli_getopt_error(c, optopt, argv, optind, err);
			break;
		}
		if (ret < 0)
			goto out;
	}
	if (wrap && optind < argc) {
		ret = mu_error_set(err, MU_EINVAL, "command",
				   "give either --wrap or a command after the options, not both");
		goto out;
	}
	if (wrap) {
		json_array_append_new(command, json_string("/bin/sh"));
		json_array_append_new(command, json_string("-c"));
		if (json_array_append_new(command, json_string(wrap)) < 0) {
			ret = mu_error_set(err, MU_EUTF8, "command", "--wrap: not valid UTF-8");
			goto out;
		}
	}
	for (int i = optind; i < argc; i++) {
		json_t *a = json_string(argv[i]);
		if (!a) {
			ret = mu_error_set(err, MU_EUTF8, "command", "command argument %d is not valid UTF-8",
					   i - optind);
			goto out;
		}
		json_array_append_new(command, a);
	}
	if (json_array_size(command) == 0) {
		ret = mu_error_set(err, MU_EINVAL, "command",
				   "no command given (muster submit [options] -- COMMAND [ARGS...])");
		goto out;
	}
	if (json_object_get(body, "min_nodes") &&
	    json_integer_value(json_object_get(body, "min_nodes")) >
		    json_integer_value(json_object_get(body, "nodes"))) {
		ret = mu_error_set(err, MU_ERANGE, "min_nodes", "--min-nodes is above --nodes");
		goto out;
	}
	/* sbatch's default name: the script's base name, or "wrap" for --wrap. */
	if (!json_object_get(body, "name")) {
		const char *argv0 = json_string_value(json_array_get(command, 0));
		const char *slash = strrchr(argv0, '/');
		const char *base = wrap ? "wrap" : slash && slash[1] ? slash + 1 : argv0;
		json_t *n = json_string(base);

		if (n && json_string_length(n) <= 256)
			json_object_set_new(body, "name", n);
		else
			json_decref(n);
	}
	json_object_set(body, "command", command);
	if (json_object_size(env))
		json_object_set(body, "env", env);
	if (json_object_size(labels))
		json_object_set(body, "labels", labels);
	if (json_array_size(deps))
		json_object_set(body, "dependencies", deps);
	s->body = body;
	body = NULL;
out:
	json_decref(body);
	json_decref(deps);
	json_decref(labels);
	json_decref(env);
	json_decref(command);
	return ret;
}

void cli_submit_release(struct cli_submit *s)
{
	json_decref(s->body);
	s->body = NULL;
}

enum {
	OPT_Q_LABEL = CLI_OPT_FIRST_PRIVATE,
};

int cli_queue_parse(int argc, char **argv, struct cli_queue *q, struct mu_error *err)
{
	static const struct option longopts[] = {
		{ "state", required_argument, NULL, 't' },
		{ "states", required_argument, NULL, 't' },
		{ "tenant", required_argument, NULL, 'A' },
		{ "account", required_argument, NULL, 'A' },
		{ "user", required_argument, NULL, 'u' },
		{ "label", required_argument, NULL, OPT_Q_LABEL },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	bool states_given = false;
	int ret = 0;
	int c;

	q->states = NULL;
	q->tenant = q->user = NULL;
	q->labels = json_array();
	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, "+:ht:A:u:", longopts, NULL)) != -1) {
		if (cli_common_opt(&q->g, c, optarg))
			continue;
		switch (c) {
		case 'h':
		case CLI_OPT_HELP:
			return 1;
		case 't':
			/* Repeated flags accumulate; "all" clears the filter. */
			ret = cli_parse_states(optarg, &q->states, err);
			states_given = true;
			break;
		case 'A':
			q->tenant = optarg;
			break;
		case 'u':
			q->user = optarg;
			break;
		case OPT_Q_LABEL: {
			json_t *tmp = json_object();
			ret = cli_parse_kv(optarg, "label", tmp, err);
			json_decref(tmp);
			if (!ret)
				json_array_append_new(q->labels, json_string(optarg));
			break;
		}
		default:
			ret = cli_getopt_error(c, optopt, argv, optind, err);
			break;
		}
		if (ret < 0)
			return ret;
	}
	if (optind < argc)
		return mu_error_set(err, MU_EINVAL, "", "unexpected argument '%s'", argv[optind]);
	if (!states_given)
		q->states = mu_strdup("PENDING,STARTING,RUNNING");
	return 0;
}

void cli_queue_release(struct cli_queue *q)
{
	mu_free(q->states);
	q->states = NULL;
	json_decref(q->labels);
	q->labels = NULL;
}

/* ---- muster logs ---------------------------------------------------------- */

enum {
	OPT_L_NODE_RANK = CLI_OPT_FIRST_PRIVATE,
	OPT_L_LOCAL_RANK,
	OPT_L_STDERR,
	OPT_L_RUN,
};

int cli_logs_parse(int argc, char **argv, struct cli_logs *l, struct mu_error *err)
{
	static const struct option longopts[] = {
		{ "follow", no_argument, NULL, 'f' },
		{ "node-rank", required_argument, NULL, OPT_L_NODE_RANK },
		{ "local-rank", required_argument, NULL, OPT_L_LOCAL_RANK },
		{ "stderr", no_argument, NULL, OPT_L_STDERR },
		{ "run", required_argument, NULL, OPT_L_RUN },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int64_t id;
	int ret = 0;
	int c;

	l->job = NULL;
	l->follow = l->err_stream = false;
	l->node_rank = l->local_rank = l->run_id = 0;
	cli_getopt_reset();
	/* no '+': `muster logs 12 -f` reads as well as `muster logs -f 12` */
	while ((c = getopt_long(argc, argv, ":hf", longopts, NULL)) != -1) {
		if (cli_common_opt(&l->g, c, optarg))
			continue;
		switch (c) {
		case 'h':
		case CLI_OPT_HELP:
			return 1;
		case 'f':
			l->follow = true;
			break;
		case OPT_L_NODE_RANK:
			ret = cli_parse_int(optarg, "--node-rank", 0, 1000000, &l->node_rank, err);
			break;
		case OPT_L_LOCAL_RANK:
			ret = cli_parse_int(optarg, "--local-rank", 0, 255, &l->local_rank, err);
			break;
		case OPT_L_STDERR:
			l->err_stream = true;
			break;
		case OPT_L_RUN:
			ret = cli_parse_int(optarg, "--run", 1, INT64_MAX, &l->run_id, err);
			break;
		default:
			ret = cli_getopt_error(c, optopt, argv, optind, err);
			break;
		}
		if (ret < 0)
			return ret;
	}
	if (optind >= argc)
		return mu_error_set(err, MU_EINVAL, "", "a job id is required");
	if (optind + 1 < argc)
		return mu_error_set(err, MU_EINVAL, "", "unexpected argument '%s'", argv[optind + 1]);
	ret = cli_parse_job_id(argv[optind], &id, err);
	if (ret < 0)
		return ret;
	l->job = argv[optind];
	return 0;
}
