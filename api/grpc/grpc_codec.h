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
#include "muster/v1/admin.pb-c.h"
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

/*
 * The admin bodies REST takes, for the admin codecs (api/codec_admin.c) to
 * validate. New, or NULL with err filled: MU_EUTF8 naming the field, or
 * MU_EINVAL "update_mask" for a path that is not a field the method can
 * change. `mask` holds proto field names; only those fields are sent.
 */
/* PATCH /v1/tenants/{name}: "shares", "description", "parent". */
json_t *grpc_codec_tenant_patch_json(const Muster__V1__Tenant *t, char *const *mask, size_t n_mask,
				     struct mu_error *err);
/*
 * POST /v1/priority-classes (`create`: every field as given, but
 * default_time_limit_s and max_time_limit_s 0 are absent = the REST
 * defaults; the mask is not used) or PATCH /v1/priority-classes/{name}
 * (the masked fields only; max_time_limit_s 0 = null = no maximum).
 */
json_t *grpc_codec_pclass_json(const Muster__V1__PriorityClass *p, bool create, char *const *mask,
			       size_t n_mask, struct mu_error *err);
/* POST /v1/tokens: "" fields are absent. */
json_t *grpc_codec_token_json(const Muster__V1__CreateTokenRequest *r, struct mu_error *err);

/* An UpdateJobRequest's patch as the JSON body of PATCH /v1/jobs/{id}: only
 * the update_mask fields (an unknown one is MU_EINVAL naming update_mask);
 * a named begin, min_nodes or labels left empty becomes null (cleared).
 * New reference, or NULL with err set. */
json_t *grpc_codec_job_patch_json(const Muster__V1__UpdateJobRequest *r, struct mu_error *err);

#endif
