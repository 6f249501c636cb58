/* store_sched.c - leader election, the cycle transaction and the
 * time-based / failure work of the scheduler. See store_sched.h. */
#include "store_sched.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "log.h"
#include "store_agent.h"

/* pg_locks shows a bigint advisory key as classid = high half, objid = low half, objsubid 1. */
#define LOCK_CLASSID_SQL "(" "1836413812" ")"
#define LOCK_OBJID_SQL "(" "1701969952" ")"
#define LOCK_HELD_BY(pidexpr)                                                           \
	"EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"       \
	" AND classid = " LOCK_CLASSID_SQL "::oid AND objid = " LOCK_OBJID_SQL "::oid" \
	" AND objsubid = 1 AND pid = " pidexpr ")"

_Static_assert(STORE_SCHED_LOCK_KEY == ((INT64_C(1836413812) << 32) | INT64_C(1701969952)),
	       "lock key halves out of date");

int store_sched_listen(PGconn *c, struct mu_error *err)
{
	return store_db_exec_simple(c, "LISTEN muster_sched", err);
}

static void count_notifies(PGconn *c, int *n, int *n_submit)
{
	PGnotify *nt;

	while ((nt = PQnotifies(c))) {
		(*n)++;
		if (n_submit && nt->extra && !strncmp(nt->extra, "submit:", 7))
			(*n_submit)++;
		PQfreemem(nt);
	}
}

int store_sched_wait(PGconn *c, int timeout_ms, int *n, int *n_submit)
{
	struct pollfd pfd = { .fd = PQsocket(c), .events = POLLIN };

	if (pfd.fd < 0)
		return MU_EUNAVAIL;
	/* Notifications may already sit in libpq's buffer (they arrive with
	 * any query's answer): look there before sleeping. */
	count_notifies(c, n, n_submit);
	if (*n)
		timeout_ms = 0;
	if (poll(&pfd, 1, timeout_ms) < 0 && errno != EINTR)
		return MU_EUNAVAIL;
	if (pfd.revents && !PQconsumeInput(c))
		return MU_EUNAVAIL;
	count_notifies(c, n, n_submit);
	return PQstatus(c) == CONNECTION_OK ? 0 : MU_EUNAVAIL;
}

int store_sched_try_lead(PGconn *c, const char *holder, bool *leader, int64_t *epoch,
			 struct mu_error *err)
{
	char key[32];
	const char *p[1] = { key };
	char got[8];
	int ret;

	*leader = false;
	snprintf(key, sizeof(key), "%" PRId64, STORE_SCHED_LOCK_KEY);
	ret = store_db_query_text(c, "SELECT pg_try_advisory_lock($1::bigint)", 1, p, got, sizeof(got), err);
	if (ret || got[0] != 't')
		return ret;
	p[0] = holder;
	ret = store_db_query_int64(c,
				   "UPDATE scheduler_lease SET epoch = epoch + 1, holder = $1,"
				   " backend_pid = pg_backend_pid(), acquired_at = clock_timestamp(),"
				   " renewed_at = clock_timestamp() WHERE id = 1 RETURNING epoch",
				   1, p, epoch, err);
	if (ret) {
		/* Never keep the lock without a lease that names us. */
		PQclear(PQexec(c, "SELECT pg_advisory_unlock_all()"));
		return ret;
	}
	*leader = true;
	return 0;
}

int store_sched_lease_get(PGconn *c, struct store_sched_lease *out, struct mu_error *err)
{
	PGresult *r = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = store_db_exec(c,
			    "SELECT l.epoch, l.holder, coalesce(l.backend_pid, 0),"
			    " coalesce(extract(epoch FROM clock_timestamp() - l.renewed_at), -1),"
			    " coalesce((SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
			    "   AND classid = " LOCK_CLASSID_SQL "::oid AND objid = " LOCK_OBJID_SQL "::oid"
			    "   AND objsubid = 1 LIMIT 1), 0),"
			    " coalesce((SELECT (value #>> '{}')::numeric::int FROM settings"
			    "   WHERE key = 'lease_timeout'), 3)"
			    " FROM scheduler_lease l WHERE l.id = 1",
			    0, NULL, &r, err);
	if (ret)
		goto out;
	if (store_db_nrows(r) != 1) {
		ret = mu_error_set(err, MU_EINTERNAL, "", "scheduler_lease row missing (migration 020?)");
		goto out;
	}
	out->epoch = store_db_get_int64(r, 0, 0);
	snprintf(out->holder, sizeof(out->holder), "%s", store_db_get(r, 0, 1));
	out->lease_pid = (int)store_db_get_int64(r, 0, 2);
	out->age_s = strtod(store_db_get(r, 0, 3), NULL);
	out->lock_pid = (int)store_db_get_int64(r, 0, 4);
	out->lease_timeout = (int)store_db_get_int64(r, 0, 5);
	if (out->lease_timeout <= 0)
		out->lease_timeout = 3;
out:
	store_db_clear(r);
	return ret;
}

