"""Jobs endpoints end to end: submit/list/get/cancel, time limits, batch
all-or-nothing, quotas, events + NOTIFY, tenant isolation (API-CORE)."""
import subprocess
import time

import harness
from harness import check, check_eq
from test_jobs_common import count_jobs, job, tenant, token


def test_submit_get_list_cancel(c):
    tenant(c, "ml")
    st, hdr, j = c.api("POST", "/v1/jobs", job("ml", name="train", nodes=2, gpus_per_node=8,
                                                  command=["torchrun", "train.py"],
                                                  env={"A": "1"}, labels={"team": "vision"},
                                                  time_limit="1:30:00", min_nodes=1,
                                                  topology={"required": "rack"}))
    check_eq(st, 201, j)
    check_eq(hdr.get("location"), "/v1/jobs/%d" % j["id"])
    for k, v in [("state", "PENDING"), ("tenant", "ml"), ("name", "train"), ("nodes", 2),
                 ("gpus_per_node", 8), ("time_limit", 5400), ("command", ["torchrun", "train.py"]),
                 ("env", {"A": "1"}), ("labels", {"team": "vision"}), ("min_nodes", 1),
                 ("priority_class", "normal"), ("pending_reason", "Priority"),
                 ("topology", {"required": "rack", "preferred": None})]:
        check_eq(j[k], v, k)
    check(j["created_at"].endswith("Z"), j["created_at"])
    st, _, g = c.api("GET", "/v1/jobs/%d" % j["id"])
    check_eq(st, 200, g)
    for k in ("id", "state", "tenant", "command", "env", "labels", "time_limit", "created_at"):
        check_eq(g[k], j[k], k)
    check_eq(g["runs"], [])
    check_eq([e["kind"] for e in g["events"]], ["job.submitted"])
    st, _, lst = c.api("GET", "/v1/jobs?tenant=ml&label=team=vision&state=PENDING")
    check_eq(st, 200, lst)
    check_eq([x["id"] for x in lst["items"]], [j["id"]])
    check_eq(lst["next_cursor"], None)
    st, _, lst = c.api("GET", "/v1/jobs?tenant=ml&label=team=other")
    check_eq(lst["items"], [])
    st, _, x = c.api("POST", "/v1/jobs/%d/cancel" % j["id"])
    check_eq(st, 200, x)
    check_eq(x["state"], "CANCELLED")
    check_eq(x["pending_reason"], None)
    check(x["ended_at"] is not None)
    st, _, x = c.api("POST", "/v1/jobs/%d/cancel" % j["id"])
    check_eq(st, 409, x)
    check_eq(x["type"], "https://muster.dev/problems/invalid-state")
    kinds = c.sql("SELECT kind FROM events WHERE job_id = $1 ORDER BY id", j["id"])
    check_eq([k[0] for k in kinds], ["job.submitted", "job.cancelled"])


def test_cancel_running_orders_stop(c):
    st, _, j = c.api("POST", "/v1/jobs", job("root"))
    check_eq(st, 201, j)
    # what the scheduler would do: start it on a run
    c.sql("UPDATE jobs SET state = 'RUNNING', started_at = now() WHERE id = $1", j["id"])
    c.sql("INSERT INTO runs (job_id, attempt, epoch, state, nodes, gpus_per_node, time_limit)"
          " VALUES ($1, 1, 1, 'RUNNING', 1, 1, 60)", j["id"])
    st, _, x = c.api("POST", "/v1/jobs/%d/cancel" % j["id"])
    check_eq(st, 200, x)
    check_eq(x["state"], "RUNNING")
    check_eq(c.sql("SELECT state, stop_reason FROM runs WHERE job_id = $1", j["id"]),
             [("STOPPING", "cancel")])
    check_eq(c.sql_value("SELECT kind FROM events WHERE job_id = $1 ORDER BY id DESC LIMIT 1",
                         j["id"]), "job.cancel_requested")


