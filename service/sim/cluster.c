/* cluster.c - the simulated cluster: flags or a JSON file; see cluster.h. */
#include "cluster.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"

static char *keep(struct sim_cluster *c, const char *s)
{
	c->strings = mu_grow(c->strings, &c->cap_strings, c->nstrings + 1, sizeof(*c->strings));
	c->strings[c->nstrings] = mu_strdup(s);
	return c->strings[c->nstrings++];
}

static void add_class(struct sim_cluster *c, const char *name, int prio, bool pre, int64_t grace)
{
	c->classes = mu_realloc(c->classes, (c->nclasses + 1) * sizeof(*c->classes));
	c->classes[c->nclasses++] = (struct sim_class){ keep(c, name), prio, pre, grace };
}

static int add_tenant(struct sim_cluster *c, const char *name, int parent, double shares)
{
	c->tenants = mu_grow(c->tenants, &c->cap_tenants, c->ntenants + 1, sizeof(*c->tenants));
	c->tenants[c->ntenants] = (struct sched_tenant){ keep(c, name), parent, shares, 0, 0, -1, -1, 0, NULL };
	return (int)c->ntenants++;
}

void sim_cluster_init(struct sim_cluster *c)
{
	memset(c, 0, sizeof(*c));
	add_tenant(c, "root", -1, 1);
	add_class(c, "low", 10, true, 0);
	add_class(c, "normal", 100, true, 0);
	add_class(c, "high", 1000, false, 0);
	c->default_class = 1;
	c->settings.order = SCHED_ORDER_MULTIFACTOR;
	c->settings.weight_fairshare = 10000;
	c->settings.weight_age = 1000;
	c->settings.weight_size = 100;
	c->settings.weight_xfactor = 100;
	c->settings.starve_after = 172800;
	c->settings.max_age = 604800;
	c->settings.reservation_depth = 1;
	c->half_life = 604800;
}

void sim_cluster_release(struct sim_cluster *c)
{
	for (size_t i = 0; i < c->nstrings; i++)
		mu_free(c->strings[i]);
	mu_free(c->strings);
	mu_free(c->nodes);
	mu_free(c->tenants);
	mu_free(c->classes);
	memset(c, 0, sizeof(*c));
}

static void add_nodes(struct sim_cluster *c, size_t n)
{
	c->nodes = mu_realloc(c->nodes, (c->nnodes + n + 1) * sizeof(*c->nodes));
}

static uint64_t all_gpus(int g)
{
	return g >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << g) - 1);
}

void sim_cluster_uniform(struct sim_cluster *c, size_t n, int g)
{
	add_nodes(c, n);
	char name[32];
	for (size_t i = 0; i < n; i++) {
		struct sched_node *x = &c->nodes[c->nnodes++];
		memset(x, 0, sizeof(*x));
		snprintf(name, sizeof(name), "n%zu", i + 1);
		x->name = keep(c, name);
		x->gpu_model = "";
		x->gpu_count = g;
		x->healthy = all_gpus(g);
		for (int l = 0; l < SCHED_MAX_LEVELS; l++)
			x->unit[l] = -1;
	}
}

int sim_cluster_find_tenant(const struct sim_cluster *c, const char *name)
{
	for (size_t i = 0; i < c->ntenants; i++)
		if (strcmp(c->tenants[i].name, name) == 0)
			return (int)i;
	return -1;
}

int sim_cluster_tenant(struct sim_cluster *c, const char *name)
{
	int t = sim_cluster_find_tenant(c, name);
	return t >= 0 ? t : add_tenant(c, name, 0, 1);
}

int sim_cluster_class(const struct sim_cluster *c, const char *name)
{
	for (size_t i = 0; i < c->nclasses; i++)
		if (strcmp(c->classes[i].name, name) == 0)
			return (int)i;
	return -1;
}

int sim_cluster_level(const struct sim_cluster *c, const char *name)
{
	for (int i = 0; i < c->nlevels; i++)
		if (strcmp(c->levels[i], name) == 0)
			return i;
	return -1;
}

