/*
 * grpc_admin.c - muster.v1.AdminService (tenants, quotas, priority classes,
 * tokens, nodes, drain/resume) and grpc.health.v1.Health.
 *
 * Writes go through the REST admin codecs (the request becomes the JSON
 * body REST takes: grpc_codec.c), so names, ranges and errors are the REST
 * ones; reads and writes call the same store functions with the same scope
 * rules, and the roles in the table below are the routes.def ones.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_settings.h"
#include "ops_admin.h"
#include "ops_admin_read.h"
#include "ops_page.h"
#include "store_settings.h"
#include "codec_admin.h"
#include "grpc/health/v1/health.pb-c.h"
#include "grpc_codec.h"
#include "grpc_internal.h"
#include "muster/v1/admin.pb-c.h"
#include "rest.h"
#include "store_auth.h"
#include "store_node.h"
#include "store_pclass.h"
#include "store_quota.h"
#include "store_tenant.h"
#include "store_token_admin.h"

static void *A(struct gcall *c, size_t n)
{
	return mu_arena_alloc(&c->arena, n ? n : 1);
}

/* page_token "" = the first page; the cursor's shape is checked by ops. */
static int page_args(struct gcall *c, int32_t size, const char *token, struct ops_page_args *pg)
{
	pg->cursor = token && token[0] ? token : NULL;
	return ops_page_size(size, &pg->limit, &c->err);
}

static int empty_reply(struct gcall *c)
{
	Muster__V1__Empty *resp = A(c, sizeof(*resp));

	muster__v1__empty__init(resp);
	c->resp = &resp->base;
	return 0;
}

/* ---- tenants ------------------------------------------------------------- */

static Muster__V1__Tenant *tenant_proto(struct gcall *c, const struct store_tenant *t)
{
	Muster__V1__Tenant *p = A(c, sizeof(*p));

	muster__v1__tenant__init(p);
	p->name = gstr(c, t->name);
	p->parent = gstr(c, t->parent);
	p->path = gstr(c, t->path);
	p->shares = t->shares;
	p->description = gstr(c, t->description);
	p->unix_account = gstr(c, t->unix_account);
	p->created_at = gstr(c, t->created_at);
	p->updated_at = gstr(c, t->updated_at);
	return p;
}

static int tenants_list(PGconn *db, struct gcall *c)
{
	const Muster__V1__ListTenantsRequest *r = (const void *)c->req;
	Muster__V1__ListTenantsResponse *resp = A(c, sizeof(*resp));
	struct store_tenant_page page = { 0 };
	struct ops_page_args pg;
	int ret;

	if ((ret = page_args(c, r->page_size, r->page_token, &pg)) < 0)
		return ret;
	ret = ops_tenant_list(db, &c->arena, &c->who, &pg, &page, &c->err);
	if (ret < 0)
		return ret;
	muster__v1__list_tenants_response__init(resp);
	resp->tenants = A(c, page.n * sizeof(*resp->tenants));
	for (size_t i = 0; i < page.n; i++)
		resp->tenants[resp->n_tenants++] = tenant_proto(c, &page.items[i]);
	resp->next_page_token = gstr(c, page.next_cursor);
	c->resp = &resp->base;
	return 0;
}

static int tenants_get(PGconn *db, struct gcall *c)
{
	const Muster__V1__GetTenantRequest *r = (const void *)c->req;
	struct store_tenant t;
	int ret;

	ret = ops_tenant_get(db, &c->arena, &c->who, r->name, &t, &c->err);
	if (ret < 0)
		return ret;
	c->resp = &tenant_proto(c, &t)->base;
	return 0;
}

