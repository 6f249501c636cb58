/*
 * store_plan.h - the planning generation (migration 160): a counter the
 * leader's cycles bump, by which service/plan knows a cached planning
 * snapshot is still the one the leader last planned from.
 *
 * Both take a PGconn owned by the caller; return 0 or a negative MU_E*
 * code with err filled. Not thread-safe per connection.
 */
#ifndef STORE_PLAN_H
#define STORE_PLAN_H

#include <stdint.h>

#include "db.h"
#include "error.h"

/* The current generation (one primary-key read). */
int store_plan_generation(PGconn *c, int64_t *gen, struct mu_error *err) __attribute__((warn_unused_result));

/* +1, inside the caller's (the cycle's) transaction. */
int store_plan_generation_bump(PGconn *c, struct mu_error *err) __attribute__((warn_unused_result));

#endif
