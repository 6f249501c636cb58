-- 001_init: the whole model of docs/design.md.
-- Applied once by the migration runner (store/migrate.c), inside one
-- transaction, under an advisory lock, and recorded in schema_migrations.
-- Migration numbers: 001-009 core model, 010-019 API, 020-029 scheduler,
-- 030-039 agents. Never edit an applied migration: add a new one.

-- Tenants form a tree under the single root tenant "root". `path` is the
-- materialised path of names ("root/ml/vision") so a subtree is one
-- prefix query; names are unique cluster-wide, as Slurm accounts are.
CREATE TABLE tenants (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    parent_id   bigint REFERENCES tenants(id) ON DELETE RESTRICT,
    path        text NOT NULL UNIQUE,
    shares      integer NOT NULL DEFAULT 1 CHECK (shares >= 0),
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((parent_id IS NULL) = (name = 'root'))
);
CREATE INDEX tenants_parent ON tenants (parent_id);
INSERT INTO tenants (name, parent_id, path, shares, description)
VALUES ('root', NULL, 'root', 1, 'the cluster');

-- Quotas per tenant, optionally per GPU model ('' = all models).
-- NULL limits mean "no limit".
CREATE TABLE quotas (
    tenant_id        bigint NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    gpu_model        text NOT NULL DEFAULT '',
    guaranteed_gpus  integer NOT NULL DEFAULT 0 CHECK (guaranteed_gpus >= 0),
    max_gpus         integer CHECK (max_gpus >= 0),
    max_running_jobs integer CHECK (max_running_jobs >= 0),
    max_pending_jobs integer CHECK (max_pending_jobs >= 0),
    max_time_limit   integer CHECK (max_time_limit > 0),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, gpu_model),
    CHECK (max_gpus IS NULL OR max_gpus >= guaranteed_gpus)
);

