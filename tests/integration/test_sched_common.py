"""Helpers shared by the test_sched_*.py files (not a test itself).

Nodes and jobs are written straight into the database, as the API and agents
will: nodes by INSERT, jobs by INSERT + NOTIFY muster_sched, agent reports by
UPDATE runs (see store/store_sched.h, "Agent contract") + NOTIFY.
"""
import ctypes
import ctypes.util
import os
import signal
import threading
import time

import harness
from harness import check, check_eq


class PG:
    """A minimal libpq client over ctypes (psql per statement is too slow for
    submit streams and latency measurements). Text results only."""

    _lib = None

    def __init__(self, url):
        if PG._lib is None:
            lib = ctypes.CDLL(ctypes.util.find_library("pq") or "libpq.so.5")
            lib.PQconnectdb.restype = ctypes.c_void_p
            lib.PQconnectdb.argtypes = [ctypes.c_char_p]
            lib.PQstatus.argtypes = [ctypes.c_void_p]
            lib.PQerrorMessage.restype = ctypes.c_char_p
            lib.PQerrorMessage.argtypes = [ctypes.c_void_p]
            lib.PQexec.restype = ctypes.c_void_p
            lib.PQexec.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
            lib.PQresultStatus.argtypes = [ctypes.c_void_p]
            lib.PQntuples.argtypes = [ctypes.c_void_p]
            lib.PQnfields.argtypes = [ctypes.c_void_p]
            lib.PQgetvalue.restype = ctypes.c_char_p
            lib.PQgetvalue.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
            lib.PQgetisnull.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
            lib.PQclear.argtypes = [ctypes.c_void_p]
            lib.PQfinish.argtypes = [ctypes.c_void_p]
            lib.PQresultErrorMessage.restype = ctypes.c_char_p
            lib.PQresultErrorMessage.argtypes = [ctypes.c_void_p]
            PG._lib = lib
        self.url = url
        self.conn = None
        self.connect()

    def connect(self):
        self.close()
        self.conn = PG._lib.PQconnectdb(self.url.encode())
        if PG._lib.PQstatus(self.conn) != 0:
            msg = PG._lib.PQerrorMessage(self.conn).decode()
            self.close()
            raise RuntimeError("connect: " + msg)

    def close(self):
        if self.conn:
            PG._lib.PQfinish(self.conn)
            self.conn = None

    def query(self, sql):
        """Rows (tuples of str/None) of the last statement; RuntimeError on failure
        (the connection is re-made next time)."""
        if not self.conn:
            self.connect()
        lib = PG._lib
        r = lib.PQexec(self.conn, sql.encode())
        try:
            st = lib.PQresultStatus(r) if r else 7
            if st not in (1, 2):  # PGRES_COMMAND_OK, PGRES_TUPLES_OK
                msg = lib.PQresultErrorMessage(r).decode() if r else "no result"
                if lib.PQstatus(self.conn) != 0:
                    self.close()
                raise RuntimeError(msg)
            return [tuple(None if lib.PQgetisnull(r, i, j) else lib.PQgetvalue(r, i, j).decode()
                          for j in range(lib.PQnfields(r))) for i in range(lib.PQntuples(r))]
        finally:
            if r:
                lib.PQclear(r)


def add_nodes(c, prefix, n, gpus=8, model="h100", heartbeat=False, topology=None):
    """n nodes named <prefix>-<i> with `gpus` healthy GPUs each; returns names."""
    hb = "now()" if heartbeat else "NULL"
    topo = topology or "block-1/rack-1"
    sql(c, "INSERT INTO nodes (name, address, topology, gpu_model, gpu_count, last_heartbeat)"
          " SELECT $1 || '-' || i, '10.9.' || i || '.1', $2, $3, $4::int, " + hb +
          " FROM generate_series(1, $5::int) i;"
          " INSERT INTO gpus (node_id, idx, model) SELECT n.id, g, n.gpu_model FROM nodes n,"
          " generate_series(0, n.gpu_count - 1) g WHERE n.name LIKE $1 || '-%'"
          " ON CONFLICT DO NOTHING;"
          " NOTIFY muster_sched, 'node:x'",
          prefix, topo, model, gpus, n)
    return ["%s-%d" % (prefix, i) for i in range(1, n + 1)]


