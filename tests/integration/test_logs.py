#!/usr/bin/python3
"""Job logs end to end: GET /v1/jobs/{id}/logs (one range, follow=true),
JobService.GetLogs (gRPC, stubs generated at test time) and `muster logs`
read a live job's stdout/stderr from its node's agent over the agent
stream; offset/limit; another tenant's token answers 404 / NOT_FOUND; bad
parameters 400; a node whose agent is gone answers 503
node-not-connected, and a follow rides out the agent's restart; the agent prunes ended runs' logs after
--log-retention (410 gone after that) and never a live run's.
One fake-GPU agent on loopback, real muster-api + muster-scheduler."""
import http.client
import os
import signal
import subprocess
import tempfile
import threading
import time

import harness
from harness import check, check_eq
import test_grpc_common as g
from test_grpc_common import make_tenant, make_token

S = {}
RETENTION_S = 4
# Each process prints a line to each stream, holds until released, then
# prints 2,000 numbered lines (about 19 KB) and a last line. It gives up
# when the test's directory is gone (a failed test leaves no process behind).
PROG = ('echo "out $LOCAL_RANK of $MUSTER_RUN_ID"; echo "err $LOCAL_RANK" >&2; '
        'while [ ! -e $OUT/release.$MUSTER_RUN_ID ]; do [ -d $OUT ] || exit 1; sleep 0.05; done; '
        'seq 1 2000 | sed "s/^/line $LOCAL_RANK /"; echo "bye $LOCAL_RANK"')


def expected(rank, run):
    return ("out %d of %s\n" % (rank, run)
            + "".join("line %d %d\n" % (rank, i) for i in range(1, 2001))
            + "bye %d\n" % rank)


def setup(c):
    if S:
        return S
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    c.start_api()
    for t in ("lg", "lgx"):
        make_tenant(c, t)
        c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = $1", t)
    S["user"] = make_token(c, "tenant", tenant="lg", user="lou")
    S["other"] = make_token(c, "tenant", tenant="lgx", user="xavier")
    S["agent_token"] = make_token(c, "agent", node="lg-n1")
    c.start_process(["muster-scheduler", "--db", c.db_url], name="scheduler")
    S["out"] = os.path.join(c.dir, "out")
    os.makedirs(S["out"])
    S["state"] = os.path.join(c.dir, "agent-state")
    S["agent"] = start_agent(c)
    return S


