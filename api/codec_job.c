/* codec_job.c - see codec_job.h. */
#include "codec_job.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "codec_script.h"
#include "arrayspec.h"
#include "config.h"
#include "duration.h"
#include "jv.h"
#include "launcher.h"
#include "lists.h"
#include "sbatch.h"

static const char *const job_fields[] = {
	"tenant", "user", "name", "priority_class", "nodes", "min_nodes", "gpus_per_node",
	"gpu_model", "procs_per_node", "topology", "time_limit", "command", "env", "workdir",
	"dependencies", "max_retries", "labels", "mem_per_node", "cpus_per_node",
	"launcher", "on_shrink", "signal",
	"script", "script_args", "batch_host", /* codec_script.c */
	"output", "error",       /* sbatch -o/-e patterns */
	"hold", "begin", "array",
	NULL,
};

#define MEM_MIN (1LL << 20) /* 1 MiB */
#define MEM_MAX (1LL << 50) /* 1 PiB */

/* mem_per_node: bytes as an integer, or a string with a K/M/G suffix
 * (binary: "512M", "64G", as Slurm's --mem). */
static int decode_mem(const json_t *body, const char *prefix, struct store_job *job,
		      struct mu_error *err)
{
	const json_t *v = json_object_get(body, "mem_per_node");
	long long x;

	if (!v || !json_is_string(v))
		return jv_int(body, "mem_per_node", false, MEM_MIN, MEM_MAX, &job->mem_per_node, prefix,
			      err);
	if (mu_parse_size(json_string_value(v), &x) != 0)
		return jv_fail(err, MU_EINVAL, prefix, "mem_per_node",
			       "must be bytes or a size like \"512M\" or \"64G\" (K, M, G: KiB, MiB, GiB)");
	if (x < MEM_MIN || x > MEM_MAX)
		return jv_fail(err, MU_ERANGE, prefix, "mem_per_node", "must be between 1M and 1024T");
	job->mem_per_node = x;
	return 1;
}

static char *dump(struct mu_arena *a, const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	char *r = mu_arena_strdup(a, s);

	free(s);
	return r;
}

/* Size of s as a JSON string literal, escaped as put_str writes it. */
static size_t str_size(const char *s, size_t len)
{
	size_t n = 2;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c != '"' && c != '\\')
			n++;
		else if (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' ||
			 c == '\f')
			n += 2;
		else
			n += 6;
	}
	return n;
}

static char *put_str(char *o, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";

	*o++ = '"';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c != '"' && c != '\\') {
			*o++ = (char)c;
			continue;
		}
		*o++ = '\\';
		switch (c) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '\n': *o++ = 'n'; break;
		case '\r': *o++ = 'r'; break;
		case '\t': *o++ = 't'; break;
		case '\b': *o++ = 'b'; break;
		case '\f': *o++ = 'f'; break;
		default:
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o++ = '"';
	return o;
}

/* The compact JSON text of an array of strings or an object of strings
 * (checked by the caller), written straight into the arena: a batch does
 * this 20,000 times per request, json_dumps costs a malloc each. */
static char *dump_strings(struct mu_arena *a, const json_t *v)
{
	bool arr = json_is_array(v);
	size_t n = 2, i;
	const char *k;
	json_t *item;
	char *r, *o;

	json_array_foreach(v, i, item)
		n += 1 + str_size(json_string_value(item), json_string_length(item));
	json_object_foreach((json_t *)v, k, item)
		n += 2 + str_size(k, strlen(k)) + str_size(json_string_value(item),
							   json_string_length(item));
	r = o = mu_arena_alloc(a, n + 1);
	*o++ = arr ? '[' : '{';
	json_array_foreach(v, i, item) {
		if (i)
			*o++ = ',';
		o = put_str(o, json_string_value(item), json_string_length(item));
	}
	i = 0;
	json_object_foreach((json_t *)v, k, item) {
		if (i++)
			*o++ = ',';
		o = put_str(o, k, strlen(k));
		*o++ = ':';
		o = put_str(o, json_string_value(item), json_string_length(item));
	}
	*o++ = arr ? ']' : '}';
	*o = '\0';
	return r;
}

static int decode_time_limit(const json_t *body, const char *prefix, struct store_job *job,
			     struct mu_error *err)
{
	const json_t *v = json_object_get(body, "time_limit");
	int64_t secs = 0;
	int ret;

	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v)) {
		ret = mu_duration_parse_slurm(json_string_value(v), &secs);
		if (ret == MU_ERANGE || (ret == 0 && (secs < 1 || secs > INT32_MAX)))
			return jv_fail(err, MU_ERANGE, prefix, "time_limit",
				       "must be between 1 second and 2^31-1 seconds");
		if (ret < 0)
			return jv_fail(err, MU_EINVAL, prefix, "time_limit",
				       "not a Slurm time (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S)");
		job->time_limit = secs;
		return 0;
	}
	ret = jv_int(body, "time_limit", false, 1, INT32_MAX, &secs, prefix, err);
	if (ret < 0)
		return ret;
	job->time_limit = secs;
	return 0;
}

