#!/usr/bin/python3
"""JobService, AdminService and Health over gRPC from an independent client
(python3-grpcio, stubs generated at test time): every JobService method
(Submit, Get, List, Cancel, Watch with resume from a cursor), auth failures
(UNAUTHENTICATED, PERMISSION_DENIED), tenant isolation (NOT_FOUND), bad input
(INVALID_ARGUMENT, also for bytes that are not a protobuf), unknown methods
(UNIMPLEMENTED), the exclusive bind, and the same job rules as REST."""
import signal
import threading
import time

import harness
from harness import check, check_eq
from test_grpc_common import channel, expect_code, load, make_tenant, make_token, md

S = {}


def setup(c):
    if S:
        return S
    pb = load()
    import grpc
    S["grpc"] = grpc
    S["pb"] = pb
    make_tenant(c, "ga")
    make_tenant(c, "gb")
    c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name IN ('ga', 'gb')")
    S["a"] = make_token(c, "tenant", tenant="ga", user="alice")
    S["b"] = make_token(c, "tenant", tenant="gb", user="bob")
    S["reader"] = make_token(c, "reader", tenant="ga", user="rita")
    S["admin"] = c.admin_token
    ch = channel(c)
    S["ch"] = ch
    S["jobs"] = pb["jobs_grpc"].JobServiceStub(ch)
    S["admin_svc"] = pb["admin_grpc"].AdminServiceStub(ch)
    S["sched"] = pb["sched_grpc"].SchedulerServiceStub(ch)
    S["health"] = pb["health_grpc"].HealthStub(ch)
    return S


def spec(**kw):
    J = S["pb"]["jobs"]
    d = dict(nodes=1, gpus_per_node=2, command=["python", "train.py", "--lr", "0.1"])
    d.update(kw)
    return J.JobSpec(**d)


def submit(tok, **kw):
    J = S["pb"]["jobs"]
    key = kw.pop("idempotency_key", "")
    return S["jobs"].Submit(J.SubmitJobRequest(job=spec(**kw), idempotency_key=key),
                            metadata=md(tok), timeout=10)


def test_health(c):
    s = setup(c)
    H = s["pb"]["health"]
    r = s["health"].Check(H.HealthCheckRequest(service=""), timeout=10)
    check_eq(r.status, H.HealthCheckResponse.SERVING)
    r = s["health"].Check(H.HealthCheckRequest(service="muster.v1.JobService"), timeout=10)
    check_eq(r.status, H.HealthCheckResponse.SERVING)
    expect_code(s["grpc"].StatusCode.NOT_FOUND, s["health"].Check,
                H.HealthCheckRequest(service="no.such.Service"), timeout=10)
    # Watch: the current status first, the stream stays open until we leave
    stream = s["health"].Watch(H.HealthCheckRequest(service=""), timeout=10)
    check_eq(next(stream).status, H.HealthCheckResponse.SERVING)
    stream.cancel()


def test_submit_get_list_cancel(c):
    s = setup(c)
    J = s["pb"]["jobs"]
    r = submit(s["a"], name="train", env={"A": "1", "B": "two"}, labels={"team": "vision"},
               time_limit="1:30:00", procs_per_node=2, max_retries=1)
    j = r.job
    check(j.id > 0, j)
    check_eq(r.replayed, False)
    check_eq(j.state, "PENDING")
    check_eq(j.tenant, "ga")
    check_eq(j.user, "alice")
    check_eq(j.time_limit_seconds, 5400)
    check_eq(list(j.command), ["python", "train.py", "--lr", "0.1"])
    check_eq(dict(j.env), {"A": "1", "B": "two"})
    check_eq(dict(j.labels), {"team": "vision"})
    check_eq(j.procs_per_node, 2)
    check_eq(j.pending_reason != "", True, j.pending_reason)
    # the row REST sees is the same job
    st, _, body = c.api("GET", "/v1/jobs/%d" % j.id, token=s["a"])
    check_eq(st, 200, body)
    check_eq(body["time_limit"], 5400)
    check_eq(body["env"], {"A": "1", "B": "two"})

    g = s["jobs"].Get(J.GetJobRequest(job_id=j.id), metadata=md(s["a"]), timeout=10)
    check_eq(g.id, j.id)
    check_eq(g.name, "train")
    check([e.kind for e in g.events] == ["job.submitted"], list(g.events))
    # readers of the tenant see it
    g = s["jobs"].Get(J.GetJobRequest(job_id=j.id), metadata=md(s["reader"]), timeout=10)
    check_eq(g.id, j.id)

    lst = s["jobs"].List(J.ListJobsRequest(states=["PENDING"], labels={"team": "vision"}),
                         metadata=md(s["a"]), timeout=10)
    check(j.id in [x.id for x in lst.jobs], lst)
    # pagination: page_size 1 walks every job once
    ids, tok = [], ""
    submit(s["a"], name="second")
    while True:
        p = s["jobs"].List(J.ListJobsRequest(page_size=1, page_token=tok), metadata=md(s["a"]), timeout=10)
        ids += [x.id for x in p.jobs]
        tok = p.next_page_token
        if not tok:
            break
    check_eq(len(ids), len(set(ids)))
    check(len(ids) >= 2, ids)

    x = s["jobs"].Cancel(J.CancelJobRequest(job_id=j.id), metadata=md(s["a"]), timeout=10)
    check_eq(x.state, "CANCELLED")
    e = expect_code(s["grpc"].StatusCode.FAILED_PRECONDITION, s["jobs"].Cancel,
                    J.CancelJobRequest(job_id=j.id), metadata=md(s["a"]), timeout=10)
    check_eq(dict(e.trailing_metadata()).get("muster-error"), "invalid-state")


