#!/usr/bin/python3
"""Scheduler daemon benchmarks (not in CTest; figures in bench/RESULTS.md).

  bench_scheduler.py latency  [--jobs 300]          submit -> assigned on an idle 100 x 8 cluster
  bench_scheduler.py failover [--rounds 5]          kill -9 of the leader -> first decision of the new one
  bench_scheduler.py cycle    [--nodes 10000 --pending 100000 --running 50000] [--promises]
                              [--cycles 3] [--changes 0 --change-every 0.5]
                                                    full cycles (load + core + commit) at scale; with
                                                    --changes, a stream of changes meanwhile (the
                                                    kept snapshot's steady state)
  bench_scheduler.py dryrun   [--nodes 10000 --pending 100000 --running 50000 --requests 400]
                                                    POST /v1/jobs/dry-run latency from the kept plan

Each starts its own PostgreSQL (tests/integration/harness.py) and real
muster-scheduler processes. MUSTER_BUILD_DIR names the build (default build/).

latency: a client LISTENs on muster_agents (what the scheduler NOTIFYs when
it commits an assignment), INSERTs a job + NOTIFY muster_sched exactly as the
API does, and times the round trip; the job's run is then ended so the
cluster stays idle. With --rest the job is POSTed to a real muster-api.
"""
import argparse
import ctypes
import os
import re
import select
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
os.environ.setdefault("MUSTER_BUILD_DIR", os.path.join(ROOT, "build"))

import harness  # noqa: E402
from test_sched_common import PG, add_nodes, lease, leader_proc, q, start_scheduler  # noqa: E402


class Listener(PG):
    """PG with LISTEN/notification wait (PQsocket + PQconsumeInput + PQnotifies)."""

    def __init__(self, url, channel):
        super().__init__(url)
        lib = PG._lib
        lib.PQsocket.argtypes = [ctypes.c_void_p]
        lib.PQconsumeInput.argtypes = [ctypes.c_void_p]
        lib.PQnotifies.restype = ctypes.c_void_p
        lib.PQnotifies.argtypes = [ctypes.c_void_p]
        lib.PQfreemem.argtypes = [ctypes.c_void_p]
        self.query("LISTEN " + channel)

    def drain(self):
        lib = PG._lib
        n = 0
        lib.PQconsumeInput(self.conn)
        while True:
            p = lib.PQnotifies(self.conn)
            if not p:
                return n
            lib.PQfreemem(p)
            n += 1

    def wait(self, timeout):
        fd = PG._lib.PQsocket(self.conn)
        deadline = time.monotonic() + timeout
        while True:
            if self.drain():
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            select.select([fd], [], [], left)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def bench_latency(args):
    with harness.Cluster(api=args.rest) as c:
        add_nodes(c, "idle", 100, gpus=8, model="h100")
        start_scheduler(c, "sched", "--log-level", "warn")
        c.wait_until(lambda: lease(c)["cycles"] > 0, 10, "first cycle")
        lis = Listener(c.db_url, "muster_agents")
        sub = PG(c.db_url)
        lat = []
        for i in range(args.jobs):
            lis.drain()
            t0 = time.perf_counter()
            if args.rest:
                st, _, b = c.api("POST", "/v1/jobs", {"tenant": "root", "nodes": 1, "gpus_per_node": 1,
                                                      "gpu_model": "h100", "command": ["true"]})
                assert st == 201, b
                jid = b["id"]
            else:
                jid = int(sub.query("INSERT INTO jobs (tenant_id, priority_class_id, nodes, gpus_per_node,"
                                    " gpu_model, time_limit, command) VALUES (1, 2, 1, 1, 'h100', 3600,"
                                    " '[\"true\"]') RETURNING id")[0][0])
                sub.query("NOTIFY muster_sched, 'submit:%d'" % jid)
            if not lis.wait(5):
                raise RuntimeError("job %d not assigned within 5 s" % jid)
            lat.append((time.perf_counter() - t0) * 1000.0)
            sub.query("UPDATE runs SET state = 'COMPLETED', exit_code = 0, ended_at = now()"
                      " WHERE job_id = %d; NOTIFY muster_sched, 'run:%d'" % (jid, jid))
            lis.wait(0.5)  # the finishing cycle's NOTIFY (GPUs freed), so the next job sees an idle cluster
        via = "POST /v1/jobs" if args.rest else "INSERT + NOTIFY"
        print("latency (%s -> assignment committed), idle 100 x 8, %d jobs: p50 %.2f ms, p90 %.2f ms,"
              " p99 %.2f ms, max %.2f ms" % (via, len(lat), pct(lat, 50), pct(lat, 90), pct(lat, 99),
                                            max(lat)))


