#!/usr/bin/python3
"""Elastic gangs shrink in place, end to end: three fake-GPU agents
(loopback, 4 GPUs each), real muster-api and muster-scheduler.

An elastic job (3 nodes, min_nodes 2) runs one process per node. A fatal
XID on one node drains it; the scheduler shrinks the run instead of
stopping it: the same run goes on on the other two nodes with the same
processes (same PIDs, each started once), the lost node's process is
stopped (TERM) and its allocation freed, the survivors' hostfile lists the
two kept nodes, event run.shrunk is written, and the job completes
COMPLETED with GPU-seconds = kept part to the end + lost part to the
shrink. A SIGKILLed agent's node goes DOWN and the run shrinks the same
way; the agent, back, stops the part it left running. A last job (2
nodes, min_nodes 1) loses a part that dies with its GPU before the
scheduler acts (still a shrink, not a failed job), then a second fault
leaves it below min_nodes: stopped everywhere and requeued. These jobs say
on_shrink keep (processes kept); test_launch_restart.py has the default,
restart."""
import os
import signal
import time

import harness
from harness import check, check_eq
from test_grpc_common import make_tenant, make_token
from test_sched_common import sql as fast_sql, val as fast_val

NODES = ["el-n1", "el-n2", "el-n3"]
S = {}
# Each process appends its PID once (a restart would add a line), waits for
# the release file, then copies the hostfile it sees at the end.
HOLD = ("echo $$ >> $OUT/pid.$MUSTER_RUN_ID.$NODE_RANK; "
        "while [ ! -e $OUT/release.$MUSTER_RUN_ID ]; do "
        "[ -e $OUT/crash.$MUSTER_RUN_ID.$NODE_RANK ] && exit 7; sleep 0.05; done; "
        "cp $MUSTER_HOSTFILE $OUT/hosts.$MUSTER_RUN_ID.$NODE_RANK")


def setup(c):
    if S:
        return S
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    c.start_api()
    make_tenant(c, "ela")
    c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = 'ela'")
    c.sql("INSERT INTO priority_classes (name, priority, preemptible, grace_period)"
          " VALUES ('quick', 100, true, 2)")
    S["user"] = make_token(c, "tenant", tenant="ela", user="eve")
    S["sched"] = c.start_process(["muster-scheduler", "--db", c.db_url, "--log-level", "info"],
                                 name="scheduler")
    S["out"] = os.path.join(c.dir, "out")
    os.makedirs(S["out"])
    S["agents"], S["tokens"] = {}, {}
    for n in NODES:
        S["tokens"][n] = make_token(c, "agent", node=n)
        start_agent(c, n)
    c.wait_until(lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name LIKE 'el-n%' AND up") == "3",
                 15, "three agents registered")
    return S


def start_agent(c, n):
    S["agents"][n] = c.start_process(
        [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port,
         "--node", n, "--address", "127.0.0.%d" % (NODES.index(n) + 2),
         "--state-dir", os.path.join(c.dir, "agent-" + n), "--gpu-backend", "fake",
         "--fake-gpus", "4", "--heartbeat-interval", "300ms", "--token-file", token_file(c, n)] + c.agent_flags(),
        name="agent-" + n)


def token_file(c, n):
    path = os.path.join(c.dir, "token-" + n)
    return path if os.path.exists(path) else c.token_file(S["tokens"][n], "token-" + n)


def submit(c, nodes, min_nodes):
    st, _, b = c.api("POST", "/v1/jobs", {
        "name": "elastic", "nodes": nodes, "min_nodes": min_nodes, "gpus_per_node": 4,
        "procs_per_node": 1, "priority_class": "quick", "max_retries": 2, "on_shrink": "keep",
        "command": ["/bin/sh", "-c", HOLD], "env": {"OUT": S["out"]}, "time_limit": "5:00"},
        token=S["user"])
    check_eq(st, 201, "submit", b)
    return str(b["id"])


def val(c, q, *p):
    """One value over the cluster's libpq connection (psql per poll is slow
    on a loaded machine)."""
    return fast_val(c, q, *[str(x) for x in p])


