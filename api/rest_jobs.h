/*
 * rest_jobs.h - the jobs endpoints (POST /v1/jobs, batch, list, get,
 * cancel). Handlers are declared by routes.def; this is their setup.
 */
#ifndef MU_REST_JOBS_H
#define MU_REST_JOBS_H

#include "pool.h"
#include "rest.h"
#include "store_job.h"

/* Pool group kind for submits (one transaction per group). */
#define REST_JOBS_GROUP_SUBMIT 1
/* Jobs per group transaction (a batch larger than this still goes alone). */
#define REST_JOBS_GROUP_MAX 4096

/* Registers the submit group with the pool. Call once before serving. */
void rest_jobs_init(struct store_pool *pool);

/* The caller's defaults and rights on one job's tenant and user, as
 * POST /v1/jobs applies them (POST /v1/jobs/dry-run calls the same). */
int rest_jobs_principal(const struct rest_req *rq, struct store_job *j, struct mu_error *err)
	__attribute__((warn_unused_result));

struct rest_req;
struct store_job;

/* Adds the ETag header of `job` (its version, "N"): every single-job reply
 * carries it; If-Match takes it back (api/rest_jobctl.c). */
void rest_jobs_etag(struct rest_req *rq, const struct store_job *job);

#endif
