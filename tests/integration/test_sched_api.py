"""The scheduler through the API: jobs submitted over REST are assigned by a
real muster-scheduler within milliseconds (NOTIFY, not polling), and the
scheduler endpoints answer: GET /v1/scheduler, /v1/jobs/{id}/explain,
POST /v1/jobs/dry-run, GET /v1/usage and GET /v1/fairshare."""
import time

import harness
from harness import check, check_eq
from test_sched_common import add_nodes, lease, q, sql, start_scheduler, val, wait_live_run

STARTED = False


def setup(c):
    global STARTED
    if not STARTED:
        harness.require_binary("muster-scheduler")
        c.make_tenant("ml", shares=3)
        c.make_tenant("web", shares=1)
        add_nodes(c, "api", 2, gpus=8, model="a100")
        start_scheduler(c, "sched")
        c.wait_until(lambda: lease(c)["cycles"] > 0, 10, "first cycle")
        STARTED = True


def submit(c, **body):
    b = {"tenant": "ml", "nodes": 1, "gpus_per_node": 8, "gpu_model": "a100", "command": ["true"]}
    b.update(body)
    st, _, j = c.api("POST", "/v1/jobs", b)
    check_eq(st, 201, j)
    return j["id"]


def test_scheduler_status(c):
    setup(c)
    st, _, b = c.api("GET", "/v1/scheduler")
    check_eq(st, 200, b)
    check(b["leader"] and b["leader"].startswith("muster-scheduler:"), b)
    check_eq(b["epoch"], lease(c)["epoch"])
    check(b["last_cycle"] and b["last_cycle"]["duration_ms"] >= 0, b)
    check(b["lease_expires_at"], b)
    # gRPC's SchedulerService.GetStatus is the same operation (api/ops/ops_sched.c)
    import test_grpc_common as g
    pb = g.load()
    r = pb["sched_grpc"].SchedulerServiceStub(g.channel(c)).GetStatus(
        pb["sched"].GetStatusRequest(), metadata=g.md(c.admin_token), timeout=10)
    check_eq((r.leader, r.epoch, r.HasField("last_cycle")), (b["leader"], b["epoch"], True), r)
    check(r.last_cycle.duration_ms >= 0 and r.last_cycle.at and r.lease_expires_at, r)


def test_submit_to_assigned_latency(c):
    setup(c)
    lat = []
    for _ in range(10):
        t0 = time.monotonic()
        jid = submit(c, gpus_per_node=1)
        c.wait_until(lambda: q(c, "SELECT state FROM jobs WHERE id = %d" % jid)[0][0] == "STARTING",
                     5, "assignment")
        lat.append((time.monotonic() - t0) * 1000)
        sql(c, "UPDATE runs SET state = 'COMPLETED', exit_code = 0, ended_at = now() WHERE job_id = $1;"
               " NOTIFY muster_sched, 'run:0'", jid)
    lat.sort()
    print("submit (REST) -> assigned: p50 %.1f ms, max %.1f ms over %d jobs" % (lat[5], lat[-1], len(lat)))
    check(lat[5] < 500, "median submit-to-assigned %.1f ms" % lat[5])


def test_explain_and_dry_run(c):
    setup(c)
    running = submit(c, nodes=2, time_limit=600)
    wait_live_run(c, running)
    waiting = submit(c, nodes=1)
    c.wait_until(lambda: val(c, "SELECT pending_message FROM jobs WHERE id = $1", waiting), 5,
                 "a pending reason")
    st, _, e = c.api("GET", "/v1/jobs/%d/explain" % waiting)
    check_eq(st, 200, e)
    check_eq(e["state"], "PENDING")
    check(e["pending_reason"] in ("Resources", "Reservation", "Priority"), e)
    check(e["message"], e)
    check(any(b.get("job_id") == running for b in e["blockers"]), "the running job blocks it", e)
    check(e["planned_start"], "planned start from the running job's limit", e)
    # Another tenant's token: its own waiting job's blockers do not name ml's jobs (their GPUs,
    # nodes and end do), and ml's job is not there to explain.
    c.make_tenant("ext", shares=1)
    other = submit(c, tenant="ext", nodes=1)
    c.wait_until(lambda: val(c, "SELECT pending_message FROM jobs WHERE id = $1", other), 5,
                 "a pending reason for ext's job")
    ext = c.make_token("tenant", tenant="ext")
    st, _, e = c.api("GET", "/v1/jobs/%d/explain" % other, token=ext)
    check_eq(st, 200, e)
    mine = [b for b in e["blockers"] if b["kind"] == "job"]
    check(mine and all(b["job_id"] is None and "holds" in b["message"] for b in mine),
          "ml's runs block ext's job unnamed", e)
    st, _, e = c.api("GET", "/v1/jobs/%d/explain" % other)
    check(any(b.get("job_id") == running for b in e["blockers"]), "the admin sees which job", e)
    st, _, e = c.api("GET", "/v1/jobs/%d/explain" % waiting, token=ext)
    check_eq(st, 404, e)

    st, _, d = c.api("POST", "/v1/jobs/dry-run", {"tenant": "web", "nodes": 1, "gpus_per_node": 8,
                                                   "gpu_model": "a100", "command": ["x"]})
    check_eq(st, 200, d)
    check_eq(d["feasible"], True, d)
    check(d["planned_start"] is not None, d)
    st, _, d = c.api("POST", "/v1/jobs/dry-run", {"tenant": "web", "nodes": 3, "gpus_per_node": 8,
                                                   "gpu_model": "a100", "command": ["x"]})
    check_eq(st, 200, d)
    check_eq(d["feasible"], False, "3 nodes of 2 can never fit", d)
    check_eq(val(c, "SELECT count(*) FROM jobs WHERE tenant_id = (SELECT id FROM tenants"
                    " WHERE name = 'web')"), "0", "dry-run submitted nothing")
    st, _, d = c.api("POST", "/v1/jobs/dry-run", {"tenant": "web", "nodes": 0, "command": ["x"]})
    check_eq(st, 400, d)
    st, _, e = c.api("GET", "/v1/jobs/999999/explain")
    check_eq(st, 404, e)
    # Done with the gang: finish both.
    sql(c, "UPDATE runs SET state = 'COMPLETED', exit_code = 0, ended_at = now() WHERE live"
           " AND job_id IN ($1, $2); NOTIFY muster_sched, 'run:0'", running, waiting)
    c.wait_until(lambda: val(c, "SELECT count(*) FROM runs WHERE live AND job_id = $1", other) == "1", 10,
                 "ext's job starts once ml's are done")
    sql(c, "UPDATE runs SET state = 'COMPLETED', exit_code = 0, ended_at = now() WHERE live"
           " AND job_id = $1; NOTIFY muster_sched, 'run:0'", other)