int store_sched_terminate(PGconn *c, int pid, bool *done, struct mu_error *err)
{
	char pids[16];
	const char *p[1] = { pids };
	char got[8];
	int ret;

	*done = false;
	snprintf(pids, sizeof(pids), "%d", pid);
	/* Only the session that holds the leader lock, never anything else. */
	ret = store_db_query_text(c,
				  "SELECT coalesce(bool_or(pg_terminate_backend(pid)), false) FROM pg_locks"
				  " WHERE locktype = 'advisory' AND granted AND classid = " LOCK_CLASSID_SQL
				  "::oid AND objid = " LOCK_OBJID_SQL "::oid AND objsubid = 1 AND pid = $1::int",
				  1, p, got, sizeof(got), err);
	if (!ret)
		*done = got[0] == 't';
	return ret;
}

int store_sched_renew(PGconn *c, int64_t epoch, struct mu_error *err)
{
	return store_sched_renew_for(c, epoch, PQbackendPID(c), err);
}

int store_sched_renew_for(PGconn *c, int64_t epoch, int leader_pid, struct mu_error *err)
{
	char ep[32], pid[16];
	const char *p[2] = { ep, pid };
	PGresult *r = NULL;
	int ret;

	snprintf(ep, sizeof(ep), "%" PRId64, epoch);
	snprintf(pid, sizeof(pid), "%d", leader_pid);
	ret = store_db_exec(c,
			    "UPDATE scheduler_lease SET renewed_at = clock_timestamp()"
			    " WHERE id = 1 AND epoch = $1::bigint AND backend_pid = $2::int"
			    " AND " LOCK_HELD_BY("$2::int") " RETURNING 1",
			    2, p, &r, err);
	if (!ret && store_db_nrows(r) != 1)
		ret = mu_error_set(err, MU_ENOTLEADER, "", "epoch %" PRId64 " is no longer the leader's", epoch);
	store_db_clear(r);
	return ret;
}

int store_sched_backend_pid(PGconn *c)
{
	return PQbackendPID(c);
}

/* The fence: this session still holds the leader lock and the lease still
 * names our epoch and session. Nobody can bump the epoch without the lock,
 * and the lock lives exactly as long as this session, so no row lock is
 * needed (and none is taken: the lease heartbeat must not wait for a long
 * cycle). */
static int fence(PGconn *c, int64_t epoch, struct mu_error *err)
{
	char ep[32];
	const char *p[1] = { ep };
	PGresult *r = NULL;
	int ret;

	snprintf(ep, sizeof(ep), "%" PRId64, epoch);
	ret = store_db_exec(c,
			    "SELECT 1 FROM scheduler_lease WHERE id = 1 AND epoch = $1::bigint"
			    " AND backend_pid = pg_backend_pid() AND " LOCK_HELD_BY("pg_backend_pid()"),
			    1, p, &r, err);
	if (!ret && store_db_nrows(r) != 1)
		ret = mu_error_set(err, MU_ENOTLEADER, "", "epoch %" PRId64 " is no longer the leader's", epoch);
	store_db_clear(r);
	return ret;
}

int store_sched_cycle_begin(PGconn *c, int64_t epoch, struct mu_error *err)
{
	int ret = store_db_exec_simple(c, "BEGIN", err);
	if (ret)
		return ret;
	ret = fence(c, epoch, err);
	if (ret)
		store_sched_cycle_rollback(c);
	return ret;
}

