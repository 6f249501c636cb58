#include "config.h"

#include "alloc.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int mu_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return MU_EINVAL;
}

/* Parses a decimal integer with an optional suffix; the suffix is returned. */
static int parse_num_suffix(const char *s, long long *num, const char **suffix)
{
	char *end;
	long long v;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s) && *s != '-')
		return MU_EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s)
		return MU_EINVAL;
	*num = v;
	*suffix = end;
	return 0;
}

int mu_parse_int(const char *s, long long *out)
{
	const char *sfx;
	if (parse_num_suffix(s, out, &sfx) || *sfx)
		return MU_EINVAL;
	return 0;
}

static int scale(long long v, long long mul, long long *out)
{
	if (v < 0 || (mul && v > LLONG_MAX / mul))
		return MU_EINVAL;
	*out = v * mul;
	return 0;
}

int mu_parse_size(const char *s, long long *out)
{
	const char *sfx;
	long long v, mul;

	if (parse_num_suffix(s, &v, &sfx))
		return MU_EINVAL;
	if (!*sfx)
		mul = 1;
	else if (!strcasecmp(sfx, "k") || !strcasecmp(sfx, "kib") || !strcasecmp(sfx, "kb"))
		mul = 1024;
	else if (!strcasecmp(sfx, "m") || !strcasecmp(sfx, "mib") || !strcasecmp(sfx, "mb"))
		mul = 1024 * 1024;
	else if (!strcasecmp(sfx, "g") || !strcasecmp(sfx, "gib") || !strcasecmp(sfx, "gb"))
		mul = 1024LL * 1024 * 1024;
	else
		return MU_EINVAL;
	return scale(v, mul, out);
}

int mu_parse_duration_ms(const char *s, long long *out)
{
	const char *sfx;
	long long v, mul;

	if (parse_num_suffix(s, &v, &sfx))
		return MU_EINVAL;
	if (!*sfx || !strcmp(sfx, "s"))
		mul = 1000;
	else if (!strcmp(sfx, "ms"))
		mul = 1;
	else if (!strcmp(sfx, "m"))
		mul = 60 * 1000;
	else if (!strcmp(sfx, "h"))
		mul = 3600 * 1000;
	else if (!strcmp(sfx, "d"))
		mul = 24LL * 3600 * 1000;
	else
		return MU_EINVAL;
	return scale(v, mul, out);
}

static int set_value(const struct mu_opt *o, const char *val, const char *origin, struct mu_error *err)
{
	int rc = 0;
	bool b;

	switch (o->type) {
	case MU_OPT_STR: {
		char **dst = o->dst;
		mu_free(*dst);
		*dst = mu_strdup(val);
		return 0;
	}
	case MU_OPT_INT:
		rc = mu_parse_int(val, o->dst);
		break;
	case MU_OPT_BOOL:
		rc = mu_parse_bool(val, &b);
		if (!rc)
			*(bool *)o->dst = b;
		break;
	case MU_OPT_SIZE:
		rc = mu_parse_size(val, o->dst);
		break;
	case MU_OPT_DURATION:
		rc = mu_parse_duration_ms(val, o->dst);
		break;
	}
	if (rc)
		return mu_error_set(err, MU_EINVAL, o->name, "invalid value '%s' for --%s (from %s)", val,
				    o->name, origin);
	return 0;
}

static const char *type_hint(enum mu_opt_type t)
{
	switch (t) {
	case MU_OPT_STR: return "STR";
	case MU_OPT_INT: return "N";
	case MU_OPT_BOOL: return "BOOL";
	case MU_OPT_SIZE: return "BYTES";
	case MU_OPT_DURATION: return "DURATION";
	}
	return "";
}

void mu_config_usage(FILE *out, const struct mu_opt *opts, size_t nopts, const char *prog,
		     const char *summary)
{
	fprintf(out, "usage: %s [options]\n%s\n\noptions (flag, environment variable, default):\n", prog,
		summary ? summary : "");
	for (size_t i = 0; i < nopts; i++) {
		const struct mu_opt *o = &opts[i];
		char flag[96];
		snprintf(flag, sizeof(flag), "--%s %s", o->name, o->type == MU_OPT_BOOL ? "" : type_hint(o->type));
		fprintf(out, "  %-34s %s\n", flag, o->help);
		fprintf(out, "  %-34s env %s, default \"%s\"\n", "", o->env ? o->env : "-", o->def ? o->def : "");
	}
	fprintf(out, "  %-34s show this help\n", "--help");
}

int mu_config_parse(const struct mu_opt *opts, size_t nopts, int argc, char **argv,
		    const char *summary, struct mu_error *err)
{
	const char *prog = argc > 0 ? argv[0] : "muster";
	int i, rc;

	for (size_t k = 0; k < nopts; k++) {
		const struct mu_opt *o = &opts[k];
		if (o->type == MU_OPT_STR)
			*(char **)o->dst = NULL;
		rc = set_value(o, o->def ? o->def : (o->type == MU_OPT_STR ? "" : o->type == MU_OPT_BOOL ? "false" : "0"),
			       "default", err);
		if (rc)
			return rc;
	}
	for (size_t k = 0; k < nopts; k++) {
		const struct mu_opt *o = &opts[k];
		const char *v = o->env ? getenv(o->env) : NULL;
		if (v && (rc = set_value(o, v, o->env, err)))
			goto fail;
	}
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *eq, *val = NULL;
		const struct mu_opt *o = NULL;
		size_t len;

		if (strcmp(a, "--") == 0)
			return i + 1;
		if (strncmp(a, "--", 2) != 0)
			return i;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			mu_config_usage(stdout, opts, nopts, prog, summary);
			exit(0);
		}
		a += 2;
		eq = strchr(a, '=');
		len = eq ? (size_t)(eq - a) : strlen(a);
		for (size_t k = 0; k < nopts; k++)
			if (strlen(opts[k].name) == len && strncmp(opts[k].name, a, len) == 0)
				o = &opts[k];
		if (!o) {
			rc = mu_error_set(err, MU_EINVAL, "", "unknown option --%.*s", (int)len, a);
			goto fail;
		}
		if (eq)
			val = eq + 1;
		else if (o->type == MU_OPT_BOOL)
			val = "true";
		else if (i + 1 < argc)
			val = argv[++i];
		else {
			rc = mu_error_set(err, MU_EINVAL, o->name, "option --%s needs a value", o->name);
			goto fail;
		}
		if ((rc = set_value(o, val, "command line", err)))
			goto fail;
	}
	return argc;
fail:
	if (err)
		fprintf(stderr, "%s: %s (see --help)\n", prog, err->msg);
	return rc;
}

void mu_config_release(const struct mu_opt *opts, size_t nopts)
{
	for (size_t k = 0; k < nopts; k++) {
		if (opts[k].type == MU_OPT_STR) {
			mu_free(*(char **)opts[k].dst);
			*(char **)opts[k].dst = NULL;
		}
	}
}
