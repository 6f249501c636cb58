#include "codec_admin.h"

#include <string.h>

#include "duration.h"

/* Characters of a UTF-8 string whose bytes jansson already validated. */
static size_t utf8_chars(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			n++;
	return n;
}

static bool utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned char c = s[i];
		size_t need;
		unsigned cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xE0) == 0xC0) {
			need = 1;
			cp = c & 0x1F;
		} else if ((c & 0xF0) == 0xE0) {
			need = 2;
			cp = c & 0x0F;
		} else if ((c & 0xF8) == 0xF0) {
			need = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (i + need >= len)
			return false;
		for (size_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if ((need == 1 && cp < 0x80) || (need == 2 && cp < 0x800) ||
		    (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += need + 1;
	}
	return true;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

bool codec_admin_valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > CODEC_ADMIN_NAME_MAX || !name_char(s[0]) || s[0] == '_' || s[0] == '.' ||
	    s[0] == '-')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!name_char(s[i]))
			return false;
	return true;
}

bool codec_admin_valid_text(const char *s, size_t max_chars)
{
	size_t n = strlen(s);
	return utf8_valid((const unsigned char *)s, n) && utf8_chars(s, n) <= max_chars;
}

bool codec_admin_valid_path(const char *s, size_t len)
{
	char seg[CODEC_ADMIN_NAME_MAX + 1];
	size_t i = 0;

	if (len < 4 || strncmp(s, "root", 4) != 0 || (len > 4 && s[4] != '/'))
		return false;
	while (i < len) {
		size_t j = i;
		while (j < len && s[j] != '/')
			j++;
		if (j - i == 0 || j - i > CODEC_ADMIN_NAME_MAX)
			return false;
		memcpy(seg, s + i, j - i);
		seg[j - i] = '\0';
		if (!codec_admin_valid_name(seg))
			return false;
		i = j + 1;
		if (j + 1 == len) /* trailing slash */
			return false;
	}
	return true;
}

bool codec_admin_valid_user(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > CODEC_ADMIN_USER_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '@' || c == '-'))
			return false;
	}
	return true;
}

/* Reads exactly `n` digits at *p into *v. */
static bool digits(const char **p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return false;
		*v = *v * 10 + (c - '0');
	}
	*p += n;
	return true;
}

bool codec_admin_valid_time(const char *s)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	const char *p = s;
	int y, mo, d, h, mi, se, zh, zm;

	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
	    !digits(&p, 2, &d) || (*p != 'T' && *p != 't'))
		return false;
	p++;
	if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' ||
	    !digits(&p, 2, &se))
		return false;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) || h > 23 ||
	    mi > 59 || se > 59)
		return false;
	if (*p == '.') {
		int nd = 0;
		for (p++; *p >= '0' && *p <= '9'; p++)
			nd++;
		if (nd < 1 || nd > 9)
			return false;
	}
	if (*p == 'Z' || *p == 'z')
		return p[1] == '\0';
	if (*p != '+' && *p != '-')
		return false;
	p++;
	if (!digits(&p, 2, &zh) || *p++ != ':' || !digits(&p, 2, &zm) || zh > 23 || zm > 59)
		return false;
	return *p == '\0';
}

/* Every key of `obj` must be in `allowed` (NULL-terminated). */
static int check_keys(const json_t *obj, const char *const *allowed, struct mu_error *err)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v) {
		bool ok = false;
		for (const char *const *a = allowed; *a; a++)
			if (strcmp(*a, key) == 0) {
				ok = true;
				break;
			}
		if (!ok)
			return mu_error_set(err, MU_EUNKNOWNFIELD, key, "unknown field \"%.64s\"", key);
	}
	return 0;
}

static int need_object(const json_t *body, struct mu_error *err)
{
	if (!body || !json_is_object(body))
		return mu_error_set(err, MU_ETYPE, "", "the body must be a JSON object");
	return 0;
}

/*
 * A string field. Absent: *out untouched, *present false. JSON null is the
 * same as absent (docs/api.md), except for `nullable` fields where it is a
 * value: *out = NULL.
 */