static int decode_command(const json_t *body, struct mu_arena *a, const char *prefix,
			  struct store_job *job, struct mu_error *err)
{
	const json_t *v = json_object_get(body, "command");
	/* a batch script is one argv string: its own cap (codec_script.c) */
	size_t item_max = codec_script_is_command(v) ? MU_SBATCH_MAX_SCRIPT : 4096;
	char key[32];
	size_t i;
	json_t *item;
	int ret;

	if (!v || json_is_null(v))
		return jv_fail(err, MU_EMISSING, prefix, "command", "required");
	if (!json_is_array(v))
		return jv_fail(err, MU_ETYPE, prefix, "command", "must be an array of strings");
	if (json_array_size(v) < 1 || json_array_size(v) > 1024)
		return jv_fail(err, MU_ERANGE, prefix, "command", "must have 1..1024 items");
	json_array_foreach(v, i, item) {
		if (json_is_string(item) && json_string_length(item) <= item_max)
			continue; /* the common case, without naming the field */
		snprintf(key, sizeof(key), "command.%zu", i);
		ret = jv_check_str(item, item_max, prefix, key, err);
		if (ret < 0)
			return ret;
	}
	job->command = dump_strings(a, v);
	return 0;
}

static int decode_map(const json_t *body, struct mu_arena *a, const char *prefix, const char *what,
		      size_t max_entries, const char *key_extra, size_t key_max, bool key_c_ident,
		      size_t val_max, const char **out, struct mu_error *err)
{
	const json_t *v = json_object_get(body, what);
	const char *k;
	json_t *item;
	char field[160];
	int ret;

	if (!v || json_is_null(v)) {
		*out = "{}";
		return 0;
	}
	if (!json_is_object(v))
		return jv_fail(err, MU_ETYPE, prefix, what, "must be an object of strings");
	if (json_object_size(v) > max_entries)
		return jv_fail(err, MU_ERANGE, prefix, what, "at most %zu entries", max_entries);
	json_object_foreach((json_t *)v, k, item) {
		bool key_ok = jv_name_ok(k, 1, key_max, key_extra) &&
			      !(key_c_ident && k[0] >= '0' && k[0] <= '9');

		if (key_ok && json_is_string(item) && json_string_length(item) <= val_max)
			continue; /* the common case, without naming the field */
		snprintf(field, sizeof(field), "%s.%.64s", what, k);
		if (!key_ok)
			return jv_fail(err, MU_EINVAL, prefix, field, "invalid key");
		ret = jv_check_str(item, val_max, prefix, field, err);
		if (ret < 0)
			return ret;
	}
	*out = dump_strings(a, v);
	return 0;
}

/* One of common/lists.h's dependency types. */
static bool dep_type_known(const char *type)
{
	static const char *const types[] = { MU_DEP_TYPES(MU_LIST_NAME) NULL };

	for (size_t i = 0; types[i]; i++)
		if (!strcmp(types[i], type))
			return true;
	return false;
}

static int decode_deps(const json_t *body, struct mu_arena *a, const char *prefix,
		       struct store_job *job, struct mu_error *err)
{
	static const char *const dep_fields[] = { "type", "job_id", NULL };
	const json_t *v = json_object_get(body, "dependencies");
	int64_t *ids;
	json_t *item;
	size_t i;
	char p[160];
	int ret;

	job->dependencies = "[]";
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return jv_fail(err, MU_ETYPE, prefix, "dependencies", "must be an array");
	if (json_array_size(v) > MU_LIMIT_DEPENDENCIES_MAX)
		return jv_fail(err, MU_ERANGE, prefix, "dependencies", "at most %d items", MU_LIMIT_DEPENDENCIES_MAX);
	ids = mu_arena_alloc(a, sizeof(*ids) * (json_array_size(v) + 1));
	size_t nids = 0;
	json_array_foreach(v, i, item) {
		const char *type = NULL;
		int64_t id = 0;
		char key[48];

		snprintf(key, sizeof(key), "dependencies.%zu", i);
		snprintf(p, sizeof(p), "%.100sdependencies.%zu.", prefix, i);
		if (!json_is_object(item))
			return jv_fail(err, MU_ETYPE, prefix, key, "must be an object");
		ret = jv_object(item, dep_fields, p, "", err);
		if (ret < 0)
			return ret;
		ret = jv_str(item, "type", true, 16, false, &type, p, err);
		if (ret < 0)
			return ret;
		if (!strcmp(type, "singleton")) {
			/* Slurm's singleton: after every earlier job of the same
			 * tenant, user and name has ended; it names no job */
			if (json_object_get(item, "job_id"))
				return jv_fail(err, MU_EINVAL, p, "job_id", "singleton takes no job_id");
			continue;
		}
		if (!dep_type_known(type))
			return jv_fail(err, MU_EINVAL, p, "type",
				       "must be afterok, afterany, afternotok or singleton");
		ret = jv_int(item, "job_id", true, 1, INT64_C(9007199254740991), &id, p, err);
		if (ret < 0)
			return ret;
		ids[nids++] = id;
	}
	job->dep_ids = ids;
	job->ndeps = nids;
	job->dependencies = dump(a, v);
	return 0;
}

static int decode_topology(const json_t *body, const char *prefix, struct store_job *job,
			   struct mu_error *err)
{
	static const char *const topo_fields[] = { "required", "preferred", NULL };
	const json_t *v = json_object_get(body, "topology");
	char p[96];
	int ret;

