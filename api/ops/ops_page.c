/*
 * ops_page.c - page sizes (ops_page.h).
 */
#include "ops_page.h"

int ops_page_size(int32_t size, int *limit, struct mu_error *err)
{
	*limit = size ? (int)size : OPS_PAGE_DEFAULT;
	if (*limit < 1 || *limit > OPS_PAGE_MAX)
		return mu_error_set(err, MU_ERANGE, "page_size", "must be 1..%d", OPS_PAGE_MAX);
	return 0;
}
