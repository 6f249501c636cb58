#!/usr/bin/python3
"""`muster queue` streams its pages (1,000 jobs each) instead of holding the
listing: an array of 1,500 pending tasks spans two pages and still prints as
one line 123_[0-1499%10] between the jobs around it; a task of it that ended
in the middle keeps the run whole (squeue's shape) and prints after it;
--json prints the same document the held listing did; -o prints each row."""
import json
import os
import subprocess

import harness
from harness import check, check_eq


def cli(c, token, *args):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    e.update(HOME=os.path.join(c.dir, "nohome"), MUSTER_URL=c.api_url, MUSTER_TOKEN=token)
    r = subprocess.run([harness.require_binary("muster")] + [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, timeout=60)
    return r.returncode, r.stdout, r.stderr


def one(c, tok, **kw):
    body = dict({"nodes": 1, "gpus_per_node": 1, "command": ["true"]}, **kw)
    st, _, b = c.api("POST", "/v1/jobs", body, token=tok)
    check_eq(st, 201, b)
    return b["id"]


def test_array_across_pages(c):
    c.make_tenant("st")
    tok = c.make_token("tenant", tenant="st", user="sam")
    before = [one(c, tok) for _ in range(990)]  # the array starts on page 1, ends on page 2
    aid = one(c, tok, array="0-1499%10")
    after = one(c, tok)
    rc, out, err = cli(c, tok, "queue", "-o", "%i")
    check_eq(rc, 0, err)
    lines = out.split()
    check_eq(lines, ["JOBID"] + [str(i) for i in before] + ["%d_[0-1499%%10]" % aid, str(after)])
    rc, out, err = cli(c, tok, "queue", "--noheader")
    check_eq(rc, 0, err)
    rows = [l.split()[0] for l in out.splitlines()]
    check_eq(rows, [str(i) for i in before] + ["%d_[0-1499%%10]" % aid, str(after)])
    # task 700 (on page 2) ends: the run stays one line, the task prints after it
    task = int(c.sql_value("SELECT id FROM jobs WHERE array_job_id = $1 AND array_task_id = 700",
                           str(aid)))
    st, _, b = c.api("POST", "/v1/jobs/%d/cancel" % task, token=tok)
    check_eq(st, 200, b)
    rc, out, err = cli(c, tok, "queue", "-t", "all", "--noheader", "-o", "%i %t")
    check_eq(rc, 0, err)
    check_eq(out.splitlines()[990:], ["%d_[0-699,701-1499%%10] PD" % aid, "%d_700 CA" % aid,
                                      "%d PD" % after])
    rc, out, err = cli(c, tok, "queue", "--json")
    check_eq(rc, 0, err)
    doc = json.loads(out)
    check_eq(sorted(doc), ["items", "next_cursor"])
    check_eq(doc["next_cursor"], None)
    check_eq(len(doc["items"]), 990 + 1500 - 1 + 1)
    ids = [j["id"] for j in doc["items"]]
    check_eq(ids, sorted(ids))
    st, _, page = c.api("GET", "/v1/jobs?limit=1", token=tok)
    check_eq(doc["items"][0], page["items"][0], "items as the API gives them")
    check(out.startswith('{\n  "items": [\n    {\n      "'), out[:40])
    check(out.endswith('\n  ],\n  "next_cursor": null\n}\n'), out[-40:])
    other = c.make_token("tenant", tenant="st", user="nobody")
    rc, out, err = cli(c, other, "queue", "--json", "-u", "nobody")
    check_eq((rc, out), (0, '{\n  "items": [],\n  "next_cursor": null\n}\n'), err)


if __name__ == "__main__":
    harness.main(api=True)
