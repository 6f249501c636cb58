/* common/admit.c: the admission checks, their order, their (job, column)
 * answers, the time-limit defaults and caps, the quota. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "admit.h"
#include "error.h"

static const struct admit_class classes[] = {
	{ "normal", 3600, 0, true },
	{ "short", 300, 600, false },
};

static struct admit_facts facts(const char *scope)
{
	return (struct admit_facts){ scope, classes, 2, "[\"block\", \"rack\"]", 1000 };
}

static struct admit_tenant tenant(const char *path)
{
	return (struct admit_tenant){ .name = "ml", .path = path };
}

static struct admit_job job(void)
{
	return (struct admit_job){ .command_len = 8 };
}

/* Runs admit_job and checks the answer's code and column. */
static void expect(const struct admit_facts *f, const struct admit_tenant *t, const struct admit_job *j,
		   int code, enum admit_col col, size_t sub)
{
	struct admit_result res = { 0 };
	struct admit_problem pb;

	memset(&pb, 0x5a, sizeof(pb));
	assert_int_equal(admit_job(f, t, j, 3, &res, &pb), code);
	assert_int_equal(pb.set, code != 0);
	if (code) {
		assert_int_equal(pb.code, code);
		assert_int_equal(pb.col, col);
		assert_int_equal(pb.job, 3);
		if (col == ADMIT_COL_DEPENDENCY)
			assert_int_equal(pb.sub, sub);
		assert_true(pb.msg[0]);
	}
}

static void tenant_and_scope(void **state)
{
	struct admit_facts all = facts(NULL), ml = facts("root/ml");
	struct admit_tenant t = tenant("root/ml"), sib = tenant("root/mlx"), sub = tenant("root/ml/a");
	struct admit_job j = job();
	(void)state;
	expect(&all, NULL, &j, MU_ENOTFOUND, ADMIT_COL_TENANT, 0);
	expect(&all, &t, &j, 0, 0, 0);
	expect(&ml, &t, &j, 0, 0, 0);
	expect(&ml, &sub, &j, 0, 0, 0);
	/* a sibling whose name starts alike is outside the scope */
	expect(&ml, &sib, &j, MU_ENOTFOUND, ADMIT_COL_TENANT, 0);
	assert_true(admit_scope_sees(NULL, "root"));
	assert_false(admit_scope_sees("root/ml", NULL));
}

static void spec_size_names_the_largest(void **state)
{
	struct admit_facts f = facts(NULL);
	struct admit_tenant t = tenant("root/ml");
	struct admit_job j = job();
	(void)state;
	j.command_len = 400, j.env_len = 500, j.workdir_len = 100; /* exactly 1000 */
	expect(&f, &t, &j, 0, 0, 0);
	j.workdir_len = 101;
	expect(&f, &t, &j, MU_ERANGE, ADMIT_COL_ENV, 0);
	j.command_len = 600;
	expect(&f, &t, &j, MU_ERANGE, ADMIT_COL_COMMAND, 0);
	j.command_len = 1, j.env_len = 1, j.workdir_len = 999;
	expect(&f, &t, &j, MU_ERANGE, ADMIT_COL_WORKDIR, 0);
	f.spec_max = 0; /* unset: the default */
	expect(&f, &t, &j, 0, 0, 0);
	j.workdir_len = ADMIT_SPEC_MAX;
	expect(&f, &t, &j, MU_ERANGE, ADMIT_COL_WORKDIR, 0);
}

static void topology_levels(void **state)
{
	struct admit_facts f = facts(NULL);
	struct admit_tenant t = tenant("root/ml");
	struct admit_job j = job();
	(void)state;
	j.topo_required = "block", j.topo_preferred = "rack";
	expect(&f, &t, &j, 0, 0, 0);
	j.topo_required = "row";
	expect(&f, &t, &j, MU_EINVAL, ADMIT_COL_TOPO_REQUIRED, 0);
	j.topo_required = "", j.topo_preferred = "bloc"; /* a prefix is no level */
	expect(&f, &t, &j, MU_EINVAL, ADMIT_COL_TOPO_PREFERRED, 0);
	f.levels = NULL;
	j.topo_preferred = NULL;
	expect(&f, &t, &j, 0, 0, 0);
	j.topo_required = "block";
	expect(&f, &t, &j, MU_EINVAL, ADMIT_COL_TOPO_REQUIRED, 0);
}

