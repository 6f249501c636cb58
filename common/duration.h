/*
 * duration.h - time limits as Slurm's --time reads them.
 *
 * Accepted: "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S" (digits only in
 * every field, no field empty). Anything else is MU_EINVAL. A JSON number
 * in the API is already seconds and does not come here.
 */
#ifndef MU_DURATION_H
#define MU_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* 0 with *secs set, or MU_EINVAL (bad form) / MU_ERANGE (overflows int32). */
int mu_duration_parse_slurm(const char *s, int64_t *secs) __attribute__((warn_unused_result));
/* Formats seconds as Slurm prints a time limit: "M:SS", "H:MM:SS" or "D-HH:MM:SS". */
void mu_duration_format(int64_t secs, char *buf, size_t len);

#endif
