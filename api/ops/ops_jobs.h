/*
 * ops_jobs.h - the job operations REST (api/rest_jobs.c, rest_jobctl.c) and
 * gRPC (api/grpc/grpc_jobs.c) both run: each takes the caller's principal
 * and a typed request, applies the scope and visibility rules
 * (ops_principal.h) and calls the store; the result is a store_job (or a
 * page of them) ready for either codec, or a MU_E* code with err filled
 * (status, problem type and field come from common/error.h).
 *
 * The codecs keep what is theirs: decoding the path, query, body or proto
 * message (ids, filters, If-Match) and encoding the answer (JSON + ETag,
 * or a Job message). Submit and batch run through the group-commit path
 * (store_job_submit_group) and share ops_job_owner only; see docs/api.md.
 *
 * Database worker threads only (they take the worker's connection).
 */
#ifndef MU_OPS_JOBS_H
#define MU_OPS_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "db.h"
#include "error.h"
#include "ops_principal.h"
#include "store_job.h"

/* The actor a change records in the job's events: "token:N (user)", or
 * "token:N" when the token has no user. */
void ops_actor(const struct ops_principal *p, char *buf, size_t size);

/* A job id from a message (gRPC's job_id): below 1 names no job,
 * MU_ENOTFOUND (field "", as REST's path id) without the database. Pure;
 * called before anything else of the request is looked at. */
int ops_job_id_check(int64_t id, struct mu_error *err) __attribute__((warn_unused_result));

/* One job in the caller's scope (MU_ENOTFOUND outside it); env values
 * redacted unless ops_job_env_visible. */
int ops_job_get(PGconn *db, struct mu_arena *a, const struct ops_principal *p, int64_t id,
		struct store_job *out, struct mu_error *err) __attribute__((warn_unused_result));

/* A page of jobs in the caller's scope (filters and keyset cursor as
 * store_job_list), each redacted as ops_job_get. */
int ops_job_list(PGconn *db, struct mu_arena *a, const struct ops_principal *p,
		 const struct store_job_filter *f, struct store_job_page *out, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Cancels job `id`; with `array`, every task of array `id` when it is one
 * (else the job alone). *out is the job (the array's parent) afterwards. */
int ops_job_cancel(PGconn *db, struct mu_arena *a, const struct ops_principal *p, int64_t id,
		   bool array, struct store_job *out, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Each items[i].id cancelled as ops_job_cancel would, in one transaction
 * (store_job_cancel_many: POST /v1/jobs/cancel); a job outside the scope is
 * that item's MU_ENOTFOUND, never touched. */
int ops_job_cancel_many(PGconn *db, struct mu_arena *a, const struct ops_principal *p, bool array,
			struct store_job_cancel_item *items, size_t n, struct mu_error *err)
	__attribute__((warn_unused_result));

/* Hold, release or requeue (if_match: NULL = no check). */
int ops_job_control(PGconn *db, struct mu_arena *a, const struct ops_principal *p, int64_t id,
		    enum store_job_ctl op, const int64_t *if_match, struct store_job *out,
		    struct mu_error *err) __attribute__((warn_unused_result));

/* Changes a pending job (if_match: NULL = no check). */
int ops_job_update(PGconn *db, struct mu_arena *a, const struct ops_principal *p, int64_t id,
		   const struct store_job_patch *patch, const int64_t *if_match,
		   struct store_job *out, struct mu_error *err) __attribute__((warn_unused_result));

#endif
