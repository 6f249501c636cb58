/* sbatch.c - see sbatch.h. */
#include "sbatch.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "buf.h"
#include "duration.h"
#include "slurmtime.h"

/* Slurm's MaxBatchRequeue default: how often --requeue lets a job come back. */
#define REQUEUE_RETRIES 5
#define MAX_WORDS 256
#define MAX_VALUE 4096

typedef int (*apply_fn)(struct mu_sbatch *sb, const char *opt, const char *v, int line,
			struct mu_error *err);

struct opt {
	struct mu_sbatch_option pub;
	apply_fn apply; /* NULL for warn/refuse */
};

static int fail(struct mu_error *err, int code, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(struct mu_error *err, int code, int line, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line > 0)
		return mu_error_set(err, code, "script", "line %d: %s", line, msg);
	return mu_error_set(err, code, "", "%s", msg);
}

static bool utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		int n;
		if (*p < 0x80) {
			p++;
			continue;
		}
		if ((*p & 0xe0) == 0xc0 && *p >= 0xc2)
			n = 1;
		else if ((*p & 0xf0) == 0xe0)
			n = 2;
		else if ((*p & 0xf8) == 0xf0 && *p <= 0xf4)
			n = 3;
		else
			return false;
		if ((*p == 0xe0 && (p[1] & 0xe0) == 0x80) || (*p == 0xed && p[1] >= 0xa0) ||
		    (*p == 0xf0 && p[1] < 0x90) || (*p == 0xf4 && p[1] >= 0x90))
			return false;
		for (int i = 1; i <= n; i++)
			if ((p[i] & 0xc0) != 0x80)
				return false;
		p += n + 1;
	}
	return true;
}

/* Sets field `name` to `json` (steals it), replacing an earlier value. */
static void set_field(struct mu_sbatch *sb, const char *name, char *json)
{
	for (size_t i = 0; i < sb->nfields; i++)
		if (!strcmp(sb->fields[i].name, name)) {
			mu_free(sb->fields[i].json);
			sb->fields[i].json = json;
			return;
		}
	if (sb->nfields == MU_SBATCH_MAX_FIELDS) { /* cannot happen: fewer fields exist */
		mu_free(json);
		return;
	}
	snprintf(sb->fields[sb->nfields].name, sizeof(sb->fields[0].name), "%s", name);
	sb->fields[sb->nfields++].json = json;
}

static void set_int(struct mu_sbatch *sb, const char *name, long long v)
{
	set_field(sb, name, mu_asprintf("%lld", v));
}

static int set_str(struct mu_sbatch *sb, const char *name, const char *opt, const char *v,
		   size_t max, int line, struct mu_error *err)
{
	struct mu_buf b;

	mu_buf_init(&b);

	if (!*v)
		return fail(err, MU_EINVAL, line, "--%s needs a value", opt);
	if (strlen(v) > max)
		return fail(err, MU_ETOOLONG, line, "--%s is longer than %zu bytes", opt, max);
	if (!utf8_ok(v))
		return fail(err, MU_EUTF8, line, "--%s is not valid UTF-8", opt);
	mu_buf_add_json_strz(&b, v);
	set_field(sb, name, mu_buf_detach(&b));
	return 0;
}

static int parse_ll(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!isdigit((unsigned char)*s))
		return MU_EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end)
		return MU_EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return MU_ERANGE;
	*out = v;
	return 0;
}

static int int_opt(const char *opt, const char *v, long long min, long long max, long long *out,
		   int line, struct mu_error *err)
{
	int ret = parse_ll(v, min, max, out);

	if (ret == MU_ERANGE)
		return fail(err, ret, line, "--%s %s is out of range %lld..%lld", opt, v, min, max);
	if (ret < 0)
		return fail(err, ret, line, "--%s: expected an integer, got '%s'", opt, v);
	return 0;
}

static void warn(struct mu_sbatch *sb, int line, const char *opt, const char *why)
{
	if (sb->nwarnings == MU_SBATCH_MAX_WARNINGS)
		return;
	if (line > 0)
		snprintf(sb->warnings[sb->nwarnings++], sizeof(sb->warnings[0]),
			 "line %d: --%.40s: %s", line, opt, why);
	else
		snprintf(sb->warnings[sb->nwarnings++], sizeof(sb->warnings[0]), "--%.40s: %s", opt,
			 why);
}

/* ---- the options that apply -------------------------------------------- */

static int ap_nodes(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		    struct mu_error *err)
{
	const char *dash = strchr(v, '-');
	long long lo = 0, hi;
	char minbuf[24];
	int ret;

	if (dash) {
		if ((size_t)(dash - v) >= sizeof(minbuf))
			return fail(err, MU_EINVAL, line, "--%s '%s' must be N or MIN-MAX", opt, v);
		memcpy(minbuf, v, (size_t)(dash - v));
		minbuf[dash - v] = '\0';
		if ((ret = int_opt(opt, minbuf, 1, 10000, &lo, line, err)) < 0)
			return ret;
	}
	if ((ret = int_opt(opt, dash ? dash + 1 : v, 1, 10000, &hi, line, err)) < 0)
		return ret;
	if (dash && lo > hi)
		return fail(err, MU_ERANGE, line, "--%s %s: minimum above maximum", opt, v);
	set_int(sb, "nodes", hi);
	if (dash && lo != hi)
		set_int(sb, "min_nodes", lo);
	return 0;
}

