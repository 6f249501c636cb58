/*
 * fuzz_grpc_proto.c - libFuzzer driver for what muster-api's gRPC server does
 * with untrusted bytes before any database work: protobuf-c unpacking of
 * every request type, and for SubmitJobRequest the JobSpec -> REST JSON ->
 * codec_job_decode path (api/grpc/grpc_codec.c + api/codec_job.c).
 *
 * Input: first byte picks the message type, the rest is its wire bytes.
 * Invariants: unpack either fails or gives a message that packs to its
 * packed size; the codec returns 0 (then the job
 * obeys the REST ranges) or a MU_E* code with a message.
 *
 * Linked with replay_main.c it runs every file of the directories given
 * (the CTest replay of the seed corpus).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_job.h"
#include "grpc/health/v1/health.pb-c.h"
#include "grpc_codec.h"
#include "muster/v1/admin.pb-c.h"
#include "muster/v1/agent.pb-c.h"
#include "muster/v1/jobs.pb-c.h"

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

static void submit_path(const Muster__V1__SubmitJobRequest *r)
{
	struct mu_error err = { 0 };
	struct mu_arena a;
	struct store_job j;
	json_t *body;
	int ret;

	if (!r->job)
		return;
	body = grpc_codec_spec_json(r->job, &err);
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
		require(r->job->n_command >= 1, "a job needs a command");
	} else {
		require(ret < 0 && err.code == ret && err.msg[0], "errors carry code and message");
	}
	mu_arena_release(&a);
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
		submit_path((const Muster__V1__SubmitJobRequest *)m);
	protobuf_c_message_free_unpacked(m, NULL);
	return 0;
}
