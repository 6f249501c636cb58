/*
 * codec_admin.h - pure decode/validate/encode of the admin bodies:
 * tenants, quotas, priority classes, tokens, node drain (docs/api.md).
 *
 * No I/O, no database, no clock: unit-tested and fuzzed. Decoders take a
 * parsed JSON body (borrowed) and fill a struct whose strings are borrowed
 * from that body (valid while it lives). They refuse unknown fields
 * (MU_EUNKNOWNFIELD), wrong types (MU_ETYPE), out-of-range numbers
 * (MU_ERANGE), strings over their limit in characters (MU_ETOOLONG),
 * NUL bytes or malformed UTF-8 (MU_EUTF8), names that break their pattern
 * (MU_EINVAL) and missing required fields (MU_EMISSING), naming the field
 * in `err`. Encoders return a new JSON object (never NULL).
 */
#ifndef CODEC_ADMIN_H
#define CODEC_ADMIN_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"
#include "store_node.h"
#include "store_pclass.h"
#include "store_quota.h"
#include "store_tenant.h"
#include "store_token_admin.h"

/* Limits, in characters. */
#define CODEC_ADMIN_NAME_MAX 63          /* tenant and class names */
#define CODEC_ADMIN_DESCRIPTION_MAX 1024
#define CODEC_ADMIN_GPU_MODEL_MAX 64
#define CODEC_ADMIN_TOKEN_NAME_MAX 128
#define CODEC_ADMIN_USER_MAX 64
#define CODEC_ADMIN_NODE_MAX 253
#define CODEC_ADMIN_REASON_MAX 1024
#define CODEC_ADMIN_SHARES_MAX 1000000
#define CODEC_ADMIN_GPUS_MAX 1000000
#define CODEC_ADMIN_INT32_MAX 2147483647LL

/* `^[a-z0-9][a-z0-9_.-]{0,62}$`: tenants and priority classes. */
bool codec_admin_valid_name(const char *s);
/* A tenant path: "root" then "/name" segments (the first `len` bytes of s). */
bool codec_admin_valid_path(const char *s, size_t len);
/* `^[A-Za-z0-9_.@-]{1,64}$`: users. */
bool codec_admin_valid_user(const char *s);
/* Well-formed UTF-8 of at most max_chars characters (path/query values). */
bool codec_admin_valid_text(const char *s, size_t max_chars);
/* RFC 3339 date-time with a zone ("2026-11-30T06:14:40Z", "...+02:00"). */
bool codec_admin_valid_time(const char *s);

/* POST /v1/tenants. Defaults: parent "root", shares 1, description "". */
int codec_tenant_new_decode(const json_t *body, struct store_tenant_new *out,
			    struct mu_error *err) __attribute__((warn_unused_result));
/* PATCH /v1/tenants/{name}: shares, description, parent (any subset). */
int codec_tenant_patch_decode(const json_t *body, struct store_tenant_patch *out,
			      struct mu_error *err) __attribute__((warn_unused_result));
json_t *codec_tenant_encode(const struct store_tenant *t);

/* PUT /v1/tenants/{name}/quota: a full replacement; absent or null limits
 * mean no limit, guaranteed_gpus defaults to 0, gpu_model to "".
 * out->tenant is left NULL for the caller. */
int codec_quota_decode(const json_t *body, struct store_quota *out, struct mu_error *err)
	__attribute__((warn_unused_result));
json_t *codec_quota_encode(const struct store_quota *q);

/* POST /v1/priority-classes. `name` and `priority` required; defaults as
 * the schema: preemptible true, default_time_limit 3600, no max,
 * grace_period 30, is_default false. Time limits are integer seconds or a
 * Slurm --time string. */
int codec_pclass_new_decode(const json_t *body, struct store_pclass *out, struct mu_error *err)
	__attribute__((warn_unused_result));
/* PATCH: any subset of the fields but `name`; *set gets STORE_PCLASS_SET_*. */
int codec_pclass_patch_decode(const json_t *body, unsigned *set, struct store_pclass *out,
			      struct mu_error *err) __attribute__((warn_unused_result));
json_t *codec_pclass_encode(const struct store_pclass *p);

/* POST /v1/tokens. Strings borrowed; NULL when absent. */
struct codec_token_new {
	const char *name;       /* "" default */
	const char *role;       /* required: admin|tenant|reader|agent */
	const char *tenant;     /* required for tenant; refused for admin/agent */
	const char *user;       /* "" default */
	const char *node;       /* required for agent; refused otherwise */
	const char *expires_at; /* RFC 3339 or NULL = never */
};
int codec_token_new_decode(const json_t *body, struct codec_token_new *out, struct mu_error *err)
	__attribute__((warn_unused_result));
/*
 * Who may create `in` (REST and gRPC): an admin any token; any other caller
 * (a tenant token) only tenant and reader tokens in its own subtree, so a
 * missing tenant becomes `caller_tenant` (borrowed) and a caller without one
 * is MU_EFORBIDDEN, as is a stronger role. A non-admin mints only for its
 * own user (a missing user becomes `caller_user`; another is MU_EFORBIDDEN).
 * The store checks the subtree and the expiry (no later than the caller's).
 */
int codec_token_new_authorize(struct codec_token_new *in, bool caller_admin,
			      const char *caller_tenant, const char *caller_user,
			      struct mu_error *err)
	__attribute__((warn_unused_result));
/* `secret` non-NULL adds "token" (only in the answer to a create). */
json_t *codec_token_encode(const struct store_token *t, const char *secret);

/* POST /v1/nodes/{name}/drain: `body` may be NULL (no body); *reason is
 * borrowed, "" when absent. */
int codec_drain_decode(const json_t *body, const char **reason, struct mu_error *err)
	__attribute__((warn_unused_result));
json_t *codec_node_encode(const struct store_node *n);

/* Whose list a cursor pages: its shape is checked (codec_cursor_check). */
enum codec_cursor {
	CODEC_CURSOR_TENANTS,   /* a tenant path */
	CODEC_CURSOR_PCLASSES,  /* a class name */
	CODEC_CURSOR_QUOTAS,    /* "<tenant path>|<gpu model>" */
	CODEC_CURSOR_NODES,     /* a node name */
};
/* A list's cursor (REST `cursor`, gRPC `page_token`; NULL = the first
 * page): MU_EINVAL "cursor" unless it has the shape of one this server made. */
int codec_cursor_check(enum codec_cursor kind, const char *cursor, struct mu_error *err)
	__attribute__((warn_unused_result));
/* {"items": items, "next_cursor": cursor or null}; steals `items`. */
json_t *codec_page_encode(json_t *items, const char *next_cursor);
/* A page's size, the one range both APIs apply: CODEC_LIMIT_DEFAULT when
 * not given, else 1..CODEC_LIMIT_MAX. */
#define CODEC_LIMIT_DEFAULT 100
#define CODEC_LIMIT_MAX 1000
/* `v` as a page size: 0, or MU_ERANGE naming `field` ("limit", gRPC's
 * "page_size"), one message for both. */
int codec_limit_range(long long v, const char *field, int *limit, struct mu_error *err)
	__attribute__((warn_unused_result));
/* The `limit` query parameter: NULL = 100; else 1..1000 (field "limit";
 * not a decimal: MU_ETYPE, out of range: codec_limit_range). */
int codec_limit_decode(const char *s, int *limit, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
