"""Changing jobs through the REST API with a real muster-scheduler: hold and
release (also on submit), begin times, requeue of a running job, PATCH of a
pending job, ETag / If-Match (a race of two writers with one version), tenant
scope (404) and roles (403), and each new input's table of bad values (4xx,
database unchanged).

Agents are played through the database as in test_sched_lifecycle.py (the
agent contract of store/store_sched.h); each test uses its own GPU model so
jobs never land on another test's nodes."""
import datetime
import threading

import harness
from harness import check, check_eq
from test_sched_common import add_nodes, agent_end, agent_running, live_run, q, sql, start_scheduler, val

SCHED = None
TENANT_TOKEN = None
OTHER_TOKEN = None
READER_TOKEN = None


def setup(c):
    global SCHED, TENANT_TOKEN, OTHER_TOKEN, READER_TOKEN
    if SCHED is None:
        harness.require_binary("muster-scheduler")
        sql(c, "INSERT INTO priority_classes (name, priority, preemptible, grace_period, max_time_limit)"
              " VALUES ('capped', 100, true, 1, 7200)")
        c.make_tenant("ml")
        c.make_tenant("bio")
        TENANT_TOKEN = c.make_token("tenant", tenant="ml", user="alice")
        OTHER_TOKEN = c.make_token("tenant", tenant="bio", user="bob")
        READER_TOKEN = c.make_token("reader", tenant="ml")
        # full cycles only on events: a begin time must be found by the tick itself
        SCHED = start_scheduler(c, "sched", "--stop-margin", "1s", "--tick", "200ms",
                                "--full-every", "60s")
        c.wait_until(lambda: q(c, "SELECT cycles FROM scheduler_lease")[0][0] != "0", 10,
                     "the scheduler's first cycle")


def cycles(c):
    return int(q(c, "SELECT cycles FROM scheduler_lease")[0][0])


def wait_cycles(c, n=3):
    """n more full scheduler cycles (each woken by a NOTIFY), so that a job
    that could start would have."""
    for _ in range(n):
        start = cycles(c)
        q(c, "NOTIFY muster_sched, 'node:x'")
        c.wait_until(lambda: cycles(c) > start, 15, "a scheduler cycle")


def submit(c, model, token=None, **fields):
    body = {"nodes": 1, "gpus_per_node": 1, "gpu_model": model, "command": ["true"],
            "time_limit": 3600}
    body.update(fields)
    st, hdr, b = c.api("POST", "/v1/jobs", body, token=token or TENANT_TOKEN)
    check_eq(st, 201, b)
    check(hdr.get("etag", "").startswith('"'), "submit answers an ETag", hdr)
    return b["id"], hdr["etag"]


def get(c, jid, token=None):
    st, hdr, b = c.api("GET", "/v1/jobs/%d" % jid, token=token or TENANT_TOKEN)
    check_eq(st, 200, b)
    check_eq(hdr.get("etag", "").startswith('"'), True, "GET answers an ETag")
    return b, hdr["etag"]


def post(c, jid, verb, token=None, etag=None, raw=None):
    h = {"If-Match": etag} if etag else None
    return c.api("POST", "/v1/jobs/%d/%s" % (jid, verb), token=token or TENANT_TOKEN, headers=h,
                 raw=raw)


def patch(c, jid, body, token=None, etag=None, raw=None):
    h = {"If-Match": etag} if etag else None
    return c.api("PATCH", "/v1/jobs/%d" % jid, body, token=token or TENANT_TOKEN, headers=h, raw=raw)


def row(c, jid):
    """The columns a refused change must leave alone."""
    return sql(c, "SELECT state, held, begin_at, time_limit, priority_class_id, nodes, min_nodes,"
                  " gpus_per_node, dependencies::text, labels::text, name, updated_at,"
                  " (SELECT count(*) FROM events e WHERE e.job_id = j.id) FROM jobs j WHERE id = $1",
               jid)[0]


def runs_of(c, jid):
    return int(val(c, "SELECT count(*) FROM runs WHERE job_id = $1", jid))


