"""Time and failure end to end through the database, with a real
muster-scheduler: time limits (agent confirms, and agent silent), heartbeat
timeout -> NODE_FAIL -> requeue while retries remain, else FAILED; drain;
preemption with requeue; cancel; and usage equal to the sum over runs.

The tests share one cluster and one scheduler; each uses its own GPU model
so their jobs never land on one another's nodes."""
import time

import harness
from harness import check, check_eq
from test_sched_common import (sql, val, add_nodes, agent_end, agent_running, check_invariants, job,
                               live_run, q, start_scheduler, submit, wait_live_run, wait_state)

SCHED = None


def setup(c):
    global SCHED
    if SCHED is None:
        harness.require_binary("muster-scheduler")
        # A class with a short grace period so stops resolve in seconds.
        sql(c, "INSERT INTO priority_classes (name, priority, preemptible, grace_period)"
              " VALUES ('quick', 100, true, 1), ('urgent', 5000, false, 1),"
              " ('scavenger', 1, true, 1)")
        SCHED = start_scheduler(c, "sched", "--stop-margin", "1s", "--tick", "200ms")
        c.wait_until(lambda: q(c, "SELECT cycles FROM scheduler_lease")[0][0] != "0", 10,
                     "the scheduler's first cycle")


def test_time_limit_agent_confirms(c):
    setup(c)
    add_nodes(c, "tl", 1, gpus=2, model="tl")
    (j,) = submit(c, gpus=2, model="tl", time_limit=2, klass="quick")
    run, _, _ = wait_live_run(c, j)
    agent_running(c, run)
    c.wait_until(lambda: live_run(c, j)[1] == "STOPPING", 6, "timeout stop order")
    check_eq(live_run(c, j)[2], "timeout")
    agent_end(c, run, exit_code=143)
    st = wait_state(c, j, "TIMEOUT", 5)
    check_eq(st["end_reason"], "timeout")
    check_eq(val(c, "SELECT state FROM runs WHERE id = $1", run), "TIMEOUT")
    check_eq(val(c, "SELECT count(*) FROM run_allocations WHERE run_id = $1 AND live", run), "0")


def test_time_limit_agent_silent(c):
    setup(c)
    add_nodes(c, "ts", 1, gpus=1, model="ts")
    (j,) = submit(c, gpus=1, model="ts", time_limit=1, klass="quick")
    run, _, _ = wait_live_run(c, j)
    agent_running(c, run)
    # No agent confirms: the scheduler ends it after grace (1 s) + margin (1 s).
    t0 = time.monotonic()
    wait_state(c, j, "TIMEOUT", 10)
    check(time.monotonic() - t0 >= 1.5, "ended before grace + margin")
    check_eq(val(c, "SELECT count(*) FROM events WHERE run_id = $1 AND kind = 'run.stop_expired'",
                         run), "1")


