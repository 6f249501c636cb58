/* Unit tests of api/codec_admin.c: every decoder with good bodies and with
 * bad values of every kind, each checked for its code and field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "codec_admin.h"

typedef int (*decode_fn)(const json_t *body, struct mu_error *err);

static int dec_tenant_new(const json_t *b, struct mu_error *e)
{
	struct store_tenant_new t;
	return codec_tenant_new_decode(b, &t, e);
}
static int dec_tenant_patch(const json_t *b, struct mu_error *e)
{
	struct store_tenant_patch t;
	return codec_tenant_patch_decode(b, &t, e);
}
static int dec_quota(const json_t *b, struct mu_error *e)
{
	struct store_quota q;
	return codec_quota_decode(b, &q, e);
}
static int dec_pclass_new(const json_t *b, struct mu_error *e)
{
	struct store_pclass p;
	return codec_pclass_new_decode(b, &p, e);
}
static int dec_pclass_patch(const json_t *b, struct mu_error *e)
{
	struct store_pclass p;
	unsigned set;
	return codec_pclass_patch_decode(b, &set, &p, e);
}
static int dec_token(const json_t *b, struct mu_error *e)
{
	struct codec_token_new t;
	return codec_token_new_decode(b, &t, e);
}
static int dec_drain(const json_t *b, struct mu_error *e)
{
	const char *reason;
	return codec_drain_decode(b, &reason, e);
}

/* Parses `text` (which may hold \u0000 escapes) and expects `code`/`field`. */
static void expect(decode_fn fn, const char *text, int code, const char *field)
{
	json_error_t jerr;
	json_t *b = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	struct mu_error err;
	int ret;

	if (!b)
		fail_msg("test body does not parse: %s: %s", text, jerr.text);
	mu_error_clear(&err);
	ret = fn(b, &err);
	if (ret != code)
		fail_msg("%s: got %d (%s: %s), want %d", text, ret, err.field, err.msg, code);
	if (field && strcmp(err.field, field) != 0)
		fail_msg("%s: field \"%s\", want \"%s\"", text, err.field, field);
	json_decref(b);
}

static char *repeat(char c, size_t n)
{
	static char buf[8192];
	memset(buf, c, n);
	buf[n] = '\0';
	return buf;
}