-- Priority classes (Slurm's QOS, Kueue's WorkloadPriorityClass).
CREATE TABLE priority_classes (
    id                 serial PRIMARY KEY,
    name               text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    priority           integer NOT NULL,
    preemptible        boolean NOT NULL DEFAULT true,
    default_time_limit integer NOT NULL DEFAULT 3600 CHECK (default_time_limit > 0),
    max_time_limit     integer CHECK (max_time_limit > 0),
    grace_period       integer NOT NULL DEFAULT 30 CHECK (grace_period >= 0),
    is_default         boolean NOT NULL DEFAULT false,
    description        text NOT NULL DEFAULT '',
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX priority_classes_one_default ON priority_classes (is_default) WHERE is_default;
INSERT INTO priority_classes (name, priority, preemptible, is_default, description) VALUES
    ('low', 10, true, false, 'opportunistic work, preempted first'),
    ('normal', 100, true, true, 'the default'),
    ('high', 1000, false, false, 'never preempted; preempts lower classes');

-- API tokens: only the SHA-256 of the secret is stored (secrets are 256-bit
-- random, so a fast hash is enough); `prefix` lets an operator recognise one.
CREATE TABLE api_tokens (
    id           bigserial PRIMARY KEY,
    name         text NOT NULL DEFAULT '',
    secret_sha256 text NOT NULL UNIQUE CHECK (secret_sha256 ~ '^[0-9a-f]{64}$'),
    prefix       text NOT NULL,
    role         text NOT NULL CHECK (role IN ('admin', 'tenant', 'reader', 'agent')),
    tenant_id    bigint REFERENCES tenants(id) ON DELETE CASCADE,
    user_name    text NOT NULL DEFAULT '',
    node_name    text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    CHECK (role <> 'tenant' OR tenant_id IS NOT NULL)
);

CREATE TABLE nodes (
    id             bigserial PRIMARY KEY,
    name           text NOT NULL UNIQUE,
    address        text NOT NULL DEFAULT '',
    topology       text NOT NULL DEFAULT '',     -- "block-1/rack-3", levels in settings.topology_levels
    gpu_model      text NOT NULL DEFAULT '',
    gpu_count      integer NOT NULL DEFAULT 0 CHECK (gpu_count >= 0),
    up             boolean NOT NULL DEFAULT true, -- false = DOWN (heartbeat lost)
    drain          boolean NOT NULL DEFAULT false,
    drain_reason   text NOT NULL DEFAULT '',
    labels         jsonb NOT NULL DEFAULT '{}',
    agent_version  text NOT NULL DEFAULT '',
    last_heartbeat timestamptz,
    registered_at  timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE gpus (
    node_id        bigint NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    idx            integer NOT NULL CHECK (idx >= 0),
    uuid           text NOT NULL DEFAULT '',
    model          text NOT NULL DEFAULT '',
    memory_mb      bigint NOT NULL DEFAULT 0,
    healthy        boolean NOT NULL DEFAULT true,
    health_reason  text NOT NULL DEFAULT '',
    last_xid       integer,
    memory_used_mb bigint NOT NULL DEFAULT 0,
    utilization    integer NOT NULL DEFAULT 0,
    temperature    integer NOT NULL DEFAULT 0,
    ecc_errors     bigint NOT NULL DEFAULT 0,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (node_id, idx)
);

-- Job ids are a plain increasing sequence, human-friendly like Slurm's.
CREATE TABLE jobs (
    id                bigserial PRIMARY KEY,
    tenant_id         bigint NOT NULL REFERENCES tenants(id),
    user_name         text NOT NULL DEFAULT '',
    name              text NOT NULL DEFAULT '',
    priority_class_id integer NOT NULL REFERENCES priority_classes(id),
    state             text NOT NULL DEFAULT 'PENDING' CHECK (state IN
                      ('PENDING', 'STARTING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT')),
    nodes             integer NOT NULL CHECK (nodes >= 1),
    min_nodes         integer CHECK (min_nodes >= 1 AND min_nodes <= nodes),
    gpus_per_node     integer NOT NULL CHECK (gpus_per_node >= 0),
    gpu_model         text NOT NULL DEFAULT '',
    procs_per_node    integer NOT NULL DEFAULT 1 CHECK (procs_per_node >= 1),
    topology_required  text NOT NULL DEFAULT '',
    topology_preferred text NOT NULL DEFAULT '',
    time_limit        integer NOT NULL CHECK (time_limit > 0),   -- seconds
    command           jsonb NOT NULL DEFAULT '[]',               -- argv
    env               jsonb NOT NULL DEFAULT '{}',
    workdir           text NOT NULL DEFAULT '',
    dependencies      jsonb NOT NULL DEFAULT '[]',               -- [{"type":"afterok","job_id":12}]
    max_retries       integer NOT NULL DEFAULT 0 CHECK (max_retries >= 0),
    retries           integer NOT NULL DEFAULT 0,
    labels            jsonb NOT NULL DEFAULT '{}',
    held              boolean NOT NULL DEFAULT false,
    idempotency_key   text,
    request_sha256    text,
    pending_reason    text NOT NULL DEFAULT 'Priority',
    pending_message   text NOT NULL DEFAULT '',
    planned_start     timestamptz,
    exit_code         integer,
    end_reason        text NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    ended_at          timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, idempotency_key)
);
CREATE INDEX jobs_tenant_id ON jobs (tenant_id, id);
CREATE INDEX jobs_state_id ON jobs (state, id);
CREATE INDEX jobs_active ON jobs (id) WHERE state IN ('PENDING', 'STARTING', 'RUNNING');
CREATE INDEX jobs_labels ON jobs USING gin (labels jsonb_path_ops);

-- A run is one attempt of a job on one allocation. At most one live run
-- per job, and no GPU in two live allocations: both enforced here, so even
-- a buggy or doubled scheduler cannot break them.
CREATE TABLE runs (
    id                bigserial PRIMARY KEY,
    job_id            bigint NOT NULL REFERENCES jobs(id),
    attempt           integer NOT NULL,
    epoch             bigint NOT NULL,              -- scheduler epoch that created it
    state             text NOT NULL DEFAULT 'STARTING' CHECK (state IN
                      ('STARTING', 'RUNNING', 'STOPPING', 'COMPLETED', 'FAILED', 'CANCELLED',
                       'TIMEOUT', 'PREEMPTED', 'NODE_FAIL')),
    live              boolean NOT NULL DEFAULT true,
    nodes             integer NOT NULL,
    gpus_per_node     integer NOT NULL,
    time_limit        integer NOT NULL,
    master_addr       text NOT NULL DEFAULT '',
    master_port       integer NOT NULL DEFAULT 0,
    stop_reason       text NOT NULL DEFAULT '',     -- cancel | preempt | timeout | node_fail
    stop_requested_at timestamptz,
    grace_period      integer NOT NULL DEFAULT 30,
    exit_code         integer,
    exit_signal       integer,
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    ended_at          timestamptz,
    UNIQUE (job_id, attempt)
);
CREATE UNIQUE INDEX runs_one_live_per_job ON runs (job_id) WHERE live;
CREATE INDEX runs_live ON runs (id) WHERE live;

CREATE TABLE run_allocations (
    run_id    bigint NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    node_id   bigint NOT NULL REFERENCES nodes(id),
    node_rank integer NOT NULL,
    gpu_index integer NOT NULL,                    -- -1 for a zero-GPU slot
    live      boolean NOT NULL DEFAULT true,
    PRIMARY KEY (run_id, node_id, gpu_index)
);
CREATE UNIQUE INDEX run_allocations_gpu_once ON run_allocations (node_id, gpu_index)
    WHERE live AND gpu_index >= 0;
CREATE INDEX run_allocations_node ON run_allocations (node_id) WHERE live;

-- Every state change writes one event in the same transaction. `id` is the
-- watch cursor.
CREATE TABLE events (
    id        bigserial PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    kind      text NOT NULL,          -- job.submitted, job.cancelled, run.started, node.drained, ...
    tenant_id bigint,
    job_id    bigint,
    run_id    bigint,
    node_id   bigint,
    reason    text NOT NULL DEFAULT '',
    data      jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX events_job ON events (job_id, id) WHERE job_id IS NOT NULL;
CREATE INDEX events_tenant ON events (tenant_id, id);

-- Raw usage, one row per ended run (accounting, like sacct/sreport) ...
CREATE TABLE usage_records (
    run_id      bigint PRIMARY KEY REFERENCES runs(id),
    job_id      bigint NOT NULL,
    tenant_id   bigint NOT NULL REFERENCES tenants(id),
    user_name   text NOT NULL,
    gpus        integer NOT NULL,
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz NOT NULL,
    gpu_seconds bigint NOT NULL
);
CREATE INDEX usage_records_time ON usage_records (ended_at);

-- ... and usage decayed with settings.half_life, per association, for fair share.
CREATE TABLE usage_decayed (
    tenant_id  bigint NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    user_name  text NOT NULL DEFAULT '',
    value      double precision NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, user_name)
);

-- Cluster policy, editable through the admin API. Values are JSON.
CREATE TABLE settings (
    key        text PRIMARY KEY,
    value      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO settings (key, value) VALUES
    ('topology_levels', '["block", "rack"]'),
    ('reservation_depth', '1'),
    ('half_life', '604800'),
    ('weight_fairshare', '10000'),
    ('weight_age', '1000'),
    ('weight_size', '100'),
    ('max_age', '604800'),
    ('heartbeat_timeout', '30'),
    ('predict_runtimes', 'false');
