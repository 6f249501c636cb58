/* jv.c - see jv.h. */
#include "jv.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool jv_utf8_valid(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i];
		size_t n;
		unsigned cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (len - i <= n)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

size_t jv_utf8_chars(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return n;
}

int jv_fail(struct mu_error *err, int code, const char *prefix, const char *key, const char *fmt,
	    ...)
{
	va_list ap;

	va_start(ap, fmt);
	mu_error_vset(err, code, "", fmt, ap);
	va_end(ap);
	if (err)
		snprintf(err->field, sizeof(err->field), "%s%s", prefix ? prefix : "", key ? key : "");
	return code;
}

/* Nesting depth outside strings; jansson's own limit is far above ours. */
static bool depth_ok(const char *s, size_t len)
{
	int depth = 0;
	bool in_str = false;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '{' || c == '[') {
			if (++depth > JV_MAX_DEPTH)
				return false;
		} else if (c == '}' || c == ']') {
			depth--;
		}
	}
	return true;
}

int jv_parse(const char *buf, size_t len, json_t **out, struct mu_error *err)
{
	json_error_t je;
	json_t *v;

	*out = NULL;
	if (!jv_utf8_valid(buf, len))
		return mu_error_set(err, MU_EUTF8, "", "the body is not valid UTF-8");
	if (memchr(buf, '\0', len))
		return mu_error_set(err, MU_EJSON, "", "the body contains a NUL byte");
	if (!depth_ok(buf, len))
		return mu_error_set(err, MU_EJSON, "", "JSON nested deeper than %d levels",
				    JV_MAX_DEPTH);
	v = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (!v) {
		if (strstr(je.text, "too big"))
			return mu_error_set(err, MU_ERANGE, "", "number too large at line %d column %d",
					    je.line, je.column);
		return mu_error_set(err, MU_EJSON, "", "malformed JSON at line %d column %d: %s",
				    je.line, je.column, je.text);
	}
	*out = v;
	return 0;
}

static size_t skip_ws(const char *s, size_t len, size_t i)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* The end of the value starting at s[i] (a string, an object or array with
 * its strings skipped, or a scalar up to the next delimiter); 0 when it
 * runs past the end. Structure is not checked: parsing the value is. */
static size_t value_end(const char *s, size_t len, size_t i)
{
	int depth = 0;
	bool in_str = false;

	if (s[i] != '"' && s[i] != '{' && s[i] != '[') {
		while (i < len && !strchr(" \t\n\r,]}", s[i]))
			i++;
		return i;
	}
	for (; i < len; i++) {
		char c = s[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			else
				continue;
			if (!in_str && depth == 0)
				return i + 1;
			continue;
		}
		if (c == '"')
			in_str = true;
		else if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
			return i + 1;
	}
	return 0;
}

long jv_split_array(const char *buf, size_t len, const char *key, struct jv_span *out, size_t cap)
{
	size_t klen = strlen(key), i, n = 0;

	if (!jv_utf8_valid(buf, len) || memchr(buf, '\0', len) || !depth_ok(buf, len))
		return -1;
	i = skip_ws(buf, len, 0);
	if (i >= len || buf[i] != '{')
		return -1;
	i = skip_ws(buf, len, i + 1);
	if (len - i < klen + 2 || buf[i] != '"' || memcmp(buf + i + 1, key, klen) ||
	    buf[i + 1 + klen] != '"')
		return -1;
	i = skip_ws(buf, len, i + klen + 2);
	if (i >= len || buf[i] != ':')
		return -1;
	i = skip_ws(buf, len, i + 1);
	if (i >= len || buf[i] != '[')
		return -1;
	i = skip_ws(buf, len, i + 1);
	if (i < len && buf[i] == ']')
		return -1; /* empty: let the whole parse answer */
	for (;;) {
		size_t end;

		if (i >= len || strchr(",]}", buf[i]) || n == cap)
			return -1;
		end = value_end(buf, len, i);
		if (!end || end == i)
			return -1;
		out[n].p = buf + i;
		out[n++].len = end - i;
		i = skip_ws(buf, len, end);
		if (i >= len)
			return -1;
		if (buf[i] == ']')
			break;
		if (buf[i] != ',')
			return -1;
		i = skip_ws(buf, len, i + 1);
	}
	i = skip_ws(buf, len, i + 1);
	if (i >= len || buf[i] != '}')
		return -1;
	return skip_ws(buf, len, i + 1) == len ? (long)n : -1;
}

