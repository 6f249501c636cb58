/* buf.c - see buf.h. */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"

void mu_buf_init(struct mu_buf *b)
{
	b->p = NULL;
	b->len = b->cap = 0;
}

void mu_buf_release(struct mu_buf *b)
{
	mu_free(b->p);
	mu_buf_init(b);
}

void mu_buf_reset(struct mu_buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

char *mu_buf_detach(struct mu_buf *b)
{
	char *p = b->p ? b->p : mu_strdup("");

	mu_buf_init(b);
	return p;
}

void mu_buf_reserve(struct mu_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;

	if (need <= b->cap)
		return;
	if (need < 64)
		need = 64;
	b->p = mu_grow(b->p, &b->cap, need, 1);
}

void mu_buf_add(struct mu_buf *b, const void *data, size_t len)
{
	mu_buf_reserve(b, len);
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
}

void mu_buf_adds(struct mu_buf *b, const char *s)
{
	mu_buf_add(b, s, strlen(s));
}

void mu_buf_addc(struct mu_buf *b, char c)
{
	mu_buf_reserve(b, 1);
	b->p[b->len++] = c;
	b->p[b->len] = '\0';
}

void mu_buf_addf(struct mu_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	mu_buf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* Without snprintf: a 10,000-job batch writes ~20 integers per job. */
void mu_buf_add_int(struct mu_buf *b, int64_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	mu_buf_add(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

void mu_buf_add_json_str(struct mu_buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t start = 0;

	mu_buf_reserve(b, len + 2);
	mu_buf_addc(b, '"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[6];
		size_t n = 0;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		mu_buf_add(b, s + start, i - start);
		start = i + 1;
		esc[n++] = '\\';
		switch (c) {
		case '"': esc[n++] = '"'; break;
		case '\\': esc[n++] = '\\'; break;
		case '\n': esc[n++] = 'n'; break;
		case '\r': esc[n++] = 'r'; break;
		case '\t': esc[n++] = 't'; break;
		case '\b': esc[n++] = 'b'; break;
		case '\f': esc[n++] = 'f'; break;
		default:
			esc[n++] = 'u';
			esc[n++] = '0';
			esc[n++] = '0';
			esc[n++] = hex[c >> 4];
			esc[n++] = hex[c & 15];
		}
		mu_buf_add(b, esc, n);
	}
	mu_buf_add(b, s + start, len - start);
	mu_buf_addc(b, '"');
}

void mu_buf_add_json_strz(struct mu_buf *b, const char *s)
{
	if (!s)
		mu_buf_add(b, "null", 4);
	else
		mu_buf_add_json_str(b, s, strlen(s));
}