def test_hold_on_submit_then_release(c):
    setup(c)
    add_nodes(c, "ho", 1, gpus=2, model="ho")
    jid, etag = submit(c, "ho", hold=True)
    b, _ = get(c, jid)
    check_eq((b["state"], b["held"], b["pending_reason"]), ("PENDING", True, "Held"))
    wait_cycles(c)
    b, etag2 = get(c, jid)
    check_eq((b["state"], b["pending_reason"], runs_of(c, jid)), ("PENDING", "Held", 0),
             "a held job never starts, and keeps its reason")
    check_eq(etag2, etag, "the scheduler's reasons do not change the version")
    # Release with the current version: it starts.
    st, hdr, b = post(c, jid, "release", etag=etag)
    check_eq(st, 200, b)
    check_eq(b["held"], False)
    check(hdr["etag"] != etag, "release makes a new version")
    c.wait_until(lambda: live_run(c, jid), 10, "a run after release")
    # Releasing again is no error; holding a started job is.
    st, _, b = post(c, jid, "hold")
    check_eq(st, 409, b)
    check_eq(b["type"], "https://muster.dev/problems/invalid-state")
    kinds = [r[0] for r in sql(c, "SELECT kind FROM events WHERE job_id = $1 ORDER BY id", jid)]
    check_eq(kinds[:3], ["job.submitted", "job.released", "job.starting"], kinds)


def test_hold_pending_and_release(c):
    setup(c)
    # No node of this model: the job waits for Resources, then is held.
    jid, etag = submit(c, "nohw")
    st, hdr, b = post(c, jid, "hold", etag=etag)
    check_eq(st, 200, b)
    check_eq((b["held"], b["pending_reason"]), (True, "Held"))
    e1 = hdr["etag"]
    st, hdr, b = post(c, jid, "hold")
    check_eq(st, 200, b)
    check_eq(hdr["etag"], e1, "holding a held job changes nothing")
    wait_cycles(c, 2)
    check_eq(get(c, jid)[0]["pending_reason"], "Held")
    check_eq(val(c, "SELECT count(*) FROM events WHERE job_id = $1 AND kind = 'job.held'", jid), "1")
    st, hdr, b = post(c, jid, "release", etag=e1)
    check_eq(st, 200, b)
    check_eq(b["held"], False)
    c.wait_until(lambda: get(c, jid)[0]["pending_reason"] not in ("Held", "Priority"), 10,
                 "the scheduler's own reason after release")


def iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_begin_time(c):
    setup(c)
    add_nodes(c, "bg", 1, gpus=2, model="bg")
    now = datetime.datetime.now(datetime.timezone.utc)
    later = now + datetime.timedelta(seconds=4)
    jid, _ = submit(c, "bg", begin=iso(later))
    b, _ = get(c, jid)
    check_eq((b["pending_reason"], b["begin"][:19]), ("BeginTime", iso(later)[:19]))
    check_eq(runs_of(c, jid), 0)
    c.wait_until(lambda: live_run(c, jid), 20, "a start once the begin time passed")
    started = val(c, "SELECT extract(epoch FROM started_at) >= extract(epoch FROM begin_at)"
                     " FROM jobs WHERE id = $1", jid)
    check_eq(started, "t", "never started before its begin time")
    late = float(val(c, "SELECT extract(epoch FROM started_at - begin_at) FROM jobs WHERE id = $1", jid))
    check(late < 10, "started by a tick soon after its begin time, not the 60 s full cycle", late)
    # A begin time in the past (with an offset) starts at once.
    past = (now - datetime.timedelta(hours=1)).astimezone(
        datetime.timezone(datetime.timedelta(hours=2))).strftime("%Y-%m-%dT%H:%M:%S.250+02:00")
    jid2, _ = submit(c, "bg", begin=past)
    c.wait_until(lambda: live_run(c, jid2), 10, "a start for a begin time in the past")
    for j in (jid, jid2):  # free the node's two GPUs for the next job
        agent_end(c, live_run(c, j)[0], exit_code=0)
    # PATCH begin on a held job: released, it still waits for the begin time.
    jid3, e3 = submit(c, "bg", hold=True)
    st, hdr, b = patch(c, jid3, {"begin": iso(now + datetime.timedelta(days=1))}, etag=e3)
    check_eq(st, 200, b)
    check_eq(b["pending_reason"], "Held")
    st, hdr, b = post(c, jid3, "release")
    check_eq((st, b["pending_reason"]), (200, "BeginTime"), b)
    wait_cycles(c, 2)
    check_eq((get(c, jid3)[0]["pending_reason"], runs_of(c, jid3)), ("BeginTime", 0))
    st, hdr, b = patch(c, jid3, {"begin": None})
    check_eq((st, b["begin"]), (200, None), b)
    c.wait_until(lambda: live_run(c, jid3), 10, "a start once the begin time was cleared")