/* "[type:]N" into gpus_per_node (+ gpu_model). */
/* [TYPE:]N GPUs into field `name` (the type into gpu_model). */
static int gpus_typed(struct mu_sbatch *sb, const char *name, const char *opt, const char *v,
		      int line, struct mu_error *err)
{
	const char *colon = strrchr(v, ':');
	long long n = 0;
	int ret;

	if ((ret = int_opt(opt, colon ? colon + 1 : v, 0, 64, &n, line, err)) < 0)
		return ret;
	if (colon) {
		char model[72];
		size_t len = (size_t)(colon - v);
		if (len == 0 || len >= sizeof(model) || memchr(v, ':', len))
			return fail(err, MU_EINVAL, line, "--%s '%s': want [TYPE:]COUNT", opt, v);
		memcpy(model, v, len);
		model[len] = '\0';
		if ((ret = set_str(sb, "gpu_model", opt, model, 64, line, err)) < 0)
			return ret;
	}
	set_int(sb, name, n);
	return 0;
}

static int ap_gpus_per_node(struct mu_sbatch *sb, const char *opt, const char *v, int line,
			    struct mu_error *err)
{
	return gpus_typed(sb, "gpus_per_node", opt, v, line, err);
}

/* --gpus-per-task=[TYPE:]N: times the tasks per node, at mu_sbatch_finish. */
static int ap_gpus_per_task(struct mu_sbatch *sb, const char *opt, const char *v, int line,
			    struct mu_error *err)
{
	return gpus_typed(sb, "_gpus_per_task", opt, v, line, err);
}