	job->topo_required = job->topo_preferred = "";
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return jv_fail(err, MU_ETYPE, prefix, "topology", "must be an object");
	snprintf(p, sizeof(p), "%.80stopology.", prefix);
	ret = jv_object(v, topo_fields, p, "", err);
	if (ret < 0)
		return ret;
	ret = jv_str(v, "required", false, 32, false, &job->topo_required, p, err);
	if (ret < 0)
		return ret;
	if (ret > 0 && !jv_name_ok(job->topo_required, 1, 32, "_-"))
		return jv_fail(err, MU_EINVAL, p, "required", "not a topology level name");
	ret = jv_str(v, "preferred", false, 32, false, &job->topo_preferred, p, err);
	if (ret < 0)
		return ret;
	if (ret > 0 && !jv_name_ok(job->topo_preferred, 1, 32, "_-"))
		return jv_fail(err, MU_EINVAL, p, "preferred", "not a topology level name");
	return 0;
}

/* launcher, on_shrink and signal {name, before, batch_only} (docs/api.md). */
static int decode_launch(const json_t *body, const char *prefix, struct store_job *job,
			 struct mu_error *err)
{
	static const char *const sig_fields[] = { "name", "before", "batch_only", NULL };
	const json_t *v = json_object_get(body, "signal");
	enum mu_launcher l;
	const char *name = NULL;
	int64_t before = 60;
	char p[96];
	int ret, sig;

	job->launcher = "none";
	job->on_shrink = "restart";
	job->signal_name = "";
	if ((ret = jv_str(body, "launcher", false, 32, true, &job->launcher, prefix, err)) < 0)
		return ret;
	if (mu_launcher_parse(job->launcher, &l) != 0)
		return jv_fail(err, MU_EINVAL, prefix, "launcher",
			       "must be none, torchrun, deepspeed or accelerate");
	job->launcher = mu_launcher_name(l);
	if ((ret = jv_str(body, "on_shrink", false, 16, true, &job->on_shrink, prefix, err)) < 0)
		return ret;
	if (strcmp(job->on_shrink, "restart") && strcmp(job->on_shrink, "keep"))
		return jv_fail(err, MU_EINVAL, prefix, "on_shrink", "must be restart or keep");
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return jv_fail(err, MU_ETYPE, prefix, "signal", "must be an object");
	snprintf(p, sizeof(p), "%.80ssignal.", prefix);
	if ((ret = jv_object(v, sig_fields, p, "", err)) < 0)
		return ret;
	if ((ret = jv_str(v, "name", true, 16, true, &name, p, err)) < 0)
		return ret;
	sig = mu_signal_parse(name);
	if (sig < 0 || !mu_signal_name(sig))
		return jv_fail(err, MU_EINVAL, p, "name",
			       "not a signal name (USR1, SIGUSR2, TERM, INT, HUP, URG, ...)");
	job->signal_name = mu_signal_name(sig);
	if ((ret = jv_int(v, "before", false, 1, 65535, &before, p, err)) < 0)
		return ret;
	job->signal_before = before;
	if ((ret = jv_bool(v, "batch_only", false, &job->signal_batch_only, p, err)) < 0)
		return ret;
	return 0;
}

/* sbatch's -o/-e: a file name pattern, relative to the workdir or absolute. */
static int decode_patterns(const json_t *body, const char *prefix, struct store_job *job,
			   struct mu_error *err)
{
	static const char *const keys[] = { "output", "error" };
	const char **dst[] = { &job->stdout_pattern, &job->stderr_pattern };
	int ret;

	for (int i = 0; i < 2; i++) {
		*dst[i] = "";
		ret = jv_str(body, keys[i], false, 4096, true, dst[i], prefix, err);
		if (ret < 0)
			return ret;
		if (ret > 0 && (!**dst[i] || strlen(*dst[i]) != json_string_length(json_object_get(body, keys[i]))))
			return jv_fail(err, MU_EINVAL, prefix, keys[i], "must be a non-empty file name pattern");
		if (ret > 0 && (*dst[i])[strlen(*dst[i]) - 1] == '/')
			return jv_fail(err, MU_EINVAL, prefix, keys[i], "must name a file, not a directory");
	}
	return 0;
}


static bool digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

int codec_job_parse_rfc3339(const char *s, int64_t *out)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	struct tm tm;
	const char *p;
	int64_t t;

	if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
	    s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
	    !digits(s + 17, 2, &sec))
		return MU_EINVAL;
	p = s + 19;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return MU_EINVAL;
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	}
	if ((*p == 'Z' || *p == 'z') && !p[1]) {
		sign = 0;
	} else if ((*p == '+' || *p == '-') && digits(p + 1, 2, &oh) && p[3] == ':' &&
		   digits(p + 4, 2, &om) && !p[6] && oh <= 23 && om <= 59) {
		sign = *p == '+' ? 1 : -1;
	} else {
		return MU_EINVAL;
	}
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 60)
		return MU_EINVAL;
	if (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
		return MU_EINVAL;
	if (y < 1970 || y > 9999)
		return MU_ERANGE;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec > 59 ? 59 : sec;
	t = (int64_t)timegm(&tm) - (int64_t)sign * (oh * 3600 + om * 60);
	if (t < 0)
		return MU_ERANGE;
	*out = t;
	return 0;
}

