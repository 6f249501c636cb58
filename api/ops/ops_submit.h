/*
 * ops_submit.h - the rules of a submit, written once for POST /v1/jobs and
 * /v1/jobs/batch (api/rest_jobs.c), JobService.Submit and SubmitBatch
 * (api/grpc/grpc_jobs.c) and both dry-runs (ops_sched.h): the idempotency
 * key, the decode of one job with the caller's owner rule (ops_job_owner),
 * a batch's items and arrays, the request's digest, and the naming of an
 * admission problem's field.
 *
 * What stays per transport is only the group-commit pipeline (each side
 * queues its requests on its own store_pool group and encodes its answer)
 * and the bytes the digest is taken over (REST: the body; gRPC: the packed
 * JobSpec): the store compares digests per key, so each face's retry
 * replays its own request.
 *
 * Pure (no I/O): the store_job_submit filled here goes to
 * store_job_submit_group.
 */
#ifndef MU_OPS_SUBMIT_H
#define MU_OPS_SUBMIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "alloc.h"
#include "error.h"
#include "ops_principal.h"
#include "store_job.h"

#define OPS_IDEM_KEY_MAX 255

/*
 * The idempotency key rule (both faces): 1..255 printable ASCII characters
 * (0x20..0x7e) that neither start nor end with a space (an HTTP header
 * value loses those, so a key that has them could not be sent again over
 * REST). MU_EINVAL naming `field` ("Idempotency-Key", "idempotency_key").
 */
int ops_idem_key_check(const char *key, const char *field, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * One job object (`body`, the caller's: a script is expanded in place)
 * decoded into *j with the caller's owner rule; fields named `prefix` + key
 * ("" or "jobs.3."). Strings borrowed from body or in `a`.
 */
int ops_submit_decode(const struct ops_principal *p, struct mu_arena *a, json_t *body,
		      const char *prefix, struct store_job *j, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * A single submit (one job, or one array as its tasks) ready for
 * store_job_submit_group: *s zeroed, then jobs/n, scope, arena and, with a
 * key (NULL = none; "" is refused:
 * gRPC's proto3 "" means none and is passed as NULL), the key checked (named `key_field`) and the
 * SHA-256 of `req` (req_len bytes: what a retry must repeat). Errors go to
 * `err` (s->err is the store's).
 */
int ops_submit_prepare(const struct ops_principal *p, struct mu_arena *a, json_t *body,
		       const char *key, const char *key_field, const void *req, size_t req_len,
		       struct store_job_submit *s, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * A batch (POST /v1/jobs/batch, JobService.SubmitBatch): item i of the
 * request decoded into *j as a single submit's job would be, its fields
 * named "jobs.<i>."; an item that is not an object is MU_ETYPE "jobs.<i>".
 */
int ops_submit_batch_item(const struct ops_principal *p, struct mu_arena *a, json_t *item,
			  size_t i, struct store_job *j, struct mu_error *err)
	__attribute__((warn_unused_result));

/* A batch's arrays, after ops_submit_batch_expand: each written job's
 * index among the request's jobs (body_index NULL = no array: the same). */
struct ops_batch {
	size_t *body_index;
	struct store_job *body_jobs; /* the request's jobs, before the expansion */
	size_t nbody;
};

/*
 * The jobs of a decoded batch (s->jobs, s->n, s->arena) that are arrays
 * become their tasks in their place, as a single submit writes one: s->jobs
 * and s->n grow, b maps each written job back (*b zeroed first). At most
 * CODEC_JOB_MAX_BATCH jobs in all, every task counted. Errors in s->err.
 */
int ops_submit_batch_expand(struct ops_batch *b, struct store_job_submit *s)
	__attribute__((warn_unused_result));

/* Whether written job i is the first of its request job (a plain job or an
 * array's first task): a batch's answer lists those, in order. */
bool ops_batch_first(const struct ops_batch *b, size_t i);

/*
 * After store_job_submit_group failed a request: names the field of an
 * admission problem in s->err. `body_index` (NULL = each written job is
 * the body's) maps a batch's written job back to the body's job, so the
 * field names the job the client sent, not an array's task.
 */
void ops_submit_name_problem(struct store_job_submit *s, const size_t *body_index);

#endif
