/*
 * log.h - leveled logging to stderr, one line per call, thread-safe.
 *
 * Every line carries its object first, by convention: "job=12 run=40 ...",
 * "node=gpu-7 ...", "tenant=ml ...". Job ids print as plain decimals
 * everywhere (MU_JOB_FMT).
 */
#ifndef MU_LOG_H
#define MU_LOG_H

#include <inttypes.h>

#define MU_JOB_FMT PRId64

enum mu_log_level { MU_LOG_DEBUG, MU_LOG_INFO, MU_LOG_WARN, MU_LOG_ERROR };

/* Sets the threshold; `name` is debug|info|warn|error. Returns 0 or MU_EINVAL. */
int mu_log_set_level_name(const char *name);
void mu_log_set_level(enum mu_log_level level);
void mu_log_set_prog(const char *prog); /* borrowed; printed in every line */
void mu_log(enum mu_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define mu_debug(...) mu_log(MU_LOG_DEBUG, __VA_ARGS__)
#define mu_info(...) mu_log(MU_LOG_INFO, __VA_ARGS__)
#define mu_warn(...) mu_log(MU_LOG_WARN, __VA_ARGS__)
#define mu_err(...) mu_log(MU_LOG_ERROR, __VA_ARGS__)

#endif