static void tenant_new(void **state)
{
	json_t *b = json_pack("{s:s}", "name", "ml");
	struct store_tenant_new t;
	struct mu_error err;
	static char body[16384];
	(void)state;

	assert_int_equal(codec_tenant_new_decode(b, &t, &err), 0);
	assert_string_equal(t.name, "ml");
	assert_string_equal(t.parent, "root");
	assert_int_equal(t.shares, 1);
	assert_string_equal(t.description, "");
	json_decref(b);

	expect(dec_tenant_new, "{\"name\":\"a.b-c_9\",\"parent\":\"ml\",\"shares\":0,\"description\":\"x\"}", 0, NULL);
	expect(dec_tenant_new, "{\"name\":\"ml\",\"shares\":1000000}", 0, NULL);
	expect(dec_tenant_new, "{\"name\":\"ml\",\"description\":\"\xc3\xa9t\xc3\xa9\"}", 0, NULL);
	/* every kind of bad value */
	expect(dec_tenant_new, "[]", MU_ETYPE, "");
	expect(dec_tenant_new, "\"ml\"", MU_ETYPE, "");
	expect(dec_tenant_new, "{}", MU_EMISSING, "name");
	expect(dec_tenant_new, "{\"name\":\"ml\",\"color\":1}", MU_EUNKNOWNFIELD, "color");
	expect(dec_tenant_new, "{\"name\":5}", MU_ETYPE, "name");
	expect(dec_tenant_new, "{\"name\":null}", MU_EMISSING, "name");
	expect(dec_tenant_new, "{\"name\":\"ML\"}", MU_EINVAL, "name");
	expect(dec_tenant_new, "{\"name\":\"\"}", MU_EINVAL, "name");
	expect(dec_tenant_new, "{\"name\":\"-ml\"}", MU_EINVAL, "name");
	expect(dec_tenant_new, "{\"name\":\"m/l\"}", MU_EINVAL, "name");
	expect(dec_tenant_new, "{\"name\":\"ml'; DROP TABLE tenants;--\"}", MU_EINVAL, "name");
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", repeat('a', 63));
	expect(dec_tenant_new, body, 0, NULL);
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", repeat('a', 64));
	expect(dec_tenant_new, body, MU_ETOOLONG, "name");
	expect(dec_tenant_new, "{\"name\":\"m\\u0000l\"}", MU_EUTF8, "name");
	expect(dec_tenant_new, "{\"name\":\"ml\",\"parent\":\"Root\"}", MU_EINVAL, "parent");
	expect(dec_tenant_new, "{\"name\":\"ml\",\"parent\":null,\"shares\":null,\"description\":null}", 0, NULL);
	expect(dec_tenant_new, "{\"name\":\"ml\",\"shares\":-1}", MU_ERANGE, "shares");
	expect(dec_tenant_new, "{\"name\":\"ml\",\"shares\":1000001}", MU_ERANGE, "shares");
	expect(dec_tenant_new, "{\"name\":\"ml\",\"shares\":9223372036854775807}", MU_ERANGE, "shares");
	expect(dec_tenant_new, "{\"name\":\"ml\",\"shares\":1.5}", MU_ETYPE, "shares");
	expect(dec_tenant_new, "{\"name\":\"ml\",\"shares\":\"1\"}", MU_ETYPE, "shares");
	expect(dec_tenant_new, "{\"name\":\"ml\",\"shares\":true}", MU_ETYPE, "shares");
	expect(dec_tenant_new, "{\"name\":\"ml\",\"description\":7}", MU_ETYPE, "description");
	expect(dec_tenant_new, "{\"name\":\"ml\",\"description\":\"a\\u0000b\"}", MU_EUTF8, "description");
	snprintf(body, sizeof(body), "{\"name\":\"ml\",\"description\":\"%s\"}", repeat('d', 1025));
	expect(dec_tenant_new, body, MU_ETOOLONG, "description");
	/* 1024 two-byte characters are 1024 characters, not 2048 */
	{
		size_t n = 0;
		n += (size_t)snprintf(body, sizeof(body), "{\"name\":\"ml\",\"description\":\"");
		for (int i = 0; i < 1024; i++) {
			body[n++] = '\xc3';
			body[n++] = '\xa9';
		}
		snprintf(body + n, sizeof(body) - n, "\"}");
		expect(dec_tenant_new, body, 0, NULL);
	}
}

static void tenant_patch(void **state)
{
	json_t *b = json_pack("{s:i, s:s}", "shares", 7, "parent", "ml");
	struct store_tenant_patch p;
	struct mu_error err;
	(void)state;

	assert_int_equal(codec_tenant_patch_decode(b, &p, &err), 0);
	assert_int_equal(p.set, STORE_TENANT_SET_SHARES | STORE_TENANT_SET_PARENT);
	assert_int_equal(p.shares, 7);
	assert_string_equal(p.parent, "ml");
	json_decref(b);
	expect(dec_tenant_patch, "{}", 0, NULL);
	expect(dec_tenant_patch, "{\"name\":\"x\"}", MU_EUNKNOWNFIELD, "name");
	expect(dec_tenant_patch, "{\"shares\":-3}", MU_ERANGE, "shares");
	expect(dec_tenant_patch, "{\"shares\":null,\"parent\":null}", 0, NULL);
	expect(dec_tenant_patch, "{\"parent\":\"A B\"}", MU_EINVAL, "parent");
	expect(dec_tenant_patch, "{\"parent\":[]}", MU_ETYPE, "parent");
	expect(dec_tenant_patch, "{\"description\":{}}", MU_ETYPE, "description");
	expect(dec_tenant_patch, "null", MU_ETYPE, "");
}

