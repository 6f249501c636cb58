-- sbatch's -o/-e (docs/cli.md, "Batch scripts"): the patterns of a job's
-- stdout and stderr files (%j %x %A %a %N %n %t %u %%), relative to its
-- workdir, which the agent opens as the job's user and appends to beside
-- the run directory's own logs (the logs route still reads those). '' = none:
-- output only in the run directory. A script job without -o gets
-- sbatch's default, slurm-%j.out (slurm-%A_%a.out in an array).
ALTER TABLE jobs ADD COLUMN stdout_pattern text NOT NULL DEFAULT ''
    CHECK (length(stdout_pattern) <= 4096);
ALTER TABLE jobs ADD COLUMN stderr_pattern text NOT NULL DEFAULT ''
    CHECK (length(stderr_pattern) <= 4096);

-- sacct (GET /v1/history): ended jobs in a time window, oldest first,
-- keyset by (ended_at, id), so a page of a month of a million jobs reads
-- only its own rows.
CREATE INDEX jobs_ended_at_id ON jobs (ended_at, id) WHERE ended_at IS NOT NULL;