def test_idempotency(c):
    s = setup(c)
    r1 = submit(s["a"], name="idem", idempotency_key="k-123")
    r2 = submit(s["a"], name="idem", idempotency_key="k-123")
    check_eq(r2.job.id, r1.job.id)
    check_eq(r2.replayed, True)
    expect_code(s["grpc"].StatusCode.ALREADY_EXISTS, submit, s["a"], name="other", idempotency_key="k-123")


def test_idempotency_key_rule(c):
    """One key rule on both faces (api/ops/ops_submit.c): 1..255 printable
    ASCII, a space inside allowed, none at either end."""
    s = setup(c)
    code = s["grpc"].StatusCode
    body = {"tenant": "ga", "nodes": 1, "gpus_per_node": 1, "command": ["x"]}
    st, _, j1 = c.api("POST", "/v1/jobs", body, token=s["a"], headers={"Idempotency-Key": "rest key 1"})
    check_eq(st, 201, j1)
    st, h, j2 = c.api("POST", "/v1/jobs", body, token=s["a"], headers={"Idempotency-Key": "rest key 1"})
    check_eq((st, j2["id"]), (200, j1["id"]), j2)
    r1 = submit(s["a"], name="spaced", idempotency_key="grpc key 1")
    r2 = submit(s["a"], name="spaced", idempotency_key="grpc key 1")
    check_eq((r2.job.id, r2.replayed), (r1.job.id, True))
    for key in (" lead", "trail ", "tab\tin", "k" * 256, "\u00e9t\u00e9"):
        e = expect_code(code.INVALID_ARGUMENT, submit, s["a"], idempotency_key=key)
        check_eq(dict(e.trailing_metadata()).get("muster-field"), "idempotency_key", key)
    for key in ("tab\tin", "k" * 256):
        st, _, p = c.api("POST", "/v1/jobs", body, token=s["a"], headers={"Idempotency-Key": key})
        check_eq((st, p.get("field")), (400, "Idempotency-Key"), (key, p))


def trailer(e, k):
    return dict(e.trailing_metadata() or ()).get(k)


def same_refusal(c, s, tok, rest, fn, req):
    """The REST call and the gRPC call are refused alike: the same problem
    slug (trailer muster-error) and field (muster-field)."""
    st, _, p = c.api(*rest, token=tok)
    check(st >= 400, rest, st, p)
    try:
        r = fn(req, metadata=md(tok), timeout=10)
    except s["grpc"].RpcError as e:
        check_eq((trailer(e, "muster-error"), trailer(e, "muster-field")),
                 (p["type"].rsplit("/", 1)[-1], p.get("field") or None), rest, p, e.details())
        return st, e.code()
    raise harness.CheckFailed("gRPC answered what REST refused (%d %r): %r" % (st, p, r))


