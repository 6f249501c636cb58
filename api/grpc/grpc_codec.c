/* grpc_codec.c - muster.v1 messages <-> REST JSON; see grpc_codec.h. */
#include "grpc_codec.h"

#include <stdio.h>
#include <string.h>

bool grpc_codec_utf8_ok(const char *s)
{
	json_t *v = json_string(s ? s : "");

	json_decref(v);
	return v != NULL;
}

static int jstr(json_t *o, const char *key, const char *val, const char *field, struct mu_error *err)
{
	json_t *s = json_string(val);

	if (!s)
		return mu_error_set(err, MU_EUTF8, field ? field : key, "must be valid UTF-8");
	json_object_set_new(o, key, s);
	return 0;
}

static int jmap(json_t *o, const char *key, void **entries, size_t n, struct mu_error *err)
{
	json_t *m;
	int ret = 0;

	if (!n)
		return 0;
	m = json_object();
	for (size_t i = 0; i < n && ret == 0; i++) {
		const struct grpc_kv_entry *e = entries[i];
		char field[160];

		snprintf(field, sizeof(field), "%s.%.100s", key, e->key ? e->key : "");
		if (!e->key || !grpc_codec_utf8_ok(e->key)) {
			ret = mu_error_set(err, MU_EUTF8, key, "keys must be valid UTF-8");
			break;
		}
		ret = jstr(m, e->key, e->value ? e->value : "", field, err);
	}
	json_object_set_new(o, key, m);
	return ret;
}


