"""Idempotency-Key under concurrency: many clients retrying the same submit at
once get one job; the same key with another body is 409 (API-CORE)."""
import threading

import harness
from harness import check, check_eq
from test_jobs_common import count_jobs, dumps, job, tenant, token


def submit_many(c, tok, key, body, n):
    results = [None] * n

    def one(i):
        results[i] = c.api("POST", "/v1/jobs", token=tok, raw=body,
                           headers={"Idempotency-Key": key, "Content-Type": "application/json"})

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_concurrent_same_key_one_job(c):
    tenant(c, "idem")
    tok = token(c, "tenant", "idem", "ida")
    for round_ in range(5):
        key = "retry-%d" % round_
        body = dumps(job(name="r%d" % round_))
        res = submit_many(c, tok, key, body, 24)
        ids = {b["id"] for st, _, b in res}
        check_eq(len(ids), 1, res[:2])
        sts = sorted(st for st, _, _ in res)
        check_eq(sts.count(201), 1, sts)
        check_eq(sts.count(200), 23, sts)
        replayed = [h.get("idempotent-replayed") for st, h, _ in res if st == 200]
        check(all(r == "true" for r in replayed), replayed)
        check_eq(count_jobs(c, "idempotency_key = $1", key), 1)
    check_eq(count_jobs(c, "tenant_id = (SELECT id FROM tenants WHERE name = 'idem')"), 5)


def test_same_key_other_body_conflicts(c):
    tenant(c, "idem2")
    tok = token(c, "tenant", "idem2", "ida")
    st, _, j = c.api("POST", "/v1/jobs", job(name="a"), token=tok, headers={"Idempotency-Key": "k"})
    check_eq(st, 201, j)
    st, _, p = c.api("POST", "/v1/jobs", job(name="b"), token=tok, headers={"Idempotency-Key": "k"})
    check_eq(st, 409, p)
    check_eq(p["type"], "https://muster.dev/problems/idempotency-key-reused")
    # the same key in another tenant is another job
    tenant(c, "idem3")
    tok3 = token(c, "tenant", "idem3", "ida")
    st, _, j3 = c.api("POST", "/v1/jobs", job(name="a"), token=tok3, headers={"Idempotency-Key": "k"})
    check_eq(st, 201, j3)
    check(j3["id"] != j["id"])
    # mixed bodies racing on one key: one job, every other answer is its replay or 409
    res = submit_many(c, tok, "race", dumps(job(name="x")), 8) + \
        submit_many(c, tok, "race", dumps(job(name="y")), 8)
    created = [b for st, _, b in res if st == 201]
    check_eq(len(created), 1, [r[0] for r in res])
    for st, _, b in res:
        check(st in (200, 201, 409), st, b)
        if st == 200:
            check_eq(b["id"], created[0]["id"])
    for bad in ["", "x" * 256, "bad\tkey", "kl\u00fcssel".encode().decode("latin-1")]:
        st, _, p = c.api("POST", "/v1/jobs", job(), token=tok, headers={"Idempotency-Key": bad})
        check_eq(st, 400, repr(bad), p)
        check(isinstance(p, dict), repr(bad), p)
        check_eq(p["field"], "Idempotency-Key", repr(bad))


if __name__ == "__main__":
    harness.main(api=True)
