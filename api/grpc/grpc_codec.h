/*
 * grpc_codec.h - pure conversions between muster.v1 messages and the REST
 * JSON the codecs validate (protobuf-c + jansson, no I/O): fuzzed by
 * tests/fuzz/fuzz_grpc_proto.c.
 */
#ifndef MU_GRPC_CODEC_H
#define MU_GRPC_CODEC_H

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "muster/v1/jobs.pb-c.h"

/* Every protobuf-c map entry has this layout. */
struct grpc_kv_entry {
	ProtobufCMessage base;
	char *key;
	char *value;
};

/* true when s is valid UTF-8 (NULL counts as ""). */
bool grpc_codec_utf8_ok(const char *s);

/*
 * The JSON object POST /v1/jobs takes for this JobSpec (empty/zero fields
 * absent, so REST defaults apply; gpus_per_node always present). New, or
 * NULL with err filled (MU_EUTF8 naming the field) when a string is not
 * UTF-8.
 */
json_t *grpc_codec_spec_json(const Muster__V1__JobSpec *s, struct mu_error *err);

#endif