def test_usage_and_fairshare(c):
    setup(c)
    a = submit(c, tenant="ml", user="ann", gpus_per_node=4)
    b = submit(c, tenant="web", user="bob", gpus_per_node=2)
    for jid, secs in ((a, 900), (b, 1800)):
        run, _, _ = wait_live_run(c, jid)
        sql(c, "UPDATE runs SET state = 'COMPLETED', exit_code = 0, ended_at = now(),"
               " started_at = now() - make_interval(secs => $2::int) WHERE id = $1;"
               " NOTIFY muster_sched, 'run:0'", run, secs)
    c.wait_until(lambda: val(c, "SELECT count(*) FROM usage_records WHERE job_id IN ($1, $2)", a, b) == "2",
                 5, "usage records")
    st, _, u = c.api("GET", "/v1/usage?group_by=user")
    check_eq(st, 200, u)
    rows = {(r["tenant"], r["user"]): r for r in u["items"]}
    check_eq(rows[("ml", "ann")]["gpu_seconds"], 4 * 900, u)
    check_eq(rows[("web", "bob")]["gpu_seconds"], 2 * 1800, u)
    check_eq(rows[("web", "bob")]["gpu_hours"], 1.0, u)
    total = sum(r["gpu_seconds"] for r in u["items"])
    check_eq(total, int(val(c, "SELECT sum(gpu_seconds) FROM usage_records")), "report = records")
    # A window covering only the last 450 s of ann's run: prorated.
    st, _, w = c.api("GET", "/v1/usage?from=%s" % val(
        c, "SELECT to_char((now() - interval '450 seconds') AT TIME ZONE 'UTC',"
           " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"))
    check_eq(st, 200, w)
    ml = [r for r in w["items"] if r["tenant"] == "ml"][0]
    check(abs(ml["gpu_seconds"] - 4 * 450) <= 8 + 4 * 5, "prorated %s" % ml)
    st, _, bad = c.api("GET", "/v1/usage?from=yesterday")
    check_eq(st, 400, bad)
    check_eq(bad.get("field"), "from", bad)
    st, _, bad = c.api("GET", "/v1/usage?to=2026-13-45T99:00:00Z")
    check_eq(st, 400, bad)
    check_eq(bad.get("field"), "to", bad)

    st, _, f = c.api("GET", "/v1/fairshare")
    check_eq(st, 200, f)
    users = {(r["tenant"], r["user"]): r for r in f["items"] if r["user"] is not None}
    check(0 < users[("ml", "ann")]["fairshare"] <= 1, f)
    # ml has 3 shares of 4 and used less than web relative to them: ann ranks above bob.
    check(users[("ml", "ann")]["fairshare"] > users[("web", "bob")]["fairshare"], f)
    # A tenant token sees its subtree only.
    tok = c.make_token(role="tenant", tenant="web", user="bob")
    st, _, f2 = c.api("GET", "/v1/fairshare", token=tok)
    check_eq(st, 200, f2)
    check_eq({r["tenant"] for r in f2["items"]}, {"web"}, f2)
    st, _, u2 = c.api("GET", "/v1/usage", token=tok)
    check_eq({r["tenant"] for r in u2["items"]}, {"web"}, u2)


if __name__ == "__main__":
    harness.main(api=True)
