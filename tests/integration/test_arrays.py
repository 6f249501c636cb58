#!/usr/bin/python3
"""Job arrays end to end (Slurm --array): one REST submit of 0-15%4 makes 16
jobs (array_job_id = the first task's id, array_task_id 0..15) written in one
transaction; a real muster-scheduler never runs more than 4 of them at once
(sampled every 50 ms while they run); a real fake-GPU muster-agent starts
each task with SLURM_ARRAY_* / MUSTER_ARRAY_* in its environment, which each
task writes to a file; afterok on the array id waits for every task; the
list filter; cancel of a whole array and of one task (REST and `muster
cancel 123` / `123_7`); a 10,000-task submit; bad specs refused with the
database unchanged."""
import os
import subprocess
import tempfile
import threading
import time

import harness
from harness import check, check_eq
from test_grpc_common import make_tenant, make_token

S = {}
# Each task records its array env, then waits until released (or 1.5 s).
TASK = ("env | grep -E '^(SLURM|MUSTER)_ARRAY_' | sort > $OUT/env.$SLURM_ARRAY_TASK_ID.tmp && "
        "mv $OUT/env.$SLURM_ARRAY_TASK_ID.tmp $OUT/env.$SLURM_ARRAY_TASK_ID; "
        "i=0; while [ ! -e $OUT/go ] && [ $i -lt 30 ]; do sleep 0.05; i=$((i+1)); done")


def setup(c):
    if S:
        return S
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    make_tenant(c, "arr")
    make_tenant(c, "oth")
    S["user"] = make_token(c, "tenant", tenant="arr", user="ann")
    S["other"] = make_token(c, "tenant", tenant="oth", user="olga")
    S["token_file"] = c.token_file(make_token(c, "agent", node="ar-n1"))
    c.start_process(["muster-scheduler", "--db", c.db_url, "--tick", "200ms"], name="scheduler")
    S["out"] = os.path.join(c.dir, "out")
    os.makedirs(S["out"])
    os.chmod(S["out"], 0o777)
    c.start_process(
        [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port, "--node", "ar-n1",
         "--address", "127.0.0.1", "--state-dir", os.path.join(c.dir, "agent-state"),
         "--gpu-backend", "fake", "--fake-gpus", "8", "--heartbeat-interval", "300ms",
         "--token-file", S["token_file"]] + c.agent_flags(),
        name="agent",
        wait_for=lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name = 'ar-n1' AND up") == "1")
    return S


def submit(c, token=None, **kw):
    body = {"nodes": 1, "gpus_per_node": 0, "command": ["true"], "time_limit": "5:00"}
    body.update(kw)
    return c.api("POST", "/v1/jobs", body, token=token or S["user"])


def live_runs(c, aid):
    return int(c.sql_value("SELECT count(*) FROM runs r JOIN jobs j ON j.id = r.job_id"
                           " WHERE r.live AND j.array_job_id = $1", str(aid)))


def test_array_throttle_and_env(c):
    s = setup(c)
    st, hdr, b = submit(c, array="0-15%4", gpus_per_node=1, name="sweep",
                        command=["/bin/sh", "-c", TASK], env={"OUT": s["out"]})
    check_eq(st, 201, b)
    aid = b["id"]
    check_eq((b["array_job_id"], b["array_task_id"], b["array"]), (aid, 0, "0-15%4"))
    rows = c.sql("SELECT array_job_id, array_task_id, array_spec, array_throttle FROM jobs"
                 " WHERE array_job_id = $1 ORDER BY id", str(aid))
    check_eq([int(r[1]) for r in rows], list(range(16)))
    check(all(r[0] == str(aid) and r[2] == "0-15%4" and r[3] == "4" for r in rows), rows)
    # one transaction: consecutive ids, one created_at
    check_eq(c.sql_value("SELECT max(id) - min(id) + 1 || ' ' || count(DISTINCT created_at)"
                         " FROM jobs WHERE array_job_id = $1", str(aid)), "16 1")
    st, _, lst = c.api("GET", "/v1/jobs?array_job_id=%d&limit=100" % aid, token=s["user"])
    check_eq((st, len(lst["items"])), (200, 16), lst)
    st, _, one = c.api("GET", "/v1/jobs?array_job_id=%d&array_task_id=7" % aid, token=s["user"])
    check_eq([j["array_task_id"] for j in one["items"]], [7])
    # The throttle: sample while they run; release them slowly.
    peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], live_runs(c, aid))
            time.sleep(0.05)

    t = threading.Thread(target=sample)
    t.start()
    try:
        c.wait_until(lambda: live_runs(c, aid) == 4, 15, "4 tasks running")
        c.wait_until(lambda: c.sql_value("SELECT pending_reason FROM jobs WHERE array_job_id = $1"
                                         " AND array_task_id = 15", str(aid)) == "JobArrayTaskLimit",
                     10, "JobArrayTaskLimit on a waiting task")
        c.wait_until(lambda: c.sql_value("SELECT count(*) FROM jobs WHERE array_job_id = $1"
                                         " AND state = 'COMPLETED'", str(aid)) == "16", 90,
                     "every task completed")
    finally:
        stop.set()
        t.join()
    check(peak[0] <= 4, "never more than 4 tasks running", peak[0])
    check_eq(peak[0], 4, "the throttle, not the cluster, was the limit")
    for k in range(16):
        env = open(os.path.join(s["out"], "env.%d" % k)).read().split()
        want = {"ARRAY_JOB_ID": str(aid), "ARRAY_TASK_ID": str(k), "ARRAY_TASK_COUNT": "16",
                "ARRAY_TASK_MIN": "0", "ARRAY_TASK_MAX": "15", "ARRAY_TASK_STEP": "1"}
        check_eq(sorted(env), sorted(["%s_%s=%s" % (p, n, v) for p in ("SLURM", "MUSTER")
                                      for n, v in want.items()]), k)