/* --gres=gpu[:type][:N][,...]: GPUs only; any other resource is refused. */
static int ap_gres(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		   struct mu_error *err)
{
	char buf[256];
	char *item, *save = NULL;
	int ngpu = 0, ret = 0;

	if (strlen(v) >= sizeof(buf) || !*v)
		return fail(err, MU_EINVAL, line, "--%s '%.64s': want gpu[:TYPE][:COUNT]", opt, v);
	snprintf(buf, sizeof(buf), "%s", v);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *rest;

		if (strncmp(item, "gpu", 3) || (item[3] && item[3] != ':'))
			return fail(err, MU_EINVAL, line,
				    "--%s=%s: muster schedules GPUs only; generic resource '%s' cannot "
				    "be honoured",
				    opt, v, item);
		if (ngpu++)
			return fail(err, MU_EINVAL, line, "--%s=%s: gpu given twice", opt, v);
		rest = item[3] ? item + 4 : "1";
		/* gpu:N, gpu:TYPE, gpu:TYPE:N */
		if (!strchr(rest, ':') && !isdigit((unsigned char)*rest)) {
			char typed[128];
			snprintf(typed, sizeof(typed), "%s:1", rest);
			ret = gpus_typed(sb, "gpus_per_node", opt, typed, line, err);
		} else {
			ret = gpus_typed(sb, "gpus_per_node", opt, rest, line, err);
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int ap_ntasks_per_node(struct mu_sbatch *sb, const char *opt, const char *v, int line,
			      struct mu_error *err)
{
	long long n = 0;
	int ret = int_opt(opt, v, 1, 1024, &n, line, err);

	if (ret == 0) {
		set_int(sb, "procs_per_node", n);
		sb->ntasks_per_node = n;
	}
	return ret;
}

static int ap_ntasks(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		     struct mu_error *err)
{
	long long n = 0;
	int ret = int_opt(opt, v, 1, 1024 * 10000, &n, line, err);

	if (ret == 0)
		set_int(sb, "_ntasks", n);
	return ret;
}

static int ap_gpus(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		   struct mu_error *err)
{
	long long n = 0;
	const char *colon = strrchr(v, ':');
	int ret = int_opt(opt, colon ? colon + 1 : v, 0, 64 * 10000, &n, line, err);

	if (ret == 0)
		set_int(sb, "_gpus", n);
	return ret;
}

static int ap_time(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		   struct mu_error *err)
{
	int64_t secs;
	int ret;

	if (!strcasecmp(v, "unlimited") || !strcasecmp(v, "infinite"))
		return fail(err, MU_EINVAL, line, "--%s must be finite (got '%s')", opt, v);
	ret = mu_duration_parse_slurm(v, &secs);
	if (ret == MU_ERANGE || (ret == 0 && (secs < 1 || secs > INT32_MAX)))
		return fail(err, MU_ERANGE, line, "--%s '%s' is out of range", opt, v);
	if (ret < 0)
		return fail(err, MU_EINVAL, line,
			    "invalid --%s '%s' (forms: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS)",
			    opt, v);
	set_int(sb, "time_limit", secs);
	return 0;
}

static int ap_name(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		   struct mu_error *err)
{
	return set_str(sb, "name", opt, v, 256, line, err);
}

static int ap_output(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		     struct mu_error *err)
{
	return set_str(sb, !strcmp(opt, "error") ? "error" : "output", opt, v, 4096, line, err);
}

/* The server checks the ranges; here only the characters and the size. */
static int ap_array(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		    struct mu_error *err)
{
	if (!*v || strspn(v, "0123456789,-:%") != strlen(v))
		return fail(err, MU_EINVAL, line,
			    "--%s '%.64s': want ranges like 0-15%%4, 1,3,5-7 or 0-15:4", opt, v);
	return set_str(sb, "array", opt, v, 1024, line, err);
}

static int ap_dependency(struct mu_sbatch *sb, const char *opt, const char *v, int line,
			 struct mu_error *err)
{
	static const char *const types[] = { "afterok", "afterany", "afternotok" };
	struct mu_buf b;

	mu_buf_init(&b);
	char buf[1024];
	char *item, *save = NULL;
	int n = 0, ret = 0;

	if (!*v || strlen(v) >= sizeof(buf) || v[0] == ',' || v[strlen(v) - 1] == ',' ||
	    strstr(v, ",,"))
		return fail(err, MU_EINVAL, line, "malformed --%s '%.64s'", opt, v);
	if (strchr(v, '?'))
		return fail(err, MU_EINVAL, line,
			    "--%s: '?' (any of) is not supported; ',' means all of", opt);
	snprintf(buf, sizeof(buf), "%s", v);
	mu_buf_addc(&b, '[');
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(item, ':');
		const char *type = NULL;
		char *id, *save_id = NULL;

		if (colon)
			*colon = '\0';
		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if (!strcmp(item, types[i]))
				type = types[i];
		if (!type) {
			ret = fail(err, MU_EINVAL, line,
				   "--%s type '%.32s' is not supported (afterok, afterany, afternotok)",
				   opt, item);
			goto out;
		}
		id = colon ? colon + 1 : NULL;
		if (!id || !*id || id[strlen(id) - 1] == ':' || strstr(id, "::") || *id == ':') {
			ret = fail(err, MU_EINVAL, line, "--%s %s needs job ids: %s:JOBID[:JOBID...]",
				   opt, type, type);
			goto out;
		}
		for (id = strtok_r(id, ":", &save_id); id; id = strtok_r(NULL, ":", &save_id)) {
			long long jid;
			if (strchr(id, '+')) {
				ret = fail(err, MU_EINVAL, line,
					   "--%s: time offsets ('+...') are not supported", opt);
				goto out;
			}
			if (parse_ll(id, 1, INT64_C(9007199254740991), &jid) < 0) {
				ret = fail(err, MU_EINVAL, line, "--%s: invalid job id '%.32s'", opt,
					   id);
				goto out;
			}
			if (n++)
				mu_buf_addc(&b, ',');
			mu_buf_addf(&b, "{\"type\":\"%s\",\"job_id\":%lld}", type, jid);
		}
	}
	mu_buf_addc(&b, ']');
	set_field(sb, "dependencies", mu_buf_detach(&b));
out:
	mu_buf_release(&b);
	return ret;
}

static int ap_begin(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		    struct mu_error *err)
{
	char text[32];
	int64_t t;
	int ret = mu_slurmtime_parse(v, sb->now, MU_SLURMTIME_FUTURE, &t);

	if (ret < 0)
		return fail(err, ret, line,
			    "invalid --%s '%.64s' (forms: now+1hour, 16:00, 2027-01-31T08:00, "
			    "MMDD[YY], today, tomorrow, ...)",
			    opt, v);
	mu_slurmtime_rfc3339(t, text, sizeof(text));
	if (!text[0])
		return fail(err, MU_ERANGE, line, "--%s '%.64s' is out of range", opt, v);
	set_field(sb, "begin", mu_asprintf("\"%s\"", text));
	return 0;
}

static int ap_hold(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		   struct mu_error *err)
{
	(void)opt, (void)v, (void)line, (void)err;
	set_field(sb, "hold", mu_strdup("true"));
	return 0;
}

/* --signal=[{R|B}:]SIG[@TIME]: SIG a name (USR1, SIGUSR1) or a number. */
static int ap_signal(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		     struct mu_error *err)
{
	static const struct {
		const char *name;
		int num;
	} sigs[] = { { "HUP", 1 },   { "INT", 2 },   { "QUIT", 3 },  { "ABRT", 6 }, { "KILL", 9 },
		     { "USR1", 10 }, { "USR2", 12 }, { "ALRM", 14 }, { "TERM", 15 }, { "CONT", 18 },
		     { "STOP", 19 }, { "TSTP", 20 }, { "URG", 23 },  { "XCPU", 24 }, { "XFSZ", 25 },
		     { "VTALRM", 26 }, { "PROF", 27 }, { "WINCH", 28 }, { "IO", 29 }, { "PWR", 30 } };
	bool batch = false;
	const char *p = v;
	const char *at;
	const char *name = NULL;
	char sig[16];
	long long before = 60;
	size_t len;

	if (!strncasecmp(p, "B:", 2)) {
		batch = true;
		p += 2;
	} else if (!strncasecmp(p, "R:", 2)) {
		return fail(err, MU_EINVAL, line, "--%s R: (reservation end) is not supported", opt);
	}
	at = strchr(p, '@');
	len = at ? (size_t)(at - p) : strlen(p);
	if (len == 0 || len >= sizeof(sig))
		return fail(err, MU_EINVAL, line, "--%s '%.32s': want [B:]SIGNAL[@SECONDS]", opt, v);
	memcpy(sig, p, len);
	sig[len] = '\0';
	if (at && int_opt(opt, at + 1, 0, 65535, &before, line, err) < 0)
		return MU_EINVAL;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		char num[8];
		snprintf(num, sizeof(num), "%d", sigs[i].num);
		if (!strcasecmp(sig, sigs[i].name) ||
		    (!strncasecmp(sig, "SIG", 3) && !strcasecmp(sig + 3, sigs[i].name)) ||
		    !strcmp(sig, num))
			name = sigs[i].name;
	}
	if (!name)
		return fail(err, MU_EINVAL, line, "--%s: unknown signal '%s'", opt, sig);
	set_field(sb, "signal",
		  mu_asprintf("{\"name\":\"%s\",\"before\":%lld%s}", name, before,
			      batch ? ",\"batch_only\":true" : ""));
	return 0;
}

static int ap_batch_host(struct mu_sbatch *sb, const char *opt, const char *v, int line,
			 struct mu_error *err)
{
	(void)opt, (void)v, (void)line, (void)err;
	set_field(sb, "batch_host", mu_strdup("true"));
	return 0;
}

static int ap_requeue(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		      struct mu_error *err)
{
	(void)v, (void)line, (void)err;
	set_int(sb, "max_retries", !strcmp(opt, "no-requeue") ? 0 : REQUEUE_RETRIES);
	return 0;
}