def test_time_limits(c):
    for given, want in [(90, 90), ("90", 5400), ("90:30", 5430), ("1:30:00", 5400),
                        ("2-12", 216000), ("2-00:00:00", 172800)]:
        st, _, j = c.api("POST", "/v1/jobs", job("root", time_limit=given))
        check_eq(st, 201, given, j)
        check_eq(j["time_limit"], want, given)
    before = count_jobs(c)
    for bad in ["1:2:3:4", "abc", "", "1-", "-1", "1.5", 0, -5, 2 ** 31]:
        st, _, p = c.api("POST", "/v1/jobs", job("root", time_limit=bad))
        check_eq(st, 400, bad, p)
        check_eq(p["field"], "time_limit", bad)
    check_eq(count_jobs(c), before)
    # class max and tenant quota cap it
    c.sql("UPDATE priority_classes SET max_time_limit = 7200 WHERE name = 'high'")
    st, _, p = c.api("POST", "/v1/jobs", job("root", priority_class="high", time_limit=7201))
    check_eq(st, 400, p)
    check_eq(p["type"], "https://muster.dev/problems/out-of-range")
    tenant(c, "capped", max_time=600)
    st, _, j = c.api("POST", "/v1/jobs", job("capped"))
    check_eq(st, 201, j)
    check_eq(j["time_limit"], 600)  # the class default, capped by the tenant
    st, _, p = c.api("POST", "/v1/jobs", job("capped", time_limit=601))
    check_eq(st, 400, p)
    check_eq(p["field"], "time_limit")


def test_topology_levels_from_settings(c):
    st, _, p = c.api("POST", "/v1/jobs", job("root", topology={"preferred": "pod"}))
    check_eq(st, 400, p)
    check_eq((p["type"], p["field"]), ("https://muster.dev/problems/invalid-request",
                                       "topology.preferred"))
    check_eq(c.api("POST", "/v1/jobs", job("root", topology={"preferred": "block"}))[0], 201)
    c.sql("UPDATE settings SET value = '[\"block\", \"rack\", \"pod\"]' WHERE key = 'topology_levels'")
    st, _, j = c.api("POST", "/v1/jobs", job("root", topology={"required": "pod"}))
    check_eq(st, 201, j)
    check_eq(j["topology"], {"required": "pod", "preferred": None})


def test_batch_all_or_nothing(c):
    tenant(c, "batchy")
    before = count_jobs(c)
    jobs = [job("batchy", name="b%d" % i) for i in range(50)]
    jobs[37] = job("batchy", nodes=0)
    st, _, p = c.api("POST", "/v1/jobs/batch", {"jobs": jobs})
    check_eq(st, 400, p)
    check_eq(p["field"], "jobs.37.nodes")
    jobs[37] = job("batchy", priority_class="nope")
    st, _, p = c.api("POST", "/v1/jobs/batch", {"jobs": jobs})
    check_eq(st, 404, p)
    check_eq(p["field"], "jobs.37.priority_class")
    check_eq(count_jobs(c), before)
    jobs[37] = job("batchy", name="b37")
    st, _, r = c.api("POST", "/v1/jobs/batch", {"jobs": jobs})
    check_eq(st, 201, r)
    check_eq([x["name"] for x in r["items"]], ["b%d" % i for i in range(50)])
    ids = [x["id"] for x in r["items"]]
    check_eq(ids, sorted(ids))
    check_eq(count_jobs(c), before + 50)
    for bad, field in [({"jobs": []}, "jobs"), ({"jobs": 3}, "jobs"), ({}, "jobs"),
                       ({"jobs": [job("batchy")], "x": 1}, "x"), ({"jobs": [5]}, "jobs.0")]:
        st, _, p = c.api("POST", "/v1/jobs/batch", bad)
        check_eq(st, 400, bad, p)
        check_eq(p.get("field"), field, bad)
    st, _, p = c.api("POST", "/v1/jobs/batch", {"jobs": [job("batchy")] * 10001})
    check_eq(st, 400, p)
    check_eq(count_jobs(c), before + 50)


def test_quota_pending(c):
    tenant(c, "small", max_pending=3)
    tok = token(c, "tenant", "small", "ann")
    for i in range(3):
        st, _, j = c.api("POST", "/v1/jobs", job(), token=tok)
        check_eq(st, 201, j)
        check_eq(j["user"], "ann")
        check_eq(j["tenant"], "small")
    st, _, p = c.api("POST", "/v1/jobs", job(), token=tok)
    check_eq(st, 429, p)
    check_eq(p["type"], "https://muster.dev/problems/quota-exceeded")
    st, _, p = c.api("POST", "/v1/jobs/batch", {"jobs": [job()]}, token=tok)
    check_eq(st, 429, p)
    check_eq(count_jobs(c, "tenant_id = (SELECT id FROM tenants WHERE name = 'small')"), 3)
    # cancelling one frees a slot
    jid = int(c.sql_value("SELECT min(id) FROM jobs WHERE user_name = 'ann'"))
    check_eq(c.api("POST", "/v1/jobs/%d/cancel" % jid, token=tok)[0], 200)
    check_eq(c.api("POST", "/v1/jobs", job(), token=tok)[0], 201)


