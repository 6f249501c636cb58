-- 212_stream_owner: one live agent stream per node across muster-api
-- replicas (api/grpc/grpc_agent.c claim). Each replica names itself in
-- api_replicas and refreshes heard_at every second (store_agent_cp_tick);
-- nodes.stream_replica is the replica holding the node's stream, set when
-- a Connect claims it and with every heartbeat flush, cleared when the
-- stream ends. Another replica may take the node only when that replica is
-- silent (store.h STORE_AGENT_REPLICA_LIVE_S), the node has not been heard
-- within its heartbeat timeout, or nobody holds it.
CREATE TABLE api_replicas (
    id       text PRIMARY KEY,
    heard_at timestamptz NOT NULL
);
ALTER TABLE nodes ADD COLUMN stream_replica text;
