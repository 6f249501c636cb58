/* fairshare.c - see fairshare.h. */
#include "fairshare.h"

#include <string.h>

int plan_fairshare(const struct store_sched_fs_tenant *t, size_t nt,
		   const struct store_sched_fs_user *u, size_t nu, struct mu_arena *a,
		   struct fairtree_assoc **out, struct mu_error *err)
{
	size_t n = nt + nu;
	struct fairtree_assoc *as;

	*out = NULL;
	if (!nt)
		return mu_error_set(err, MU_EINVAL, "", "no root tenant");
	as = mu_arena_alloc(a, sizeof(*as) * n);
	memset(as, 0, sizeof(*as) * n);
	for (size_t i = 0; i < nt; i++) {
		as[i].parent = -1;
		for (size_t k = 0; k < nt && i; k++)
			if (t[k].id == t[i].parent_id)
				as[i].parent = (int)k;
		as[i].shares = t[i].shares;
		as[i].name = t[i].name;
	}
	for (size_t i = 0; i < nu; i++) {
		struct fairtree_assoc *x = &as[nt + i];

		for (size_t k = 0; k < nt; k++)
			if (t[k].id == u[i].tenant_id)
				x->parent = (int)k;
		x->is_user = true;
		x->shares = 1;
		x->usage = u[i].decayed;
		x->name = u[i].user;
	}
	if (fairtree_compute(as, n) < 0)
		return mu_error_set(err, MU_EINVAL, "", "fair share: malformed tenant tree");
	*out = as;
	return 0;
}
