-- 050_elastic_shrink: an elastic run that loses nodes keeps running on the
-- rest (store_sched_apply, shrinks). The lost nodes' run_allocations rows
-- turn live = false (their GPUs are free at once), runs.nodes becomes the
-- kept count, and the GPU-seconds the lost GPUs used up to the shrink are
-- kept here until the run ends: then usage_records.gpu_seconds =
-- nodes * gpus_per_node * (end - start) + shrunk_gpu_seconds.
ALTER TABLE runs ADD COLUMN shrunk_gpu_seconds bigint NOT NULL DEFAULT 0
    CHECK (shrunk_gpu_seconds >= 0);
ALTER TABLE runs ADD COLUMN shrunk_at timestamptz;
-- Live runs that shrank: few, found by the agents' desired-state query
-- (the dropped node keeps the run as a stop order until it reports).
CREATE INDEX runs_shrunk_live ON runs (id) WHERE live AND shrunk_at IS NOT NULL;