static int tenants_create(PGconn *db, struct gcall *c)
{
	const Muster__V1__CreateTenantRequest *r = (const void *)c->req;
	struct store_tenant_new in;
	struct store_tenant t;
	json_t *body = json_object(), *v;
	int ret;

	/* empty = absent, as in every muster.v1 request */
	if ((v = json_string(r->name)))
		json_object_set_new(body, "name", v);
	if (r->parent && r->parent[0] && (v = json_string(r->parent)))
		json_object_set_new(body, "parent", v);
	if (r->shares)
		json_object_set_new(body, "shares", json_integer(r->shares));
	if (r->description && r->description[0] && (v = json_string(r->description)))
		json_object_set_new(body, "description", v);
	if (r->unix_account && r->unix_account[0] && (v = json_string(r->unix_account)))
		json_object_set_new(body, "unix_account", v);
	ret = codec_tenant_new_decode(body, &in, &c->err);
	if (ret < 0)
		goto out;
	ret = ops_tenant_create(db, &c->arena, &c->who, &in, &t, &c->err);
	if (ret < 0)
		goto out;
	c->resp = &tenant_proto(c, &t)->base;
out:
	json_decref(body);
	return ret;
}

/* PATCH /v1/tenants/{name}: the masked fields through the REST codec. */
static int tenants_update(PGconn *db, struct gcall *c)
{
	const Muster__V1__UpdateTenantRequest *r = (const void *)c->req;
	struct store_tenant_patch patch;
	struct store_tenant t;
	json_t *body;
	int ret;

	if (!r->tenant)
		return mu_error_set(&c->err, MU_EMISSING, "tenant", "is required");
	if ((ret = ops_name_check(r->tenant->name, "tenant", &c->err)) < 0)
		return ret;
	if (!(body = grpc_codec_tenant_patch_json(r->tenant, r->update_mask, r->n_update_mask, &c->err)))
		return c->err.code;
	ret = codec_tenant_patch_decode(body, &patch, &c->err);
	if (ret == 0)
		ret = ops_tenant_update(db, &c->arena, r->tenant->name, &patch, &t, &c->err);
	json_decref(body);
	if (ret < 0)
		return ret;
	c->resp = &tenant_proto(c, &t)->base;
	return 0;
}

static int tenants_delete(PGconn *db, struct gcall *c)
{
	const Muster__V1__DeleteTenantRequest *r = (const void *)c->req;
	int ret;

	if ((ret = ops_name_check(r->name, "tenant", &c->err)) < 0)
		return ret;
	ret = ops_tenant_delete(db, r->name, &c->err);
	if (ret < 0)
		return ret;
	return empty_reply(c);
}

/* ---- quotas, classes --------------------------------------------------- */

static Muster__V1__Quota *quota_proto(struct gcall *c, const struct store_quota *q);

static int quotas_list(PGconn *db, struct gcall *c)
{
	const Muster__V1__ListQuotasRequest *r = (const void *)c->req;
	Muster__V1__ListQuotasResponse *resp = A(c, sizeof(*resp));
	struct store_quota_page page = { 0 };
	struct ops_page_args pg;
	int ret;

	if ((ret = page_args(c, r->page_size, r->page_token, &pg)) < 0)
		return ret;
	ret = ops_quota_list(db, &c->arena, &c->who, &pg, &page, &c->err);
	if (ret < 0)
		return ret;
	muster__v1__list_quotas_response__init(resp);
	resp->quotas = A(c, page.n * sizeof(*resp->quotas));
	for (size_t i = 0; i < page.n; i++) {
		resp->quotas[resp->n_quotas++] = quota_proto(c, &page.items[i]);
	}
	resp->next_page_token = gstr(c, page.next_cursor);
	c->resp = &resp->base;
	return 0;
}

static Muster__V1__Quota *quota_proto(struct gcall *c, const struct store_quota *q)
{
	Muster__V1__Quota *p = A(c, sizeof(*p));

	muster__v1__quota__init(p);
	p->tenant = gstr(c, q->tenant);
	p->gpu_model = gstr(c, q->gpu_model);
	p->guaranteed_gpus = q->guaranteed_gpus;
	p->max_gpus = q->max_gpus;
	p->max_running_jobs = q->max_running_jobs;
	p->max_pending_jobs = q->max_pending_jobs;
	p->max_time_limit_s = q->max_time_limit;
	p->updated_at = gstr(c, q->updated_at);
	return p;
}

