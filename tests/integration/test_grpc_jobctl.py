#!/usr/bin/python3
"""JobService Hold, Release, Requeue and Update over gRPC from an independent
client (python3-grpcio, stubs generated at test time): the same rules as REST
(docs/api.md "Changing jobs"): hold/begin on Submit, etag and if_match
(FAILED_PRECONDITION on a stale one, nothing changed), update_mask, tenant
scope (NOT_FOUND), roles (PERMISSION_DENIED) and bad values
(INVALID_ARGUMENT, the database unchanged)."""
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
    S["J"] = pb["jobs"]
    make_tenant(c, "ga")
    make_tenant(c, "gb")
    S["a"] = make_token(c, "tenant", tenant="ga", user="alice")
    S["b"] = make_token(c, "tenant", tenant="gb", user="bob")
    S["reader"] = make_token(c, "reader", tenant="ga", user="rita")
    S["jobs"] = pb["jobs_grpc"].JobServiceStub(channel(c))
    return S


def submit(**kw):
    J = S["J"]
    d = dict(nodes=1, gpus_per_node=1, command=["true"])
    d.update(kw)
    return S["jobs"].Submit(J.SubmitJobRequest(job=J.JobSpec(**d)), metadata=md(S["a"]), timeout=10).job


def row(c, jid):
    return c.sql("SELECT state, held, begin_at, time_limit, nodes, labels::text, updated_at,"
                 " (SELECT count(*) FROM events e WHERE e.job_id = j.id) FROM jobs j WHERE id = $1", jid)


def test_hold_release_update(c):
    s = setup(c)
    J, code = s["J"], s["grpc"].StatusCode
    j = submit(hold=True, begin="2030-01-31T08:00:00Z", time_limit="1:00:00")
    check_eq((j.held, j.pending_reason, j.begin), (True, "Held", "2030-01-31T08:00:00.000Z"))
    check(j.etag.startswith('"'), j.etag)
    st, hdr, body = c.api("GET", "/v1/jobs/%d" % j.id, token=s["a"])
    check_eq(hdr.get("etag"), j.etag, "gRPC's etag is REST's ETag")
    u = s["jobs"].Update(J.UpdateJobRequest(job_id=j.id, if_match=j.etag,
                                            patch=J.JobPatch(time_limit="30:00", labels={"k": "v"}),
                                            update_mask=["time_limit", "labels"]),
                         metadata=md(s["a"]), timeout=10)
    check_eq((u.time_limit_seconds, dict(u.labels)), (1800, {"k": "v"}))
    check(u.etag != j.etag, "a new version")
    before = row(c, j.id)
    expect_code(code.FAILED_PRECONDITION, s["jobs"].Update,
                J.UpdateJobRequest(job_id=j.id, if_match=j.etag, patch=J.JobPatch(nodes=2),
                                   update_mask=["nodes"]), metadata=md(s["a"]), timeout=10)
    expect_code(code.FAILED_PRECONDITION, s["jobs"].Release,
                J.JobControlRequest(job_id=j.id, if_match=j.etag), metadata=md(s["a"]), timeout=10)
    check_eq(row(c, j.id), before, "a stale if_match changes nothing")
    # Clearing begin through the mask; the rest stays.
    u = s["jobs"].Update(J.UpdateJobRequest(job_id=j.id, patch=J.JobPatch(), update_mask=["begin"]),
                         metadata=md(s["a"]), timeout=10)
    check_eq((u.begin, u.time_limit_seconds), ("", 1800))
    r = s["jobs"].Release(J.JobControlRequest(job_id=j.id, if_match=u.etag), metadata=md(s["a"]),
                          timeout=10)
    check_eq((r.held, r.pending_reason), (False, "Priority"))
    h = s["jobs"].Hold(J.JobControlRequest(job_id=j.id, if_match="*"), metadata=md(s["a"]), timeout=10)
    check_eq(h.held, True)
    expect_code(code.FAILED_PRECONDITION, s["jobs"].Requeue, J.JobControlRequest(job_id=j.id),
                metadata=md(s["a"]), timeout=10)