int64_t sim_cluster_gpus(const struct sim_cluster *c)
{
	int64_t n = 0;
	for (size_t i = 0; i < c->nnodes; i++)
		n += c->nodes[i].gpu_count;
	return n;
}

int sim_cluster_max_gpus_per_node(const struct sim_cluster *c)
{
	int m = 0;
	for (size_t i = 0; i < c->nnodes; i++)
		if (c->nodes[i].gpu_count > m)
			m = c->nodes[i].gpu_count;
	return m;
}

/* ------------------------------------------------------------ JSON */

static int check_keys(json_t *o, const char *const *allowed, const char *where, struct mu_error *err)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		bool ok = false;
		for (size_t i = 0; allowed[i]; i++)
			if (strcmp(allowed[i], k) == 0)
				ok = true;
		if (!ok)
			return mu_error_set(err, MU_EUNKNOWNFIELD, k, "%s: unknown field \"%s\"", where, k);
	}
	return 0;
}

static int get_int(json_t *o, const char *key, long long lo, long long hi, long long def, long long *out,
                   const char *where, struct mu_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v))
		return mu_error_set(err, MU_ETYPE, key, "%s: %s must be an integer", where, key);
	long long x = json_integer_value(v);
	if (x < lo || x > hi)
		return mu_error_set(err, MU_ERANGE, key, "%s: %s must be in [%lld, %lld]", where, key, lo, hi);
	*out = x;
	return 0;
}

static int get_num(json_t *o, const char *key, double lo, double hi, double def, double *out, const char *where,
                   struct mu_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_number(v))
		return mu_error_set(err, MU_ETYPE, key, "%s: %s must be a number", where, key);
	double x = json_number_value(v);
	if (!isfinite(x) || x < lo || x > hi)
		return mu_error_set(err, MU_ERANGE, key, "%s: %s must be in [%g, %g]", where, key, lo, hi);
	*out = x;
	return 0;
}

static int get_str(json_t *o, const char *key, const char *def, const char **out, const char *where,
                   struct mu_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_string(v))
		return mu_error_set(err, MU_ETYPE, key, "%s: %s must be a string", where, key);
	*out = json_string_value(v);
	if (strlen(*out) > 200)
		return mu_error_set(err, MU_ETOOLONG, key, "%s: %s is too long", where, key);
	return 0;
}

static int get_bool(json_t *o, const char *key, bool def, bool *out, const char *where, struct mu_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v))
		return mu_error_set(err, MU_ETYPE, key, "%s: %s must be true or false", where, key);
	*out = json_is_true(v);
	return 0;
}

/* Topology path interning: one id per distinct prefix per level. */
struct topo {
	char **prefix[SCHED_MAX_LEVELS];
	size_t n[SCHED_MAX_LEVELS], cap[SCHED_MAX_LEVELS];
};

static int topo_id(struct topo *t, int level, const char *prefix)
{
	for (size_t i = 0; i < t->n[level]; i++)
		if (strcmp(t->prefix[level][i], prefix) == 0)
			return (int)i;
	t->prefix[level] = mu_grow(t->prefix[level], &t->cap[level], t->n[level] + 1, sizeof(char *));
	t->prefix[level][t->n[level]] = mu_strdup(prefix);
	return (int)t->n[level]++;
}

static void topo_release(struct topo *t)
{
	for (int l = 0; l < SCHED_MAX_LEVELS; l++) {
		for (size_t i = 0; i < t->n[l]; i++)
			mu_free(t->prefix[l][i]);
		mu_free(t->prefix[l]);
	}
}

