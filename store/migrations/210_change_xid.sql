-- 210_change_xid: a change column on the tables the leader keeps a copy of
-- (store/store_sched_snap.c, "the kept snapshot"), so that "rows changed
-- since" is an index range, not a scan of every row's xmin.
--
-- chg is the 64-bit id (xid8, no wraparound) of the transaction that last
-- inserted or updated the row: the default on insert, a BEFORE UPDATE
-- trigger on update (whatever the UPDATE sets it to). A reader that saw
-- snapshot S reads next the rows with chg >= pg_snapshot_xmin(S): every
-- transaction below that was over when S was taken (S saw it), and one that
-- was still running then, whose xid may be smaller than others S saw, is
-- at or above it. Deletes leave no row: the leader counts (nodes) or
-- never deletes (jobs, runs, allocations end with state / live).
--
-- Adding a column with a volatile default rewrites each table once.
CREATE FUNCTION muster_chg() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.chg := pg_current_xact_id();
    RETURN NEW;
END $$;

ALTER TABLE jobs ADD COLUMN chg xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE runs ADD COLUMN chg xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE run_allocations ADD COLUMN chg xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE nodes ADD COLUMN chg xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE gpus ADD COLUMN chg xid8 NOT NULL DEFAULT pg_current_xact_id();

CREATE TRIGGER jobs_chg BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION muster_chg();
CREATE TRIGGER runs_chg BEFORE UPDATE ON runs FOR EACH ROW EXECUTE FUNCTION muster_chg();
CREATE TRIGGER run_allocations_chg BEFORE UPDATE ON run_allocations FOR EACH ROW EXECUTE FUNCTION muster_chg();
CREATE TRIGGER nodes_chg BEFORE UPDATE ON nodes FOR EACH ROW EXECUTE FUNCTION muster_chg();
CREATE TRIGGER gpus_chg BEFORE UPDATE ON gpus FOR EACH ROW EXECUTE FUNCTION muster_chg();

CREATE INDEX jobs_chg ON jobs (chg);
CREATE INDEX runs_chg ON runs (chg);
CREATE INDEX run_allocations_chg ON run_allocations (chg);
CREATE INDEX nodes_chg ON nodes (chg);
CREATE INDEX gpus_chg ON gpus (chg);

-- The keep's "begin time passed since" half (jobs whose begin_at came
-- without a row change) and store_sched_begin_due both range over begin_at
-- among pending jobs; the index no longer names pending_reason.
DROP INDEX jobs_begin_due;
CREATE INDEX jobs_begin_due ON jobs (begin_at) WHERE state = 'PENDING' AND begin_at IS NOT NULL;