def test_scheduler_service(c):
    """SchedulerService answers what REST answers (the same api/ops/ops_sched.c
    underneath), with the same scope: another tenant's job is NOT_FOUND to
    Explain, another tenant's usage and fair share are not shown."""
    s = setup(c)
    X = s["pb"]["sched"]
    code = s["grpc"].StatusCode
    sv = s["sched"]
    ja = submit(s["a"], name="explain-me").job.id
    jb = submit(s["b"], name="other-tenant").job.id
    # usage: one finished run per tenant
    for jid, tenant, user, secs in ((ja, "ga", "alice", 1800), (jb, "gb", "bob", 900)):
        run = c.sql_value("INSERT INTO runs (job_id, attempt, epoch, state, live, nodes, gpus_per_node,"
                          " time_limit, started_at, ended_at) VALUES ($1, 1, 0, 'COMPLETED', false, 1, 2,"
                          " 3600, now() - make_interval(secs => $2::int), now()) RETURNING id", jid, secs)
        c.sql("INSERT INTO usage_records (run_id, job_id, tenant_id, user_name, gpus, started_at, ended_at,"
              " gpu_seconds) SELECT $1, $2, id, $3, 2, now() - make_interval(secs => $4::int), now(),"
              " 2 * $4::int FROM tenants WHERE name = $5", run, jid, user, secs, tenant)

    def explain_eq(tok, jid):
        st, _, e = c.api("GET", "/v1/jobs/%d/explain" % jid, token=tok)
        check_eq(st, 200, e)
        g = sv.Explain(X.ExplainRequest(job_id=jid), metadata=md(tok), timeout=10)
        check_eq((g.job_id, g.state, g.pending_reason or None, g.message, g.planned_start or None),
                 (e["job_id"], e["state"], e["pending_reason"], e["message"], e["planned_start"]), e)
        check_eq([(b.kind, b.job_id or None, b.message) for b in g.blockers],
                 [(b["kind"], b["job_id"], b["message"]) for b in e["blockers"]], e)
    explain_eq(s["a"], ja)
    explain_eq(s["reader"], ja)
    explain_eq(s["admin"], jb)
    # another tenant's job, and one that does not exist: NOT_FOUND, as REST's 404
    for tok, jid in ((s["b"], ja), (s["a"], jb), (s["reader"], jb), (s["a"], 99999999), (s["a"], 0)):
        st, gc = same_refusal(c, s, tok, ("GET", "/v1/jobs/%d/explain" % jid), sv.Explain,
                              X.ExplainRequest(job_id=jid))
        check_eq((st, gc), (404, code.NOT_FOUND), jid)

    # usage, per tenant and per user, in the caller's scope
    win = "from=2020-01-01T00:00:00Z&to=2100-01-01T00:00:00Z"
    for tok, g, want in ((s["a"], "user", {"ga"}), (s["b"], "tenant", {"gb"}), (s["reader"], "", {"ga"}),
                         (s["admin"], "user", None)):
        st, _, u = c.api("GET", "/v1/usage?%s%s" % (win, "&group_by=" + g if g else ""), token=tok)
        check_eq(st, 200, u)
        r = sv.Usage(X.UsageRequest(**{"from": "2020-01-01T00:00:00Z", "to": "2100-01-01T00:00:00Z",
                                       "group_by": g}), metadata=md(tok), timeout=10)
        check_eq((r.__getattribute__("from"), r.to, r.group_by), (u["from"], u["to"], u["group_by"]), u)
        check_eq([(x.tenant, x.user or None, x.gpu_seconds, x.gpu_hours, x.runs) for x in r.items],
                 [(x["tenant"], x["user"], x["gpu_seconds"], x["gpu_hours"], x["runs"]) for x in u["items"]], u)
        if want is not None:
            check_eq({x.tenant for x in r.items}, want, "usage outside the caller's scope", r)
        else:
            check({"ga", "gb"} <= {x.tenant for x in r.items}, r)
    for q, req in (("from=yesterday", X.UsageRequest(**{"from": "yesterday"})),
                   ("to=2026-1", X.UsageRequest(to="2026-1")),
                   ("group_by=node", X.UsageRequest(group_by="node"))):
        st, gc = same_refusal(c, s, s["a"], ("GET", "/v1/usage?" + q), sv.Usage, req)
        check_eq((st, gc), (400, code.INVALID_ARGUMENT), q)

    # fair share: the caller's subtree
    for tok, want in ((s["a"], {"ga"}), (s["b"], {"gb"}), (s["admin"], None)):
        st, _, f = c.api("GET", "/v1/fairshare", token=tok)
        check_eq(st, 200, f)
        r = sv.FairShare(X.FairShareRequest(), metadata=md(tok), timeout=10)
        inf = float("inf")
        check_eq([(x.tenant, x.user or None, x.path, x.shares, x.norm_shares, x.raw_usage, x.decayed_usage,
                   x.norm_usage, None if x.level_fs == inf else x.level_fs, x.fairshare) for x in r.items],
                 [(x["tenant"], x["user"], x["path"], x["shares"], x["norm_shares"], x["raw_usage"],
                   x["decayed_usage"], x["norm_usage"], x["level_fs"], x["fairshare"]) for x in f["items"]], f)
        if want is not None:
            check_eq({x.tenant for x in r.items}, want, r)
            check(any(x.user == ("alice" if want == {"ga"} else "bob") for x in r.items), r)

    # dry-run: the submit's rules, nothing written
    n0 = c.sql_value("SELECT count(*) FROM jobs")
    body = {"nodes": 1, "gpus_per_node": 2, "command": ["x"]}
    st, _, d = c.api("POST", "/v1/jobs/dry-run", body, token=s["a"])
    check_eq(st, 200, d)
    r = sv.DryRun(X.DryRunRequest(job=spec(nodes=1, gpus_per_node=2, command=["x"])), metadata=md(s["a"]),
                  timeout=10)
    check_eq((r.feasible, r.pending_reason or None, r.message), (d["feasible"], d["pending_reason"], d["message"]), d)
    check_eq(bool(r.planned_start), d["planned_start"] is not None, d)
    check_eq(c.sql_value("SELECT count(*) FROM jobs"), n0, "a dry-run writes nothing")
    J = s["pb"]["jobs"]
    for body, sp, tok in (({"nodes": 1, "gpus_per_node": 65, "command": ["x"]}, spec(gpus_per_node=65), s["a"]),
                          ({"tenant": "ga", "nodes": 1, "gpus_per_node": 2, "command": ["x"]}, spec(tenant="ga"), s["b"]),
                          ({"user": "mallory", "nodes": 1, "gpus_per_node": 2, "command": ["x"]}, spec(user="mallory"), s["a"]),
                          ({"nodes": 1, "gpus_per_node": 2, "command": ["x"], "priority_class": "nope"}, spec(priority_class="nope"),
                           s["a"]),
                          ({"nodes": 1, "gpus_per_node": 2, "command": ["x"], "dependencies": [{"type": "afterok", "job_id": jb}]},
                           spec(dependencies=[J.Dependency(type="afterok", job_id=jb)]), s["a"])):
        same_refusal(c, s, tok, ("POST", "/v1/jobs/dry-run", body), sv.DryRun, X.DryRunRequest(job=sp))
    # roles: a reader may not dry-run (writers only, as REST)
    expect_code(code.PERMISSION_DENIED, sv.DryRun, X.DryRunRequest(job=spec()), metadata=md(s["reader"]),
                timeout=10)
    expect_code(code.UNAUTHENTICATED, sv.Usage, X.UsageRequest(), timeout=10)
    # the scheduler's status: the same for every reader
    for tok in (s["reader"], s["a"], s["admin"]):
        st, _, w = c.api("GET", "/v1/scheduler", token=tok)
        check_eq(st, 200, w)
        g = sv.GetStatus(X.GetStatusRequest(), metadata=md(tok), timeout=10)
        lc = w["last_cycle"]
        check_eq((g.leader or None, g.epoch, g.lease_expires_at or None, g.HasField("last_cycle")),
                 (w["leader"], w["epoch"], w["lease_expires_at"], lc is not None), w)
        if lc is not None:
            check_eq((g.last_cycle.at, g.last_cycle.duration_ms, g.last_cycle.pending, g.last_cycle.started,
                      g.last_cycle.preempted),
                     (lc["at"], lc["duration_ms"], lc["pending"], lc["started"], lc["preempted"]), w)
    H = s["pb"]["health"]
    h = s["health"].Check(H.HealthCheckRequest(service="muster.v1.SchedulerService"), timeout=10)
    check_eq(h.status, H.HealthCheckResponse.SERVING)


