/* arrayspec.c - see arrayspec.h. */
#include "arrayspec.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"

static bool num(const char **p, int64_t *v)
{
	int64_t x = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return false;
	while (*s >= '0' && *s <= '9') {
		x = x * 10 + (*s++ - '0');
		if (x > INT32_MAX)
			x = INT32_MAX; /* saturates: the range check refuses it */
	}
	*p = s;
	*v = x;
	return true;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

static int fail(char *why, int code, const char *msg)
{
	if (why)
		snprintf(why, 96, "%s", msg);
	return code;
}

int mu_arrayspec_parse(const char *spec, struct mu_arrayspec *out, int32_t *ids, size_t cap,
		       char *why)
{
	const char *p = spec;
	int32_t *all = NULL;
	size_t n = 0, limit = MU_ARRAY_MAX_TASKS;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (!spec || !*spec || strlen(spec) > MU_ARRAY_SPEC_MAX)
		return fail(why, MU_EINVAL, "expected ranges like 0-15, 1,3,5-7 or 0-15:4, then %K");
	if (ids && cap < limit)
		limit = cap;
	all = mu_malloc(sizeof(*all) * (MU_ARRAY_MAX_TASKS + 1));
	for (;;) {
		int64_t lo, hi, step = 1;

		if (!num(&p, &lo)) {
			ret = fail(why, MU_EINVAL, "expected ranges like 0-15, 1,3,5-7 or 0-15:4, then %K");
			goto out;
		}
		hi = lo;
		if (*p == '-') {
			p++;
			if (!num(&p, &hi) || hi < lo) {
				ret = fail(why, MU_EINVAL, "a range is FIRST-LAST with FIRST <= LAST");
				goto out;
			}
			if (*p == ':') {
				p++;
				if (!num(&p, &step) || step < 1) {
					ret = fail(why, MU_EINVAL, "a step is :N with N >= 1");
					goto out;
				}
			}
		}
		if (hi > MU_ARRAY_MAX_ID) {
			ret = fail(why, MU_ERANGE, "task ids are 0..9999999");
			goto out;
		}
		for (int64_t v = lo; v <= hi; v += step) {
			if (n >= limit) {
				ret = fail(why, MU_ERANGE, "at most 10000 tasks in one array");
				goto out;
			}
			all[n++] = (int32_t)v;
		}
		if (*p == ',') {
			p++;
			continue;
		}
		break;
	}
	if (*p == '%') {
		int64_t k;

		p++;
		if (!num(&p, &k) || k < 1) {
			ret = fail(why, MU_EINVAL, "%K needs K >= 1 (at most K tasks running at once)");
			goto out;
		}
		out->throttle = k > MU_ARRAY_MAX_TASKS ? MU_ARRAY_MAX_TASKS : (int32_t)k;
	}
	if (*p) {
		ret = fail(why, MU_EINVAL, "expected ranges like 0-15, 1,3,5-7 or 0-15:4, then %K");
		goto out;
	}
	qsort(all, n, sizeof(*all), cmp_i32);
	for (size_t i = 1; i < n; i++) {
		if (all[i] == all[i - 1]) {
			ret = fail(why, MU_EINVAL, "a task id appears twice");
			goto out;
		}
	}
	out->count = n;
	out->min = all[0];
	out->max = all[n - 1];
	out->step = n > 1 ? all[1] - all[0] : 1;
	for (size_t i = 2; i < n && out->step != 1; i++)
		if (all[i] - all[i - 1] != out->step)
			out->step = 1;
	if (ids)
		memcpy(ids, all, sizeof(*ids) * n);
out:
	mu_free(all);
	return ret;
}
