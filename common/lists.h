/*
 * lists.h - the lists several places must agree on, one X-macro each: job
 * and run states, dependency types, the end reasons a job can carry, and
 * limits such as the dependency cap. The C code takes its arrays and
 * constants from here; the SQL CHECKs (store/migrations), the OpenAPI enums
 * and descriptions (openapi/muster.yaml), the proto comments
 * (api/proto/muster/v1/jobs.proto) and docs/api.md are checked against these
 * by tests/unit/arch/check_lists.py (CTest unit.arch.lists): change a list
 * here and that test names every other place to change.
 */
#ifndef MU_LISTS_H
#define MU_LISTS_H

/* jobs.state */
#define MU_JOB_STATES(X) X(PENDING) X(STARTING) X(RUNNING) X(COMPLETED) X(FAILED) X(CANCELLED) X(TIMEOUT)

/* runs.state */
#define MU_RUN_STATES(X)                                                                                 \
	X(STARTING) X(RUNNING) X(STOPPING) X(COMPLETED) X(FAILED) X(CANCELLED) X(TIMEOUT) X(PREEMPTED)  \
	X(NODE_FAIL) X(REQUEUED)

/* dependencies[].type */
#define MU_DEP_TYPES(X) X(afterok) X(afterany) X(afternotok) X(singleton)

/* jobs.end_reason of an ended job: its final run state in lower case, what
 * a node's agent reported for a failed run, or the policy core's reason for
 * failing a pending job. */
#define MU_END_REASONS(X)                                                                          \
	X(completed) X(failed) X(cancelled) X(timeout) X(node_fail) X(bad_user) X(bad_workdir)       \
	X(launch_failed) X(oom) X(DependencyNeverSatisfied)

/* Limits: (name, value, what). */
#define MU_LIMITS(X) X(DEPENDENCIES_MAX, 100, "dependencies per job")

/* "NAME", for a NULL-terminated array: { MU_JOB_STATES(MU_LIST_NAME) NULL } */
#define MU_LIST_NAME(s) #s,

#define MU__LIMIT_ENUM(name, value, what) MU_LIMIT_##name = (value),
enum mu_limit { MU_LIMITS(MU__LIMIT_ENUM) };
#undef MU__LIMIT_ENUM

#endif
