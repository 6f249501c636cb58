#!/usr/bin/python3
"""POST /v1/jobs/cancel (api/rest_bulk.c) and `muster cancel` with many ids:
one request cancels many jobs, each id's outcome in the answer; another
tenant's job is reported not found and stays PENDING; an ended job is
invalid-state; array ids with "array": true cancel every task; bad bodies
(not an object, no ids, not an array, strings, zero, too many, duplicates,
unknown fields) answer 400 and change nothing; `muster cancel` of 500 ids
sends one request and reports each failing id."""
import os
import subprocess

import harness
from harness import check, check_eq

S = {}


def setup(c):
    if not S:
        c.make_tenant("bulk")
        c.make_tenant("other")
        S["user"] = c.make_token("tenant", tenant="bulk", user="bo")
        S["other"] = c.make_token("tenant", tenant="other", user="ol")
    return S


def submit(c, token, n=1, **kw):
    body = {"jobs": [dict({"nodes": 1, "gpus_per_node": 1, "command": ["true"]}, **kw)
                     for _ in range(n)]}
    st, _, b = c.api("POST", "/v1/jobs/batch", body, token=token)
    check_eq(st, 201, b)
    return [j["id"] for j in b["items"]]


def states(c, ids):
    return [r[0] for r in c.sql("SELECT state FROM jobs WHERE id = ANY($1::bigint[]) ORDER BY id",
                                "{%s}" % ",".join(map(str, ids)))]


def test_mixed_outcomes(c):
    s = setup(c)
    mine = submit(c, s["user"], 3)
    theirs = submit(c, s["other"], 1)
    st, _, b = c.api("POST", "/v1/jobs/cancel", {"ids": [mine[0]]}, token=s["user"])
    check_eq(st, 200, b)
    ids = [mine[1], theirs[0], mine[0], 99999999, mine[2]]
    st, _, b = c.api("POST", "/v1/jobs/cancel", {"ids": ids}, token=s["user"])
    check_eq(st, 200, b)
    check_eq([r["id"] for r in b["results"]], ids, "in the order given")
    ok = {r["id"]: r for r in b["results"]}
    check_eq(ok[mine[1]]["ok"], True, b)
    check_eq(ok[mine[1]]["state"], "CANCELLED", b)
    check_eq(ok[theirs[0]]["ok"], False, b)
    check(ok[theirs[0]]["problem"]["type"].endswith("/not-found"), b)
    check(ok[99999999]["problem"]["type"].endswith("/not-found"), b)
    check(ok[mine[0]]["problem"]["type"].endswith("/invalid-state"), "already ended", b)
    check_eq((b["cancelled"], b["failed"]), (2, 3), b)
    check_eq(states(c, theirs), ["PENDING"], "another tenant's job is never cancelled")
    check_eq(states(c, mine), ["CANCELLED"] * 3)
    # the other tenant's answer for our (cancelled) job: not found, not invalid-state
    st, _, b = c.api("POST", "/v1/jobs/cancel", {"ids": [mine[0]]}, token=s["other"])
    check_eq(st, 200, b)
    check(b["results"][0]["problem"]["type"].endswith("/not-found"), b)


def test_array(c):
    s = setup(c)
    st, _, b = c.api("POST", "/v1/jobs", {"nodes": 1, "gpus_per_node": 1, "command": ["true"],
                                          "array": "0-5"}, token=s["user"])
    check_eq(st, 201, b)
    aid = b["id"]
    st, _, b = c.api("POST", "/v1/jobs/cancel", {"ids": [aid], "array": True}, token=s["user"])
    check_eq(st, 200, b)
    check_eq(b["results"][0].get("tasks_cancelled"), 6, b)
    check_eq(c.sql_value("SELECT count(*) FROM jobs WHERE array_job_id = $1 AND state = 'CANCELLED'",
                         str(aid)), "6")


def test_bad_bodies_change_nothing(c):
    s = setup(c)
    mine = submit(c, s["user"], 2)
    bad = [
        ([1, 2], "", "wrong-type"),
        ({}, "ids", "missing-field"),
        ({"ids": mine[0]}, "ids", "wrong-type"),
        ({"ids": "%d" % mine[0]}, "ids", "wrong-type"),
        ({"ids": [str(mine[0]), mine[1]]}, "ids.0", "wrong-type"),
        ({"ids": [mine[0], 1.5]}, "ids.1", "wrong-type"),
        ({"ids": [mine[0], None]}, "ids.1", "wrong-type"),
        ({"ids": [mine[0], 0]}, "ids.1", "out-of-range"),
        ({"ids": [mine[0], -4]}, "ids.1", "out-of-range"),
        ({"ids": []}, "ids", "out-of-range"),
        ({"ids": list(range(1, 10002))}, "ids", "out-of-range"),
        ({"ids": [mine[0], mine[1], mine[0]]}, "ids", "invalid-request"),
        ({"ids": [mine[0]], "reason": "x"}, "reason", "unknown-field"),
        ({"ids": [mine[0]], "array": "yes"}, "array", "wrong-type"),
    ]
    for body, field, slug in bad:
        st, _, b = c.api("POST", "/v1/jobs/cancel", body, token=s["user"])
        check_eq(st, 400, body, b)
        check(b["type"].endswith("/" + slug), body, b)
        check_eq(b.get("field", ""), field, body, b)
    st, _, b = c.api("POST", "/v1/jobs/cancel", raw="{\"ids\": [", token=s["user"],
                     headers={"Content-Type": "application/json"})
    check_eq(st, 400, b)
    check_eq(states(c, mine), ["PENDING", "PENDING"], "no bad body cancelled anything")
    reader = c.make_token("reader", tenant="bulk")
    st, _, b = c.api("POST", "/v1/jobs/cancel", {"ids": mine}, token=reader)
    check_eq(st, 403, b)
    st, _, b = c.api("POST", "/v1/jobs/cancel", {"ids": mine}, token="")
    check_eq(st, 401, b)
    check_eq(states(c, mine), ["PENDING", "PENDING"])


def cli(c, token, *args):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    e.update(HOME=os.path.join(c.dir, "nohome"), MUSTER_URL=c.api_url, MUSTER_TOKEN=token)
    r = subprocess.run([harness.require_binary("muster")] + [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, timeout=60)
    return r.returncode, r.stdout, r.stderr


def test_cli_many_ids_one_request(c):
    s = setup(c)
    mine = submit(c, s["user"], 500)
    theirs = submit(c, s["other"], 1)
    before = int(c.sql_value("SELECT count(*) FROM events WHERE kind = 'job.cancelled'"))
    rc, out, err = cli(c, s["user"], "cancel", *(mine[:250] + theirs + mine[250:]))
    check_eq(rc, 3, "a job not found: exit 3", err)
    check_eq(out, "")
    check_eq(err.strip().splitlines(), ["muster: error: job %d: Not found: no such job" % theirs[0]])
    check_eq(set(states(c, mine)), {"CANCELLED"})
    check_eq(states(c, theirs), ["PENDING"])
    check_eq(int(c.sql_value("SELECT count(*) FROM events WHERE kind = 'job.cancelled'")) - before, 500)
    rc, out, err = cli(c, s["user"], "cancel", mine[0], mine[1])
    check_eq(rc, 1, err)
    check_eq(len(err.strip().splitlines()), 2, err)
    check("job %d: Invalid state" % mine[0] in err, err)


if __name__ == "__main__":
    harness.main(api=True)
