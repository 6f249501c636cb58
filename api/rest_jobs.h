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

struct rest_req;
struct store_job;

/* Adds the ETag header of `job` (its version, "N"): every single-job reply
 * carries it; If-Match takes it back (api/rest_jobctl.c). */
void rest_jobs_etag(struct rest_req *rq, const struct store_job *job);

#endif