def test_heartbeat_timeout_requeue_then_fail(c):
    setup(c)
    sql(c, "UPDATE settings SET value = '2' WHERE key = 'heartbeat_timeout'")
    try:
        names = add_nodes(c, "hb", 3, gpus=4, model="hb", heartbeat=True)
        (j,) = submit(c, nodes=2, gpus=4, model="hb", klass="quick", retries=1)
        run1, _, _ = wait_live_run(c, j)
        agent_running(c, run1)
        used = [r[0] for r in sql(c, "SELECT DISTINCT n.name FROM run_allocations a JOIN nodes n"
                                    " ON n.id = a.node_id WHERE a.run_id = $1", run1)]
        dead = used[0]
        alive = [n for n in names if n != dead]

        def beat():
            q(c, "UPDATE nodes SET last_heartbeat = now() WHERE name IN (%s)"
              % ",".join("'%s'" % n for n in alive))

        # The dead node stops heartbeating; the others keep going.
        deadline = time.monotonic() + 15
        while job(c, j)["retries"] == 0 or job(c, j)["state"] == "PENDING":
            check(time.monotonic() < deadline, "no requeue after heartbeat loss: %s" % job(c, j))
            beat()
            time.sleep(0.2)
        check_eq(val(c, "SELECT up FROM nodes WHERE name = $1", dead), "f", "dead node DOWN")
        check_eq(val(c, "SELECT state FROM runs WHERE id = $1", run1), "NODE_FAIL")
        check_eq(val(c, "SELECT count(*) FROM events WHERE kind = 'node.down' AND"
                             " node_id = (SELECT id FROM nodes WHERE name = $1)", dead), "1")
        run2, _, _ = wait_live_run(c, j)
        check(run2 != run1, "a new run")
        check_eq(val(c, "SELECT attempt FROM runs WHERE id = $1", run2), "2")
        check_eq(val(c, "SELECT count(*) FROM run_allocations a JOIN nodes n ON n.id = a.node_id"
                             " WHERE a.run_id = $1 AND n.name = $2", run2, dead), "0",
                 "the new run avoids the DOWN node")
        check_eq(job(c, j)["retries"], 1)
        # Second loss: no retries left -> FAILED.
        agent_running(c, run2)
        dead2 = alive[0]
        alive = alive[1:]
        deadline = time.monotonic() + 15
        while job(c, j)["state"] != "FAILED":
            check(time.monotonic() < deadline, "not FAILED after the second loss: %s" % job(c, j))
            beat()
            time.sleep(0.2)
        check_eq(job(c, j)["end_reason"], "node_fail")
        check_eq(val(c, "SELECT up FROM nodes WHERE name = $1", dead2), "f")
    finally:
        sql(c, "UPDATE settings SET value = '30' WHERE key = 'heartbeat_timeout';"
              " UPDATE nodes SET last_heartbeat = NULL WHERE name LIKE 'hb-%'")


