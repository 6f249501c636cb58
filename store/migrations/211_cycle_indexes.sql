-- 211_cycle_indexes: the leader's per-cycle time-based statements
-- (store/store_sched.c) find their few rows by index instead of walking
-- every job or every live run (10-25 ms each at 150k jobs, 50k live runs).
--
-- store_sched_sync_running: the jobs still STARTING (jobs_state_id went in
-- 040; this one holds only the few jobs between start and RUNNING).
CREATE INDEX jobs_starting ON jobs (id) WHERE state = 'STARTING';
-- store_sched_finish_runs: live runs whose agent reported the end.
CREATE INDEX runs_ended_live ON runs (id) WHERE live AND ended_at IS NOT NULL;
-- store_sched_timeouts: a live run's deadline in epoch seconds. The epoch
-- of a timestamptz is the same in every time zone, so this is immutable
-- whatever extract's own marking says.
CREATE FUNCTION muster_run_deadline(started timestamptz, created timestamptz, time_limit integer)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT date_part('epoch', coalesce(started, created)) + time_limit $$;
CREATE INDEX runs_deadline ON runs (muster_run_deadline(started_at, created_at, time_limit))
    WHERE live AND ended_at IS NULL AND state IN ('STARTING', 'RUNNING');