static void quota(void **state)
{
	json_t *b = json_pack("{s:i, s:n, s:s}", "guaranteed_gpus", 8, "max_gpus", "max_time_limit", "1-0");
	struct store_quota q;
	struct mu_error err;
	(void)state;

	assert_int_equal(codec_quota_decode(b, &q, &err), 0);
	assert_string_equal(q.gpu_model, "");
	assert_int_equal(q.guaranteed_gpus, 8);
	assert_int_equal(q.max_gpus, -1);
	assert_int_equal(q.max_running_jobs, -1);
	assert_int_equal(q.max_time_limit, 86400);
	json_decref(b);
	expect(dec_quota, "{}", 0, NULL);
	expect(dec_quota, "{\"guaranteed_gpus\":4,\"max_gpus\":4}", 0, NULL);
	expect(dec_quota, "{\"gpu_model\":\"H100\",\"max_running_jobs\":0,\"max_pending_jobs\":0}", 0, NULL);
	expect(dec_quota, "{\"guaranteed_gpus\":5,\"max_gpus\":4}", MU_ERANGE, "max_gpus");
	expect(dec_quota, "{\"guaranteed_gpus\":-1}", MU_ERANGE, "guaranteed_gpus");
	expect(dec_quota, "{\"guaranteed_gpus\":null}", 0, NULL);
	expect(dec_quota, "{\"max_gpus\":-1}", MU_ERANGE, "max_gpus");
	expect(dec_quota, "{\"max_gpus\":\"4\"}", MU_ETYPE, "max_gpus");
	expect(dec_quota, "{\"max_running_jobs\":2147483648}", MU_ERANGE, "max_running_jobs");
	expect(dec_quota, "{\"max_pending_jobs\":1e3}", MU_ETYPE, "max_pending_jobs");
	expect(dec_quota, "{\"max_time_limit\":0}", MU_ERANGE, "max_time_limit");
	expect(dec_quota, "{\"max_time_limit\":\"1h\"}", MU_EINVAL, "max_time_limit");
	expect(dec_quota, "{\"max_time_limit\":\"99999999999\"}", MU_ERANGE, "max_time_limit");
	expect(dec_quota, "{\"max_time_limit\":false}", MU_ETYPE, "max_time_limit");
	expect(dec_quota, "{\"gpu_model\":null}", 0, NULL);
	expect(dec_quota, "{\"tenant\":\"ml\"}", MU_EUNKNOWNFIELD, "tenant");
	{
		static char body[16384];
		snprintf(body, sizeof(body), "{\"gpu_model\":\"%s\"}", repeat('G', 65));
		expect(dec_quota, body, MU_ETOOLONG, "gpu_model");
	}
}

