-- 110_launchers: how a job's processes are launched (issue 10).
--
-- jobs.launch: {"launcher": "torchrun", "on_shrink": "keep",
--   "signal": {"name": "USR1", "before": 60, "batch_only": false}}; every
--   key optional ({} = launcher none, on_shrink restart, no signal). One
--   column so that the submit COPY and the job rows gain one field only.
-- runs.restart_count: how often an elastic run with on_shrink restart was
--   restarted on its kept nodes (the agents restart when it grows).
ALTER TABLE jobs ADD COLUMN launch jsonb NOT NULL DEFAULT '{}'::jsonb
    CHECK (jsonb_typeof(launch) = 'object');
ALTER TABLE runs ADD COLUMN restart_count integer NOT NULL DEFAULT 0;
