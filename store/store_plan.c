/* store_plan.c - the planning generation. See store_plan.h. */
#include "store_plan.h"

int store_plan_generation(PGconn *c, int64_t *gen, struct mu_error *err)
{
	return store_db_query_int64(c, "SELECT generation FROM plan_generation WHERE id = 1", 0, NULL, gen, err);
}

int store_plan_generation_bump(PGconn *c, struct mu_error *err)
{
	return store_db_exec(c, "UPDATE plan_generation SET generation = generation + 1, bumped_at = now() WHERE id = 1",
			     0, NULL, NULL, err);
}