def test_scope_roles_and_bad_values(c):
    s = setup(c)
    J, code = s["J"], s["grpc"].StatusCode
    j = submit()
    before = row(c, j.id)
    for m in ("Hold", "Release", "Requeue"):
        f = getattr(s["jobs"], m)
        expect_code(code.NOT_FOUND, f, J.JobControlRequest(job_id=j.id), metadata=md(s["b"]), timeout=10)
        expect_code(code.PERMISSION_DENIED, f, J.JobControlRequest(job_id=j.id), metadata=md(s["reader"]),
                    timeout=10)
        expect_code(code.NOT_FOUND, f, J.JobControlRequest(job_id=0), metadata=md(s["a"]), timeout=10)
        expect_code(code.INVALID_ARGUMENT, f, J.JobControlRequest(job_id=j.id, if_match="abc"),
                    metadata=md(s["a"]), timeout=10)
    bad = [
        (J.JobPatch(), []),                                   # empty mask
        (J.JobPatch(), ["state"]),                            # not a field Update changes
        (J.JobPatch(nodes=0), ["nodes"]),
        (J.JobPatch(gpus_per_node=65), ["gpus_per_node"]),
        (J.JobPatch(time_limit="soon"), ["time_limit"]),
        (J.JobPatch(time_limit=""), ["time_limit"]),
        (J.JobPatch(begin="tomorrow"), ["begin"]),
        (J.JobPatch(min_nodes=3), ["min_nodes"]),
        (J.JobPatch(dependencies=[J.Dependency(type="before", job_id=1)]), ["dependencies"]),
        (J.JobPatch(labels={"bad key": "x"}), ["labels"]),
    ]
    for p, mask in bad:
        expect_code(code.INVALID_ARGUMENT, s["jobs"].Update,
                    J.UpdateJobRequest(job_id=j.id, patch=p, update_mask=mask), metadata=md(s["a"]),
                    timeout=10)
    expect_code(code.NOT_FOUND, s["jobs"].Update,
                J.UpdateJobRequest(job_id=j.id, patch=J.JobPatch(nodes=2), update_mask=["nodes"]),
                metadata=md(s["b"]), timeout=10)
    expect_code(code.NOT_FOUND, s["jobs"].Update,
                J.UpdateJobRequest(job_id=j.id, patch=J.JobPatch(priority_class="nope"),
                                   update_mask=["priority_class"]), metadata=md(s["a"]), timeout=10)
    check_eq(row(c, j.id), before, "nothing refused changed the job")
    for kw in (dict(begin="2027-02-30T00:00:00Z"), dict(begin="now+1hour")):
        expect_code(code.INVALID_ARGUMENT, s["jobs"].Submit,
                    J.SubmitJobRequest(job=J.JobSpec(nodes=1, gpus_per_node=1, command=["x"], **kw)),
                    metadata=md(s["a"]), timeout=10)


def test_array_submit(c):
    s = setup(c)
    J, code = s["J"], s["grpc"].StatusCode
    j = submit(array="0-4:2%1", hold=True)
    check_eq((j.array_job_id, j.array_task_id, j.array), (j.id, 0, "0-4:2%1"))
    rows = c.sql("SELECT array_task_id, array_throttle FROM jobs WHERE array_job_id = $1 ORDER BY id",
                 j.id)
    check_eq(rows, [("0", "1"), ("2", "1"), ("4", "1")])
    g = s["jobs"].Get(J.GetJobRequest(job_id=int(c.sql_value(
        "SELECT id FROM jobs WHERE array_job_id = $1 AND array_task_id = 4", j.id))),
        metadata=md(s["a"]), timeout=10)
    check_eq((g.array_job_id, g.array_task_id), (j.id, 4))
    n = c.sql_value("SELECT count(*) FROM jobs")
    for bad in ("0-", "1,1", "0-99999"):
        expect_code(code.INVALID_ARGUMENT, s["jobs"].Submit,
                    J.SubmitJobRequest(job=J.JobSpec(nodes=1, gpus_per_node=1, command=["x"], array=bad)),
                    metadata=md(s["a"]), timeout=10)
    check_eq(c.sql_value("SELECT count(*) FROM jobs"), n)
    # an array with an idempotency key: a retry answers the same first task, writes nothing
    req = J.SubmitJobRequest(job=J.JobSpec(nodes=1, gpus_per_node=1, command=["x"], array="0-3", hold=True),
                             idempotency_key="arr-k")
    first = s["jobs"].Submit(req, metadata=md(s["a"]), timeout=10)
    check_eq((first.replayed, first.job.array_job_id), (False, first.job.id), first)
    n = c.sql_value("SELECT count(*) FROM jobs")
    again = s["jobs"].Submit(req, metadata=md(s["a"]), timeout=10)
    check_eq((again.replayed, again.job.id), (True, first.job.id), again)
    check_eq(c.sql_value("SELECT count(*) FROM jobs"), n)
    # a singleton dependency through gRPC (no job_id)
    d = submit(dependencies=[J.Dependency(type="singleton")], hold=True)
    check_eq([(x.type, x.job_id) for x in d.dependencies], [("singleton", 0)])


if __name__ == "__main__":
    harness.main(api=True)
