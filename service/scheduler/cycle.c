/* cycle.c - one leader cycle. See cycle.h. */
#include "cycle.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "sched.h"
#include "snapshot.h"
#include "store_plan.h"

double scheduler_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void scheduler_keep_init(struct scheduler_keep *k, long long rebuild_every_ms)
{
	memset(k, 0, sizeof(*k));
	sched_decisions_init(&k->dec);
	k->delta = plan_delta_new();
	k->db = store_sched_keep_new();
	k->rebuild_every_ms = rebuild_every_ms;
}

void scheduler_keep_release(struct scheduler_keep *k)
{
	sched_decisions_release(&k->dec);
	plan_delta_free(k->delta);
	store_sched_keep_free(k->db);
	memset(k, 0, sizeof(*k));
}

/* A new term, or the safety net: the kept snapshot and view start over. */
static void keep_term(struct scheduler_keep *k, int64_t epoch)
{
	double now = scheduler_now_ms();

	if (k->epoch != epoch || now - k->last_rebuild_ms >= (double)k->rebuild_every_ms) {
		plan_delta_reset(k->delta);
		store_sched_keep_reset(k->db);
		k->have_fingerprint = false; /* a new term (or the safety net) moves the plan too */
		k->epoch = epoch;
		k->last_rebuild_ms = now;
	}
}

/* A failed cycle: what it read may include its own rolled-back writes. */
static void keep_drop(struct scheduler_keep *k)
{
	if (!k)
		return;
	plan_delta_reset(k->delta);
	store_sched_keep_reset(k->db);
	k->have_fingerprint = false; /* the next cycle bumps: nothing here was committed */
}

/* The hint for this cycle's snapshot, or NULL where the core must rebuild. */
static const struct sched_delta *keep_hint(struct scheduler_keep *k, const struct sched_snapshot *s)
{
	k->cycles++;
	const struct sched_delta *d = plan_delta_next(k->delta, s);
	k->hinted += d != NULL;
	return d;
}

/*
 * Whether this cycle changes what a dry-run plan would answer, so that
 * the planning generation must move (service/plan): it wrote decisions,
 * its time-based work changed something, or the snapshot is not the one
 * the last committed cycle planned from (up to the clock, which the
 * plans' maximum age covers). Without kept state: always.
 */
static bool plan_moves(struct scheduler_keep *k, const struct sched_snapshot *s,
		       const struct store_sched_decisions *d, int started, int changed, size_t jobs_read)
{
	uint64_t fp;
	bool moved;

	if (!k)
		return true;
	if (started || d->npreempt || d->nfail_runs || d->nfail_jobs || d->nshrinks) {
		/* These writes change the next cycle's snapshot (a job becomes a
		 * run, a run stops or shrinks): it cannot be this one, so its
		 * fingerprint (a walk of every job, run and node) is not needed. */
		k->have_fingerprint = false;
		return true;
	}
	if ((s->delta && (s->delta->nnodes || s->delta->nadded || s->delta->nremoved)) || jobs_read) {
		/* The hint says nodes or runs differ from the last snapshot (the
		 * last committed cycle's: a failed one drops the kept state), or
		 * the refresh read job rows written since: the fingerprint would
		 * differ too (or, for a row written with no change that matters,
		 * the generation moves once more than needed, which is safe), so
		 * its walk is not needed. */
		k->have_fingerprint = false;
		return true;
	}
	fp = plan_snapshot_fingerprint(s);
	moved = started || changed || d->nstarts || d->npending || d->npreempt || d->nfail_runs || d->nfail_jobs ||
		d->nshrinks || !k->have_fingerprint || fp != k->fingerprint;
	k->fingerprint = fp;
	k->have_fingerprint = true;
	return moved;
}

int scheduler_cycle_run(PGconn *c, int64_t epoch, const struct scheduler_cycle_opts *o,
			struct store_sched_stats *st, bool *did_full, struct mu_error *err)
{
	struct store_sched_settings set;
	struct store_sched_snap db = { 0 };
	const struct store_sched_snap *dbp = &db;
	struct store_sched_keep_stats ks = { 0 };
	struct scheduler_snap snap = { 0 };
	struct sched_decisions local;
	struct sched_decisions *dec = o->keep ? &o->keep->dec : &local;
	struct scheduler_decisions out = { 0 };
	int down = 0, timeouts = 0, expired = 0, ended = 0, running = 0, started = 0, due = 0;
	double t0 = scheduler_now_ms(), t1, t2, t3, tb, th, tc, tl, ta, tn, tr;
	int ret;

	sched_decisions_init(&local);
	memset(st, 0, sizeof(*st));
	ret = store_sched_cycle_begin(c, epoch, err);
	if (ret)
		return ret;
	double tp[8];
	tp[0] = scheduler_now_ms();
	ret = store_sched_settings_load(c, &set, err);
	tp[1] = scheduler_now_ms();
	if (!ret && (o->time_work || !o->full))
		ret = store_sched_mark_down(c, set.heartbeat_timeout, &down, err);
	tp[2] = scheduler_now_ms();
	if (!ret && (o->time_work || !o->full))
		ret = store_sched_timeouts(c, &timeouts, err);
	tp[3] = scheduler_now_ms();
	if (!ret && (o->time_work || !o->full))
		ret = store_sched_expire_stops(c, o->stop_margin_s, &expired, err);
	tp[4] = scheduler_now_ms();
	if (!ret && (o->time_work || !o->full))
		ret = store_sched_finish_runs(c, set.half_life, &ended, err);
	tp[5] = scheduler_now_ms();
	if (!ret && (o->time_work || !o->full))
		ret = store_sched_sync_running(c, &running, err);
	tp[6] = scheduler_now_ms();
	if (!ret && (o->time_work || !o->full))
		ret = store_sched_begin_due(c, &due, err); /* --begin: a full cycle when one is due */
	tp[7] = scheduler_now_ms();
	if (ret)
		goto out_rollback;
	if (did_full)
		*did_full = false;
	if (!o->full && !(down || timeouts || expired || ended || running || due)) {
		/* A quiet tick: nothing to decide. Skipping the snapshot keeps an
		 * idle 10k-node cluster from reloading it every second. */
		ret = store_sched_cycle_commit(c, epoch, err);
		st->cycle_ms = scheduler_now_ms() - t0;
		goto out;
	}
	if (did_full)
		*did_full = true;

