-- 080_node_channel: the node channel cannot be wedged, and a control-plane
-- outage is not a node failure (docs/agent.md "The node channel").
--
-- job_spec_max_bytes: the most bytes a job's command + env + workdir may
-- take (as stored JSON), checked at submit, so that every node's desired
-- state stays far below what an agent accepts.
INSERT INTO settings (key, value) VALUES ('job_spec_max_bytes', '65536') ON CONFLICT (key) DO NOTHING;

-- One row: when a muster-api agent thread last reached the database
-- (heard_at, about every second) and since when it has without a gap
-- (heard_since). The scheduler marks a node DOWN for a heartbeat timeout
-- only while the control plane has been heard for at least that timeout:
-- a node silent while muster-api was paused or PostgreSQL was unreachable
-- is not a dead node.
CREATE TABLE control_plane (
    id          int PRIMARY KEY CHECK (id = 1),
    heard_at    timestamptz NOT NULL,
    heard_since timestamptz NOT NULL
);