static int get_str(const json_t *obj, const char *key, size_t max_chars, bool nullable,
		   const char **out, bool *present, struct mu_error *err)
{
	json_t *v = json_object_get(obj, key);
	const char *s;
	size_t len;

	if (v && json_is_null(v) && !nullable)
		v = NULL;
	if (present)
		*present = v != NULL;
	if (!v)
		return 0;
	if (json_is_null(v)) {
		*out = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return mu_error_set(err, MU_ETYPE, key, "must be a string%s", nullable ? " or null" : "");
	s = json_string_value(v);
	len = json_string_length(v);
	if (strlen(s) != len)
		return mu_error_set(err, MU_EUTF8, key, "must not contain NUL bytes");
	if (!utf8_valid((const unsigned char *)s, len))
		return mu_error_set(err, MU_EUTF8, key, "must be valid UTF-8");
	if (utf8_chars(s, len) > max_chars)
		return mu_error_set(err, MU_ETOOLONG, key, "must be at most %zu characters", max_chars);
	*out = s;
	return 0;
}

/*
 * An integer field in [min, max]. JSON null is absent, or with `nullable`
 * the value "no limit" (*out = -1). With `slurm`, a string is read as
 * Slurm's --time (seconds out).
 */
static int get_int(const json_t *obj, const char *key, int64_t min, int64_t max, bool nullable,
		   bool slurm, int64_t *out, bool *present, struct mu_error *err)
{
	json_t *v = json_object_get(obj, key);
	int64_t x;

	if (v && json_is_null(v) && !nullable)
		v = NULL;
	if (present)
		*present = v != NULL;
	if (!v)
		return 0;
	if (json_is_null(v)) {
		*out = -1;
		return 0;
	}
	if (slurm && json_is_string(v)) {
		const char *s = json_string_value(v);
		int ret;
		if (strlen(s) != json_string_length(v))
			return mu_error_set(err, MU_EUTF8, key, "must not contain NUL bytes");
		ret = mu_duration_parse_slurm(s, &x);
		if (ret == MU_ERANGE)
			return mu_error_set(err, MU_ERANGE, key, "time limit too large");
		if (ret < 0)
			return mu_error_set(err, MU_EINVAL, key,
					    "must be seconds or a Slurm time (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S)");
	} else if (json_is_integer(v)) {
		x = json_integer_value(v);
	} else {
		return mu_error_set(err, MU_ETYPE, key, "must be an integer%s%s",
				    slurm ? " or a Slurm time string" : "", nullable ? " or null" : "");
	}
	if (x < min || x > max)
		return mu_error_set(err, MU_ERANGE, key, "must be between %lld and %lld", (long long)min,
				    (long long)max);
	*out = x;
	return 0;
}

static int get_bool(const json_t *obj, const char *key, bool *out, bool *present,
		    struct mu_error *err)
{
	json_t *v = json_object_get(obj, key);

	if (v && json_is_null(v))
		v = NULL; /* null is absent */
	if (present)
		*present = v != NULL;
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return mu_error_set(err, MU_ETYPE, key, "must be true or false");
	*out = json_is_true(v);
	return 0;
}

static int get_name(const json_t *obj, const char *key, bool required, const char **out,
		    struct mu_error *err)
{
	bool present;
	int ret = get_str(obj, key, CODEC_ADMIN_NAME_MAX, false, out, &present, err);

	if (ret < 0)
		return ret;
	if (!present)
		return required ? mu_error_set(err, MU_EMISSING, key, "is required") : 0;
	if (!codec_admin_valid_name(*out))
		return mu_error_set(err, MU_EINVAL, key,
				    "must match ^[a-z0-9][a-z0-9_.-]{0,62}$ (lower case letters, digits, _ . -)");
	return 0;
}

/* unix_account: a portable Unix user name (useradd's default rule), or ""
 * or null for none. */
static int get_account(const json_t *body, const char **out, bool *present, struct mu_error *err)
{
	const char *s = NULL;
	int ret = get_str(body, "unix_account", 32, true, &s, present, err);

	if (ret < 0)
		return ret;
	if (!s) {
		if (present && *present)
			*out = "";
		return 0;
	}
	for (const char *p = s; *p; p++) {
		bool ok = (*p >= 'a' && *p <= 'z') || *p == '_' ||
			  (p > s && ((*p >= '0' && *p <= '9') || *p == '.' || *p == '-'));
		if (!ok)
			return mu_error_set(err, MU_EINVAL, "unix_account",
					    "must match ^[a-z_][a-z0-9_.-]{0,31}$ (a Unix user name), or be"
					    " \"\" for none");
	}
	*out = s;
	return 0;
}

int codec_tenant_new_decode(const json_t *body, struct store_tenant_new *out, struct mu_error *err)
{
	static const char *const keys[] = { "name", "parent", "shares", "description", "unix_account",
					    NULL };
	int ret;

	memset(out, 0, sizeof(*out));
	out->parent = "root";
	out->shares = 1;
	out->description = "";
	out->unix_account = "";
	if ((ret = need_object(body, err)) < 0 || (ret = check_keys(body, keys, err)) < 0 ||
	    (ret = get_name(body, "name", true, &out->name, err)) < 0 ||
	    (ret = get_name(body, "parent", false, &out->parent, err)) < 0 ||
	    (ret = get_int(body, "shares", 0, CODEC_ADMIN_SHARES_MAX, false, false, &out->shares, NULL,
			   err)) < 0 ||
	    (ret = get_str(body, "description", CODEC_ADMIN_DESCRIPTION_MAX, false, &out->description,
			   NULL, err)) < 0 ||
	    (ret = get_account(body, &out->unix_account, NULL, err)) < 0)
		return ret;
	return 0;
}

int codec_tenant_patch_decode(const json_t *body, struct store_tenant_patch *out,
			      struct mu_error *err)
{
	static const char *const keys[] = { "parent", "shares", "description", "unix_account", NULL };
	bool present;
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = need_object(body, err)) < 0 || (ret = check_keys(body, keys, err)) < 0)
		return ret;
	if ((ret = get_int(body, "shares", 0, CODEC_ADMIN_SHARES_MAX, false, false, &out->shares,
			   &present, err)) < 0)
		return ret;
	if (present)
		out->set |= STORE_TENANT_SET_SHARES;
	if ((ret = get_str(body, "description", CODEC_ADMIN_DESCRIPTION_MAX, false, &out->description,
			   &present, err)) < 0)
		return ret;
	if (present)
		out->set |= STORE_TENANT_SET_DESCRIPTION;
	if ((ret = get_account(body, &out->unix_account, &present, err)) < 0)
		return ret;
	if (present)
		out->set |= STORE_TENANT_SET_UNIX_ACCOUNT;
	if ((ret = get_name(body, "parent", false, &out->parent, err)) < 0)
		return ret;
	if (out->parent)
		out->set |= STORE_TENANT_SET_PARENT;
	return 0;
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *int_or_null(int64_t v)
{
	return v < 0 ? json_null() : json_integer(v);
}