static void pclass(void **state)
{
	json_t *b = json_pack("{s:s, s:i}", "name", "urgent", "priority", 5000);
	struct store_pclass p;
	unsigned set;
	struct mu_error err;
	(void)state;

	assert_int_equal(codec_pclass_new_decode(b, &p, &err), 0);
	assert_string_equal(p.name, "urgent");
	assert_int_equal(p.priority, 5000);
	assert_true(p.preemptible);
	assert_int_equal(p.default_time_limit, 3600);
	assert_int_equal(p.max_time_limit, -1);
	assert_int_equal(p.grace_period, 30);
	assert_false(p.is_default);
	json_decref(b);

	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":-5,\"preemptible\":false,\"default_time_limit\":\"2:00:00\","
			       "\"max_time_limit\":86400,\"grace_period\":0,\"is_default\":true,\"description\":\"d\"}", 0, NULL);
	expect(dec_pclass_new, "{\"priority\":1}", MU_EMISSING, "name");
	expect(dec_pclass_new, "{\"name\":\"x\"}", MU_EMISSING, "priority");
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1,\"weight\":1}", MU_EUNKNOWNFIELD, "weight");
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1000000001}", MU_ERANGE, "priority");
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":\"high\"}", MU_ETYPE, "priority");
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1,\"preemptible\":1}", MU_ETYPE, "preemptible");
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1,\"preemptible\":null}", 0, NULL);
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":null}", MU_EMISSING, "priority");
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1,\"default_time_limit\":0}", MU_ERANGE, "default_time_limit");
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1,\"default_time_limit\":null}", 0, NULL);
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1,\"default_time_limit\":\"soon\"}", MU_EINVAL, "default_time_limit");
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1,\"default_time_limit\":7200,\"max_time_limit\":3600}", MU_ERANGE, "default_time_limit");
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1,\"max_time_limit\":null}", 0, NULL);
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1,\"max_time_limit\":60}", MU_ERANGE, "default_time_limit");
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1,\"grace_period\":-1}", MU_ERANGE, "grace_period");
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1,\"grace_period\":86401}", MU_ERANGE, "grace_period");
	expect(dec_pclass_new, "{\"name\":\"x\",\"priority\":1,\"is_default\":\"yes\"}", MU_ETYPE, "is_default");
	expect(dec_pclass_new, "{\"name\":\"X\",\"priority\":1}", MU_EINVAL, "name");

	b = json_pack("{s:n, s:b}", "max_time_limit", "is_default", 1);
	assert_int_equal(codec_pclass_patch_decode(b, &set, &p, &err), 0);
	assert_int_equal(set, STORE_PCLASS_SET_MAX_TIME_LIMIT | STORE_PCLASS_SET_IS_DEFAULT);
	assert_int_equal(p.max_time_limit, -1);
	assert_true(p.is_default);
	json_decref(b);
	expect(dec_pclass_patch, "{}", 0, NULL);
	expect(dec_pclass_patch, "{\"name\":\"y\"}", MU_EUNKNOWNFIELD, "name");
	expect(dec_pclass_patch, "{\"default_time_limit\":100,\"max_time_limit\":50}", MU_ERANGE, "default_time_limit");
	expect(dec_pclass_patch, "{\"priority\":null}", 0, NULL);
	expect(dec_token, "{\"role\":null}", MU_EMISSING, "role");
	expect(dec_pclass_patch, "[1]", MU_ETYPE, "");
}

