/*
 * reconcile.c - desired runs vs actual runs, and the state file that lets
 * a restarted agent find its process groups again.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "alloc.h"
#include "log.h"

static int find_run(const struct ag_run *runs, int nruns, int64_t id)
{
	for (int i = 0; i < nruns; i++)
		if (runs[i].run_id == id)
			return i;
	return -1;
}

int ag_reconcile_plan(const struct ag_desired *want, int nwant, const struct ag_run *runs,
		      int nruns, bool drain, struct ag_action *out, int max)
{
	int n = 0;
#define EMIT(k, d, a)                                                                        \
	do {                                                                                 \
		if (n < max)                                                                 \
			out[n++] = (struct ag_action){ .kind = (k), .run_id = id, .desired = (d), \
						       .actual = (a) };                      \
	} while (0)
	for (int d = 0; d < nwant; d++) {
		int64_t id = want[d].run_id;
		int a = find_run(runs, nruns, id);
		if (a < 0) {
			if (want[d].stop)
				EMIT(AG_ACT_REPORT_EXIT, d, -1); /* never started: nothing to stop */
			else if (!drain)
				EMIT(AG_ACT_START, d, -1);
			continue;
		}
		const struct ag_run *r = &runs[a];
		if (r->state == AG_RUN_DONE) {
			/* never started twice; the server still lists it: tell it again */
			if (!r->told_exit)
				EMIT(AG_ACT_REPORT_EXIT, d, a);
			continue;
		}
		if (want[d].stop && r->state == AG_RUN_LIVE)
			EMIT(AG_ACT_STOP, d, a);
		else if (!want[d].stop && !r->told_running)
			EMIT(AG_ACT_REPORT_RUNNING, d, a);
	}
	for (int a = 0; a < nruns; a++) {
		int64_t id = runs[a].run_id;
		if (runs[a].state == AG_RUN_DONE)
			continue;
		bool listed = false;
		for (int d = 0; d < nwant && !listed; d++)
			listed = want[d].run_id == id;
		if (!listed)
			EMIT(AG_ACT_KILL, -1, a);
	}
#undef EMIT
	return n;
}

int ag_state_save(const char *state_dir, const struct ag_run *runs, int nruns)
{
	char path[4200], tmp[4300];
	int rc = MU_EIO;
	snprintf(path, sizeof(path), "%s/agent.state", state_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		goto out;
	fprintf(f, "muster-agent-state 2\n");
	for (int i = 0; i < nruns; i++) {
		const struct ag_run *r = &runs[i];
		/* run2 <id> <job> <state> <pgid> <start time> <nprocs> <code> <signal>
		 *      <deadline epoch> <cgroup|-> <end reason|-> <dir> */
		fprintf(f, "run2 %" PRId64 " %" PRId64 " %d %d %llu %d %d %d %" PRId64 " %s %s %s\n",
			r->run_id, r->job_id, (int)r->state, (int)r->pgid, r->start_time, r->nprocs,
			r->exit_code, r->exit_signal, r->deadline_epoch, r->cgroup[0] ? r->cgroup : "-",
			r->end_reason[0] ? r->end_reason : "-", r->dir);
	}
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		fclose(f);
		goto out;
	}
	if (fclose(f) != 0)
		goto out;
	if (rename(tmp, path) != 0)
		goto out;
	rc = 0;
out:
	if (rc) {
		mu_err("state=%s cannot write: %s", path, strerror(errno));
		unlink(tmp);
	}
	return rc;
}

int ag_state_load(const char *state_dir, const struct ag_cg *cg, struct ag_run **runs,
		  int *nruns)
{
	char path[4200], line[4400];
	size_t cap = 0;
	int n = 0;
	struct ag_run *v = NULL;
	snprintf(path, sizeof(path), "%s/agent.state", state_dir);
	*runs = NULL;
	*nruns = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : MU_EIO;
	while (fgets(line, sizeof(line), f)) {
		struct ag_run r;
		int st, pgid, consumed = 0;
		char cgname[512] = "-", why[32] = "-";
		memset(&r, 0, sizeof(r));
		if (!strncmp(line, "run2 ", 5)) {
			if (sscanf(line, "run2 %" SCNd64 " %" SCNd64 " %d %d %llu %d %d %d %" SCNd64
				   " %511s %31s %n", &r.run_id, &r.job_id, &st, &pgid, &r.start_time,
				   &r.nprocs, &r.exit_code, &r.exit_signal, &r.deadline_epoch, cgname, why,
				   &consumed) < 11 || consumed == 0)
				continue;
		} else if (sscanf(line, "run %" SCNd64 " %" SCNd64 " %d %d %llu %d %d %d %" SCNd64 " %n",
				  &r.run_id, &r.job_id, &st, &pgid, &r.start_time, &r.nprocs,
				  &r.exit_code, &r.exit_signal, &r.deadline_epoch, &consumed) < 9 ||
			   consumed == 0) {
			continue;
		}
		r.cg = cg;
		/* only a cgroup this agent recorded as its own, under its root */
		if (strcmp(cgname, "-") && cg && cg->mode != AG_CG_OFF &&
		    !strncmp(cgname, cg->root, strlen(cg->root)) && cgname[strlen(cg->root)] == '/' &&
		    !strstr(cgname, ".."))
			snprintf(r.cgroup, sizeof(r.cgroup), "%s", cgname);
		if (strcmp(why, "-"))
			snprintf(r.end_reason, sizeof(r.end_reason), "%s", why);
		snprintf(r.dir, sizeof(r.dir), "%s", line + consumed);
		r.dir[strcspn(r.dir, "\n")] = '\0';
		r.pgid = pgid;
		r.state = (enum ag_run_state)st;
		if (r.nprocs < 0 || r.nprocs > AG_MAX_PROCS)
			r.nprocs = 1;
		r.started = ag_now();
		r.ended = r.started; /* DONE ones are forgotten DONE_KEEP_S after this start */
		if (r.deadline_epoch > 0) /* the backstop holds across restarts */
			r.deadline = r.started + (double)(r.deadline_epoch - (int64_t)time(NULL));
		if (r.state != AG_RUN_DONE) {
			/* the group is ours when it exists and its leader (if still
			 * there) is the process we started, not a reused pid */
			unsigned long long leader = ag_proc_start_time(r.pgid);
			bool alive = r.pgid > 0 && kill(-r.pgid, 0) == 0 &&
				     (leader == 0 || leader == r.start_time);
			if (r.cgroup[0])
				alive = ag_cg_nprocs(cg, r.cgroup) > 0; /* the cgroup is ours */
			r.adopted = true;
			if (r.state == AG_RUN_STOPPING)
				r.kill_at = ag_now(); /* the grace ran out while we were away */
			if (!alive)
				r.pgid = 0; /* ag_run_poll finds it DONE and reads the exits */
			mu_info("run=%" PRId64 " %s pgid=%d cgroup=%s", r.run_id,
				alive ? "re-adopted" : "ended while the agent was away", pgid,
				r.cgroup[0] ? r.cgroup : "-");
		}
		v = mu_grow(v, &cap, (size_t)n + 1, sizeof(*v));
		v[n++] = r;
	}
	fclose(f);
	*runs = v;
	*nruns = n;
	return 0;
}
