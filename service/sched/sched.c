/* sched.c - placeholder until the policy core lands; see sched.h. */
#include "sched.h"

#include <stdlib.h>
#include <string.h>

static const char *const reason_names[] = {
#define SCHED__REASON_NAME(name, str) str,
	SCHED_REASONS(SCHED__REASON_NAME)
#undef SCHED__REASON_NAME
};

const char *sched_reason_name(enum sched_reason r)
{
	if ((unsigned)r >= SCHED_REASON_COUNT)
		return "Unknown";
	return reason_names[r];
}

void sched_decisions_init(struct sched_decisions *d)
{
	memset(d, 0, sizeof(*d));
}

void sched_decisions_release(struct sched_decisions *d)
{
	free(d->verdicts);
	memset(d, 0, sizeof(*d));
}

int sched_cycle(const struct sched_snapshot *s, struct sched_decisions *out)
{
	sched_decisions_release(out);
	out->verdicts = calloc(s->njobs ? s->njobs : 1, sizeof(*out->verdicts));
	if (!out->verdicts)
		abort();
	out->nverdicts = s->njobs;
	for (size_t i = 0; i < s->njobs; i++) {
		out->verdicts[i].reason = SCHED_REASON_PRIORITY;
		out->verdicts[i].planned_start = SCHED_NEVER;
	}
	return 0;
}