def start_agent(c):
    return c.start_process(
        [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port, "--node", "lg-n1",
         "--address", "127.0.0.1", "--state-dir", S["state"], "--gpu-backend", "fake",
         "--fake-gpus", "8", "--heartbeat-interval", "300ms",
         "--log-retention", "%ds" % RETENTION_S] + c.agent_flags(),
        env={"MUSTER_AGENT_TOKEN": S["agent_token"]}, name="agent",
        wait_for=lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name = 'lg-n1' AND up") == "1")


def start_job(c):
    """A live job of 2 processes on lg-n1; returns (job id, run id) once both printed."""
    st, _, b = c.api("POST", "/v1/jobs", {
        "name": "logs", "nodes": 1, "gpus_per_node": 1, "procs_per_node": 2,
        "command": ["/bin/sh", "-c", PROG], "env": {"OUT": S["out"]}, "time_limit": "5:00"},
        token=S["user"])
    check_eq(st, 201, "submit", b)
    jid = b["id"]
    c.wait_until(lambda: c.sql_value("SELECT count(*) FROM runs WHERE job_id = $1 AND state = 'RUNNING'",
                                     str(jid)) == "1", 20, "run RUNNING")
    run = c.sql_value("SELECT id FROM runs WHERE job_id = $1", str(jid))
    for rank in (0, 1):
        c.wait_until(lambda: logs(c, jid, "?local_rank=%d" % rank)[2].startswith("out"), 15,
                     "rank %d printed" % rank)
    return jid, run


def release(run):
    open(os.path.join(S["out"], "release." + run), "w").close()


def logs(c, jid, query="", token=None):
    return c.api("GET", "/v1/jobs/%s/logs%s" % (jid, query), token=token or S["user"])


def wait_ended(c, jid):
    c.wait_until(lambda: c.sql_value("SELECT state FROM jobs WHERE id = $1", str(jid)) == "COMPLETED",
                 30, "job COMPLETED")


# ---- REST ---------------------------------------------------------------------


def test_rest_range(c):
    setup(c)
    jid, run = start_job(c)
    S["live"] = (jid, run)
    st, h, body = logs(c, jid)
    check_eq(st, 200, body)
    check(h["content-type"].startswith("text/plain"), h)
    check_eq(body, "out 0 of %s\n" % run)
    check_eq(h["muster-run-id"], run)
    check_eq(h["muster-node"], "lg-n1")
    check_eq(h["muster-log-ended"], "false")
    check_eq(h["muster-log-size"], str(len(body)))
    check_eq(h["muster-next-offset"], str(len(body)))
    st, _, body = logs(c, jid, "?stream=stderr")
    check_eq((st, body), (200, "err 0\n"))
    st, _, body = logs(c, jid, "?local_rank=1&stream=stderr")
    check_eq((st, body), (200, "err 1\n"))
    # offset/limit: bytes 4..8 of "out 0 of N"
    st, h, body = logs(c, jid, "?offset=4&limit=4")
    check_eq((st, body, h["muster-next-offset"]), (200, "0 of", "8"))
    # past the end: no bytes, not an error
    st, h, body = logs(c, jid, "?offset=100000")
    check_eq((st, body, h["muster-next-offset"]), (200, "", "100000"))
    # the run may be named; the latest is the default
    st, _, body = logs(c, jid, "?run_id=%s&stream=stderr" % run)
    check_eq((st, body), (200, "err 0\n"))


def test_rest_scope_and_bad_params(c):
    jid, run = S["live"]
    st, _, b = logs(c, jid, token=S["other"])
    check_eq(st, 404, "another tenant's job", b)
    check_eq(b["type"], "https://muster.dev/problems/not-found")
    check_eq(logs(c, 999999)[0], 404)
    check_eq(logs(c, "abc")[0], 404)
    # the admin sees every tenant's logs
    st, _, body = c.api("GET", "/v1/jobs/%s/logs" % jid)
    check_eq((st, body), (200, "out 0 of %s\n" % run))
    for q, field in (("?stream=both", "stream"), ("?offset=-1", "offset"), ("?limit=0", "limit"),
                     ("?limit=1048577", "limit"), ("?local_rank=2", "local_rank"),
                     ("?node_rank=1", "node_rank"), ("?follow=maybe", "follow"),
                     ("?local_rank=x", "local_rank"), ("?tail=5", "tail"),
                     ("?run_id=0", "run_id")):
        st, _, b = logs(c, jid, q)
        check_eq(st, 400, q, b)
        check_eq(b.get("field"), field, q, b)
    st, _, b = logs(c, jid, "?run_id=%d" % (int(run) + 1000))
    check_eq(st, 404, b)
    # a job that never started has no logs yet
    st, _, j = c.api("POST", "/v1/jobs", {"name": "never", "nodes": 1, "gpus_per_node": 64,
                                          "command": ["true"], "time_limit": "1:00"}, token=S["user"])
    check_eq(st, 201, j)
    st, _, b = logs(c, j["id"])
    check_eq(st, 409, b)
    check_eq(c.api("POST", "/v1/jobs/%d/cancel" % j["id"], token=S["user"])[0], 200)


def follow_http(c, path, token, out, errs):
    conn = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=60)
    try:
        conn.request("GET", path, headers={"Authorization": "Bearer " + token})
        r = conn.getresponse()
        out["status"] = r.status
        out["headers"] = {k.lower(): v for k, v in r.getheaders()}
        data = b""
        while True:
            d = r.read1(65536)
            if not d:
                break
            data += d
            out["first"] = out.get("first") or time.monotonic()
        out["body"] = data.decode()
    except Exception as e:  # noqa: BLE001 - reported by the test thread
        errs.append(repr(e))
    finally:
        conn.close()