int store_sched_cycle_commit(PGconn *c, int64_t epoch, struct mu_error *err)
{
	PGresult *r;
	int ret = fence(c, epoch, err);

	if (ret) {
		store_sched_cycle_rollback(c);
		return ret;
	}
	r = PQexec(c, "COMMIT");
	ret = store_db_check(c, r, err);

	if (!ret && strcmp(PQcmdStatus(r), "COMMIT") != 0)
		ret = mu_error_set(err, MU_EINTERNAL, "", "cycle transaction was rolled back at COMMIT");
	PQclear(r);
	return ret;
}

void store_sched_cycle_rollback(PGconn *c)
{
	if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE)
		PQclear(PQexec(c, "ROLLBACK"));
}

/* ["block", "rack"] -> levels; names are plain words, no escapes. */
static void parse_levels(const char *v, struct store_sched_settings *s)
{
	s->nlevels = 0;
	while ((v = strchr(v, '"')) && s->nlevels < 4) {
		const char *e = strchr(++v, '"');
		if (!e)
			break;
		snprintf(s->levels[s->nlevels++], sizeof(s->levels[0]), "%.*s", (int)(e - v), v);
		v = e + 1;
	}
}

int store_sched_settings_load(PGconn *c, struct store_sched_settings *s, struct mu_error *err)
{
	PGresult *r = NULL;
	int ret;

	*s = (struct store_sched_settings){ .heartbeat_timeout = 30, .half_life = 604800,
					    .reservation_depth = 1, .max_age = 604800,
					    .weight_fairshare = 10000, .weight_age = 1000,
					    .weight_size = 100, .weight_xfactor = 100,
					    .starve_after = 172800, .lease_timeout = 3 };
	parse_levels("[\"block\", \"rack\"]", s);
	ret = store_db_exec(c,
			    "SELECT key, value #>> '{}', extract(epoch FROM now())::bigint FROM settings"
			    " UNION ALL SELECT '', '', extract(epoch FROM now())::bigint",
			    0, NULL, &r, err);
	if (ret)
		goto out;
	for (int i = 0; i < store_db_nrows(r); i++) {
		const char *k = store_db_get(r, i, 0), *v = store_db_get(r, i, 1);
		s->now = store_db_get_int64(r, i, 2);
		if (!strcmp(k, "heartbeat_timeout"))
			s->heartbeat_timeout = atoi(v);
		else if (!strcmp(k, "half_life"))
			s->half_life = atoi(v);
		else if (!strcmp(k, "reservation_depth"))
			s->reservation_depth = atoi(v);
		else if (!strcmp(k, "max_age"))
			s->max_age = atoi(v);
		else if (!strcmp(k, "weight_fairshare"))
			s->weight_fairshare = strtod(v, NULL);
		else if (!strcmp(k, "weight_age"))
			s->weight_age = strtod(v, NULL);
		else if (!strcmp(k, "weight_size"))
			s->weight_size = strtod(v, NULL);
		else if (!strcmp(k, "weight_xfactor"))
			s->weight_xfactor = strtod(v, NULL);
		else if (!strcmp(k, "starve_after"))
			s->starve_after = strtoll(v, NULL, 10);
		else if (!strcmp(k, "predict_runtimes"))
			s->predict_runtimes = !strcmp(v, "true");
		else if (!strcmp(k, "lease_timeout"))
			s->lease_timeout = atoi(v);
		else if (!strcmp(k, "topology_levels"))
			parse_levels(v, s);
	}
out:
	store_db_clear(r);
	return ret;
}

/* Runs a statement whose first column of the first row is a count. */
static int exec_count(PGconn *c, const char *sql, int np, const char *const *p, int *n,
		      struct mu_error *err)
{
	int64_t v = 0;
	int ret = store_db_query_int64(c, sql, np, p, &v, err);

	if (!ret)
		*n += (int)v;
	return ret;
}