static void token(void **state)
{
	json_t *b = json_pack("{s:s, s:s, s:s, s:s}", "role", "tenant", "tenant", "ml", "user", "alice@x.org",
			      "expires_at", "2030-01-31T10:00:00.5+02:00");
	struct codec_token_new t;
	struct mu_error err;
	(void)state;

	assert_int_equal(codec_token_new_decode(b, &t, &err), 0);
	assert_string_equal(t.role, "tenant");
	assert_string_equal(t.tenant, "ml");
	assert_string_equal(t.user, "alice@x.org");
	assert_string_equal(t.name, "");
	assert_null(t.node);
	json_decref(b);
	expect(dec_token, "{\"role\":\"admin\",\"name\":\"ops\"}", 0, NULL);
	expect(dec_token, "{\"role\":\"reader\"}", 0, NULL);
	expect(dec_token, "{\"role\":\"reader\",\"tenant\":\"ml\"}", 0, NULL);
	expect(dec_token, "{\"role\":\"agent\",\"node\":\"gpu-1\"}", 0, NULL);
	expect(dec_token, "{\"role\":\"tenant\",\"tenant\":\"ml\",\"expires_at\":null}", 0, NULL);
	expect(dec_token, "{}", MU_EMISSING, "role");
	expect(dec_token, "{\"role\":\"root\"}", MU_EINVAL, "role");
	expect(dec_token, "{\"role\":1}", MU_ETYPE, "role");
	expect(dec_token, "{\"role\":\"tenant\"}", MU_EMISSING, "tenant");
	expect(dec_token, "{\"role\":\"tenant\",\"tenant\":\"ML!\"}", MU_EINVAL, "tenant");
	expect(dec_token, "{\"role\":\"admin\",\"tenant\":\"ml\"}", MU_EINVAL, "tenant");
	expect(dec_token, "{\"role\":\"agent\"}", MU_EMISSING, "node");
	expect(dec_token, "{\"role\":\"agent\",\"node\":\"n\",\"tenant\":\"ml\"}", MU_EINVAL, "tenant");
	expect(dec_token, "{\"role\":\"reader\",\"node\":\"n\"}", MU_EINVAL, "node");
	expect(dec_token, "{\"role\":\"reader\",\"user\":\"bob smith\"}", MU_EINVAL, "user");
	expect(dec_token, "{\"role\":\"reader\",\"user\":7}", MU_ETYPE, "user");
	expect(dec_token, "{\"role\":\"reader\",\"secret\":\"x\"}", MU_EUNKNOWNFIELD, "secret");
	expect(dec_token, "{\"role\":\"reader\",\"expires_at\":\"tomorrow\"}", MU_EINVAL, "expires_at");
	expect(dec_token, "{\"role\":\"reader\",\"expires_at\":\"2030-02-30T00:00:00Z\"}", MU_EINVAL, "expires_at");
	expect(dec_token, "{\"role\":\"reader\",\"expires_at\":\"2030-01-01T00:00:00\"}", MU_EINVAL, "expires_at");
	expect(dec_token, "{\"role\":\"reader\",\"expires_at\":\"2030-01-01T24:00:00Z\"}", MU_EINVAL, "expires_at");
	expect(dec_token, "{\"role\":\"reader\",\"expires_at\":1893456000}", MU_ETYPE, "expires_at");
	{
		static char body[16384];
		snprintf(body, sizeof(body), "{\"role\":\"reader\",\"name\":\"%s\"}", repeat('n', 129));
		expect(dec_token, body, MU_ETOOLONG, "name");
		snprintf(body, sizeof(body), "{\"role\":\"reader\",\"user\":\"%s\"}", repeat('u', 65));
		expect(dec_token, body, MU_ETOOLONG, "user");
	}
}

static void times(void **state)
{
	(void)state;
	assert_true(codec_admin_valid_time("2026-11-30T06:14:40Z"));
	assert_true(codec_admin_valid_time("2028-02-29T00:00:00.123456Z"));
	assert_true(codec_admin_valid_time("2026-11-30T06:14:40-05:30"));
	assert_false(codec_admin_valid_time("2027-02-29T00:00:00Z"));
	assert_false(codec_admin_valid_time("2026-11-30 06:14:40Z"));
	assert_false(codec_admin_valid_time("2026-11-30T06:14:40Zjunk"));
	assert_false(codec_admin_valid_time("2026-11-30T06:14:40."));
	assert_false(codec_admin_valid_time("2026-13-01T00:00:00Z"));
	assert_false(codec_admin_valid_time(""));
	assert_false(codec_admin_valid_time("2026-11-30T06:14:40+5:00"));
	assert_true(codec_admin_valid_path("root", 4));
	assert_true(codec_admin_valid_path("root/ml/vision", 14));
	assert_true(codec_admin_valid_path("root/ml|H100", 7));
	assert_false(codec_admin_valid_path("root/", 5));
	assert_false(codec_admin_valid_path("root//ml", 8));
	assert_false(codec_admin_valid_path("rootx", 5));
	assert_false(codec_admin_valid_path("root/ML", 7));
	assert_false(codec_admin_valid_path("ml", 2));
	assert_false(codec_admin_valid_path("", 0));
}

