"""Quotas over REST: PUT/GET/DELETE per tenant and GPU model, GET /v1/quotas;
validation (max_gpus >= guaranteed, non-negative, null = no limit), roles,
scoping, and bad requests that change nothing."""
import harness
from harness import check, check_eq
from test_admin_common import expect_problem, events, walk


def test_setup(c):
    c.make_tenant("ml")
    c.make_tenant("vision", parent="ml")
    c.make_tenant("cv")


def test_put_get(c):
    st, _, q = c.api("PUT", "/v1/tenants/ml/quota", {"guaranteed_gpus": 4, "max_gpus": 8,
                                                      "max_running_jobs": 10, "max_time_limit": "2-00"})
    check_eq(st, 200, q)
    check_eq(q["tenant"], "ml")
    check_eq(q["gpu_model"], "")
    check_eq((q["guaranteed_gpus"], q["max_gpus"], q["max_running_jobs"]), (4, 8, 10))
    check_eq(q["max_pending_jobs"], None)
    check_eq(q["max_time_limit"], 172800)
    row = c.sql("SELECT guaranteed_gpus, max_gpus, max_pending_jobs, max_time_limit FROM quotas q"
                " JOIN tenants t ON t.id = q.tenant_id WHERE t.name = 'ml'")
    check_eq(row, [("4", "8", None, "172800")])
    check_eq(len(events(c, "quota.updated")), 1)
    # PUT replaces: absent limits become "no limit"
    st, _, q = c.api("PUT", "/v1/tenants/ml/quota", {"guaranteed_gpus": 2})
    check_eq((st, q["guaranteed_gpus"], q["max_gpus"], q["max_running_jobs"]), (200, 2, None, None))
    st, _, q2 = c.api("PUT", "/v1/tenants/ml/quota", {"gpu_model": "H100", "max_gpus": 16})
    check_eq((st, q2["gpu_model"], q2["max_gpus"]), (200, "H100", 16))
    st, _, g = c.api("GET", "/v1/tenants/ml/quota")
    check_eq(st, 200, g)
    check_eq([(x["gpu_model"], x["max_gpus"]) for x in g["items"]], [("", None), ("H100", 16)])
    st, _, g = c.api("GET", "/v1/tenants/cv/quota")
    check_eq((st, g["items"]), (200, []))
    check_eq(c.api("PUT", "/v1/tenants/vision/quota", {"max_gpus": 0})[0], 200)
    check_eq(c.api("PUT", "/v1/tenants/cv/quota", {"max_pending_jobs": 5})[0], 200)


def test_validation(c):
    p = "/v1/tenants/ml/quota"
    expect_problem(c, "PUT", p, {"guaranteed_gpus": 5, "max_gpus": 4}, 400, "out-of-range", "max_gpus")
    expect_problem(c, "PUT", p, {"guaranteed_gpus": -1}, 400, "out-of-range", "guaranteed_gpus")
    expect_problem(c, "PUT", p, {"guaranteed_gpus": True}, 400, "wrong-type", "guaranteed_gpus")
    expect_problem(c, "PUT", p, {"max_gpus": -1}, 400, "out-of-range", "max_gpus")
    expect_problem(c, "PUT", p, {"max_gpus": "8"}, 400, "wrong-type", "max_gpus")
    expect_problem(c, "PUT", p, {"max_running_jobs": 2 ** 31}, 400, "out-of-range", "max_running_jobs")
    expect_problem(c, "PUT", p, {"max_pending_jobs": 2.5}, 400, "wrong-type", "max_pending_jobs")
    expect_problem(c, "PUT", p, {"max_time_limit": 0}, 400, "out-of-range", "max_time_limit")
    expect_problem(c, "PUT", p, {"max_time_limit": "soon"}, 400, "invalid-request", "max_time_limit")
    expect_problem(c, "PUT", p, {"gpu_model": "G" * 65}, 400, "string-too-long", "gpu_model")
    expect_problem(c, "PUT", p, {"tenant": "cv"}, 400, "unknown-field", "tenant")
    expect_problem(c, "PUT", p, None, 400, "malformed-json", raw="{")
    expect_problem(c, "PUT", p, None, 400, "wrong-type", raw="[]")
    expect_problem(c, "PUT", "/v1/tenants/nope/quota", {"max_gpus": 1}, 404, "not-found")
    expect_problem(c, "PUT", "/v1/tenants/NOPE/quota", {"max_gpus": 1}, 404, "not-found")
    expect_problem(c, "DELETE", p + "?gpu_model=A100", None, 404, "not-found")
    expect_problem(c, "DELETE", p + "?model=H100", None, 400, "unknown-field", "model")
    for bad in ("root", "nope|", "root/ML|x"):
        expect_problem(c, "GET", "/v1/quotas?cursor=" + bad, None, 400, "invalid-request", "cursor")


def test_roles_and_scope(c):
    ml = c.make_token("tenant", tenant="ml")
    cv = c.make_token("tenant", tenant="cv")
    rd = c.make_token("reader")
    ag = c.make_token("agent", node="n1")
    for tok in (ml, rd):
        expect_problem(c, "PUT", "/v1/tenants/ml/quota", {"max_gpus": 1}, 403, "forbidden", token=tok)
        expect_problem(c, "DELETE", "/v1/tenants/ml/quota", None, 403, "forbidden", token=tok)
    expect_problem(c, "GET", "/v1/quotas", None, 403, "forbidden", token=ag)
    expect_problem(c, "GET", "/v1/quotas", None, 401, "unauthenticated", token="")
    st, _, b = c.api("GET", "/v1/quotas", token=ml)
    check_eq(st, 200, b)
    check_eq([(q["tenant"], q["gpu_model"]) for q in b["items"]], [("ml", ""), ("ml", "H100"), ("vision", "")])
    check_eq(c.api("GET", "/v1/tenants/vision/quota", token=ml)[0], 200)
    expect_problem(c, "GET", "/v1/tenants/cv/quota", None, 404, "not-found", token=ml)
    expect_problem(c, "GET", "/v1/tenants/ml/quota", None, 404, "not-found", token=cv)
    st, _, b = c.api("GET", "/v1/quotas", token=cv)
    check_eq([q["tenant"] for q in b["items"]], ["cv"])
    st, _, b = c.api("GET", "/v1/quotas", token=rd)
    check_eq(len(b["items"]), 4)
    items = walk(c, "/v1/quotas", limit=1)
    check_eq([(q["tenant"], q["gpu_model"]) for q in items],
             [("cv", ""), ("ml", ""), ("ml", "H100"), ("vision", "")])


def test_delete(c):
    st, _, b = c.api("DELETE", "/v1/tenants/ml/quota?gpu_model=H100")
    check_eq(st, 204, b)
    st, _, g = c.api("GET", "/v1/tenants/ml/quota")
    check_eq([q["gpu_model"] for q in g["items"]], [""])
    check_eq(c.api("DELETE", "/v1/tenants/ml/quota")[0], 204)
    expect_problem(c, "DELETE", "/v1/tenants/ml/quota", None, 404, "not-found")
    check_eq(len(events(c, "quota.deleted")), 2)


if __name__ == "__main__":
    harness.main(api=True)
