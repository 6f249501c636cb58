/*
 * fuzz_swf - libFuzzer driver for the SWF trace reader (service/sim/trace.c): no crash, and every accepted
 * job is consistent (processors > 0, 0 <= run time <= limit); a refused
 * input names its line; --lenient never refuses. The reader's one-pass path
 * for lines of integers must agree with its field-by-field path: the same
 * input with ".0" after every integer field (which only the second reads)
 * gives the same jobs, the same refusal line and the same skips.
 *
 * Built as a libFuzzer target with -DMUSTER_FUZZ=ON and clang; linked with
 * replay_main.c (muster_fuzz_driver) it gets a plain main that replays the files and folders
 * given as arguments, so CI runs the seed corpus without clang.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_space(char ch)
{
	return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/*
 * data with ".0" after each field of a job line that the one-pass path
 * reads ([-] and 1 to 15 digits): the field-by-field path reads the copy.
 */
static char *fractions(const char *d, size_t n, size_t *out_len)
{
	char *o = malloc(3 * n + 3), *w = o; /* at most (n + 1) / 2 fields */
	for (size_t i = 0; i < n;) {
		size_t e = i;
		while (e < n && d[e] != '\n')
			e++;
		size_t k = i;
		while (k < e && is_space(d[k]))
			k++;
		bool comment = k < e && d[k] == ';';
		while (i < e) {
			size_t b = i;
			while (i < e && is_space(d[i]) == is_space(d[b]))
				i++;
			memcpy(w, d + b, i - b);
			w += i - b;
			size_t dg = b + (d[b] == '-');
			bool integer = !comment && !is_space(d[b]) && dg < i && i - dg <= 15;
			for (size_t c = dg; integer && c < i; c++)
				integer = d[c] >= '0' && d[c] <= '9';
			if (integer) {
				memcpy(w, ".0", 2);
				w += 2;
			}
		}
		if (e < n)
			*w++ = '\n';
		i = e + 1;
	}
	*out_len = (size_t)(w - o);
	return o;
}

static bool same_job(const struct trace *a, const struct trace *b, size_t i)
{
	const struct trace_job *x = &a->jobs[i], *y = &b->jobs[i];
	if (x->id != y->id || x->submit != y->submit || x->runtime != y->runtime || x->limit != y->limit ||
	    x->procs != y->procs || x->line != y->line || x->truncated != y->truncated || (x->user < 0) != (y->user < 0))
		return false;
	return x->user < 0 || strcmp(a->names[x->user], b->names[y->user]) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace t, f;
	size_t flen;
	char *fd = fractions((const char *)data, size, &flen);
	for (int lenient = 0; lenient < 2; lenient++) {
		struct mu_error err = { 0 }, ferr = { 0 };
		trace_init(&t);
		trace_init(&f);
		int ret = trace_parse_swf((const char *)data, size, lenient, &t, &err);
		int fret = trace_parse_swf(fd, flen, lenient, &f, &ferr);
		if (ret == 0) {
			for (size_t i = 0; i < t.njobs; i++) {
				const struct trace_job *j = &t.jobs[i];
				if (j->procs <= 0 || j->runtime < 0 || j->runtime > j->limit || j->limit < 1 || j->line == 0)
					abort();
			}
		} else if (lenient || err.msg[0] == '\0' || strncmp(err.msg, "line ", 5) != 0) {
			abort(); /* lenient never fails on SWF; errors name their line */
		}
		/* the two paths: the same verdict on every line */
		if ((ret == 0) != (fret == 0) || t.njobs != f.njobs || t.skipped != f.skipped || t.max_procs != f.max_procs)
			abort();
		if (ret && strncmp(err.msg, ferr.msg, strcspn(err.msg, ":")) != 0)
			abort(); /* the same line refused */
		for (size_t i = 0; ret == 0 && i < t.njobs; i++)
			if (!same_job(&t, &f, i))
				abort();
		trace_release(&t);
		trace_release(&f);
	}
	free(fd);
	return 0;
}
