-- 060_fabric_fault: a training-fabric link down is a node fault, like a fatal
-- XID. The agent reports it, muster-api drains the node and records the
-- reason here; the scheduler then treats every multi-node run on the node as
-- hit by a node failure (stopped and requeued, or shrunk when elastic).
-- Single-node runs keep running: they do not use the fabric. An admin's
-- resume clears the mark with the drain.
ALTER TABLE nodes ADD COLUMN fabric_fault text NOT NULL DEFAULT '';
