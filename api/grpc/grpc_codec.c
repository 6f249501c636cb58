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
	if (ret == 0 && s->n_dependencies) {
		arr = json_array();
		for (size_t i = 0; i < s->n_dependencies && ret == 0; i++) {
			const Muster__V1__Dependency *d = s->dependencies[i];
			json_t *dj = json_object();
			char field[48];

			snprintf(field, sizeof(field), "dependencies.%zu.type", i);
			ret = jstr(dj, "type", d->type ? d->type : "", field, err);
			json_object_set_new(dj, "job_id", json_integer(d->job_id));
			json_array_append_new(arr, dj);
		}
		json_object_set_new(o, "dependencies", arr);
	}
	STR("workdir", s->workdir);
	INT("max_retries", s->max_retries);
#undef STR
#undef INT
	if (ret < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

