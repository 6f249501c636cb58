/*
 * fuzz_admit - libFuzzer driver for the admission checks (common/admit.c):
 * facts and a job built from the input's bytes. No crash, and the answer
 * keeps its invariants: 0 exactly when no problem is set; a problem has a
 * negative code, a column in range, the job's index, a dependency index
 * below ndeps and a message; a job that passed has a class in the facts and
 * a time limit within the class's and the tenant's maximum; the quota
 * refuses exactly when pending + adding passes the maximum.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct rd {
	const uint8_t *p;
	size_t n;
};

static unsigned byte(struct rd *r)
{
	if (!r->n)
		return 0;
	r->n--;
	return *r->p++;
}

static int64_t num(struct rd *r)
{
	int64_t v = 0;

	for (int i = 0; i < 3; i++)
		v = (v << 8) | byte(r);
	return (byte(r) & 0x80) ? -v : v;
}

static const char *const names[] = { "normal", "short", "long", "", "block", "rack", "row", "b\"x" };
static const char *const paths[] = { "root", "root/ml", "root/mlx", "root/ml/a", "root/web", "" };

static const char *pick(struct rd *r, const char *const *v, size_t n, bool null_ok)
{
	unsigned b = byte(r);

	if (null_ok && b % (n + 1) == n)
		return NULL;
	return v[b % n];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rd r = { data, size };
	struct admit_class cls[4];
	struct admit_facts f;
	struct admit_tenant t = { 0 };
	struct admit_job j = { 0 };
	struct admit_result res = { 0 };
	struct admit_problem pb;
	int64_t ids[8];
	const char *dpaths[8];
	bool has_t;
	int ret;

	f.nclasses = byte(&r) % 5;
	for (size_t i = 0; i < f.nclasses && i < 4; i++)
		cls[i] = (struct admit_class){ pick(&r, names, 8, false), num(&r), num(&r), byte(&r) & 1 };
	if (f.nclasses > 4)
		f.nclasses = 4;
	f.classes = cls;
	f.scope = pick(&r, paths, 6, true);
	f.levels = (byte(&r) & 1) ? "[\"block\", \"rack\"]" : NULL;
	f.spec_max = num(&r);
	has_t = byte(&r) & 1;
	t = (struct admit_tenant){ "t", pick(&r, paths, 6, true), byte(&r) & 1, num(&r), num(&r), num(&r) };
	j.priority_class = pick(&r, names, 8, true);
	j.time_limit = num(&r);
	j.topo_required = pick(&r, names, 8, true);
	j.topo_preferred = pick(&r, names, 8, true);
	j.command_len = (size_t)byte(&r) << (byte(&r) % 24);
	j.env_len = (size_t)byte(&r) << (byte(&r) % 24);
	j.workdir_len = (size_t)byte(&r) << (byte(&r) % 24);
	j.ndeps = byte(&r) % 9;
	for (size_t d = 0; d < j.ndeps; d++) {
		ids[d] = byte(&r) % 4;
		dpaths[d] = pick(&r, paths, 6, true);
	}
	j.dep_ids = ids;
	j.dep_paths = dpaths;
	j.self_id = byte(&r) % 4;

	if (byte(&r) & 1) {
		j.nodes = num(&r);
		j.min_nodes = num(&r);
		ret = admit_update(&f, has_t ? &t : NULL, &j, byte(&r) & 7, &res, &pb);
	} else {
		j.self_id = 0;
		ret = admit_job(&f, has_t ? &t : NULL, &j, 5, &res, &pb);
		if (!ret && (!has_t || !admit_scope_sees(f.scope, t.path)))
			abort();
		if (ret && pb.job != 5)
			abort();
	}
	if ((ret == 0) == pb.set)
		abort();
	if (ret) {
		if (ret >= 0 || pb.code != ret || pb.col >= ADMIT_NCOLS || !pb.msg[0] ||
		    !memchr(pb.msg, '\0', sizeof(pb.msg)))
			abort();
		if (pb.col == ADMIT_COL_DEPENDENCY && pb.sub >= j.ndeps)
			abort();
	} else {
		const struct admit_class *pc;

		if (res.class_idx >= f.nclasses)
			abort();
		pc = &cls[res.class_idx];
		if (pc->max_time > 0 && res.time_limit > pc->max_time)
			abort();
		if (has_t && t.max_time > 0 && res.time_limit > t.max_time)
			abort();
	}
	if (has_t) {
		int64_t add = num(&r);

		ret = admit_quota(&t, add, &pb);
		if ((ret != 0) != (t.has_max_pending && t.pending + add > t.max_pending))
			abort();
	}
	return 0;
}