/* Ordering a run stopped: the agents TERM, wait the grace period, KILL. */
#define STOP_RUNS_SQL(where, reason)                                                              \
	"WITH r AS (UPDATE runs SET state = 'STOPPING', stop_reason = '" reason "',"              \
	"   stop_requested_at = now() WHERE live AND state IN ('STARTING', 'RUNNING')"            \
	"   AND ended_at IS NULL AND " where " RETURNING id, job_id),"                               \
	" ev AS (INSERT INTO events (kind, tenant_id, job_id, run_id, reason)"                    \
	"   SELECT 'run.stop_requested', j.tenant_id, r.job_id, r.id, '" reason "'"                \
	"   FROM r JOIN jobs j ON j.id = r.job_id),"                                                  \
	" nt AS (SELECT pg_notify('muster_agents', n.name) FROM nodes n WHERE n.id IN"            \
	"   (SELECT a.node_id FROM run_allocations a WHERE a.run_id IN (SELECT id FROM r)))"      \
	" SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM nt)"

int store_sched_mark_down(PGconn *c, int heartbeat_timeout, int *n, struct mu_error *err)
{
	char hb[16], gap[16];
	const char *p[2] = { hb, gap };
	int ret;

	snprintf(hb, sizeof(hb), "%d", heartbeat_timeout > 0 ? heartbeat_timeout : 30);
	snprintf(gap, sizeof(gap), "%d", STORE_AGENT_CP_GAP_S);
	/* A node never heard from (last_heartbeat NULL) is not timed out:
	 * registration alone promises nothing. Nor is a node silent while the
	 * control plane was: muster-api must have reached the database within
	 * the last STORE_AGENT_CP_GAP_S seconds and without a gap for the whole
	 * timeout (control_plane, store_agent_cp_tick). With no row at all (no
	 * muster-api ever ran) heartbeats come from elsewhere: time them out. */
	ret = exec_count(c,
			 "WITH cp AS (SELECT count(*) = 0 OR bool_and(heard_at >= now() - make_interval("
			 "     secs => $2::int) AND heard_since <= now() - make_interval(secs => $1::int)) AS heard"
			 "   FROM control_plane),"
			 " d AS (UPDATE nodes SET up = false, updated_at = now()"
			 "   WHERE up AND last_heartbeat IS NOT NULL"
			 "   AND last_heartbeat < now() - make_interval(secs => $1::int)"
			 "   AND (SELECT heard FROM cp)"
			 "   RETURNING id, name, last_heartbeat),"
			 " ev AS (INSERT INTO events (kind, node_id, reason, data)"
			 "   SELECT 'node.down', id, 'heartbeat_timeout', jsonb_build_object('node', name,"
			 "   'last_heartbeat', last_heartbeat) FROM d)"
			 " SELECT count(*) FROM d",
			 2, p, n, err);
	if (ret)
		return ret;
	/* Every live run touching a DOWN node stops everywhere (the gang is
	 * useless without that member). Also catches nodes an admin marked down.
	 * Elastic runs are left to the policy core in this same cycle: it
	 * shrinks them when enough nodes remain, else stops them as here. */
	return exec_count(c,
			  STOP_RUNS_SQL("id IN (SELECT a.run_id FROM run_allocations a JOIN nodes x"
					" ON x.id = a.node_id WHERE a.live AND NOT x.up)"
					" AND NOT EXISTS (SELECT 1 FROM jobs ej WHERE ej.id = runs.job_id"
					" AND ej.min_nodes < runs.nodes)",
					"node_fail"),
			  0, NULL, n, err);
}

int store_sched_begin_due(PGconn *c, int *n, struct mu_error *err)
{
	return exec_count(c,
			  "WITH j AS (UPDATE jobs SET pending_reason = 'Priority', pending_message = ''"
			  "   WHERE state = 'PENDING' AND pending_reason = 'BeginTime' AND NOT held"
			  "   AND begin_at <= now() RETURNING id)"
			  " SELECT count(*) FROM j",
			  0, NULL, n, err);
}

int store_sched_sync_running(PGconn *c, int *n, struct mu_error *err)
{
	return exec_count(c,
			  "WITH j AS (UPDATE jobs SET state = 'RUNNING', updated_at = now()"
			  "   FROM runs r WHERE r.live AND r.state = 'RUNNING' AND r.job_id = jobs.id"
			  "   AND jobs.state = 'STARTING' RETURNING jobs.id, jobs.tenant_id, r.id AS run_id),"
			  " ev AS (INSERT INTO events (kind, tenant_id, job_id, run_id, reason)"
			  "   SELECT 'job.running', tenant_id, id, run_id, '' FROM j)"
			  " SELECT count(*) FROM j",
			  0, NULL, n, err);
}