/* Slurm's sizes: a number of MiB, or with a K/M/G/T suffix. */
static int mem_bytes(const char *opt, const char *v, long long *out, int line, struct mu_error *err)
{
	char *end;
	long long n, mul = 1LL << 20;

	if (!isdigit((unsigned char)*v))
		return fail(err, MU_EINVAL, line, "--%s '%.32s': want a size like 512M or 64G", opt, v);
	errno = 0;
	n = strtoll(v, &end, 10);
	if (*end) {
		switch (toupper((unsigned char)*end)) {
		case 'K': mul = 1LL << 10; break;
		case 'M': mul = 1LL << 20; break;
		case 'G': mul = 1LL << 30; break;
		case 'T': mul = 1LL << 40; break;
		default: mul = 0;
		}
		if (!mul || (end[1] && strcasecmp(end + 1, "B")))
			return fail(err, MU_EINVAL, line, "--%s '%.32s': want a size like 512M or 64G",
				    opt, v);
	}
	if (errno == ERANGE || n > (1LL << 50) / mul || n * mul < (1LL << 20))
		return fail(err, MU_ERANGE, line, "--%s %s: must be between 1M and 1024T", opt, v);
	*out = n * mul;
	return 0;
}

static void drop_field(struct mu_sbatch *sb, const char *name);

static int ap_mem(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		  struct mu_error *err)
{
	long long b = 0;
	int ret;

	if (!strcmp(v, "0")) {
		if (strcmp(opt, "mem"))
			return fail(err, MU_EINVAL, line, "--%s=0 is not a size", opt);
		/* all of each node's memory: what a job without mem_per_node gets */
		drop_field(sb, "mem_per_node");
		return 0;
	}
	if ((ret = mem_bytes(opt, v, &b, line, err)) < 0)
		return ret;
	set_int(sb, !strcmp(opt, "mem") ? "mem_per_node" : !strcmp(opt, "mem-per-gpu")
			    ? "_mem_per_gpu" : "_mem_per_cpu", b);
	return 0;
}

static int ap_cpus_per_task(struct mu_sbatch *sb, const char *opt, const char *v, int line,
			    struct mu_error *err)
{
	return int_opt(opt, v, 1, 65536, &sb->cpus_per_task, line, err);
}

static int ap_priority_class(struct mu_sbatch *sb, const char *opt, const char *v, int line,
			     struct mu_error *err)
{
	return set_str(sb, "priority_class", opt, v, 63, line, err);
}

static int ap_tenant(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		     struct mu_error *err)
{
	return set_str(sb, "tenant", opt, v, 63, line, err);
}

static int ap_workdir(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		      struct mu_error *err)
{
	return set_str(sb, "workdir", opt, v, 4096, line, err);
}

static bool env_name_ok(const char *k, size_t n)
{
	if (n < 1 || n > 256 || isdigit((unsigned char)k[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)k[i]) && k[i] != '_')
			return false;
	return true;
}

/* --export=[ALL|NONE][,NAME[=VALUE]...]: muster passes no environment of the
 * submitter by default (NONE); ALL is refused with a warning's reason. */
static int ap_export(struct mu_sbatch *sb, const char *opt, const char *v, int line,
		     struct mu_error *err)
{
	struct mu_buf b;

	mu_buf_init(&b);
	const char *old = mu_sbatch_get(sb, "env");
	char *copy = mu_strdup(v);
	char *item, *save = NULL;
	int ret = 0;

	if (old && strcmp(old, "{}"))
		mu_buf_add(&b, old, strlen(old) - 1); /* reopen the object */
	else
		mu_buf_addc(&b, '{');
	for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		const char *val = eq ? eq + 1 : NULL;
		size_t klen = eq ? (size_t)(eq - item) : strlen(item);

		if (!strcmp(item, "NONE"))
			continue;
		if (!strcmp(item, "ALL")) {
			warn(sb, line, "export=ALL",
			     "muster copies no environment; name the variables "
			     "(--export=NAME,NAME=VALUE)");
			continue;
		}
		if (!env_name_ok(item, klen)) {
			ret = fail(err, MU_EINVAL, line, "--%s: invalid variable name '%.*s'", opt,
				   (int)(klen > 64 ? 64 : klen), item);
			goto out;
		}
		if (!val) {
			item[klen] = '\0';
			val = sb->from_cli ? getenv(item) : NULL;
			if (!val) {
				ret = fail(err, MU_EINVAL, line,
					   "--%s %s: no value (give %s=VALUE%s)", opt, item, item,
					   sb->from_cli ? ", or set it here" : "");
				goto out;
			}
		}
		if (strlen(val) > 32768 || !utf8_ok(val)) {
			ret = fail(err, MU_EINVAL, line, "--%s %.*s: value too long or not UTF-8", opt,
				   (int)klen, item);
			goto out;
		}
		if (b.len > 1)
			mu_buf_addc(&b, ',');
		mu_buf_add_json_str(&b, item, klen);
		mu_buf_addc(&b, ':');
		mu_buf_add_json_strz(&b, val);
	}
	mu_buf_addc(&b, '}');
	set_field(sb, "env", mu_buf_detach(&b));
out:
	mu_buf_release(&b);
	mu_free(copy);
	return ret;
}

#define APPLY(n, s, a, fn, h) { { n, s, a, MU_SBATCH_APPLY, h }, fn }
#define WARN(n, s, a, h) { { n, s, a, MU_SBATCH_WARN, h }, NULL }
#define REFUSE(n, s, a, h) { { n, s, a, MU_SBATCH_REFUSE, h }, NULL }

