/*
 * fuzz_admin_json.c - libFuzzer driver for the admin body codecs
 * (api/codec_admin.c): tenants, tenant patches, quotas, priority classes
 * and their patches, tokens, node drain, plus the scalar validators.
 *
 * Input: the first byte picks the decoder, the rest is the JSON body.
 * Invariants: a refusal is one of the documented 400 codes with a
 * terminated field and message; an accepted body satisfies every rule the
 * codec promises (ranges, limits, names, cross-field checks) and encodes to
 * JSON that says the same.
 *
 * Linked with replay_main.c it is a plain program that runs every file of
 * the directories (or files) given: the CTest replay of the seed corpus.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_admin.h"

static void require(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

static void check_refusal(int ret, const struct mu_error *err)
{
	require(ret == MU_EINVAL || ret == MU_EUNKNOWNFIELD || ret == MU_ETYPE || ret == MU_ERANGE ||
			ret == MU_ETOOLONG || ret == MU_EUTF8 || ret == MU_EMISSING,
		"refusal code");
	require(err->code == ret, "err code");
	require(memchr(err->field, '\0', sizeof(err->field)) != NULL, "field terminated");
	require(memchr(err->msg, '\0', sizeof(err->msg)) != NULL, "msg terminated");
	require(err->msg[0] != '\0', "message");
}

static void text_ok(const char *s, size_t max, const char *what)
{
	require(s != NULL, what);
	require(codec_admin_valid_text(s, max), what);
}

/* Fields a decoder must have read: every non-null member, plus null
 * members of nullable fields (`nullable`, NULL-terminated). */
static size_t fields_given(json_t *o, const char *const *nullable)
{
	const char *key;
	json_t *v;
	size_t n = 0;

	json_object_foreach(o, key, v) {
		if (!json_is_null(v)) {
			n++;
			continue;
		}
		for (const char *const *k = nullable; *k; k++)
			if (!strcmp(*k, key))
				n++;
	}
	return n;
}

static const char *str_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static void tenant_new(json_t *v)
{
	struct store_tenant_new t;
	struct mu_error err = { 0 };
	int ret = codec_tenant_new_decode(v, &t, &err);

	if (ret < 0)
		return check_refusal(ret, &err);
	require(codec_admin_valid_name(t.name) && codec_admin_valid_name(t.parent), "names");
	require(t.shares >= 0 && t.shares <= CODEC_ADMIN_SHARES_MAX, "shares");
	text_ok(t.description, CODEC_ADMIN_DESCRIPTION_MAX, "description");
	{
		struct store_tenant st = { .name = t.name, .parent = t.parent, .path = "root/x",
					   .shares = t.shares, .description = t.description };
		json_t *o = codec_tenant_encode(&st);
		require(o && !strcmp(str_of(o, "name"), t.name), "tenant encode");
		require(json_integer_value(json_object_get(o, "shares")) == t.shares, "shares encode");
		json_decref(o);
	}
}

static void tenant_patch(json_t *v)
{
	struct store_tenant_patch p;
	struct mu_error err = { 0 };
	int ret = codec_tenant_patch_decode(v, &p, &err);

	if (ret < 0)
		return check_refusal(ret, &err);
	require((p.set & ~15u) == 0, "patch bits");
	if (p.set & STORE_TENANT_SET_PARENT)
		require(codec_admin_valid_name(p.parent), "parent");
	if (p.set & STORE_TENANT_SET_SHARES)
		require(p.shares >= 0 && p.shares <= CODEC_ADMIN_SHARES_MAX, "shares");
	if (p.set & STORE_TENANT_SET_DESCRIPTION)
		text_ok(p.description, CODEC_ADMIN_DESCRIPTION_MAX, "description");
	if (p.set & STORE_TENANT_SET_UNIX_ACCOUNT) /* "" = none, else a Unix user name */
		require(p.unix_account && strlen(p.unix_account) <= 32 &&
			strspn(p.unix_account, "abcdefghijklmnopqrstuvwxyz0123456789_.-") ==
				strlen(p.unix_account) &&
			!(p.unix_account[0] >= '0' && p.unix_account[0] <= '9') &&
			p.unix_account[0] != '.' && p.unix_account[0] != '-',
			"unix_account");
	{
		/* unix_account: null is a value ("none"), the others' null is absent */
		static const char *const nullable[] = { "unix_account", NULL };
		require(fields_given(v, nullable) == (size_t)__builtin_popcount(p.set), "every field read");
	}
}

static void quota(json_t *v)
{
	struct store_quota q;
	struct mu_error err = { 0 };
	json_t *o;
	int ret = codec_quota_decode(v, &q, &err);

	if (ret < 0)
		return check_refusal(ret, &err);
	text_ok(q.gpu_model, CODEC_ADMIN_GPU_MODEL_MAX, "gpu_model");
	require(q.guaranteed_gpus >= 0 && q.guaranteed_gpus <= CODEC_ADMIN_GPUS_MAX, "guaranteed");
	require(q.max_gpus == -1 || (q.max_gpus >= q.guaranteed_gpus && q.max_gpus <= CODEC_ADMIN_GPUS_MAX),
		"max_gpus");
	require(q.max_running_jobs >= -1 && q.max_pending_jobs >= -1, "job limits");
	require(q.max_time_limit == -1 || q.max_time_limit >= 1, "time limit");
	require(q.max_time_limit <= CODEC_ADMIN_INT32_MAX && q.max_running_jobs <= CODEC_ADMIN_INT32_MAX &&
			q.max_pending_jobs <= CODEC_ADMIN_INT32_MAX,
		"int32 limits");
	q.tenant = "t";
	o = codec_quota_encode(&q);
	require(json_is_null(json_object_get(o, "max_gpus")) == (q.max_gpus < 0), "null = no limit");
	json_decref(o);
}