/* GET /v1/tenants/{name}/quota: scoped like the tenant. */
static int quotas_get(PGconn *db, struct gcall *c)
{
	const Muster__V1__GetTenantQuotasRequest *r = (const void *)c->req;
	Muster__V1__GetTenantQuotasResponse *resp = A(c, sizeof(*resp));
	struct store_quota_page page = { 0 };
	int ret;

	ret = ops_quota_get(db, &c->arena, &c->who, r->tenant, &page, &c->err);
	if (ret < 0)
		return ret;
	muster__v1__get_tenant_quotas_response__init(resp);
	resp->quotas = A(c, page.n * sizeof(*resp->quotas));
	for (size_t i = 0; i < page.n; i++)
		resp->quotas[resp->n_quotas++] = quota_proto(c, &page.items[i]);
	c->resp = &resp->base;
	return 0;
}

static json_t *limit_json(int64_t v)
{
	return v < 0 ? json_null() : json_integer(v);
}

/* Through the REST codec: the same ranges and errors as PUT .../quota. */
static int quota_set(PGconn *db, struct gcall *c)
{
	const Muster__V1__SetQuotaRequest *r = (const void *)c->req;
	const Muster__V1__Quota *q = r->quota;
	struct store_quota in = { 0 }, out;
	json_t *body;
	int ret;

	if (!q)
		return mu_error_set(&c->err, MU_EMISSING, "quota", "required");
	if ((ret = ops_name_check(q->tenant, "tenant", &c->err)) < 0)
		return ret;
	body = json_object();
	if (q->gpu_model && q->gpu_model[0])
		json_object_set_new(body, "gpu_model", json_string(q->gpu_model));
	json_object_set_new(body, "guaranteed_gpus", json_integer(q->guaranteed_gpus));
	json_object_set_new(body, "max_gpus", limit_json(q->max_gpus));
	json_object_set_new(body, "max_running_jobs", limit_json(q->max_running_jobs));
	json_object_set_new(body, "max_pending_jobs", limit_json(q->max_pending_jobs));
	json_object_set_new(body, "max_time_limit", limit_json(q->max_time_limit_s));
	ret = codec_quota_decode(body, &in, &c->err);
	if (ret < 0)
		goto out;
	in.gpu_model = gstr(c, in.gpu_model);
	in.tenant = q->tenant;
	ret = ops_quota_put(db, &c->arena, &c->who, &in, &out, &c->err);
	if (ret < 0)
		goto out;
	c->resp = &quota_proto(c, &out)->base;
out:
	json_decref(body);
	return ret;
}

static int quota_delete(PGconn *db, struct gcall *c)
{
	const Muster__V1__DeleteQuotaRequest *r = (const void *)c->req;
	int ret;

	if ((ret = ops_name_check(r->tenant, "tenant", &c->err)) < 0 ||
	    (ret = ops_gpu_model_check(r->gpu_model, &c->err)) < 0)
		return ret;
	ret = ops_quota_delete(db, &c->who, r->tenant, r->gpu_model, &c->err);
	if (ret < 0)
		return ret;
	return empty_reply(c);
}

static Muster__V1__PriorityClass *pclass_proto(struct gcall *c, const struct store_pclass *q)
{
	Muster__V1__PriorityClass *p = A(c, sizeof(*p));

	muster__v1__priority_class__init(p);
	p->name = gstr(c, q->name);
	p->priority = q->priority;
	p->preemptible = q->preemptible;
	p->default_time_limit_s = q->default_time_limit;
	p->max_time_limit_s = q->max_time_limit < 0 ? 0 : q->max_time_limit;
	p->grace_period_s = q->grace_period;
	p->is_default = q->is_default;
	p->description = gstr(c, q->description);
	p->created_at = gstr(c, q->created_at);
	p->updated_at = gstr(c, q->updated_at);
	return p;
}

