/* slurmtime.c - see slurmtime.h. */
#include "slurmtime.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "error.h"

#define YEAR_MAX 9999

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era;
	int yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (int)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static bool leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int mdays(int y, int m)
{
	static const int n[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	return m == 2 && leap(y) ? 29 : n[m - 1];
}

/* Exactly `n` digits at *p into *v; advances. */
static bool digits(const char **p, int n, int *v)
{
	int x = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return false;
		x = x * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*v = x;
	return true;
}

/* 1 or 2 digits. */
static bool digits12(const char **p, int *v)
{
	if (!isdigit((unsigned char)**p))
		return false;
	if (isdigit((unsigned char)(*p)[1]))
		return digits(p, 2, v);
	return digits(p, 1, v);
}

struct clock {
	int h, m, s;
	bool given;
};

/* HH:MM[:SS][AM|PM]; *p at the hour. */
static int parse_clock(const char **p, struct clock *c)
{
	const char *q = *p;

	c->s = 0;
	if (!digits12(&q, &c->h) || *q++ != ':' || !digits(&q, 2, &c->m))
		return MU_EINVAL;
	if (*q == ':') {
		q++;
		if (!digits(&q, 2, &c->s))
			return MU_EINVAL;
	}
	if (!strncasecmp(q, "am", 2) || !strncasecmp(q, "pm", 2)) {
		if (c->h < 1 || c->h > 12)
			return MU_ERANGE;
		c->h = c->h % 12 + (tolower((unsigned char)*q) == 'p' ? 12 : 0);
		q += 2;
	}
	if (c->h > 23 || c->m > 59 || c->s > 59)
		return MU_ERANGE;
	c->given = true;
	*p = q;
	return 0;
}

/* The day `add` days after the local day of `lt`, at h:m:s local time
 * (mktime normalises the day and decides DST). */
static int day_at(const struct tm *lt, int add, int h, int m, int s, int64_t *out)
{
	struct tm tm = { 0 };
	time_t t;

	tm.tm_year = lt->tm_year;
	tm.tm_mon = lt->tm_mon;
	tm.tm_mday = lt->tm_mday + add;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = s;
	tm.tm_isdst = -1;
	t = mktime(&tm);
	if (t == (time_t)-1)
		return MU_ERANGE;
	*out = (int64_t)t;
	return 0;
}

/* Local time of a broken-down date and clock, via mktime (DST decided by it). */
static int local_time(int y, int mo, int d, int h, int mi, int s, int64_t *out)
{
	struct tm tm = { 0 };
	time_t t;

	if (y < 1970 || y > YEAR_MAX || mo < 1 || mo > 12 || d < 1 || d > mdays(y, mo))
		return MU_ERANGE;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	tm.tm_isdst = -1;
	t = mktime(&tm);
	if (t == (time_t)-1)
		return MU_ERANGE;
	*out = (int64_t)t;
	return 0;
}

static int parse_now(const char *p, int64_t now, int64_t *out)
{
	static const struct {
		const char *name;
		int64_t secs;
	} units[] = {
		{ "s", 1 },	       { "sec", 1 },	     { "secs", 1 },	     { "second", 1 },
		{ "seconds", 1 },      { "m", 60 },	     { "min", 60 },	     { "mins", 60 },
		{ "minute", 60 },      { "minutes", 60 },    { "h", 3600 },	     { "hour", 3600 },
		{ "hours", 3600 },     { "d", 86400 },	     { "day", 86400 },	     { "days", 86400 },
		{ "w", 604800 },       { "week", 604800 },   { "weeks", 604800 },
	};
	int64_t n = 0, mult = 1;
	int sign;

	if (!*p) {
		*out = now;
		return 0;
	}
	if (*p != '+' && *p != '-')
		return MU_EINVAL;
	sign = *p++ == '-' ? -1 : 1;
	if (!isdigit((unsigned char)*p))
		return MU_EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		n = n * 10 + (*p - '0');
		if (n > 100LL * 366 * 86400)
			return MU_ERANGE;
	}
	if (*p) {
		size_t i;
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcasecmp(p, units[i].name))
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return MU_EINVAL;
		mult = units[i].secs;
	}
	if (n > 100LL * 366 * 86400 / mult)
		return MU_ERANGE;
	*out = now + sign * n * mult;
	return 0;
}

/* The optional "-HH:MM[:SS]" (or "THH:MM[:SS]" when `sep` is 'T') after a date. */
static int parse_date_clock(const char **p, char sep, struct clock *c)
{
	c->h = c->m = c->s = 0;
	c->given = false;
	if (!**p)
		return 0;
	if (**p != sep && !(sep == 'T' && **p == 't'))
		return MU_EINVAL;
	(*p)++;
	return parse_clock(p, c);
}