static const struct opt table[] = {
	APPLY("nodes", 'N', true, ap_nodes, "nodes of the gang, N or MIN-MAX (elastic)"),
	APPLY("gpus-per-node", 0, true, ap_gpus_per_node, "GPUs on every node, [TYPE:]N"),
	APPLY("gres", 0, true, ap_gres, "gpu[:TYPE][:N]: GPUs per node"),
	APPLY("gpus", 'G', true, ap_gpus, "GPUs in all, a multiple of the node count"),
	APPLY("gpus-per-task", 0, true, ap_gpus_per_task, "GPUs per process, [TYPE:]N (times processes per node)"),
	APPLY("ntasks-per-node", 0, true, ap_ntasks_per_node, "processes per node"),
	APPLY("ntasks", 'n', true, ap_ntasks, "processes in all, a multiple of the node count"),
	APPLY("time", 't', true, ap_time, "time limit: MM, HH:MM:SS, D-HH:MM:SS, ..."),
	APPLY("job-name", 'J', true, ap_name, "job name"),
	APPLY("output", 'o', true, ap_output, "stdout file pattern (%j %x %A %a %N %n %t %u %%)"),
	APPLY("error", 'e', true, ap_output, "stderr file pattern"),
	APPLY("array", 'a', true, ap_array, "job array: 0-15%4, 1,3,5-7, 0-15:4"),
	APPLY("dependency", 'd', true, ap_dependency, "afterok|afterany|afternotok:ID[:ID...][,...]"),
	APPLY("begin", 'b', true, ap_begin, "start no earlier than: now+1hour, 16:00, 2027-01-31T08:00"),
	APPLY("hold", 'H', false, ap_hold, "submit held (muster release JOB)"),
	APPLY("signal", 0, true, ap_signal, "[B:]SIG[@SECONDS] before the time limit"),
	APPLY("requeue", 0, false, ap_requeue, "may be requeued (max_retries 5)"),
	APPLY("no-requeue", 0, false, ap_requeue, "never requeued (max_retries 0)"),
	APPLY("mem", 0, true, ap_mem, "memory per node (MiB, or 512M, 64G)"),
	APPLY("mem-per-gpu", 0, true, ap_mem, "memory per GPU (times GPUs per node)"),
	APPLY("mem-per-cpu", 0, true, ap_mem, "memory per CPU (times CPUs per node)"),
	APPLY("cpus-per-task", 'c', true, ap_cpus_per_task, "CPUs per process (times processes per node)"),
	APPLY("qos", 'q', true, ap_priority_class, "priority class"),
	APPLY("account", 'A', true, ap_tenant, "tenant"),
	APPLY("export", 0, true, ap_export, "[NONE,]NAME[=VALUE][,...]: environment"),
	APPLY("chdir", 'D', true, ap_workdir, "working directory"),
	APPLY("batch-host", 0, false, ap_batch_host,
	      "run the script once, on the rank-0 node, with the hostfile (sbatch's shape)"),
	REFUSE("constraint", 'C', true, "node features are not modelled (use --gpus-per-node TYPE:N)"),
	REFUSE("nodelist", 'w', true, "muster places jobs itself; nodes cannot be named"),
	REFUSE("exclude", 'x', true, "muster places jobs itself; nodes cannot be excluded"),
	REFUSE("nodefile", 'F', true, "muster places jobs itself; nodes cannot be named"),
	REFUSE("reservation", 0, true, "reservations are not supported"),
	REFUSE("licenses", 'L', true, "licenses are not modelled"),
	REFUSE("clusters", 'M', true, "one cluster per muster"),
	REFUSE("tmp", 0, true, "temporary disk is not modelled"),
	REFUSE("mincpus", 0, true, "use --cpus-per-task"),
	REFUSE("sockets-per-node", 0, true, "sockets are not modelled"),
	REFUSE("cores-per-socket", 0, true, "cores are not modelled"),
	REFUSE("threads-per-core", 0, true, "threads are not modelled"),
	REFUSE("extra-node-info", 'B', true, "sockets/cores/threads are not modelled"),
	REFUSE("ntasks-per-socket", 0, true, "sockets are not modelled"),
	REFUSE("ntasks-per-core", 0, true, "cores are not modelled"),
	REFUSE("ntasks-per-gpu", 0, true, "use --ntasks-per-node"),
	REFUSE("gpus-per-socket", 0, true, "sockets are not modelled"),
	REFUSE("cpus-per-gpu", 0, true, "use --cpus-per-task"),
	REFUSE("core-spec", 'S', true, "core specialisation is not modelled"),
	REFUSE("switches", 0, true, "use muster's --topology required:LEVEL"),
	REFUSE("contiguous", 0, false, "use muster's --topology required:LEVEL"),
	REFUSE("network", 0, true, "network resources are not modelled"),
	REFUSE("uid", 0, true, "a job runs as its submitter"),
	REFUSE("gid", 0, true, "a job runs as its submitter"),
	REFUSE("container", 0, true, "containers are not supported"),
	REFUSE("prefer", 0, true, "node features are not modelled"),
	WARN("partition", 'p', true, "one pool per muster; ignored"),
	WARN("mail-type", 0, true, "muster sends no mail; ignored"),
	WARN("mail-user", 0, true, "muster sends no mail; ignored"),
	WARN("comment", 0, true, "ignored (use muster --label)"),
	WARN("nice", 0, true, "ignored (use --qos)"),
	WARN("priority", 0, true, "ignored (use --qos)"),
	WARN("exclusive", 0, false, "GPUs are always exclusive; ignored"),
	WARN("oversubscribe", 's', false, "GPUs are never shared; ignored"),
	WARN("open-mode", 0, true, "output files are truncated; ignored"),
	WARN("propagate", 0, true, "resource limits come from the node; ignored"),
	WARN("get-user-env", 0, false, "ignored (use --export)"),
	WARN("wckey", 0, true, "ignored"),
	WARN("kill-on-invalid-dep", 0, true, "a job with a failed dependency never starts; ignored"),
	WARN("profile", 0, true, "ignored"),
	WARN("acctg-freq", 0, true, "ignored"),
	WARN("distribution", 'm', true, "ranks are placed by node rank; ignored"),
	WARN("hint", 0, true, "ignored"),
	WARN("cpu-freq", 0, true, "ignored"),
	WARN("gpu-bind", 0, true, "every process sees its node's GPUs; ignored"),
	WARN("mem-bind", 0, true, "ignored"),
	WARN("deadline", 0, true, "ignored"),
	WARN("delay-boot", 0, true, "ignored"),
	WARN("no-kill", 'k', false, "a gang ends when a node fails; ignored"),
	WARN("input", 'i', true, "standard input is /dev/null; ignored"),
	WARN("quiet", 'Q', false, "ignored"),
	WARN("verbose", 'v', false, "ignored"),
	WARN("wait", 'W', false, "give --wait on the command line; ignored in a script"),
	WARN("parsable", 0, false, "give --parsable on the command line; ignored in a script"),
	WARN("test-only", 0, false, "give --test-only on the command line; ignored in a script"),
	WARN("requeue-exit", 0, true, "ignored"),
	WARN("export-file", 0, true, "ignored (use --export)"),
	WARN("spread-job", 0, false, "ignored"),
	WARN("thread-spec", 0, true, "ignored"),
	WARN("power", 0, true, "ignored"),
	WARN("mcs-label", 0, true, "ignored"),
	WARN("tres-per-task", 0, true, "ignored"),
};