def test_notify_on_submit_and_cancel(c):
    p = subprocess.Popen(["psql", "-X", "-q", "-d", c.db_url, "-c", "LISTEN muster_sched",
                          "-c", "SELECT pg_sleep(3)"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    time.sleep(1.0)
    st, _, j = c.api("POST", "/v1/jobs", job("root"))
    check_eq(st, 201, j)
    check_eq(c.api("POST", "/v1/jobs/%d/cancel" % j["id"])[0], 200)
    out = p.communicate(timeout=30)[0].decode()
    check("submit:%d" % j["id"] in out, out)
    check("cancel:%d" % j["id"] in out, out)


def test_tenant_isolation(c):
    tenant(c, "org")
    tenant(c, "team", parent="org")
    tenant(c, "other")
    org = token(c, "tenant", "org", "olga")
    team = token(c, "tenant", "team", "tim")
    other = token(c, "tenant", "other", "oscar")
    reader = token(c, "reader", "org")
    st, _, jt = c.api("POST", "/v1/jobs", job(), token=team)
    check_eq(st, 201, jt)
    check_eq(jt["tenant"], "team")
    st, _, jo = c.api("POST", "/v1/jobs", job("team"), token=org)  # parent submits into child
    check_eq(st, 201, jo)
    st, _, p = c.api("POST", "/v1/jobs", job("org"), token=team)  # child into parent: not visible
    check_eq(st, 404, p)
    check_eq(p["field"], "tenant")
    st, _, p = c.api("POST", "/v1/jobs", job(user="mallory"), token=team)
    check_eq(st, 403, p)
    check_eq(p["field"], "user")
    st, _, p = c.api("POST", "/v1/jobs", job(dependencies=[{"type": "afterok", "job_id": jt["id"]}]),
                     token=other)
    check_eq(st, 404, p)
    check_eq(p["field"], "dependencies.0.job_id")
    for path in ["/v1/jobs/%d" % jt["id"]]:
        check_eq(c.api("GET", path, token=other)[0], 404)
        check_eq(c.api("GET", path, token=org)[0], 200)
        check_eq(c.api("GET", path, token=reader)[0], 200)
    check_eq(c.api("POST", "/v1/jobs/%d/cancel" % jt["id"], token=other)[0], 404)
    check_eq(c.api("POST", "/v1/jobs/%d/cancel" % jt["id"], token=reader)[0], 403)
    check_eq(c.api("POST", "/v1/jobs", job(), token=reader)[0], 403)
    st, _, lst = c.api("GET", "/v1/jobs?limit=1000", token=other)
    check_eq(lst["items"], [])
    st, _, lst = c.api("GET", "/v1/jobs?limit=1000", token=org)
    check_eq(sorted(x["id"] for x in lst["items"]), sorted([jt["id"], jo["id"]]))
    st, _, lst = c.api("GET", "/v1/jobs?limit=1000&tenant=team", token=team)
    check_eq(sorted(x["id"] for x in lst["items"]), sorted([jt["id"], jo["id"]]))
    # the tenant filter is a subtree, intersected with what the caller sees
    st, _, lst = c.api("GET", "/v1/jobs?limit=1000&tenant=org", token=team)
    check_eq(sorted(x["id"] for x in lst["items"]), sorted([jt["id"], jo["id"]]))
    st, _, lst = c.api("GET", "/v1/jobs?limit=1000&tenant=org", token=other)
    check_eq(lst["items"], [])
    check_eq(c.api("GET", "/v1/jobs/%d" % jt["id"], token="mst_nope")[0], 401)
    check_eq(c.api("GET", "/v1/jobs/%d" % jt["id"], token="")[0], 401)
    # a revoked token stops working (after the auth cache's short TTL)
    c.sql("UPDATE api_tokens SET revoked_at = now() WHERE secret_sha256 = encode(sha256($1::bytea), 'hex')",
          other)
    c.wait_until(lambda: c.api("GET", "/v1/jobs", token=other)[0] == 401, 10, "revocation")


def test_service_endpoints(c):
    check_eq(c.api("GET", "/healthz", token="")[0], 200)
    check_eq(c.api("GET", "/readyz", token="")[0], 200)
    st, hdr, spec = c.api("GET", "/openapi.json", token="")
    check_eq(st, 200)
    check(isinstance(spec, dict) and "paths" in spec, str(spec)[:200])
    st, _, m = c.api("GET", "/metrics", token="")
    check_eq(st, 200)
    check('muster_http_requests_total{route="POST /v1/jobs",status="201"}' in m, m[:2000])
    check("muster_db_pool_queue_length" in m)
    check("muster_http_request_duration_seconds_bucket" in m)
    st, _, w = c.api("GET", "/v1/whoami")
    check_eq(w["role"], "admin", w)


if __name__ == "__main__":
    harness.main(api=True)
