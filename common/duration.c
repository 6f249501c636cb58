#include "duration.h"

#include "error.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define MAX_SECS 2147483647LL

/* Reads up to 4 colon-separated digit fields from [s, end). */
static int fields(const char *s, const char *end, long long *f, int *n)
{
	*n = 0;
	for (;;) {
		long long v = 0;
		const char *p = s;
		if (*n == 3)
			return MU_EINVAL;
		while (p < end && isdigit((unsigned char)*p)) {
			v = v * 10 + (*p - '0');
			if (v > MAX_SECS)
				return MU_ERANGE;
			p++;
		}
		if (p == s)
			return MU_EINVAL;
		f[(*n)++] = v;
		if (p == end)
			return 0;
		if (*p != ':')
			return MU_EINVAL;
		s = p + 1;
	}
}

int mu_duration_parse_slurm(const char *s, int64_t *secs)
{
	const char *dash = strchr(s, '-');
	const char *end = s + strlen(s);
	long long f[3], days = 0, total;
	int n, rc;

	if (dash) {
		long long d = 0;
		const char *p = s;
		if (p == dash)
			return MU_EINVAL;
		for (; p < dash; p++) {
			if (!isdigit((unsigned char)*p))
				return MU_EINVAL;
			d = d * 10 + (*p - '0');
			if (d > MAX_SECS)
				return MU_ERANGE;
		}
		days = d;
		if ((rc = fields(dash + 1, end, f, &n)))
			return rc;
		/* D-H, D-H:M, D-H:M:S */
		total = days * 86400 + f[0] * 3600 + (n > 1 ? f[1] * 60 : 0) + (n > 2 ? f[2] : 0);
	} else {
		if ((rc = fields(s, end, f, &n)))
			return rc;
		if (n == 1)
			total = f[0] * 60;                       /* M */
		else if (n == 2)
			total = f[0] * 60 + f[1];                /* M:S */
		else
			total = f[0] * 3600 + f[1] * 60 + f[2];  /* H:M:S */
	}
	if (total > MAX_SECS)
		return MU_ERANGE;
	*secs = total;
	return 0;
}

void mu_duration_format(int64_t secs, char *buf, size_t len)
{
	long long s = secs < 0 ? 0 : secs;
	long long d = s / 86400, h = (s / 3600) % 24, m = (s / 60) % 60, sec = s % 60;
	if (d)
		snprintf(buf, len, "%lld-%02lld:%02lld:%02lld", d, h, m, sec);
	else if (h)
		snprintf(buf, len, "%lld:%02lld:%02lld", h, m, sec);
	else
		snprintf(buf, len, "%lld:%02lld", m, sec);
}