static int pclasses_list(PGconn *db, struct gcall *c)
{
	const Muster__V1__ListPriorityClassesRequest *r = (const void *)c->req;
	Muster__V1__ListPriorityClassesResponse *resp = A(c, sizeof(*resp));
	struct store_pclass_page page = { 0 };
	struct ops_page_args pg;
	int ret;

	if ((ret = page_args(c, r->page_size, r->page_token, &pg)) < 0)
		return ret;
	ret = ops_pclass_list(db, &c->arena, &c->who, &pg, &page, &c->err);
	if (ret < 0)
		return ret;
	muster__v1__list_priority_classes_response__init(resp);
	resp->classes = A(c, page.n * sizeof(*resp->classes));
	for (size_t i = 0; i < page.n; i++)
		resp->classes[resp->n_classes++] = pclass_proto(c, &page.items[i]);
	resp->next_page_token = gstr(c, page.next_cursor);
	c->resp = &resp->base;
	return 0;
}

static int pclasses_get(PGconn *db, struct gcall *c)
{
	const Muster__V1__GetPriorityClassRequest *r = (const void *)c->req;
	struct store_pclass out;
	int ret;

	ret = ops_pclass_get(db, &c->arena, &c->who, r->name, &out, &c->err);
	if (ret < 0)
		return ret;
	c->resp = &pclass_proto(c, &out)->base;
	return 0;
}

/* POST /v1/priority-classes through the REST codec (grpc_codec_pclass_json). */
static int pclasses_create(PGconn *db, struct gcall *c)
{
	const Muster__V1__CreatePriorityClassRequest *r = (const void *)c->req;
	struct store_pclass in, out;
	json_t *body;
	int ret;

	if (!r->priority_class)
		return mu_error_set(&c->err, MU_EMISSING, "priority_class", "is required");
	if (!(body = grpc_codec_pclass_json(r->priority_class, true, NULL, 0, &c->err)))
		return c->err.code;
	ret = codec_pclass_new_decode(body, &in, &c->err);
	if (ret == 0)
		ret = ops_pclass_create(db, &c->arena, &c->who, &in, &out, &c->err);
	json_decref(body);
	if (ret < 0)
		return ret;
	c->resp = &pclass_proto(c, &out)->base;
	return 0;
}

static int pclasses_update(PGconn *db, struct gcall *c)
{
	const Muster__V1__UpdatePriorityClassRequest *r = (const void *)c->req;
	struct store_pclass in, out;
	unsigned set;
	json_t *body;
	int ret;

	if (!r->priority_class)
		return mu_error_set(&c->err, MU_EMISSING, "priority_class", "is required");
	if ((ret = ops_name_check(r->priority_class->name, "priority class", &c->err)) < 0)
		return ret;
	if (!(body = grpc_codec_pclass_json(r->priority_class, false, r->update_mask,
					    r->n_update_mask, &c->err)))
		return c->err.code;
	ret = codec_pclass_patch_decode(body, &set, &in, &c->err);
	if (ret == 0)
		ret = ops_pclass_update(db, &c->arena, &c->who, r->priority_class->name, set, &in, &out,
					&c->err);
	json_decref(body);
	if (ret < 0)
		return ret;
	c->resp = &pclass_proto(c, &out)->base;
	return 0;
}

static int pclasses_delete(PGconn *db, struct gcall *c)
{
	const Muster__V1__DeletePriorityClassRequest *r = (const void *)c->req;
	int ret;

	if ((ret = ops_name_check(r->name, "priority class", &c->err)) < 0)
		return ret;
	ret = ops_pclass_delete(db, &c->who, r->name, &c->err);
	if (ret < 0)
		return ret;
	return empty_reply(c);
}

/* ---- tokens -------------------------------------------------------------- */

