/* rest_service.c - /healthz, /readyz, /openapi.json, /metrics, /v1/whoami. */
#include <string.h>

#include "log.h"
#include "migrate.h"
#include "openapi_blob.h"
#include "rest_server.h"

int rest_healthz(struct rest_req *rq)
{
	rest_result_text(rq, 200, "application/json", "{\"status\":\"ok\"}", 15);
	return 0;
}

static int ready_check(PGconn *db, struct rest_req *rq, void *arg)
{
	bool current = false;
	int ret = store_migrations_current(db, &current, &rq->err);

	if (ret < 0)
		return ret;
	if (!current)
		return mu_error_set(&rq->err, MU_EUNAVAIL, "", "database migrations are not current");
	rest_result_text(rq, 200, "application/json", "{\"status\":\"ready\"}", 18);
	return 0;
}

/* Not ready: the detail (socket paths, host names, libpq text) goes to the
 * log, callers get one fixed sentence. */
static void ready_done(struct rest_req *rq, void *arg, int rc)
{
	(void)arg;
	if (rc >= 0 || !strcmp(rq->err.msg, "database migrations are not current"))
		return;
	mu_warn("readyz database check failed: %s", rq->err.msg[0] ? rq->err.msg : mu_strerror(rc));
	mu_error_set(&rq->err, MU_EUNAVAIL, "", "database unreachable");
}

int rest_readyz(struct rest_req *rq)
{
	return rest_defer(rq, ready_check, ready_done, NULL);
}

int rest_openapi(struct rest_req *rq)
{
	rest_result_text(rq, 200, "application/json", mu_openapi_json, mu_openapi_json_len);
	return 0;
}

int rest_metrics(struct rest_req *rq)
{
	struct mu_buf b = MU_BUF_INIT;

	rest_metrics_render(&b);
	rest_result_text(rq, 200, "text/plain; version=0.0.4", b.p ? b.p : "", b.len);
	mu_buf_release(&b);
	return 0;
}

int rest_whoami(struct rest_req *rq)
{
	json_t *o = json_object();

	json_object_set_new(o, "role", json_string(ops_role_name(rq->who.role)));
	json_object_set_new(o, "tenant", rq->who.tenant ? json_string(rq->who.tenant) : json_null());
	json_object_set_new(o, "user", json_string(rq->who.user ? rq->who.user : ""));
	json_object_set_new(o, "token_id", json_integer(rq->who.token_id));
	if (rq->who.node)
		json_object_set_new(o, "node", json_string(rq->who.node));
	rest_result(rq, 200, o);
	return 0;
}
