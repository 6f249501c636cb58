/* hostlist.c - see hostlist.h. */
#include "hostlist.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* A name split at its trailing number: prefix length, the digits, and
 * the padding width (the digit count when it starts with 0, else 0). */
struct part {
	size_t plen;
	const char *digits;
	size_t ndigits;
	unsigned long long num;
	size_t width;
};

static bool split(const char *name, struct part *p)
{
	size_t len = strlen(name), i = len;

	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	p->plen = i;
	p->digits = name + i;
	p->ndigits = len - i;
	if (p->ndigits == 0 || p->ndigits > 18)
		return false; /* no number (or too long to be one): stands alone */
	p->num = strtoull(p->digits, NULL, 10);
	p->width = p->digits[0] == '0' && p->ndigits > 1 ? p->ndigits : 0;
	return true;
}

/* Two names fit one bracket when their prefixes agree and the first's
 * padding writes the second's number as it is ("01" then "10"). */
static bool same_group(const char *a, const struct part *pa, const char *b, const struct part *pb)
{
	return pa->plen == pb->plen && memcmp(a, b, pa->plen) == 0 &&
	       (pa->width == pb->width || (pb->width == 0 && pb->ndigits >= pa->width));
}

static void add_num(struct mu_buf *out, unsigned long long v, size_t width)
{
	mu_buf_addf(out, "%0*llu", (int)width, v);
}

void mu_hostlist_compress(const char *const *names, size_t n, struct mu_buf *out)
{
	size_t i = 0;

	mu_buf_adds(out, "");
	while (i < n) {
		struct part p = { 0 }, q = { 0 };
		size_t j;

		if (i)
			mu_buf_addc(out, ',');
		if (!split(names[i], &p)) {
			mu_buf_adds(out, names[i++]);
			continue;
		}
		for (j = i + 1; j < n; j++)
			if (!split(names[j], &q) || !same_group(names[i], &p, names[j], &q))
				break;
		if (j == i + 1) {
			mu_buf_adds(out, names[i++]);
			continue;
		}
		mu_buf_add(out, names[i], p.plen);
		mu_buf_addc(out, '[');
		/* ranges of consecutive ascending numbers, in input order */
		for (size_t k = i; k < j;) {
			struct part a = { 0 }, b = { 0 };
			size_t m = k;

			split(names[k], &a);
			while (m + 1 < j) {
				split(names[m + 1], &b);
				split(names[m], &q);
				if (b.num != q.num + 1)
					break;
				m++;
			}
			if (k > i)
				mu_buf_addc(out, ',');
			add_num(out, a.num, p.width);
			if (m > k) {
				split(names[m], &b);
				mu_buf_addc(out, '-');
				add_num(out, b.num, p.width);
			}
			k = m + 1;
		}
		mu_buf_addc(out, ']');
		i = j;
	}
}

/* One "lo" or "lo-hi" item of a bracket; *count grows by the names added. */
static int expand_item(const char *prefix, size_t plen, const char *item, size_t ilen,
		       const char *suffix, size_t slen, size_t *count, struct mu_buf *out)
{
	char lo_s[20], hi_s[20];
	const char *dash = memchr(item, '-', ilen);
	size_t llen = dash ? (size_t)(dash - item) : ilen;
	size_t hlen = dash ? ilen - llen - 1 : llen;
	const char *hi_p = dash ? dash + 1 : item;

	if (llen == 0 || hlen == 0 || llen > 18 || hlen > 18)
		return MU_EINVAL;
	for (size_t k = 0; k < llen; k++)
		if (item[k] < '0' || item[k] > '9')
			return MU_EINVAL;
	for (size_t k = 0; k < hlen; k++)
		if (hi_p[k] < '0' || hi_p[k] > '9')
			return MU_EINVAL;
	memcpy(lo_s, item, llen);
	lo_s[llen] = '\0';
	memcpy(hi_s, hi_p, hlen);
	hi_s[hlen] = '\0';
	unsigned long long lo = strtoull(lo_s, NULL, 10), hi = strtoull(hi_s, NULL, 10);
	size_t width = item[0] == '0' && llen > 1 ? llen : 0;

	if (hi < lo || hi - lo >= 100000 || *count + (hi - lo) >= 100000)
		return MU_EINVAL;
	for (unsigned long long v = lo; v <= hi; v++) {
		if ((*count)++)
			mu_buf_addc(out, ',');
		mu_buf_add(out, prefix, plen);
		add_num(out, v, width);
		mu_buf_add(out, suffix, slen);
	}
	return 0;
}

int mu_hostlist_expand(const char *text, struct mu_buf *out)
{
	size_t count = 0;
	const char *p = text;

	mu_buf_adds(out, "");
	while (*p) {
		/* one element: up to a ',' outside brackets */
		const char *e = p, *open = NULL, *close = NULL;

		while (*e && *e != ',') {
			if (*e == '[') {
				if (open)
					return MU_EINVAL;
				open = e;
				close = strchr(e, ']');
				if (!close)
					return MU_EINVAL;
				e = close;
			} else if (*e == ']') {
				return MU_EINVAL;
			}
			e++;
		}
		if (e == p)
			return MU_EINVAL;
		if (!open) {
			if (count++)
				mu_buf_addc(out, ',');
			mu_buf_add(out, p, (size_t)(e - p));
		} else {
			const char *it = open + 1;

			if (it == close)
				return MU_EINVAL;
			while (it < close) {
				const char *c = memchr(it, ',', (size_t)(close - it));
				const char *end = c ? c : close;
				int ret = expand_item(p, (size_t)(open - p), it, (size_t)(end - it),
						      close + 1, (size_t)(e - close - 1), &count, out);

				if (ret)
					return ret;
				it = end + 1;
			}
		}
		p = *e ? e + 1 : e;
		if (*e && !*p)
			return MU_EINVAL; /* a trailing ',' */
	}
	return 0;
}

void mu_hostlist_tasks_per_node(const int *counts, size_t n, struct mu_buf *out)
{
	mu_buf_adds(out, "");
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;

		while (j < n && counts[j] == counts[i])
			j++;
		if (i)
			mu_buf_addc(out, ',');
		if (j - i > 1)
			mu_buf_addf(out, "%d(x%zu)", counts[i], j - i);
		else
			mu_buf_addf(out, "%d", counts[i]);
		i = j;
	}
}