static void drain_and_limit(void **state)
{
	const char *reason = NULL;
	struct mu_error err;
	int limit;
	(void)state;

	assert_int_equal(codec_drain_decode(NULL, &reason, &err), 0);
	assert_string_equal(reason, "");
	expect(dec_drain, "{\"reason\":\"xid 79\"}", 0, NULL);
	expect(dec_drain, "{}", 0, NULL);
	expect(dec_drain, "{\"reason\":79}", MU_ETYPE, "reason");
	expect(dec_drain, "{\"why\":\"x\"}", MU_EUNKNOWNFIELD, "why");
	expect(dec_drain, "\"x\"", MU_ETYPE, "");

	assert_int_equal(codec_limit_decode(NULL, &limit, &err), 0);
	assert_int_equal(limit, 100);
	assert_int_equal(codec_limit_decode("1000", &limit, &err), 0);
	assert_int_equal(limit, 1000);
	assert_int_equal(codec_limit_decode("0", &limit, &err), MU_ERANGE);
	assert_string_equal(err.field, "limit");
	assert_int_equal(codec_limit_decode("1001", &limit, &err), MU_ERANGE);
	assert_int_equal(codec_limit_decode("99999999999999999999", &limit, &err), MU_ERANGE);
	assert_int_equal(codec_limit_decode("-1", &limit, &err), MU_ETYPE);
	assert_int_equal(codec_limit_decode("", &limit, &err), MU_ETYPE);
	assert_int_equal(codec_limit_decode("ten", &limit, &err), MU_ETYPE);
}

static void encoders(void **state)
{
	struct store_tenant t = { .id = 2, .name = "ml", .parent = "root", .path = "root/ml", .shares = 3,
				  .description = "d", .created_at = "2026-11-30T06:14:40.123Z" };
	struct store_quota q = { .tenant = "ml", .gpu_model = "", .guaranteed_gpus = 2, .max_gpus = -1,
				 .max_running_jobs = 5, .max_pending_jobs = -1, .max_time_limit = -1 };
	struct store_gpu g = { .index = 0, .uuid = "GPU-1", .model = "H100", .healthy = true, .allocated = true };
	struct store_node n = { .name = "n1", .state = "MIXED", .labels_json = "{\"zone\":\"a\"}", .gpu_count = 1,
				.gpus = &g, .n_gpus = 1 };
	struct store_token k = { .id = 9, .name = "ci", .role = "tenant", .tenant = "ml", .user = "u", .prefix = "mst_abcd" };
	json_t *j;
	(void)state;

	j = codec_tenant_encode(&t);
	assert_string_equal(json_string_value(json_object_get(j, "path")), "root/ml");
	assert_int_equal(json_integer_value(json_object_get(j, "shares")), 3);
	assert_true(json_is_null(json_object_get(j, "updated_at")));
	json_decref(j);
	t.parent = NULL;
	j = codec_tenant_encode(&t);
	assert_true(json_is_null(json_object_get(j, "parent")));
	json_decref(j);

	j = codec_quota_encode(&q);
	assert_true(json_is_null(json_object_get(j, "max_gpus")));
	assert_int_equal(json_integer_value(json_object_get(j, "max_running_jobs")), 5);
	json_decref(j);

	j = codec_node_encode(&n);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "labels"), "zone")), "a");
	assert_true(json_is_true(json_object_get(json_array_get(json_object_get(j, "gpus"), 0), "allocated")));
	assert_true(json_is_null(json_object_get(j, "last_heartbeat")));
	json_decref(j);
	n.labels_json = "not json";
	j = codec_node_encode(&n);
	assert_true(json_is_object(json_object_get(j, "labels")));
	json_decref(j);

	j = codec_token_encode(&k, NULL);
	assert_null(json_object_get(j, "token"));
	assert_null(json_object_get(j, "secret_sha256"));
	assert_true(json_is_null(json_object_get(j, "node")));
	json_decref(j);
	j = codec_token_encode(&k, "mst_secret");
	assert_string_equal(json_string_value(json_object_get(j, "token")), "mst_secret");
	json_decref(j);

	j = codec_page_encode(json_array(), NULL);
	assert_true(json_is_null(json_object_get(j, "next_cursor")));
	json_decref(j);
}

