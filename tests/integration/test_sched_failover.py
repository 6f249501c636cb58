"""Leader election and fencing with real muster-scheduler processes on a real
PostgreSQL: kill -9 of the leader during a submit stream, a SIGSTOPped leader
fenced by a standby, and a PostgreSQL restart in the middle of a stream."""
import signal
import subprocess
import time

import harness
from harness import Cluster, check, check_eq
from test_sched_common import (sql, val, Stream, add_nodes, check_invariants, lease, leader_proc, q,
                               start_scheduler, wait_leader)


def wait_all_scheduled(c, ids, timeout=20):
    """Every acknowledged job exists, and each gets a run once the (simulated)
    agents finish what runs: nothing acknowledged is lost or stuck."""
    check_eq(int(val(c, "SELECT count(*) FROM jobs WHERE id = ANY($1::bigint[])",
                     "{%s}" % ",".join(map(str, ids)))), len(ids), "acknowledged jobs present")

    def drained():
        q(c, "UPDATE runs SET state = 'COMPLETED', exit_code = 0, ended_at = now()"
             " WHERE live AND ended_at IS NULL")
        q(c, "NOTIFY muster_sched, 'run:0'")
        return q(c, "SELECT count(*) FROM jobs WHERE state IN ('PENDING', 'STARTING', 'RUNNING')"
                    " OR EXISTS (SELECT 1 FROM runs WHERE live)")[0][0] == "0"
    c.wait_until(drained, timeout, "every job run to completion")
    check_eq(int(val(c, "SELECT count(*) FROM jobs WHERE id = ANY($1::bigint[]) AND state = 'COMPLETED'",
                     "{%s}" % ",".join(map(str, ids)))), len(ids), "acknowledged jobs completed")


def test_kill9_failover():
    harness.require_binary("muster-scheduler")
    with Cluster() as c:
        add_nodes(c, "k", 16, gpus=8, model="k")
        a = start_scheduler(c, "sched-a")
        b = start_scheduler(c, "sched-b")
        first = wait_leader(c, [a, b])
        other = b if first is a else a
        e1 = lease(c)["epoch"]
        with Stream(c, "k") as s:
            c.wait_until(lambda: len(s.acked) >= 10, 15, "10 submits before the kill")
            t0 = time.monotonic()
            first.send_signal(signal.SIGKILL)
            first.wait()
            # Failover = kill -9 until the new leader has committed a cycle.
            c.wait_until(lambda: lease(c)["epoch"] > e1 and leader_proc(c, [other]) and
                         q(c, "SELECT count(*) FROM scheduler_lease WHERE"
                                 " last_cycle_at > acquired_at")[0][0] == "1", 10, "takeover")
            took = time.monotonic() - t0
            print("failover after kill -9: %.3f s (epoch %d -> %d)" % (took, e1, lease(c)["epoch"]))
            check(took < 3.0, "failover took %.3f s" % took)
            n = len(s.acked)
            c.wait_until(lambda: len(s.acked) >= n + 10, 15, "10 submits after the kill")
        wait_all_scheduled(c, s.acked)
        check_invariants(c)
        check(int(val(c, "SELECT count(*) FROM runs WHERE epoch = $1", lease(c)["epoch"])) > 0,
              "the new leader stamped its epoch on runs")
        check_eq(val(c, "SELECT count(DISTINCT epoch) FROM runs WHERE epoch NOT IN ($1, $2)",
                             e1, lease(c)["epoch"]), "0", "only the two reigns wrote runs")


def test_sigstop_fencing():
    harness.require_binary("muster-scheduler")
    with Cluster() as c:
        add_nodes(c, "f", 8, gpus=8, model="f")
        a = start_scheduler(c, "sched-a")
        b = start_scheduler(c, "sched-b")
        old = wait_leader(c, [a, b])
        new = b if old is a else a
        l0 = lease(c)
        old_backend = l0["pid"]
        with Stream(c, "f") as s:
            c.wait_until(lambda: len(s.acked) >= 10, 15, "submits before the stop")
            t0 = time.monotonic()
            old.send_signal(signal.SIGSTOP)
            try:
                c.wait_until(lambda: leader_proc(c, [new]), 10, "the standby takes over")
                took = time.monotonic() - t0
                print("takeover from a SIGSTOPped leader: %.3f s" % took)
                check(took < 5.0, "takeover took %.3f s (lease 3 s)" % took)
                # The stale leader's session is gone: it can never write again.
                c.wait_until(lambda: q(c, "SELECT count(*) FROM pg_stat_activity WHERE pid = %d"
                                         % old_backend)[0][0] == "0", 5, "stale session terminated")
                n = len(s.acked)
                c.wait_until(lambda: len(s.acked) >= n + 10, 15, "submits under the new leader")
                old_runs = val(c, "SELECT count(*) FROM runs WHERE epoch = $1", l0["epoch"])
                old_events = val(c, "SELECT count(*) FROM events WHERE (data->>'epoch')::bigint"
                                         " = $1", l0["epoch"])
            finally:
                old.send_signal(signal.SIGCONT)
            # Woken up, it writes nothing more and steps down to standby.
            c.wait_until(lambda: "stepping down" in c.log_text(old_name(c, old)), 10,
                         "the old leader steps down")
            time.sleep(1.5)
            check_eq(val(c, "SELECT count(*) FROM runs WHERE epoch = $1", l0["epoch"]), old_runs,
                     "runs written by the fenced epoch after SIGCONT")
            check_eq(val(c, "SELECT count(*) FROM events WHERE (data->>'epoch')::bigint = $1",
                                 l0["epoch"]), old_events, "events of the fenced epoch")
            check(leader_proc(c, [new]) is new, "the new leader keeps leading")
            check(old.poll() is None, "the old leader process is still alive (as a standby)")
            check(int(val(c, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                                  "muster-scheduler:%s:%d" % (hostname(), old.pid))) == 1,
                  "the old leader reconnected as a standby")
        wait_all_scheduled(c, s.acked)
        check_invariants(c)


def test_postgres_restart():
    harness.require_binary("muster-scheduler")
    with Cluster() as c:
        add_nodes(c, "p", 8, gpus=8, model="p")
        a = start_scheduler(c, "sched-a")
        b = start_scheduler(c, "sched-b")
        wait_leader(c, [a, b])
        e1 = lease(c)["epoch"]
        with Stream(c, "p") as s:
            c.wait_until(lambda: len(s.acked) >= 10, 15, "submits before the restart")
            r = subprocess.run([c.devdb, "stop", "--dir", c.state_dir], capture_output=True, timeout=60)
            check_eq(r.returncode, 0, r.stderr)
            time.sleep(0.5)
            r = subprocess.run([c.devdb, "start", "--dir", c.state_dir], capture_output=True, timeout=60)
            check_eq(r.returncode, 0, r.stderr)
            c.wait_until(lambda: lease(c)["epoch"] > e1 and leader_proc(c, [a, b]), 15,
                         "a leader after the restart")
            n = len(s.acked)
            c.wait_until(lambda: len(s.acked) >= n + 10, 15, "submits after the restart")
        print("stream: %d acknowledged, %d failed during the restart" % (len(s.acked), s.errors))
        check(a.poll() is None and b.poll() is None, "both schedulers survived the restart")
        wait_all_scheduled(c, s.acked)
        check_invariants(c)


def hostname():
    import socket
    return socket.gethostname()


def old_name(c, p):
    for proc, name in c._procs:
        if proc is p:
            return name
    return ""


if __name__ == "__main__":
    harness.main()