/* begin: an RFC 3339 timestamp, or null/absent = at once (0). Returns 1
 * when the key is present (even null), 0 when absent. */
static int decode_begin(const json_t *body, const char *prefix, int64_t *out, struct mu_error *err)
{
	const json_t *v = json_object_get(body, "begin");
	int ret;

	*out = 0;
	if (!v)
		return 0;
	if (json_is_null(v))
		return 1;
	if (!json_is_string(v))
		return jv_fail(err, MU_ETYPE, prefix, "begin",
			       "must be an RFC 3339 timestamp string such as \"2027-01-31T08:00:00Z\"");
	ret = codec_job_parse_rfc3339(json_string_value(v), out);
	if (ret == MU_ERANGE)
		return jv_fail(err, MU_ERANGE, prefix, "begin", "must be between 1970 and 9999");
	if (ret < 0)
		return jv_fail(err, MU_EINVAL, prefix, "begin",
			       "not an RFC 3339 timestamp (2027-01-31T08:00:00Z, or with an offset +02:00)");
	return 1;
}

int codec_job_decode(json_t *body, struct mu_arena *a, const char *prefix,
		     struct store_job *job, struct mu_error *err)
{
	int ret;

	memset(job, 0, sizeof(*job));
	job->name = job->gpu_model = job->workdir = "";
	job->procs_per_node = 1;
	ret = jv_object(body, job_fields, prefix, "", err);
	if (ret < 0)
		return ret;
	if ((ret = codec_script_apply(body, prefix, err)) < 0)
		return ret;
	if ((ret = jv_object(body, job_fields, prefix, "", err)) < 0)
		return ret; /* a directive's field this server does not know */
	if ((ret = jv_str(body, "tenant", false, 63, false, &job->tenant, prefix, err)) < 0)
		return ret;
	if ((ret = jv_str(body, "user", false, 64, false, &job->user, prefix, err)) < 0)
		return ret;
	if (ret > 0 && !jv_name_ok(job->user, 1, 64, "_.@-"))
		return jv_fail(err, MU_EINVAL, prefix, "user", "must match ^[A-Za-z0-9_.@-]{1,64}$");
	if ((ret = jv_str(body, "name", false, 256, true, &job->name, prefix, err)) < 0)
		return ret;
	ret = jv_str(body, "priority_class", false, 63, false, &job->priority_class, prefix, err);
	if (ret < 0)
		return ret;
	if ((ret = jv_int(body, "nodes", true, 1, 10000, &job->nodes, prefix, err)) < 0)
		return ret;
	if ((ret = jv_int(body, "min_nodes", false, 1, job->nodes, &job->min_nodes, prefix, err)) < 0)
		return ret;
	ret = jv_int(body, "gpus_per_node", true, 0, 64, &job->gpus_per_node, prefix, err);
	if (ret < 0)
		return ret;
	if ((ret = jv_str(body, "gpu_model", false, 64, true, &job->gpu_model, prefix, err)) < 0)
		return ret;
	ret = jv_int(body, "procs_per_node", false, 1, 1024, &job->procs_per_node, prefix, err);
	if (ret < 0)
		return ret;
	if ((ret = decode_topology(body, prefix, job, err)) < 0)
		return ret;
	if ((ret = decode_time_limit(body, prefix, job, err)) < 0)
		return ret;
	if ((ret = decode_command(body, a, prefix, job, err)) < 0)
		return ret;
	ret = decode_map(body, a, prefix, "env", 256, "_", 256, true, 32768, &job->env, err);
	if (ret < 0)
		return ret;
	if ((ret = jv_str(body, "workdir", false, 4096, true, &job->workdir, prefix, err)) < 0)
		return ret;
	if (ret > 0 && *job->workdir && job->workdir[0] != '/')
		return jv_fail(err, MU_EINVAL, prefix, "workdir", "must be an absolute path");
	if ((ret = decode_mem(body, prefix, job, err)) < 0)
		return ret;
	ret = jv_int(body, "cpus_per_node", false, 1, 65536, &job->cpus_per_node, prefix, err);
	if (ret < 0)
		return ret;
	if ((ret = decode_deps(body, a, prefix, job, err)) < 0)
		return ret;
	ret = jv_int(body, "max_retries", false, 0, 100, &job->max_retries, prefix, err);
	if (ret < 0)
		return ret;
	ret = decode_map(body, a, prefix, "labels", 64, "_./-", 63, false, 256, &job->labels, err);
	if (ret < 0)
		return ret;
	if ((ret = decode_launch(body, prefix, job, err)) < 0)
		return ret;
	if ((ret = decode_patterns(body, prefix, job, err)) < 0)
		return ret;
	if ((ret = jv_bool(body, "hold", false, &job->held, prefix, err)) < 0)
		return ret;
	if ((ret = decode_begin(body, prefix, &job->begin, err)) < 0)
		return ret;
	ret = jv_str(body, "array", false, MU_ARRAY_SPEC_MAX, false, &job->array_spec, prefix, err);
	if (ret < 0)
		return ret;
	if (ret > 0) {
		struct mu_arrayspec as;
		char why[96];

		ret = mu_arrayspec_parse(job->array_spec, &as, NULL, 0, why);
		if (ret < 0)
			return jv_fail(err, ret, prefix, "array", "%s", why);
		job->array_throttle = as.throttle;
	}
	return 0;
}