static int set_topology(struct sim_cluster *c, struct topo *tp, struct sched_node *x, const char *path,
                        const char *where, struct mu_error *err)
{
	for (int l = 0; l < SCHED_MAX_LEVELS; l++)
		x->unit[l] = -1;
	if (!*path)
		return 0;
	char buf[256];
	size_t len = strlen(path);
	if (len >= sizeof(buf))
		return mu_error_set(err, MU_ETOOLONG, "topology", "%s: topology too long", where);
	int parts = 1;
	for (size_t i = 0; i < len; i++)
		parts += path[i] == '/';
	if (parts != c->nlevels)
		return mu_error_set(err, MU_EINVAL, "topology",
		                    "%s: topology \"%s\" has %d part(s), the cluster has %d level(s)", where, path,
		                    parts, c->nlevels);
	memcpy(buf, path, len + 1);
	int l = 0;
	for (size_t i = 0; i <= len; i++) {
		if (buf[i] == '/' || buf[i] == '\0') {
			char save = buf[i];
			if (i == 0 || buf[i - 1] == '/')
				return mu_error_set(err, MU_EINVAL, "topology", "%s: empty part in topology \"%s\"",
				                    where, path);
			buf[i] = '\0';
			x->unit[l] = topo_id(tp, l, buf);
			buf[i] = save;
			l++;
		}
	}
	return 0;
}

static int parse_nodes(struct sim_cluster *c, json_t *arr, struct topo *tp, struct mu_error *err)
{
	static const char *const keys[] = { "name", "topology", "gpus", "model", "unhealthy", "state", "count", NULL };
	size_t i;
	json_t *o;
	int ret = 0;
	char where[96];
	if (!json_is_array(arr))
		return mu_error_set(err, MU_ETYPE, "nodes", "nodes must be an array");
	json_array_foreach(arr, i, o) {
		snprintf(where, sizeof(where), "nodes[%zu]", i);
		if (!json_is_object(o))
			return mu_error_set(err, MU_ETYPE, "nodes", "%s must be an object", where);
		if ((ret = check_keys(o, keys, where, err)))
			return ret;
		const char *name = "", *topology = "", *model = "", *state = "up";
		long long gpus = 0, count = 0;
		if ((ret = get_str(o, "name", "", &name, where, err)) ||
		    (ret = get_str(o, "topology", "", &topology, where, err)) ||
		    (ret = get_str(o, "model", "", &model, where, err)) ||
		    (ret = get_str(o, "state", "up", &state, where, err)) ||
		    (ret = get_int(o, "gpus", 0, SCHED_MAX_GPUS, 8, &gpus, where, err)) ||
		    (ret = get_int(o, "count", 1, 100000, 1, &count, where, err)))
			return ret;
		enum sched_node_state st;
		if (strcmp(state, "up") == 0)
			st = SCHED_NODE_UP;
		else if (strcmp(state, "drain") == 0)
			st = SCHED_NODE_DRAIN;
		else if (strcmp(state, "down") == 0)
			st = SCHED_NODE_DOWN;
		else
			return mu_error_set(err, MU_EINVAL, "state", "%s: state must be up, drain or down", where);
		uint64_t healthy = all_gpus((int)gpus);
		json_t *bad = json_object_get(o, "unhealthy"), *b;
		size_t k;
		if (bad && !json_is_array(bad))
			return mu_error_set(err, MU_ETYPE, "unhealthy", "%s: unhealthy must be an array", where);
		json_array_foreach(bad, k, b) {
			if (!json_is_integer(b) || json_integer_value(b) < 0 || json_integer_value(b) >= gpus)
				return mu_error_set(err, MU_ERANGE, "unhealthy", "%s: unhealthy GPU index out of range",
				                    where);
			healthy &= ~((uint64_t)1 << json_integer_value(b));
		}
		if (c->nnodes + (size_t)count > 1000000)
			return mu_error_set(err, MU_ERANGE, "nodes", "at most 1,000,000 nodes");
		add_nodes(c, (size_t)count);
		for (long long n = 0; n < count; n++) {
			struct sched_node *x = &c->nodes[c->nnodes];
			memset(x, 0, sizeof(*x));
			char nb[256];
			if (*name && count == 1)
				snprintf(nb, sizeof(nb), "%s", name);
			else
				snprintf(nb, sizeof(nb), "%s%zu", *name ? name : "n", c->nnodes + 1);
			x->name = keep(c, nb);
			x->gpu_model = keep(c, model);
			x->gpu_count = (int)gpus;
			x->healthy = healthy;
			x->state = st;
			if ((ret = set_topology(c, tp, x, topology, where, err)))
				return ret;
			c->nnodes++;
		}
	}
	return 0;
}

