-- Job arrays (Slurm --array; docs/api.md "Job arrays"): one submit makes
-- one job per task. array_job_id is the id of the array's first task (so
-- the first task has array_job_id = id), array_task_id its index,
-- array_spec the spec as given ("0-15%4") and array_throttle its K (at
-- most K tasks running at once; 0 = none), read by the scheduler.
ALTER TABLE jobs ADD COLUMN array_job_id bigint;
ALTER TABLE jobs ADD COLUMN array_task_id integer CHECK (array_task_id >= 0);
ALTER TABLE jobs ADD COLUMN array_spec text;
ALTER TABLE jobs ADD COLUMN array_throttle integer NOT NULL DEFAULT 0 CHECK (array_throttle >= 0);
CREATE INDEX jobs_array ON jobs (array_job_id, array_task_id) WHERE array_job_id IS NOT NULL;
