/*
 * fairshare_cli.c - the Fair Tree calculator; contract in fairshare_cli.h.
 *
 * The reader validates everything before the core sees it: the core only
 * answers "malformed", while an operator needs to know which field is wrong.
 */
#include "fairshare_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../sched/fairtree.h"
#include "alloc.h"

#define NAME_MAX_LEN 255
#define ROOT_NAME "root"

/* The parsed tree: assoc[0] is the root, then tenants, then users. */
struct fs_tree {
	struct fairtree_assoc *assoc;
	size_t n, ntenants;
	const char **tenant_of; /* per association: the tenant name printed */
	char **parent_name;     /* per tenant association: its parent's name or NULL (new) */
};

static void tree_release(struct fs_tree *t)
{
	if (t->parent_name)
		for (size_t i = 0; i < t->n; i++)
			mu_free(t->parent_name[i]);
	mu_free(t->parent_name);
	mu_free(t->tenant_of);
	mu_free(t->assoc);
}

/* Rejects any key of `obj` not in the NULL-terminated `allowed`. */
static int check_fields(json_t *obj, const char *where, const char *const *allowed,
			struct mu_error *err)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		bool known = false;
		for (size_t i = 0; allowed[i]; i++)
			known = known || strcmp(key, allowed[i]) == 0;
		if (!known)
			return mu_error_set(err, MU_EUNKNOWNFIELD, where, "%s: unknown field \"%s\"",
					    where, key);
	}
	return 0;
}

static int get_name(json_t *obj, const char *key, const char *where, const char **out,
		    struct mu_error *err)
{
	json_t *v = json_object_get(obj, key);
	size_t len;

	if (!v)
		return mu_error_set(err, MU_EMISSING, where, "%s.%s: missing", where, key);
	if (!json_is_string(v))
		return mu_error_set(err, MU_ETYPE, where, "%s.%s: must be a string", where, key);
	len = json_string_length(v);
	if (len == 0 || len > NAME_MAX_LEN)
		return mu_error_set(err, MU_ERANGE, where, "%s.%s: must be 1 to %d bytes long", where,
				    key, NAME_MAX_LEN);
	if (memchr(json_string_value(v), '\0', len))
		return mu_error_set(err, MU_ERANGE, where, "%s.%s: must not contain NUL", where, key);
	*out = json_string_value(v);
	return 0;
}

/* An optional non-negative finite number, `dflt` when absent. */
static int get_amount(json_t *obj, const char *key, const char *where, double dflt, double *out,
		      struct mu_error *err)
{
	json_t *v = json_object_get(obj, key);

	if (!v) {
		*out = dflt;
		return 0;
	}
	if (!json_is_number(v))
		return mu_error_set(err, MU_ETYPE, where, "%s.%s: must be a number", where, key);
	*out = json_number_value(v);
	if (!isfinite(*out) || *out < 0)
		return mu_error_set(err, MU_ERANGE, where, "%s.%s: must be a finite number >= 0 (got %g)",
				    where, key, *out);
	return 0;
}

/* Returns the index of tenant `name` (0 for "root"), or -1. */
static int lookup(json_t *index, const char *name)
{
	json_t *v;

	if (strcmp(name, ROOT_NAME) == 0)
		return 0;
	v = json_object_get(index, name);
	return v ? (int)json_integer_value(v) : -1;
}

static int parse_tenants(json_t *arr, struct fs_tree *t, json_t *index, struct mu_error *err)
{
	static const char *const allowed[] = { "name", "parent", "shares", "usage", NULL };
	char where[64];
	size_t i;
	json_t *o;
	int ret = 0;

	json_array_foreach(arr, i, o) {
		struct fairtree_assoc *x = &t->assoc[1 + i];
		json_t *parent;
		const char *name;

		snprintf(where, sizeof(where), "tenants[%zu]", i);
		if (!json_is_object(o))
			return mu_error_set(err, MU_ETYPE, where, "%s: must be an object", where);
		if ((ret = check_fields(o, where, allowed, err)) ||
		    (ret = get_name(o, "name", where, &name, err)) ||
		    (ret = get_amount(o, "shares", where, 1, &x->shares, err)) ||
		    (ret = get_amount(o, "usage", where, 0, &x->usage, err)))
			return ret;
		if (strcmp(name, ROOT_NAME) == 0)
			return mu_error_set(err, MU_ECONFLICT, where,
					    "%s.name: \"root\" is the implicit root tenant", where);
		if (json_object_get(index, name))
			return mu_error_set(err, MU_ECONFLICT, where, "%s.name: duplicate tenant \"%s\"",
					    where, name);
		json_object_set_new(index, name, json_integer((json_int_t)(1 + i)));
		parent = json_object_get(o, "parent");
		if (parent && !json_is_null(parent) && !json_is_string(parent))
			return mu_error_set(err, MU_ETYPE, where, "%s.parent: must be a string or null",
					    where);
		x->name = name;
		x->is_user = false;
		t->tenant_of[1 + i] = name;
		t->parent_name[1 + i] = parent && json_is_string(parent)
						? mu_strdup(json_string_value(parent))
						: NULL;
	}
	/* Parents are resolved once every name is known: order is free. */
	for (i = 0; i < t->ntenants; i++) {
		struct fairtree_assoc *x = &t->assoc[1 + i];
		const char *pname = t->parent_name[1 + i];
		int p = pname ? lookup(index, pname) : 0;

		if (p < 0)
			return mu_error_set(err, MU_ENOTFOUND, "tenants",
					    "tenants[%zu].parent: unknown tenant \"%s\"", i, pname);
		x->parent = p;
	}
	return 0;
}