static int parse_generate(struct sim_cluster *c, json_t *o, struct topo *tp, struct mu_error *err)
{
	static const char *const keys[] = { "blocks", "racks_per_block", "nodes_per_rack", "gpus_per_node", "model",
		                            NULL };
	const char *w = "generate";
	long long blocks = 0, racks = 0, per = 0, gpus = 0;
	const char *model = "";
	int ret;
	if (!json_is_object(o))
		return mu_error_set(err, MU_ETYPE, "generate", "generate must be an object");
	if ((ret = check_keys(o, keys, w, err)) || (ret = get_int(o, "blocks", 1, 10000, 1, &blocks, w, err)) ||
	    (ret = get_int(o, "racks_per_block", 1, 10000, 1, &racks, w, err)) ||
	    (ret = get_int(o, "nodes_per_rack", 1, 10000, 1, &per, w, err)) ||
	    (ret = get_int(o, "gpus_per_node", 0, SCHED_MAX_GPUS, 8, &gpus, w, err)) ||
	    (ret = get_str(o, "model", "", &model, w, err)))
		return ret;
	if (c->nlevels != 2)
		return mu_error_set(err, MU_EINVAL, "generate", "generate needs exactly two levels (block, rack)");
	if (blocks * racks * per + (long long)c->nnodes > 1000000)
		return mu_error_set(err, MU_ERANGE, "generate", "at most 1,000,000 nodes");
	add_nodes(c, (size_t)(blocks * racks * per));
	const char *mk = keep(c, model);
	for (long long b = 0; b < blocks; b++)
		for (long long r = 0; r < racks; r++)
			for (long long n = 0; n < per; n++) {
				struct sched_node *x = &c->nodes[c->nnodes];
				char nb[64], path[64];
				memset(x, 0, sizeof(*x));
				snprintf(nb, sizeof(nb), "b%lld-r%lld-n%lld", b + 1, r + 1, n + 1);
				snprintf(path, sizeof(path), "b%lld/r%lld", b + 1, r + 1);
				x->name = keep(c, nb);
				x->gpu_model = mk;
				x->gpu_count = (int)gpus;
				x->healthy = all_gpus((int)gpus);
				if ((ret = set_topology(c, tp, x, path, w, err)))
					return ret;
				c->nnodes++;
			}
	return 0;
}

