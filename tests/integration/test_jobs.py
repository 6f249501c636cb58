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


def test_batch_streamed_in_chunks(c):
    """A batch alone in its group is decoded and checked chunk by chunk
    while earlier rows are written (500 jobs a chunk): errors still come in
    the order of decoding every job first, a failure past the first chunk
    writes nothing, and a good batch writes every job with its
    job.submitted event, in id order."""
    tenant(c, "streamy")
    tenant(c, "streamy2")
    parent = c.api("POST", "/v1/jobs", job("streamy"))[2]["id"]
    before = count_jobs(c)
    events_before = int(c.sql_value("SELECT count(*) FROM events"))
    jobs = [job("streamy" if i % 3 else "streamy2", name="s%d" % i) for i in range(1200)]

    def post(js):
        return c.api("POST", "/v1/jobs/batch", {"jobs": js}, timeout=120)

    # a database check fails early, a decoding error comes late: decoding wins
    bad = list(jobs)
    bad[10] = job("streamy", priority_class="nope")
    bad[1100] = job("streamy", nodes=0)
    st, _, p = post(bad)
    check_eq(st, 400, p)
    check_eq(p["field"], "jobs.1100.nodes")
    bad[1100] = 5
    st, _, p = post(bad)
    check_eq((st, p["field"]), (400, "jobs.1100"), p)
    # only database checks fail: the first one in job order
    bad[1100] = job("nosuch")
    st, _, p = post(bad)
    check_eq((st, p["field"]), (404, "jobs.10.priority_class"), p)
    bad[10] = jobs[10]
    st, _, p = post(bad)
    check_eq((st, p["field"]), (404, "jobs.1100.tenant"), p)
    bad[1100] = job("streamy", dependencies=[{"type": "afterok", "job_id": 999999999}])
    st, _, p = post(bad)
    check_eq((st, p["field"]), (404, "jobs.1100.dependencies.0.job_id"), p)
    check_eq(count_jobs(c), before)
    check_eq(int(c.sql_value("SELECT count(*) FROM events")), events_before)

    good = list(jobs)
    good[1100] = job("streamy", name="s1100", dependencies=[{"type": "afterok", "job_id": parent}],
                     time_limit="2:00", labels={"k": "v"}, env={"E": "tab\there"})
    st, _, r = post(good)
    check_eq(st, 201, r)
    items = r["items"]
    check_eq([x["name"] for x in items], ["s%d" % i for i in range(1200)])
    ids = [x["id"] for x in items]
    check_eq(ids, sorted(ids))
    check_eq(len(set(ids)), 1200)
    check_eq(len({x["created_at"] for x in items}), 1)
    check_eq([x["tenant"] for x in items[:3]], ["streamy2", "streamy", "streamy"])
    check_eq(items[1100]["time_limit"], 120)
    check_eq(items[1100]["dependencies"], [{"type": "afterok", "job_id": parent}])
    check_eq(count_jobs(c), before + 1200)
    # one job.submitted per job, in job order, with the job's tenant
    rows = c.sql("SELECT e.job_id, t.name FROM events e JOIN tenants t ON t.id = e.tenant_id"
                 " WHERE e.kind = 'job.submitted' AND e.job_id >= $1 ORDER BY e.id", ids[0])
    check_eq([int(r[0]) for r in rows], ids)
    check_eq([r[1] for r in rows[:3]], ["streamy2", "streamy", "streamy"])
    st, _, g = c.api("GET", "/v1/jobs/%d" % ids[1100])
    check_eq(st, 200, g)
    check_eq([e["kind"] for e in g["events"]], ["job.submitted"])
    for k in ("name", "tenant", "env", "labels", "time_limit", "created_at", "dependencies"):
        check_eq(g[k], items[1100][k], k)