def test_requeue_running(c):
    setup(c)
    add_nodes(c, "rq", 1, gpus=1, model="rq")
    jid, _ = submit(c, "rq", priority_class="capped")
    run, _, _ = c.wait_until(lambda: live_run(c, jid), 10, "a live run")
    # STARTING can be requeued too, but let it run.
    agent_running(c, run)
    c.wait_until(lambda: get(c, jid)[0]["state"] == "RUNNING", 10, "RUNNING")
    st, _, b = patch(c, jid, {"time_limit": 60})
    check_eq(st, 409, b)
    st, hdr, b = post(c, jid, "requeue")
    check_eq(st, 200, b)
    check_eq(live_run(c, jid)[1:], ("STOPPING", "requeue"))
    st, _, b = post(c, jid, "requeue")
    check_eq(st, 200, b)  # asked already: the same answer
    agent_end(c, run, exit_code=143)
    c.wait_until(lambda: live_run(c, jid) and live_run(c, jid)[0] != run, 10, "a second run")
    check_eq(val(c, "SELECT state FROM runs WHERE id = $1", run), "REQUEUED")
    b, _ = get(c, jid)
    check_eq((b["retries"], b["exit_code"]), (0, None), "a requeue spends no retry")
    check_eq(val(c, "SELECT count(*) FROM events WHERE job_id = $1 AND kind IN"
                    " ('job.requeue_requested', 'job.requeued')", jid), "2")
    # A pending or ended job cannot be requeued.
    run2 = live_run(c, jid)[0]
    agent_running(c, run2)
    agent_end(c, run2, exit_code=0)
    c.wait_until(lambda: get(c, jid)[0]["state"] == "COMPLETED", 10, "COMPLETED")
    st, _, b = post(c, jid, "requeue")
    check_eq(st, 409, b)
    jp, _ = submit(c, "nohw")
    st, _, b = post(c, jp, "requeue")
    check_eq(st, 409, b)


def test_cancel_wins_over_requeue(c):
    setup(c)
    add_nodes(c, "cr", 1, gpus=1, model="cr")
    jid, _ = submit(c, "cr")
    run, _, _ = c.wait_until(lambda: live_run(c, jid), 10, "a live run")
    agent_running(c, run)
    check_eq(post(c, jid, "requeue")[0], 200)
    check_eq(c.api("POST", "/v1/jobs/%d/cancel" % jid, token=TENANT_TOKEN)[0], 200)
    agent_end(c, run, exit_code=143)
    c.wait_until(lambda: get(c, jid)[0]["state"] == "CANCELLED", 10, "CANCELLED, not requeued")


