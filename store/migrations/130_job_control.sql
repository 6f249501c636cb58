-- Changing jobs (docs/api.md "Changing jobs"): hold/release, requeue,
-- PATCH of a pending job, and a begin time on submit.

-- The earliest time a job may start (Slurm --begin); NULL = at once. A
-- pending job before it is kept out of the scheduler's snapshot and shows
-- the pending reason BeginTime.
ALTER TABLE jobs ADD COLUMN begin_at timestamptz;
-- The scheduler's tick looks for begin times that have come.
CREATE INDEX jobs_begin_due ON jobs (begin_at) WHERE state = 'PENDING' AND pending_reason = 'BeginTime';

-- A run stopped by POST /v1/jobs/{id}/requeue ends REQUEUED (stop_reason
-- 'requeue') and its job goes back to PENDING without spending a retry.
ALTER TABLE runs DROP CONSTRAINT runs_state_check;
ALTER TABLE runs ADD CONSTRAINT runs_state_check CHECK (state IN
    ('STARTING', 'RUNNING', 'STOPPING', 'COMPLETED', 'FAILED', 'CANCELLED',
     'TIMEOUT', 'PREEMPTED', 'NODE_FAIL', 'REQUEUED'));