json_t *codec_tenant_encode(const struct store_tenant *t)
{
	return json_pack("{s:s, s:o, s:s, s:I, s:s, s:s, s:o, s:o}", "name", t->name, "parent",
			 str_or_null(t->parent), "path", t->path, "shares", (json_int_t)t->shares,
			 "description", t->description ? t->description : "", "unix_account",
			 t->unix_account ? t->unix_account : "", "created_at",
			 str_or_null(t->created_at), "updated_at", str_or_null(t->updated_at));
}

int codec_quota_decode(const json_t *body, struct store_quota *out, struct mu_error *err)
{
	static const char *const keys[] = { "gpu_model",        "guaranteed_gpus",  "max_gpus",
					    "max_running_jobs", "max_pending_jobs", "max_time_limit",
					    NULL };
	int ret;

	memset(out, 0, sizeof(*out));
	out->gpu_model = "";
	out->max_gpus = out->max_running_jobs = out->max_pending_jobs = out->max_time_limit = -1;
	if ((ret = need_object(body, err)) < 0 || (ret = check_keys(body, keys, err)) < 0 ||
	    (ret = get_str(body, "gpu_model", CODEC_ADMIN_GPU_MODEL_MAX, false, &out->gpu_model, NULL,
			   err)) < 0 ||
	    (ret = get_int(body, "guaranteed_gpus", 0, CODEC_ADMIN_GPUS_MAX, false, false,
			   &out->guaranteed_gpus, NULL, err)) < 0 ||
	    (ret = get_int(body, "max_gpus", 0, CODEC_ADMIN_GPUS_MAX, true, false, &out->max_gpus, NULL,
			   err)) < 0 ||
	    (ret = get_int(body, "max_running_jobs", 0, CODEC_ADMIN_INT32_MAX, true, false,
			   &out->max_running_jobs, NULL, err)) < 0 ||
	    (ret = get_int(body, "max_pending_jobs", 0, CODEC_ADMIN_INT32_MAX, true, false,
			   &out->max_pending_jobs, NULL, err)) < 0 ||
	    (ret = get_int(body, "max_time_limit", 1, CODEC_ADMIN_INT32_MAX, true, true,
			   &out->max_time_limit, NULL, err)) < 0)
		return ret;
	if (out->max_gpus >= 0 && out->max_gpus < out->guaranteed_gpus)
		return mu_error_set(err, MU_ERANGE, "max_gpus",
				    "must be at least guaranteed_gpus (%lld)",
				    (long long)out->guaranteed_gpus);
	return 0;
}