int mu_slurmtime_parse(const char *s, int64_t now, int flags, int64_t *out)
{
	static const struct {
		const char *name;
		int day; /* 0 today, 1 tomorrow */
		int hour;
	} words[] = {
		{ "today", 0, 0 },     { "midnight", 0, 0 },  { "tomorrow", 1, 0 }, { "noon", 0, 12 },
		{ "elevenses", 0, 11 }, { "fika", 0, 15 },    { "teatime", 0, 16 },
	};
	bool future = flags & MU_SLURMTIME_FUTURE;
	time_t tnow = (time_t)now;
	struct tm lt;
	struct clock c = { 0 };
	const char *p = s;
	int y, mo, d, ret;
	bool year_given = false;

	if (!s || !*s || strlen(s) > 64)
		return MU_EINVAL;
	if (!localtime_r(&tnow, &lt))
		return MU_ERANGE;
	if (!strncasecmp(s, "now", 3))
		return parse_now(s + 3, now, out);
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (strcasecmp(s, words[i].name))
			continue;
		ret = day_at(&lt, words[i].day, words[i].hour, 0, 0, out);
		if (ret == 0 && future && words[i].hour && *out <= now)
			ret = day_at(&lt, 1, words[i].hour, 0, 0, out);
		return ret;
	}
	y = lt.tm_year + 1900;
	mo = lt.tm_mon + 1;
	d = lt.tm_mday;
	if (isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1]) &&
	    isdigit((unsigned char)p[2]) && isdigit((unsigned char)p[3]) && p[4] == '-') {
		/* YYYY-MM-DD[THH:MM[:SS]], or RFC 3339 with a zone */
		const char *z = s + strlen(s) - 1;
		if (strlen(s) > 19 && (*z == 'Z' || *z == 'z' || (z - 5 > s && (z[-5] == '+' || z[-5] == '-') && z[-2] == ':')))
			return mu_slurmtime_parse_rfc3339(s, out);
		if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
		    !digits(&p, 2, &d))
			return MU_EINVAL;
		year_given = true;
		ret = parse_date_clock(&p, 'T', &c);
	} else if (isdigit((unsigned char)p[0]) &&
		   (p[1] == ':' || (isdigit((unsigned char)p[1]) && p[2] == ':'))) {
		ret = parse_clock(&p, &c);
		if (ret == 0 && *p)
			ret = MU_EINVAL;
		if (ret < 0)
			return ret;
		ret = day_at(&lt, 0, c.h, c.m, c.s, out);
		if (ret == 0 && future && *out <= now)
			ret = day_at(&lt, 1, c.h, c.m, c.s, out);
		return ret;
	} else if (isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1]) &&
		   (p[2] == '/' || p[2] == '.' || isdigit((unsigned char)p[2]))) {
		char sep = p[2];
		int yy;

		if (!digits(&p, 2, &mo))
			return MU_EINVAL;
		if (sep == '/' || sep == '.')
			p++;
		if (!digits(&p, 2, &d))
			return MU_EINVAL;
		if ((sep == '/' || sep == '.') ? *p == sep : isdigit((unsigned char)*p)) {
			if (sep == '/' || sep == '.')
				p++;
			if (!digits(&p, 2, &yy))
				return MU_EINVAL;
			y = 2000 + yy;
			year_given = true;
		}
		ret = parse_date_clock(&p, '-', &c);
	} else {
		return MU_EINVAL;
	}
	if (ret < 0)
		return ret;
	if (*p)
		return MU_EINVAL;
	if (mo < 1 || mo > 12)
		return MU_ERANGE;
	ret = local_time(y, mo, d, c.h, c.m, c.s, out);
	if (ret == 0 && future && !year_given && *out <= now)
		ret = local_time(y + 1, mo, d, c.h, c.m, c.s, out);
	return ret;
}

void mu_slurmtime_rfc3339(int64_t t, char *buf, size_t len)
{
	int64_t days, secs, z, era, doe, yoe, y, doy, mp, d, m;

	if (len < 21 || t < -62167219200LL || t > 253402300799LL) {
		if (len)
			buf[0] = '\0';
		return;
	}
	days = t / 86400;
	secs = t % 86400;
	if (secs < 0) {
		secs += 86400;
		days--;
	}
	/* civil_from_days */
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	y = yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = doy - (153 * mp + 2) / 5 + 1;
	m = mp < 10 ? mp + 3 : mp - 9;
	y += m <= 2;
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)y, (int)m, (int)d,
		 (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
}

int mu_slurmtime_parse_rfc3339(const char *s, int64_t *out)
{
	const char *p = s;
	int y, mo, d, h, mi, sec, zh = 0, zm = 0, sign = 0;

	if (!s || !digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
	    !digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' '))
		return MU_EINVAL;
	p++;
	if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' ||
	    !digits(&p, 2, &sec))
		return MU_EINVAL;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return MU_EINVAL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (!digits(&p, 2, &zh) || *p++ != ':' || !digits(&p, 2, &zm))
			return MU_EINVAL;
	} else {
		return MU_EINVAL;
	}
	if (*p)
		return MU_EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays(y, mo) || h > 23 || mi > 59 || sec > 60 ||
	    zh > 23 || zm > 59)
		return MU_ERANGE;
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + (sec == 60 ? 59 : sec) -
	       (int64_t)sign * (zh * 3600 + zm * 60);
	return 0;
}
