#!/usr/bin/python3
"""The node channel (docs/agent.md "Node credential", "The node channel"):
the agent token comes from a 0600 file or the environment and never stays
in the agent's /proc/<pid>/environ (nor reaches a job); --token on the
command line is refused; an impostor second stream for a connected node is
refused and changes nothing; a revoked token's stream ends; registered
addresses and topology paths are validated; a job whose command + env +
workdir is over settings.job_spec_max_bytes is refused at submit (REST,
batch, gRPC) and the node keeps running other jobs. One real fake-GPU
muster-agent, real muster-api + muster-scheduler."""
import os
import subprocess
import time

import harness
from harness import check, check_eq
from test_grpc_agent import Agent
from test_grpc_common import channel, expect_code, load, md

S = {}
NODE = "ch-n1"


def setup(c):
    if S:
        return S
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    c.start_api()
    c.make_tenant("chn")
    c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = 'chn'")
    S["user"] = c.make_token("tenant", tenant="chn", user="cho")
    S["token"] = c.make_token("agent", node=NODE)
    c.start_process(["muster-scheduler", "--db", c.db_url], name="scheduler")
    S["out"] = os.path.join(c.dir, "out")
    os.makedirs(S["out"])
    load()
    S["ch"] = channel(c)
    # the token in the environment: the agent re-execs itself without it
    S["agent"] = c.start_process(
        agent_args(c, NODE, "127.0.0.1"), env={"MUSTER_AGENT_TOKEN": S["token"]}, name="agent",
        wait_for=lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name = $1 AND up", NODE) == "1")
    return S


def agent_args(c, node, address, *extra):
    return [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port, "--node", node,
            "--address", address, "--state-dir", os.path.join(c.dir, "state-" + node),
            "--gpu-backend", "fake", "--fake-gpus", "2", "--heartbeat-interval", "300ms"] + c.agent_flags() + list(extra)


def run_job(c, script, env=None, token=None):
    st, _, b = c.api("POST", "/v1/jobs", {
        "name": "ch", "nodes": 1, "gpus_per_node": 1, "command": ["/bin/sh", "-c", script],
        "env": env or {}, "time_limit": "5:00"}, token=token or S["user"])
    check_eq(st, 201, "submit", b)
    jid = str(b["id"])
    c.wait_until(lambda: c.sql_value("SELECT state FROM jobs WHERE id = $1", jid)
                 in ("COMPLETED", "FAILED", "CANCELLED"), 30, "job %s ends" % jid)
    return jid, c.sql_value("SELECT state FROM jobs WHERE id = $1", jid)


def test_token_file_mode_and_argv_refused(c):
    setup(c)
    path = os.path.join(c.dir, "loose-token")
    with open(path, "w") as f:
        f.write(S["token"] + "\n")
    os.chmod(path, 0o644)
    r = subprocess.run(agent_args(c, NODE, "127.0.0.1", "--token-file", path), capture_output=True,
                       text=True, timeout=20)
    check(r.returncode != 0, "a 0644 token file is refused", r.stderr)
    check("0644" in r.stderr and "0600" in r.stderr, r.stderr)
    r = subprocess.run(agent_args(c, NODE, "127.0.0.1", "--token", S["token"]), capture_output=True,
                       text=True, timeout=20)
    check_eq(r.returncode, 2, r.stderr)
    check("--token-file" in r.stderr, r.stderr)
    # neither got as far as a stream: the real agent is still the node's
    check_eq(c.sql_value("SELECT address FROM nodes WHERE name = $1", NODE), "127.0.0.1")


def test_token_not_in_environ(c):
    setup(c)
    pid = S["agent"].pid
    env = open("/proc/%d/environ" % pid, "rb").read()
    check(b"MUSTER_AGENT_TOKEN=" not in env, "MUSTER_AGENT_TOKEN still in the agent's environ")
    check(S["token"].encode() not in env, "the token is in the agent's environ")
    check(b"mst_" not in env, "a token is in the agent's environ", env)
    check(S["token"].encode() not in open("/proc/%d/cmdline" % pid, "rb").read(), "token in argv")
    # nor in what a job sees of its parent (the keeper, a fork of the agent)
    probe = os.path.join(S["out"], "probe")
    jid, state = run_job(c, "tr '\\0' '\\n' < /proc/$PPID/environ > %s.penv;"
                            " env > %s.env" % (probe, probe))
    check_eq(state, "COMPLETED", jid)
    for f in (probe + ".penv", probe + ".env"):
        text = open(f).read()
        check("mst_" not in text and "MUSTER_AGENT_TOKEN=" not in text, f, text)


def test_impostor_second_stream_refused(c):
    setup(c)
    pb = load()
    A = pb["agent"]
    grpc = __import__("grpc")
    stub = pb["agent_grpc"].AgentServiceStub(S["ch"])
    before = c.sql("SELECT address, topology, labels::text FROM nodes WHERE name = $1", NODE)
    reg = A.AgentMessage(register=A.Register(node_name=NODE, address="10.9.9.9", agent_version="evil",
                                             gpus=[A.GpuInfo(index=0, uuid="GPU-x", model="H100")]))
    a = Agent(stub, S["token"], reg)
    e = expect_code(grpc.StatusCode.ALREADY_EXISTS, a.recv)
    check("live agent stream" in e.details(), e.details())
    a.close()
    check_eq(c.sql("SELECT address, topology, labels::text FROM nodes WHERE name = $1", NODE), before,
             "the impostor changed nothing")
    check("second agent stream" in c.log_text("api"), "a log line names the refusal")
    # the real agent still runs jobs
    jid, state = run_job(c, "exit 0")
    check_eq(state, "COMPLETED", jid)


def _grpc_ready(port):
    import grpc
    try:
        grpc.channel_ready_future(grpc.insecure_channel("127.0.0.1:%d" % port)).result(timeout=0.5)
        return True
    except grpc.FutureTimeoutError:
        return False


def test_one_stream_across_replicas(c):
    """One live stream per node across muster-api replicas on one database: a
    second stream for a node that streams to replica B is refused on replica
    A (the impostor changes nothing); a stream that ends on B frees the node
    for A at once; a replica that dies frees it once it has been silent for
    the replica liveness window."""
    setup(c)
    pb = load()
    A = pb["agent"]
    grpc = __import__("grpc")
    port = harness.free_port()
    b = c.start_process(["muster-api"], name="api-b",
                        env={"MUSTER_HTTP_ADDR": "127.0.0.1:%d" % harness.free_port(),
                             "MUSTER_GRPC_ADDR": "127.0.0.1:%d" % port},
                        wait_for=lambda: _grpc_ready(port))
    stub_a = pb["agent_grpc"].AgentServiceStub(S["ch"])
    stub_b = pb["agent_grpc"].AgentServiceStub(grpc.insecure_channel("127.0.0.1:%d" % port))
    tok = c.make_token("agent", node="ch-two")

    def reg(addr):
        # no GPUs, drained below: the scheduler never places the other tests' jobs here
        return A.AgentMessage(register=A.Register(node_name="ch-two", address=addr, agent_version="t"))

    def streaming(stub, addr):
        a = Agent(stub, tok, reg(addr))
        check_eq(a.recv().WhichOneof("msg"), "ack")
        a.send(A.AgentMessage(heartbeat=A.Heartbeat(seq=1)))
        return a

    real = streaming(stub_b, "10.0.2.1")
    st, _, body = c.api("POST", "/v1/nodes/ch-two/drain", {"reason": "stream test"})
    check_eq(st, 200, body)
    c.wait_until(lambda: c.sql_value("SELECT stream_replica FROM nodes WHERE name = 'ch-two'"), 10,
                 "replica B holds the node")
    evil = Agent(stub_a, tok, reg("10.6.6.6"))
    e = expect_code(grpc.StatusCode.ALREADY_EXISTS, evil.recv)
    check("live agent stream" in e.details(), e.details())
    evil.close()
    check_eq(c.sql_value("SELECT address FROM nodes WHERE name = 'ch-two'"), "10.0.2.1",
             "the impostor changed nothing")
    check("another muster-api replica holds a live stream" in c.log_text("api"), "replica A says why")
    # the stream ends on B: A may take the node at once (B releases it)
    real.close()
    t0 = time.monotonic()
    moved = harness.wait_until(lambda: _try_stream(stub_a, tok, reg("10.0.2.2")), 10, "the node moves to A")
    print("a stream closed on B: A took the node after %.2f s" % (time.monotonic() - t0))
    moved.close()
    c.wait_until(lambda: c.sql_value("SELECT stream_replica FROM nodes WHERE name = 'ch-two'") is None, 10,
                 "A released it when the stream ended")
    # B holds it again, then dies without a word: A takes it once B is silent
    real = streaming(stub_b, "10.0.2.3")
    c.wait_until(lambda: c.sql_value("SELECT address FROM nodes WHERE name = 'ch-two'") == "10.0.2.3", 10,
                 "B has it")
    b.kill()
    b.wait()
    t0 = time.monotonic()
    moved = harness.wait_until(lambda: _try_stream(stub_a, tok, reg("10.0.2.4")), 20, "A takes it from a dead B")
    took = time.monotonic() - t0
    print("replica B killed: A took the node after %.2f s" % took)
    check(took >= 1.0, "not before B's silence counts", took)
    moved.close()
    real.close()


def _try_stream(stub, tok, reg):
    a = Agent(stub, tok, reg)
    try:
        m = a.recv()
    except Exception:
        a.close()
        return None
    if m is None or m.WhichOneof("msg") != "ack":
        a.close()
        return None
    return a


def test_bad_register_refused(c):
    setup(c)
    pb = load()
    A = pb["agent"]
    grpc = __import__("grpc")
    stub = pb["agent_grpc"].AgentServiceStub(S["ch"])
    tok = c.make_token("agent", node="ch-bad")
    bad = [dict(address="10.0.0.1\nMASTER_ADDR=evil"), dict(address="a b"), dict(address=""),
           dict(address="x" * 300), dict(address="10.0.0.1", topology="block-1/rack 3"),
           dict(address="10.0.0.1", topology="block-1//rack-3"),
           dict(address="10.0.0.1", labels={"zone": "a\nb"}),
           dict(address="10.0.0.1", labels={"bad key": "v"})]
    for f in bad:
        reg = A.AgentMessage(register=A.Register(node_name="ch-bad", agent_version="t", **f))
        a = Agent(stub, tok, reg)
        expect_code(grpc.StatusCode.INVALID_ARGUMENT, a.recv)
        a.close()
    check_eq(c.sql_value("SELECT count(*) FROM nodes WHERE name = 'ch-bad'"), "0", "nothing registered")
    # good ones: an IPv6 literal, a host name
    for addr in ("fd00::17", "gpu-17.cluster.example"):
        a = Agent(stub, tok, A.AgentMessage(register=A.Register(node_name="ch-bad", address=addr,
                                                                  topology="block-1/rack-3")))
        check_eq(a.recv().WhichOneof("msg"), "ack")
        a.close()
        c.wait_until(lambda: "ch-bad agent stream closed" in c.log_text("api").replace("node=", ""),
                     10, "stream closed")
        time.sleep(0.2)


def test_revoked_token_ends_stream(c):
    setup(c)
    pb = load()
    A = pb["agent"]
    grpc = __import__("grpc")
    stub = pb["agent_grpc"].AgentServiceStub(S["ch"])
    tok = c.make_token("agent", node="ch-rev")
    a = Agent(stub, tok, A.AgentMessage(register=A.Register(node_name="ch-rev", address="10.0.0.5")))
    check_eq(a.recv().WhichOneof("msg"), "ack")
    tid = c.sql_value("SELECT id FROM api_tokens WHERE prefix = $1", tok[:12])
    st, _, b = c.api("DELETE", "/v1/tokens/%s" % tid)
    check(st in (200, 204), st, b)
    t0 = time.monotonic()
    end = t0 + 15
    while True:
        check(time.monotonic() < end, "the revoked token's stream is still open")
        try:
            m = a.recv(timeout=max(0.1, end - time.monotonic()))
        except grpc.RpcError as e:
            check_eq(e.code(), grpc.StatusCode.UNAUTHENTICATED, e.details())
            break
        if m is None:
            raise harness.CheckFailed("stream ended without a status")
    print("revoked token's stream ended after %.1fs" % (time.monotonic() - t0))
    a.close()


def test_big_env_refused_node_keeps_working(c):
    setup(c)
    big = {"V%03d" % i: "x" * 32000 for i in range(141)}  # ~4.5 MB
    body = lambda env: {"name": "big", "nodes": 1, "gpus_per_node": 1,
                        "command": ["/bin/true"], "env": env}
    st, _, b = c.api("POST", "/v1/jobs/batch", {"jobs": [body({}), body(big)]}, token=S["user"])
    check_eq(st, 400, b)
    check_eq(b.get("field"), "jobs.1.env", b)
    check("job_spec_max_bytes" in b.get("detail", ""), b)
    # a single 4.5 MB job is over the body limit already: muster-api answers
    # 413 from the headers and closes, so a client still sending the body may
    # see its pipe broken before it reads the answer (the answer is checked
    # from the headers alone); 100 kB is over the cap
    try:
        st, _, b = c.api("POST", "/v1/jobs", body(big), token=S["user"])
        check(st in (400, 413), st, b)
    except (BrokenPipeError, ConnectionResetError):
        pass
    import socket
    with socket.create_connection(("127.0.0.1", c.http_port), timeout=10) as s:
        s.sendall(("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nContent-Length: 4608000\r\n\r\n"
                   % S["user"]).encode())
        head = s.recv(4096).decode("latin-1")
    check(head.startswith("HTTP/1.1 413"), head[:200])
    st, _, b = c.api("POST", "/v1/jobs", body({"V%d" % i: "x" * 5000 for i in range(20)}), token=S["user"])
    check_eq(st, 400, b)
    check_eq(b.get("field"), "env", b)
    st, _, b = c.api("POST", "/v1/jobs", dict(body({}), command=["/bin/echo"] + ["y" * 4000] * 20),
                     token=S["user"])
    check_eq(st, 400, b)
    check_eq(b.get("field"), "command", b)
    check_eq(c.sql_value("SELECT count(*) FROM jobs WHERE name = 'big'"), "0", "nothing accepted")
    # gRPC Submit too
    pb = load()
    grpc = __import__("grpc")
    J = pb["jobs"]
    jobs = pb["jobs_grpc"].JobServiceStub(S["ch"])
    e = expect_code(grpc.StatusCode.INVALID_ARGUMENT, jobs.Submit,
                    J.SubmitJobRequest(job=J.JobSpec(name="big", nodes=1, gpus_per_node=1, command=["/bin/true"],
                                                  env={"V%d" % i: "x" * 5000 for i in range(20)})),
                    metadata=md(S["user"]))
    check("job_spec_max_bytes" in e.details(), e.details())
    # the cap is a setting
    c.sql("UPDATE settings SET value = '200000' WHERE key = 'job_spec_max_bytes'")
    try:
        jid, state = run_job(c, "test ${#V19} = 5000", env={"V%d" % i: "x" * 5000 for i in range(20)})
        check_eq(state, "COMPLETED", jid)
    finally:
        c.sql("UPDATE settings SET value = '65536' WHERE key = 'job_spec_max_bytes'")
    jid, state = run_job(c, "exit 0")
    check_eq(state, "COMPLETED", "the node keeps running jobs", jid)


def test_status_that_fails_to_apply_is_retried(c):
    """A RunStatus the database refuses (here a trigger, as a lost
    connection or a deadlock would) is kept and retried until it lands."""
    setup(c)
    c.sql("CREATE FUNCTION ch_refuse() RETURNS trigger LANGUAGE plpgsql AS"
          " $$BEGIN RAISE EXCEPTION 'ch: refused for the test'; END$$;"
          " CREATE TRIGGER ch_refuse BEFORE INSERT OR UPDATE ON run_node_status"
          " FOR EACH ROW EXECUTE FUNCTION ch_refuse()")
    try:
        st, _, b = c.api("POST", "/v1/jobs", {
            "name": "retry", "nodes": 1, "gpus_per_node": 1, "command": ["/bin/sh", "-c", "exit 4"]},
            token=S["user"])
        check_eq(st, 201, b)
        jid = str(b["id"])
        c.wait_until(lambda: "not applied yet" in c.log_text("api"), 20, "a failed apply")
        time.sleep(2.5)  # a few retries
        check_eq(c.sql_value("SELECT state FROM jobs WHERE id = $1", jid) in ("STARTING", "PENDING"), True)
    finally:
        c.sql("DROP TRIGGER ch_refuse ON run_node_status; DROP FUNCTION ch_refuse()")
    c.wait_until(lambda: c.sql_value("SELECT state FROM jobs WHERE id = $1", jid) == "FAILED", 20,
                 "the report landed")
    check_eq(c.sql_value("SELECT exit_code FROM jobs WHERE id = $1", jid), "4")


if __name__ == "__main__":
    harness.main(api=False)