#define NTABLE (sizeof(table) / sizeof(table[0]))

size_t mu_sbatch_noptions(void)
{
	return NTABLE;
}

const struct mu_sbatch_option *mu_sbatch_option_at(size_t i)
{
	return i < NTABLE ? &table[i].pub : NULL;
}

void mu_sbatch_init(struct mu_sbatch *sb, int64_t now, bool from_cli)
{
	memset(sb, 0, sizeof(*sb));
	sb->now = now;
	sb->from_cli = from_cli;
}

void mu_sbatch_release(struct mu_sbatch *sb)
{
	for (size_t i = 0; i < sb->nfields; i++)
		mu_free(sb->fields[i].json);
	sb->nfields = 0;
}

const char *mu_sbatch_get(const struct mu_sbatch *sb, const char *name)
{
	for (size_t i = 0; i < sb->nfields; i++)
		if (!strcmp(sb->fields[i].name, name))
			return sb->fields[i].json;
	return NULL;
}

static void drop_field(struct mu_sbatch *sb, const char *name)
{
	for (size_t i = 0; i < sb->nfields; i++)
		if (!strcmp(sb->fields[i].name, name)) {
			mu_free(sb->fields[i].json);
			sb->fields[i] = sb->fields[--sb->nfields];
			return;
		}
}

/* Exact long name, then a unique prefix (as getopt_long), or a short name. */
static const struct opt *lookup(const char *name, bool long_form, bool *ambiguous)
{
	const struct opt *hit = NULL;
	size_t n = strlen(name);

	*ambiguous = false;
	if (n == 1 && !long_form) {
		for (size_t i = 0; i < NTABLE; i++)
			if (table[i].pub.short_name == name[0])
				return &table[i];
		return NULL;
	}
	for (size_t i = 0; i < NTABLE; i++)
		if (!strcmp(table[i].pub.name, name))
			return &table[i];
	for (size_t i = 0; i < NTABLE; i++)
		if (!strncmp(table[i].pub.name, name, n)) {
			if (hit) {
				*ambiguous = true;
				return NULL;
			}
			hit = &table[i];
		}
	return hit;
}

int mu_sbatch_option(struct mu_sbatch *sb, const char *name, const char *value, int line,
		     struct mu_error *err)
{
	bool ambiguous;
	const struct opt *o = lookup(name, false, &ambiguous);
	const char *shown = o ? o->pub.name : name;

	if (!o) {
		if (ambiguous)
			return fail(err, MU_EINVAL, line, "option '--%.40s' is ambiguous", name);
		warn(sb, line, name, "unknown option; ignored");
		return 0;
	}
	if (o->pub.has_arg && !value)
		return fail(err, MU_EINVAL, line, "option '--%s' needs a value", shown);
	if (!o->pub.has_arg && value && o->pub.fate == MU_SBATCH_APPLY)
		return fail(err, MU_EINVAL, line, "option '--%s' takes no value", shown);
	if (value && strlen(value) > MAX_VALUE * 9) /* --export may carry values */
		return fail(err, MU_ETOOLONG, line, "option '--%s': value too long", shown);
	switch (o->pub.fate) {
	case MU_SBATCH_REFUSE:
		return fail(err, MU_EINVAL, line, "--%s cannot be honoured: %s", shown, o->pub.help);
	case MU_SBATCH_WARN:
		warn(sb, line, shown, o->pub.help);
		return 0;
	case MU_SBATCH_APPLY:
		break;
	}
	return o->apply(sb, shown, value ? value : "", line, err);
}

static long long field_int(const struct mu_sbatch *sb, const char *name, long long dflt)
{
	const char *v = mu_sbatch_get(sb, name);
	return v ? strtoll(v, NULL, 10) : dflt;
}

/* Totals (--ntasks, --gpus) spread over the nodes, per-task GPUs and CPUs times the
 * tasks per node; per-CPU/GPU memory scaled. */