static int parse_tenants(struct sim_cluster *c, json_t *arr, struct mu_error *err)
{
	static const char *const keys[] = { "name", "parent", "shares", "guaranteed_gpus", "max_gpus",
		                            "max_running_jobs", NULL };
	size_t i;
	json_t *o;
	int ret;
	char where[96];
	if (!json_is_array(arr))
		return mu_error_set(err, MU_ETYPE, "tenants", "tenants must be an array");
	/* Two passes: names first so parents may come in any order. */
	json_array_foreach(arr, i, o) {
		snprintf(where, sizeof(where), "tenants[%zu]", i);
		const char *name = "";
		if (!json_is_object(o))
			return mu_error_set(err, MU_ETYPE, "tenants", "%s must be an object", where);
		if ((ret = check_keys(o, keys, where, err)) || (ret = get_str(o, "name", "", &name, where, err)))
			return ret;
		if (!*name || strcmp(name, "root") == 0 || sim_cluster_find_tenant(c, name) >= 0)
			return mu_error_set(err, MU_ECONFLICT, "name", "%s: name missing, \"root\" or used twice", where);
		add_tenant(c, name, 0, 1);
	}
	json_array_foreach(arr, i, o) {
		snprintf(where, sizeof(where), "tenants[%zu]", i);
		struct sched_tenant *t = &c->tenants[i + 1];
		const char *parent = "root";
		long long g = 0, mg = -1, mj = -1;
		double shares = 1;
		if ((ret = get_str(o, "parent", "root", &parent, where, err)) ||
		    (ret = get_num(o, "shares", 0, 1e12, 1, &shares, where, err)) ||
		    (ret = get_int(o, "guaranteed_gpus", 0, 100000000, 0, &g, where, err)) ||
		    (ret = get_int(o, "max_gpus", 0, 100000000, -1, &mg, where, err)) ||
		    (ret = get_int(o, "max_running_jobs", 0, 100000000, -1, &mj, where, err)))
			return ret;
		int p = sim_cluster_find_tenant(c, parent);
		if (p < 0)
			return mu_error_set(err, MU_ENOTFOUND, "parent", "%s: unknown parent \"%s\"", where, parent);
		t->parent = p;
		t->shares = shares;
		t->guaranteed_gpus = (int)g;
		t->max_gpus = (int)mg;
		t->max_running_jobs = (int)mj;
	}
	for (size_t k = 1; k < c->ntenants; k++) { /* cycles */
		int t = (int)k;
		size_t steps = 0;
		while (t > 0 && steps <= c->ntenants) {
			t = c->tenants[t].parent;
			steps++;
		}
		if (t != 0)
			return mu_error_set(err, MU_EINVAL, "parent", "tenant %s: parents form a cycle", c->tenants[k].name);
	}
	return 0;
}

static int parse_classes(struct sim_cluster *c, json_t *arr, struct mu_error *err)
{
	static const char *const keys[] = { "name", "priority", "preemptible", "grace", "default", NULL };
	size_t i;
	json_t *o;
	int ret;
	char where[96];
	if (!json_is_array(arr))
		return mu_error_set(err, MU_ETYPE, "classes", "classes must be an array");
	json_array_foreach(arr, i, o) {
		snprintf(where, sizeof(where), "classes[%zu]", i);
		const char *name = "";
		long long prio = 0, grace = 0;
		bool pre = true, def = false;
		if (!json_is_object(o))
			return mu_error_set(err, MU_ETYPE, "classes", "%s must be an object", where);
		if ((ret = check_keys(o, keys, where, err)) || (ret = get_str(o, "name", "", &name, where, err)) ||
		    (ret = get_int(o, "priority", -1000000, 1000000, 0, &prio, where, err)) ||
		    (ret = get_bool(o, "preemptible", true, &pre, where, err)) ||
		    (ret = get_bool(o, "default", false, &def, where, err)) ||
		    (ret = get_int(o, "grace", 0, 86400, 0, &grace, where, err)))
			return ret;
		if (!*name)
			return mu_error_set(err, MU_EMISSING, "name", "%s: name missing", where);
		int k = sim_cluster_class(c, name);
		if (k < 0) {
			add_class(c, name, (int)prio, pre, grace);
			k = (int)c->nclasses - 1;
		} else {
			c->classes[k].priority = (int)prio;
			c->classes[k].preemptible = pre;
			c->classes[k].grace = grace;
		}
		if (def)
			c->default_class = k;
	}
	return 0;
}