static void class_and_time_limit(void **state)
{
	struct admit_facts f = facts(NULL);
	struct admit_tenant t = tenant("root/ml");
	struct admit_job j = job();
	struct admit_result res;
	struct admit_problem pb;
	(void)state;
	/* the default class, its default time */
	assert_int_equal(admit_job(&f, &t, &j, 0, &res, &pb), 0);
	assert_int_equal(res.class_idx, 0);
	assert_int_equal(res.time_limit, 3600);
	j.priority_class = "nope";
	expect(&f, &t, &j, MU_ENOTFOUND, ADMIT_COL_PRIORITY_CLASS, 0);
	j.priority_class = "short", j.time_limit = 601;
	expect(&f, &t, &j, MU_ERANGE, ADMIT_COL_TIME_LIMIT, 0);
	j.time_limit = 600;
	assert_int_equal(admit_job(&f, &t, &j, 0, &res, &pb), 0);
	assert_int_equal(res.class_idx, 1);
	assert_int_equal(res.time_limit, 600);
	/* the tenant's maximum, when smaller, caps the class's */
	t.max_time = 200;
	expect(&f, &t, &j, MU_ERANGE, ADMIT_COL_TIME_LIMIT, 0);
	j.time_limit = 0; /* the default (300) capped to the tenant's 200 */
	assert_int_equal(admit_job(&f, &t, &j, 0, &res, &pb), 0);
	assert_int_equal(res.time_limit, 200);
	j.priority_class = NULL, j.time_limit = 901, t.max_time = 900;
	expect(&f, &t, &j, MU_ERANGE, ADMIT_COL_TIME_LIMIT, 0);
	/* no default class */
	f.nclasses = 0;
	expect(&f, &t, &j, MU_ENOTFOUND, ADMIT_COL_PRIORITY_CLASS, 0);
}

static void dependencies_in_scope(void **state)
{
	struct admit_facts f = facts("root/web");
	struct admit_tenant t = tenant("root/web");
	struct admit_job j = job();
	const int64_t ids[] = { 10, 11, 12 };
	const char *paths[] = { "root/web", "root/ml", NULL };
	(void)state;
	j.dep_ids = ids, j.dep_paths = paths, j.ndeps = 1;
	expect(&f, &t, &j, 0, 0, 0);
	j.ndeps = 2; /* the second is another tenant's */
	expect(&f, &t, &j, MU_ENOTFOUND, ADMIT_COL_DEPENDENCY, 1);
	paths[1] = "root/web/a";
	j.ndeps = 3; /* the third is no job */
	expect(&f, &t, &j, MU_ENOTFOUND, ADMIT_COL_DEPENDENCY, 2);
}

/* The first failing check is the answer, in admit.h's order. */
static void order_of_checks(void **state)
{
	struct admit_facts f = facts(NULL);
	struct admit_tenant t = tenant("root/ml");
	struct admit_job j = job();
	const int64_t ids[] = { 10 };
	const char *paths[] = { NULL };
	(void)state;
	j.dep_ids = ids, j.dep_paths = paths, j.ndeps = 1;
	expect(&f, &t, &j, MU_ENOTFOUND, ADMIT_COL_DEPENDENCY, 0);
	j.priority_class = "short", j.time_limit = 9999;
	expect(&f, &t, &j, MU_ERANGE, ADMIT_COL_TIME_LIMIT, 0);
	j.priority_class = "nope";
	expect(&f, &t, &j, MU_ENOTFOUND, ADMIT_COL_PRIORITY_CLASS, 0);
	j.topo_preferred = "row";
	expect(&f, &t, &j, MU_EINVAL, ADMIT_COL_TOPO_PREFERRED, 0);
	j.topo_required = "row";
	expect(&f, &t, &j, MU_EINVAL, ADMIT_COL_TOPO_REQUIRED, 0);
	j.env_len = 5000;
	expect(&f, &t, &j, MU_ERANGE, ADMIT_COL_ENV, 0);
	expect(&f, NULL, &j, MU_ENOTFOUND, ADMIT_COL_TENANT, 0);
}