def test_submit_ids_not_consecutive(c):
    """A group's ids come back from the database as one row, first..last
    when they are consecutive; when they are not (another session drew
    from the sequence meanwhile, here a sequence stepping by 3), the listed
    ids are used, still in input order, for the rows, the events and the
    reply, on both paths (a streamed batch, a single submit)."""
    tenant(c, "gappy")
    c.sql("ALTER SEQUENCE jobs_id_seq INCREMENT BY 3")
    try:
        jobs = [job("gappy", name="g%d" % i) for i in range(700)]
        st, _, r = c.api("POST", "/v1/jobs/batch", {"jobs": jobs}, timeout=120)
        check_eq(st, 201, r)
        ids = [x["id"] for x in r["items"]]
        check_eq([b - a for a, b in zip(ids, ids[1:])], [3] * 699)
        st, _, one = c.api("POST", "/v1/jobs", job("gappy", name="single"))
        check_eq(st, 201, one)
        check_eq(one["id"], ids[-1] + 3)
    finally:
        c.sql("ALTER SEQUENCE jobs_id_seq INCREMENT BY 1")
    rows = c.sql("SELECT id, name FROM jobs WHERE id >= $1 ORDER BY id", ids[0])
    check_eq([(int(x[0]), x[1]) for x in rows],
             list(zip(ids, ["g%d" % i for i in range(700)])) + [(one["id"], "single")])
    ev = c.sql("SELECT job_id FROM events WHERE kind = 'job.submitted' AND job_id >= $1"
               " ORDER BY id", ids[0])
    check_eq([int(x[0]) for x in ev], ids + [one["id"]])
    st, _, g = c.api("GET", "/v1/jobs/%d" % ids[350])
    check_eq((st, g["name"]), (200, "g350"), g)


def test_batch_quota_and_tenant_token(c):
    """A tenant token's batch takes its tenant; the pending quota counts the
    whole batch (and what is already pending)."""
    tenant(c, "capq", max_pending=600)
    tok = token(c, "tenant", "capq", "bea")
    st, _, p = c.api("POST", "/v1/jobs/batch", {"jobs": [job() for _ in range(601)]}, token=tok,
                     timeout=60)
    check_eq(st, 429, p)
    st, _, r = c.api("POST", "/v1/jobs/batch", {"jobs": [job() for _ in range(599)]}, token=tok,
                     timeout=60)
    check_eq(st, 201, r)
    check_eq({(x["tenant"], x["user"]) for x in r["items"]}, {("capq", "bea")})
    st, _, p = c.api("POST", "/v1/jobs/batch", {"jobs": [job(), job()]}, token=tok)
    check_eq(st, 429, p)
    st, _, p = c.api("POST", "/v1/jobs/batch", {"jobs": [job(user="x")]}, token=tok)
    check_eq((st, p["field"]), (403, "jobs.0.user"), p)
    check_eq(count_jobs(c, "tenant_id = (SELECT id FROM tenants WHERE name = 'capq')"), 599)