def test_id_that_names_nothing(c):
    """A job id below 1 names no job on either face: NOT_FOUND / 404, no
    field (ops_job_id_check; REST's is a path id), before the rest of the
    request is looked at (a bad if_match too)."""
    s = setup(c)
    J = s["pb"]["jobs"]
    for method, req, rest in (
            ("Get", J.GetJobRequest(job_id=0), ("GET", "/v1/jobs/0")),
            ("Cancel", J.CancelJobRequest(job_id=-3), ("POST", "/v1/jobs/0/cancel", {})),
            ("Hold", J.JobControlRequest(job_id=0, if_match="junk"), ("POST", "/v1/jobs/0/hold", {})),
            ("Update", J.UpdateJobRequest(job_id=0, if_match="junk", update_mask=["name"]),
             ("PATCH", "/v1/jobs/0", {"name": "x"}))):
        st, gc = same_refusal(c, s, s["a"], rest, getattr(s["jobs"], method), req)
        check_eq((st, gc), (404, s["grpc"].StatusCode.NOT_FOUND), method)


def test_page_size_rule(c):
    """One page-size range and message on both faces (codec_limit_range):
    REST's `limit`, gRPC's `page_size`."""
    s = setup(c)
    J = s["pb"]["jobs"]
    A = s["pb"]["admin"]
    for n in (1001, 5000, -1):
        st, _, p = c.api("GET", "/v1/jobs?limit=%d" % n if n > 0 else "/v1/tenants?limit=0", token=s["a"])
        check_eq((st, p["field"]), (400, "limit"), p)
        for fn, req in ((s["jobs"].List, J.ListJobsRequest(page_size=n)),
                        (s["admin_svc"].ListTenants, A.ListTenantsRequest(page_size=n))):
            e = expect_code(s["grpc"].StatusCode.INVALID_ARGUMENT, fn, req, metadata=md(s["a"]), timeout=10)
            check_eq(trailer(e, "muster-field"), "page_size", e.details())
            check(e.details().endswith(p["detail"]), e.details(), p)


def test_auth(c):
    s = setup(c)
    J = s["pb"]["jobs"]
    code = s["grpc"].StatusCode
    expect_code(code.UNAUTHENTICATED, submit, None)
    expect_code(code.UNAUTHENTICATED, submit, "mst_not_a_real_token")
    expect_code(code.UNAUTHENTICATED, s["jobs"].Get, J.GetJobRequest(job_id=1),
                metadata=(("authorization", "Basic abc"),), timeout=10)
    # a reader may not write; a tenant may not set the user
    expect_code(code.PERMISSION_DENIED, submit, s["reader"])
    e = expect_code(code.PERMISSION_DENIED, submit, s["a"], user="mallory")
    check("user" in e.details(), e.details())
    # admin tokens must name the tenant, then may set the user
    e = expect_code(code.INVALID_ARGUMENT, submit, s["admin"])
    check("tenant" in e.details(), e.details())
    r = submit(s["admin"], tenant="gb", user="carol")
    check_eq((r.job.tenant, r.job.user), ("gb", "carol"))


def test_isolation(c):
    s = setup(c)
    J = s["pb"]["jobs"]
    code = s["grpc"].StatusCode
    mine = submit(s["a"], name="a-only").job
    # B sees nothing of A's job: same answer as for a job that does not exist
    for req_id in (mine.id, 987654321):
        expect_code(code.NOT_FOUND, s["jobs"].Get, J.GetJobRequest(job_id=req_id), metadata=md(s["b"]), timeout=10)
        expect_code(code.NOT_FOUND, s["jobs"].Cancel, J.CancelJobRequest(job_id=req_id), metadata=md(s["b"]),
                    timeout=10)
    lst = s["jobs"].List(J.ListJobsRequest(page_size=1000), metadata=md(s["b"]), timeout=10)
    check(all(x.tenant == "gb" for x in lst.jobs), [x.tenant for x in lst.jobs])
    expect_code(code.NOT_FOUND, submit, s["b"], tenant="ga")
    # Watch on A's job from B: NOT_FOUND too
    w = s["jobs"].Watch(J.WatchJobsRequest(job_id=mine.id), metadata=md(s["b"]), timeout=10)
    expect_code(code.NOT_FOUND, next, w)