int codec_job_expand_array(const struct store_job *job, struct mu_arena *a, struct store_job **out,
			   size_t *n, struct mu_error *err)
{
	struct mu_arrayspec as;
	int32_t *ids = mu_arena_alloc(a, sizeof(*ids) * MU_ARRAY_MAX_TASKS);
	struct store_job *jobs;
	char why[96];
	int ret;

	ret = mu_arrayspec_parse(job->array_spec, &as, ids, MU_ARRAY_MAX_TASKS, why);
	if (ret < 0)
		return mu_error_set(err, ret, "array", "%s", why);
	jobs = mu_arena_alloc(a, sizeof(*jobs) * as.count);
	for (size_t i = 0; i < as.count; i++) {
		jobs[i] = *job;
		jobs[i].array_task_id = ids[i];
	}
	*out = jobs;
	*n = as.count;
	return 0;
}

int codec_job_decode_patch(const json_t *body, struct mu_arena *a, struct store_job_patch *p,
			   struct mu_error *err)
{
	static const char *const fields[] = { "time_limit", "priority_class", "nodes", "min_nodes",
					      "gpus_per_node", "dependencies", "labels", "begin",
					      "name", NULL };
	struct store_job j;
	struct mu_buf names = MU_BUF_INIT;
	const char *k;
	json_t *v;
	int ret;

	memset(p, 0, sizeof(*p));
	memset(&j, 0, sizeof(j));
	if (!json_is_object(body))
		return mu_error_set(err, MU_ETYPE, "", "the body must be a JSON object");
	if ((ret = jv_object(body, fields, "", "", err)) < 0)
		return ret;
	if (json_object_size(body) == 0)
		return mu_error_set(err, MU_EINVAL, "", "nothing to change: give at least one of %s",
				    "time_limit, priority_class, nodes, min_nodes, gpus_per_node, "
				    "dependencies, labels, begin, name");
	json_object_foreach((json_t *)body, k, v) {
		if (json_is_null(v) && strcmp(k, "begin") && strcmp(k, "min_nodes") &&
		    strcmp(k, "dependencies") && strcmp(k, "labels"))
			return jv_fail(err, MU_ETYPE, "", k, "must not be null");
	}
	if ((ret = decode_time_limit(body, "", &j, err)) < 0)
		return ret;
	if (json_object_get(body, "time_limit")) {
		p->has_time_limit = true;
		p->time_limit = j.time_limit;
	}
	ret = jv_str(body, "priority_class", false, 63, false, &p->priority_class, "", err);
	if (ret < 0)
		return ret;
	p->has_class = ret > 0;
	if (p->has_class && !p->priority_class[0])
		return jv_fail(err, MU_EINVAL, "", "priority_class", "must name a priority class");
	if ((ret = jv_int(body, "nodes", false, 1, 10000, &p->nodes, "", err)) < 0)
		return ret;
	p->has_nodes = ret > 0;
	if ((ret = jv_int(body, "min_nodes", false, 1, 10000, &p->min_nodes, "", err)) < 0)
		return ret;
	p->has_min_nodes = json_object_get(body, "min_nodes") != NULL;
	if ((ret = jv_int(body, "gpus_per_node", false, 0, 64, &p->gpus_per_node, "", err)) < 0)
		return ret;
	p->has_gpus = ret > 0;
	if ((ret = decode_deps(body, a, "", &j, err)) < 0)
		return ret;
	if (json_object_get(body, "dependencies")) {
		p->has_deps = true;
		p->dependencies = j.dependencies;
		p->dep_ids = j.dep_ids;
		p->ndeps = j.ndeps;
	}
	ret = decode_map(body, a, "", "labels", 64, "_./-", 63, false, 256, &p->labels, err);
	if (ret < 0)
		return ret;
	p->has_labels = json_object_get(body, "labels") != NULL;
	if ((ret = decode_begin(body, "", &p->begin, err)) < 0)
		return ret;
	p->has_begin = ret > 0;
	if ((ret = jv_str(body, "name", false, 256, true, &p->name, "", err)) < 0)
		return ret;
	p->has_name = ret > 0;
	mu_buf_addc(&names, '[');
	json_object_foreach((json_t *)body, k, v) {
		if (names.len > 1)
			mu_buf_addc(&names, ',');
		mu_buf_add_json_strz(&names, k);
	}
	mu_buf_addc(&names, ']');
	p->fields = mu_arena_strdup(a, names.p);
	mu_buf_release(&names);
	return 0;
}

static void key(struct mu_buf *b, const char *k)
{
	mu_buf_addc(b, ',');
	mu_buf_addc(b, '"');
	mu_buf_adds(b, k);
	mu_buf_adds(b, "\":");
}

static void kstr(struct mu_buf *b, const char *k, const char *v)
{
	key(b, k);
	mu_buf_add_json_strz(b, v);
}

static void kint(struct mu_buf *b, const char *k, int64_t v)
{
	key(b, k);
	mu_buf_add_int(b, v);
}

static void kraw(struct mu_buf *b, const char *k, const char *json, const char *def)
{
	key(b, k);
	mu_buf_adds(b, json && *json ? json : def);
}

/* The line each node runs, with what differs per node or run as
 * placeholders the agent fills ($NODE_RANK, $MASTER_ADDR, ...). */