int store_sched_timeouts(PGconn *c, int *n, struct mu_error *err)
{
	return exec_count(c,
			  STOP_RUNS_SQL("muster_run_deadline(started_at, created_at, time_limit)"
					" <= date_part('epoch', now())", /* migration 211's index */
					"timeout"),
			  0, NULL, n, err);
}

int store_sched_expire_stops(PGconn *c, int margin_s, int *n, struct mu_error *err)
{
	char m[16];
	const char *p[1] = { m };

	snprintf(m, sizeof(m), "%d", margin_s >= 0 ? margin_s : 0);
	/* No agent confirmed the stop within grace + margin: the scheduler ends
	 * the run itself so its GPUs and its job move on. */
	return exec_count(c,
			  "WITH r AS (UPDATE runs SET ended_at = now() WHERE live AND state = 'STOPPING'"
			  "   AND ended_at IS NULL AND stop_requested_at"
			  "   + make_interval(secs => grace_period + $1::int) <= now() RETURNING id, job_id),"
			  " ev AS (INSERT INTO events (kind, tenant_id, job_id, run_id, reason)"
			  "   SELECT 'run.stop_expired', j.tenant_id, r.job_id, r.id, 'no agent confirmed the stop'"
			  "   FROM r JOIN jobs j ON j.id = r.job_id)"
			  " SELECT count(*) FROM r",
			  1, p, n, err);
}