static Muster__V1__Token *token_proto(struct gcall *c, const struct store_token *t)
{
	Muster__V1__Token *p = A(c, sizeof(*p));

	muster__v1__token__init(p);
	p->id = t->id;
	p->name = gstr(c, t->name);
	p->role = gstr(c, t->role);
	p->tenant = gstr(c, t->tenant);
	p->user = gstr(c, t->user);
	p->node = gstr(c, t->node);
	p->prefix = gstr(c, t->prefix);
	p->created_at = gstr(c, t->created_at);
	p->expires_at = gstr(c, t->expires_at);
	p->last_used_at = gstr(c, t->last_used_at);
	return p;
}

/* POST /v1/tokens: the REST codec and caller rule, then the same store call. */
static int tokens_create(PGconn *db, struct gcall *c)
{
	const Muster__V1__CreateTokenRequest *r = (const void *)c->req;
	struct codec_token_new in;
	struct store_token_new sin;
	struct store_token_created made;
	struct store_token t;
	Muster__V1__Token *p;
	json_t *body;
	int ret;

	if (!(body = grpc_codec_token_json(r, &c->err)))
		return c->err.code;
	ret = codec_token_new_decode(body, &in, &c->err);
	if (ret == 0)
		ret = ops_token_new(&c->who, &in, &sin, &c->err);
	if (ret == 0)
		ret = ops_token_create(db, &c->arena, &c->who, in.tenant, &sin, &made, &t, &c->err);
	if (ret == 0) {
		p = token_proto(c, &t); /* copies out of `body` */
		p->secret = gstr(c, made.secret);
		c->resp = &p->base;
	}
	memset(made.secret, 0, sizeof(made.secret));
	json_decref(body);
	return ret;
}

static int tokens_list(PGconn *db, struct gcall *c)
{
	const Muster__V1__ListTokensRequest *r = (const void *)c->req;
	Muster__V1__ListTokensResponse *resp = A(c, sizeof(*resp));
	struct store_token_page page = { 0 };
	struct ops_page_args pg;
	int ret;

	if ((ret = page_args(c, r->page_size, r->page_token, &pg)) < 0)
		return ret;
	ret = ops_token_list(db, &c->arena, &c->who, &pg, &page, &c->err);
	if (ret < 0)
		return ret;
	muster__v1__list_tokens_response__init(resp);
	resp->tokens = A(c, page.n * sizeof(*resp->tokens));
	for (size_t i = 0; i < page.n; i++)
		resp->tokens[resp->n_tokens++] = token_proto(c, &page.items[i]);
	resp->next_page_token = gstr(c, page.next_cursor);
	c->resp = &resp->base;
	return 0;
}

/* Token ids are positive; anything else cannot exist (NOT_FOUND, as REST). */
static int token_id_arg(struct gcall *c, int64_t id)
{
	if (id <= 0)
		return mu_error_set(&c->err, MU_ENOTFOUND, "", "no such token");
	return 0;
}

static int tokens_get(PGconn *db, struct gcall *c)
{
	const Muster__V1__GetTokenRequest *r = (const void *)c->req;
	struct store_token t;
	int ret;

	ret = ops_token_get(db, &c->arena, &c->who, r->id, &t, &c->err);
	if (ret < 0)
		return ret;
	c->resp = &token_proto(c, &t)->base;
	return 0;
}

/* DELETE /v1/tokens/{id}: the token fails at once on this replica, over
 * both APIs (the shared cache is flushed). */
static int tokens_revoke(PGconn *db, struct gcall *c)
{
	const Muster__V1__RevokeTokenRequest *r = (const void *)c->req;
	int ret;

	if ((ret = token_id_arg(c, r->id)) < 0)
		return ret;
	ret = ops_token_revoke(db, &c->who, r->id, &c->err);
	if (ret < 0)
		return ret;
	return empty_reply(c);
}

/* ---- nodes -------------------------------------------------------------- */