static void update_checks(void **state)
{
	struct admit_facts f = facts(NULL);
	struct admit_tenant t = tenant("root/ml");
	struct admit_job j = job();
	const int64_t ids[] = { 10, 7 };
	const char *paths[] = { NULL, "root/ml" };
	struct admit_result res;
	struct admit_problem pb;
	(void)state;
	/* min_nodes <= nodes first, named by what changed */
	j.priority_class = "nope", j.time_limit = 1, j.nodes = 2, j.min_nodes = 3;
	assert_int_equal(admit_update(&f, &t, &j, ADMIT_CHANGED_MIN_NODES, &res, &pb), MU_ERANGE);
	assert_int_equal(pb.col, ADMIT_COL_MIN_NODES);
	assert_int_equal(admit_update(&f, &t, &j, 0, &res, &pb), MU_ERANGE);
	assert_int_equal(pb.col, ADMIT_COL_NODES);
	j.min_nodes = 0; /* not elastic */
	assert_int_equal(admit_update(&f, &t, &j, 0, &res, &pb), MU_ENOTFOUND);
	j.priority_class = "short", j.time_limit = 900;
	/* a new class whose maximum the job's time limit is over: the class's problem */
	assert_int_equal(admit_update(&f, &t, &j, 0, &res, &pb), MU_ERANGE);
	assert_int_equal(pb.col, ADMIT_COL_PRIORITY_CLASS);
	assert_int_equal(admit_update(&f, &t, &j, ADMIT_CHANGED_TIME, &res, &pb), MU_ERANGE);
	assert_int_equal(pb.col, ADMIT_COL_TIME_LIMIT);
	j.time_limit = 600;
	assert_int_equal(admit_update(&f, &t, &j, ADMIT_CHANGED_TIME, &res, &pb), 0);
	assert_false(pb.set);
	j.priority_class = "nope";
	assert_int_equal(admit_update(&f, &t, &j, 0, &res, &pb), MU_ENOTFOUND);
	assert_int_equal(pb.col, ADMIT_COL_PRIORITY_CLASS);
	/* itself, even after a missing one; then the missing one */
	j.priority_class = "normal", j.self_id = 7, j.dep_ids = ids, j.dep_paths = paths, j.ndeps = 2;
	assert_int_equal(admit_update(&f, &t, &j, ADMIT_CHANGED_DEPS, &res, &pb), MU_EINVAL);
	assert_int_equal(pb.col, ADMIT_COL_DEPENDENCIES);
	assert_int_equal(admit_update(&f, &t, &j, 0, &res, &pb), 0);
	j.self_id = 8;
	assert_int_equal(admit_update(&f, &t, &j, ADMIT_CHANGED_DEPS, &res, &pb), MU_ENOTFOUND);
	assert_int_equal(pb.col, ADMIT_COL_DEPENDENCY);
	assert_int_equal(pb.sub, 0);
	/* a job that already depends on this one: a cycle, after the existence checks */
	{
		const bool cyc[] = { false, true };

		paths[0] = "root/ml";
		j.dep_cycles = cyc;
		assert_int_equal(admit_update(&f, &t, &j, ADMIT_CHANGED_DEPS, &res, &pb), MU_ECONFLICT);
		assert_int_equal(pb.col, ADMIT_COL_DEPENDENCY);
		assert_int_equal(pb.sub, 1);
		assert_non_null(strstr(pb.msg, "cycle"));
		paths[0] = NULL;
		assert_int_equal(admit_update(&f, &t, &j, ADMIT_CHANGED_DEPS, &res, &pb), MU_ENOTFOUND);
	}
}

static void quota(void **state)
{
	struct admit_tenant t = tenant("root/ml");
	struct admit_problem pb;
	(void)state;
	assert_int_equal(admit_quota(&t, 1000000, &pb), 0);
	t.has_max_pending = true, t.max_pending = 5, t.pending = 3;
	assert_int_equal(admit_quota(&t, 2, &pb), 0);
	assert_int_equal(admit_quota(&t, 3, &pb), MU_EQUOTA);
	assert_int_equal(pb.col, ADMIT_COL_NONE);
	assert_non_null(strstr(pb.msg, "at most 5 pending"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tenant_and_scope),     cmocka_unit_test(spec_size_names_the_largest),
		cmocka_unit_test(topology_levels),      cmocka_unit_test(class_and_time_limit),
		cmocka_unit_test(dependencies_in_scope), cmocka_unit_test(order_of_checks),
		cmocka_unit_test(update_checks),        cmocka_unit_test(quota),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