int store_sched_finish_runs(PGconn *c, int half_life, int *n, struct mu_error *err)
{
	char hl[16];
	const char *p[1] = { hl };

	snprintf(hl, sizeof(hl), "%d", half_life);
	/* One statement: every data-modifying CTE runs against the same
	 * snapshot, and none of them touches rows another one modifies. */
	return exec_count(
		c,
		"WITH e AS (UPDATE runs r SET live = false, state = CASE"
		"     WHEN r.stop_reason = 'cancel' THEN 'CANCELLED'"
		"     WHEN r.stop_reason = 'timeout' THEN 'TIMEOUT'"
		"     WHEN r.stop_reason = 'preempt' THEN 'PREEMPTED'"
		"     WHEN r.stop_reason = 'node_fail' THEN 'NODE_FAIL'"
		"     WHEN r.stop_reason = 'requeue' THEN 'REQUEUED'" /* POST /v1/jobs/{id}/requeue */
		"     WHEN r.state IN ('COMPLETED', 'FAILED', 'TIMEOUT') THEN r.state" /* TIMEOUT: the agent's own limit */
		"     WHEN coalesce(r.exit_code, 0) = 0 AND r.exit_signal IS NULL THEN 'COMPLETED'"
		"     ELSE 'FAILED' END"
		"   WHERE r.live AND r.ended_at IS NOT NULL"
		"   RETURNING r.id, r.job_id, r.state, r.end_reason, r.nodes * r.gpus_per_node AS gpus,"
		"     coalesce(r.started_at, r.created_at) AS t0, r.started_at IS NOT NULL AS began, r.ended_at,"
		"     r.exit_code, r.shrunk_gpu_seconds AS shrunk),"
		" a AS (UPDATE run_allocations SET live = false WHERE live AND run_id IN (SELECT id FROM e)"
		"   RETURNING node_id),"
		" nt AS (SELECT pg_notify('muster_agents', x.name) FROM nodes x"
		"   WHERE x.id IN (SELECT node_id FROM a)),"
		" u AS (INSERT INTO usage_records (run_id, job_id, tenant_id, user_name, gpus, started_at,"
		"     ended_at, gpu_seconds)"
		"   SELECT e.id, e.job_id, j.tenant_id, j.user_name, e.gpus, e.t0, greatest(e.ended_at, e.t0),"
		"     round(e.gpus * greatest(0, extract(epoch FROM e.ended_at - e.t0)))::bigint + e.shrunk"
		"   FROM e JOIN jobs j ON j.id = e.job_id"
		"   RETURNING tenant_id, user_name, gpu_seconds),"
		" rt AS (INSERT INTO user_runtimes AS ur (tenant_id, user_name, recent, updated_at)"
		"   SELECT j.tenant_id, j.user_name, (array_agg(greatest(0, round(extract(epoch FROM"
		"     e.ended_at - e.t0)))::int ORDER BY e.ended_at DESC, e.id DESC))[1:2], now()"
		"   FROM e JOIN jobs j ON j.id = e.job_id"
		"   WHERE e.state IN ('COMPLETED', 'FAILED', 'TIMEOUT') AND e.began" /* a launch that failed: no run time */
		"   GROUP BY 1, 2"
		"   ON CONFLICT (tenant_id, user_name) DO UPDATE SET"
		"     recent = (excluded.recent || ur.recent)[1:2], updated_at = now()),"
		" d AS (INSERT INTO usage_decayed AS ud (tenant_id, user_name, value, updated_at)"
		"   SELECT tenant_id, user_name, sum(gpu_seconds), now() FROM u GROUP BY 1, 2"
		"   ON CONFLICT (tenant_id, user_name) DO UPDATE SET value = muster_decay(ud.value,"
		"     extract(epoch FROM now() - ud.updated_at), $1::int) + excluded.value,"
		"     updated_at = now()),"
		" j AS (UPDATE jobs SET"
		"     state = CASE WHEN e.state IN ('PREEMPTED', 'REQUEUED') THEN 'PENDING'"
		"       WHEN e.state = 'NODE_FAIL' AND jobs.retries < jobs.max_retries THEN 'PENDING'"
		"       WHEN e.state = 'NODE_FAIL' THEN 'FAILED' ELSE e.state END,"
		"     retries = jobs.retries + CASE WHEN e.state = 'NODE_FAIL'"
		"       AND jobs.retries < jobs.max_retries THEN 1 ELSE 0 END,"
		"     exit_code = CASE WHEN e.state IN ('PREEMPTED', 'REQUEUED') OR (e.state = 'NODE_FAIL'"
		"       AND jobs.retries < jobs.max_retries) THEN NULL ELSE e.exit_code END,"
		"     end_reason = CASE WHEN e.state = 'FAILED' AND e.end_reason <> '' THEN e.end_reason"
		"       ELSE lower(e.state) END,"
		"     ended_at = CASE WHEN e.state IN ('PREEMPTED', 'REQUEUED') OR (e.state = 'NODE_FAIL'"
		"       AND jobs.retries < jobs.max_retries) THEN NULL ELSE e.ended_at END,"
		"     pending_reason = 'Priority', pending_message = '', planned_start = NULL,"
		"     updated_at = now()"
		"   FROM e WHERE jobs.id = e.job_id AND jobs.state IN ('STARTING', 'RUNNING')"
		"   RETURNING jobs.id, jobs.tenant_id, jobs.state, jobs.retries, e.id AS run_id,"
		"     e.state AS run_state, jobs.end_reason),"
		" ev AS (INSERT INTO events (kind, tenant_id, job_id, run_id, reason, data)"
		"   SELECT CASE WHEN j.state = 'PENDING' THEN 'job.requeued' ELSE 'job.' || lower(j.state) END,"
		"     j.tenant_id, j.id, j.run_id, j.end_reason, jsonb_build_object('retries', j.retries)"
		"   FROM j)"
		" SELECT (SELECT count(*) FROM e), (SELECT count(*) FROM nt)",
		1, p, n, err);
}

int store_sched_record_cycle(PGconn *c, const struct store_sched_stats *st, struct mu_error *err)
{
	char v[8][32];
	const char *p[8];

	snprintf(v[0], 32, "%.3f", st->cycle_ms);
	snprintf(v[1], 32, "%.3f", st->load_ms);
	snprintf(v[2], 32, "%.3f", st->commit_ms);
	snprintf(v[3], 32, "%d", st->pending);
	snprintf(v[4], 32, "%d", st->running);
	snprintf(v[5], 32, "%d", st->started);
	snprintf(v[6], 32, "%d", st->preempted);
	snprintf(v[7], 32, "%d", st->ended);
	for (int i = 0; i < 8; i++)
		p[i] = v[i];
	return store_db_exec(c,
			     "UPDATE scheduler_lease SET cycles = cycles + 1, last_cycle_at = now(),"
			     " last_cycle_ms = $1, last_load_ms = $2, last_commit_ms = $3, last_pending = $4,"
			     " last_running = $5, last_started = $6, last_preempted = $7, last_ended = $8"
			     " WHERE id = 1",
			     8, p, NULL, err);
}