/* The caller rule REST and gRPC share for POST /v1/tokens / CreateToken. */
static void token_authorize(void **state)
{
	struct codec_token_new in = { .role = "admin" };
	struct mu_error err = { 0 };
	(void)state;

	assert_int_equal(codec_token_new_authorize(&in, true, NULL, NULL, &err), 0);
	assert_int_equal(codec_token_new_authorize(&in, false, "ml", "alice", &err), MU_EFORBIDDEN);
	assert_string_equal(err.field, "role");
	in.role = "agent";
	assert_int_equal(codec_token_new_authorize(&in, false, "ml", "alice", &err), MU_EFORBIDDEN);
	in.role = "reader";
	assert_int_equal(codec_token_new_authorize(&in, false, "ml", "alice", &err), 0);
	assert_string_equal(in.tenant, "ml"); /* the caller's own tenant by default */
	in.tenant = "vision";
	assert_int_equal(codec_token_new_authorize(&in, false, "ml", "alice", &err), 0);
	assert_string_equal(in.tenant, "vision"); /* kept: the store checks the subtree */
	in.tenant = NULL;
	in.role = "tenant";
	assert_int_equal(codec_token_new_authorize(&in, false, NULL, "alice", &err), MU_EFORBIDDEN);
	assert_string_equal(err.field, "tenant");
	/* a non-admin mints only for its own user */
	in.tenant = "ml";
	in.user = NULL;
	assert_int_equal(codec_token_new_authorize(&in, false, "ml", "alice", &err), 0);
	assert_string_equal(in.user, "alice");
	in.user = "bob";
	assert_int_equal(codec_token_new_authorize(&in, false, "ml", "alice", &err), MU_EFORBIDDEN);
	assert_string_equal(err.field, "user");
	assert_int_equal(codec_token_new_authorize(&in, true, NULL, NULL, &err), 0);
}

static void cursors(void **state)
{
	struct mu_error err = { 0 };
	char big[600];
	(void)state;

	memset(big, 'n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(codec_cursor_check(CODEC_CURSOR_TENANTS, NULL, &err), 0);
	assert_int_equal(codec_cursor_check(CODEC_CURSOR_TENANTS, "root/ml", &err), 0);
	assert_int_equal(codec_cursor_check(CODEC_CURSOR_TENANTS, "ml", &err), MU_EINVAL);
	assert_string_equal(err.field, "cursor");
	assert_int_equal(codec_cursor_check(CODEC_CURSOR_PCLASSES, "normal", &err), 0);
	assert_int_equal(codec_cursor_check(CODEC_CURSOR_PCLASSES, "Bad", &err), MU_EINVAL);
	assert_int_equal(codec_cursor_check(CODEC_CURSOR_QUOTAS, "root/ml|H100", &err), 0);
	assert_int_equal(codec_cursor_check(CODEC_CURSOR_QUOTAS, "root/ml|", &err), 0);
	assert_int_equal(codec_cursor_check(CODEC_CURSOR_QUOTAS, "root/ml", &err), MU_EINVAL);
	assert_int_equal(codec_cursor_check(CODEC_CURSOR_QUOTAS, "a|b", &err), MU_EINVAL);
	assert_int_equal(codec_cursor_check(CODEC_CURSOR_NODES, "gpu-1", &err), 0);
	assert_int_equal(codec_cursor_check(CODEC_CURSOR_NODES, "\xff", &err), MU_EINVAL);
	assert_int_equal(codec_cursor_check(CODEC_CURSOR_NODES, big, &err), MU_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tenant_new), cmocka_unit_test(tenant_patch), cmocka_unit_test(quota),
		cmocka_unit_test(pclass),     cmocka_unit_test(token),        cmocka_unit_test(times),
		cmocka_unit_test(drain_and_limit), cmocka_unit_test(encoders),
		cmocka_unit_test(token_authorize), cmocka_unit_test(cursors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