static void encode_launch_argv(const struct store_job *j, struct mu_buf *b)
{
	json_t *cmd = j->command ? json_loads(j->command, JSON_DECODE_ANY, NULL) : NULL;
	size_t n = json_is_array(cmd) ? json_array_size(cmd) : 0;
	char **user = mu_calloc(n + 1, sizeof(char *));
	enum mu_launcher l = MU_LAUNCHER_NONE;
	char job[32];
	char **argv;

	for (size_t i = 0; i < n; i++)
		user[i] = (char *)json_string_value(json_array_get(cmd, i));
	if (mu_launcher_parse(j->launcher, &l) != 0)
		l = MU_LAUNCHER_NONE;
	snprintf(job, sizeof(job), "%lld", (long long)j->id);
	struct mu_launch_params p = {
		.launcher = l,
		.nnodes = (int)j->nodes,
		.min_nodes = (int)j->min_nodes,
		.nproc_per_node = (int)(j->gpus_per_node > 0 ? j->gpus_per_node
							 : j->procs_per_node > 0 ? j->procs_per_node : 1),
		.max_restarts = 3,
		.node_rank = "$NODE_RANK",
		.master_addr = "$MASTER_ADDR",
		.master_port = "$MASTER_PORT",
		.hostfile = "$MUSTER_HOSTFILE",
		.job_id = job,
		.rdzv_host = false,
	};
	argv = mu_launcher_argv(&p, user);
	key(b, "launch_argv");
	mu_buf_addc(b, '[');
	for (char **a = argv; *a; a++) {
		if (a != argv)
			mu_buf_addc(b, ',');
		mu_buf_add_json_strz(b, *a);
	}
	mu_buf_addc(b, ']');
	mu_launcher_argv_free(argv);
	mu_free(user);
	json_decref(cmd);
}

static void encode_launch(const struct store_job *j, struct mu_buf *b)
{
	kstr(b, "launcher", j->launcher && *j->launcher ? j->launcher : "none");
	kstr(b, "on_shrink", j->on_shrink && *j->on_shrink ? j->on_shrink : "restart");
	key(b, "signal");
	if (j->signal_name && *j->signal_name) {
		mu_buf_adds(b, "{\"name\":");
		mu_buf_add_json_strz(b, j->signal_name);
		mu_buf_addf(b, ",\"before\":%lld,\"batch_only\":%s}", (long long)j->signal_before,
			    j->signal_batch_only ? "true" : "false");
	} else {
		mu_buf_adds(b, "null");
	}
	if (j->runs) /* GET /v1/jobs/{id} */
		encode_launch_argv(j, b);
}

/* The fields a listing may ask for (GET /v1/jobs?fields=...), each its bit
 * of enum codec_job_field; "id" is always sent, the three array fields come
 * together. */
static const struct {
	const char *name;
	enum codec_job_field bit;
} list_fields[] = {
	{ "state", CODEC_JOB_F_STATE }, { "tenant", CODEC_JOB_F_TENANT }, { "user", CODEC_JOB_F_USER },
	{ "name", CODEC_JOB_F_NAME }, { "priority_class", CODEC_JOB_F_PRIORITY_CLASS },
	{ "nodes", CODEC_JOB_F_NODES }, { "min_nodes", CODEC_JOB_F_MIN_NODES },
	{ "gpus_per_node", CODEC_JOB_F_GPUS_PER_NODE }, { "gpu_model", CODEC_JOB_F_GPU_MODEL },
	{ "procs_per_node", CODEC_JOB_F_PROCS_PER_NODE }, { "mem_per_node", CODEC_JOB_F_MEM_PER_NODE },
	{ "cpus_per_node", CODEC_JOB_F_CPUS_PER_NODE }, { "topology", CODEC_JOB_F_TOPOLOGY },
	{ "time_limit", CODEC_JOB_F_TIME_LIMIT }, { "command", CODEC_JOB_F_COMMAND },
	{ "env", CODEC_JOB_F_ENV }, { "workdir", CODEC_JOB_F_WORKDIR }, { "labels", CODEC_JOB_F_LABELS },
	{ "dependencies", CODEC_JOB_F_DEPENDENCIES }, { "max_retries", CODEC_JOB_F_MAX_RETRIES },
	{ "output", CODEC_JOB_F_OUTPUT }, { "error", CODEC_JOB_F_ERROR }, { "retries", CODEC_JOB_F_RETRIES },
	{ "pending_reason", CODEC_JOB_F_PENDING_REASON },
	{ "pending_message", CODEC_JOB_F_PENDING_MESSAGE },
	{ "planned_start", CODEC_JOB_F_PLANNED_START }, { "exit_code", CODEC_JOB_F_EXIT_CODE },
	{ "end_reason", CODEC_JOB_F_END_REASON }, { "created_at", CODEC_JOB_F_CREATED_AT },
	{ "started_at", CODEC_JOB_F_STARTED_AT }, { "ended_at", CODEC_JOB_F_ENDED_AT },
	{ "launcher", CODEC_JOB_F_LAUNCH }, { "on_shrink", CODEC_JOB_F_LAUNCH },
	{ "signal", CODEC_JOB_F_LAUNCH }, { "held", CODEC_JOB_F_HELD }, { "begin", CODEC_JOB_F_BEGIN },
	{ "array", CODEC_JOB_F_ARRAY }, { "array_job_id", CODEC_JOB_F_ARRAY },
	{ "array_task_id", CODEC_JOB_F_ARRAY },
};