json_t *codec_quota_encode(const struct store_quota *q)
{
	return json_pack("{s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:o}", "tenant", q->tenant ? q->tenant : "",
			 "gpu_model", q->gpu_model ? q->gpu_model : "", "guaranteed_gpus",
			 (json_int_t)q->guaranteed_gpus, "max_gpus", int_or_null(q->max_gpus),
			 "max_running_jobs", int_or_null(q->max_running_jobs), "max_pending_jobs",
			 int_or_null(q->max_pending_jobs), "max_time_limit",
			 int_or_null(q->max_time_limit), "updated_at", str_or_null(q->updated_at));
}

/* The fields of a priority class but its name; `set` gets what was present. */
static int pclass_fields(const json_t *body, unsigned *set, struct store_pclass *out,
			 struct mu_error *err)
{
	bool present;
	int ret;

	*set = 0;
	if ((ret = get_int(body, "priority", -1000000000, 1000000000, false, false, &out->priority,
			   &present, err)) < 0)
		return ret;
	*set |= present ? STORE_PCLASS_SET_PRIORITY : 0;
	if ((ret = get_bool(body, "preemptible", &out->preemptible, &present, err)) < 0)
		return ret;
	*set |= present ? STORE_PCLASS_SET_PREEMPTIBLE : 0;
	if ((ret = get_int(body, "default_time_limit", 1, CODEC_ADMIN_INT32_MAX, false, true,
			   &out->default_time_limit, &present, err)) < 0)
		return ret;
	*set |= present ? STORE_PCLASS_SET_DEFAULT_TIME_LIMIT : 0;
	if ((ret = get_int(body, "max_time_limit", 1, CODEC_ADMIN_INT32_MAX, true, true,
			   &out->max_time_limit, &present, err)) < 0)
		return ret;
	*set |= present ? STORE_PCLASS_SET_MAX_TIME_LIMIT : 0;
	if ((ret = get_int(body, "grace_period", 0, 86400, false, true, &out->grace_period, &present,
			   err)) < 0)
		return ret;
	*set |= present ? STORE_PCLASS_SET_GRACE_PERIOD : 0;
	if ((ret = get_bool(body, "is_default", &out->is_default, &present, err)) < 0)
		return ret;
	*set |= present ? STORE_PCLASS_SET_IS_DEFAULT : 0;
	if ((ret = get_str(body, "description", CODEC_ADMIN_DESCRIPTION_MAX, false, &out->description,
			   &present, err)) < 0)
		return ret;
	*set |= present ? STORE_PCLASS_SET_DESCRIPTION : 0;
	return 0;
}

