-- 030_agent_run_status: what each node's agent last reported about its part
-- of a run (muster-api's AgentService, api/grpc/grpc_agent.c).
--
-- A gang runs on several nodes; the run ends when every node's part has
-- exited (COMPLETED when all exited 0), or at once when one part fails
-- (FAILED: the other nodes' parts are dropped from their desired state and
-- killed). A part that has EXITED is no longer in its node's desired state,
-- so an agent never restarts it.
CREATE TABLE run_node_status (
    run_id      bigint NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    node_id     bigint NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    phase       text NOT NULL CHECK (phase IN ('RUNNING', 'EXITED', 'FAILED_TO_START')),
    exit_code   integer,
    exit_signal integer,
    log_path    text NOT NULL DEFAULT '',
    message     text NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, node_id)
);
