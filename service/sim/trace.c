/* trace.c - SWF and CSV trace readers for muster-sim; see trace.h. */
#define _GNU_SOURCE
#include "trace.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "alloc.h"

void trace_init(struct trace *t)
{
	memset(t, 0, sizeof(*t));
}

void trace_release(struct trace *t)
{
	for (size_t i = 0; i < t->njobs; i++)
		mu_free(t->jobs[i].deps);
	mu_free(t->jobs);
	for (size_t i = 0; i < t->nnames; i++)
		mu_free(t->names[i]);
	mu_free(t->names);
	mu_free(t->hash);
	mu_free(t->text);
	memset(t, 0, sizeof(*t));
}

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

int trace_intern(struct trace *t, const char *s, size_t len)
{
	if ((t->nnames + 1) * 2 > t->cap_hash) {
		size_t cap = t->cap_hash ? t->cap_hash * 2 : 64;
		size_t *h = mu_calloc(cap, sizeof(*h));
		for (size_t i = 0; i < t->nnames; i++) {
			size_t k = hash_bytes(t->names[i], strlen(t->names[i])) & (cap - 1);
			while (h[k])
				k = (k + 1) & (cap - 1);
			h[k] = i + 1;
		}
		mu_free(t->hash);
		t->hash = h;
		t->cap_hash = cap;
	}
	size_t k = hash_bytes(s, len) & (t->cap_hash - 1);
	while (t->hash[k]) {
		const char *x = t->names[t->hash[k] - 1];
		if (strlen(x) == len && memcmp(x, s, len) == 0)
			return (int)(t->hash[k] - 1);
		k = (k + 1) & (t->cap_hash - 1);
	}
	t->names = mu_grow(t->names, &t->cap_names, t->nnames + 1, sizeof(*t->names));
	t->names[t->nnames] = mu_strndup(s, len);
	t->hash[k] = ++t->nnames;
	return (int)(t->nnames - 1);
}

static struct trace_job *new_job(struct trace *t, size_t line)
{
	t->jobs = mu_grow(t->jobs, &t->cap, t->njobs + 1, sizeof(*t->jobs));
	struct trace_job *j = &t->jobs[t->njobs];
	memset(j, 0, sizeof(*j));
	j->line = line;
	j->tenant = j->user = j->cls = j->gpu_model = j->topo_required = j->topo_preferred = -1;
	return j;
}

/* Splits the next line off [*p, end); returns it (not NUL-terminated). */
static bool next_line(const char **p, const char *end, const char **ls, size_t *ll)
{
	if (*p >= end)
		return false;
	const char *s = *p;
	const char *nl = memchr(s, '\n', (size_t)(end - s));
	const char *e = nl ? nl : end;
	*p = nl ? nl + 1 : end;
	while (e > s && (e[-1] == '\r'))
		e--;
	*ls = s;
	*ll = (size_t)(e - s);
	return true;
}

static bool parse_num(const char *s, size_t n, double *out)
{
	char tmp[64];
	if (n == 0 || n >= sizeof(tmp))
		return false;
	size_t i = s[0] == '-';
	if (n > i && n - i <= 15) { /* most SWF fields: an integer, exact in a double, without strtod */
		int64_t v = 0;
		size_t k = i;
		for (; k < n && s[k] >= '0' && s[k] <= '9'; k++)
			v = v * 10 + (s[k] - '0');
		if (k == n) {
			*out = i ? -(double)v : (double)v;
			return true;
		}
	}
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	char *end;
	errno = 0;
	double v = strtod(tmp, &end);
	if (end != tmp + n || errno || !isfinite(v))
		return false;
	*out = v;
	return true;
}