def test_cancel_wins_over_preemption(c):
    """A cancel while the run stops for a preemption, a node failure (a job
    with retries left) or a bulk or array cancel ends the job CANCELLED when
    it stops: it is not requeued and started again."""
    setup(c)
    add_nodes(c, "cp", 3, gpus=1, model="cp")
    ids = [submit(c, "cp", max_retries=1)[0] for _ in range(3)]
    runs = []
    for jid in ids:
        run, _, _ = c.wait_until(lambda: live_run(c, jid), 10, "a live run")
        agent_running(c, run)
        runs.append(run)
    # What the scheduler writes when it preempts a run or its node is lost.
    for run, why in zip(runs, ("preempt", "node_fail", "preempt")):
        sql(c, "UPDATE runs SET state = 'STOPPING', stop_reason = $2, stop_requested_at = now()"
               " WHERE id = $1", run, why)
    check_eq(c.api("POST", "/v1/jobs/%d/cancel" % ids[0], token=TENANT_TOKEN)[0], 200)
    check_eq(c.api("POST", "/v1/jobs/%d/cancel" % ids[1], token=TENANT_TOKEN)[0], 200)
    st, _, b = c.api("POST", "/v1/jobs/cancel", {"ids": [ids[2]]}, token=TENANT_TOKEN)
    check_eq((st, b["cancelled"]), (200, 1), b)
    for run in runs:
        check_eq(val(c, "SELECT stop_reason FROM runs WHERE id = $1", run), "cancel")
        agent_end(c, run, exit_code=143)
    for jid in ids:
        c.wait_until(lambda: get(c, jid)[0]["state"] == "CANCELLED", 10,
                     "job %d CANCELLED, not requeued: %s" % (jid, get(c, jid)[0]["state"]))
        check_eq(runs_of(c, jid), 1, "no second run")


def quota_max_job(c, tenant):
    """A 1-GPU job of `tenant` on its own model `tenant`, once it waits with QuotaMax."""
    st, _, b = c.api("POST", "/v1/jobs", {"tenant": tenant, "nodes": 1, "gpus_per_node": 1, "gpu_model": tenant,
                                          "command": ["true"], "time_limit": 3600})
    check_eq(st, 201, b)
    c.wait_until(lambda: val(c, "SELECT pending_reason FROM jobs WHERE id = $1", b["id"]) == "QuotaMax", 10,
                 "QuotaMax")
    return b["id"]


def test_quota_change_wakes_the_scheduler(c):
    """PUT and DELETE of a quota wake the scheduler (NOTIFY muster_sched), as
    a settings change does: a job waiting on QuotaMax starts at once, not at
    the next periodic full cycle (60 s here)."""
    setup(c)
    add_nodes(c, "qw", 1, gpus=2, model="qw")
    c.make_tenant("qw")
    check_eq(c.api("PUT", "/v1/tenants/qw/quota", {"gpu_model": "qw", "max_gpus": 0})[0], 200)
    check_eq(c.api("PUT", "/v1/tenants/qw/quota", {"max_gpus": 0})[0], 200)
    jid = quota_max_job(c, "qw")
    check_eq(c.api("PUT", "/v1/tenants/qw/quota", {"max_gpus": 2})[0], 200)
    wait_cycles(c, 1)  # still held by the per-model row
    check_eq(val(c, "SELECT state FROM jobs WHERE id = $1", jid), "PENDING")
    check_eq(c.api("DELETE", "/v1/tenants/qw/quota?gpu_model=qw")[0], 204)
    c.wait_until(lambda: live_run(c, jid), 5, "the job starts once the quota allows it")
    agent_end(c, live_run(c, jid)[0])


def test_tenant_change_wakes_the_scheduler(c):
    """A tenant's PATCH wakes the scheduler as a quota change does: a job held by
    its parent's max_gpus starts at once when the tenant moves out from under it,
    not at the next periodic full cycle (60 s here)."""
    setup(c)
    add_nodes(c, "tw", 1, gpus=2, model="tw")
    c.make_tenant("twcap")
    check_eq(c.api("PUT", "/v1/tenants/twcap/quota", {"max_gpus": 0})[0], 200)
    c.make_tenant("tw", parent="twcap")
    jid = quota_max_job(c, "tw")
    check_eq(c.api("PATCH", "/v1/tenants/tw", {"parent": "root"})[0], 200)
    c.wait_until(lambda: live_run(c, jid), 5, "the job starts once its tenant has moved")
    agent_end(c, live_run(c, jid)[0])


