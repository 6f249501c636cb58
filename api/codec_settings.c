/* codec_settings.c - see codec_settings.h. */
#include "codec_settings.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static bool level_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 32)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '-'))
			return false;
	return true;
}

int codec_settings_check(const struct store_setting *s, const json_t *v, struct mu_error *err)
{
	size_t i, k;
	json_t *item;
	double x;

	switch (s->type) {
	case MU_SET_INT:
		if (!json_is_integer(v))
			return mu_error_set(err, MU_ETYPE, s->name, "must be an integer");
		x = (double)json_integer_value(v);
		break;
	case MU_SET_NUM:
		if (!json_is_number(v))
			return mu_error_set(err, MU_ETYPE, s->name, "must be a number");
		x = json_number_value(v);
		if (!isfinite(x))
			return mu_error_set(err, MU_ERANGE, s->name, "must be finite");
		break;
	case MU_SET_BOOL:
		if (!json_is_boolean(v))
			return mu_error_set(err, MU_ETYPE, s->name, "must be true or false");
		return 0;
	case MU_SET_LEVELS:
		if (!json_is_array(v))
			return mu_error_set(err, MU_ETYPE, s->name, "must be an array of level names");
		if (json_array_size(v) < (size_t)s->min || json_array_size(v) > (size_t)s->max)
			return mu_error_set(err, MU_ERANGE, s->name, "must have %.0f..%.0f levels", s->min,
					    s->max);
		json_array_foreach(v, i, item) {
			if (!json_is_string(item) || !level_ok(json_string_value(item)))
				return mu_error_set(err, MU_EINVAL, s->name,
						    "level names match ^[a-z0-9_-]{1,32}$");
			for (k = 0; k < i; k++)
				if (!strcmp(json_string_value(json_array_get(v, k)), json_string_value(item)))
					return mu_error_set(err, MU_EINVAL, s->name, "level %s twice",
							    json_string_value(item));
		}
		return 0;
	default:
		return mu_error_set(err, MU_EINTERNAL, s->name, "unknown setting type");
	}
	if (x < s->min || x > s->max)
		return mu_error_set(err, MU_ERANGE, s->name, "must be between %.0f and %.0f", s->min,
				    s->max);
	return 0;
}

void codec_settings_release(const char **names, char **values, size_t n)
{
	for (size_t i = 0; values && i < n; i++)
		free(values[i]);
	mu_free(values);
	mu_free(names);
}

int codec_settings_decode(const json_t *body, const char ***names, char ***values, size_t *n,
			  struct mu_error *err)
{
	const char *k;
	json_t *v;
	size_t m = 0;
	int ret;

	*names = NULL;
	*values = NULL;
	*n = 0;
	if (!json_is_object(body))
		return mu_error_set(err, MU_ETYPE, "", "the body must be a JSON object");
	if (!json_object_size(body))
		return mu_error_set(err, MU_EINVAL, "", "nothing to change");
	json_object_foreach((json_t *)body, k, v) {
		const struct store_setting *s = store_settings_find(k);

		if (!s)
			return mu_error_set(err, MU_EUNKNOWNFIELD, k,
					    "not a setting (GET /v1/settings lists them)");
		ret = codec_settings_check(s, v, err);
		if (ret < 0)
			return ret;
	}
	*names = mu_calloc(json_object_size(body) + 1, sizeof(**names));
	*values = mu_calloc(json_object_size(body) + 1, sizeof(**values));
	json_object_foreach((json_t *)body, k, v) {
		(*names)[m] = store_settings_find(k)->name; /* static */
		(*values)[m++] = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	}
	*n = m;
	return 0;
}

json_t *codec_settings_encode(const char *const *values)
{
	size_t n;
	const struct store_setting *t = store_settings_table(&n);
	json_t *o = json_object();

	for (size_t i = 0; i < n; i++) {
		json_t *v = json_loads(values[i], JSON_DECODE_ANY, NULL);

		json_object_set_new(o, t[i].name, v ? v : json_loads(t[i].default_json, JSON_DECODE_ANY, NULL));
	}
	return o;
}