/*
 * Every tenant must reach the root. Colours: 0 unseen, 1 on the current
 * chain, 2 known to reach the root. Iterative, so long chains are fine.
 */
static int check_cycles(struct fs_tree *t, struct mu_error *err)
{
	unsigned char *colour = mu_calloc(t->ntenants + 1, 1);
	int ret = 0;

	colour[0] = 2;
	for (size_t i = 1; i <= t->ntenants && !ret; i++) {
		size_t x = i;
		while (colour[x] == 0) {
			colour[x] = 1;
			x = (size_t)t->assoc[x].parent;
		}
		if (colour[x] == 1)
			ret = mu_error_set(err, MU_EINVAL, "tenants",
					   "tenants: \"%s\" is its own ancestor (parent cycle)",
					   t->assoc[x].name);
		for (x = i; colour[x] == 1; x = (size_t)t->assoc[x].parent)
			colour[x] = 2;
	}
	mu_free(colour);
	return ret;
}

static int parse_users(json_t *arr, struct fs_tree *t, json_t *index, struct mu_error *err)
{
	static const char *const allowed[] = { "tenant", "name", "shares", "usage", NULL };
	json_t *seen = json_object();
	char where[64];
	size_t i;
	json_t *o;
	int ret = 0;

	json_array_foreach(arr, i, o) {
		struct fairtree_assoc *x = &t->assoc[1 + t->ntenants + i];
		const char *tenant, *name;
		char *key;
		int p;

		snprintf(where, sizeof(where), "users[%zu]", i);
		if (!json_is_object(o)) {
			ret = mu_error_set(err, MU_ETYPE, where, "%s: must be an object", where);
			goto out;
		}
		if ((ret = check_fields(o, where, allowed, err)) ||
		    (ret = get_name(o, "tenant", where, &tenant, err)) ||
		    (ret = get_name(o, "name", where, &name, err)) ||
		    (ret = get_amount(o, "shares", where, 1, &x->shares, err)) ||
		    (ret = get_amount(o, "usage", where, 0, &x->usage, err)))
			goto out;
		p = lookup(index, tenant);
		if (p < 0) {
			ret = mu_error_set(err, MU_ENOTFOUND, where, "%s.tenant: unknown tenant \"%s\"",
					   where, tenant);
			goto out;
		}
		/* The length prefix keeps "a/b"+"c" apart from "a"+"b/c". */
		key = mu_asprintf("%zu:%s/%s", strlen(tenant), tenant, name);
		if (json_object_get(seen, key)) {
			ret = mu_error_set(err, MU_ECONFLICT, where,
					   "%s: duplicate user \"%s\" in tenant \"%s\"", where, name,
					   tenant);
			mu_free(key);
			goto out;
		}
		json_object_set_new(seen, key, json_true());
		mu_free(key);
		x->parent = p;
		x->is_user = true;
		x->name = name;
		t->tenant_of[1 + t->ntenants + i] = p == 0 ? ROOT_NAME : t->assoc[p].name;
	}
out:
	json_decref(seen);
	return ret;
}

static json_t *number(double v)
{
	return isinf(v) ? json_string("inf") : json_real(v);
}

static int print_tree(const struct fs_tree *t, FILE *out, struct mu_error *err)
{
	size_t *order = mu_calloc(t->n, sizeof(*order));
	int ret = 0;

	for (size_t i = 0; i < t->n; i++)
		order[t->assoc[i].walk_pos] = i;
	fputs("{\"associations\":[", out);
	for (size_t k = 1; k < t->n; k++) {
		const struct fairtree_assoc *x = &t->assoc[order[k]];
		json_t *o = json_object();

		json_object_set_new(o, "tenant", json_string(t->tenant_of[order[k]]));
		if (x->is_user)
			json_object_set_new(o, "user", json_string(x->name));
		json_object_set_new(o, "shares_norm", number(x->shares_norm));
		json_object_set_new(o, "usage_norm", number(x->usage_norm));
		json_object_set_new(o, "level_fs", number(x->level_fs));
		if (x->is_user)
			json_object_set_new(o, "fairshare", number(x->fairshare));
		fputs(k > 1 ? ",\n  " : "\n  ", out);
		if (json_dumpf(o, out, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) != 0)
			ret = -1;
		json_decref(o);
	}
	fputs(t->n > 1 ? "\n]}\n" : "]}\n", out);
	if (ret || fflush(out) != 0 || ferror(out))
		ret = mu_error_set(err, MU_EIO, "", "writing the result failed");
	mu_free(order);
	return ret;
}

