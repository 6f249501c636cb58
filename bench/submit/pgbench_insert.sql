-- One row per transaction, equivalent to what POST /v1/jobs writes for the
-- job itself (same table, same columns and indexes), with fsync on.
INSERT INTO jobs (tenant_id, user_name, name, priority_class_id, nodes, gpus_per_node,
                  time_limit, command, labels)
VALUES (1, '', 'bench', 2, 2, 8, 3600,
        '["torchrun", "--nproc-per-node=8", "train.py"]', '{"bench": "submit"}');