static Muster__V1__Node *node_proto(struct gcall *c, const struct store_node *n)
{
	Muster__V1__Node *p = A(c, sizeof(*p));

	muster__v1__node__init(p);
	p->name = gstr(c, n->name);
	p->address = gstr(c, n->address);
	p->topology = gstr(c, n->topology);
	p->gpu_model = gstr(c, n->gpu_model);
	p->gpu_count = n->gpu_count;
	p->state = gstr(c, n->state);
	p->drain_reason = gstr(c, n->drain_reason);
	p->labels_json = gstr(c, n->labels_json);
	p->last_heartbeat = gstr(c, n->last_heartbeat);
	p->agent_version = gstr(c, n->agent_version);
	p->gpus = A(c, n->n_gpus * sizeof(*p->gpus));
	for (size_t i = 0; i < n->n_gpus; i++) {
		const struct store_gpu *g = &n->gpus[i];
		Muster__V1__NodeGpu *pg = A(c, sizeof(*pg));

		muster__v1__node_gpu__init(pg);
		pg->index = (int32_t)g->index;
		pg->uuid = gstr(c, g->uuid);
		pg->model = gstr(c, g->model);
		pg->memory_mb = g->memory_mb;
		pg->healthy = g->healthy;
		pg->health_reason = gstr(c, g->health_reason);
		pg->allocated = g->allocated;
		pg->utilization = g->utilization;
		pg->temperature = g->temperature;
		pg->memory_used_mb = g->memory_used_mb;
		p->gpus[p->n_gpus++] = pg;
	}
	return p;
}

static int nodes_list(PGconn *db, struct gcall *c)
{
	const Muster__V1__ListNodesRequest *r = (const void *)c->req;
	Muster__V1__ListNodesResponse *resp = A(c, sizeof(*resp));
	struct store_node_page page = { 0 };
	struct ops_page_args pg;
	int ret;

	if ((ret = page_args(c, r->page_size, r->page_token, &pg)) < 0)
		return ret;
	ret = ops_node_list(db, &c->arena, &c->who, &pg, &page, &c->err);
	if (ret < 0)
		return ret;
	muster__v1__list_nodes_response__init(resp);
	resp->nodes = A(c, page.n * sizeof(*resp->nodes));
	for (size_t i = 0; i < page.n; i++)
		resp->nodes[resp->n_nodes++] = node_proto(c, &page.items[i]);
	resp->next_page_token = gstr(c, page.next_cursor);
	c->resp = &resp->base;
	return 0;
}

static int nodes_get(PGconn *db, struct gcall *c)
{
	const Muster__V1__GetNodeRequest *r = (const void *)c->req;
	struct store_node n;
	int ret = ops_node_get(db, &c->arena, &c->who, r->name, &n, &c->err);

	if (ret < 0)
		return ret;
	c->resp = &node_proto(c, &n)->base;
	return 0;
}

static int nodes_drain(PGconn *db, struct gcall *c)
{
	const Muster__V1__DrainNodeRequest *r = (const void *)c->req;
	const char *reason = NULL;
	json_t *body = json_object(), *v;
	struct store_node n;
	int ret;

	if ((ret = ops_node_name_check(r->name, &c->err)) < 0)
		goto out;
	if (r->reason && r->reason[0]) {
		if (!(v = json_string(r->reason))) {
			ret = mu_error_set(&c->err, MU_EUTF8, "reason", "must be valid UTF-8");
			goto out;
		}
		json_object_set_new(body, "reason", v);
	}
	ret = codec_drain_decode(body, &reason, &c->err);
	if (ret < 0)
		goto out;
	ret = ops_node_drain(db, &c->arena, &c->who, r->name, true, reason, &n, &c->err);
	if (ret == 0)
		c->resp = &node_proto(c, &n)->base;
out:
	json_decref(body);
	return ret;
}

static int nodes_resume(PGconn *db, struct gcall *c)
{
	const Muster__V1__ResumeNodeRequest *r = (const void *)c->req;
	struct store_node n;
	int ret;

	if ((ret = ops_node_name_check(r->name, &c->err)) < 0 ||
	    (ret = ops_node_drain(db, &c->arena, &c->who, r->name, false, NULL, &n, &c->err)) < 0)
		return ret;
	c->resp = &node_proto(c, &n)->base;
	return 0;
}