int jv_object(const json_t *obj, const char *const *allowed, const char *prefix, const char *what,
	      struct mu_error *err)
{
	const char *key;
	json_t *val;

	if (!json_is_object(obj))
		return jv_fail(err, MU_ETYPE, prefix, what, "must be a JSON object");
	json_object_foreach((json_t *)obj, key, val) {
		const char *const *a = allowed;

		while (*a && strcmp(*a, key))
			a++;
		if (!*a) {
			/* key is valid UTF-8 (jansson checked) but may be long */
			return jv_fail(err, MU_EUNKNOWNFIELD, prefix, key, "unknown field");
		}
	}
	return 0;
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

int jv_int(const json_t *obj, const char *key, bool required, int64_t lo, int64_t hi, int64_t *out,
	   const char *prefix, struct mu_error *err)
{
	const json_t *v = json_object_get(obj, key);
	int64_t x;

	if (!v || json_is_null(v)) {
		if (required)
			return jv_fail(err, MU_EMISSING, prefix, key, "required");
		return 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);

		/* range first: converting an out-of-range double is undefined */
		if (!(d >= -9.2e18 && d <= 9.2e18) || d != (double)(int64_t)d)
			return jv_fail(err, d < (double)lo || d > (double)hi ? MU_ERANGE : MU_ETYPE,
				       prefix, key, "must be an integer between %lld and %lld",
				       (long long)lo, (long long)hi);
		x = (int64_t)d;
	} else if (json_is_integer(v)) {
		x = json_integer_value(v);
	} else {
		return jv_fail(err, MU_ETYPE, prefix, key, "must be an integer, not %s", type_name(v));
	}
	if (x < lo || x > hi)
		return jv_fail(err, MU_ERANGE, prefix, key, "must be between %lld and %lld",
			       (long long)lo, (long long)hi);
	*out = x;
	return 1;
}

int jv_bool(const json_t *obj, const char *key, bool required, bool *out, const char *prefix,
	    struct mu_error *err)
{
	const json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		if (required)
			return jv_fail(err, MU_EMISSING, prefix, key, "required");
		return 0;
	}
	if (!json_is_boolean(v))
		return jv_fail(err, MU_ETYPE, prefix, key, "must be a boolean, not %s", type_name(v));
	*out = json_is_true(v);
	return 1;
}

int jv_check_str(const json_t *v, size_t maxchars, const char *prefix, const char *key,
		 struct mu_error *err)
{
	if (!json_is_string(v))
		return jv_fail(err, MU_ETYPE, prefix, key, "must be a string, not %s", type_name(v));
	if (json_string_length(v) > maxchars &&
	    jv_utf8_chars(json_string_value(v), json_string_length(v)) > maxchars)
		return jv_fail(err, MU_ETOOLONG, prefix, key, "longer than %zu characters", maxchars);
	return 0;
}

int jv_str(const json_t *obj, const char *key, bool required, size_t maxchars, bool plain,
	   const char **out, const char *prefix, struct mu_error *err)
{
	const json_t *v = json_object_get(obj, key);
	int ret;

	if (!v || json_is_null(v)) {
		if (required)
			return jv_fail(err, MU_EMISSING, prefix, key, "required");
		return 0;
	}
	ret = jv_check_str(v, maxchars, prefix, key, err);
	if (ret < 0)
		return ret;
	if (plain) {
		const char *s = json_string_value(v);

		for (size_t i = 0; i < json_string_length(v); i++)
			if ((unsigned char)s[i] < 0x20 && s[i] != '\t' && s[i] != '\n')
				return jv_fail(err, MU_EINVAL, prefix, key,
					       "control characters are not allowed");
	}
	*out = json_string_value(v);
	return 1;
}

bool jv_name_ok(const char *s, size_t minlen, size_t maxlen, const char *extra)
{
	size_t n = strlen(s);

	if (n < minlen || n > maxlen)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!(isascii(c) && isalnum(c)) && !strchr(extra, c))
			return false;
	}
	return true;
}
