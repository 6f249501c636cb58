-- 070_node_runtime: a job's per-node resource limits, and why a run ended
-- when the agent knows better than an exit code.
--
-- mem_per_node (bytes) and cpus_per_node become the run's cgroup limits on
-- each node (Slurm's --mem and --cpus-per-task x tasks); NULL = none.
-- end_reason: the agent's word on a node's part (bad_user, bad_workdir,
-- launch_failed, oom); a run that FAILED with one gives it to its job's
-- end_reason (jobs.end_reason is otherwise the run's final state).
ALTER TABLE jobs ADD COLUMN mem_per_node bigint CHECK (mem_per_node > 0);
ALTER TABLE jobs ADD COLUMN cpus_per_node integer CHECK (cpus_per_node > 0);
ALTER TABLE runs ADD COLUMN end_reason text NOT NULL DEFAULT '';
ALTER TABLE run_node_status ADD COLUMN end_reason text NOT NULL DEFAULT '';
-- unix_account: the one Unix account the jobs of this tenant (and of its
-- subtree, unless a nearer tenant names another) run as on the nodes, for
-- teams without personal accounts; '' = each job as its own user. Admins
-- set it.
ALTER TABLE tenants ADD COLUMN unix_account text NOT NULL DEFAULT ''
    CHECK (unix_account ~ '^([a-z_][a-z0-9_.-]{0,31})?$');