def test_bad_input(c):
    s = setup(c)
    J = s["pb"]["jobs"]
    code = s["grpc"].StatusCode
    for kw, field in ((dict(nodes=0), "nodes"), (dict(gpus_per_node=65), "gpus_per_node"),
                      (dict(command=[]), "command"), (dict(time_limit="soon"), "time_limit"),
                      (dict(name="x" * 300), "name"),
                      (dict(env={"1BAD": "x"}), "env")):
        e = expect_code(code.INVALID_ARGUMENT, submit, s["a"], **kw)
        check(field in e.details() or field in dict(e.trailing_metadata()).get("muster-field", ""),
              kw, e.details())
    expect_code(code.INVALID_ARGUMENT, submit, s["a"], idempotency_key=" has space")
    expect_code(code.INVALID_ARGUMENT, s["jobs"].List, J.ListJobsRequest(page_size=5000),
                metadata=md(s["a"]), timeout=10)
    expect_code(code.INVALID_ARGUMENT, s["jobs"].List, J.ListJobsRequest(states=["SLEEPING"]),
                metadata=md(s["a"]), timeout=10)
    expect_code(code.INVALID_ARGUMENT, s["jobs"].List, J.ListJobsRequest(page_token="abc"),
                metadata=md(s["a"]), timeout=10)
    # bytes that are not a protobuf, and a truncated one, through a raw method
    raw = s["ch"].unary_unary("/muster.v1.JobService/Submit")
    good = J.SubmitJobRequest(job=spec()).SerializeToString()
    for body in (b"\xff\xff\xff\xff\x0f", good[:len(good) // 2], b"\x0a\x80"):
        expect_code(code.INVALID_ARGUMENT, raw, body, metadata=md(s["a"]), timeout=10)
    # unknown methods and services
    expect_code(code.UNIMPLEMENTED, s["ch"].unary_unary("/muster.v1.JobService/Explode"), b"",
                metadata=md(s["a"]), timeout=10)
    expect_code(code.UNIMPLEMENTED, s["ch"].unary_unary("/no.Such/Thing"), b"", timeout=10)
    # random bytes into every method, as a reader (reads run, writes are refused):
    # never INTERNAL/UNKNOWN/UNAVAILABLE, never a crash
    import random
    rnd = random.Random(5)
    methods = ["/muster.v1.JobService/" + m for m in ("Submit", "Get", "List", "Cancel")] + \
        ["/muster.v1.AdminService/" + m for m in ("ListTenants", "GetTenant", "CreateTenant", "DeleteTenant",
                                                   "ListQuotas", "SetQuota", "DeleteQuota", "ListPriorityClasses", "ListNodes", "GetNode",
                                                   "DrainNode", "ResumeNode")] + ["/grpc.health.v1.Health/Check"]
    bad = {code.INTERNAL, code.UNKNOWN, code.UNAVAILABLE, code.DEADLINE_EXCEEDED}
    seen = set()
    for path in methods:
        call = s["ch"].unary_unary(path)
        for _ in range(15):
            body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40)))
            try:
                call(body, metadata=md(s["reader"]), timeout=10)
                seen.add("OK")
            except s["grpc"].RpcError as e:
                check(e.code() not in bad, path, body, e.code(), e.details())
                seen.add(e.code())
    check(code.INVALID_ARGUMENT in seen, seen)
    stream = s["ch"].unary_stream("/muster.v1.JobService/Watch")
    for _ in range(10):
        body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40)))
        it = stream(body, metadata=md(s["reader"]), timeout=2)
        try:
            next(it)
        except s["grpc"].RpcError as e:
            check(e.code() not in bad - {code.DEADLINE_EXCEEDED}, body, e.code(), e.details())
        except StopIteration:
            pass
        it.cancel()
    # the server survived all of it
    check(submit(s["a"], name="after-garbage").job.id > 0)


def read_events(stream, want, timeout=10):
    """Reads events from a Watch stream until want(events) is true."""
    out, err = [], []

    def reader():
        try:
            for ev in stream:
                out.append(ev)
                if want(out):
                    return
        except Exception as e:  # cancelled at the end
            err.append(e)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    t.join(timeout)
    stream.cancel()
    t.join(5)
    check(want(out), "events so far:", [(e.id, e.kind, e.job_id) for e in out], err)
    return out


def test_watch_resume(c):
    s = setup(c)
    J = s["pb"]["jobs"]
    j1 = submit(s["a"], name="w1").job
    w = s["jobs"].Watch(J.WatchJobsRequest(after_event_id=0), metadata=md(s["a"]))
    evs = read_events(w, lambda es: any(e.job_id == j1.id and e.kind == "job.submitted" for e in es))
    check(all(e.tenant == "ga" for e in evs), [e.tenant for e in evs])   # isolation on the stream
    ids = [e.id for e in evs]
    check_eq(ids, sorted(ids))
    cursor = [e for e in evs if e.job_id == j1.id][0].id
    # resume from the cursor: j1's submission is not sent again, new events are
    j2 = submit(s["a"], name="w2").job
    s["jobs"].Cancel(J.CancelJobRequest(job_id=j2.id), metadata=md(s["a"]), timeout=10)
    w = s["jobs"].Watch(J.WatchJobsRequest(after_event_id=cursor), metadata=md(s["a"]))
    evs = read_events(w, lambda es: any(e.job_id == j2.id and e.kind == "job.cancelled" for e in es))
    check(all(e.id > cursor for e in evs), [e.id for e in evs])
    kinds = [(e.job_id, e.kind) for e in evs]
    check((j2.id, "job.submitted") in kinds and (j1.id, "job.submitted") not in kinds, kinds)
    check_eq([e.job_state for e in evs if e.job_id == j2.id][-1], "CANCELLED")
    # live: a watch from "now" (-1) on one job sees only that job's new events
    j3 = submit(s["a"], name="w3").job
    w = s["jobs"].Watch(J.WatchJobsRequest(job_id=j3.id, after_event_id=-1), metadata=md(s["a"]))
    threading.Timer(0.5, lambda: s["jobs"].Cancel(J.CancelJobRequest(job_id=j3.id), metadata=md(s["a"]),
                                                  timeout=10)).start()
    evs = read_events(w, lambda es: any(e.kind == "job.cancelled" for e in es))
    check(all(e.job_id == j3.id for e in evs), [(e.job_id, e.kind) for e in evs])
    check("job.submitted" not in [e.kind for e in evs])
    # kinds filter
    w = s["jobs"].Watch(J.WatchJobsRequest(after_event_id=0, kinds=["job.cancelled"]), metadata=md(s["a"]))
    evs = read_events(w, lambda es: any(e.job_id == j3.id for e in es))
    check_eq({e.kind for e in evs}, {"job.cancelled"})