static void pclass_checks(const struct store_pclass *p)
{
	require(p->priority >= -1000000000 && p->priority <= 1000000000, "priority");
	require(p->default_time_limit >= 1 && p->default_time_limit <= CODEC_ADMIN_INT32_MAX, "default");
	require(p->max_time_limit == -1 || p->max_time_limit >= 1, "max");
	require(p->grace_period >= 0 && p->grace_period <= 86400, "grace");
}

static void pclass_new(json_t *v)
{
	struct store_pclass p;
	struct mu_error err = { 0 };
	json_t *o;
	int ret = codec_pclass_new_decode(v, &p, &err);

	if (ret < 0)
		return check_refusal(ret, &err);
	require(codec_admin_valid_name(p.name), "name");
	pclass_checks(&p);
	require(p.max_time_limit == -1 || p.default_time_limit <= p.max_time_limit, "default <= max");
	text_ok(p.description, CODEC_ADMIN_DESCRIPTION_MAX, "description");
	o = codec_pclass_encode(&p);
	require(!strcmp(str_of(o, "name"), p.name), "encode name");
	require(json_is_boolean(json_object_get(o, "is_default")), "encode is_default");
	json_decref(o);
}

static void pclass_patch(json_t *v)
{
	struct store_pclass p;
	struct mu_error err = { 0 };
	unsigned set;
	int ret = codec_pclass_patch_decode(v, &set, &p, &err);

	if (ret < 0)
		return check_refusal(ret, &err);
	require((set & ~0x7fu) == 0, "patch bits");
	{
		static const char *const nullable[] = { "max_time_limit", NULL };
		require(fields_given(v, nullable) == (size_t)__builtin_popcount(set), "every field read");
	}
	if (set & STORE_PCLASS_SET_DEFAULT_TIME_LIMIT)
		require(p.default_time_limit >= 1, "default");
	if (set & STORE_PCLASS_SET_GRACE_PERIOD)
		require(p.grace_period >= 0 && p.grace_period <= 86400, "grace");
}

static void token(json_t *v)
{
	struct codec_token_new t;
	struct mu_error err = { 0 };
	int ret = codec_token_new_decode(v, &t, &err);

	if (ret < 0)
		return check_refusal(ret, &err);
	require(!strcmp(t.role, "admin") || !strcmp(t.role, "tenant") || !strcmp(t.role, "reader") ||
			!strcmp(t.role, "agent"),
		"role");
	require(strcmp(t.role, "tenant") || t.tenant, "tenant token has a tenant");
	require(strcmp(t.role, "agent") || (t.node && !t.tenant), "agent token has a node");
	require(!t.node || !strcmp(t.role, "agent"), "node only for agents");
	require(strcmp(t.role, "admin") || !t.tenant, "admin has no tenant");
	require(!t.tenant || codec_admin_valid_name(t.tenant), "tenant name");
	require(!t.user[0] || codec_admin_valid_user(t.user), "user");
	require(!t.expires_at || codec_admin_valid_time(t.expires_at), "expires_at");
	text_ok(t.name, CODEC_ADMIN_TOKEN_NAME_MAX, "name");
}

static void drain(json_t *v)
{
	const char *reason;
	struct mu_error err = { 0 };
	int ret = codec_drain_decode(v, &reason, &err);

	if (ret < 0)
		return check_refusal(ret, &err);
	text_ok(reason, CODEC_ADMIN_REASON_MAX, "reason");
}

/* The scalar validators on raw bytes (may hold anything). */
static void scalars(const char *s, size_t n)
{
	char *z = malloc(n + 1);
	struct mu_error err = { 0 };
	int limit;

	memcpy(z, s, n);
	z[n] = '\0';
	if (codec_admin_valid_name(z))
		require(strlen(z) >= 1 && strlen(z) <= CODEC_ADMIN_NAME_MAX && !strchr(z, '/'), "valid name");
	if (codec_admin_valid_user(z))
		require(strlen(z) >= 1 && strlen(z) <= CODEC_ADMIN_USER_MAX, "valid user");
	if (codec_admin_valid_time(z))
		require(strlen(z) >= 20 && z[4] == '-' && (z[10] == 'T' || z[10] == 't'), "valid time");
	if (codec_limit_decode(z, &limit, &err) == 0)
		require(limit >= 1 && limit <= 1000, "limit");
	free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static void (*const decoders[])(json_t *) = { tenant_new, tenant_patch, quota, pclass_new,
						      pclass_patch, token, drain };
	json_t *v;

	if (size < 1)
		return 0;
	if (data[0] >= sizeof(decoders) / sizeof(decoders[0])) {
		scalars((const char *)data + 1, size - 1);
		return 0;
	}
	v = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!v)
		return 0;
	decoders[data[0]](v);
	json_decref(v);
	return 0;
}