int codec_job_fields_decode(const char *csv, uint64_t *mask, struct mu_error *err)
{
	const char *tok = csv;

	*mask = 0;
	if (!csv || !*csv)
		return mu_error_set(err, MU_EINVAL, "fields", "must name at least one job field");
	for (;;) {
		const char *comma = strchr(tok, ',');
		size_t len = comma ? (size_t)(comma - tok) : strlen(tok);
		size_t k = 0, n = sizeof(list_fields) / sizeof(list_fields[0]);

		if (len == 2 && !strncmp(tok, "id", 2))
			goto next; /* always sent */
		while (k < n && (strlen(list_fields[k].name) != len || strncmp(list_fields[k].name, tok, len)))
			k++;
		if (k == n)
			return mu_error_set(err, MU_EINVAL, "fields", "unknown job field %.*s",
					    (int)(len > 32 ? 32 : len), tok);
		*mask |= UINT64_C(1) << list_fields[k].bit;
next:
		if (!comma)
			break;
		tok = comma + 1;
	}
	return 0;
}

void codec_job_encode(const struct store_job *j, struct mu_buf *b)
{
	codec_job_encode_fields(j, CODEC_JOB_ALL_FIELDS, b);
}

#define W(f) (mask & (UINT64_C(1) << CODEC_JOB_F_##f))

static void kint_or_null(struct mu_buf *b, const char *k, int64_t v)
{
	key(b, k);
	if (v > 0)
		mu_buf_add_int(b, v);
	else
		mu_buf_adds(b, "null");
}

uint32_t codec_job_fields_omit(uint64_t mask)
{
	static const struct {
		enum codec_job_field field;
		enum store_job_part part;
	} uses[] = {
		{ CODEC_JOB_F_COMMAND, STORE_JOB_P_COMMAND },
		{ CODEC_JOB_F_ENV, STORE_JOB_P_ENV },
		{ CODEC_JOB_F_LABELS, STORE_JOB_P_LABELS },
		{ CODEC_JOB_F_DEPENDENCIES, STORE_JOB_P_DEPENDENCIES },
		{ CODEC_JOB_F_WORKDIR, STORE_JOB_P_WORKDIR },
		{ CODEC_JOB_F_PENDING_MESSAGE, STORE_JOB_P_PENDING_MESSAGE },
		{ CODEC_JOB_F_PLANNED_START, STORE_JOB_P_PLANNED_START },
		{ CODEC_JOB_F_CREATED_AT, STORE_JOB_P_CREATED_AT },
		{ CODEC_JOB_F_STARTED_AT, STORE_JOB_P_STARTED_AT },
		{ CODEC_JOB_F_ENDED_AT, STORE_JOB_P_ENDED_AT },
		{ CODEC_JOB_F_LAUNCH, STORE_JOB_P_LAUNCH },
		{ CODEC_JOB_F_OUTPUT, STORE_JOB_P_OUTPUT },
		{ CODEC_JOB_F_ERROR, STORE_JOB_P_OUTPUT },
		{ CODEC_JOB_F_BEGIN, STORE_JOB_P_BEGIN },
	};
	/* the etag goes in a header of one job's answers, never in an item */
	uint32_t used = 0, all = UINT32_C(1) << STORE_JOB_P_ETAG;

	for (size_t i = 0; i < sizeof(uses) / sizeof(uses[0]); i++) {
		all |= UINT32_C(1) << uses[i].part;
		if (mask & (UINT64_C(1) << uses[i].field))
			used |= UINT32_C(1) << uses[i].part;
	}
	return all & ~used;
}

