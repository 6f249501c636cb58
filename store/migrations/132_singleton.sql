-- The singleton dependency (Slurm --dependency=singleton): a job waits
-- while an earlier job of the same tenant, user and name is active. The
-- scheduler's snapshot looks that up per singleton job with this index.
CREATE INDEX jobs_singleton ON jobs (tenant_id, user_name, name, id)
    WHERE state IN ('PENDING', 'STARTING', 'RUNNING');