def test_rest_follow(c):
    jid, run = S["live"]
    out, errs = {}, []
    t = threading.Thread(target=follow_http,
                         args=(c, "/v1/jobs/%s/logs?follow=true&local_rank=1" % jid, S["user"], out, errs))
    t.start()
    c.wait_until(lambda: out.get("first"), 10, "the first bytes of the follow")
    check(t.is_alive(), "follow ended before the process did", out)
    release(run)
    t.join(60)
    check(not t.is_alive(), "follow did not end with the process")
    check_eq(errs, [])
    check_eq(out["status"], 200)
    check_eq(out["headers"].get("transfer-encoding"), "chunked")
    check_eq(out["body"], expected(1, run))
    wait_ended(c, jid)
    # the ended job's logs still read whole, in ranges, and say they ended
    st, h, body = logs(c, jid, "?offset=0&limit=1048576")
    check_eq((st, body, h["muster-log-ended"]), (200, expected(0, run), "true"))
    # follow on an ended process returns what is there and ends
    st, h, body = logs(c, jid, "?follow=true&offset=10")
    check_eq((st, body), (200, expected(0, run)[10:]))


# ---- gRPC ---------------------------------------------------------------------


def test_grpc_getlogs(c):
    pb = g.load()
    ch = g.channel(c)
    stub = pb["jobs_grpc"].JobServiceStub(ch)
    jid, run = start_job(c)
    req = pb["jobs"].GetLogsRequest
    got = list(stub.GetLogs(req(job_id=jid), metadata=g.md(S["user"]), timeout=20))
    check_eq(len(got), 1, got)
    check_eq(got[0].data, ("out 0 of %s\n" % run).encode())
    check_eq((got[0].offset, got[0].run_id, got[0].node, got[0].ended), (0, int(run), "lg-n1", False))
    got = list(stub.GetLogs(req(job_id=jid, local_rank=1, stream="stderr"), metadata=g.md(S["user"]),
                            timeout=20))
    check_eq(got[0].data, b"err 1\n")
    got = list(stub.GetLogs(req(job_id=jid, offset=4, limit=4), metadata=g.md(S["user"]), timeout=20))
    check_eq(got[0].data, b"0 of")
    e = g.expect_code(g.grpc.StatusCode.NOT_FOUND,
                      lambda: list(stub.GetLogs(req(job_id=jid), metadata=g.md(S["other"]), timeout=20)))
    check("no such job" in e.details(), e.details())
    for bad in (req(job_id=jid, stream="both"), req(job_id=jid, local_rank=2),
                req(job_id=jid, node_rank=3), req(job_id=jid, offset=-5),
                req(job_id=jid, limit=2000000)):
        g.expect_code(g.grpc.StatusCode.INVALID_ARGUMENT,
                      lambda: list(stub.GetLogs(bad, metadata=g.md(S["user"]), timeout=20)))
    # follow, in small chunks, while the process writes its 19 KB
    it = stub.GetLogs(req(job_id=jid, follow=True, limit=1000), metadata=g.md(S["user"]), timeout=60)
    first = next(it)
    check_eq(first.data, ("out 0 of %s\n" % run).encode())
    release(run)
    data, offset, last = first.data, len(first.data), first
    for m in it:
        check_eq(m.offset, offset, "chunks in file order")
        check(len(m.data) <= 1000, len(m.data))
        data += m.data
        offset += len(m.data)
        last = m
    check_eq(data.decode(), expected(0, run))
    check(last.ended, "the last chunk says the process ended")
    wait_ended(c, jid)
    ch.close()


# ---- CLI ----------------------------------------------------------------------


