/*
 * ops_page.c - page sizes (ops_page.h).
 */
#include "ops_page.h"

#include "codec_admin.h"

int ops_page_size(int32_t size, int *limit, struct mu_error *err)
{
	return codec_limit_range(size ? size : OPS_PAGE_DEFAULT, "page_size", limit, err);
}