def test_admin_service(c):
    s = setup(c)
    A = s["pb"]["admin"]
    code = s["grpc"].StatusCode
    t = s["admin_svc"].CreateTenant(A.CreateTenantRequest(name="gc", parent="ga", shares=3),
                                    metadata=md(s["admin"]), timeout=10)
    check_eq((t.name, t.path, t.shares), ("gc", "root/ga/gc", 3))
    expect_code(code.ALREADY_EXISTS, s["admin_svc"].CreateTenant, A.CreateTenantRequest(name="gc"),
                metadata=md(s["admin"]), timeout=10)
    expect_code(code.INVALID_ARGUMENT, s["admin_svc"].CreateTenant, A.CreateTenantRequest(name="Bad Name"),
                metadata=md(s["admin"]), timeout=10)
    expect_code(code.PERMISSION_DENIED, s["admin_svc"].CreateTenant, A.CreateTenantRequest(name="gd"),
                metadata=md(s["a"]), timeout=10)
    # a tenant sees its own subtree only
    names = [x.name for x in s["admin_svc"].ListTenants(A.ListTenantsRequest(), metadata=md(s["a"]),
                                                         timeout=10).tenants]
    check("gb" not in names and "ga" in names and "gc" in names, names)
    expect_code(code.NOT_FOUND, s["admin_svc"].GetTenant, A.GetTenantRequest(name="gb"), metadata=md(s["a"]),
                timeout=10)
    classes = [x.name for x in s["admin_svc"].ListPriorityClasses(A.ListPriorityClassesRequest(),
                                                                   metadata=md(s["a"]), timeout=10).classes]
    check("normal" in classes, classes)
    q = s["admin_svc"].ListQuotas(A.ListQuotasRequest(), metadata=md(s["admin"]), timeout=10)
    check(any(x.tenant == "ga" and x.max_gpus == 99 for x in q.quotas), q)
    q = s["admin_svc"].SetQuota(A.SetQuotaRequest(quota=A.Quota(
        tenant="gc", gpu_model="H100", guaranteed_gpus=2, max_gpus=8, max_running_jobs=-1, max_pending_jobs=-1,
        max_time_limit_s=3600)), metadata=md(s["admin"]), timeout=10)
    check_eq((q.tenant, q.gpu_model, q.guaranteed_gpus, q.max_gpus, q.max_running_jobs, q.max_time_limit_s),
             ("gc", "H100", 2, 8, -1, 3600))
    check_eq(c.sql("SELECT max_gpus, max_running_jobs FROM quotas q JOIN tenants t ON t.id = q.tenant_id"
                   " WHERE t.name = 'gc' AND gpu_model = 'H100'")[0], ("8", None))
    e = expect_code(code.INVALID_ARGUMENT, s["admin_svc"].SetQuota, A.SetQuotaRequest(quota=A.Quota(
        tenant="gc", guaranteed_gpus=9, max_gpus=8, max_running_jobs=-1, max_pending_jobs=-1,
        max_time_limit_s=-1)), metadata=md(s["admin"]), timeout=10)
    check("max_gpus" in e.details(), e.details())
    expect_code(code.PERMISSION_DENIED, s["admin_svc"].SetQuota, A.SetQuotaRequest(quota=A.Quota(tenant="gc")),
                metadata=md(s["a"]), timeout=10)
    s["admin_svc"].DeleteQuota(A.DeleteQuotaRequest(tenant="gc", gpu_model="H100"), metadata=md(s["admin"]),
                               timeout=10)
    expect_code(code.NOT_FOUND, s["admin_svc"].DeleteQuota, A.DeleteQuotaRequest(tenant="gc", gpu_model="H100"),
                metadata=md(s["admin"]), timeout=10)
    c.sql("INSERT INTO nodes (name, gpu_count) VALUES ('gn1', 0)")
    n = s["admin_svc"].DrainNode(A.DrainNodeRequest(name="gn1", reason="maintenance"), metadata=md(s["admin"]),
                                 timeout=10)
    check_eq((n.state, n.drain_reason), ("DRAINED", "maintenance"))
    n = s["admin_svc"].ResumeNode(A.ResumeNodeRequest(name="gn1"), metadata=md(s["admin"]), timeout=10)
    check_eq(n.state, "IDLE")
    nodes = s["admin_svc"].ListNodes(A.ListNodesRequest(), metadata=md(s["reader"]), timeout=10)
    check("gn1" in [x.name for x in nodes.nodes], nodes)
    expect_code(code.PERMISSION_DENIED, s["admin_svc"].DrainNode, A.DrainNodeRequest(name="gn1"),
                metadata=md(s["a"]), timeout=10)
    expect_code(code.NOT_FOUND, s["admin_svc"].GetNode, A.GetNodeRequest(name="nope"),
                metadata=md(s["admin"]), timeout=10)


