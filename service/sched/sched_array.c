/*
 * sched_array.c - job arrays' throttle (Slurm's --array=...%K): never more
 * than K live runs of one array. The live runs of each array are counted
 * once per cycle, on first use, into a table sorted by array id; every start
 * the cycle decides adds one, so K holds within the cycle too.
 */
#include <stdlib.h>

#include "sched_int.h"

struct sched__arr {
	int64_t id;
	int n;
};

static int cmp_arr(const void *a, const void *b)
{
	const struct sched__arr *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static void build(struct cyc *c)
{
	const struct sched_snapshot *s = c->s;
	size_t n = 0;

	c->arr_built = true;
	for (size_t i = 0; i < s->nruns; i++)
		n += s->runs[i].array_job_id != 0;
	for (size_t i = 0; i < s->njobs; i++)
		n += s->jobs[i].array_throttle > 0; /* room for arrays with no live run yet */
	c->arr = sched__xcalloc(n + 1, sizeof(*c->arr));
	c->narr = 0;
	for (size_t i = 0; i < s->nruns; i++)
		if (s->runs[i].array_job_id)
			c->arr[c->narr++] = (struct sched__arr){ s->runs[i].array_job_id, 1 };
	for (size_t i = 0; i < s->njobs; i++)
		if (s->jobs[i].array_throttle > 0)
			c->arr[c->narr++] = (struct sched__arr){ s->jobs[i].array_job_id, 0 };
	qsort(c->arr, c->narr, sizeof(*c->arr), cmp_arr);
	/* merge equal ids, summing their counts */
	size_t w = 0;
	for (size_t i = 0; i < c->narr; i++) {
		if (w && c->arr[w - 1].id == c->arr[i].id)
			c->arr[w - 1].n += c->arr[i].n;
		else
			c->arr[w++] = c->arr[i];
	}
	c->narr = w;
}

static struct sched__arr *find(struct cyc *c, int64_t id)
{
	struct sched__arr key = { id, 0 };

	if (!c->arr_built)
		build(c);
	return bsearch(&key, c->arr, c->narr, sizeof(*c->arr), cmp_arr);
}

bool sched__array_admit(struct cyc *c, const struct sched_job *j, int *running)
{
	struct sched__arr *a = find(c, j->array_job_id);

	*running = a ? a->n : 0;
	return *running < j->array_throttle;
}

void sched__array_started(struct cyc *c, const struct sched_job *j)
{
	struct sched__arr *a = find(c, j->array_job_id);

	if (a)
		a->n++;
}

void sched__array_free(struct cyc *c)
{
	free(c->arr);
	c->arr = NULL;
	c->narr = 0;
	c->arr_built = false;
}
