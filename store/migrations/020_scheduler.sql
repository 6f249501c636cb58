-- 020_scheduler: leader election state and the last cycle's figures.
--
-- Leadership itself is a session-level advisory lock (key in
-- store/store_sched.h); this single row is the *lease*: the leader renews
-- `renewed_at` every second through the same session that holds the lock,
-- and a standby that sees it older than `lease_timeout` terminates
-- `backend_pid` and takes over. `epoch` is bumped at every takeover and
-- stamped on every run the leader creates (runs.epoch), so every decision
-- can be traced to one reign.
CREATE TABLE scheduler_lease (
    id            integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    epoch         bigint NOT NULL DEFAULT 0,
    holder        text NOT NULL DEFAULT '',     -- application_name: muster-scheduler:<host>:<pid>
    backend_pid   integer,                      -- the leader's database session
    acquired_at   timestamptz,
    renewed_at    timestamptz,
    -- the last committed cycle (GET /v1/scheduler)
    cycles        bigint NOT NULL DEFAULT 0,
    last_cycle_at timestamptz,
    last_cycle_ms double precision NOT NULL DEFAULT 0,
    last_load_ms  double precision NOT NULL DEFAULT 0,
    last_commit_ms double precision NOT NULL DEFAULT 0,
    last_pending  integer NOT NULL DEFAULT 0,
    last_running  integer NOT NULL DEFAULT 0,
    last_started  integer NOT NULL DEFAULT 0,
    last_preempted integer NOT NULL DEFAULT 0,
    last_ended    integer NOT NULL DEFAULT 0
);
INSERT INTO scheduler_lease (id) VALUES (1);

-- Seconds after the last renewal at which a standby may fence the leader.
INSERT INTO settings (key, value) VALUES ('lease_timeout', '3') ON CONFLICT (key) DO NOTHING;

-- The loop's time-based queries.
CREATE INDEX runs_live_state ON runs (state) WHERE live;
CREATE INDEX nodes_up_heartbeat ON nodes (last_heartbeat) WHERE up;