/*
 * Each method's roles are its REST route's, read from routes.def by the
 * route handler's name (rest_tenants_update_roles, ...), so the two APIs
 * cannot drift apart. The role bits are the same in both (ops_principal.h).
 */
enum {
#define REST_ROUTE(method, pattern, handler, roles, summary) handler##_roles = (roles) & REST_ANYONE,
#include "routes.def"
#undef REST_ROUTE
};

/* ---- settings (REST /v1/settings) ---------------------------------------- */

/* The answer: every setting's value (in store/settings.def order). */
static int settings_reply(struct gcall *c, const char **values)
{
	Muster__V1__Settings *resp = mu_arena_alloc(&c->arena, sizeof(*resp));
	size_t n;
	const struct store_setting *t = store_settings_table(&n);

	muster__v1__settings__init(resp);
	resp->values = mu_arena_alloc(&c->arena, sizeof(*resp->values) * (n + 1));
	for (size_t i = 0; i < n; i++) {
		Muster__V1__Settings__ValuesEntry *e = mu_arena_alloc(&c->arena, sizeof(*e));

		muster__v1__settings__values_entry__init(e);
		e->key = (char *)t[i].name;
		e->value = (char *)values[i];
		resp->values[resp->n_values++] = e;
	}
	c->resp = &resp->base;
	return 0;
}

static int settings_get(PGconn *db, struct gcall *c)
{
	const char **values = NULL;
	int ret = ops_settings_get(db, &c->arena, &c->who, &values, &c->err);

	return ret < 0 ? ret : settings_reply(c, values);
}

static int settings_update(PGconn *db, struct gcall *c)
{
	const Muster__V1__UpdateSettingsRequest *r = (const void *)c->req;
	json_t *body = json_object();
	const char **names = NULL, **now = NULL;
	char **values = NULL;
	size_t n = 0;
	int ret = 0;

	for (size_t i = 0; i < r->n_values; i++) {
		const char *k = r->values[i]->key ? r->values[i]->key : "";
		json_t *v = json_loads(r->values[i]->value ? r->values[i]->value : "", JSON_DECODE_ANY, NULL);

		if (!v || !grpc_codec_utf8_ok(k)) {
			json_decref(v);
			ret = mu_error_set(&c->err, MU_EINVAL, k, "the value must be JSON text (4, true, [\"rack\"])");
			goto out;
		}
		json_object_set_new(body, k, v);
	}
	ret = codec_settings_decode(body, &names, &values, &n, &c->err);
	if (ret < 0)
		goto out;
	ret = ops_settings_update(db, &c->arena, &c->who, names, (const char *const *)values, n, &now,
				  &c->err);
	if (ret < 0)
		goto out;
	ret = settings_reply(c, now);
out:
	codec_settings_release(names, values, n);
	json_decref(body);
	return ret;
}

#define ADMIN(m, route, req, fn)                                                                  \
	{ "/muster.v1.AdminService/" m, GK_UNARY, route##_roles, &muster__v1__##req##__descriptor, fn, \
	  NULL, 0 }