static bool parse_int(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
	char tmp[32];
	if (n == 0 || n >= sizeof(tmp))
		return false;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	char *end;
	errno = 0;
	long long v = strtoll(tmp, &end, 10);
	if (end != tmp + n || errno || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

#define MAX_TIME ((int64_t)1 << 40)  /* ~35,000 years of seconds: keeps sums far from overflow */
#define MAX_PROCS 100000000

static int line_error(struct mu_error *err, size_t line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int line_error(struct mu_error *err, size_t line, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mu_error_set(err, MU_EPARSE, "", "line %zu: %s", line, msg);
}

/* isspace() in the C locale the simulator runs in, inline: it is called for every byte of a trace. */
static inline bool is_space(char ch)
{
	return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/*
 * The 18 fields of a line that holds integers only (what nearly every SWF
 * line is), read in one pass. false: anything else (a fraction, an
 * exponent, a 16th digit, a field too many or too few), which
 * swf_fields() then reads and reports on field by field.
 */
static bool swf_ints(const char *s, size_t n, double f[18])
{
	size_t i = 0;
	for (size_t k = 0; k < 18; k++) {
		while (i < n && is_space(s[i]))
			i++;
		bool neg = i < n && s[i] == '-';
		i += neg;
		size_t b = i;
		int64_t v = 0;
		for (; i < n && s[i] >= '0' && s[i] <= '9' && i - b < 15; i++)
			v = v * 10 + (s[i] - '0');
		if (i == b || (i < n && !is_space(s[i])))
			return false;
		f[k] = neg ? -(double)v : (double)v;
	}
	while (i < n && is_space(s[i]))
		i++;
	return i == n;
}

/* The 18 fields of a line, or the line's error. */
static int swf_fields(const char *s, size_t n, size_t line, double f[18], struct mu_error *err)
{
	const char *tok[18];
	size_t tlen[18];
	size_t nt = 0;
	size_t i = 0;
	if (swf_ints(s, n, f))
		return 0;
	while (i < n) {
		while (i < n && is_space(s[i]))
			i++;
		if (i >= n)
			break;
		size_t b = i;
		while (i < n && !is_space(s[i]))
			i++;
		if (nt == 18)
			return line_error(err, line, "more than 18 fields");
		tok[nt] = s + b;
		tlen[nt++] = i - b;
	}
	if (nt != 18)
		return line_error(err, line, "expected 18 whitespace-separated fields, found %zu", nt);
	for (size_t k = 0; k < 18; k++)
		if (!parse_num(tok[k], tlen[k], &f[k]))
			return line_error(err, line, "field %zu (\"%.*s\") is not a number", k + 1, (int)(tlen[k] > 40 ? 40 : tlen[k]),
			                  tok[k]);
	return 0;
}

static int swf_line(struct trace *t, const char *s, size_t n, size_t line, struct mu_error *err)
{
	double f[18];
	int ret = swf_fields(s, n, line, f, err);
	if (ret)
		return ret;
	if (f[0] < 0 || f[0] > 9e15 || f[0] != floor(f[0]))
		return line_error(err, line, "field 1 (job id) must be a non-negative integer");
	if (f[1] < 0 || f[1] > (double)MAX_TIME)
		return line_error(err, line, "field 2 (submit time) must be >= 0");
	if (f[3] < 0 || f[3] > (double)MAX_TIME)
		return line_error(err, line, "field 4 (run time) must be >= 0 (job %.0f)", f[0]);
	double procs = f[7] >= 0.5 ? f[7] : f[4]; /* whole processors: 0.1 is none */
	if (procs < 0.5 || procs > MAX_PROCS)
		return line_error(err, line, "job %.0f: no processor count (fields 8 and 5 are not positive)", f[0]);
	if (f[8] > (double)MAX_TIME)
		return line_error(err, line, "field 9 (requested time) too large");
	struct trace_job *j = new_job(t, line);
	j->id = (int64_t)f[0];
	j->submit = (int64_t)llround(f[1]);
	j->runtime = (int64_t)llround(f[3]);
	j->procs = (int)llround(procs);
	j->limit = f[8] > 0 ? (int64_t)llround(f[8]) : j->runtime;
	if (j->limit < 1)
		j->limit = 1;
	if (j->runtime > j->limit) {
		j->runtime = j->limit;
		j->truncated = true;
		t->truncated++;
	}
	j->user = -1;
	if (f[11] >= 0 && f[11] < 1e15) { /* a user number; anything else is "no user" */
		char ubuf[32];
		int ul;
		if (f[11] == floor(f[11])) { /* as "%.0f" prints it, without printf's cost per line */
			char *e = ubuf + sizeof(ubuf), *b = e;
			for (int64_t v = (int64_t)f[11]; b == e || v; v /= 10)
				*--b = (char)('0' + v % 10);
			ul = (int)(e - b);
			memmove(ubuf, b, (size_t)ul);
		} else {
			ul = snprintf(ubuf, sizeof(ubuf), "%.0f", f[11]);
		}
		j->user = trace_intern(t, ubuf, (size_t)ul);
	}
	t->text = mu_grow(t->text, &t->cap_text, t->ntext + n + 1, 1);
	j->text = t->ntext;
	memcpy(t->text + t->ntext, s, n);
	t->text[t->ntext + n] = '\0';
	t->ntext += n + 1;
	t->njobs++;
	return 0;
}

int trace_parse_swf(const char *buf, size_t len, bool lenient, struct trace *t, struct mu_error *err)
{
	const char *p = buf, *end = buf + len, *s;
	size_t n, line = 0;
	int ret = 0;
	t->is_swf = true;
	while (next_line(&p, end, &s, &n)) {
		line++;
		size_t i = 0;
		while (i < n && isspace((unsigned char)s[i]))
			i++;
		if (i == n)
			continue;
		if (s[i] == ';') {
			const char *m = memmem(s + i, n - i, "MaxProcs:", 9);
			if (m) {
				const char *v = m + 9, *e = s + n;
				while (v < e && isspace((unsigned char)*v))
					v++;
				const char *ve = v;
				while (ve < e && (isdigit((unsigned char)*ve) || *ve == '-'))
					ve++;
				int64_t mp;
				if (parse_int(v, (size_t)(ve - v), -1, MAX_PROCS, &mp) && mp > 0)
					t->max_procs = mp;
			}
			continue;
		}
		if (memchr(s, '\0', n)) {
			ret = line_error(err, line, "NUL byte in line");
		} else {
			ret = swf_line(t, s + i, n - i, line, err);
		}
		if (ret) {
			if (!lenient)
				return ret;
			t->skipped++;
			ret = 0;
			mu_error_clear(err);
		}
	}
	return 0;
}

/* ------------------------------------------------------------ CSV */

enum col {
	COL_ID, COL_SUBMIT, COL_DURATION, COL_GPUS, COL_NODES, COL_GPN, COL_MIN_NODES, COL_TENANT, COL_USER,
	COL_LIMIT, COL_CLASS, COL_MODEL, COL_REQUIRED, COL_PREFERRED, COL_DEPENDS, COL_EXIT, COL_COUNT
};

static const char *const col_names[COL_COUNT] = {
	"id", "submit", "duration", "gpus", "nodes", "gpus_per_node", "min_nodes", "tenant", "user",
	"time_limit", "class", "gpu_model", "topology_required", "topology_preferred", "depends", "exit",
};

static void trim(const char **s, size_t *n)
{
	while (*n && isspace((unsigned char)**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && isspace((unsigned char)(*s)[*n - 1]))
		(*n)--;
}

static bool valid_name(const char *s, size_t n)
{
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-/", s[i]))
			return false;
	return true;
}

static int parse_deps(struct trace_job *j, const char *s, size_t n, size_t line, struct mu_error *err)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && (s[i] == ';' || s[i] == ' '))
			i++;
		if (i >= n)
			break;
		size_t b = i;
		while (i < n && s[i] != ';' && s[i] != ' ')
			i++;
		const char *d = s + b;
		size_t dl = i - b;
		const char *colon = memchr(d, ':', dl);
		if (!colon)
			return line_error(err, line, "depends: \"%.*s\" is not TYPE:JOBID", (int)(dl > 40 ? 40 : dl), d);
		size_t tl = (size_t)(colon - d);
		enum trace_dep_type type;
		if (tl == 7 && memcmp(d, "afterok", 7) == 0)
			type = TRACE_DEP_AFTEROK;
		else if (tl == 8 && memcmp(d, "afterany", 8) == 0)
			type = TRACE_DEP_AFTERANY;
		else if (tl == 10 && memcmp(d, "afternotok", 10) == 0)
			type = TRACE_DEP_AFTERNOTOK;
		else
			return line_error(err, line, "depends: unknown type \"%.*s\" (afterok, afterany, afternotok)",
			                  (int)(tl > 20 ? 20 : tl), d);
		int64_t id;
		if (!parse_int(colon + 1, dl - tl - 1, 0, INT64_MAX, &id))
			return line_error(err, line, "depends: bad job id in \"%.*s\"", (int)(dl > 40 ? 40 : dl), d);
		if (j->ndeps >= 64)
			return line_error(err, line, "depends: more than 64 dependencies");
		j->deps = mu_realloc(j->deps, (j->ndeps + 1) * sizeof(*j->deps));
		j->deps[j->ndeps++] = (struct trace_dep){ type, id };
	}
	return 0;
}

static int csv_row(struct trace *t, const int *cols, size_t ncols, const char *s, size_t n, size_t line,
                   struct mu_error *err)
{
	const char *f[COL_COUNT] = { 0 };
	size_t fl[COL_COUNT] = { 0 };
	bool has[COL_COUNT] = { 0 };
	size_t k = 0, i = 0;
	int64_t v;
	for (;;) {
		size_t b = i;
		while (i < n && s[i] != ',')
			i++;
		if (k >= ncols)
			return line_error(err, line, "more than %zu fields", ncols);
		const char *x = s + b;
		size_t xl = i - b;
		trim(&x, &xl);
		if (xl) {
			f[cols[k]] = x;
			fl[cols[k]] = xl;
			has[cols[k]] = true;
		}
		k++;
		if (i >= n)
			break;
		i++;
	}
	if (k != ncols)
		return line_error(err, line, "expected %zu fields, found %zu", ncols, k);
	struct trace_job j0, *j = &j0;
	memset(j, 0, sizeof(*j));
	j->tenant = j->user = j->cls = j->gpu_model = j->topo_required = j->topo_preferred = -1;
	j->line = line;
	int ret = 0;
#define NEED_INT(c, lo, hi, dst)                                                                          \
	do {                                                                                              \
		if (!parse_int(f[c], fl[c], lo, hi, &v)) {                                                \
			ret = line_error(err, line, "%s: \"%.*s\" is not an integer in [%lld, %lld]",        \
			                 col_names[c], (int)(fl[c] > 40 ? 40 : fl[c]), f[c], (long long)(lo), \
			                 (long long)(hi));                                                    \
			goto out;                                                                         \
		}                                                                                         \
		dst = v;                                                                                  \
	} while (0)
	if (!has[COL_SUBMIT] || !has[COL_DURATION]) {
		ret = line_error(err, line, "submit and duration are required");
		goto out;
	}
	NEED_INT(COL_SUBMIT, 0, MAX_TIME, j->submit);
	NEED_INT(COL_DURATION, 0, MAX_TIME, j->runtime);
	j->id = (int64_t)t->njobs + 1;
	if (has[COL_ID])
		NEED_INT(COL_ID, 0, INT64_MAX / 2, j->id);
	if (has[COL_GPUS] && (has[COL_NODES] || has[COL_GPN])) {
		ret = line_error(err, line, "give gpus or nodes with gpus_per_node, not both");
		goto out;
	}
	if (has[COL_GPUS]) {
		NEED_INT(COL_GPUS, 1, MAX_PROCS, j->procs);
	} else if (has[COL_NODES] && has[COL_GPN]) {
		NEED_INT(COL_NODES, 1, 1000000, j->nodes);
		NEED_INT(COL_GPN, 0, 64, j->gpus_per_node);
	} else {
		ret = line_error(err, line, "needs gpus, or nodes and gpus_per_node");
		goto out;
	}
	if (has[COL_MIN_NODES]) {
		NEED_INT(COL_MIN_NODES, 1, 1000000, j->min_nodes);
		if (!j->nodes || j->min_nodes > j->nodes) {
			ret = line_error(err, line, "min_nodes needs nodes and must be <= nodes");
			goto out;
		}
	}
	j->limit = j->runtime > 0 ? j->runtime : 1;
	if (has[COL_LIMIT])
		NEED_INT(COL_LIMIT, 1, MAX_TIME, j->limit);
	if (j->runtime > j->limit) {
		j->runtime = j->limit; /* it runs into its limit and is killed there */
		j->truncated = true;
		t->truncated++;
	}
	if (has[COL_EXIT]) {
		NEED_INT(COL_EXIT, 0, 255, v);
		j->exit_code = (int)v;
	}
	static const int name_cols[] = { COL_TENANT, COL_USER, COL_CLASS, COL_MODEL, COL_REQUIRED, COL_PREFERRED };
	for (size_t c = 0; c < sizeof(name_cols) / sizeof(name_cols[0]); c++) {
		int cc = name_cols[c];
		if (!has[cc])
			continue;
		if (!valid_name(f[cc], fl[cc])) {
			ret = line_error(err, line, "%s: \"%.*s\" is not a name ([A-Za-z0-9_./-], 1-63 chars)",
			                 col_names[cc], (int)(fl[cc] > 40 ? 40 : fl[cc]), f[cc]);
			goto out;
		}
		int id = trace_intern(t, f[cc], fl[cc]);
		switch (cc) {
		case COL_TENANT: j->tenant = id; break;
		case COL_USER: j->user = id; break;
		case COL_CLASS: j->cls = id; break;
		case COL_MODEL: j->gpu_model = id; break;
		case COL_REQUIRED: j->topo_required = id; break;
		case COL_PREFERRED: j->topo_preferred = id; break;
		}
	}
	if (has[COL_DEPENDS]) {
		ret = parse_deps(j, f[COL_DEPENDS], fl[COL_DEPENDS], line, err);
		if (ret)
			goto out;
	}
#undef NEED_INT
	*new_job(t, line) = *j;
	t->njobs++;
	return 0;
out:
	mu_free(j->deps);
	return ret;
}

int trace_parse_csv(const char *buf, size_t len, bool lenient, struct trace *t, struct mu_error *err)
{
	const char *p = buf, *end = buf + len, *s;
	size_t n, line = 0;
	int cols[COL_COUNT];
	size_t ncols = 0;
	while (next_line(&p, end, &s, &n)) {
		line++;
		const char *x = s;
		size_t xl = n;
		trim(&x, &xl);
		if (xl == 0 || x[0] == '#')
			continue;
		if (memchr(x, '\0', xl)) {
			int ret = line_error(err, line, "NUL byte in line");
			if (!lenient || ncols == 0)
				return ret;
			t->skipped++;
			mu_error_clear(err);
			continue;
		}
		if (ncols == 0) {
			bool seen[COL_COUNT] = { 0 };
			size_t i = 0;
			for (;;) {
				size_t b = i;
				while (i < xl && x[i] != ',')
					i++;
				const char *h = x + b;
				size_t hl = i - b;
				trim(&h, &hl);
				int c = -1;
				for (int k = 0; k < COL_COUNT; k++)
					if (strlen(col_names[k]) == hl && memcmp(col_names[k], h, hl) == 0)
						c = k;
				if (c < 0)
					return line_error(err, line, "unknown column \"%.*s\"", (int)(hl > 40 ? 40 : hl), h);
				if (seen[c])
					return line_error(err, line, "column %s given twice", col_names[c]);
				seen[c] = true;
				cols[ncols++] = c;
				if (i >= xl)
					break;
				i++;
			}
			if (!seen[COL_SUBMIT] || !seen[COL_DURATION] || !(seen[COL_GPUS] || (seen[COL_NODES] && seen[COL_GPN])))
				return line_error(err, line,
				                  "the header needs submit, duration and gpus (or nodes and gpus_per_node)");
			continue;
		}
		int ret = csv_row(t, cols, ncols, x, xl, line, err);
		if (ret) {
			if (!lenient)
				return ret;
			t->skipped++;
			mu_error_clear(err);
		}
	}
	if (ncols == 0)
		return mu_error_set(err, MU_EPARSE, "", "line %zu: no header line", line ? line : 1);
	return 0;
}

int trace_read_file(const char *path, char **buf, size_t *len, struct mu_error *err)
{
	gzFile f = gzopen(path, "rb");
	if (!f)
		return mu_error_set(err, MU_EIO, "", "%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
	size_t cap = 1 << 20, n = 0;
	char *b = mu_malloc(cap + 1);
	for (;;) {
		if (n == cap) {
			cap *= 2;
			b = mu_realloc(b, cap + 1);
		}
		int r = gzread(f, b + n, (unsigned)(cap - n > (1u << 30) ? (1u << 30) : cap - n));
		if (r < 0) {
			int e;
			const char *m = gzerror(f, &e);
			gzclose(f);
			mu_free(b);
			return mu_error_set(err, MU_EIO, "", "%s: read error: %s", path, m);
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	gzclose(f);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}