def test_afterok_on_array_and_step(c):
    s = setup(c)
    st, _, b = submit(c, array="0-8:4", hold=True)   # tasks 0, 4, 8, all held
    check_eq(st, 201, b)
    aid = b["id"]
    tasks = {int(r[0]): int(r[1]) for r in c.sql("SELECT array_task_id, id FROM jobs"
                                                 " WHERE array_job_id = $1", str(aid))}
    check_eq(sorted(tasks), [0, 4, 8])
    st, _, d = submit(c, dependencies=[{"type": "afterok", "job_id": aid}])
    check_eq(st, 201, d)
    for k in (0, 4):
        check_eq(c.api("POST", "/v1/jobs/%d/release" % tasks[k], token=s["user"])[0], 200)
    c.wait_until(lambda: c.sql_value("SELECT count(*) FROM jobs WHERE array_job_id = $1"
                                     " AND state = 'COMPLETED'", str(aid)) == "2", 30,
                 "tasks 0 and 4 completed")
    c.wait_until(lambda: c.api("GET", "/v1/jobs/%d" % d["id"], token=s["user"])[2]["pending_reason"]
                 == "Dependency", 10, "the dependent waits")
    time.sleep(1.0)
    job = c.api("GET", "/v1/jobs/%d" % d["id"], token=s["user"])[2]
    check_eq((job["state"], job["pending_reason"]), ("PENDING", "Dependency"),
             "afterok on an array waits for every task")
    check_eq(c.api("POST", "/v1/jobs/%d/release" % tasks[8], token=s["user"])[0], 200)
    c.wait_until(lambda: c.api("GET", "/v1/jobs/%d" % d["id"], token=s["user"])[2]["state"]
                 == "COMPLETED", 30, "the dependent ran after every task")


def cli(c, *args):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    e.update(HOME=tempfile.gettempdir() + "/muster-cli-nohome", MUSTER_URL=c.api_url,
             MUSTER_TOKEN=S["user"])
    r = subprocess.run([harness.require_binary("muster")] + [str(a) for a in args],
                       capture_output=True, text=True, env=e, timeout=60)
    return r.returncode, r.stdout, r.stderr