	t1 = scheduler_now_ms();
	if (o->keep) {
		keep_term(o->keep, epoch);
		ret = store_sched_keep_refresh(c, &set, o->keep->db, &dbp, &ks, err);
	} else {
		ret = store_sched_snap_load_settings(c, &set, &db, err);
		ks.whole = true;
	}
	if (ret)
		goto out_rollback;
	t2 = scheduler_now_ms();
	ret = scheduler_snap_build(dbp, &snap, err);
	if (ret)
		goto out_rollback;
	tb = scheduler_now_ms();
	if (o->keep)
		snap.core.delta = keep_hint(o->keep, &snap.core);
	th = scheduler_now_ms();
	if (sched_cycle(&snap.core, dec)) {
		ret = mu_error_set(err, MU_EINTERNAL, "", "policy core refused the snapshot: %s", dec->error);
		goto out_rollback;
	}
	tc = scheduler_now_ms();
	scheduler_decisions_from_core(&snap, dec, &out);
	if (out.dropped)
		mu_err("epoch=%" PRId64 " policy core granted %zu starts short of GPUs; not written", epoch,
		       out.dropped);
	t3 = scheduler_now_ms();
	ret = o->keep ? store_sched_keep_lock_pending(c, o->keep->db, &out.db, err) : 0;
	tl = scheduler_now_ms();
	if (!ret)
		ret = store_sched_apply(c, epoch, &out.db, &started, err);
	ta = scheduler_now_ms();
	if (!ret && o->keep)
		ret = store_sched_keep_note_pending(c, o->keep->db, &out.db, err);
	/* the plan dry-runs answer from (service/plan) is this one now */
	if (!ret && plan_moves(o->keep, &snap.core, &out.db, started, down + timeouts + expired + ended + running,
				  ks.whole ? 0 : ks.jobs))
		ret = store_plan_generation_bump(c, err);
	if (ret)
		goto out_rollback;
	tn = scheduler_now_ms();

	st->load_ms = t2 - t1;
	st->commit_ms = scheduler_now_ms() - t3;
	st->pending = (int)dbp->njobs - started;
	st->running = (int)dbp->nruns + started;
	st->started = started;
	st->preempted = (int)out.db.npreempt;
	st->ended = ended;
	st->cycle_ms = scheduler_now_ms() - t0;
	ret = store_sched_record_cycle(c, st, err);
	if (ret)
		goto out_rollback;
	tr = scheduler_now_ms();
	ret = store_sched_cycle_commit(c, epoch, err);
	st->cycle_ms = scheduler_now_ms() - t0;
	if (ret) {
		keep_drop(o->keep);
		goto out;
	}
	enum mu_log_level lv = started || ended || down || timeouts || expired || out.db.npreempt ||
					       out.db.nfail_jobs || out.db.nshrinks || st->cycle_ms > 250
				       ? MU_LOG_INFO
				       : MU_LOG_DEBUG;
	mu_log(lv, "epoch=%" PRId64 " cycle: started=%d ended=%d preempted=%zu node_fail=%zu shrunk=%zu"
			" timeouts=%d stop_expired=%d nodes_down=%d failed=%zu pending=%d running=%d"
			" reasons=%zu load_ms=%.1f core_ms=%.1f write_ms=%.1f total_ms=%.1f hint=%s"
			" load=%s changed_jobs=%zu changed_runs=%zu changed_nodes=%zu"
			" phases: pre=%.1f (settings %.1f down %.1f timeouts %.1f expire %.1f finish %.1f sync %.1f due %.1f) build=%.1f hint=%.1f sched=%.1f map=%.1f lock=%.1f apply=%.1f"
			" note+bump=%.1f record=%.1f commit=%.1f",
			epoch, started, ended, out.db.npreempt, out.db.nfail_runs, out.db.nshrinks, timeouts,
			expired, down, out.db.nfail_jobs,
			st->pending, st->running, out.db.npending, st->load_ms, t3 - t2, st->commit_ms, st->cycle_ms,
			snap.core.delta ? "yes" : "no", ks.whole ? (ks.why ? ks.why : "whole") : "changes", ks.jobs,
			ks.runs, ks.nodes, t1 - t0, tp[1] - tp[0], tp[2] - tp[1], tp[3] - tp[2], tp[4] - tp[3], tp[5] - tp[4],
			tp[6] - tp[5], tp[7] - tp[6], tb - t2, th - tb, tc - th, t3 - tc, tl - t3, ta - tl, tn - ta, tr - tn,
			st->cycle_ms - (tr - t0));
	goto out;
out_rollback:
	store_sched_cycle_rollback(c);
	keep_drop(o->keep);
out:
	scheduler_decisions_release(&out);
	sched_decisions_release(&local);
	scheduler_snap_release(&snap);
	store_sched_snap_release(&db);
	return ret;
}
