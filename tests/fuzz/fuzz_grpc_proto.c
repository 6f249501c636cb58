/*
 * fuzz_grpc_proto.c - libFuzzer driver for what muster-api's gRPC server does
 * with untrusted bytes before any database work: protobuf-c unpacking of
 * every request type, and for SubmitJobRequest (each job of a
 * SubmitJobsRequest) the JobSpec -> REST JSON ->
 * codec_job_decode path (api/grpc/grpc_codec.c + api/codec_job.c); for the
 * admin writes (UpdateTenant, Create/UpdatePriorityClass, CreateToken) the
 * message (+ update_mask) -> REST JSON -> codec_admin decoder path; for
 * SchedulerService.DryRun its JobSpec through the submit's path.
 *
 * Input: first byte picks the message type, the rest is its wire bytes.
 * Invariants: unpack either fails or gives a message that packs to its
 * packed size; the codec returns 0 (then the job
 * obeys the REST ranges) or a MU_E* code with a message; an update changes
 * only fields its mask names.
 *
 * Linked with replay_main.c it runs every file of the directories given
 * (the CTest replay of the seed corpus).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_admin.h"
#include "codec_job.h"
#include "grpc/health/v1/health.pb-c.h"
#include "grpc_codec.h"
#include "muster/v1/admin.pb-c.h"
#include "muster/v1/agent.pb-c.h"
#include "muster/v1/jobs.pb-c.h"
#include "muster/v1/sched.pb-c.h"

static void require(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

static const ProtobufCMessageDescriptor *const types[] = {
	&muster__v1__submit_job_request__descriptor, &muster__v1__agent_message__descriptor,
	&muster__v1__list_jobs_request__descriptor,  &muster__v1__watch_jobs_request__descriptor,
	&muster__v1__set_quota_request__descriptor,  &grpc__health__v1__health_check_request__descriptor,
	/* 6.. AdminService's REST-parity methods (seeds admin_*) */
	&muster__v1__update_tenant_request__descriptor,
	&muster__v1__create_priority_class_request__descriptor,
	&muster__v1__update_priority_class_request__descriptor,
	&muster__v1__create_token_request__descriptor,
	&muster__v1__get_tenant_quotas_request__descriptor,
	&muster__v1__list_tokens_request__descriptor,
	&muster__v1__get_token_request__descriptor,
	/* 13: JobService.GetLogs (seeds logs_*) */
	&muster__v1__get_logs_request__descriptor,
	/* 14.. SchedulerService (seeds sched_*) */
	&muster__v1__dry_run_request__descriptor,
	&muster__v1__usage_request__descriptor,
	&muster__v1__explain_request__descriptor,
	/* 17: JobService.SubmitBatch */
	&muster__v1__submit_jobs_request__descriptor,
};

/* Packing what was unpacked must work (muster packs replies built from
 * such strings). Byte equality is not required: protobuf-c keeps embedded
 * NULs and unknown map-entry shapes in ways that do not round-trip. */
static void roundtrip(const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *b = malloc(n + 1);
	ProtobufCMessage *again;

	require(protobuf_c_message_pack(m, b) == n, "pack size");
	again = protobuf_c_message_unpack(m->descriptor, NULL, n, b);
	if (again)
		protobuf_c_message_free_unpacked(again, NULL);
	free(b);
}

static void spec_path(const Muster__V1__JobSpec *spec)
{
	struct mu_error err = { 0 };
	struct mu_arena a;
	struct store_job j;
	json_t *body;
	int ret;

	if (!spec)
		return;
	body = grpc_codec_spec_json(spec, &err);
	if (!body) {
		require(err.code == MU_EUTF8 && err.msg[0], "spec_json fails only on UTF-8, with a message");
		return;
	}
	require(json_is_object(body), "spec_json gives an object");
	mu_arena_init(&a, 0);
	ret = codec_job_decode(body, &a, "", &j, &err);
	if (ret == 0) {
		require(j.nodes >= 1 && j.nodes <= 10000, "nodes in range");
		require(j.gpus_per_node >= 0 && j.gpus_per_node <= 64, "gpus_per_node in range");
		require(j.command && j.command[0] == '[', "command is an array");
		/* a script makes the command itself (codec_script.c) */
		require(spec->n_command >= 1 || (spec->script && spec->script[0]),
			"a job needs a command or a script");
	} else {
		require(ret < 0 && err.code == ret && err.msg[0], "errors carry code and message");
	}
	mu_arena_release(&a);
	json_decref(body);
}

static bool masked(char *const *mask, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(mask[i], path))
			return true;
	return false;
}

/* A REST JSON body the converter made, or its error: only UTF-8 or a bad mask path. */
static bool body_ok(json_t *body, const struct mu_error *err)
{
	if (!body) {
		require((err->code == MU_EUTF8 || err->code == MU_EINVAL) && err->msg[0],
			"admin json fails only on UTF-8 or the mask, with a message");
		return false;
	}
	require(json_is_object(body), "admin json gives an object");
	return true;
}