def submit(c, count=1, nodes=1, gpus=1, model="h100", time_limit=3600, retries=0,
           klass="normal", tenant="root", user="alice", min_nodes=None):
    """Inserts `count` jobs and NOTIFYs the scheduler; returns their ids."""
    rows = sql(c, 
        "WITH j AS (INSERT INTO jobs (tenant_id, user_name, priority_class_id, nodes,"
        " gpus_per_node, gpu_model, time_limit, max_retries, command, min_nodes)"
        " SELECT (SELECT id FROM tenants WHERE name = $1), $2,"
        " (SELECT id FROM priority_classes WHERE name = $3), $4::int, $5::int, $6, $7::int,"
        " $8::int, '[\"true\"]', $10::int FROM generate_series(1, $9::int) RETURNING id)"
        " SELECT id FROM j ORDER BY id",
        tenant, user, klass, nodes, gpus, model, time_limit, retries, count, min_nodes)
    q(c, "NOTIFY muster_sched, 'submit:%s'" % rows[-1][0])
    return [int(r[0]) for r in rows]


def job(c, jid):
    r = sql(c, "SELECT state, retries, pending_reason, end_reason, exit_code FROM jobs WHERE id = $1",
              jid)[0]
    return {"state": r[0], "retries": int(r[1]), "reason": r[2], "end_reason": r[3],
            "exit_code": r[4]}


def live_run(c, jid):
    """(run id, state, stop_reason) of the job's live run, or None."""
    r = sql(c, "SELECT id, state, stop_reason FROM runs WHERE job_id = $1 AND live", jid)
    return (int(r[0][0]), r[0][1], r[0][2]) if r else None


def wait_state(c, jid, states, timeout=10):
    if isinstance(states, str):
        states = (states,)
    return c.wait_until(lambda: job(c, jid)["state"] in states and job(c, jid), timeout,
                        "job %s in %s (now %s)" % (jid, states, job(c, jid)))


def wait_live_run(c, jid, timeout=10):
    return c.wait_until(lambda: live_run(c, jid), timeout, "a live run of job %s" % jid)


def agent_running(c, run_id, started_ago=0):
    sql(c, "UPDATE runs SET state = 'RUNNING', started_at = now() - make_interval(secs => $2::int)"
          " WHERE id = $1; NOTIFY muster_sched, 'run:0'", run_id, started_ago)


def agent_end(c, run_id, exit_code=0, state=None):
    """The agent reports the run's processes gone (exit code), as for a stop."""
    st = state or ("COMPLETED" if exit_code == 0 else "FAILED")
    sql(c, "UPDATE runs SET state = CASE WHEN state = 'STOPPING' THEN state ELSE $3 END,"
          " exit_code = $2::int, ended_at = now() WHERE id = $1; NOTIFY muster_sched, 'run:0'",
          run_id, exit_code, st)


def start_scheduler(c, name, *args):
    return c.start_process(["muster-scheduler", "--db", c.db_url, "--log-level", "info"] + list(args),
                           name=name)


def fast(c):
    """A PG connection cached on the cluster, for polling loops."""
    if not hasattr(c, "_fast_pg"):
        c._fast_pg = PG(c.db_url)
    return c._fast_pg


def q(c, sql):
    """Rows via the cluster's fast connection (reconnects after a failure)."""
    for attempt in range(2):
        try:
            return fast(c).query(sql)
        except RuntimeError:
            if attempt:
                raise
            fast(c).close()
    return []


def _lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return "'" + str(v).replace("'", "''") + "'"


def sql(c, query, *params):
    """c.sql over the fast connection: $n become quoted literals."""
    for i in range(len(params), 0, -1):
        query = query.replace("$%d" % i, _lit(params[i - 1]))
    return q(c, query)


def val(c, query, *params):
    rows = sql(c, query, *params)
    return rows[0][0] if rows and rows[0] else None


def lease(c):
    r = q(c, "SELECT epoch, holder, coalesce(backend_pid, 0), cycles FROM scheduler_lease")[0]
    return {"epoch": int(r[0]), "holder": r[1], "pid": int(r[2]), "cycles": int(r[3])}