static int derive(struct mu_sbatch *sb, struct mu_error *err)
{
	long long nodes = field_int(sb, "nodes", 1);
	long long v;

	if ((v = field_int(sb, "_ntasks", 0)) > 0) {
		if (v % nodes || v / nodes > 1024)
			return fail(err, MU_EINVAL, 0,
				    "--ntasks=%lld does not divide over %lld node(s) (use "
				    "--ntasks-per-node)",
				    v, nodes);
		if (!mu_sbatch_get(sb, "procs_per_node")) {
			set_int(sb, "procs_per_node", v / nodes);
			sb->ntasks_per_node = v / nodes;
		}
	}
	if ((v = field_int(sb, "_gpus", -1)) >= 0) {
		if (v % nodes || v / nodes > 64)
			return fail(err, MU_EINVAL, 0,
				    "--gpus=%lld does not divide over %lld node(s) (use "
				    "--gpus-per-node)",
				    v, nodes);
		if (!mu_sbatch_get(sb, "gpus_per_node"))
			set_int(sb, "gpus_per_node", v / nodes);
	}
	if ((v = field_int(sb, "_gpus_per_task", 0)) > 0 && !mu_sbatch_get(sb, "gpus_per_node")) {
		long long tasks = sb->ntasks_per_node > 0 ? sb->ntasks_per_node : 1;
		if (v * tasks > 64)
			return fail(err, MU_EINVAL, 0,
				    "--gpus-per-task=%lld x %lld task(s) per node is above 64 GPUs per node",
				    v, tasks);
		set_int(sb, "gpus_per_node", v * tasks);
	}
	if (sb->cpus_per_task > 0) {
		long long tasks = sb->ntasks_per_node > 0 ? sb->ntasks_per_node : 1;
		if (sb->cpus_per_task * tasks > 65536)
			return fail(err, MU_ERANGE, 0, "--cpus-per-task x tasks per node is above 65536");
		set_int(sb, "cpus_per_node", sb->cpus_per_task * tasks);
	}
	if ((v = field_int(sb, "_mem_per_gpu", 0)) > 0 && !mu_sbatch_get(sb, "mem_per_node")) {
		long long g = field_int(sb, "gpus_per_node", 0);
		if (g < 1)
			return fail(err, MU_EINVAL, 0, "--mem-per-gpu needs GPUs per node");
		if (v > (1LL << 50) / g)
			return fail(err, MU_ERANGE, 0, "--mem-per-gpu x GPUs is above 1024T");
		set_int(sb, "mem_per_node", v * g);
	}
	if ((v = field_int(sb, "_mem_per_cpu", 0)) > 0 && !mu_sbatch_get(sb, "mem_per_node")) {
		long long c = field_int(sb, "cpus_per_node", 1);
		if (v > (1LL << 50) / c)
			return fail(err, MU_ERANGE, 0, "--mem-per-cpu x CPUs is above 1024T");
		set_int(sb, "mem_per_node", v * c);
	}
	drop_field(sb, "_ntasks");
	drop_field(sb, "_gpus");
	drop_field(sb, "_gpus_per_task");
	drop_field(sb, "_mem_per_gpu");
	drop_field(sb, "_mem_per_cpu");
	return 0;
}

int mu_sbatch_finish(struct mu_sbatch *sb, struct mu_error *err)
{
	return derive(sb, err);
}

bool mu_sbatch_has_shebang(const char *script, size_t len)
{
	return len >= 2 && script[0] == '#' && script[1] == '!';
}

/*
 * Splits one directive line into words as sh would: '...' literal, "..."
 * with \" \\ \$ \` escapes, \ outside quotes escapes the next byte, an
 * unquoted word starting with '#' ends the line. Words go into `buf`.
 */
static int split(const char *p, const char *end, char *buf, size_t bufn, char **words,
		 int *nwords, int line, struct mu_error *err)
{
	size_t o = 0;
	int n = 0;

	for (;;) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		if (p >= end || *p == '#')
			break;
		if (n == MAX_WORDS)
			return fail(err, MU_ETOOLONG, line, "too many words in one #SBATCH line");
		words[n++] = buf + o;
		while (p < end && *p != ' ' && *p != '\t' && *p != '\r') {
			char c = *p++;
			if (o + 2 >= bufn)
				return fail(err, MU_ETOOLONG, line, "#SBATCH line too long");
			if (c == '\'') {
				while (p < end && *p != '\'') {
					if (o + 2 >= bufn)
						return fail(err, MU_ETOOLONG, line, "#SBATCH line too long");
					buf[o++] = *p++;
				}
				if (p >= end)
					return fail(err, MU_EINVAL, line, "unterminated ' in #SBATCH line");
				p++;
			} else if (c == '"') {
				while (p < end && *p != '"') {
					if (*p == '\\' && p + 1 < end && strchr("\"\\$`", p[1]))
						p++;
					if (o + 2 >= bufn)
						return fail(err, MU_ETOOLONG, line, "#SBATCH line too long");
					buf[o++] = *p++;
				}
				if (p >= end)
					return fail(err, MU_EINVAL, line, "unterminated \" in #SBATCH line");
				p++;
			} else if (c == '\\' && p < end) {
				buf[o++] = *p++;
			} else {
				buf[o++] = c;
			}
		}
		buf[o++] = '\0';
	}
	*nwords = n;
	return 0;
}