static void decoded(int ret, const struct mu_error *err)
{
	require(ret == 0 || (ret < 0 && err->code == ret && err->msg[0]), "errors carry code and message");
}

static void admin_path(const ProtobufCMessage *m)
{
	struct mu_error err = { 0 };
	json_t *body = NULL;
	int ret;

	if (m->descriptor == &muster__v1__update_tenant_request__descriptor) {
		const Muster__V1__UpdateTenantRequest *r = (const void *)m;
		struct store_tenant_patch p;

		if (!r->tenant || !body_ok(body = grpc_codec_tenant_patch_json(r->tenant, r->update_mask,
									       r->n_update_mask, &err), &err))
			return;
		decoded(ret = codec_tenant_patch_decode(body, &p, &err), &err);
		if (ret == 0) {
			require(!(p.set & STORE_TENANT_SET_SHARES) ||
				masked(r->update_mask, r->n_update_mask, "shares"), "shares only when masked");
			require(!(p.set & STORE_TENANT_SET_PARENT) ||
				masked(r->update_mask, r->n_update_mask, "parent"), "parent only when masked");
			require(!(p.set & STORE_TENANT_SET_DESCRIPTION) ||
				masked(r->update_mask, r->n_update_mask, "description"), "description only when masked");
		}
	} else if (m->descriptor == &muster__v1__create_priority_class_request__descriptor) {
		const Muster__V1__CreatePriorityClassRequest *r = (const void *)m;
		struct store_pclass p;

		if (!r->priority_class ||
		    !body_ok(body = grpc_codec_pclass_json(r->priority_class, true, NULL, 0, &err), &err))
			return;
		decoded(ret = codec_pclass_new_decode(body, &p, &err), &err);
		if (ret == 0)
			require(codec_admin_valid_name(p.name) && p.default_time_limit >= 1 &&
				p.grace_period >= 0 && p.grace_period <= 86400, "class in range");
	} else if (m->descriptor == &muster__v1__update_priority_class_request__descriptor) {
		const Muster__V1__UpdatePriorityClassRequest *r = (const void *)m;
		struct store_pclass p;
		unsigned set;

		if (!r->priority_class ||
		    !body_ok(body = grpc_codec_pclass_json(r->priority_class, false, r->update_mask,
							   r->n_update_mask, &err), &err))
			return;
		decoded(ret = codec_pclass_patch_decode(body, &set, &p, &err), &err);
		if (ret == 0) {
			require(!(set & STORE_PCLASS_SET_PRIORITY) ||
				masked(r->update_mask, r->n_update_mask, "priority"), "priority only when masked");
			require(!(set & STORE_PCLASS_SET_IS_DEFAULT) ||
				masked(r->update_mask, r->n_update_mask, "is_default"), "is_default only when masked");
			require(!(set & STORE_PCLASS_SET_MAX_TIME_LIMIT) ||
				masked(r->update_mask, r->n_update_mask, "max_time_limit_s"), "max only when masked");
		}
	} else if (m->descriptor == &muster__v1__create_token_request__descriptor) {
		struct codec_token_new in;

		if (!body_ok(body = grpc_codec_token_json((const void *)m, &err), &err))
			return;
		decoded(ret = codec_token_new_decode(body, &in, &err), &err);
		if (ret == 0) {
			decoded(ret = codec_token_new_authorize(&in, false, "caller", "caller", &err), &err);
			if (ret == 0)
				require(in.tenant && (!strcmp(in.role, "tenant") || !strcmp(in.role, "reader")),
					"a tenant caller mints only tenant-bound tenant/reader tokens");
		}
	}
	json_decref(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ProtobufCMessageDescriptor *d;
	ProtobufCMessage *m;

	if (size < 1)
		return 0;
	d = types[data[0] % (sizeof(types) / sizeof(types[0]))];
	m = protobuf_c_message_unpack(d, NULL, size - 1, data + 1);
	if (!m)
		return 0;
	roundtrip(m);
	if (d == &muster__v1__submit_job_request__descriptor)
		spec_path(((const Muster__V1__SubmitJobRequest *)m)->job);
	else if (d == &muster__v1__submit_jobs_request__descriptor)
		for (size_t i = 0; i < ((const Muster__V1__SubmitJobsRequest *)m)->n_jobs; i++)
			spec_path(((const Muster__V1__SubmitJobsRequest *)m)->jobs[i]);
	else if (d == &muster__v1__dry_run_request__descriptor)
		spec_path(((const Muster__V1__DryRunRequest *)m)->job);
	else
		admin_path(m);
	protobuf_c_message_free_unpacked(m, NULL);
	return 0;
}
