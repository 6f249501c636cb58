/*
 * codec_job.h - the job JSON codec: decode + validate a submit body, encode
 * a job for responses. Pure (jansson + libc): unit-tested and fuzzed.
 *
 * Rules are docs/api.md's table. Field errors name the field with `prefix`
 * ("" for POST /v1/jobs, "jobs.17." inside a batch).
 */
#ifndef MU_CODEC_JOB_H
#define MU_CODEC_JOB_H

#include <jansson.h>

#include "admit.h"
#include "alloc.h"
#include "buf.h"
#include "error.h"
#include "store_job.h"

#define CODEC_JOB_MAX_BATCH 10000

/*
 * Decodes the job object `body` into *job (zeroed first). A body with a
 * "script" is first expanded in place by codec_script_apply (its #SBATCH
 * directives become fields), so `body` must be the caller's own. Strings are
 * borrowed from `body` or allocated in `a` (the JSON texts of command, env,
 * labels, dependencies; dep_ids). `tenant`/`user` are left NULL when the
 * body has none (the handler applies the caller's defaults). time_limit is
 * seconds, or 0 when absent (class default). Returns 0 or a MU_E* code.
 */
int codec_job_decode(json_t *body, struct mu_arena *a, const char *prefix,
		     struct store_job *job, struct mu_error *err) __attribute__((warn_unused_result));

/*
 * Replaces the values of job->env with "<redacted>", keeping the names (for
 * readers who are neither the job's user nor an admin). The new text is
 * allocated in `a`.
 */
void codec_job_redact_env(struct store_job *job, struct mu_arena *a);
#define CODEC_JOB_REDACTED "<redacted>"

/*
 * Decodes a PATCH /v1/jobs/{id} body (docs/api.md "Changing jobs") into *p
 * (zeroed first): only the fields present are set (has_*). null clears
 * begin, min_nodes, dependencies and labels; any other null is MU_ETYPE.
 * An empty object is MU_EINVAL. Strings borrowed from body or in `a`.
 */
int codec_job_decode_patch(const json_t *body, struct mu_arena *a, struct store_job_patch *p,
			   struct mu_error *err) __attribute__((warn_unused_result));

/* An RFC 3339 timestamp (2027-01-31T08:00:00Z, fractions and +HH:MM
 * offsets allowed) as Unix seconds: 0, MU_EINVAL, or MU_ERANGE outside
 * 1970..9999. */
int codec_job_parse_rfc3339(const char *s, int64_t *out) __attribute__((warn_unused_result));

/*
 * A job whose `array` is set, as its tasks: *out (n jobs in `a`) are copies
 * of *job with array_task_id set, ascending. 0 or MU_EINVAL/MU_ERANGE.
 */
int codec_job_expand_array(const struct store_job *job, struct mu_arena *a, struct store_job **out,
			   size_t *n, struct mu_error *err) __attribute__((warn_unused_result));

/*
 * The one map from an admission problem's (job index, column) (admit.h, as
 * the store reports it) to the API's field name, for REST and gRPC alike:
 * "time_limit", "dependencies.2.job_id"; in a batch "jobs.N.time_limit",
 * and "jobs.N" for a problem about the job as a whole. Writes err->field
 * when pb->set; a problem about the whole request (the quota) names none.
 */
void codec_job_problem_field(const struct admit_problem *pb, bool batch, struct mu_error *err);

/* Appends the job object as JSON text (runs/events too when set). */
void codec_job_encode(const struct store_job *job, struct mu_buf *out);

/* The job fields a listing can be limited to (GET /v1/jobs?fields=a,b,...:
 * squeue-sized pages for `muster queue`); "id" is always sent. */
enum codec_job_field {
	CODEC_JOB_F_STATE, CODEC_JOB_F_TENANT, CODEC_JOB_F_USER, CODEC_JOB_F_NAME,
	CODEC_JOB_F_PRIORITY_CLASS, CODEC_JOB_F_NODES, CODEC_JOB_F_MIN_NODES,
	CODEC_JOB_F_GPUS_PER_NODE, CODEC_JOB_F_GPU_MODEL, CODEC_JOB_F_PROCS_PER_NODE,
	CODEC_JOB_F_MEM_PER_NODE, CODEC_JOB_F_CPUS_PER_NODE, CODEC_JOB_F_TOPOLOGY,
	CODEC_JOB_F_TIME_LIMIT, CODEC_JOB_F_COMMAND, CODEC_JOB_F_ENV, CODEC_JOB_F_WORKDIR,
	CODEC_JOB_F_LABELS, CODEC_JOB_F_DEPENDENCIES, CODEC_JOB_F_MAX_RETRIES, CODEC_JOB_F_OUTPUT,
	CODEC_JOB_F_ERROR, CODEC_JOB_F_RETRIES, CODEC_JOB_F_PENDING_REASON,
	CODEC_JOB_F_PENDING_MESSAGE, CODEC_JOB_F_PLANNED_START, CODEC_JOB_F_EXIT_CODE,
	CODEC_JOB_F_END_REASON, CODEC_JOB_F_CREATED_AT, CODEC_JOB_F_STARTED_AT,
	CODEC_JOB_F_ENDED_AT, CODEC_JOB_F_LAUNCH /* launcher, on_shrink, signal */, CODEC_JOB_F_HELD,
	CODEC_JOB_F_BEGIN, CODEC_JOB_F_ARRAY /* array, array_job_id, array_task_id */,
	CODEC_JOB_NFIELDS
};
#define CODEC_JOB_ALL_FIELDS ((UINT64_C(1) << CODEC_JOB_NFIELDS) - 1)

/* "a,b,c" to a mask of enum codec_job_field bits; an unknown or empty name
 * is MU_EINVAL on field "fields". */
int codec_job_fields_decode(const char *csv, uint64_t *mask, struct mu_error *err);
/* The store parts (1 << enum store_job_part) that codec_job_encode_fields
 * with `mask` does not read: a listing leaves them out of its query. */
uint32_t codec_job_fields_omit(uint64_t mask);
/* codec_job_encode limited to the fields of `mask` (id always). */
void codec_job_encode_fields(const struct store_job *job, uint64_t mask, struct mu_buf *out);

#endif