def ranks(c, run):
    """{node name: rank} of the run's live allocation."""
    return {r[0]: int(r[1]) for r in fast_sql(c, 
        "SELECT n.name, min(a.node_rank) FROM run_allocations a JOIN nodes n ON n.id = a.node_id"
        " WHERE a.run_id = $1 AND a.live GROUP BY n.name", str(run))}


def pids(run, rank):
    path = os.path.join(S["out"], "pid.%s.%d" % (run, rank))
    return [int(x) for x in open(path).read().split()] if os.path.exists(path) else []


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purpose
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def start_run(c, jid, n):
    c.wait_until(lambda: val(c, "SELECT count(*) FROM runs WHERE job_id = $1 AND state = 'RUNNING'", jid) == "1",
                 20, "job %s RUNNING" % jid)
    run = val(c, "SELECT id FROM runs WHERE job_id = $1 AND live", jid)
    rk = ranks(c, run)
    check_eq(sorted(rk.values()), list(range(n)), "ranks", rk)
    c.wait_until(lambda: all(len(pids(run, r)) == 1 for r in range(n)), 10, "every process started")
    return run, rk


def fault(c, node, gpu, xid=79):
    with open(os.path.join(c.dir, "agent-" + node, "fault"), "a") as f:
        f.write("gpu %d xid %d\n" % (gpu, xid))


def wait_shrunk(c, run, count):
    c.wait_until(lambda: val(c, "SELECT count(*) FROM events WHERE run_id = $1 AND kind = 'run.shrunk'",
                             run) == str(count), 15, "run %s shrunk %d time(s)" % (run, count))


