/* rest_settings.c - GET and PATCH /v1/settings: the cluster policy settings
 * (store/settings.def); see docs/api.md "Settings". */
#include <stdio.h>

#include "codec_settings.h"
#include "ops_admin.h"
#include "ops_admin_read.h"
#include "rest.h"
#include "store_settings.h"

struct patch {
	const char **names;
	char **values;
	size_t n;
};

static int reply(struct pg_conn *db, struct rest_req *rq)
{
	const char **values = NULL;
	int ret = ops_settings_get(db, rq->arena, &rq->who, &values, &rq->err);

	if (ret < 0)
		return ret;
	rest_result(rq, 200, codec_settings_encode(values));
	return 0;
}

static int get_run(struct pg_conn *db, struct rest_req *rq, void *arg)
{
	(void)arg;
	return reply(db, rq);
}

int rest_settings_get(struct rest_req *rq)
{
	return rest_defer(rq, get_run, NULL, NULL);
}

static int patch_run(struct pg_conn *db, struct rest_req *rq, void *arg)
{
	struct patch *p = arg;
	const char **values = NULL;
	int ret = ops_settings_update(db, rq->arena, &rq->who, p->names, (const char *const *)p->values,
				      p->n, &values, &rq->err);

	codec_settings_release(p->names, p->values, p->n);
	p->names = NULL;
	p->values = NULL;
	if (ret < 0)
		return ret;
	rest_result(rq, 200, codec_settings_encode(values));
	return 0;
}

int rest_settings_update(struct rest_req *rq)
{
	struct patch *p = mu_arena_alloc(rq->arena, sizeof(*p));
	json_t *body = NULL;
	int ret = rest_body_json(rq, &body);

	if (ret < 0)
		return ret;
	ret = codec_settings_decode(body, &p->names, &p->values, &p->n, &rq->err);
	json_decref(body);
	if (ret < 0)
		return ret;
	return rest_defer(rq, patch_run, NULL, p);
}
