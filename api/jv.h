/*
 * jv.h - strict JSON input validation for request bodies (pure: jansson +
 * libc, no I/O), shared by every REST handler and the codecs.
 *
 * Every reader names the offending field in err->field as a dotted path:
 * `prefix` + key, where `prefix` is "" at top level or e.g. "jobs.17." for
 * the 18th job of a batch. Optional readers return 0 when the key is absent
 * or JSON null (out untouched), 1 when a value was read, or a negative
 * MU_E* code: MU_ETYPE (wrong JSON type), MU_ERANGE (number out of range),
 * MU_ETOOLONG (string over its limit, counted in characters), MU_EMISSING
 * (required and absent).
 *
 * Strings returned are borrowed from the json_t they came from.
 */
#ifndef MU_JV_H
#define MU_JV_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define JV_MAX_DEPTH 32

/*
 * Parses `len` bytes as one JSON document: invalid UTF-8 -> MU_EUTF8;
 * syntax errors, NUL characters, duplicate keys, nesting deeper than
 * JV_MAX_DEPTH -> MU_EJSON; an integer literal beyond 64 bits -> MU_ERANGE.
 * *out is new.
 */
int jv_parse(const char *buf, size_t len, json_t **out, struct mu_error *err)
	__attribute__((warn_unused_result));

/* A byte range of a request body. */
struct jv_span {
	const char *p;
	size_t len;
};

/*
 * Splits a body of exactly the form {"<key>": [v1, v2, ...]} (JSON
 * whitespace between tokens) into the ranges of v1, v2, ... (at most `cap`)
 * without parsing them, after the checks jv_parse makes on the whole text
 * (UTF-8, no NUL, nesting depth). Returns the count, or -1 for any other
 * text or more than `cap` values: the caller then parses it whole with
 * jv_parse, which reports any error. The whole text is valid JSON exactly
 * when every value parses alone.
 */
long jv_split_array(const char *buf, size_t len, const char *key, struct jv_span *out, size_t cap);

/* true when `len` bytes at `s` are well-formed UTF-8 (no overlongs, no surrogates). */
bool jv_utf8_valid(const char *s, size_t len);
/* Number of code points in valid UTF-8 `s`. */
size_t jv_utf8_chars(const char *s, size_t len);

/* Sets err with field = prefix + key and returns code. */
int jv_fail(struct mu_error *err, int code, const char *prefix, const char *key, const char *fmt,
	    ...) __attribute__((format(printf, 5, 6)));

/* `obj` must be an object (else MU_ETYPE naming `what`) whose keys are all
 * in `allowed` (NULL-terminated), else MU_EUNKNOWNFIELD naming the key. */
int jv_object(const json_t *obj, const char *const *allowed, const char *prefix, const char *what,
	      struct mu_error *err) __attribute__((warn_unused_result));

int jv_int(const json_t *obj, const char *key, bool required, int64_t lo, int64_t hi, int64_t *out,
	   const char *prefix, struct mu_error *err) __attribute__((warn_unused_result));
int jv_bool(const json_t *obj, const char *key, bool required, bool *out, const char *prefix,
	    struct mu_error *err) __attribute__((warn_unused_result));
/* maxchars counts code points; strings with control characters other than
 * tab/newline are rejected (MU_EINVAL) when `plain` is set. */
int jv_str(const json_t *obj, const char *key, bool required, size_t maxchars, bool plain,
	   const char **out, const char *prefix, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Checks a value itself (not a member): used for array items / map values. */
int jv_check_str(const json_t *v, size_t maxchars, const char *prefix, const char *key,
		 struct mu_error *err) __attribute__((warn_unused_result));

/* true when `s` has minlen..maxlen bytes, each an ASCII letter or digit
 * or one of the characters in `extra` (e.g. "_.@-"). */
bool jv_name_ok(const char *s, size_t minlen, size_t maxlen, const char *extra);

#endif