def _beat_until(c, names, cond, timeout, what):
    """Heartbeats `names` every 0.2 s until cond() holds."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        check(time.monotonic() < deadline, what)
        q(c, "UPDATE nodes SET last_heartbeat = now() WHERE name IN (%s)" % ",".join("'%s'" % n for n in names))
        time.sleep(0.2)


def _ranks(c, run):
    return dict(sql(c, "SELECT n.name, min(a.node_rank)::text FROM run_allocations a JOIN nodes n"
                       " ON n.id = a.node_id WHERE a.run_id = $1 AND a.live GROUP BY n.name", run))


def test_elastic_shrinks_on_heartbeat_loss(c):
    """An elastic gang (3 nodes, min_nodes 2) loses a node to a heartbeat
    timeout: the same run goes on on the other two with their ranks, the
    lost node's GPUs are free at once (another job gets them when the node
    is back), run.shrunk says from/to/lost, and the run's GPU-seconds are
    the kept part to the end plus the lost part to the shrink. Losing two
    of three (1 < min_nodes) stops and requeues as for a rigid gang."""
    setup(c)
    sql(c, "UPDATE settings SET value = '2' WHERE key = 'heartbeat_timeout'")
    names = add_nodes(c, "el", 4, gpus=2, model="el", heartbeat=True)
    try:
        (j,) = submit(c, nodes=3, min_nodes=2, gpus=2, model="el", klass="quick", retries=1)
        run, _, _ = wait_live_run(c, j)
        agent_running(c, run, started_ago=20)
        wait_state(c, j, "RUNNING", 5)
        ranks = _ranks(c, run)
        check_eq(sorted(ranks.values()), ["0", "1", "2"], "three ranks", ranks)
        dead = [n for n, r in ranks.items() if r == "1"][0]
        spare = [n for n in names if n not in ranks][0]
        alive = [n for n in names if n != dead]
        t0 = time.monotonic()
        _beat_until(c, alive, lambda: val(c, "SELECT count(*) FROM events WHERE run_id = $1"
                                             " AND kind = 'run.shrunk'", run) == "1",
                    15, "no run.shrunk after %s stopped heartbeating" % dead)
        print("elastic: %s lost, run %s shrunk %.2fs after its last heartbeat" % (dead, run,
                                                                                  time.monotonic() - t0))
        check_eq(val(c, "SELECT up FROM nodes WHERE name = $1", dead), "f", "lost node DOWN")
        check_eq(live_run(c, j), (run, "RUNNING", ""), "the same run goes on, not stopped")
        check_eq(job(c, j)["state"], "RUNNING")
        check_eq(val(c, "SELECT nodes FROM runs WHERE id = $1", run), "2", "runs.nodes = kept count")
        kept = _ranks(c, run)
        check_eq(kept, {n: r for n, r in ranks.items() if n != dead}, "survivors keep their ranks")
        check_eq(val(c, "SELECT count(*) FROM run_allocations a JOIN nodes n ON n.id = a.node_id"
                        " WHERE n.name = $1 AND a.live", dead), "0", "lost node's GPUs freed")
        ev = sql(c, "SELECT data->>'from', data->>'to', data->'lost'->>0, jsonb_array_length(data->'lost'),"
                    " reason FROM events WHERE run_id = $1 AND kind = 'run.shrunk'", run)[0]
        check_eq(ev, ("3", "2", dead, "1", "node_fail"), "run.shrunk event")
        check_eq(val(c, "SELECT count(*) FROM runs WHERE job_id = $1", j), "1", "no second run")
        # The lost part is charged from the start to the shrink: 2 GPUs x >= 20 s.
        lost_s = sql(c, "SELECT shrunk_gpu_seconds, round(2 * extract(epoch FROM shrunk_at - started_at))::bigint"
                        " FROM runs WHERE id = $1", run)[0]
        check_eq(lost_s[0], lost_s[1], "shrunk_gpu_seconds = lost GPUs x (shrink - start)")
        check(int(lost_s[0]) >= 40, "lost part charged", lost_s)
        check_invariants(c)

        # The node comes back: its freed GPUs take a new 2-node job with the spare node.
        alive = names
        q(c, "UPDATE nodes SET up = true, last_heartbeat = now() WHERE name = '%s';"
             " NOTIFY muster_sched, 'node:x'" % dead)
        (j2,) = submit(c, nodes=2, gpus=2, model="el", klass="quick")
        run2 = _beat_until(c, alive, lambda: live_run(c, j2), 10, "the 2-node job starts")[0]
        check_eq(sorted(_ranks(c, run2)), sorted([dead, spare]), "it runs on the freed GPUs")
        agent_end(c, run2, 0)
        _beat_until(c, alive, lambda: job(c, j2)["state"] == "COMPLETED", 10, "job %s completes" % j2)

        # The shrunk run completes normally: usage = kept part + lost part.
        agent_end(c, run, 0)
        _beat_until(c, alive, lambda: job(c, j)["state"] == "COMPLETED", 10, "job %s completes" % j)
        got = sql(c, "SELECT u.gpu_seconds, u.gpus, round(4 * extract(epoch FROM r.ended_at - r.started_at))::bigint"
                     " + r.shrunk_gpu_seconds, r.state FROM usage_records u JOIN runs r ON r.id = u.run_id"
                     " WHERE u.run_id = $1", run)[0]
        check_eq(got[0], got[2], "usage = 4 GPUs to the end + the lost part", got)
        check_eq((got[1], got[3]), ("4", "COMPLETED"), "kept GPUs; run state")
        check(int(got[0]) >= 6 * 20, "at least 6 GPUs x 20 s", got)

        # Two of three lost at once: 1 < min_nodes -> stop and requeue.
        (j3,) = submit(c, nodes=3, min_nodes=2, gpus=2, model="el", klass="quick", retries=1)
        run3 = _beat_until(c, alive, lambda: live_run(c, j3), 10, "job %s starts" % j3)[0]
        agent_running(c, run3)
        ranks3 = _ranks(c, run3)
        gone = [n for n, r in ranks3.items() if r != "0"]
        alive = [n for n in names if n not in gone]
        _beat_until(c, alive, lambda: live_run(c, j3) and live_run(c, j3)[1] == "STOPPING", 15,
                    "no stop after %s stopped heartbeating" % gone)
        check_eq(live_run(c, j3), (run3, "STOPPING", "node_fail"), "below min_nodes: stopped")
        check_eq(val(c, "SELECT count(*) FROM events WHERE run_id = $1 AND kind = 'run.shrunk'", run3), "0")
        agent_end(c, run3, exit_code=143)
        _beat_until(c, alive, lambda: job(c, j3)["retries"] == 1, 10, "job %s requeued" % j3)
        check_eq(val(c, "SELECT state FROM runs WHERE id = $1", run3), "NODE_FAIL")
        check_invariants(c)
    finally:
        sql(c, "UPDATE settings SET value = '30' WHERE key = 'heartbeat_timeout';"
              " UPDATE nodes SET last_heartbeat = NULL WHERE name LIKE 'el-%'")


def test_elastic_shrink_completes_when_the_rest_had_exited(c):
    """The kept node already reported its part exited 0 while the lost one
    held the run open: the shrink completes the run (no report is coming)."""
    setup(c)
    sql(c, "UPDATE settings SET value = '2' WHERE key = 'heartbeat_timeout'")
    names = add_nodes(c, "ex", 2, gpus=1, model="ex", heartbeat=True)
    try:
        (j,) = submit(c, nodes=2, min_nodes=1, gpus=1, model="ex", klass="quick")
        run, _, _ = wait_live_run(c, j)
        agent_running(c, run)
        ranks = _ranks(c, run)
        done = [n for n, r in ranks.items() if r == "0"][0]
        lost = [n for n in names if n != done][0]
        # what muster-api records when rank 0's agent reports EXITED 0
        sql(c, "INSERT INTO run_node_status (run_id, node_id, phase, exit_code)"
              " SELECT $1, id, 'EXITED', 0 FROM nodes WHERE name = $2", run, done)
        _beat_until(c, [done], lambda: job(c, j)["state"] == "COMPLETED", 15,
                    "job %s completes once %s is shrunk off" % (j, lost))
        check_eq(val(c, "SELECT state || ' ' || nodes FROM runs WHERE id = $1", run), "COMPLETED 1")
        check_eq(val(c, "SELECT count(*) FROM events WHERE run_id = $1 AND kind = 'run.shrunk'", run), "1")
    finally:
        sql(c, "UPDATE settings SET value = '30' WHERE key = 'heartbeat_timeout';"
              " UPDATE nodes SET last_heartbeat = NULL WHERE name LIKE 'ex-%'")


def test_drain(c):
    setup(c)
    a, b = add_nodes(c, "dr", 2, gpus=8, model="dr")
    sql(c, "UPDATE nodes SET drain = true, drain_reason = 'maintenance' WHERE name = $1;"
          " NOTIFY muster_sched, 'node:x'", a)
    j1, j2 = submit(c, 2, gpus=8, model="dr")
    run1, _, _ = wait_live_run(c, j1)
    time.sleep(1.0)  # several ticks
    check_eq(job(c, j2)["state"], "PENDING", "nothing lands on the drained node")
    check_eq(val(c, "SELECT count(*) FROM run_allocations x JOIN nodes n ON n.id = x.node_id"
                         " WHERE x.live AND n.name = $1", a), "0")
    # Draining the busy node too: its run continues.
    sql(c, "UPDATE nodes SET drain = true WHERE name = $1; NOTIFY muster_sched, 'node:x'", b)
    time.sleep(0.6)
    check_eq(live_run(c, j1)[1], "STARTING", "the run on a draining node continues")
    # Resume the first node: the waiting job starts there.
    sql(c, "UPDATE nodes SET drain = false WHERE name = $1; NOTIFY muster_sched, 'node:x'", a)
    wait_live_run(c, j2, 5)


def test_fabric_fault_stops_multinode_runs(c):
    """A training-fabric link down (nodes.fabric_fault, set with the drain by
    muster-api when an agent reports it) is a node failure for the gangs
    that span the node: they are stopped and requeued elsewhere. A one-node
    run there keeps running: it does not use the fabric."""
    setup(c)
    a, b, spare = add_nodes(c, "fb", 3, gpus=4, model="fb")
    sql(c, "UPDATE nodes SET drain = true, drain_reason = 'later' WHERE name = $1;"
          " NOTIFY muster_sched, 'node:x'", spare)
    (gang,) = submit(c, nodes=2, gpus=2, model="fb", klass="quick", retries=1)
    grun, _, _ = wait_live_run(c, gang)
    agent_running(c, grun)
    (solo,) = submit(c, nodes=1, gpus=2, model="fb", klass="quick")
    srun, _, _ = wait_live_run(c, solo)
    agent_running(c, srun)
    node = val(c, "SELECT n.name FROM run_allocations x JOIN nodes n ON n.id = x.node_id"
                  " WHERE x.run_id = $1 AND x.live LIMIT 1", srun)
    check(node in (a, b), "the one-node run shares a node with the gang", node)
    # What store_agent_fault does for a link down: mark, drain, notify.
    sql(c, "UPDATE nodes SET fabric_fault = 'fabric link ib0 down', drain = true,"
          " drain_reason = 'fabric link ib0 down' WHERE name = $1;"
          " NOTIFY muster_sched, 'node:x'", node)
    c.wait_until(lambda: live_run(c, gang) and live_run(c, gang)[1] == "STOPPING", 10,
                 "stop order for the gang on the faulted node")
    check_eq(live_run(c, gang)[2], "node_fail")
    agent_end(c, grun, exit_code=143)
    check_eq(wait_state(c, gang, "PENDING", 5)["retries"], 1, "requeued, one retry used")
    check_eq(live_run(c, solo), (srun, "RUNNING", ""), "the one-node run is left alone")
    # The spare node back: the gang reruns without the faulted node.
    sql(c, "UPDATE nodes SET drain = false WHERE name = $1; NOTIFY muster_sched, 'node:x'", spare)
    run2, _, _ = wait_live_run(c, gang)
    check_eq(val(c, "SELECT count(*) FROM run_allocations x JOIN nodes n ON n.id = x.node_id"
                    " WHERE x.run_id = $1 AND n.name = $2", run2, node), "0")
    agent_end(c, srun)
    wait_state(c, solo, "COMPLETED", 5)


def test_preemption_requeues(c):
    setup(c)
    add_nodes(c, "pr", 1, gpus=8, model="pr")
    (low,) = submit(c, gpus=8, model="pr", klass="scavenger", user="bob")
    run_low, _, _ = wait_live_run(c, low)
    agent_running(c, run_low)
    (high,) = submit(c, gpus=8, model="pr", klass="urgent", user="carol")
    c.wait_until(lambda: live_run(c, low) and live_run(c, low)[1] == "STOPPING", 10,
                 "preemption order for the low job")
    check_eq(live_run(c, low)[2], "preempt")
    check_eq(job(c, high)["state"], "PENDING", "high waits for the GPUs")
    agent_end(c, run_low, exit_code=143)
    wait_live_run(c, high, 5)
    st = job(c, low)
    check_eq(st["state"], "PENDING", "the preempted job is requeued")
    check_eq(st["exit_code"], None, "a requeued job has no exit code")
    check_eq(st["retries"], 0, "preemption does not use up retries")
    check_eq(val(c, "SELECT state FROM runs WHERE id = $1", run_low), "PREEMPTED")
    check_eq(val(c, "SELECT count(*) FROM events WHERE job_id = $1 AND kind = 'job.requeued'",
                         low), "1")


def test_cancel_running(c):
    setup(c)
    add_nodes(c, "cx", 1, gpus=1, model="cx")
    (j,) = submit(c, gpus=1, model="cx", klass="quick")
    run, _, _ = wait_live_run(c, j)
    agent_running(c, run)
    wait_state(c, j, "RUNNING", 5)
    # What POST /v1/jobs/{id}/cancel does to a running job:
    sql(c, "UPDATE runs SET state = 'STOPPING', stop_reason = 'cancel', stop_requested_at = now()"
          " WHERE id = $1; NOTIFY muster_sched, 'cancel:0'", run)
    agent_end(c, run, exit_code=143)
    check_eq(wait_state(c, j, "CANCELLED", 5)["end_reason"], "cancelled")


def test_completed_and_failed(c):
    setup(c)
    add_nodes(c, "cf", 2, gpus=2, model="cf")
    ok, bad = submit(c, 2, gpus=2, model="cf", klass="quick")
    r1, _, _ = wait_live_run(c, ok)
    r2, _, _ = wait_live_run(c, bad)
    agent_running(c, r1)
    agent_running(c, r2)
    agent_end(c, r1, 0)
    agent_end(c, r2, 3)
    check_eq(wait_state(c, ok, "COMPLETED")["exit_code"], "0")
    check_eq(wait_state(c, bad, "FAILED")["exit_code"], "3")


def test_usage_equals_runs(c):
    setup(c)
    sql(c, "INSERT INTO tenants (name, parent_id, path) VALUES ('acct', 1, 'root/acct')")
    add_nodes(c, "us", 2, gpus=8, model="us")
    jobs = submit(c, 3, nodes=1, gpus=4, model="us", tenant="acct", user="dave", klass="quick")
    durations = [37, 61, 3600]
    for jid, d in zip(jobs, durations):
        run, _, _ = wait_live_run(c, jid)
        # The agent reports exact start and end times.
        sql(c, "UPDATE runs SET state = 'COMPLETED', exit_code = 0,"
              " started_at = now() - make_interval(secs => $2::int), ended_at = now()"
              " WHERE id = $1; NOTIFY muster_sched, 'run:0'", run, d)
    for jid in jobs:
        wait_state(c, jid, "COMPLETED")
    got = sql(c, "SELECT run_id, gpu_seconds FROM usage_records WHERE job_id = ANY($1::bigint[])"
                " ORDER BY job_id", "{%s}" % ",".join(map(str, jobs)))
    check_eq([int(g) for _, g in got], [4 * d for d in durations], "GPU-seconds per run")
    check_eq(val(c, "SELECT sum(gpu_seconds) FROM usage_records u JOIN tenants t"
                         " ON t.id = u.tenant_id WHERE t.name = 'acct'"), str(4 * sum(durations)))
    # And over every run that ended anywhere in this file: the same sum.
    check_eq(val(c, "SELECT sum(gpu_seconds) FROM usage_records"),
             val(c, "SELECT sum(round(nodes * gpus_per_node * extract(epoch FROM ended_at -"
                         " coalesce(started_at, created_at)))::bigint + shrunk_gpu_seconds)"
                         " FROM runs WHERE NOT live"),
             "usage_records vs runs")
    check_eq(val(c, "SELECT count(*) FROM runs WHERE NOT live AND id NOT IN"
                         " (SELECT run_id FROM usage_records)"), "0", "every ended run accounted")
    dec = float(val(c, "SELECT value FROM usage_decayed d JOIN tenants t ON t.id = d.tenant_id"
                            " WHERE t.name = 'acct' AND d.user_name = 'dave'"))
    check(abs(dec - 4 * sum(durations)) < 1.0, "decayed usage %.1f vs %d (just written)"
          % (dec, 4 * sum(durations)))


def test_invariants_hold(c):
    setup(c)
    check_invariants(c)
    check(SCHED.poll() is None, "the scheduler is still running")


if __name__ == "__main__":
    harness.main()