int codec_pclass_new_decode(const json_t *body, struct store_pclass *out, struct mu_error *err)
{
	static const char *const keys[] = { "name",           "priority",     "preemptible",
					    "default_time_limit", "max_time_limit", "grace_period",
					    "is_default",     "description",  NULL };
	unsigned set;
	int ret;

	memset(out, 0, sizeof(*out));
	out->preemptible = true;
	out->default_time_limit = 3600;
	out->max_time_limit = -1;
	out->grace_period = 30;
	out->description = "";
	if ((ret = need_object(body, err)) < 0 || (ret = check_keys(body, keys, err)) < 0 ||
	    (ret = get_name(body, "name", true, &out->name, err)) < 0 ||
	    (ret = pclass_fields(body, &set, out, err)) < 0)
		return ret;
	if (!(set & STORE_PCLASS_SET_PRIORITY))
		return mu_error_set(err, MU_EMISSING, "priority", "is required");
	if (out->max_time_limit >= 0 && out->default_time_limit > out->max_time_limit)
		return mu_error_set(err, MU_ERANGE, "default_time_limit",
				    "must not exceed max_time_limit (%lld)",
				    (long long)out->max_time_limit);
	return 0;
}

int codec_pclass_patch_decode(const json_t *body, unsigned *set, struct store_pclass *out,
			      struct mu_error *err)
{
	static const char *const keys[] = { "priority",     "preemptible", "default_time_limit",
					    "max_time_limit", "grace_period", "is_default",
					    "description",  NULL };
	int ret;

	memset(out, 0, sizeof(*out));
	*set = 0;
	if ((ret = need_object(body, err)) < 0 || (ret = check_keys(body, keys, err)) < 0 ||
	    (ret = pclass_fields(body, set, out, err)) < 0)
		return ret;
	if ((*set & STORE_PCLASS_SET_DEFAULT_TIME_LIMIT) && (*set & STORE_PCLASS_SET_MAX_TIME_LIMIT) &&
	    out->max_time_limit >= 0 && out->default_time_limit > out->max_time_limit)
		return mu_error_set(err, MU_ERANGE, "default_time_limit",
				    "must not exceed max_time_limit (%lld)",
				    (long long)out->max_time_limit);
	return 0;
}

json_t *codec_pclass_encode(const struct store_pclass *p)
{
	return json_pack("{s:s, s:I, s:b, s:I, s:o, s:I, s:b, s:s, s:o, s:o}", "name", p->name,
			 "priority", (json_int_t)p->priority, "preemptible", p->preemptible,
			 "default_time_limit", (json_int_t)p->default_time_limit, "max_time_limit",
			 int_or_null(p->max_time_limit), "grace_period", (json_int_t)p->grace_period,
			 "is_default", p->is_default, "description",
			 p->description ? p->description : "", "created_at", str_or_null(p->created_at),
			 "updated_at", str_or_null(p->updated_at));
}