def test_xid_shrinks_in_place_then_completes(c):
    setup(c)
    jid = submit(c, 3, 2)
    run, rk = start_run(c, jid, 3)
    before = {r: pids(run, r)[0] for r in range(3)}
    bad = [n for n, r in rk.items() if r == 1][0]
    kept = {n: r for n, r in rk.items() if n != bad}
    t0 = time.monotonic()
    fault(c, bad, 2)
    wait_shrunk(c, run, 1)
    print("xid on %s: run %s shrunk 3 -> 2 nodes in %.2fs" % (bad, run, time.monotonic() - t0))

    check_eq(val(c, "SELECT drain FROM nodes WHERE name = $1", bad), "t", "faulty node drained")
    check_eq(val(c, "SELECT string_agg(id || ':' || state, ',') FROM runs WHERE job_id = $1", jid),
             "%s:RUNNING" % run, "the same run goes on, no second run")
    check_eq(val(c, "SELECT state FROM jobs WHERE id = $1", jid), "RUNNING")
    check_eq(val(c, "SELECT nodes FROM runs WHERE id = $1", run), "2", "runs.nodes")
    check_eq(ranks(c, run), kept, "survivors keep their ranks")
    check_eq(val(c, "SELECT count(*) FROM run_allocations a JOIN nodes n ON n.id = a.node_id"
                    " WHERE n.name = $1 AND a.live", bad), "0", "the lost node's GPUs are free")
    ev = c.sql("SELECT data->>'from', data->>'to', data->>'lost' FROM events"
               " WHERE run_id = $1 AND kind = 'run.shrunk'", run)[0]
    check_eq(ev, ("3", "2", '["%s"]' % bad), "run.shrunk data")

    # the lost node's process is stopped and its part reported; the others run on
    c.wait_until(lambda: not alive(before[1]), 10, "rank 1's process (on %s) stopped" % bad)
    c.wait_until(lambda: val(c, "SELECT phase FROM run_node_status s JOIN nodes n ON n.id = s.node_id"
                                " WHERE s.run_id = $1 AND n.name = $2", run, bad) == "EXITED",
                 10, "%s reported its part exited" % bad)
    for r in (0, 2):
        check(alive(before[r]), "rank %d's process still runs" % r)
        check_eq(pids(run, r), [before[r]], "rank %d started once" % r)
    addrs = {n: "127.0.0.%d" % (NODES.index(n) + 2) for n in NODES}
    want = "".join("%s slots=4\n" % addrs[n] for n in sorted(kept, key=kept.get))
    for n in kept:
        hf = os.path.join(c.dir, "agent-" + n, "runs", run, "hostfile")
        c.wait_until(lambda: open(hf).read() == want, 10, "%s's hostfile lists the kept nodes" % n)
        c.wait_until(lambda: "run=%s gang now 2 node(s)" % run in c.log_text("agent-" + n), 5,
                     "%s logs the new membership" % n)
    check_eq(val(c, "SELECT state FROM runs WHERE id = $1", run), "RUNNING", "still RUNNING after the stop")

    # visible through the API
    st, _, body = c.api("GET", "/v1/jobs/%s" % jid, token=S["user"])
    check_eq(st, 200)
    check("run.shrunk" in [e["kind"] for e in body["events"]], "run.shrunk among the job's events")

    # release: the job completes; usage = 8 GPUs to the end + 4 lost GPUs to the shrink
    open(os.path.join(S["out"], "release.%s" % run), "w").close()
    c.wait_until(lambda: val(c, "SELECT state FROM jobs WHERE id = $1", jid) in ("COMPLETED", "FAILED"),
                 15, "job %s ends" % jid)
    check_eq(val(c, "SELECT state FROM jobs WHERE id = $1", jid), "COMPLETED", "job state")
    for r in (0, 2):
        hosts = open(os.path.join(S["out"], "hosts.%s.%d" % (run, r))).read()
        check_eq(hosts, want, "rank %d saw the new hostfile" % r)
    u = c.sql("SELECT u.gpu_seconds, u.gpus,"
              " round(8 * extract(epoch FROM r.ended_at - r.started_at))::bigint + r.shrunk_gpu_seconds,"
              " r.shrunk_gpu_seconds, round(4 * extract(epoch FROM r.shrunk_at - r.started_at))::bigint"
              " FROM usage_records u JOIN runs r ON r.id = u.run_id WHERE u.run_id = $1", run)[0]
    check_eq(u[0], u[2], "gpu_seconds = kept part + lost part", u)
    check_eq(u[3], u[4], "lost part = 4 GPUs x (shrink - start)", u)
    check_eq(u[1], "8", "usage_records.gpus: the GPUs held at the end")
    # the usage report (sreport-like) counts the lost part too
    st, _, rep = c.api("GET", "/v1/usage", token=S["user"])
    check_eq(st, 200, rep)
    check_eq(sum(r["gpu_seconds"] for r in rep["items"]),
             int(val(c, "SELECT sum(gpu_seconds) FROM usage_records")), "GET /v1/usage = records", rep)


def test_killed_agent_shrinks_then_stops_the_part_when_back(c):
    """A SIGKILLed agent: its node goes DOWN after the heartbeat timeout and
    the elastic run shrinks; its process outlived the agent, so when the
    agent comes back (node up again) it is told to stop that part."""
    setup(c)
    healthy = [n for n in NODES if val(c, "SELECT drain FROM nodes WHERE name = $1", n) == "f"]
    check_eq(len(healthy), 2, "two healthy nodes left", healthy)
    c.sql("UPDATE settings SET value = '3' WHERE key = 'heartbeat_timeout'")
    try:
        jid = submit(c, 2, 1)
        run, rk = start_run(c, jid, 2)
        before = {r: pids(run, r)[0] for r in range(2)}
        lost = [n for n, r in rk.items() if r == 1][0]
        kept = [n for n in rk if n != lost][0]
        c.stop_process(S["agents"][lost], signal.SIGKILL)
        t0 = time.monotonic()
        wait_shrunk(c, run, 1)
        print("killed agent on %s: DOWN and run %s shrunk in %.2fs" % (lost, run, time.monotonic() - t0))
        check_eq(val(c, "SELECT up FROM nodes WHERE name = $1", lost), "f", "node DOWN")
        check_eq(ranks(c, run), {kept: 0}, "rank 0 kept")
        check(alive(before[1]), "the orphaned part outlives its agent")
        start_agent(c, lost)
        c.wait_until(lambda: not alive(before[1]), 15, "the returning agent stops its dropped part")
        c.wait_until(lambda: val(c, "SELECT up FROM nodes WHERE name = $1", lost) == "t", 10, "node up again")
        check(alive(before[0]), "rank 0 runs on")
        check_eq(val(c, "SELECT state FROM runs WHERE id = $1", run), "RUNNING")
        open(os.path.join(S["out"], "release.%s" % run), "w").close()
        c.wait_until(lambda: val(c, "SELECT state FROM jobs WHERE id = $1", jid) in ("COMPLETED", "FAILED"),
                     15, "job %s ends" % jid)
        check_eq(val(c, "SELECT state FROM jobs WHERE id = $1", jid), "COMPLETED", "job state")
    finally:
        c.sql("UPDATE settings SET value = '30' WHERE key = 'heartbeat_timeout'")


