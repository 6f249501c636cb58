/*
 * easy_floor: bench/sched/easy_ref.py line for line in C, to measure the
 * floor under the replay-speed targets. It is not a scheduler: it knows
 * whole nodes of one kind only, so a count of free nodes is its whole state
 * (no node identities, no GPUs, no quotas, no topology, no reasons). Its
 * time, parsing included, is what the Python's replay costs without the
 * interpreter; bench/sched/run_wide.sh prints it next to muster-sim and the
 * Python reference, and checks that its schedule is theirs.
 *
 *   easy_floor TRACE.swf[.gz] NODES GPUS_PER_NODE [--out STARTS.txt]
 *
 * Same input rules, event order and output as easy_ref.py (see its header).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

struct job {
	int64_t id, submit, run, limit;
	int64_t n;
};

struct ev { /* a running job: its planned end (ends) or its actual end (term) */
	int64_t t, seq;
	size_t job;
};

static struct job *jobs;
static size_t njobs;
static int64_t *start;
static int64_t freen;
static size_t *queue, nq;
static struct ev *ends, *term;
static size_t nends, nterm;
static int64_t seq;
static unsigned char *released; /* by seq */

static void *xrealloc(void *old, size_t n)
{
	void *p = realloc(old, n ? n : 1);
	if (!p) {
		fputs("easy_floor: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

static void *xmalloc(size_t n)
{
	return xrealloc(NULL, n);
}

static int ev_cmp(const struct ev *a, const struct ev *b)
{
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Index of the first entry of ends not below *k (bisect_left). */
static size_t ends_lower(const struct ev *k)
{
	size_t lo = 0, hi = nends;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ev_cmp(&ends[mid], k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void heap_push(struct ev e)
{
	size_t i = nterm++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (ev_cmp(&term[p], &e) <= 0)
			break;
		term[i] = term[p];
		i = p;
	}
	term[i] = e;
}

static struct ev heap_pop(void)
{
	struct ev top = term[0], last = term[--nterm];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= nterm)
			break;
		if (c + 1 < nterm && ev_cmp(&term[c + 1], &term[c]) < 0)
			c++;
		if (ev_cmp(&last, &term[c]) <= 0)
			break;
		term[i] = term[c];
		i = c;
	}
	if (nterm)
		term[i] = last;
	return top;
}

static void begin(size_t i, int64_t now)
{
	freen -= jobs[i].n;
	start[i] = now;
	seq++;
	struct ev e = { now + jobs[i].limit, seq, i };
	size_t at = ends_lower(&e);
	memmove(&ends[at + 1], &ends[at], (nends - at) * sizeof(*ends));
	ends[at] = e;
	nends++;
	heap_push((struct ev){ now + jobs[i].run, seq, i });
}

static void release(size_t i, int64_t sq)
{
	struct ev k = { start[i] + jobs[i].limit, sq, i };
	size_t at = ends_lower(&k);
	freen += jobs[i].n;
	memmove(&ends[at], &ends[at + 1], (nends - at - 1) * sizeof(*ends));
	nends--;
}

static void schedule(int64_t now)
{
	int have_shadow = 0;
	int64_t shadow = 0, extra = 0;
	size_t kept = 0; /* the queue is compacted in place: kept <= qi */
	for (size_t qi = 0; qi < nq; qi++) {
		size_t i = queue[qi];
		int64_t n = jobs[i].n, limit = jobs[i].limit;
		if (!have_shadow) {
			if (n <= freen) {
				begin(i, now);
				continue;
			}
			int64_t avail = freen;
			int found = 0;
			for (size_t k = 0; k < nends; k++) { /* every run ending at the shadow time counts */
				if (found && ends[k].t > shadow)
					break;
				avail += jobs[ends[k].job].n;
				if (!found && avail >= n) {
					shadow = ends[k].t;
					found = 1;
				}
			}
			/* As the Python: no end frees enough, so "shadow is None" stays and
			 * the next job is judged like this one. */
			have_shadow = found;
			extra = avail - n;
			queue[kept++] = i;
			if (freen == 0) {
				memmove(&queue[kept], &queue[qi + 1], (nq - qi - 1) * sizeof(*queue));
				kept += nq - qi - 1;
				break;
			}
			continue;
		}
		if (n <= freen && (now + limit <= shadow || n <= extra)) {
			begin(i, now);
			if (now + limit > shadow)
				extra -= n;
			if (freen == 0) {
				memmove(&queue[kept], &queue[qi + 1], (nq - qi - 1) * sizeof(*queue));
				kept += nq - qi - 1;
				break;
			}
			continue;
		}
		queue[kept++] = i;
	}
	nq = kept;
}

static int is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* Splits a line into up to nv numbers: their count, or -1 when a field is not one. */
static int split(char *s, double *v, int nv)
{
	int n = 0;
	while (*s && n < nv) {
		while (is_ws(*s))
			s++;
		if (!*s)
			break;
		/* An integer field (nearly all of SWF) is read by hand, exactly as
		 * strtod would read it: libc's strtod was 65% of this program. */
		const char *p = s + (*s == '-');
		const char *q = p;
		int64_t x = 0;
		while (*q >= '0' && *q <= '9' && q - p < 15)
			x = x * 10 + (*q++ - '0');
		if (q > p && (is_ws(*q) || !*q)) {
			v[n++] = *s == '-' ? -(double)x : (double)x;
			s = (char *)q;
			continue;
		}
		char *e;
		v[n++] = strtod(s, &e);
		if (e == s)
			return -1;
		s = e;
		while (*s && !is_ws(*s))
			s++;
	}
	return n;
}

/* Writes v in decimal just before end; returns where it begins. */
static char *fmt_i64(char *end, int64_t v)
{
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do
		*--end = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--end = '-';
	return end;
}

static int64_t rnd(double x) /* Python's round(): half to even */
{
	return (int64_t)nearbyint(x);
}

static size_t *sorted_order;

static int order_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	if (jobs[x].submit != jobs[y].submit)
		return jobs[x].submit < jobs[y].submit ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Reads the trace into jobs[] as easy_ref.py does; 0, or -1 with a message. */
static int read_trace(const char *path, int64_t nodes_total, int64_t gpn)
{
	gzFile f = gzopen(path, "rb");
	if (!f) {
		fprintf(stderr, "easy_floor: cannot open %s\n", path);
		return -1;
	}
	gzbuffer(f, 1 << 16);
	size_t cap = 1024;
	jobs = xmalloc(cap * sizeof(*jobs));
	static char line[65536];
	const char *bad = NULL;
	while (!bad && gzgets(f, line, sizeof(line))) {
		if (!strchr(line, '\n') && !gzeof(f)) {
			bad = "is longer than 65535 bytes";
			break;
		}
		char *s = line;
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '\n' || *s == '\r' || *s == ';')
			continue;
		double x[18];
		int nx = split(s, x, 18);
		if (nx < 9) {
			bad = "does not start with 9 numeric fields";
			break;
		}
		for (int k = 0; k < nx; k++)
			if (!(fabs(x[k]) < 9e15)) /* also NaN: the casts below need a whole number in range */
				bad = "has a field out of range";
		if (bad)
			break;
		double procs = x[7] >= 0.5 ? x[7] : x[4];
		int64_t run = rnd(x[3]);
		double est = x[8];
		int64_t limit = est > 0 ? rnd(est) : run;
		if (limit < 1)
			limit = 1;
		int64_t p = rnd(procs);
		int64_t n = gpn == 1 ? p : (p <= gpn ? 1 : (p + gpn - 1) / gpn);
		if (n > nodes_total) {
			fprintf(stderr, "job %lld needs %lld nodes; the cluster has %lld\n", (long long)x[0], (long long)n,
			        (long long)nodes_total);
			gzclose(f);
			return -1;
		}
		if (njobs == cap)
			jobs = xrealloc(jobs, (cap *= 2) * sizeof(*jobs));
		jobs[njobs++] = (struct job){ (int64_t)x[0], rnd(x[1]), run < limit ? run : limit, limit, n };
	}
	gzclose(f);
	if (bad)
		fprintf(stderr, "easy_floor: a line of %s %s\n", path, bad);
	return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
	clock_t c0 = clock();
	if (argc < 4) {
		fputs("usage: easy_floor TRACE.swf[.gz] NODES GPUS_PER_NODE [--out STARTS.txt]\n", stderr);
		return 2;
	}
	const char *path = argv[1], *out = NULL;
	char *e2, *e3;
	long long nodes_total = strtoll(argv[2], &e2, 10), gpn = strtoll(argv[3], &e3, 10);
	if (*e2 || *e3 || nodes_total < 1 || gpn < 1) {
		fputs("easy_floor: NODES and GPUS_PER_NODE must be whole numbers of at least 1\n", stderr);
		return 2;
	}
	for (int a = 4; a + 1 < argc; a++)
		if (strcmp(argv[a], "--out") == 0)
			out = argv[a + 1];
	if (read_trace(path, nodes_total, gpn))
		return 1;
	sorted_order = xmalloc(njobs * sizeof(size_t));
	for (size_t i = 0; i < njobs; i++)
		sorted_order[i] = i;
	size_t in_order = 1; /* traces list jobs by submit time: skip the sort then */
	while (in_order < njobs && jobs[in_order - 1].submit <= jobs[in_order].submit)
		in_order++;
	if (in_order < njobs)
		qsort(sorted_order, njobs, sizeof(size_t), order_cmp);
	start = xmalloc(njobs * sizeof(*start));
	for (size_t i = 0; i < njobs; i++)
		start[i] = -1;
	freen = nodes_total;
	queue = xmalloc(njobs * sizeof(*queue));
	ends = xmalloc((njobs + 1) * sizeof(*ends));
	term = xmalloc((njobs + 1) * sizeof(*term));
	released = xmalloc(njobs + 2);
	memset(released, 0, njobs + 2);
	struct ev *due = xmalloc((njobs + 1) * sizeof(*due));
	size_t nxt = 0;
	while (nxt < njobs || nterm) {
		int64_t t = nxt < njobs ? jobs[sorted_order[nxt]].submit : INT64_MAX;
		if (nterm && term[0].t < t)
			t = term[0].t;
		size_t ndue = 0;
		while (nterm && term[0].t == t)
			due[ndue++] = heap_pop();
		for (size_t d = 0; d < ndue; d++) {
			size_t i = due[d].job;
			if (start[i] + jobs[i].limit <= t) { /* its estimated end is now: free before the submissions */
				release(i, due[d].seq);
				released[due[d].seq] = 1;
			}
		}
		while (nxt < njobs && jobs[sorted_order[nxt]].submit == t) {
			queue[nq++] = sorted_order[nxt++];
			schedule(t);
		}
		while (ndue) {
			for (size_t d = 0; d < ndue; d++) {
				if (!released[due[d].seq])
					release(due[d].job, due[d].seq);
				else
					released[due[d].seq] = 0;
				schedule(t);
			}
			ndue = 0;
			while (nterm && term[0].t == t) /* zero-length runs started just now */
				due[ndue++] = heap_pop();
		}
	}
	printf("easy_floor: %zu jobs, %lld x %lld GPUs; %.3f s CPU\n", njobs, (long long)nodes_total, (long long)gpn,
	       (double)(clock() - c0) / CLOCKS_PER_SEC);
	if (out) {
		FILE *o = fopen(out, "w");
		if (!o) {
			fprintf(stderr, "easy_floor: cannot write %s\n", out);
			return 1;
		}
		for (size_t i = 0; i < njobs; i++) { /* by hand, as the parse: fprintf was a tenth of the run */
			char b[48], *e = b + sizeof(b);
			*--e = '\n';
			e = fmt_i64(e, start[i]);
			*--e = ' ';
			e = fmt_i64(e, jobs[i].id);
			fwrite(e, 1, (size_t)(b + sizeof(b) - e), o);
		}
		if (fclose(o)) {
			fprintf(stderr, "easy_floor: cannot write %s\n", out);
			return 1;
		}
	}
	free(due);
	free(released);
	free(term);
	free(ends);
	free(queue);
	free(start);
	free(sorted_order);
	free(jobs);
	return 0;
}
