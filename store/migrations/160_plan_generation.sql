-- The planning generation (service/plan, docs/architecture.md): the leader
-- bumps it in every cycle that ran the policy core over a fresh snapshot,
-- in that cycle's transaction. muster-api keeps one planned snapshot for
-- POST /v1/jobs/dry-run and reloads it only when the generation moved, so
-- a dry-run no longer loads the whole cluster per request. Monotonic
-- across leaders (one row, never reset).
CREATE TABLE plan_generation (
    id         integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    generation bigint NOT NULL DEFAULT 0,
    bumped_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO plan_generation DEFAULT VALUES;