def test_patch_pending(c):
    setup(c)
    dep, _ = submit(c, "nohw")
    jid, etag = submit(c, "nohw", priority_class="capped", time_limit=3600, hold=True,
                       labels={"team": "a"})
    st, hdr, b = patch(c, jid, {"time_limit": "30:00", "nodes": 2, "min_nodes": 1,
                                "gpus_per_node": 4, "labels": {"team": "b"}, "name": "renamed",
                                "dependencies": [{"type": "afterok", "job_id": dep}]}, etag=etag)
    check_eq(st, 200, b)
    check_eq((b["time_limit"], b["nodes"], b["min_nodes"], b["gpus_per_node"], b["labels"], b["name"],
              b["dependencies"], b["held"]),
             (1800, 2, 1, 4, {"team": "b"}, "renamed", [{"type": "afterok", "job_id": dep}], True))
    check(hdr["etag"] != etag, "PATCH makes a new version")
    ev = val(c, "SELECT data->'fields' FROM events WHERE job_id = $1 AND kind = 'job.updated'", jid)
    check("time_limit" in ev and "labels" in ev, ev)
    # Lowering the limit is fine; raising it past the class maximum (7200) is not.
    st, hdr2, b = patch(c, jid, {"time_limit": 7200})
    check_eq(st, 200, b)
    before = row(c, jid)
    st, _, b = patch(c, jid, {"time_limit": 7201})
    check_eq((st, b.get("field")), (400, "time_limit"), b)
    check_eq(row(c, jid), before, "a refused PATCH changes nothing")
    # A class whose maximum the current limit breaks: refused on the class.
    st, _, b = patch(c, jid, {"priority_class": "nope"})
    check_eq((st, b.get("field")), (404, "priority_class"), b)
    st, _, b = patch(c, jid, {"priority_class": "low"})
    check_eq((st, b["priority_class"]), (200, "low"), b)
    # A stale version: 412, nothing changes.
    before = row(c, jid)
    st, _, b = patch(c, jid, {"time_limit": 60}, etag=etag)
    check_eq(st, 412, b)
    check_eq(b["type"], "https://muster.dev/problems/precondition-failed")
    check_eq(row(c, jid), before)
    st, _, b = post(c, jid, "release", etag=etag)
    check_eq(st, 412, b)
    check_eq(row(c, jid), before)
    # If-Match: * matches any version.
    st, _, b = patch(c, jid, {"time_limit": 60}, etag="*")
    check_eq((st, b["time_limit"]), (200, 60), b)


