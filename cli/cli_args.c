#include "cli_args.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "cli_out.h"
#include "duration.h"
#include "sbatch.h"

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

void (*cli_option_sink)(const char *optstring, const struct option *longopts);

int cli_getopt_long(int argc, char **argv, const char *optstring, const struct option *longopts)
{
	if (cli_option_sink)
		cli_option_sink(optstring, longopts);
	return getopt_long(argc, argv, optstring, longopts, NULL);
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
	OPT_LAUNCHER,
	OPT_ON_SHRINK,
	OPT_WAIT,
	/* the Slurm options the CLI takes from common/sbatch.c's table:
	 * OPT_SBATCH + their index there */
	OPT_SBATCH = 0x2000,
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

/*
 * The submit option table: the CLI's own rows, then every option of the
 * #SBATCH table (common/sbatch.c) the CLI does not name itself, so the
 * command line takes what a script takes. *opts and *optstring are new.
 */
static void submit_options(const struct option *own, const char *own_short, struct option **opts,
			   char **optstring)
{
	size_t nown = 0, n = 0, ns = mu_sbatch_noptions();
	struct mu_buf sh;

	while (own[nown].name)
		nown++;
	*opts = mu_malloc(sizeof(**opts) * (nown + ns + 1));
	mu_buf_init(&sh);
	mu_buf_adds(&sh, own_short);
	for (size_t i = 0; i < nown; i++)
		(*opts)[n++] = own[i];
	for (size_t i = 0; i < ns; i++) {
		const struct mu_sbatch_option *o = mu_sbatch_option_at(i);
		bool taken = false;

		for (size_t j = 0; j < nown && !taken; j++)
			taken = !strcmp(own[j].name, o->name);
		if (taken)
			continue;
		(*opts)[n++] = (struct option){ o->name, o->has_arg ? required_argument : no_argument,
						NULL, OPT_SBATCH + (int)i };
		if (o->short_name && !strchr(own_short, o->short_name)) {
			mu_buf_addc(&sh, o->short_name);
			if (o->has_arg)
				mu_buf_addc(&sh, ':');
		}
	}
	(*opts)[n] = (struct option){ NULL, 0, NULL, 0 };
	*optstring = mu_buf_detach(&sh);
}

/* The #SBATCH table index of short option `c`, or -1. */
static int sbatch_short(int c)
{
	for (size_t i = 0; i < mu_sbatch_noptions(); i++)
		if (mu_sbatch_option_at(i)->short_name == c)
			return (int)i;
	return -1;
}

/* env: adds `add`'s entries to body's "env"; `override` says who wins a name. */
static void env_merge(json_t *body, json_t *add, bool override)
{
	json_t *env = json_object_get(body, "env");
	const char *k;
	json_t *v;

	if (!env) {
		json_object_set(body, "env", add);
		return;
	}
	json_object_foreach(add, k, v)
		if (override || !json_object_get(env, k))
			json_object_set(env, k, v);
}

/*
 * Puts `sb`'s fields into `body`: all of them (`override`: the command
 * line), or only those the body lacks (a script's directives). Warnings go
 * to `warnings` prefixed with `where` ("train.sh: line 3: ...").
 */
static int sbatch_merge(json_t *body, const struct mu_sbatch *sb, bool override, json_t *warnings,
			const char *where, struct mu_error *err)
{
	for (size_t i = 0; i < sb->nwarnings; i++)
		json_array_append_new(warnings, where ? json_sprintf("%s: %s", where, sb->warnings[i])
						      : json_string(sb->warnings[i]));
	for (size_t i = 0; i < sb->nfields; i++) {
		const char *name = sb->fields[i].name;
		json_t *v = json_loads(sb->fields[i].json, JSON_DECODE_ANY, NULL);

		if (!v)
			return mu_error_set(err, MU_EINTERNAL, name, "bad JSON for %s", name);
		if (!strcmp(name, "env"))
			env_merge(body, v, override);
		else if (override || !json_object_get(body, name))
			json_object_set(body, name, v);
		json_decref(v);
	}
	return 0;
}

/*
 * A batch script, as sbatch takes one: the first positional names a
 * regular file here that starts with "#!". Its text goes in "script", the
 * positionals after it in "script_args", its directives are read (they
 * apply where the command line said nothing), and sbatch's defaults
 * follow: the name is the script's base name, the workdir the directory
 * of the submit. Anything else is a command run as given (returns 0).
 */
static int batch_script(struct cli_submit *s, json_t *body, const char *path, json_t *command,
			struct mu_error *err)
{
	struct stat st;
	char head[2];
	char *text = NULL;
	FILE *f = NULL;
	size_t n;
	const char *slash;
	json_t *js, *args;
	int ret = 0;

	if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	f = fopen(path, "rb");
	if (!f || fread(head, 1, 2, f) != 2 || head[0] != '#' || head[1] != '!')
		goto out; /* a program, not a script: run as a command */
	if (st.st_size > MU_SBATCH_MAX_SCRIPT) {
		ret = mu_error_set(err, MU_ETOOBIG, "script", "%s: the script is larger than %d bytes",
				   path, MU_SBATCH_MAX_SCRIPT);
		goto out;
	}
	text = mu_malloc((size_t)st.st_size + 1);
	rewind(f);
	n = fread(text, 1, (size_t)st.st_size, f);
	text[n] = '\0';
	s->script_sb = mu_malloc(sizeof(*s->script_sb));
	mu_sbatch_init(s->script_sb, (int64_t)time(NULL), true);
	slash = strrchr(path, '/');
	s->script_name = mu_strdup(slash ? slash + 1 : path);
	ret = mu_sbatch_parse_script(s->script_sb, text, n, err);
	if (ret < 0) {
		char msg[sizeof(err->msg)];
		snprintf(msg, sizeof(msg), "%s", err->msg);
		ret = mu_error_set(err, ret, "script", "%s: %s", path, msg);
		goto out;
	}
	js = json_stringn(text, n);
	if (!js) {
		ret = mu_error_set(err, MU_EUTF8, "script", "%s: not valid UTF-8", path);
		goto out;
	}
	json_object_set_new(body, "script", js);
	args = json_array();
	for (size_t i = 1; i < json_array_size(command); i++)
		json_array_append(args, json_array_get(command, i));
	if (json_array_size(args))
		json_object_set(body, "script_args", args);
	json_decref(args);
	if (!json_object_get(body, "name") && !mu_sbatch_get(s->script_sb, "name")) {
		js = json_string(s->script_name);
		if (js && json_string_length(js) <= 256)
			json_object_set_new(body, "name", js);
		else
			json_decref(js);
	}
	if (!json_object_get(body, "workdir") && !mu_sbatch_get(s->script_sb, "workdir")) {
		char cwd[4096];
		if (getcwd(cwd, sizeof(cwd)))
			json_object_set_new(body, "workdir", json_string(cwd));
	}
out:
	mu_free(text);
	if (f)
		fclose(f);
	return ret;
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
		{ "launcher", required_argument, NULL, OPT_LAUNCHER },
		{ "on-shrink", required_argument, NULL, OPT_ON_SHRINK },
		{ "wait", no_argument, NULL, OPT_WAIT },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	static const char own_short[] = "+:hN:t:J:A:q:D:d:W";
	struct option *opts = NULL;
	char *optstring = NULL;
	struct mu_sbatch cli_sb;
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
	s->test_only = s->parsable = s->wait = false;
	s->warnings = json_array();
	mu_sbatch_init(&cli_sb, (int64_t)time(NULL), true);
	submit_options(longopts, own_short, &opts, &optstring);

	cli_getopt_reset();
	while ((c = cli_getopt_long(argc, argv, optstring, opts)) != -1) {
		if (cli_common_opt(&s->g, c, optarg))
			continue;
		if (c > 0 && c < 0x100 && !strchr(own_short, c) && sbatch_short(c) >= 0)
			c = OPT_SBATCH + sbatch_short(c); /* a short option of the #SBATCH table */
		if (c >= OPT_SBATCH) {
			ret = mu_sbatch_option(&cli_sb, mu_sbatch_option_at((size_t)(c - OPT_SBATCH))->name,
					       optarg, 0, err);
			if (ret < 0)
				goto out;
			continue;
		}
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
		case OPT_LAUNCHER: /* the API checks the name */
			ret = set_string(body, "launcher", optarg, err);
			break;
		case OPT_ON_SHRINK:
			ret = set_string(body, "on_shrink", optarg, err);
			break;
		case 'W':
		case OPT_WAIT:
			s->wait = true;
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
	if ((ret = mu_sbatch_finish(&cli_sb, err)) < 0)
		goto out;
	/* the command line's Slurm options win over the script's directives */
	if ((ret = sbatch_merge(body, &cli_sb, true, s->warnings, NULL, err)) < 0)
		goto out;
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
	if (!wrap && (ret = batch_script(s, body, argv[optind], command, err)) < 0)
		goto out;
	if (s->script_sb) {
		/* the command line's own flags are in body by now, except these */
		if (json_array_size(deps))
			json_object_set(body, "dependencies", deps);
		if (json_object_size(env))
			env_merge(body, env, true);
		json_object_clear(env);
		ret = sbatch_merge(body, s->script_sb, false, s->warnings, s->script_name, err);
		if (ret < 0)
			goto out;
	}
	if (!json_object_get(body, "workdir") &&
	    (json_object_get(body, "output") || json_object_get(body, "error"))) {
		/* -o/-e are relative to the workdir: sbatch's, the directory of the submit */
		char cwd[4096];
		if (getcwd(cwd, sizeof(cwd)))
			json_object_set_new(body, "workdir", json_string(cwd));
	}
	if (!json_object_get(body, "nodes"))
		json_object_set_new(body, "nodes", json_integer(1));
	if (!json_object_get(body, "gpus_per_node"))
		json_object_set_new(body, "gpus_per_node", json_integer(0));
	if (cli_sb.cpus_per_task > 0) {
		/* --cpus-per-task: per process, whichever way the process count came */
		json_int_t ppn = json_integer_value(json_object_get(body, "procs_per_node"));
		json_object_set_new(body, "cpus_per_node",
				    json_integer(cli_sb.cpus_per_task * (ppn > 0 ? ppn : 1)));
	}
	if (json_object_get(body, "min_nodes") &&
	    json_integer_value(json_object_get(body, "min_nodes")) >
		    json_integer_value(json_object_get(body, "nodes"))) {
		ret = mu_error_set(err, MU_ERANGE, "min_nodes", "--min-nodes is above --nodes");
		goto out;
	}
	/* sbatch's default name: the script's base name, or "wrap" for --wrap. */
	if (!json_object_get(body, "name") && !json_object_get(body, "script")) {
		const char *argv0 = json_string_value(json_array_get(command, 0));
		const char *slash = strrchr(argv0, '/');
		const char *base = wrap ? "wrap" : slash && slash[1] ? slash + 1 : argv0;
		json_t *n = json_string(base);

		if (n && json_string_length(n) <= 256)
			json_object_set_new(body, "name", n);
		else
			json_decref(n);
	}
	if (!json_object_get(body, "script"))
		json_object_set(body, "command", command);
	if (json_object_size(env))
		env_merge(body, env, true);
	if (json_object_size(labels))
		json_object_set(body, "labels", labels);
	if (json_array_size(deps))
		json_object_set(body, "dependencies", deps);
	s->body = body;
	body = NULL;
out:
	if (s->script_sb) {
		mu_sbatch_release(s->script_sb);
		mu_free(s->script_sb);
		s->script_sb = NULL;
	}
	mu_sbatch_release(&cli_sb);
	mu_free(opts);
	mu_free(optstring);
	if (ret != 0) { /* help or an error: nothing for the caller to release */
		json_decref(s->warnings);
		s->warnings = NULL;
		mu_free(s->script_name);
		s->script_name = NULL;
	}
	json_decref(body);
	json_decref(deps);
	json_decref(labels);
	json_decref(env);
	json_decref(command);
	return ret;
}

/*
 * The exit code of `muster submit --wait` for a job that ended (the table
 * in docs/cli.md): COMPLETED 0; FAILED the job's exit code when it has one
 * in 1..255, else 1; end_reason oom 137 (the kernel's SIGKILL); TIMEOUT 124
 * (as timeout(1)); CANCELLED 130.
 */
int cli_wait_exit_code(const char *state, const char *end_reason, const json_t *exit_code)
{
	if (!state)
		return CLI_EXIT_ERROR;
	if (!strcmp(state, "COMPLETED"))
		return 0;
	if (end_reason && !strcmp(end_reason, "oom"))
		return 137;
	if (!strcmp(state, "TIMEOUT"))
		return 124;
	if (!strcmp(state, "CANCELLED"))
		return 130;
	if (json_is_integer(exit_code) && json_integer_value(exit_code) >= 1 &&
	    json_integer_value(exit_code) <= 255)
		return (int)json_integer_value(exit_code);
	return CLI_EXIT_ERROR;
}

void cli_submit_release(struct cli_submit *s)
{
	json_decref(s->body);
	s->body = NULL;
	json_decref(s->warnings);
	s->warnings = NULL;
	mu_free(s->script_name);
	s->script_name = NULL;
}

enum {
	OPT_Q_LABEL = CLI_OPT_FIRST_PRIVATE,
	OPT_Q_NOHEADER,
	OPT_Q_START,
};

/* squeue's %[.|-][width]letter fields, the letters `muster queue -o` knows. */
static const char queue_letters[] = "ijuatTDblMSrRPqVeCL%";

int cli_queue_format_check(const char *fmt, struct mu_error *err)
{
	for (const char *p = fmt; *p; p++) {
		if (*p != '%')
			continue;
		p++;
		if (*p == '.' || *p == '-')
			p++;
		while (isdigit((unsigned char)*p))
			p++;
		if (!*p || !strchr(queue_letters, *p))
			return mu_error_set(err, MU_EINVAL, "format",
					    "--format: unknown field '%%%c' (known: %%i %%j %%u %%a %%t %%T "
					    "%%D %%b %%l %%M %%S %%r %%R %%P %%q %%V %%e %%C %%L %%%%)",
					    *p ? *p : ' ');
	}
	return 0;
}

int cli_queue_parse(int argc, char **argv, struct cli_queue *q, struct mu_error *err)
{
	static const struct option longopts[] = {
		{ "state", required_argument, NULL, 't' },
		{ "states", required_argument, NULL, 't' },
		{ "tenant", required_argument, NULL, 'A' },
		{ "account", required_argument, NULL, 'A' },
		{ "user", required_argument, NULL, 'u' },
		{ "label", required_argument, NULL, OPT_Q_LABEL },
		{ "format", required_argument, NULL, 'o' },
		{ "noheader", no_argument, NULL, OPT_Q_NOHEADER },
		{ "start", no_argument, NULL, OPT_Q_START },
		CLI_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	bool states_given = false;
	int ret = 0;
	int c;

	q->states = NULL;
	q->tenant = q->user = q->format = NULL;
	q->noheader = q->start = false;
	q->labels = json_array();
	cli_getopt_reset();
	while ((c = cli_getopt_long(argc, argv, "+:ht:A:u:o:", longopts)) != -1) {
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
		case 'o':
			ret = cli_queue_format_check(optarg, err);
			q->format = optarg;
			break;
		case OPT_Q_NOHEADER:
			q->noheader = true;
			break;
		case OPT_Q_START:
			/* squeue --start: the pending jobs and when they should start */
			q->start = true;
			mu_free(q->states);
			q->states = mu_strdup("PENDING");
			states_given = true;
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
	while ((c = cli_getopt_long(argc, argv, ":hf", longopts)) != -1) {
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

void cli_array_collapse(int64_t array_job_id, const int64_t *tasks, size_t n, const char *spec,
			char *out, size_t len)
{
	struct mu_buf b;
	const char *pct = spec ? strchr(spec, '%') : NULL;

	mu_buf_init(&b);
	mu_buf_addf(&b, "%lld_[", (long long)array_job_id);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && tasks[j + 1] == tasks[j] + 1)
			j++;
		mu_buf_addf(&b, "%s%lld", i ? "," : "", (long long)tasks[i]);
		if (j > i)
			mu_buf_addf(&b, "-%lld", (long long)tasks[j]);
		i = j + 1;
	}
	if (pct)
		mu_buf_adds(&b, pct);
	mu_buf_addc(&b, ']');
	snprintf(out, len, "%s", b.p);
	mu_buf_release(&b);
}