static int parse_settings(struct sim_cluster *c, json_t *o, struct mu_error *err)
{
	static const char *const keys[] = { "reservation_depth", "weight_fairshare", "weight_age", "weight_size",
		                            "weight_xfactor", "starve_after", "max_age", "half_life", "preemption",
		                            "predict_runtimes", NULL };
	const char *w = "settings";
	long long depth = -1, max_age = c->settings.max_age, starve = c->settings.starve_after;
	int ret;
	if (!json_is_object(o))
		return mu_error_set(err, MU_ETYPE, "settings", "settings must be an object");
	if ((ret = check_keys(o, keys, w, err)) ||
	    (ret = get_int(o, "reservation_depth", 0, 1000000, -1, &depth, w, err)) ||
	    (ret = get_num(o, "weight_fairshare", 0, 1e9, c->settings.weight_fairshare, &c->settings.weight_fairshare,
	                   w, err)) ||
	    (ret = get_num(o, "weight_age", 0, 1e9, c->settings.weight_age, &c->settings.weight_age, w, err)) ||
	    (ret = get_num(o, "weight_size", 0, 1e9, c->settings.weight_size, &c->settings.weight_size, w, err)) ||
	    (ret = get_num(o, "weight_xfactor", 0, 1e9, c->settings.weight_xfactor, &c->settings.weight_xfactor, w,
	                   err)) ||
	    (ret = get_int(o, "max_age", 1, 1LL << 40, c->settings.max_age, &max_age, w, err)) ||
	    (ret = get_int(o, "starve_after", 0, 315360000, c->settings.starve_after, &starve, w, err)) ||
	    (ret = get_num(o, "half_life", 0, 1e12, c->half_life, &c->half_life, w, err)) ||
	    (ret = get_bool(o, "predict_runtimes", false, &c->settings.predict, w, err)))
		return ret;
	c->has_predict = json_object_get(o, "predict_runtimes") != NULL;
	json_t *p = json_object_get(o, "preemption");
	if (p) {
		if ((ret = get_bool(o, "preemption", true, &c->settings.preemption, w, err)))
			return ret;
		c->has_preemption = true;
	}
	c->settings.max_age = max_age;
	c->settings.starve_after = starve;
	if (depth >= 0) {
		c->settings.reservation_depth = (int)depth;
		c->has_depth = true;
	}
	return 0;
}

int sim_cluster_parse(struct sim_cluster *c, const char *buf, size_t len, struct mu_error *err)
{
	static const char *const keys[] = { "levels", "nodes", "generate", "tenants", "classes", "settings", NULL };
	json_error_t jerr;
	struct topo tp;
	int ret = 0;
	memset(&tp, 0, sizeof(tp));
	json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return mu_error_set(err, MU_EJSON, "", "line %d: %s", jerr.line, jerr.text);
	if (!json_is_object(doc)) {
		ret = mu_error_set(err, MU_ETYPE, "", "the cluster file must be a JSON object");
		goto out;
	}
	if ((ret = check_keys(doc, keys, "cluster", err)))
		goto out;
	json_t *levels = json_object_get(doc, "levels"), *v;
	size_t i;
	if (levels) {
		if (!json_is_array(levels) || json_array_size(levels) > SCHED_MAX_LEVELS) {
			ret = mu_error_set(err, MU_ETYPE, "levels", "levels must be an array of at most %d names",
			                   SCHED_MAX_LEVELS);
			goto out;
		}
		json_array_foreach(levels, i, v) {
			if (!json_is_string(v) || !*json_string_value(v) || strlen(json_string_value(v)) > 63) {
				ret = mu_error_set(err, MU_ETYPE, "levels", "levels[%zu] must be a name", i);
				goto out;
			}
			c->levels[c->nlevels] = keep(c, json_string_value(v));
			c->settings.levels[c->nlevels] = c->levels[c->nlevels];
			c->nlevels++;
		}
		c->settings.nlevels = c->nlevels;
	}
	if (json_object_get(doc, "nodes") && (ret = parse_nodes(c, json_object_get(doc, "nodes"), &tp, err)))
		goto out;
	if (json_object_get(doc, "generate") && (ret = parse_generate(c, json_object_get(doc, "generate"), &tp, err)))
		goto out;
	if (c->nnodes == 0) {
		ret = mu_error_set(err, MU_EMISSING, "nodes", "the cluster has no nodes (give nodes or generate)");
		goto out;
	}
	if (json_object_get(doc, "tenants") && (ret = parse_tenants(c, json_object_get(doc, "tenants"), err)))
		goto out;
	if (json_object_get(doc, "classes") && (ret = parse_classes(c, json_object_get(doc, "classes"), err)))
		goto out;
	if (json_object_get(doc, "settings") && (ret = parse_settings(c, json_object_get(doc, "settings"), err)))
		goto out;
out:
	topo_release(&tp);
	json_decref(doc);
	return ret;
}