def test_exclusive_bind(c):
    s = setup(c)
    # a second muster-api on the same gRPC port must fail, not share it
    p = c.start_process(["muster-api"], name="api2", env={
        "MUSTER_DATABASE_URL": c.db_url, "MUSTER_HTTP_ADDR": "127.0.0.1:0",
        "MUSTER_GRPC_ADDR": "127.0.0.1:%d" % c.grpc_port, "MUSTER_NO_MIGRATE": "1"})
    try:
        p.wait(timeout=15)
    except Exception:
        pass
    check(p.poll() is not None and p.returncode != 0, "second muster-api still running or exited 0",
          c.log_text("api2"))
    check("cannot listen" in c.log_text("api2"), c.log_text("api2"))
    check(submit(s["a"], name="still-here").job.id > 0)


def test_admission_same_as_rest(c):
    """Submit over gRPC and over REST answer an admission failure alike: the
    same problem type and field (common/admit.c checks, api/codec_job.c
    names the field), PATCH (UpdateJob) too."""
    s = setup(c)
    J = s["pb"]["jobs"]
    c.sql("INSERT INTO priority_classes (name, priority, default_time_limit, max_time_limit)"
          " VALUES ('gshort', 50, 300, 600) ON CONFLICT DO NOTHING")
    other = submit(s["b"]).job.id
    mine = submit(s["a"]).job.id
    rest = dict(nodes=1, gpus_per_node=2, command=["true"])
    table = [
        ("unknown tenant", dict(tenant="nope"), dict(tenant="nope")),
        ("tenant out of scope", dict(tenant="gb"), dict(tenant="gb")),
        ("unknown class", dict(priority_class="nope"), dict(priority_class="nope")),
        ("over the class maximum", dict(priority_class="gshort", time_limit="11"),
         dict(priority_class="gshort", time_limit=660)),
        ("unknown required level", dict(topology_required="row"), dict(topology={"required": "row"})),
        ("unknown preferred level", dict(topology_preferred="row"), dict(topology={"preferred": "row"})),
        ("second dependency out of scope",
         dict(dependencies=[J.Dependency(type="afterany", job_id=mine),
                            J.Dependency(type="afterok", job_id=other)]),
         dict(dependencies=[{"type": "afterany", "job_id": mine}, {"type": "afterok", "job_id": other}])),
    ]
    for what, g, r in table:
        try:
            submit(s["a"], **g)
            check(False, what, "gRPC accepted it")
        except s["grpc"].RpcError as e:
            t = dict(e.trailing_metadata())
            got = (t.get("muster-error"), t.get("muster-field"))
        b = dict(rest)
        b.update(r)
        st, _, body = c.api("POST", "/v1/jobs", b, token=s["a"])
        check(st >= 400, what, st, body)
        check_eq(got, (body["type"].rsplit("/", 1)[-1], body.get("field")), what)
    # PATCH: the job's time limit over its new class's maximum, and a dependency on itself
    p = dict(priority_class="gshort")
    st, _, body = c.api("PATCH", "/v1/jobs/%d" % mine, p, token=s["a"])
    check_eq((st, body.get("field")), (400, "priority_class"), body)
    st, _, body = c.api("PATCH", "/v1/jobs/%d" % mine, {"dependencies": [{"type": "afterok", "job_id": other}]},
                        token=s["a"])
    check_eq((st, body.get("field")), (404, "dependencies.0.job_id"), body)


def batch_refusal(c, s, what, specs, bodies):
    """SubmitBatch and POST /v1/jobs/batch refuse alike (problem slug and
    field) and write nothing."""
    J = s["pb"]["jobs"]
    before = c.sql_value("SELECT count(*) FROM jobs")
    got = None
    try:
        s["jobs"].SubmitBatch(J.SubmitJobsRequest(jobs=specs), metadata=md(s["a"]), timeout=30)
        check(False, what, "gRPC accepted it")
    except s["grpc"].RpcError as e:
        got = (trailer(e, "muster-error"), trailer(e, "muster-field"))
    st, _, p = c.api("POST", "/v1/jobs/batch", {"jobs": bodies}, token=s["a"])
    check(st >= 400, what, st, p)
    check_eq(got, (p["type"].rsplit("/", 1)[-1], p.get("field")), what)
    check_eq(c.sql_value("SELECT count(*) FROM jobs"), before, what + ": nothing written")
    return got


