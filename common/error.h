/*
 * error.h - muster's error codes, one table for every binary.
 *
 * Commands return 0 or a negative MU_E* code. The API maps each code to one
 * HTTP status, one RFC 9457 problem `type` and one gRPC status from this
 * table, so REST and gRPC can never disagree about what an error means.
 *
 * Threading: everything here is reentrant.
 */
#ifndef MU_ERROR_H
#define MU_ERROR_H

#include <stdarg.h>

/*         name          code  http grpc  problem type slug        title */
#define MU_ERRORS(X)                                                                   \
	X(EINVAL,        -1,  400,  3, "invalid-request",        "Invalid request")        \
	X(EJSON,         -2,  400,  3, "malformed-json",         "Malformed JSON")         \
	X(EUNKNOWNFIELD, -3,  400,  3, "unknown-field",          "Unknown field")          \
	X(ETYPE,         -4,  400,  3, "wrong-type",             "Wrong type")             \
	X(ERANGE,        -5,  400,  3, "out-of-range",           "Value out of range")     \
	X(ETOOLONG,      -6,  400,  3, "string-too-long",        "String too long")        \
	X(EUTF8,         -7,  400,  3, "invalid-utf8",           "Invalid UTF-8")          \
	X(EMISSING,      -8,  400,  3, "missing-field",          "Missing field")          \
	X(EUNAUTH,       -9,  401, 16, "unauthenticated",        "Unauthenticated")        \
	X(EFORBIDDEN,    -10, 403,  7, "forbidden",              "Forbidden")              \
	X(ENOTFOUND,     -11, 404,  5, "not-found",              "Not found")              \
	X(EMETHOD,       -12, 405, 12, "method-not-allowed",     "Method not allowed")     \
	X(ECONFLICT,     -13, 409,  6, "conflict",               "Conflict")               \
	X(EIDEMPOTENCY,  -14, 409,  6, "idempotency-key-reused", "Idempotency key reused") \
	X(ESTATE,        -15, 409,  9, "invalid-state",          "Invalid state")          \
	X(ETOOBIG,       -16, 413,  8, "payload-too-large",      "Payload too large")      \
	X(EQUOTA,        -17, 429,  8, "quota-exceeded",         "Quota exceeded")         \
	X(EUNAVAIL,      -18, 503, 14, "unavailable",            "Service unavailable")    \
	X(EINTERNAL,     -19, 500, 13, "internal",               "Internal error")         \
	X(EIO,           -20, 500, 13, "io-error",               "I/O error")              \
	X(EPARSE,        -21, 400,  3, "parse-error",            "Parse error")            \
	X(ENOTLEADER,    -22, 503, 14, "not-leader",             "Not the leader")         \
	X(ENODEDOWN,     -23, 503, 14, "node-not-connected",     "Node not connected")     \
	X(EGONE,         -24, 410,  9, "gone",                   "Gone")                   \
	X(EPRECONDITION, -25, 412,  9, "precondition-failed",    "Precondition failed")

enum mu_err {
	MU_OK = 0,
#define MU__ERR_ENUM(name, code, http, grpc, slug, title) MU_##name = (code),
	MU_ERRORS(MU__ERR_ENUM)
#undef MU__ERR_ENUM
};

/*
 * An optional error report: callers that want the message and offending
 * field pass one in; callers that do not pass NULL. Fixed buffers, so
 * filling it never allocates.
 */
struct mu_error {
	int code;
	char field[128]; /* JSON pointer-ish name of the offending field, or "" */
	char msg[512];
};

/* Fills `err` (when not NULL) and returns `code`, so callers write
 * `return mu_error_set(err, MU_EINVAL, "nodes", "must be >= 1");` */
int mu_error_set(struct mu_error *err, int code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int mu_error_vset(struct mu_error *err, int code, const char *field, const char *fmt, va_list ap);
void mu_error_clear(struct mu_error *err);

const char *mu_strerror(int code);   /* title; "Unknown error" for unknown codes */
const char *mu_err_slug(int code);   /* problem type slug, e.g. "unknown-field" */
int mu_err_http_status(int code);    /* 500 for unknown codes */
int mu_err_grpc_status(int code);    /* 2 (UNKNOWN) for unknown codes */

#endif