def test_cancel_array_and_task(c):
    s = setup(c)
    st, _, b = submit(c, array="0-5", hold=True)
    aid = b["id"]

    def states():
        return [r[0] for r in c.sql("SELECT state FROM jobs WHERE array_job_id = $1 ORDER BY"
                                    " array_task_id", str(aid))]
    rc, _, err = cli(c, "cancel", "%d_3" % aid)
    check_eq((rc, err), (0, ""))
    check_eq(states(), ["PENDING"] * 3 + ["CANCELLED"] + ["PENDING"] * 2)
    check_eq(cli(c, "cancel", "%d_9" % aid)[0], 3, "no task 9")
    check_eq(cli(c, "cancel", "%d_x" % aid)[0], 2)
    # another tenant sees nothing
    st, _, e = c.api("POST", "/v1/jobs/%d/cancel?array=true" % aid, token=s["other"])
    check_eq(st, 404, e)
    rc, _, err = cli(c, "cancel", aid)
    check_eq((rc, err), (0, ""))
    check_eq(states(), ["CANCELLED"] * 6)
    st, _, e = c.api("POST", "/v1/jobs/%d/cancel?array=true" % aid, token=s["user"])
    check_eq(st, 409, e)
    st, _, e = c.api("POST", "/v1/jobs/%d/cancel?array=maybe" % aid, token=s["user"])
    check_eq(st, 400, e)
    # a plain job with ?array=true is cancelled alone
    st, _, p = submit(c, hold=True)
    check_eq(c.api("POST", "/v1/jobs/%d/cancel?array=true" % p["id"], token=s["user"])[0], 200)


def test_big_array(c):
    s = setup(c)
    t0 = time.monotonic()
    st, _, b = submit(c, array="0-9999", hold=True)
    took = time.monotonic() - t0
    check_eq(st, 201, b)
    check_eq(c.sql_value("SELECT count(*) FROM jobs WHERE array_job_id = $1", str(b["id"])), "10000")
    print("10,000-task array submitted in %.2f s" % took)
    check(took < 30, "at batch speed", took)
    c.api("POST", "/v1/jobs/%d/cancel?array=true" % b["id"], token=s["user"])


BAD = ["", "x", "1-", "-1", "5-3", "0-15%0", "0-15%", "1,,2", "1,1", "0-3:0", "0-10000",
       "10000000", "0-15%4%4", "0-15 ", " 1", "1;2", "0-20000:2"]


def test_bad_specs(c):
    s = setup(c)
    n = c.sql_value("SELECT count(*) FROM jobs")
    for spec in BAD:
        st, _, e = submit(c, array=spec)
        check_eq((st, e.get("field")), (400, "array"), repr(spec), e)
    for spec in (7, ["0-3"], True):
        st, _, e = submit(c, array=spec)
        check_eq((st, e.get("field")), (400, "array"), spec, e)
    st, _, e = c.api("POST", "/v1/jobs/batch", {"jobs": [{"nodes": 1, "gpus_per_node": 0,
                                                          "command": ["x"], "array": "0-"}]},
                     token=s["user"])
    check_eq((st, e.get("field")), (400, "jobs.0.array"), e)
    for q in ("array_job_id=x", "array_job_id=0", "array_task_id=3", "array_job_id=1&array_task_id=-1"):
        st, _, e = c.api("GET", "/v1/jobs?" + q, token=s["user"])
        check_eq(st, 400, q, e)
    check_eq(c.sql_value("SELECT count(*) FROM jobs"), n, "no refused submit wrote a job")



