/*
 * fairshare.h - Fair Tree over the stored tenants and their users' usage
 * (store_sched_fairshare_load): the one builder behind GET /v1/fairshare
 * (and its gRPC twin) and the scheduler's fair-share metrics.
 */
#ifndef PLAN_FAIRSHARE_H
#define PLAN_FAIRSHARE_H

#include <stddef.h>

#include "alloc.h"
#include "error.h"
#include "fairtree.h"
#include "store_sched_report.h"

/*
 * The association tree of tenants t[0..nt) (root first) with users
 * u[0..nu) below their tenants, weighed by decayed usage and computed:
 * *out[i] is tenant i, *out[nt + k] user k (in arena a). MU_EINVAL when
 * there is no root or the tenant tree is malformed.
 */
int plan_fairshare(const struct store_sched_fs_tenant *t, size_t nt,
		   const struct store_sched_fs_user *u, size_t nu, struct mu_arena *a,
		   struct fairtree_assoc **out, struct mu_error *err) __attribute__((warn_unused_result));

#endif
