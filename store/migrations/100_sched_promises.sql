-- Runtime prediction in muster-scheduler (docs/scheduling.md, "Runtime
-- prediction"): the core plans with a user's recent actual run times, as
-- muster-sim does, and never kills before the time limit.

-- The runtime a run was planned with when it started, where that was a
-- prediction shorter than its limit (NULL: planned at its limit). A run
-- that outlives it is planned at its limit from then on.
ALTER TABLE runs ADD COLUMN predicted_runtime integer CHECK (predicted_runtime > 0);

-- Each user's last two actual run times (seconds, newest first), kept by
-- the scheduler as runs end COMPLETED, FAILED or TIMEOUT (not cancelled,
-- preempted or lost to a node: those say nothing of the job), so that the
-- snapshot reads one row per user rather than searching the runs.
CREATE TABLE user_runtimes (
    tenant_id  bigint NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    user_name  text NOT NULL,
    recent     integer[] NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, user_name)
);

INSERT INTO user_runtimes (tenant_id, user_name, recent)
SELECT tenant_id, user_name, (array_agg(rt ORDER BY ended_at DESC, id DESC))[1:2]
FROM (SELECT j.tenant_id, j.user_name, r.id, r.ended_at,
             greatest(0, round(extract(epoch FROM r.ended_at - coalesce(r.started_at, r.created_at))))::int AS rt
      FROM runs r JOIN jobs j ON j.id = r.job_id
      WHERE NOT r.live AND r.ended_at IS NOT NULL AND r.state IN ('COMPLETED', 'FAILED', 'TIMEOUT')) x
GROUP BY tenant_id, user_name;

-- Prediction is on by default now; settings.predict_runtimes = false turns it off.
-- The old default is flipped only where nobody has touched it since the
-- first migration seeded it (an operator's own 'false' stays).
UPDATE settings SET value = 'true', updated_at = now()
WHERE key = 'predict_runtimes' AND value = 'false'
  AND updated_at <= (SELECT applied_at FROM schema_migrations WHERE version = 1);