def test_arrays_in_a_batch(c):
    """Arrays inside POST /v1/jobs/batch: each becomes its tasks (all or
    nothing with the rest), two arrays side by side stay two arrays, the
    answer lists one item per body job (an array's first task), and a
    problem names the body's job."""
    s = setup(c)
    n0 = int(c.sql_value("SELECT count(*) FROM jobs"))
    job = {"nodes": 1, "gpus_per_node": 0, "command": ["true"], "time_limit": "5:00"}
    jobs = [dict(job, name="plain1"), dict(job, name="a", array="0-2"), dict(job, name="b", array="0-1"),
            dict(job, name="plain2")]
    # both decode paths: the plain body (split, decoded on the worker) and one that does not split
    # (a key written with an escape does not split: parsed whole on the event loop)
    import json
    for raw in (json.dumps({"jobs": jobs}), json.dumps({"jobs": jobs}).replace('"jobs"', '"\\u006aobs"', 1)):
        st, _, r = c.api("POST", "/v1/jobs/batch", token=s["user"], raw=raw)
        check_eq(st, 201, r)
        items = r["items"]
        check_eq([i["name"] for i in items], ["plain1", "a", "b", "plain2"], items)
        check("array_job_id" not in items[0], items[0])
        for it, count in ((items[1], 3), (items[2], 2)):
            check_eq((it["array_job_id"], it["array_task_id"]), (it["id"], 0), it)
            check_eq(c.sql_value("SELECT count(*) FROM jobs WHERE array_job_id = $1", it["id"]), str(count))
        check(items[1]["id"] != items[2]["id"], items)
    check_eq(int(c.sql_value("SELECT count(*) FROM jobs")), n0 + 14, "twice 1 + 3 + 2 + 1 jobs")
    n0 += 7
    # a problem of an array's task names the body's job; nothing is written
    bad = [dict(job), dict(job, array="0-4"), dict(job, array="0-1", priority_class="nope")]
    for body in ({"jobs": bad}, {"jobs": bad[:2] + [dict(bad[2], time_limit="1")]}):
        st, _, e = c.api("POST", "/v1/jobs/batch", body, token=s["user"])
        if "nope" in str(body):
            check_eq((st, e.get("field")), (404, "jobs.2.priority_class"), e)
        else:
            check_eq(st, 201, e)
            check_eq(len(e["items"]), 3, e)
            n0 += 1 + 5 + 2
    check_eq(int(c.sql_value("SELECT count(*) FROM jobs")), n0 + 7, "the refused batch wrote nothing")
    # every task counts toward the batch's 10,000 jobs
    st, _, e = c.api("POST", "/v1/jobs/batch", {"jobs": [dict(job, array="0-9999"), dict(job)]},
                     token=s["user"])
    check_eq((st, e.get("field")), (400, "jobs"), e)


def test_array_idempotency(c):
    """An array with Idempotency-Key: a retry answers the same array (its
    first task, 200, idempotent-replayed) and writes nothing; the key with
    another body is 409."""
    s = setup(c)
    b = {"nodes": 1, "gpus_per_node": 0, "command": ["x"], "array": "0-3"}
    h = {"Idempotency-Key": "arr-k1"}
    st, hd, first = c.api("POST", "/v1/jobs", b, token=s["user"], headers=h)
    check_eq(st, 201, first)
    n = c.sql_value("SELECT count(*) FROM jobs")
    check_eq(c.sql_value("SELECT count(*) FROM jobs WHERE array_job_id = $1", first["id"]), "4")
    st, hd, again = c.api("POST", "/v1/jobs", b, token=s["user"], headers=h)
    check_eq(st, 200, again)
    check_eq(hd.get("idempotent-replayed"), "true", hd)
    check_eq((again["id"], again["array_job_id"], again["array_task_id"]),
             (first["id"], first["id"], 0), again)
    check_eq(c.sql_value("SELECT count(*) FROM jobs"), n, "the retry wrote nothing")
    b2 = dict(b, array="0-5")
    st, _, e = c.api("POST", "/v1/jobs", b2, token=s["user"], headers=h)
    check_eq((st, e["type"].rsplit("/", 1)[-1]), (409, "idempotency-key-reused"), e)
    # two retries at once, in one group: one array, both answer it
    import threading
    h2 = {"Idempotency-Key": "arr-k2"}
    got = []
    ts = [threading.Thread(target=lambda: got.append(c.api("POST", "/v1/jobs", b, token=s["user"], headers=h2)))
          for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ids = {r[2]["id"] for r in got}
    check_eq(len(ids), 1, [r[:1] for r in got])
    check_eq(sorted(r[0] for r in got), [200, 200, 200, 201], [r[0] for r in got])
    check_eq(c.sql_value("SELECT count(*) FROM jobs WHERE array_job_id = $1", ids.pop()), "4")


if __name__ == "__main__":
    harness.main(api=True)
