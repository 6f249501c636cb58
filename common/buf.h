/*
 * buf.h - a growable byte buffer for building text (JSON, Prometheus
 * metrics, SQL parameter arrays) without sprintf into fixed buffers.
 *
 * The buffer is always NUL-terminated after the first append. Allocation
 * failure aborts (alloc.h). Not thread-safe: one owner at a time.
 */
#ifndef MU_BUF_H
#define MU_BUF_H

#include <stddef.h>
#include <stdint.h>

struct mu_buf {
	char *p;    /* owned; NULL until the first append */
	size_t len; /* bytes used, NUL excluded */
	size_t cap;
};

#define MU_BUF_INIT { NULL, 0, 0 }

void mu_buf_init(struct mu_buf *b);
void mu_buf_release(struct mu_buf *b);       /* frees; b is reusable after */
void mu_buf_reset(struct mu_buf *b);         /* len = 0, keeps the memory */
char *mu_buf_detach(struct mu_buf *b);       /* new string (mu_free); b is reset to empty */
void mu_buf_reserve(struct mu_buf *b, size_t extra);
void mu_buf_add(struct mu_buf *b, const void *data, size_t len);
void mu_buf_adds(struct mu_buf *b, const char *s);
void mu_buf_addc(struct mu_buf *b, char c);
void mu_buf_addf(struct mu_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mu_buf_add_int(struct mu_buf *b, int64_t v);
/* Appends `s` (valid UTF-8, `len` bytes) as a JSON string literal, quotes included. */
void mu_buf_add_json_str(struct mu_buf *b, const char *s, size_t len);
/* Same for a NUL-terminated string; NULL appends `null`. */
void mu_buf_add_json_strz(struct mu_buf *b, const char *s);

#endif