def test_batch_grouped_with_single_submits(c):
    """Small batches and single submits sent at once share group
    transactions (each batch decoded before BEGIN): every one succeeds or
    fails alone, all or nothing per batch."""
    import threading
    tenant(c, "busy")
    before = count_jobs(c, "tenant_id = (SELECT id FROM tenants WHERE name = 'busy')")
    out = []

    def client(i):
        if i % 4 == 0:
            js = [job("busy", name="g%d.%d" % (i, k)) for k in range(40)]
            if i % 8 == 0:
                js[7] = job("busy", nodes=0)
            st, _, r = c.api("POST", "/v1/jobs/batch", {"jobs": js}, timeout=60)
            out.append((i, st, len(r["items"]) if st == 201 else r.get("field")))
        else:
            st, _, r = c.api("POST", "/v1/jobs", job("busy", name="g%d" % i), timeout=60)
            out.append((i, st, 1 if st == 201 else None))

    for _ in range(3):
        threads = [threading.Thread(target=client, args=(i,)) for i in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    want = 0
    for i, st, n in out:
        if i % 8 == 0:
            check_eq((st, n), (400, "jobs.7.nodes"), i)
        elif i % 4 == 0:
            check_eq((st, n), (201, 40), i)
            want += 40
        else:
            check_eq((st, n), (201, 1), i)
            want += 1
    got = c.sql("SELECT t.name, count(*) FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
                " WHERE j.name LIKE 'g%' GROUP BY 1")
    check_eq(count_jobs(c, "tenant_id = (SELECT id FROM tenants WHERE name = 'busy')"),
             before + want, got)


def test_batch_split_body_errors(c):
    """A {"jobs": [...]} body is split and each job parsed on its own; any
    error is still the one parsing the whole body gives: malformed JSON, a
    duplicate key or a too large number anywhere beats a check that fails
    earlier, with the same problem as parsing it whole (POST /v1/jobs
    parses one job whole)."""
    import json as js
    tenant(c, "splitty")
    before = count_jobs(c)
    good = js.dumps(job("splitty"))
    early_bad = js.dumps(job("splitty", priority_class="nope"))
    for broken in ['{"nodes": 1,, "gpus_per_node": 1}', '{"nodes": 1, "nodes": 2}',
                   '{"nodes": 123456789012345678901234567890, "gpus_per_node": 1}',
                   '{"nodes": 1 "gpus_per_node": 1}', '[1, 2}']:
        items = [good] * 1200
        items[10] = early_bad
        items[1100] = broken
        body = '{ "jobs" :\n [' + ",\n".join(items) + '] }\n'
        st, _, p = c.api("POST", "/v1/jobs/batch", raw=body, timeout=120,
                         headers={"Content-Type": "application/json"})
        whole_st, _, whole = c.api("POST", "/v1/jobs", raw=broken,
                                   headers={"Content-Type": "application/json"})
        check_eq((st, p.get("type")), (whole_st, whole.get("type")), broken, p, whole)
        check(st == 400 and p.get("field", "") in ("", None), broken, p)
        check("line 1102 " in p.get("detail", ""), broken, p)
    # a body that does not split (another key) is parsed whole
    st, _, p = c.api("POST", "/v1/jobs/batch", raw='{"jobs": [%s], "x": 1}' % good,
                     headers={"Content-Type": "application/json"})
    check_eq((st, p.get("field")), (400, "x"), p)
    st, _, p = c.api("POST", "/v1/jobs/batch", raw='{"jobs": [%s, 7]}' % good,
                     headers={"Content-Type": "application/json"})
    check_eq((st, p.get("field")), (400, "jobs.1"), p)
    check_eq(count_jobs(c), before)
    st, _, r = c.api("POST", "/v1/jobs/batch", raw='\t{"jobs":[%s ,%s]}  ' % (good, good),
                     headers={"Content-Type": "application/json"})
    check_eq((st, len(r["items"])), (201, 2), r)


def sql_error(c, sql):
    """The server's error for `sql`, or None when it succeeded."""
    try:
        c.sql(sql)
    except RuntimeError as e:
        return str(e)
    return None


def test_job_references_checked_per_statement(c):
    """040_batch: the jobs -> tenants / priority classes rule is checked once
    per statement, with the foreign keys' errors: a missing tenant or class
    is refused, a referenced one cannot be deleted or renumbered."""
    tenant(c, "refd")
    refd = "(SELECT id FROM tenants WHERE name = 'refd')"
    for sql, con in [
            ("INSERT INTO jobs (tenant_id, priority_class_id, nodes, gpus_per_node, time_limit)"
             " VALUES (987654, (SELECT min(id) FROM priority_classes), 1, 1, 60)",
             "jobs_tenant_id_fkey"),
            ("INSERT INTO jobs (tenant_id, priority_class_id, nodes, gpus_per_node, time_limit)"
             " SELECT " + refd + ", 32000, 1, 1, 60", "jobs_priority_class_id_fkey")]:
        e = sql_error(c, sql)
        check(e and 'violates foreign key constraint "%s"' % con in e, sql, e)
    check_eq(c.api("POST", "/v1/jobs", job("refd"))[0], 201)
    e = sql_error(c, "UPDATE jobs SET tenant_id = 987654 WHERE tenant_id = " + refd)
    check(e and "jobs_tenant_id_fkey" in e, e)
    check(sql_error(c, "UPDATE jobs SET name = 'renamed' WHERE tenant_id = " + refd) is None)
    for sql in ["DELETE FROM tenants WHERE name = 'refd'",
                "UPDATE tenants SET id = 987654 WHERE name = 'refd'",
                "DELETE FROM priority_classes WHERE is_default"]:
        e = sql_error(c, sql)
        check(e and "update or delete on table" in e, sql, e)
    st, _, p = c.api("DELETE", "/v1/tenants/refd")
    check_eq(st, 409, p)


def test_list_fields(c):
    """GET /v1/jobs?fields=...: each item carries id and just the named
    fields, with the values of the whole listing; `array` brings the three
    array fields; a bad list is 400 on `fields` and lists nothing."""
    tenant(c, "lf")
    st, _, one = c.api("POST", "/v1/jobs", job("lf", name="solo", nodes=2))
    check_eq(st, 201, one)
    st, _, arr = c.api("POST", "/v1/jobs", job("lf", name="arr", array="0-2"))
    check_eq(st, 201, arr)
    st, _, full = c.api("GET", "/v1/jobs?tenant=lf")
    check_eq(st, 200, full)
    check_eq(len(full["items"]), 4, full)
    want = "state,name,nodes,time_limit,pending_reason,array"
    st, _, part = c.api("GET", "/v1/jobs?tenant=lf&fields=" + want)
    check_eq(st, 200, part)
    check_eq(part["next_cursor"], full["next_cursor"])
    array_keys = {"array", "array_job_id", "array_task_id"}
    for f, p in zip(full["items"], part["items"]):
        keys = {"id", "state", "name", "nodes", "time_limit", "pending_reason"}
        if "array" in f:
            keys |= array_keys
        check_eq(set(p), keys, p)
        for k in keys:
            check_eq(p[k], f[k], k)
    check(any("array" in p for p in part["items"]), part)
    st, _, ids = c.api("GET", "/v1/jobs?tenant=lf&fields=id")
    check_eq(st, 200, ids)
    check_eq([set(x) for x in ids["items"]], [{"id"}] * 4)
    st, _, alias = c.api("GET", "/v1/jobs?tenant=lf&fields=array_task_id,launcher")
    check_eq(st, 200, alias)
    check_eq(set(alias["items"][0]), {"id", "launcher", "on_shrink", "signal"})
    check_eq(set(alias["items"][1]), {"id", "launcher", "on_shrink", "signal"} | array_keys)
    for bad in ["", "bogus", "state,", ",state", "state,,name", "STATE", "runs", "events",
                "state;name", "x" * 300, "name,../../etc", "st%C3%A4te"]:
        st, _, p = c.api("GET", "/v1/jobs?tenant=lf&fields=" + bad)
        check_eq(st, 400, bad, p)
        check_eq(p.get("field"), "fields", bad, p)
        check_eq(p["type"], "https://muster.dev/problems/invalid-request", bad, p)
    st, _, p = c.api("GET", "/v1/jobs?tenant=lf&fields=st%00ate")  # refused by the query decoder
    check_eq(st, 400, p)
    # Each field alone (the listing then reads only that field's columns)
    # has the value the whole listing has, for a job with every part set.
    st, _, rich = c.api("POST", "/v1/jobs", job("lf", name="rich", env={"K": "v"},
                                                 labels={"l": "1"}, workdir="/tmp",
                                                 output="o-%j.out", error="e-%j.err",
                                                 begin="2031-01-31T08:00:00Z", hold=True,
                                                 launcher="torchrun",
                                                 dependencies=[{"type": "afterok",
                                                                "job_id": one["id"]}]))
    check_eq(st, 201, rich)
    st, _, full = c.api("GET", "/v1/jobs?tenant=lf")
    check_eq(st, 200, full)
    names = ("state tenant user name priority_class nodes min_nodes gpus_per_node gpu_model"
             " procs_per_node mem_per_node cpus_per_node topology time_limit command env"
             " workdir labels dependencies max_retries output error retries pending_reason"
             " pending_message planned_start exit_code end_reason created_at started_at"
             " ended_at launcher held begin array").split()
    for name in names:
        st, _, part = c.api("GET", "/v1/jobs?tenant=lf&fields=" + name)
        check_eq(st, 200, name, part)
        for f, p in zip(full["items"], part["items"]):
            for k, v in p.items():
                check_eq(v, f[k], name, k)
            check(len(p) > 1 or name == "array", name, p)
    # The next page's cursor also comes ahead of the body, in a header.
    seen, cursor = [], None
    while True:
        st, h, page = c.api("GET", "/v1/jobs?tenant=lf&limit=2" +
                            ("&cursor=" + cursor if cursor else ""))
        check_eq(st, 200, page)
        seen += [x["id"] for x in page["items"]]
        check_eq(h.get("muster-next-cursor"), page["next_cursor"], h)
        cursor = page["next_cursor"]
        if not cursor:
            break
    check_eq(seen, [x["id"] for x in full["items"]])


if __name__ == "__main__":
    harness.main(api=True)