void codec_job_encode_fields(const struct store_job *j, uint64_t mask, struct mu_buf *b)
{
	bool pending = j->state && !strcmp(j->state, "PENDING");

	mu_buf_adds(b, "{\"id\":");
	mu_buf_add_int(b, j->id);
	if (W(STATE))
		kstr(b, "state", j->state);
	if (W(TENANT))
		kstr(b, "tenant", j->tenant);
	if (W(USER))
		kstr(b, "user", j->user ? j->user : "");
	if (W(NAME))
		kstr(b, "name", j->name ? j->name : "");
	if (W(PRIORITY_CLASS))
		kstr(b, "priority_class", j->priority_class);
	if (W(NODES))
		kint(b, "nodes", j->nodes);
	if (W(MIN_NODES))
		kint_or_null(b, "min_nodes", j->min_nodes);
	if (W(GPUS_PER_NODE))
		kint(b, "gpus_per_node", j->gpus_per_node);
	if (W(GPU_MODEL))
		kstr(b, "gpu_model", j->gpu_model ? j->gpu_model : "");
	if (W(PROCS_PER_NODE))
		kint(b, "procs_per_node", j->procs_per_node);
	if (W(MEM_PER_NODE))
		kint_or_null(b, "mem_per_node", j->mem_per_node);
	if (W(CPUS_PER_NODE))
		kint_or_null(b, "cpus_per_node", j->cpus_per_node);
	if (W(TOPOLOGY)) {
		key(b, "topology");
		mu_buf_adds(b, "{\"required\":");
		mu_buf_add_json_strz(b, j->topo_required && *j->topo_required ? j->topo_required : NULL);
		mu_buf_adds(b, ",\"preferred\":");
		mu_buf_add_json_strz(b, j->topo_preferred && *j->topo_preferred ? j->topo_preferred : NULL);
		mu_buf_addc(b, '}');
	}
	if (W(TIME_LIMIT))
		kint(b, "time_limit", j->time_limit);
	if (W(COMMAND))
		kraw(b, "command", j->command, "[]");
	if (W(ENV))
		kraw(b, "env", j->env, "{}");
	if (W(WORKDIR))
		kstr(b, "workdir", j->workdir ? j->workdir : "");
	if (W(LABELS))
		kraw(b, "labels", j->labels, "{}");
	if (W(DEPENDENCIES))
		kraw(b, "dependencies", j->dependencies, "[]");
	if (W(MAX_RETRIES))
		kint(b, "max_retries", j->max_retries);
	if (W(OUTPUT))
		kstr(b, "output", j->stdout_pattern && *j->stdout_pattern ? j->stdout_pattern : NULL);
	if (W(ERROR))
		kstr(b, "error", j->stderr_pattern && *j->stderr_pattern ? j->stderr_pattern : NULL);
	if (W(RETRIES))
		kint(b, "retries", j->retries);
	if (W(PENDING_REASON))
		kstr(b, "pending_reason", pending ? (j->pending_reason ? j->pending_reason : "Priority") : NULL);
	if (W(PENDING_MESSAGE))
		kstr(b, "pending_message", j->pending_message ? j->pending_message : "");
	if (W(PLANNED_START))
		kstr(b, "planned_start", j->planned_start);
	if (W(EXIT_CODE)) {
		key(b, "exit_code");
		if (j->has_exit_code)
			mu_buf_add_int(b, j->exit_code);
		else
			mu_buf_adds(b, "null");
	}
	if (W(END_REASON))
		kstr(b, "end_reason", j->end_reason ? j->end_reason : "");
	if (W(CREATED_AT))
		kstr(b, "created_at", j->created_at);
	if (W(STARTED_AT))
		kstr(b, "started_at", j->started_at);
	if (W(ENDED_AT))
		kstr(b, "ended_at", j->ended_at);
	if (W(LAUNCH))
		encode_launch(j, b);
	if (W(HELD)) {
		key(b, "held");
		mu_buf_adds(b, j->held ? "true" : "false");
	}
	if (W(BEGIN))
		kstr(b, "begin", j->begin_at);
	if (W(ARRAY) && j->array_spec) {
		kint(b, "array_job_id", j->array_job_id);
		kint(b, "array_task_id", j->array_task_id);
		kstr(b, "array", j->array_spec);
	}
	if (j->runs)
		kraw(b, "runs", j->runs, "[]");
	if (j->events)
		kraw(b, "events", j->events, "[]");
	mu_buf_addc(b, '}');
}

#undef W

void codec_job_problem_field(const struct admit_problem *pb, bool batch, struct mu_error *err)
{
	/* indexed by enum admit_col */
	static const char *const names[ADMIT_NCOLS] = {
		[ADMIT_COL_NONE] = "",
		[ADMIT_COL_TENANT] = "tenant",
		[ADMIT_COL_PRIORITY_CLASS] = "priority_class",
		[ADMIT_COL_TIME_LIMIT] = "time_limit",
		[ADMIT_COL_TOPO_REQUIRED] = "topology.required",
		[ADMIT_COL_TOPO_PREFERRED] = "topology.preferred",
		[ADMIT_COL_COMMAND] = "command",
		[ADMIT_COL_ENV] = "env",
		[ADMIT_COL_WORKDIR] = "workdir",
		[ADMIT_COL_DEPENDENCY] = "dependencies.%zu.job_id",
		[ADMIT_COL_DEPENDENCIES] = "dependencies",
		[ADMIT_COL_NODES] = "nodes",
		[ADMIT_COL_MIN_NODES] = "min_nodes",
	};
	char name[64];

	if (!pb->set)
		return;
	if (pb->col == ADMIT_COL_NONE || (unsigned)pb->col >= ADMIT_NCOLS) {
		err->field[0] = '\0';
		return;
	}
	if (pb->col == ADMIT_COL_DEPENDENCY)
		snprintf(name, sizeof(name), names[ADMIT_COL_DEPENDENCY], pb->sub);
	else
		snprintf(name, sizeof(name), "%s", names[pb->col]);
	if (batch)
		snprintf(err->field, sizeof(err->field), "jobs.%zu.%s", pb->job, name);
	else
		snprintf(err->field, sizeof(err->field), "%s", name);
}

void codec_job_redact_env(struct store_job *job, struct mu_arena *a)
{
	json_t *o = job->env ? json_loads(job->env, JSON_DECODE_ANY, NULL) : NULL;
	const char *k;
	json_t *v;
	char *text;

	if (!json_is_object(o)) {
		job->env = "{}";
		goto out;
	}
	json_object_foreach(o, k, v)
		json_object_set_new(o, k, json_string(CODEC_JOB_REDACTED));
	text = json_dumps(o, JSON_COMPACT);
	job->env = mu_arena_strdup(a, text ? text : "{}");
	free(text);
out:
	json_decref(o);
}