def test_submit_batch(c):
    """SubmitBatch: POST /v1/jobs/batch over gRPC. One item per request job
    in order (an array as its first task, its tasks written in its place),
    all or nothing, and every refusal the same as REST's batch (slug and
    field jobs.N...)."""
    s = setup(c)
    J = s["pb"]["jobs"]
    r = s["jobs"].SubmitBatch(J.SubmitJobsRequest(jobs=[spec(name="b0"), spec(name="b1", array="0-2"),
                                                        spec(name="b2", labels={"k": "v"})]),
                              metadata=md(s["a"]), timeout=30)
    check_eq([j.name for j in r.jobs], ["b0", "b1", "b2"])
    ids = [j.id for j in r.jobs]
    check_eq(ids[1:], [ids[0] + 1, ids[0] + 4], "the array's three tasks between")
    rows = c.sql("SELECT jobs.id, jobs.name, coalesce(array_task_id, -1), t.name, user_name FROM jobs"
                 " JOIN tenants t ON t.id = jobs.tenant_id WHERE jobs.id BETWEEN $1 AND $2 ORDER BY jobs.id",
                 ids[0], ids[2])
    check_eq([(x[1], x[2], x[3], x[4]) for x in rows],
             [("b0", "-1", "ga", "alice")] + [("b1", str(k), "ga", "alice") for k in range(3)]
             + [("b2", "-1", "ga", "alice")])
    check_eq(r.jobs[1].array, "0-2")
    check_eq(dict(r.jobs[2].labels), {"k": "v"})
    got = s["jobs"].Get(J.GetJobRequest(job_id=ids[2]), metadata=md(s["a"]), timeout=10)
    check_eq(got.name, "b2")
    # refusals: the same answer as REST's batch, nothing written
    ok = dict(nodes=1, gpus_per_node=2, command=["true"])
    other = submit(s["b"]).job.id
    table = [
        ("tenant out of scope", dict(tenant="gb"), dict(tenant="gb")),
        ("unknown class", dict(priority_class="nope"), dict(priority_class="nope")),
        ("bad nodes", dict(nodes=-1), dict(nodes=-1)),
        ("bad array", dict(array="5-1"), dict(array="5-1")),
        ("dependency out of scope", dict(dependencies=[J.Dependency(type="afterok", job_id=other)]),
         dict(dependencies=[{"type": "afterok", "job_id": other}])),
    ]
    for what, g, rb in table:
        b = dict(ok)
        b.update(rb)
        f = batch_refusal(c, s, what, [spec(), spec(**g)], [ok, b])
        check(f[1] and f[1].startswith("jobs.1"), what, f)
    # an admission problem after an array: named by the request's job, not the task
    f = batch_refusal(c, s, "after an array", [spec(array="0-3"), spec(priority_class="nope")],
                      [dict(ok, array="0-3"), dict(ok, priority_class="nope")])
    check_eq(f[1], "jobs.1.priority_class")
    batch_refusal(c, s, "empty", [], [])
    batch_refusal(c, s, "10,001 jobs", [spec()] * 10001, [ok] * 10001)
    batch_refusal(c, s, "12,000 tasks", [spec(array="0-5999")] * 2,
                  [dict(ok, array="0-5999")] * 2)
    # writers only, as the REST route
    e = expect_code(s["grpc"].StatusCode.PERMISSION_DENIED, s["jobs"].SubmitBatch,
                    J.SubmitJobsRequest(jobs=[spec()]), metadata=md(s["reader"]), timeout=10)
    check(e.details())


def test_many_calls(c):
    s = setup(c)
    J = s["pb"]["jobs"]
    t0 = time.monotonic()
    n = 300
    for _ in range(n):
        s["jobs"].List(J.ListJobsRequest(page_size=1), metadata=md(s["a"]), timeout=10)
    dt = time.monotonic() - t0
    print("grpc List page_size=1: %d sequential calls in %.2fs (%.0f/s)" % (n, dt, n / dt))
    # concurrent submits are group-committed: all succeed, distinct ids, all stored
    from concurrent.futures import ThreadPoolExecutor
    before = int(c.sql_value("SELECT count(*) FROM jobs WHERE name = 'burst'"))
    t0 = time.monotonic()
    with ThreadPoolExecutor(16) as ex:
        ids = list(ex.map(lambda i: submit(s["a"], name="burst").job.id, range(400)))
    dt = time.monotonic() - t0
    check_eq(len(set(ids)), 400)
    check_eq(int(c.sql_value("SELECT count(*) FROM jobs WHERE name = 'burst'")) - before, 400)
    print("grpc Submit: 400 from 16 threads in %.2fs (%.0f/s)" % (dt, 400 / dt))


def test_stop_with_open_streams(c):
    """SIGTERM with Watch streams open: the streams end UNAVAILABLE (clients
    reconnect with their cursor), muster-api exits 0 promptly."""
    s = setup(c)
    J = s["pb"]["jobs"]
    H = s["pb"]["health"]
    w = s["jobs"].Watch(J.WatchJobsRequest(after_event_id=-1), metadata=md(s["a"]))
    h = s["health"].Watch(H.HealthCheckRequest(service=""))
    check_eq(next(h).status, H.HealthCheckResponse.SERVING)
    time.sleep(0.5)
    t0 = time.monotonic()
    rc = c.kill_api(signal.SIGTERM)
    dt = time.monotonic() - t0
    check_eq(rc, 0, c.log_text("api")[-2000:])
    check(dt < 5, "muster-api took %.1fs to stop" % dt)
    for stream in (w, h):
        try:
            for _ in stream:
                pass
            raise harness.CheckFailed("stream ended without a status")
        except s["grpc"].RpcError as e:
            check(e.code() in (s["grpc"].StatusCode.UNAVAILABLE, s["grpc"].StatusCode.CANCELLED), e.code())
    check("grpc stopped" in c.log_text("api"), c.log_text("api")[-2000:])
    c.start_api()


if __name__ == "__main__":
    harness.main(api=True)
