/*
 * slurmtime.h - points in time as Slurm's sbatch --begin and sacct -S/-E
 * read them, and RFC 3339 for the API.
 *
 * Accepted (case-insensitive keywords), local time of the process (TZ):
 *   now[{+|-}COUNT[UNIT]]    UNIT: s|sec|second(s) (the default), m|min|minute(s),
 *                            h|hour(s), d|day(s), w|week(s)    e.g. now+1hour, now-2days
 *   HH:MM[:SS][AM|PM]        today at that time
 *   YYYY-MM-DD[THH:MM[:SS]]  e.g. 2027-01-31T08:00
 *   MMDD[YY][-HH:MM[:SS]], MM/DD[/YY][-HH:MM[:SS]], MM.DD[.YY][-HH:MM[:SS]]
 *   today, midnight (today 00:00), tomorrow (tomorrow 00:00), noon (12:00),
 *   elevenses (11:00), fika (15:00), teatime (16:00)
 *   an RFC 3339 time with a zone ("2027-01-31T08:00:00Z", "...+01:00")
 *
 * With MU_SLURMTIME_FUTURE (sbatch --begin), a time of day already passed
 * means tomorrow and a date without a year already passed means next year,
 * as Slurm does; without it (sacct -S/-E) they stay today / this year.
 *
 * Pure: `now` is an argument; only localtime_r/mktime (TZ) are consulted.
 * Reentrant.
 */
#ifndef MU_SLURMTIME_H
#define MU_SLURMTIME_H

#include <stddef.h>
#include <stdint.h>

enum { MU_SLURMTIME_FUTURE = 1 };

/* 0 with *out (seconds since the epoch), or MU_EINVAL (not a form above) /
 * MU_ERANGE (a field out of range, or beyond year 9999). */
int mu_slurmtime_parse(const char *s, int64_t now, int flags, int64_t *out)
	__attribute__((warn_unused_result));

/* "2027-01-31T07:00:00Z" (UTC). `len` >= 21; a time outside years 0..9999
 * writes "". */
void mu_slurmtime_rfc3339(int64_t t, char *buf, size_t len);

/* Seconds since the epoch of an RFC 3339 text ("...Z", "...+HH:MM", with or
 * without fractions, as the API prints), or MU_EINVAL. */
int mu_slurmtime_parse_rfc3339(const char *s, int64_t *out) __attribute__((warn_unused_result));

#endif