def test_if_match_race(c):
    """Two writers with the same version: exactly one wins, the other gets 412."""
    setup(c)
    for _ in range(3):
        jid, etag = submit(c, "nohw")
        results = []
        barrier = threading.Barrier(2)

        def writer(limit):
            barrier.wait()
            results.append(patch(c, jid, {"time_limit": limit}, etag=etag)[0])

        ts = [threading.Thread(target=writer, args=(lim,)) for lim in (100, 200)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        check_eq(sorted(results), [200, 412], results)
        check_eq(val(c, "SELECT count(*) FROM events WHERE job_id = $1 AND kind = 'job.updated'",
                     jid), "1")


def test_patch_dependency_cycle(c):
    """A PATCH of dependencies that would close a cycle (directly or through
    a chain) is refused, 409 naming the first such edge, and changes nothing."""
    setup(c)
    a, _ = submit(c, "nohw")
    b, _ = submit(c, "nohw", dependencies=[{"type": "afterok", "job_id": a}])
    d, _ = submit(c, "nohw", dependencies=[{"type": "afterany", "job_id": b}])
    e, _ = submit(c, "nohw")
    before = row(c, a)
    for deps, edge in (([b], 0), ([d], 0), ([e, d], 1), ([e, b, d], 1)):
        st, _, body = patch(c, a, {"dependencies": [{"type": "afterok", "job_id": x} for x in deps]})
        check_eq((st, body["type"].rsplit("/", 1)[-1], body.get("field")),
                 (409, "conflict", "dependencies.%d.job_id" % edge), deps, body)
        check("cycle" in body["detail"], body)
    st, _, body = patch(c, a, {"dependencies": [{"type": "afterok", "job_id": a}]})
    check_eq((st, body.get("field")), (400, "dependencies"), "on itself", body)
    check_eq(row(c, a), before, "a refused PATCH changes nothing")
    # no cycle: d may also depend on a, and a on e
    st, _, body = patch(c, d, {"dependencies": [{"type": "afterany", "job_id": b},
                                               {"type": "afterok", "job_id": a}]})
    check_eq(st, 200, body)
    st, _, body = patch(c, a, {"dependencies": [{"type": "afterok", "job_id": e}]})
    check_eq(st, 200, body)


def test_scope_and_roles(c):
    setup(c)
    jid, etag = submit(c, "nohw")
    before = row(c, jid)
    for verb in ("hold", "release", "requeue"):
        st, _, b = post(c, jid, verb, token=OTHER_TOKEN)
        check_eq(st, 404, verb, b)
        st, _, b = post(c, jid, verb, token=READER_TOKEN)
        check_eq(st, 403, verb, b)
        st, _, b = post(c, 987654321, verb)
        check_eq(st, 404, verb, b)
    check_eq(patch(c, jid, {"time_limit": 60}, token=OTHER_TOKEN)[0], 404)
    check_eq(patch(c, jid, {"time_limit": 60}, token=READER_TOKEN)[0], 403)
    st, hdr, _ = c.api("GET", "/v1/jobs/%d" % jid, token=OTHER_TOKEN)
    check_eq(st, 404)
    check_eq(row(c, jid), before, "nothing changed by outsiders")
    # The admin may.
    st, _, b = post(c, jid, "hold", token=None)
    check_eq((st, b["held"]), (200, True), b)


def test_env_redacted_in_replies(c):
    """hold/release/PATCH answer the job as GET does: another user of the
    tenant sees the env names, not the values (they used to see them)."""
    setup(c)
    carol = c.make_token("tenant", tenant="ml", user="carol")
    jid, _ = submit(c, "nohw", env={"SECRET": "s3cr3t"})
    b, _ = get(c, jid, token=carol)
    check_eq(b["env"], {"SECRET": "<redacted>"}, "GET by another user")
    for verb in ("hold", "release"):
        st, _, b = post(c, jid, verb, token=carol)
        check_eq((st, b["env"]), (200, {"SECRET": "<redacted>"}), verb, b)
    st, _, b = patch(c, jid, {"time_limit": 120}, token=carol)
    check_eq((st, b["env"]), (200, {"SECRET": "<redacted>"}), "PATCH", b)
    st, _, b = patch(c, jid, {"time_limit": 180})
    check_eq((st, b["env"]), (200, {"SECRET": "s3cr3t"}), "the job's user sees it", b)
    actors = [r[0] for r in sql(c, "SELECT data->>'by' FROM events WHERE job_id = $1"
                                   " AND kind IN ('job.held', 'job.released') ORDER BY id", jid)]
    check(all(a and a.endswith("(carol)") for a in actors), "the actor names the user", actors)


BAD_PATCH = [
    ({}, 400, ""),
    ({"state": "RUNNING"}, 400, "state"),
    ({"command": ["x"]}, 400, "command"),
    ({"time_limit": 0}, 400, "time_limit"),
    ({"time_limit": -5}, 400, "time_limit"),
    ({"time_limit": "soon"}, 400, "time_limit"),
    ({"time_limit": None}, 400, "time_limit"),
    ({"time_limit": 1.5}, 400, "time_limit"),
    ({"nodes": 0}, 400, "nodes"),
    ({"nodes": 10001}, 400, "nodes"),
    ({"nodes": "2"}, 400, "nodes"),
    ({"min_nodes": 5}, 400, "min_nodes"),        # over the job's 1 node
    ({"gpus_per_node": 65}, 400, "gpus_per_node"),
    ({"gpus_per_node": -1}, 400, "gpus_per_node"),
    ({"priority_class": 7}, 400, "priority_class"),
    ({"priority_class": "nope"}, 404, "priority_class"),
    ({"labels": {"bad key!": "x"}}, 400, None),
    ({"labels": ["a"]}, 400, "labels"),
    ({"dependencies": [{"type": "after", "job_id": 1}]}, 400, "dependencies.0.type"),
    ({"dependencies": [{"type": "afterok", "job_id": 987654321}]}, 404, "dependencies.0.job_id"),
    ({"dependencies": {"type": "afterok"}}, 400, "dependencies"),
    ({"begin": "tomorrow"}, 400, "begin"),
    ({"begin": "2027-02-30T08:00:00Z"}, 400, "begin"),
    ({"begin": "2027-01-31T08:00:00"}, 400, "begin"),   # no offset
    ({"begin": "2027-01-31T25:00:00Z"}, 400, "begin"),
    ({"begin": 1700000000}, 400, "begin"),
    ({"begin": "1969-12-31T23:59:59Z"}, 400, "begin"),
    ({"name": "x" * 257}, 400, "name"),
]

BAD_SUBMIT = [
    ({"hold": "yes"}, "hold"),
    ({"hold": 1}, "hold"),
    ({"begin": "now+1hour"}, "begin"),   # the CLI converts Slurm's forms; REST takes RFC 3339
    ({"begin": "2027-13-01T00:00:00Z"}, "begin"),
    ({"begin": "2027-01-31 08:00"}, "begin"),
    ({"begin": True}, "begin"),
    ({"begin": "2027-01-31T08:00:00+2:00"}, "begin"),
]


def test_bad_values(c):
    setup(c)
    jid, etag = submit(c, "nohw")
    before = row(c, jid)
    for body, status, field in BAD_PATCH:
        st, _, b = patch(c, jid, body)
        check_eq(st, status, body, b)
        check(b.get("type", "").startswith("https://muster.dev/problems/"), body, b)
        if field is not None:
            check_eq(b.get("field", ""), field, body, b)
    # Self dependency, malformed bodies and If-Match values.
    st, _, b = patch(c, jid, {"dependencies": [{"type": "afterok", "job_id": jid}]})
    check_eq(st, 400, b)
    for raw in ("", "[]", "{", '{"nodes": 1, "nodes": 2}', "null"):
        st, _, b = patch(c, jid, None, raw=raw)
        check_eq(st, 400, raw, b)
    for bad in ('123', '"abc"', 'W/"1"', '""'):
        st, _, b = patch(c, jid, {"time_limit": 60}, etag=bad)
        check(st in (400, 412), bad, st, b)
    st, _, b = post(c, jid, "hold", raw='{"why": "x"}')
    check_eq((st, b.get("field")), (400, "why"), b)
    for path_id in ("0", "-1", "abc", "99999999999999999999"):
        st, _, b = c.api("POST", "/v1/jobs/%s/hold" % path_id, token=TENANT_TOKEN)
        check_eq(st, 404, path_id, b)
    check_eq(row(c, jid), before, "no refused request changed the job")
    njobs = val(c, "SELECT count(*) FROM jobs")
    for body, field in BAD_SUBMIT:
        full = {"nodes": 1, "gpus_per_node": 1, "command": ["true"]}
        full.update(body)
        st, _, b = c.api("POST", "/v1/jobs", full, token=TENANT_TOKEN)
        check_eq((st, b.get("field")), (400, field), body, b)
    check_eq(val(c, "SELECT count(*) FROM jobs"), njobs, "no refused submit wrote a job")


def test_singleton(c):
    """--dependency=singleton: one job of a (tenant, user, name) at a time, in submit order."""
    setup(c)
    add_nodes(c, "sg", 1, gpus=4, model="sg")
    sing = [{"type": "singleton"}]
    a, _ = submit(c, "sg", name="nightly", dependencies=sing)
    b, _ = submit(c, "sg", name="nightly", dependencies=sing)
    cc, _ = submit(c, "sg", name="nightly", dependencies=sing)
    other, _ = submit(c, "sg", name="other", dependencies=sing)
    ra, _, _ = c.wait_until(lambda: live_run(c, a), 10, "the first singleton starts")
    c.wait_until(lambda: live_run(c, other), 10, "another name is not held back")
    wait_cycles(c, 2)
    check_eq([get(c, j)[0]["pending_reason"] for j in (b, cc)], ["Dependency", "Dependency"])
    check_eq((runs_of(c, b), runs_of(c, cc)), (0, 0))
    agent_running(c, ra)
    agent_end(c, ra, exit_code=1)  # a failed predecessor still releases it (Slurm: "terminated")
    rb, _, _ = c.wait_until(lambda: live_run(c, b), 10, "the second after the first ended")
    check_eq(runs_of(c, cc), 0, "the third waits for the second")
    agent_end(c, rb, exit_code=0)
    c.wait_until(lambda: live_run(c, cc), 10, "the third after the second")
    # another user's job of the same name is not held back (alice vs the admin's user)
    bad = [{"type": "singleton", "job_id": a}]
    st, _, e = c.api("POST", "/v1/jobs", {"nodes": 1, "gpus_per_node": 0, "command": ["x"],
                                          "dependencies": bad}, token=TENANT_TOKEN)
    check_eq((st, e.get("field")), (400, "dependencies.0.job_id"), e)
    rc, _, err = cli(c, "update", cc, "Dependency=singleton")
    check(rc == 1, "a running job cannot be updated", rc, err)


def cli(c, *args, token=None):
    import os
    import subprocess
    import tempfile
    e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    e["HOME"] = tempfile.gettempdir() + "/muster-cli-nohome"
    e["MUSTER_URL"] = c.api_url
    e["MUSTER_TOKEN"] = token or TENANT_TOKEN
    r = subprocess.run([harness.require_binary("muster")] + [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, timeout=60)
    return r.returncode, r.stdout, r.stderr


def test_cli(c):
    """muster hold|release|requeue JOB..., muster update JOB KEY=VALUE... (scontrol's shape)."""
    setup(c)
    a, _ = submit(c, "nohw", priority_class="capped")
    b, _ = submit(c, "nohw")
    rc, out, err = cli(c, "hold", a, b)
    check_eq((rc, out, err), (0, "", ""))
    check_eq([get(c, j)[0]["held"] for j in (a, b)], [True, True])
    rc, out, err = cli(c, "release", a, b, "--json")
    check_eq(rc, 0, err)
    check_eq(out.count('"held": false'), 2, out)
    rc, out, err = cli(c, "update", a, "TimeLimit=1:00:00", "JobName=short", "label=stage=eval",
                       "StartTime=now+2hours", "NumNodes=2", "Dependency=afterok:%d" % b)
    check_eq((rc, err), (0, ""))
    j = get(c, a)[0]
    check_eq((j["time_limit"], j["name"], j["labels"], j["nodes"], j["dependencies"],
              j["pending_reason"]),
             (3600, "short", {"stage": "eval"}, 2, [{"type": "afterok", "job_id": b}], "BeginTime"))
    begin = datetime.datetime.strptime(j["begin"][:19], "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc)
    ahead = (begin - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    check(7000 < ahead <= 7201, "now+2hours is two hours ahead", ahead)
    for form in ("16:00", "2030-01-31T08:00", "2030-01-31", "tomorrow", "2030-01-31T08:00:00+02:00"):
        rc, _, err = cli(c, "update", a, "StartTime=" + form)
        check_eq((rc, err), (0, ""), form)
    check_eq(get(c, a)[0]["begin"], "2030-01-31T06:00:00.000Z")
    rc, _, err = cli(c, "update", a, "StartTime=none")
    check_eq((rc, get(c, a)[0]["begin"]), (0, None), err)
    # Refused by the server: the class maximum (7200 s); nothing changes, exit 1.
    before = row(c, a)
    rc, _, err = cli(c, "update", a, "TimeLimit=3:00:00", "JobName=never")
    check_eq(rc, 1, err)
    check("time_limit" in err, err)
    check_eq(row(c, a), before)
    # Usage errors (exit 2) are caught before any request.
    for args in (("update", a), ("update", a, "Bogus=1"), ("update", a, "TimeLimit=soon"),
                 ("update", a, "StartTime=whenever"), ("update", a, "NumNodes=0"),
                 ("update", "x1", "TimeLimit=5"), ("hold",), ("hold", "abc"), ("requeue", a, "-1")):
        rc, _, err = cli(c, *args)
        check_eq(rc, 2, args, err)
    check_eq(row(c, a), before)
    # Another tenant's job: not found (3); a pending job cannot be requeued (1).
    check_eq(cli(c, "hold", a, token=OTHER_TOKEN)[0], 3)
    check_eq(cli(c, "requeue", a)[0], 1)


if __name__ == "__main__":
    harness.main(api=True)