def leader_proc(c, procs):
    """The Popen among procs that currently leads (holder names its pid), or None."""
    h = lease(c)["holder"]
    for p in procs:
        if h.endswith(":%d" % p.pid):
            return p
    return None


def wait_leader(c, procs, timeout=10):
    return c.wait_until(lambda: leader_proc(c, procs), timeout, "a leader among schedulers")


def check_invariants(c):
    """What must hold after any failure: one live run per job, no GPU twice,
    allocations only for live runs, job and run states agree, no run
    without its allocations (no half-written cycle)."""
    check_eq(val(c, "SELECT count(*) FROM (SELECT job_id FROM runs WHERE live"
                         " GROUP BY job_id HAVING count(*) > 1) x"), "0", "jobs with two live runs")
    check_eq(val(c, "SELECT count(*) FROM (SELECT node_id, gpu_index FROM run_allocations"
                         " WHERE live AND gpu_index >= 0 GROUP BY 1, 2 HAVING count(*) > 1) x"), "0",
             "GPUs allocated twice")
    # An allocation is live only with its run; a live run drops rows only
    # when it shrank (elastic, a node lost), and keeps at least one node.
    check_eq(val(c, "SELECT count(*) FROM run_allocations a JOIN runs r ON r.id = a.run_id"
                         " WHERE (a.live AND NOT r.live) OR (r.live AND NOT a.live AND r.shrunk_at IS NULL)"),
             "0", "allocation liveness differs from its run's")
    check_eq(val(c, "SELECT count(*) FROM jobs j WHERE j.state IN ('STARTING', 'RUNNING')"
                         " AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.job_id = j.id AND r.live)"),
             "0", "active jobs without a live run")
    check_eq(val(c, "SELECT count(*) FROM jobs j WHERE j.state NOT IN ('STARTING', 'RUNNING')"
                         " AND EXISTS (SELECT 1 FROM runs r WHERE r.job_id = j.id AND r.live)"),
             "0", "inactive jobs with a live run")
    check_eq(val(c, "SELECT count(*) FROM runs r WHERE r.shrunk_at IS NULL AND (SELECT count(*)"
                         " FROM run_allocations a WHERE a.run_id = r.id) <> r.nodes * greatest(r.gpus_per_node, 1)"),
             "0", "runs whose allocation is incomplete")
    check_eq(val(c, "SELECT count(*) FROM runs r WHERE r.shrunk_at IS NOT NULL AND r.live AND"
                         " (SELECT count(*) FROM run_allocations a WHERE a.run_id = r.id AND a.live)"
                         " <> r.nodes * greatest(r.gpus_per_node, 1)"),
             "0", "shrunk runs whose kept allocation differs from runs.nodes")
    check_eq(val(c, "SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM events e"
                         " WHERE e.run_id = r.id AND e.kind = 'job.starting')"),
             "0", "runs without their job.starting event")


class Stream:
    """Submits jobs one by one from a thread and plays a crude agent: every
    step also completes the oldest started run, so GPUs keep turning over.
    `acked` holds the ids whose INSERT committed (the client saw success)."""

    def __init__(self, c, model, gpus=1):
        self.c, self.model, self.gpus = c, model, gpus
        self.pg = PG(c.db_url)
        self.acked, self.errors = [], 0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            try:
                rows = self.pg.query(
                    "INSERT INTO jobs (tenant_id, user_name, priority_class_id, nodes, gpus_per_node,"
                    " gpu_model, time_limit, command) VALUES (1, 'stream', 2, 1, %d, '%s', 3600,"
                    " '[\"true\"]') RETURNING id" % (self.gpus, self.model))
                self.acked.append(int(rows[0][0]))
                self.pg.query("NOTIFY muster_sched, 'submit:%s'" % rows[0][0])
                time.sleep(0.02)
                self.pg.query("UPDATE runs SET state = 'COMPLETED', exit_code = 0, ended_at = now()"
                           " WHERE id = (SELECT min(id) FROM runs WHERE live AND state = 'STARTING'"
                           " AND ended_at IS NULL AND created_at < now() - interval '0.3 s');"
                           " NOTIFY muster_sched, 'run:0'")
            except RuntimeError:
                self.errors += 1
                time.sleep(0.1)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.t.join(30)
        self.pg.close()
        return False