int codec_token_new_decode(const json_t *body, struct codec_token_new *out, struct mu_error *err)
{
	static const char *const keys[] = { "name", "role", "tenant", "user", "node", "expires_at",
					    NULL };
	static const char *const roles[] = { "admin", "tenant", "reader", "agent" };
	bool present, role_ok = false;
	int ret;

	memset(out, 0, sizeof(*out));
	out->name = "";
	out->user = "";
	if ((ret = need_object(body, err)) < 0 || (ret = check_keys(body, keys, err)) < 0 ||
	    (ret = get_str(body, "name", CODEC_ADMIN_TOKEN_NAME_MAX, false, &out->name, NULL, err)) < 0 ||
	    (ret = get_str(body, "role", 16, false, &out->role, &present, err)) < 0)
		return ret;
	if (!present)
		return mu_error_set(err, MU_EMISSING, "role", "is required");
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		role_ok |= strcmp(roles[i], out->role) == 0;
	if (!role_ok)
		return mu_error_set(err, MU_EINVAL, "role", "must be admin, tenant, reader or agent");
	if ((ret = get_str(body, "tenant", CODEC_ADMIN_NAME_MAX, true, &out->tenant, NULL, err)) < 0)
		return ret;
	if (out->tenant && !codec_admin_valid_name(out->tenant))
		return mu_error_set(err, MU_EINVAL, "tenant", "is not a valid tenant name");
	if ((ret = get_str(body, "user", CODEC_ADMIN_USER_MAX, false, &out->user, NULL, err)) < 0)
		return ret;
	if (out->user[0] && !codec_admin_valid_user(out->user))
		return mu_error_set(err, MU_EINVAL, "user", "must match ^[A-Za-z0-9_.@-]{1,64}$");
	if ((ret = get_str(body, "node", CODEC_ADMIN_NODE_MAX, true, &out->node, NULL, err)) < 0)
		return ret;
	if (out->node && !out->node[0])
		out->node = NULL;
	if ((ret = get_str(body, "expires_at", 64, true, &out->expires_at, NULL, err)) < 0)
		return ret;
	if (out->expires_at && !codec_admin_valid_time(out->expires_at))
		return mu_error_set(err, MU_EINVAL, "expires_at",
				    "must be an RFC 3339 time such as 2026-12-31T23:59:59Z");
	if (strcmp(out->role, "tenant") == 0 && !out->tenant)
		return mu_error_set(err, MU_EMISSING, "tenant", "a tenant token needs a tenant");
	if ((strcmp(out->role, "admin") == 0 || strcmp(out->role, "agent") == 0) && out->tenant)
		return mu_error_set(err, MU_EINVAL, "tenant", "an %s token has no tenant", out->role);
	if (strcmp(out->role, "agent") == 0 && !out->node)
		return mu_error_set(err, MU_EMISSING, "node", "an agent token needs a node");
	if (strcmp(out->role, "agent") != 0 && out->node)
		return mu_error_set(err, MU_EINVAL, "node", "only agent tokens have a node");
	return 0;
}

int codec_token_new_authorize(struct codec_token_new *in, bool caller_admin,
			      const char *caller_tenant, const char *caller_user,
			      struct mu_error *err)
{
	if (caller_admin)
		return 0;
	if (!caller_user)
		caller_user = "";
	if (!in->user || !in->user[0])
		in->user = caller_user;
	else if (strcmp(in->user, caller_user) != 0)
		return mu_error_set(err, MU_EFORBIDDEN, "user",
				    "a token may create tokens only for its own user");
	/* A tenant-less (global) token would escape the caller's subtree. */
	if (strcmp(in->role, "tenant") != 0 && strcmp(in->role, "reader") != 0)
		return mu_error_set(err, MU_EFORBIDDEN, "role",
				    "a tenant token may create only tenant and reader tokens");
	if (!in->tenant)
		in->tenant = caller_tenant;
	if (!in->tenant)
		return mu_error_set(err, MU_EFORBIDDEN, "tenant", "this token is not bound to a tenant");
	return 0;
}

json_t *codec_token_encode(const struct store_token *t, const char *secret)
{
	json_t *o = json_pack("{s:I, s:s, s:s, s:o, s:s, s:o, s:s, s:o, s:o, s:o}", "id",
			      (json_int_t)t->id, "name", t->name ? t->name : "", "role", t->role,
			      "tenant", str_or_null(t->tenant), "user", t->user ? t->user : "",
			      "node", str_or_null(t->node), "prefix", t->prefix ? t->prefix : "",
			      "created_at", str_or_null(t->created_at), "expires_at",
			      str_or_null(t->expires_at), "last_used_at", str_or_null(t->last_used_at));
	if (secret)
		json_object_set_new(o, "token", json_string(secret));
	return o;
}

int codec_drain_decode(const json_t *body, const char **reason, struct mu_error *err)
{
	static const char *const keys[] = { "reason", NULL };
	int ret;

	*reason = "";
	if (!body)
		return 0;
	if ((ret = need_object(body, err)) < 0 || (ret = check_keys(body, keys, err)) < 0 ||
	    (ret = get_str(body, "reason", CODEC_ADMIN_REASON_MAX, false, reason, NULL, err)) < 0)
		return ret;
	return 0;
}

