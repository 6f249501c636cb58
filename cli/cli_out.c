#include "cli_out.h"

#include <ctype.h>
#include <string.h>

#include "alloc.h"

int cli_exit_for(int code)
{
	switch (code) {
	case 0:
		return CLI_EXIT_OK;
	case MU_ENOTFOUND:
	case MU_EGONE:
		return CLI_EXIT_NOTFOUND;
	case MU_EUNAUTH:
	case MU_EFORBIDDEN:
		return CLI_EXIT_AUTH;
	case MU_EUNAVAIL:
	case MU_ENOTLEADER:
	case MU_ENODEDOWN:
		return CLI_EXIT_UNAVAIL;
	default:
		return CLI_EXIT_ERROR;
	}
}

int cli_report(const struct mu_error *err)
{
	if (err->field[0])
		fprintf(stderr, "muster: error: %s (field: %s)\n", err->msg, err->field);
	else
		fprintf(stderr, "muster: error: %s\n", err->msg);
	return cli_exit_for(err->code);
}

int cli_report_about(const char *what, const char *name, const struct mu_error *err)
{
	fprintf(stderr, "muster: error: %s %s: %s", what, name, err->msg);
	if (err->field[0])
		fprintf(stderr, " (field: %s)", err->field);
	fputc('\n', stderr);
	return cli_exit_for(err->code);
}

int cli_usage_error(const char *cmd, const struct mu_error *err)
{
	if (cmd)
		fprintf(stderr, "muster: error: %s (see 'muster %s --help')\n", err->msg, cmd);
	else
		fprintf(stderr, "muster: error: %s (see 'muster --help')\n", err->msg);
	return CLI_EXIT_USAGE;
}

void cli_print_json(const json_t *doc)
{
	json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_ENCODE_ANY);
	fputc('\n', stdout);
}

const char *cli_str(const json_t *v, const char *dflt)
{
	return json_is_string(v) ? json_string_value(v) : dflt;
}

char *cli_value_text(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		return mu_strndup(json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return mu_asprintf("%lld", (long long)json_integer_value(v));
	case JSON_REAL:
		return mu_asprintf("%.6g", json_real_value(v));
	case JSON_TRUE:
		return mu_strdup("yes");
	case JSON_FALSE:
		return mu_strdup("no");
	case JSON_ARRAY: {
		char *acc = mu_strdup("");
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e) {
			char *t = cli_value_text(e);
			char *n = mu_asprintf("%s%s%s", acc, i ? "," : "", t);
			mu_free(t);
			mu_free(acc);
			acc = n;
		}
		return acc;
	}
	case JSON_OBJECT: {
		char *acc = mu_strdup("");
		const char *k;
		json_t *e;
		json_object_foreach((json_t *)v, k, e) {
			char *t = cli_value_text(e);
			char *n = mu_asprintf("%s%s%s=%s", acc, *acc ? "," : "", k, t);
			mu_free(t);
			mu_free(acc);
			acc = n;
		}
		return acc;
	}
	default:
		return mu_strdup("");
	}
}

struct cli_table {
	size_t ncols;
	size_t nrows, cap; /* rows include the header */
	char **cells;      /* nrows * ncols */
};

static void add_row(struct cli_table *t, const char *const *cells)
{
	t->cells = mu_grow(t->cells, &t->cap, (t->nrows + 1) * t->ncols, sizeof(char *));
	for (size_t c = 0; c < t->ncols; c++) {
		const char *s = cells[c] ? cells[c] : "";
		char *copy = mu_strdup(s);
		/* A newline or tab in a name would break the columns. */
		for (char *p = copy; *p; p++)
			if (*p == '\n' || *p == '\t' || *p == '\r')
				*p = ' ';
		t->cells[t->nrows * t->ncols + c] = copy;
	}
	t->nrows++;
}

struct cli_table *cli_table_new(size_t ncols, const char *const *headers)
{
	struct cli_table *t = mu_calloc(1, sizeof(*t));

	t->ncols = ncols;
	add_row(t, headers);
	return t;
}

void cli_table_add(struct cli_table *t, const char *const *cells)
{
	add_row(t, cells);
}

/* Display width in characters, counting UTF-8 sequences once. */
static size_t width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			w++;
	return w;
}

void cli_table_print(const struct cli_table *t, FILE *out)
{
	cli_table_print_opt(t, out, true);
}

void cli_table_print_opt(const struct cli_table *t, FILE *out, bool header)
{
	size_t *w = mu_calloc(t->ncols, sizeof(size_t));

	for (size_t r = header ? 0 : 1; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++) {
			size_t n = width(t->cells[r * t->ncols + c]);
			if (n > w[c])
				w[c] = n;
		}
	for (size_t r = header ? 0 : 1; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];
			if (c + 1 == t->ncols) {
				fputs(s, out);
			} else {
				fputs(s, out);
				for (size_t pad = width(s); pad < w[c] + 2; pad++)
					fputc(' ', out);
			}
		}
		fputc('\n', out);
	}
	mu_free(w);
}

void cli_table_free(struct cli_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		mu_free(t->cells[i]);
	mu_free(t->cells);
	mu_free(t);
}

size_t cli_print_items_table(const json_t *items, FILE *out)
{
	const json_t *first = json_array_get(items, 0);
	const char **hdr;
	const char **row;
	struct cli_table *t;
	size_t ncols = 0, i;
	const char *k;
	json_t *v;

	if (!json_is_object(first))
		return 0;
	hdr = mu_calloc(json_object_size(first) + 1, sizeof(char *));
	row = mu_calloc(json_object_size(first) + 1, sizeof(char *));
	json_object_foreach((json_t *)first, k, v) {
		char *u = mu_strdup(k);
		for (char *p = u; *p; p++)
			*p = (char)toupper((unsigned char)*p);
		hdr[ncols++] = u;
	}
	t = cli_table_new(ncols, hdr);
	json_array_foreach(items, i, v) {
		size_t c = 0;
		const char *key;
		json_t *cell;
		json_object_foreach((json_t *)first, key, cell) {
			const json_t *x = json_object_get(v, key);
			row[c++] = !x || json_is_null(x) ? mu_strdup("-") : cli_value_text(x);
		}
		cli_table_add(t, row);
		for (c = 0; c < ncols; c++)
			mu_free((char *)row[c]);
	}
	cli_table_print(t, out);
	cli_table_free(t);
	for (size_t c = 0; c < ncols; c++)
		mu_free((char *)hdr[c]);
	mu_free(hdr);
	mu_free(row);
	return json_array_size(items);
}

static void kv_rec(const json_t *obj, FILE *out, const char *indent, const char *prefix)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)obj, k, v) {
		char *name = prefix ? mu_asprintf("%s.%s", prefix, k) : mu_strdup(k);
		if (json_is_object(v) && json_object_size(v)) {
			kv_rec(v, out, indent, name);
		} else {
			char *t = cli_value_text(v);
			fprintf(out, "%s%s=%s\n", indent, name, t);
			mu_free(t);
		}
		mu_free(name);
	}
}

void cli_print_kv(const json_t *obj, FILE *out, const char *indent)
{
	kv_rec(obj, out, indent, NULL);
}