/* dependencies[] as the REST body has them (singleton names no job_id). */
static int jdeps(json_t *o, Muster__V1__Dependency *const *deps, size_t n, struct mu_error *err)
{
	json_t *arr = json_array();
	int ret = 0;

	for (size_t i = 0; i < n && ret == 0; i++) {
		const Muster__V1__Dependency *d = deps[i];
		json_t *dj = json_object();
		char field[48];

		snprintf(field, sizeof(field), "dependencies.%zu.type", i);
		ret = jstr(dj, "type", d->type ? d->type : "", field, err);
		if (d->job_id || !d->type || strcmp(d->type, "singleton"))
			json_object_set_new(dj, "job_id", json_integer(d->job_id));
		json_array_append_new(arr, dj);
	}
	json_object_set_new(o, "dependencies", arr);
	return ret;
}
json_t *grpc_codec_spec_json(const Muster__V1__JobSpec *s, struct mu_error *err)
{
	json_t *o = json_object(), *arr;
	int ret = 0;

#define STR(k, v)                                                  \
	do {                                                       \
		if (ret == 0 && (v) && (v)[0])                     \
			ret = jstr(o, k, v, NULL, err);            \
	} while (0)
#define INT(k, v)                                                  \
	do {                                                       \
		if (v)                                             \
			json_object_set_new(o, k, json_integer(v)); \
	} while (0)
	STR("tenant", s->tenant);
	STR("user", s->user);
	STR("name", s->name);
	STR("priority_class", s->priority_class);
	INT("nodes", s->nodes);
	INT("min_nodes", s->min_nodes);
	json_object_set_new(o, "gpus_per_node", json_integer(s->gpus_per_node));
	STR("gpu_model", s->gpu_model);
	INT("procs_per_node", s->procs_per_node);
	INT("mem_per_node", s->mem_per_node);
	INT("cpus_per_node", s->cpus_per_node);
	STR("launcher", s->launcher);
	STR("on_shrink", s->on_shrink);
	if (ret == 0 && s->signal) {
		json_t *g = json_object();

		ret = jstr(g, "name", s->signal->name ? s->signal->name : "", "signal.name", err);
		if (s->signal->before)
			json_object_set_new(g, "before", json_integer(s->signal->before));
		if (s->signal->batch_only)
			json_object_set_new(g, "batch_only", json_true());
		json_object_set_new(o, "signal", g);
	}
	STR("script", s->script);
	STR("output", s->output);
	STR("error", s->error);
	if (s->batch_host)
		json_object_set_new(o, "batch_host", json_true());
	if (ret == 0 && s->n_script_args) {
		arr = json_array();
		for (size_t i = 0; i < s->n_script_args && ret == 0; i++) {
			json_t *v = json_string(s->script_args[i]);
			char field[40];

			snprintf(field, sizeof(field), "script_args.%zu", i);
			if (!v)
				ret = mu_error_set(err, MU_EUTF8, field, "must be valid UTF-8");
			else
				json_array_append_new(arr, v);
		}
		json_object_set_new(o, "script_args", arr);
	}
	if (ret == 0 && ((s->topology_required && s->topology_required[0]) ||
			 (s->topology_preferred && s->topology_preferred[0]))) {
		json_t *t = json_object();

		if (s->topology_required && s->topology_required[0])
			ret = jstr(t, "required", s->topology_required, "topology.required", err);
		if (ret == 0 && s->topology_preferred && s->topology_preferred[0])
			ret = jstr(t, "preferred", s->topology_preferred, "topology.preferred", err);
		json_object_set_new(o, "topology", t);
	}
	STR("time_limit", s->time_limit);
	if (s->n_command) {
		arr = json_array();
		for (size_t i = 0; i < s->n_command && ret == 0; i++) {
			json_t *v = json_string(s->command[i]);
			char field[32];

			snprintf(field, sizeof(field), "command.%zu", i);
			if (!v)
				ret = mu_error_set(err, MU_EUTF8, field, "must be valid UTF-8");
			else
				json_array_append_new(arr, v);
		}
		json_object_set_new(o, "command", arr);
	}
	if (ret == 0)
		ret = jmap(o, "env", (void **)s->env, s->n_env, err);
	if (ret == 0)
		ret = jmap(o, "labels", (void **)s->labels, s->n_labels, err);
	if (ret == 0 && s->n_dependencies)
		ret = jdeps(o, s->dependencies, s->n_dependencies, err);
	STR("workdir", s->workdir);
	INT("max_retries", s->max_retries);
	if (s->hold)
		json_object_set_new(o, "hold", json_true());
	STR("begin", s->begin);
	STR("array", s->array);
#undef STR
#undef INT
	if (ret < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- admin ---------------------------------------------------------------- */

/* The index of `path` in `names` (NULL-terminated), or an error naming it. */
static int mask_path(const char *path, const char *const *names, const char *method,
		     struct mu_error *err)
{
	for (size_t i = 0; names[i]; i++)
		if (path && !strcmp(path, names[i]))
			return (int)i;
	if (!path || !grpc_codec_utf8_ok(path))
		return mu_error_set(err, MU_EINVAL, "update_mask", "a path is not valid UTF-8");
	return mu_error_set(err, MU_EINVAL, "update_mask", "\"%.64s\" is not a field %s can change",
			    path, method);
}

json_t *grpc_codec_tenant_patch_json(const Muster__V1__Tenant *t, char *const *mask, size_t n_mask,
				     struct mu_error *err)
{
	static const char *const names[] = { "shares", "description", "parent", "unix_account", NULL };
	json_t *o = json_object();
	int ret = 0;

	for (size_t i = 0; i < n_mask && ret == 0; i++) {
		int k = mask_path(mask[i], names, "UpdateTenant", err);

		switch (k) {
		case 0:
			json_object_set_new(o, "shares", json_integer(t->shares));
			break;
		case 1:
			ret = jstr(o, "description", t->description ? t->description : "", NULL, err);
			break;
		case 2:
			ret = jstr(o, "parent", t->parent ? t->parent : "", NULL, err);
			break;
		case 3:
			ret = jstr(o, "unix_account", t->unix_account ? t->unix_account : "", NULL, err);
			break;
		default:
			ret = k;
		}
	}
	if (ret < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *grpc_codec_pclass_json(const Muster__V1__PriorityClass *p, bool create, char *const *mask,
			       size_t n_mask, struct mu_error *err)
{
	static const char *const names[] = { "priority",       "preemptible", "default_time_limit_s",
					     "max_time_limit_s", "grace_period_s", "is_default",
					     "description",    NULL };
	json_t *o = json_object();
	int ret = 0;

	if (create) {
		if (p->name && p->name[0])
			ret = jstr(o, "name", p->name, NULL, err);
		json_object_set_new(o, "priority", json_integer(p->priority));
		json_object_set_new(o, "preemptible", json_boolean(p->preemptible));
		if (p->default_time_limit_s)
			json_object_set_new(o, "default_time_limit", json_integer(p->default_time_limit_s));
		if (p->max_time_limit_s)
			json_object_set_new(o, "max_time_limit", json_integer(p->max_time_limit_s));
		json_object_set_new(o, "grace_period", json_integer(p->grace_period_s));
		json_object_set_new(o, "is_default", json_boolean(p->is_default));
		if (ret == 0)
			ret = jstr(o, "description", p->description ? p->description : "", NULL, err);
	}
	for (size_t i = 0; !create && i < n_mask && ret == 0; i++) {
		int k = mask_path(mask[i], names, "UpdatePriorityClass", err);

		switch (k) {
		case 0:
			json_object_set_new(o, "priority", json_integer(p->priority));
			break;
		case 1:
			json_object_set_new(o, "preemptible", json_boolean(p->preemptible));
			break;
		case 2:
			json_object_set_new(o, "default_time_limit", json_integer(p->default_time_limit_s));
			break;
		case 3:
			json_object_set_new(o, "max_time_limit", p->max_time_limit_s
					    ? json_integer(p->max_time_limit_s) : json_null());
			break;
		case 4:
			json_object_set_new(o, "grace_period", json_integer(p->grace_period_s));
			break;
		case 5:
			json_object_set_new(o, "is_default", json_boolean(p->is_default));
			break;
		case 6:
			ret = jstr(o, "description", p->description ? p->description : "", NULL, err);
			break;
		default:
			ret = k;
		}
	}
	if (ret < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *grpc_codec_token_json(const Muster__V1__CreateTokenRequest *r, struct mu_error *err)
{
	json_t *o = json_object();
	int ret = 0;

#define STR(k, v)                                          \
	do {                                               \
		if (ret == 0 && (v) && (v)[0])             \
			ret = jstr(o, k, v, NULL, err);    \
	} while (0)
	STR("name", r->name);
	STR("role", r->role);
	STR("tenant", r->tenant);
	STR("user", r->user);
	STR("node", r->node);
	STR("expires_at", r->expires_at);
#undef STR
	if (ret < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- jobs: Update ---------------------------------------------------------- */

json_t *grpc_codec_job_patch_json(const Muster__V1__UpdateJobRequest *r, struct mu_error *err)
{
	static const char *const names[] = { "time_limit", "priority_class", "nodes", "min_nodes",
					     "gpus_per_node", "dependencies", "labels", "begin",
					     "name", NULL };
	static const Muster__V1__JobPatch empty = MUSTER__V1__JOB_PATCH__INIT;
	const Muster__V1__JobPatch *p = r->patch ? r->patch : &empty;
	json_t *o = json_object();
	int ret = 0;

	for (size_t m = 0; m < r->n_update_mask && ret == 0; m++) {
		int k = mask_path(r->update_mask[m], names, "Update", err);

		if (k < 0) {
			ret = k;
			break;
		}
		switch (k) {
		case 0: ret = jstr(o, "time_limit", p->time_limit ? p->time_limit : "", NULL, err); break;
		case 1: ret = jstr(o, "priority_class", p->priority_class ? p->priority_class : "", NULL, err); break;
		case 2: json_object_set_new(o, "nodes", json_integer(p->nodes)); break;
		case 3:
			json_object_set_new(o, "min_nodes", p->min_nodes ? json_integer(p->min_nodes) : json_null());
			break;
		case 4: json_object_set_new(o, "gpus_per_node", json_integer(p->gpus_per_node)); break;
		case 5: ret = jdeps(o, p->dependencies, p->n_dependencies, err); break;
		case 6:
			if (p->n_labels)
				ret = jmap(o, "labels", (void **)p->labels, p->n_labels, err);
			else
				json_object_set_new(o, "labels", json_null());
			break;
		case 7:
			if (p->begin && p->begin[0])
				ret = jstr(o, "begin", p->begin, NULL, err);
			else
				json_object_set_new(o, "begin", json_null());
			break;
		case 8: ret = jstr(o, "name", p->name ? p->name : "", NULL, err); break;
		}
	}
	if (ret < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}
