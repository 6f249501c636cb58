/*
 * ops_page.h - page sizes, the one rule both APIs apply: 100 by default,
 * 1..1000 when given, with one message (codec_limit_range). REST's `limit`
 * text is decoded by codec_limit_decode (api/codec_admin.h, on every REST
 * list); gRPC's `page_size` here.
 * Cursors stay per list (each list's keyset has its own shape:
 * codec_cursor_check).
 */
#ifndef MU_OPS_PAGE_H
#define MU_OPS_PAGE_H

#include <stdint.h>

#include "codec_admin.h"
#include "error.h"

#define OPS_PAGE_DEFAULT CODEC_LIMIT_DEFAULT
#define OPS_PAGE_MAX CODEC_LIMIT_MAX

/* A gRPC page_size: 0 = OPS_PAGE_DEFAULT, else 1..OPS_PAGE_MAX
 * (MU_ERANGE naming "page_size"). */
int ops_page_size(int32_t size, int *limit, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