def cli(c, *args, token=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    e["HOME"] = tempfile.gettempdir() + "/muster-cli-nohome"
    e["MUSTER_URL"] = c.api_url
    e["MUSTER_TOKEN"] = token or S["user"]
    return subprocess.Popen([harness.require_binary("muster")] + [str(a) for a in args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)


def cli_run(c, *args, token=None):
    p = cli(c, *args, token=token)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err


def test_cli_logs(c):
    jid, run = start_job(c)
    check_eq(cli_run(c, "logs", jid), (0, "out 0 of %s\n" % run, ""))
    check_eq(cli_run(c, "logs", jid, "--stderr", "--local-rank", "1"), (0, "err 1\n", ""))
    rc, out, err = cli_run(c, "logs", jid, token=S["other"])
    check_eq((rc, out), (3, ""), err)
    check(err.startswith("muster: error: job %d: " % jid) and "no such job" in err, err)
    rc, _, err = cli_run(c, "logs", jid, "--local-rank", "7")
    check_eq(rc, 1, err)
    check("local_rank" in err, err)
    check_eq(cli_run(c, "logs")[0], 2)
    check_eq(cli_run(c, "logs", "x1")[0], 2)
    p = cli(c, "logs", jid, "-f", "--local-rank", "1")
    time.sleep(0.5)
    check(p.poll() is None, "logs -f ended before the process did")
    release(run)
    out, err = p.communicate(timeout=60)
    check_eq((p.returncode, err), (0, ""))
    check_eq(out, expected(1, run))
    wait_ended(c, jid)
    # the whole file, in 1 MiB requests, after the end
    check_eq(cli_run(c, "logs", jid), (0, expected(0, run), ""))
    S["ended"] = (jid, run)


# ---- retention, a node gone ------------------------------------------------------


def test_retention(c):
    jid, run = S["ended"]
    live_jid, live_run = start_job(c)
    # the ended run's directory goes RETENTION_S after its end ...
    c.wait_until(lambda: not os.path.exists(os.path.join(S["state"], "runs", run)), 3 * RETENTION_S + 10,
                 "ended run's logs pruned")
    st, _, b = logs(c, jid)
    check_eq(st, 410, b)
    check_eq(b["type"], "https://muster.dev/problems/gone")
    # ... and a live run's never, however old
    time.sleep(RETENTION_S + 2)
    check(os.path.exists(os.path.join(S["state"], "runs", live_run, "proc0.out")), "live run's logs kept")
    check_eq(logs(c, live_jid)[2], "out 0 of %s\n" % live_run)
    S["live2"] = (live_jid, live_run)


def test_agent_gone(c):
    jid, run = S["live2"]
    follow = cli(c, "logs", jid, "-f", "--local-rank", "1")
    c.wait_until(lambda: os.path.exists(os.path.join(S["state"], "runs", run)), 5)
    time.sleep(0.5)
    c.stop_process(S["agent"], sig=signal.SIGKILL)
    c.wait_until(lambda: logs(c, jid)[0] == 503, 15, "503 once the agent's stream is gone")
    st, _, b = logs(c, jid)
    check_eq(b["type"], "https://muster.dev/problems/node-not-connected", b)
    check("not connected" in b["detail"], b)
    pb = g.load()
    ch = g.channel(c)
    e = g.expect_code(g.grpc.StatusCode.UNAVAILABLE,
                      lambda: list(pb["jobs_grpc"].JobServiceStub(ch).GetLogs(
                          pb["jobs"].GetLogsRequest(job_id=jid), metadata=g.md(S["user"]), timeout=20)))
    check("not connected" in e.details(), e.details())
    ch.close()
    rc, _, err = cli_run(c, "logs", jid)
    check_eq(rc, 5, err)
    # the agent comes back (and adopts the run): its logs read again
    S["agent"] = start_agent(c)
    c.wait_until(lambda: logs(c, jid)[0] == 200, 15, "logs again after the agent is back")
    # a follow waits for a node that comes back (up to ~30 s), then goes on
    check(follow.poll() is None, "logs -f ended while the agent was away")
    release(run)
    out, err = follow.communicate(timeout=60)
    check_eq((follow.returncode, err), (0, ""))
    check_eq(out, expected(1, run))
    wait_ended(c, jid)


def test_two_nodes(c):
    """node_rank picks the node: each rank's bytes come from its own agent."""
    token = make_token(c, "agent", node="lg-n2")
    a2 = c.start_process(
        [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port, "--node", "lg-n2",
         "--address", "127.0.0.1", "--state-dir", os.path.join(c.dir, "agent2-state"), "--gpu-backend",
         "fake", "--fake-gpus", "8", "--heartbeat-interval", "300ms"] + c.agent_flags(),
        env={"MUSTER_AGENT_TOKEN": token}, name="agent2",
        wait_for=lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name = 'lg-n2' AND up") == "1")
    st, _, b = c.api("POST", "/v1/jobs", {
        "name": "gang", "nodes": 2, "gpus_per_node": 8,
        "command": ["/bin/sh", "-c", 'echo "node $NODE_RANK"'], "time_limit": "1:00"}, token=S["user"])
    check_eq(st, 201, b)
    jid = b["id"]
    wait_ended(c, jid)
    nodes = dict(c.sql("SELECT DISTINCT a.node_rank::text, n.name FROM run_allocations a "
                       "JOIN nodes n ON n.id = a.node_id JOIN runs r ON r.id = a.run_id WHERE r.job_id = $1",
                       str(jid)))
    check_eq(sorted(nodes.values()), ["lg-n1", "lg-n2"], nodes)
    for rank in ("0", "1"):
        st, h, body = logs(c, jid, "?node_rank=" + rank)
        check_eq((st, body, h["muster-node"], h["muster-log-ended"]),
                 (200, "node %s\n" % rank, nodes[rank], "true"))
    check_eq(logs(c, jid, "?node_rank=2")[0], 400)
    c.stop_process(a2)
    # nothing more goes to lg-n2 (its row stays up until the heartbeat timeout)
    check_eq(c.api("POST", "/v1/nodes/lg-n2/drain", {"reason": "test over"})[0], 200)


def test_follow_from_starting(c):
    """A follow opened while the run is STARTING (its agent has not made the
    file yet: here the agent is stopped) waits for the output instead of
    answering gone; a plain read then answers no bytes yet."""
    os.kill(S["agent"].pid, signal.SIGSTOP)
    try:
        st, _, b = c.api("POST", "/v1/jobs", {
            "name": "late", "nodes": 1, "gpus_per_node": 1,
            "command": ["/bin/sh", "-c", "sleep 0.5; echo late"], "time_limit": "1:00"}, token=S["user"])
        check_eq(st, 201, b)
        jid = b["id"]
        c.wait_until(lambda: c.sql_value("SELECT count(*) FROM runs WHERE job_id = $1", str(jid)) == "1",
                     20, "run created")
        follow = cli(c, "logs", jid, "-f")
        time.sleep(0.5)
    finally:
        os.kill(S["agent"].pid, signal.SIGCONT)
    out, err = follow.communicate(timeout=90)
    check_eq((follow.returncode, out, err), (0, "late\n", ""))
    wait_ended(c, jid)
    # the same, deterministically: a live run whose directory the agent
    # cannot find reads as nothing printed yet, not as gone
    jid, run = start_job(c)
    d = os.path.join(S["state"], "runs", run)
    os.rename(d, d + ".away")
    try:
        st, h, body = logs(c, jid)
        check_eq((st, body, h.get("muster-log-ended")), (200, "", "false"), body)
        pb = g.load()
        ch = g.channel(c)
        got = list(pb["jobs_grpc"].JobServiceStub(ch).GetLogs(
            pb["jobs"].GetLogsRequest(job_id=jid), metadata=g.md(S["user"]), timeout=20))
        check_eq([(m.data, m.ended) for m in got], [(b"", False)])
        ch.close()
    finally:
        os.rename(d + ".away", d)
    release(run)
    wait_ended(c, jid)


if __name__ == "__main__":
    harness.main(api=False)