int sim_fairshare_eval(const char *buf, size_t len, FILE *out, struct mu_error *err)
{
	static const char *const allowed[] = { "tenants", "users", NULL };
	struct fs_tree t = { 0 };
	json_t *doc, *tenants, *users, *index = NULL;
	json_error_t jerr;
	int ret;

	doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return mu_error_set(err, MU_EJSON, "", "malformed JSON at line %d column %d: %s",
				    jerr.line, jerr.column, jerr.text);
	if (!json_is_object(doc)) {
		ret = mu_error_set(err, MU_ETYPE, "", "the document must be an object");
		goto out;
	}
	if ((ret = check_fields(doc, "the document", allowed, err)))
		goto out;
	tenants = json_object_get(doc, "tenants");
	users = json_object_get(doc, "users");
	if (!tenants || !users) {
		ret = mu_error_set(err, MU_EMISSING, tenants ? "users" : "tenants",
				   "\"%s\": missing (an array, possibly empty)",
				   tenants ? "users" : "tenants");
		goto out;
	}
	if (!json_is_array(tenants) || !json_is_array(users)) {
		ret = mu_error_set(err, MU_ETYPE, json_is_array(tenants) ? "users" : "tenants",
				   "\"%s\": must be an array",
				   json_is_array(tenants) ? "users" : "tenants");
		goto out;
	}
	t.ntenants = json_array_size(tenants);
	t.n = 1 + t.ntenants + json_array_size(users);
	if (t.n > (size_t)INT32_MAX) {
		ret = mu_error_set(err, MU_ETOOBIG, "", "too many associations");
		goto out;
	}
	t.assoc = mu_calloc(t.n, sizeof(*t.assoc));
	t.tenant_of = mu_calloc(t.n, sizeof(*t.tenant_of));
	t.parent_name = mu_calloc(t.n, sizeof(*t.parent_name));
	t.assoc[0] = (struct fairtree_assoc){ .parent = -1, .shares = 1, .name = ROOT_NAME };
	index = json_object();
	if ((ret = parse_tenants(tenants, &t, index, err)) || (ret = check_cycles(&t, err)) ||
	    (ret = parse_users(users, &t, index, err)))
		goto out;
	if (fairtree_compute(t.assoc, t.n) != 0) {
		/* Everything the core rejects was rejected above; reaching this
		 * is a bug in the reader, reported rather than hidden. */
		ret = mu_error_set(err, MU_EINTERNAL, "", "the fair-share core rejected the tree");
		goto out;
	}
	ret = print_tree(&t, out, err);
out:
	tree_release(&t);
	json_decref(index);
	json_decref(doc);
	return ret;
}

/* Reads all of `f` into a new buffer; returns NULL with errno set on error. */
static char *slurp(FILE *f, size_t *len)
{
	size_t cap = 0, n = 0, got;
	char *buf = NULL;

	do {
		buf = mu_grow(buf, &cap, n + 65536, 1);
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got > 0);
	if (ferror(f)) {
		int e = errno ? errno : EIO;
		mu_free(buf);
		errno = e;
		return NULL;
	}
	*len = n;
	return buf;
}

int sim_fairshare_main(const char *path, FILE *out)
{
	struct mu_error err = { 0 };
	bool is_stdin = strcmp(path, "-") == 0;
	FILE *f = is_stdin ? stdin : fopen(path, "rb");
	char *buf;
	size_t len = 0;
	int ret;

	if (!f) {
		fprintf(stderr, "muster-sim: %s: cannot open: %s\n", path, strerror(errno));
		return 1;
	}
	buf = slurp(f, &len);
	if (!buf) {
		fprintf(stderr, "muster-sim: %s: cannot read: %s\n", path, strerror(errno));
		if (!is_stdin)
			fclose(f);
		return 1;
	}
	if (!is_stdin)
		fclose(f);
	ret = sim_fairshare_eval(buf, len, out, &err);
	mu_free(buf);
	if (ret) {
		fprintf(stderr, "muster-sim: %s: %s\n", path, err.msg);
		return 1;
	}
	return 0;
}