json_t *codec_node_encode(const struct store_node *n)
{
	json_t *labels = NULL, *gpus = json_array();

	if (n->labels_json)
		labels = json_loads(n->labels_json, JSON_DECODE_ANY, NULL);
	if (!labels || !json_is_object(labels)) {
		json_decref(labels);
		labels = json_object();
	}
	for (size_t i = 0; i < n->n_gpus; i++) {
		const struct store_gpu *g = &n->gpus[i];
		json_array_append_new(
			gpus, json_pack("{s:I, s:s, s:s, s:I, s:b, s:s, s:b, s:I, s:I, s:I}", "index",
					(json_int_t)g->index, "uuid", g->uuid ? g->uuid : "", "model",
					g->model ? g->model : "", "memory_mb", (json_int_t)g->memory_mb,
					"healthy", g->healthy, "health_reason",
					g->health_reason ? g->health_reason : "", "allocated", g->allocated,
					"utilization", (json_int_t)g->utilization, "temperature",
					(json_int_t)g->temperature, "memory_used_mb",
					(json_int_t)g->memory_used_mb));
	}
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:o, s:o, s:s, s:o}", "name", n->name,
			 "address", n->address ? n->address : "", "topology",
			 n->topology ? n->topology : "", "gpu_model", n->gpu_model ? n->gpu_model : "",
			 "gpu_count", (json_int_t)n->gpu_count, "state", n->state, "drain_reason",
			 n->drain_reason ? n->drain_reason : "", "labels", labels, "last_heartbeat",
			 str_or_null(n->last_heartbeat), "agent_version",
			 n->agent_version ? n->agent_version : "", "gpus", gpus);
}

int codec_cursor_check(enum codec_cursor kind, const char *cursor, struct mu_error *err)
{
	const char *bar;
	bool ok = true;

	if (!cursor)
		return 0;
	switch (kind) {
	case CODEC_CURSOR_TENANTS:
		ok = strlen(cursor) <= 4096 && codec_admin_valid_path(cursor, strlen(cursor));
		break;
	case CODEC_CURSOR_PCLASSES:
		ok = codec_admin_valid_name(cursor);
		break;
	case CODEC_CURSOR_QUOTAS:
		bar = strchr(cursor, '|');
		ok = bar && (size_t)(bar - cursor) <= 4096 &&
		     codec_admin_valid_path(cursor, (size_t)(bar - cursor)) &&
		     codec_admin_valid_text(bar + 1, CODEC_ADMIN_GPU_MODEL_MAX);
		break;
	case CODEC_CURSOR_NODES:
		ok = codec_admin_valid_text(cursor, 512);
		break;
	}
	return ok ? 0 : mu_error_set(err, MU_EINVAL, "cursor", "not a cursor this server made");
}

json_t *codec_page_encode(json_t *items, const char *next_cursor)
{
	return json_pack("{s:o, s:o}", "items", items, "next_cursor", str_or_null(next_cursor));
}

int codec_limit_range(long long v, const char *field, int *limit, struct mu_error *err)
{
	*limit = CODEC_LIMIT_DEFAULT;
	if (v < 1 || v > CODEC_LIMIT_MAX)
		return mu_error_set(err, MU_ERANGE, field, "must be an integer from 1 to %d", CODEC_LIMIT_MAX);
	*limit = (int)v;
	return 0;
}

int codec_limit_decode(const char *s, int *limit, struct mu_error *err)
{
	long v = 0;

	*limit = CODEC_LIMIT_DEFAULT;
	if (!s)
		return 0;
	if (!*s)
		return mu_error_set(err, MU_ETYPE, "limit", "must be an integer from 1 to %d", CODEC_LIMIT_MAX);
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return mu_error_set(err, MU_ETYPE, "limit", "must be an integer from 1 to %d",
					    CODEC_LIMIT_MAX);
		if (v <= 100000)
			v = v * 10 + (*p - '0');
	}
	return codec_limit_range(v, "limit", limit, err);
}