/* The words of one directive line as options. */
static int line_options(struct mu_sbatch *sb, char **w, int n, int line, struct mu_error *err)
{
	for (int i = 0; i < n; i++) {
		const char *word = w[i];
		const struct opt *o;
		bool ambiguous;
		int ret;

		if (word[0] != '-' || !word[1]) {
			warn(sb, line, word, "not an option; ignored");
			continue;
		}
		if (word[1] == '-') {
			char name[64];
			const char *eq = strchr(word + 2, '=');
			size_t len = eq ? (size_t)(eq - word - 2) : strlen(word + 2);

			if (len == 0 || len >= sizeof(name))
				return fail(err, MU_EINVAL, line, "malformed option '%.64s'", word);
			memcpy(name, word + 2, len);
			name[len] = '\0';
			o = lookup(name, true, &ambiguous);
			if (ambiguous)
				return fail(err, MU_EINVAL, line, "option '--%.40s' is ambiguous", name);
			if (o) /* the full name: a one-letter prefix must not read as a short option */
				snprintf(name, sizeof(name), "%s", o->pub.name);
			if (!eq && o && o->pub.has_arg) {
				if (i + 1 >= n)
					return fail(err, MU_EINVAL, line, "option '--%s' needs a value",
						    o->pub.name);
				ret = mu_sbatch_option(sb, name, w[++i], line, err);
			} else {
				ret = mu_sbatch_option(sb, name, eq ? eq + 1 : NULL, line, err);
			}
		} else {
			char name[2] = { word[1], '\0' };
			o = lookup(name, false, &ambiguous);
			if (o && o->pub.has_arg) {
				const char *v = word[2] ? word + 2 : NULL;
				if (v && *v == '=') /* "-N=2" is what some scripts write */
					v++;
				if (!v) {
					if (i + 1 >= n)
						return fail(err, MU_EINVAL, line,
							    "option '-%c' needs a value", word[1]);
					v = w[++i];
				}
				ret = mu_sbatch_option(sb, name, v, line, err);
			} else if (o && word[2]) {
				return fail(err, MU_EINVAL, line, "option '-%c' takes no value ('%.32s')",
					    word[1], word);
			} else {
				ret = mu_sbatch_option(sb, name, NULL, line, err);
			}
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

int mu_sbatch_parse_script(struct mu_sbatch *sb, const char *script, size_t len,
			   struct mu_error *err)
{
	const char *p = script, *end = script + len;
	char *buf = NULL, **words = NULL;
	int line = 0, ret = 0;

	if (len > MU_SBATCH_MAX_SCRIPT)
		return fail(err, MU_ETOOBIG, 0, "the script is larger than %d bytes",
			    MU_SBATCH_MAX_SCRIPT);
	if (memchr(script, '\0', len))
		return fail(err, MU_EINVAL, 0, "the script contains a NUL byte");
	buf = mu_malloc(MAX_VALUE * 2);
	words = mu_malloc(sizeof(*words) * MAX_WORDS);
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end;
		const char *q = p;
		int nw = 0;

		line++;
		while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q < le && *q != '#')
			break; /* the first command: directives end here, as in sbatch */
		if (le - p >= 7 && !memcmp(p, "#SBATCH", 7) &&
		    (le - p == 7 || p[7] == ' ' || p[7] == '\t' || p[7] == '\r')) {
			if (le - p > MAX_VALUE) {
				ret = fail(err, MU_ETOOLONG, line, "#SBATCH line longer than %d bytes",
					   MAX_VALUE);
				goto out;
			}
			ret = split(p + 7, le, buf, MAX_VALUE * 2, words, &nw, line, err);
			if (ret == 0)
				ret = line_options(sb, words, nw, line, err);
			if (ret < 0)
				goto out;
		}
		p = eol ? eol + 1 : end;
	}
	ret = derive(sb, err);
out:
	mu_free(words);
	mu_free(buf);
	return ret;
}

int mu_sbatch_expand(const char *pattern, const struct mu_sbatch_subst *v, char *out, size_t len)
{
	size_t o = 0;
	char tmp[300];

	if (!len)
		return MU_ETOOLONG;
	for (const char *p = pattern; *p; p++) {
		const char *s = tmp;
		int width = 0;
		const char *q = p + 1;

		if (*p != '%') {
			if (o + 1 >= len)
				goto cut;
			out[o++] = *p;
			continue;
		}
		if (isdigit((unsigned char)*q)) {
			width = *q - '0';
			q++;
		}
		switch (*q) {
		case '%':
			snprintf(tmp, sizeof(tmp), "%%");
			break;
		case 'j':
			snprintf(tmp, sizeof(tmp), "%0*" PRId64, width, v->job_id);
			break;
		case 'A':
			snprintf(tmp, sizeof(tmp), "%0*" PRId64, width,
				 v->array_job_id > 0 ? v->array_job_id : v->job_id);
			break;
		case 'a':
			if (v->array_job_id > 0)
				snprintf(tmp, sizeof(tmp), "%0*" PRId64, width, v->array_task_id);
			else
				snprintf(tmp, sizeof(tmp), "%0*u", width, 4294967294u);
			break;
		case 'x':
			snprintf(tmp, sizeof(tmp), "%s", v->job_name ? v->job_name : "");
			break;
		case 'N':
			snprintf(tmp, sizeof(tmp), "%s", v->node ? v->node : "");
			break;
		case 'n':
			snprintf(tmp, sizeof(tmp), "%0*d", width, v->node_rank);
			break;
		case 't':
			snprintf(tmp, sizeof(tmp), "%0*d", width, v->task_rank);
			break;
		case 'u':
			snprintf(tmp, sizeof(tmp), "%s", v->user ? v->user : "");
			break;
		default:
			/* unknown: keep "%" and go on with the next byte as text */
			tmp[0] = '%';
			tmp[1] = '\0';
			q = p;
			break;
		}
		for (; *s; s++) {
			if (o + 1 >= len)
				goto cut;
			out[o++] = *s;
		}
		p = q;
	}
	out[o] = '\0';
	return 0;
cut:
	out[o] = '\0';
	return MU_ETOOLONG;
}