def test_second_fault_below_min_requeues(c):
    setup(c)
    healthy = [n for n in NODES if val(c, "SELECT drain FROM nodes WHERE name = $1", n) == "f"]
    check_eq(len(healthy), 2, "two healthy nodes left", healthy)
    jid = submit(c, 2, 1)
    run, rk = start_run(c, jid, 2)
    before = {r: pids(run, r)[0] for r in range(2)}
    first = [n for n, r in rk.items() if r == 0][0]  # rank 0 too may go: MASTER_ADDR is then stale
    other = [n for n in rk if n != first][0]
    # The part on the faulty GPU dies (exit 7) before the scheduler acts
    # (held with SIGSTOP): a node failure, not the job's; the run shrinks.
    os.kill(S["sched"].pid, signal.SIGSTOP)
    try:
        fault(c, first, 0)
        c.wait_until(lambda: val(c, "SELECT healthy FROM gpus g JOIN nodes n ON n.id = g.node_id"
                                    " WHERE n.name = $1 AND g.idx = 0", first) == "f", 10, "GPU 0 unhealthy")
        open(os.path.join(S["out"], "crash.%s.0" % run), "w").close()
        c.wait_until(lambda: val(c, "SELECT exit_code FROM run_node_status s JOIN nodes n ON n.id = s.node_id"
                                    " WHERE s.run_id = $1 AND n.name = $2", run, first) == "7", 10,
                     "rank 0's part reported exit 7")
        check_eq(val(c, "SELECT state FROM runs WHERE id = $1", run), "RUNNING", "the run did not fail")
    finally:
        os.kill(S["sched"].pid, signal.SIGCONT)
    wait_shrunk(c, run, 1)
    check_eq(ranks(c, run), {other: 1}, "one node left, rank kept")
    check(alive(before[1]), "rank 1 runs on")
    check_eq(val(c, "SELECT state FROM runs WHERE id = $1", run), "RUNNING")
    fault(c, other, 1, xid=48)
    c.wait_until(lambda: val(c, "SELECT state FROM runs WHERE id = $1", run) not in ("RUNNING", "STARTING"),
                 15, "run %s stopped below min_nodes" % run)
    check_eq(val(c, "SELECT stop_reason FROM runs WHERE id = $1", run), "node_fail")
    c.wait_until(lambda: val(c, "SELECT retries FROM jobs WHERE id = $1", jid) == "1", 15,
                 "job %s requeued" % jid)
    check_eq(val(c, "SELECT state FROM runs WHERE id = $1", run), "NODE_FAIL")
    check_eq(val(c, "SELECT state FROM jobs WHERE id = $1", jid), "PENDING", "requeued")
    check_eq(val(c, "SELECT count(*) FROM events WHERE run_id = $1 AND kind = 'run.shrunk'", run), "1")
    c.wait_until(lambda: not alive(before[1]), 10, "rank 1's process stopped")
    check_eq(val(c, "SELECT count(*) FROM run_allocations WHERE live AND run_id = $1", run), "0")


if __name__ == "__main__":
    harness.main(api=False)