const struct gmethod grpc_admin_methods[] = {
	ADMIN("ListTenants", rest_tenants_list, list_tenants_request, tenants_list),
	ADMIN("GetTenant", rest_tenants_get, get_tenant_request, tenants_get),
	ADMIN("CreateTenant", rest_tenants_create, create_tenant_request, tenants_create),
	ADMIN("UpdateTenant", rest_tenants_update, update_tenant_request, tenants_update),
	ADMIN("DeleteTenant", rest_tenants_delete, delete_tenant_request, tenants_delete),
	ADMIN("ListQuotas", rest_quotas_list, list_quotas_request, quotas_list),
	ADMIN("GetTenantQuotas", rest_quotas_get, get_tenant_quotas_request, quotas_get),
	ADMIN("SetQuota", rest_quotas_put, set_quota_request, quota_set),
	ADMIN("DeleteQuota", rest_quotas_delete, delete_quota_request, quota_delete),
	ADMIN("ListPriorityClasses", rest_pclasses_list, list_priority_classes_request, pclasses_list),
	ADMIN("GetPriorityClass", rest_pclasses_get, get_priority_class_request, pclasses_get),
	ADMIN("CreatePriorityClass", rest_pclasses_create, create_priority_class_request, pclasses_create),
	ADMIN("UpdatePriorityClass", rest_pclasses_update, update_priority_class_request, pclasses_update),
	ADMIN("DeletePriorityClass", rest_pclasses_delete, delete_priority_class_request, pclasses_delete),
	ADMIN("CreateToken", rest_tokens_create, create_token_request, tokens_create),
	ADMIN("ListTokens", rest_tokens_list, list_tokens_request, tokens_list),
	ADMIN("GetToken", rest_tokens_get, get_token_request, tokens_get),
	ADMIN("RevokeToken", rest_tokens_delete, revoke_token_request, tokens_revoke),
	ADMIN("ListNodes", rest_nodes_list, list_nodes_request, nodes_list),
	ADMIN("GetNode", rest_nodes_get, get_node_request, nodes_get),
	ADMIN("DrainNode", rest_nodes_drain, drain_node_request, nodes_drain),
	ADMIN("ResumeNode", rest_nodes_resume, resume_node_request, nodes_resume),
	ADMIN("GetSettings", rest_settings_get, get_settings_request, settings_get),
	ADMIN("UpdateSettings", rest_settings_update, update_settings_request, settings_update),
	{ NULL, 0, 0, NULL, NULL, NULL, 0 },
};

/* ---- grpc.health.v1.Health --------------------------------------------- */

static const char *const services[] = {
	"", "muster.v1.JobService", "muster.v1.AdminService", "muster.v1.SchedulerService",
	"muster.v1.AgentService", NULL,
};

static bool known_service(const char *s)
{
	for (const char *const *k = services; *k; k++)
		if (!strcmp(*k, s ? s : ""))
			return true;
	return false;
}

/* SERVING when the database answers: muster-api serves nothing without it. */
static int health_status(PGconn *db)
{
	struct mu_error err = { 0 };

	if (store_db_exec_simple(db, "SELECT 1", &err) < 0)
		return GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
	return GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
}

static int health_check(PGconn *db, struct gcall *c)
{
	const Grpc__Health__V1__HealthCheckRequest *r = (const void *)c->req;
	Grpc__Health__V1__HealthCheckResponse *resp = A(c, sizeof(*resp));

	if (!known_service(r->service))
		return mu_error_set(&c->err, MU_ENOTFOUND, "service", "unknown service");
	grpc__health__v1__health_check_response__init(resp);
	resp->status = health_status(db);
	c->resp = &resp->base;
	return 0;
}

/* Watch: the status now, then the stream stays open until the client leaves. */
static int health_watch(PGconn *db, struct gcall *c)
{
	const Grpc__Health__V1__HealthCheckRequest *r = (const void *)c->req;
	Grpc__Health__V1__HealthCheckResponse *resp = A(c, sizeof(*resp));

	grpc__health__v1__health_check_response__init(resp);
	resp->status = known_service(r->service) ? health_status(db)
		: GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN;
	c->resp = &resp->base;
	return 0;
}

static void health_watch_start(struct gcall *c)
{
	gcall_stream_open(c);
	gcall_stream_send(c, c->resp);
	if (grpc_stopping())
		gcall_stream_finish(c, MU_EUNAVAIL, "server shutting down");
}

const struct gmethod grpc_health_methods[] = {
	{ "/grpc.health.v1.Health/Check", GK_UNARY, GR_PUBLIC,
	  &grpc__health__v1__health_check_request__descriptor, health_check, NULL, 0 },
	{ "/grpc.health.v1.Health/Watch", GK_SERVER_STREAM, GR_PUBLIC,
	  &grpc__health__v1__health_check_request__descriptor, health_watch, health_watch_start, 0 },
	{ NULL, 0, 0, NULL, NULL, NULL, 0 },
};
