/*
 * arrayspec.h - job array specs as Slurm's --array reads them: "0-15",
 * "1,3,5-7", "0-15:4" (a step), each optionally followed by "%K" (at most
 * K tasks running at once). Pure (libc only); used by the API to expand a
 * submit, by the agent for SLURM_ARRAY_TASK_* and by tests.
 *
 * Task ids are 0..MU_ARRAY_MAX_ID, at most MU_ARRAY_MAX_TASKS of them in
 * one spec, each at most once (a repeated id is MU_EINVAL).
 */
#ifndef MU_ARRAYSPEC_H
#define MU_ARRAYSPEC_H

#include <stddef.h>
#include <stdint.h>

#define MU_ARRAY_MAX_TASKS 10000
#define MU_ARRAY_MAX_ID 9999999
#define MU_ARRAY_SPEC_MAX 1024 /* characters */

struct mu_arrayspec {
	size_t count;    /* tasks */
	int32_t min, max;
	int32_t step;    /* the common difference when the ids are evenly spaced, else 1 */
	int32_t throttle; /* K of "%K"; 0 = none */
};

/*
 * Parses `spec`; with `ids` (room for `cap`) also writes the task ids in
 * ascending order. Returns 0, MU_EINVAL (not a spec; a repeated id; %0),
 * or MU_ERANGE (an id past MU_ARRAY_MAX_ID, more than `cap` or
 * MU_ARRAY_MAX_TASKS tasks). `why` (may be NULL, 96 bytes) says what.
 */
int mu_arrayspec_parse(const char *spec, struct mu_arrayspec *out, int32_t *ids, size_t cap,
		       char *why) __attribute__((warn_unused_result));

#endif
