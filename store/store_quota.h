/*
 * store_quota.h - per-tenant quotas, optionally per GPU model ("" = all
 * models). A limit of -1 is "no limit" (SQL NULL). Conventions (arena,
 * scope, errors, events) as in store_tenant.h.
 */
#ifndef STORE_QUOTA_H
#define STORE_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"

struct store_quota {
	const char *tenant;
	const char *gpu_model;      /* "" = every model */
	int64_t guaranteed_gpus;
	int64_t max_gpus;           /* -1 = no limit, as the four below */
	int64_t max_running_jobs;
	int64_t max_pending_jobs;
	int64_t max_time_limit;     /* seconds */
	const char *updated_at;
};

struct store_quota_page {
	struct store_quota *items;
	size_t n;
	const char *next_cursor;
};

/* Creates or replaces the quota (q->tenant, q->gpu_model); *out is the row
 * as stored. MU_ENOTFOUND when the tenant does not exist. */
int store_quota_put(PGconn *c, struct mu_arena *a, const struct store_quota *q,
		    struct store_quota *out, struct mu_error *err) __attribute__((warn_unused_result));
/* The quotas of one tenant (MU_ENOTFOUND outside `scope`); may be empty. */
int store_quota_get(PGconn *c, struct mu_arena *a, const char *scope, const char *tenant,
		    struct store_quota_page *out, struct mu_error *err) __attribute__((warn_unused_result));
/* MU_ENOTFOUND when the tenant or that quota does not exist. */
int store_quota_delete(PGconn *c, const char *tenant, const char *gpu_model, struct mu_error *err)
	__attribute__((warn_unused_result));
/* Every visible quota, ordered by tenant path then model. */
int store_quota_list(PGconn *c, struct mu_arena *a, const char *scope, const char *cursor, int limit,
		     struct store_quota_page *out, struct mu_error *err) __attribute__((warn_unused_result));

#endif