def bench_failover(args):
    with harness.Cluster() as c:
        add_nodes(c, "fo", 100, gpus=8, model="h100")
        procs = [start_scheduler(c, "sched-%d" % i, "--log-level", "warn") for i in range(2)]
        times = []
        for r in range(args.rounds):
            c.wait_until(lambda: leader_proc(c, procs) and lease(c)["cycles"] > 0, 10, "a leader")
            old = leader_proc(c, procs)
            e = lease(c)["epoch"]
            t0 = time.perf_counter()
            old.send_signal(signal.SIGKILL)
            # first decision = the new leader's first committed cycle
            c.wait_until(lambda: q(c, "SELECT epoch > %d AND last_cycle_at >= acquired_at FROM"
                                      " scheduler_lease" % e)[0][0] == "t", 10, "takeover")
            times.append((time.perf_counter() - t0) * 1000.0)
            c.stop_process(old)
            procs.remove(old)
            procs.append(start_scheduler(c, "sched-r%d" % r, "--log-level", "warn"))
            time.sleep(0.5)
        print("failover (kill -9 -> new leader's first committed cycle), %d rounds: "
              "min %.0f ms, median %.0f ms, max %.0f ms" % (len(times), min(times), pct(times, 50),
                                                           max(times)))


def populate(c, args):
    """The 10k-node cluster of `cycle` (and `dryrun`): nodes, running runs, pending jobs."""
    N, P, R = args.nodes, args.pending, args.running
    t0 = time.monotonic()
    pg = PG(c.db_url)
    pg.query("INSERT INTO nodes (name, address, topology, gpu_model, gpu_count)"
             " SELECT 'n' || i, '10.' || (i / 65536) || '.' || (i / 256 %% 256) || '.' || (i %% 256),"
             " 'block-' || (i / 640) || '/rack-' || (i / 32), 'h100', 8"
             " FROM generate_series(0, %d) i" % (N - 1))
    pg.query("INSERT INTO gpus (node_id, idx, model) SELECT n.id, g, 'h100'"
             " FROM nodes n, generate_series(0, 7) g")
    # R running 1-GPU jobs spread over the nodes (R / N per node)
    per = max(1, (R + N - 1) // N)
    pg.query("INSERT INTO jobs (tenant_id, user_name, priority_class_id, state, nodes, gpus_per_node,"
             " gpu_model, time_limit, command, started_at)"
             " SELECT 1, 'u' || (i %% 50), 2, 'RUNNING', 1, 1, 'h100', 86400, '[\"x\"]', now()"
             " FROM generate_series(1, %d) i" % R)
    pg.query("INSERT INTO runs (job_id, attempt, epoch, state, nodes, gpus_per_node, time_limit,"
             " started_at) SELECT id, 1, 0, 'RUNNING', 1, 1, 86400,"
             " now() - make_interval(secs => (id % 3600)::int) FROM jobs")
    pg.query("INSERT INTO run_allocations (run_id, node_id, node_rank, gpu_index)"
             " SELECT r.id, (SELECT min(id) FROM nodes) + ((r.id - 1) %% %d), 0, ((r.id - 1) / %d)::int"
             " FROM runs r" % (N, N))
    # P pending jobs that need more GPUs than any node has free: a full
    # evaluation (priorities, backfill plan, reasons) with no start.
    need = 8 - per + 1 if per < 8 else 8
    pg.query("INSERT INTO jobs (tenant_id, user_name, priority_class_id, nodes, gpus_per_node,"
             " gpu_model, time_limit, command) SELECT 1, 'u' || (i %% 50), 2, 1 + (i %% 3 = 0)::int,"
             " %d, 'h100', 3600, '[\"x\"]' FROM generate_series(1, %d) i" % (need, P))
    if getattr(args, "reasons_written", False):  # cycle only
        # The reasons a previous leader left (what the core answers for these
        # jobs): a new leader's first cycle and the steady state then write
        # only what changes, not a backlog of 100k rows at 5,000 per cycle.
        # (Every job but the first few waits behind a waiting job of the same
        # GPUs: Priority. Before 2026-12-02 18:10 the core's answer flipped
        # with whether a node was free now, and this wrote Resources.)
        pg.query("UPDATE jobs SET pending_reason = 'Priority',"
                 " pending_message = 'waits behind higher-priority jobs that wait for the same GPUs'"
                 " WHERE state = 'PENDING'")
        pg.query("VACUUM jobs")
    if args.promises:
        # Exercise quota limits (tenant-wide and per model, never reached)
        # and runtime prediction (every user has a history).
        pg.query("INSERT INTO quotas (tenant_id, gpu_model, guaranteed_gpus, max_gpus)"
                 " VALUES (1, '', 0, 1000000), (1, 'h100', 0, 1000000)")
        pg.query("INSERT INTO user_runtimes (tenant_id, user_name, recent)"
                 " SELECT 1, 'u' || i, ARRAY[600 + i, 900 + i] FROM generate_series(0, 49) i")
    pg.query("ANALYZE")
    print("setup: %d nodes x 8 GPUs, %d running runs, %d pending (%d GPUs each) in %.1f s"
          % (N, R, P, need, time.monotonic() - t0))
    return pg


def changer(c, args, stop):
    """Every --change-every seconds, --changes row changes as a live cluster
    makes them: a quarter each submits, cancels of pending jobs, runs ended
    by their agents (the leader finishes them) and node rows rewritten (as
    heartbeats do), then one NOTIFY. Pending and running job ids are the
    populated ranges (1..R running, R+1..R+P pending)."""
    import random
    pg = PG(c.db_url)
    R, P = args.running, args.pending
    k = max(1, args.changes // 4)
    rnd = random.Random(1)
    while not stop.wait(args.change_every):
        cancel = ",".join(str(R + 1 + rnd.randrange(P)) for _ in range(k))
        end = ",".join(str(1 + rnd.randrange(R)) for _ in range(k))
        nodes = ",".join(str(1 + rnd.randrange(args.nodes)) for _ in range(k))
        pg.query("INSERT INTO jobs (tenant_id, user_name, priority_class_id, nodes, gpus_per_node, gpu_model,"
                 " time_limit, command) SELECT 1, 'u' || (i %% 50), 2, 1, 8, 'h100', 3600, '[\"x\"]'"
                 " FROM generate_series(1, %d) i" % k)
        pg.query("UPDATE jobs SET state = 'CANCELLED', ended_at = now() WHERE id IN (%s) AND state = 'PENDING'"
                 % cancel)
        pg.query("UPDATE runs SET state = 'COMPLETED', exit_code = 0, ended_at = now() WHERE id IN (%s)"
                 " AND live AND ended_at IS NULL" % end)
        pg.query("UPDATE nodes SET address = address WHERE id IN (%s)" % nodes)
        pg.query("NOTIFY muster_sched, 'run:0'")


def bench_cycle(args):
    import threading
    with harness.Cluster() as c:
        populate(c, args)
        stop = threading.Event()
        th = None
        if args.changes:
            th = threading.Thread(target=changer, args=(c, args, stop))
            th.start()
        la0 = os.getloadavg()[0]
        import resource
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            p = start_scheduler(c, "sched", "--max-cycles", str(args.cycles), "--tick", "100ms", "--full-every",
                                "0", "--log-level", "debug", *args.sched_arg)
            p.wait(timeout=600)
            # the scheduler's own CPU (the one child reaped here): steadier
            # than wall times on a loaded machine for comparing builds
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            print("scheduler CPU over its %d cycles: user %.2f s, system %.2f s"
                  % (args.cycles, ru1.ru_utime - ru0.ru_utime, ru1.ru_stime - ru0.ru_stime))
        finally:
            stop.set()
            if th:
                th.join()
        la1 = os.getloadavg()[0]
        log = c.log_text("sched")
        cyc = re.findall(r"reasons=(\d+) load_ms=([\d.]+) core_ms=([\d.]+) write_ms=([\d.]+)"
                         r" total_ms=([\d.]+) hint=(\w+) load=(\w+) changed_jobs=(\d+) changed_runs=(\d+)"
                         r" changed_nodes=(\d+)", log)
        stats = q(c, "SELECT last_cycle_ms, last_load_ms, last_commit_ms, last_pending, last_running"
                     " FROM scheduler_lease")[0]
        for i, (re_, lo, co, wr, to, hint, how, cj, cr, cn) in enumerate(cyc):
            print("cycle %d: load %s ms (%s%s), core %s ms, write %s ms (%s pending reasons changed),"
                  " total %s ms (+ COMMIT)%s" % (i + 1, lo, how,
                                                 "" if how != "changes" else
                                                 ": %s jobs, %s runs, %s nodes" % (cj, cr, cn),
                                                 co, wr, re_, to,
                                                 ", kept view + hint" if hint == "yes" else ""))
        phases = re.findall(r"phases: (.*)", log)
        for ph in phases if args.phases else phases[-5:]:
            print("phases (last cycles): " + ph)
        for ph in re.findall(r"kept snapshot: (.*)", log)[-5:]:
            print("refresh (last cycles): " + ph)
        kept = [c_ for c_ in cyc if c_[6] == "changes"]
        steady = [c_ for c_ in kept if int(c_[0]) < 5000]
        for what, cs in (("steady cycles (kept snapshot, under the 5,000-reason cap)", steady),
                         ("all kept-snapshot cycles (reason writes at the cap included)", kept)):
            if not cs:
                continue

            def med(k):
                xs = sorted(float(c_[k]) for c_ in cs)
                return xs[len(xs) // 2]
            print("%s, %d: median load %.1f ms, core %.1f ms, write %.1f ms, total %.1f ms;"
                  " load average %.1f -> %.1f" % (what, len(cs), med(1), med(2), med(3), med(4), la0, la1))
        print("last cycle recorded: %s ms (load %s ms, decisions write %s ms), pending %s, running %s"
              % stats)
        print("jobs updates: %s, of which HOT %s" % tuple(q(c, "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
                                                         " WHERE relname = 'jobs'")[0]))
        if not cyc:
            print(log[-3000:])


def bench_dryrun(args):
    """POST /v1/jobs/dry-run at scale: the first (loads the plan), then warm
    ones one at a time and from 4 threads, then with the leader planning
    again (a submit every 2 s bumps the generation) meanwhile."""
    import threading
    with harness.Cluster(api=True, api_env={"MUSTER_LOG_LEVEL": "debug"}) as c:
        pg = populate(c, args)
        start_scheduler(c, "sched", "--log-level", "warn")
        c.wait_until(lambda: lease(c)["cycles"] > 0, 60, "first cycle")
        body = {"tenant": "root", "nodes": 2, "gpus_per_node": 4, "gpu_model": "h100", "command": ["x"]}

        def one():
            t0 = time.perf_counter()
            st, _, b = c.api("POST", "/v1/jobs/dry-run", body)
            assert st == 200, b
            return (time.perf_counter() - t0) * 1000.0

        print("first dry-run (loads the plan): %.1f ms" % one())

        def run(n, threads, until=None):
            lat, lock = [], threading.Lock()

            def worker():
                k = 0
                while (until.is_set() is False) if until else k < n // threads:
                    ms = one()
                    k += 1
                    with lock:
                        lat.append(ms)
            ts = [threading.Thread(target=worker) for _ in range(threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return lat

        def report(what, lat):
            print("%s, %d requests: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms"
                  % (what, len(lat), pct(lat, 50), pct(lat, 90), pct(lat, 99), max(lat)))

        report("warm, 1 client", run(args.requests, 1))
        report("warm, 4 clients", run(args.requests, 4))
        stop = threading.Event()
        g0 = int(q(c, "SELECT generation FROM plan_generation")[0][0])

        def submitter():
            while not stop.is_set():
                jid = pg.query("INSERT INTO jobs (tenant_id, priority_class_id, nodes, gpus_per_node, gpu_model,"
                               " time_limit, command) VALUES (1, 2, 1, 8, 'h100', 3600, '[\"x\"]') RETURNING id")[0][0]
                pg.query("NOTIFY muster_sched, 'submit:%s'" % jid)
                stop.wait(2.0)
        th = threading.Thread(target=submitter)
        th.start()
        timer = threading.Timer(args.busy_s, stop.set)
        timer.start()
        lat = run(0, 4, until=stop)
        th.join()
        g1 = int(q(c, "SELECT generation FROM plan_generation")[0][0])
        report("4 clients while the leader plans again (%d new generations)" % (g1 - g0), lat)
        loads = re.findall(r"plan: generation (\d+) loaded \((.*?)\) in ([\d.]+) ms", c.log_text("api"))
        for gen, what, ms in loads:
            print("plan load: generation %s in %s ms (%s)" % (gen, ms, what))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    a = sub.add_parser("latency")
    a.add_argument("--jobs", type=int, default=300)
    a.add_argument("--rest", action="store_true", help="submit through muster-api")
    a = sub.add_parser("failover")
    a.add_argument("--rounds", type=int, default=5)
    a = sub.add_parser("cycle")
    a.add_argument("--nodes", type=int, default=10000)
    a.add_argument("--pending", type=int, default=100000)
    a.add_argument("--running", type=int, default=50000)
    a.add_argument("--cycles", type=int, default=3)
    a.add_argument("--reasons-written", action="store_true",
                   help="cycle: the pending jobs hold the reasons a previous leader wrote (no backlog)")
    a.add_argument("--changes", type=int, default=0,
                   help="row changes (submits, cancels, run ends, node rows) every --change-every seconds")
    a.add_argument("--change-every", type=float, default=0.5)
    a.add_argument("--phases", action="store_true", help="print every cycle's phases, not the last five")
    a.add_argument("--promises", action="store_true",
                   help="add never-reached quotas (tenant-wide and per model) and user run-time histories")
    a.add_argument("--sched-arg", action="append", default=[],
                   help="an extra muster-scheduler argument (e.g. --sched-arg=--rebuild-every=0)")
    a = sub.add_parser("dryrun")
    a.add_argument("--nodes", type=int, default=10000)
    a.add_argument("--pending", type=int, default=100000)
    a.add_argument("--running", type=int, default=50000)
    a.add_argument("--requests", type=int, default=400)
    a.add_argument("--busy-s", type=float, default=20.0, help="seconds of the phase with submits")
    a.add_argument("--promises", action="store_true")
    args = ap.parse_args()
    {"latency": bench_latency, "failover": bench_failover, "cycle": bench_cycle,
     "dryrun": bench_dryrun}[args.what](args)


if __name__ == "__main__":
    main()
