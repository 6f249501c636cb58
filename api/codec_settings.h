/*
 * codec_settings.h - the settings JSON of GET/PATCH /v1/settings, checked
 * against the one table (store/settings.def). Pure (jansson + libc).
 */
#ifndef MU_CODEC_SETTINGS_H
#define MU_CODEC_SETTINGS_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"
#include "store_settings.h"

/* One value against its row: MU_ETYPE, MU_ERANGE or MU_EINVAL naming it. */
int codec_settings_check(const struct store_setting *s, const json_t *v, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * A PATCH body: an object of 1.. known settings (unknown: MU_EUNKNOWNFIELD),
 * each checked. On 0, names[i]/values[i] (n of them, malloc'ed by jansson
 * for values: free with codec_settings_release) are what to write.
 */
int codec_settings_decode(const json_t *body, const char ***names, char ***values, size_t *n,
			  struct mu_error *err) __attribute__((warn_unused_result));
void codec_settings_release(const char **names, char **values, size_t n);

/* The GET answer: {name: value, ...} in table order, from the stored texts. */
json_t *codec_settings_encode(const char *const *values);

#endif
