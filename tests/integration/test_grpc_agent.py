#!/usr/bin/python3
"""AgentService.Connect from an independent client playing a node agent
(python3-grpcio, stubs generated at test time): Register upserts the node
and its GPUs, heartbeats update last_heartbeat and GPU figures, a run
assigned to the node (inserted by SQL, as the scheduler would, + NOTIFY
muster_agents) arrives as the full desired state with the launch contract,
RunStatus moves the run RUNNING then COMPLETED, cancel arrives as a stop
order, a fatal XID drains the node, and agent tokens speak only for their
own node."""
import queue
import threading
import time

import harness
from harness import check, check_eq
from test_grpc_common import channel, expect_code, load, make_tenant, make_token, md

S = {}


class Agent:
    """One Connect stream: send() queues messages, recv() waits for one."""

    def __init__(self, stub, token, register=None):
        self.q = queue.Queue()
        self.inbox = queue.Queue()
        if register is not None:
            self.q.put(register)
        self.call = stub.Connect(self._gen(), metadata=md(token))
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _gen(self):
        while True:
            m = self.q.get()
            if m is None:
                return
            yield m

    def _read(self):
        try:
            for m in self.call:
                self.inbox.put(m)
        except Exception as e:
            self.inbox.put(e)
        self.inbox.put(None)

    def send(self, m):
        self.q.put(m)

    def recv(self, timeout=10):
        m = self.inbox.get(timeout=timeout)
        if isinstance(m, Exception):
            raise m
        return m

    def desired(self, want=lambda d: True, timeout=10):
        """The next DesiredState for which want(d) holds (earlier ones skipped)."""
        end = time.monotonic() + timeout
        seen = []
        while time.monotonic() < end:
            try:
                m = self.recv(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                break
            if m is None:
                break
            if m.WhichOneof("msg") == "desired":
                seen.append(m.desired)
                if want(m.desired):
                    return m.desired
        raise harness.CheckFailed("no matching desired state; seen %r" % seen)

    def close(self):
        self.q.put(None)
        self.call.cancel()


def setup(c):
    if S:
        return S
    pb = load()
    import grpc
    S["grpc"] = grpc
    S["pb"] = pb
    S["tok1"] = make_token(c, "agent", node="gpu-n1")
    S["tok2"] = make_token(c, "agent", node="gpu-n2")
    make_tenant(c, "ag")
    c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = 'ag'")
    S["user"] = make_token(c, "tenant", tenant="ag", user="uma")
    ch = channel(c)
    S["agent"] = pb["agent_grpc"].AgentServiceStub(ch)
    S["jobs"] = pb["jobs_grpc"].JobServiceStub(ch)
    S["ch"] = ch
    return S


def finish_runs(c, job_id):
    """What the scheduler does with ended runs: not live, allocations freed."""
    c.sql("UPDATE runs SET live = false WHERE job_id = $1 AND ended_at IS NOT NULL;"
          " UPDATE run_allocations SET live = false WHERE run_id IN"
          " (SELECT id FROM runs WHERE job_id = $1 AND NOT live)", str(job_id))


def register(name, addr, ngpus=4):
    A = S["pb"]["agent"]
    return A.AgentMessage(register=A.Register(
        node_name=name, address=addr, topology="block-1/rack-1", labels={"zone": "a"}, agent_version="test-1",
        gpus=[A.GpuInfo(index=i, uuid="GPU-%s-%d" % (name, i), model="H100", memory_mb=81559)
              for i in range(ngpus)]))


def test_wrong_node_and_bad_stream(c):
    s = setup(c)
    code = s["grpc"].StatusCode
    # a token for gpu-n1 cannot speak for gpu-n2
    a = Agent(s["agent"], s["tok1"], register("gpu-n2", "10.0.0.2"))
    expect_code(code.PERMISSION_DENIED, a.recv)
    # no token, a tenant token
    a = Agent(s["agent"], None, register("gpu-n1", "10.0.0.1"))
    expect_code(code.UNAUTHENTICATED, a.recv)
    a = Agent(s["agent"], s["user"], register("gpu-n1", "10.0.0.1"))
    expect_code(code.PERMISSION_DENIED, a.recv)
    # the first message must be Register
    A = s["pb"]["agent"]
    a = Agent(s["agent"], s["tok1"], A.AgentMessage(heartbeat=A.Heartbeat(seq=1)))
    expect_code(code.INVALID_ARGUMENT, a.recv)
    # garbage bytes as a stream message
    raw = s["ch"].stream_stream("/muster.v1.AgentService/Connect")
    it = raw(iter([b"\xff\xff\xff\xff\x0f"]), metadata=md(s["tok1"]))
    expect_code(code.INVALID_ARGUMENT, next, it)
    check_eq(c.sql_value("SELECT count(*) FROM nodes WHERE name LIKE 'gpu-n%'"), "0")


def test_register_heartbeat_run(c):
    s = setup(c)
    A = s["pb"]["agent"]
    J = s["pb"]["jobs"]
    a = Agent(s["agent"], s["tok1"], register("gpu-n1", "10.0.0.1"))
    m = a.recv()
    check_eq(m.WhichOneof("msg"), "ack")
    node_id = m.ack.node_id
    check(m.ack.heartbeat_timeout_s > 0, m)
    d = a.desired()
    check_eq(len(d.runs), 0)
    check_eq(d.drain, False)
    row = c.sql("SELECT address, topology, gpu_count, gpu_model, agent_version, up FROM nodes WHERE id = $1",
                str(node_id))[0]
    check_eq(row, ("10.0.0.1", "block-1/rack-1", "4", "H100", "test-1", "t"))
    check_eq(c.sql_value("SELECT count(*) FROM gpus WHERE node_id = $1", str(node_id)), "4")

    # heartbeats: last_heartbeat and per-GPU figures
    a.send(A.AgentMessage(heartbeat=A.Heartbeat(seq=1, gpus=[
        A.GpuHealth(index=i, memory_used_mb=1000 + i, utilization=50 + i, temperature=60, ecc_errors=0)
        for i in range(4)])))
    c.wait_until(lambda: c.sql_value("SELECT utilization FROM gpus WHERE node_id = $1 AND idx = 3",
                                     str(node_id)) == "53", what="heartbeat flushed")
    check(c.sql_value("SELECT last_heartbeat IS NOT NULL FROM nodes WHERE id = $1", str(node_id)) == "t")

    # a second node registers; a 2-node gang is assigned by SQL as the scheduler would
    b = Agent(s["agent"], s["tok2"], register("gpu-n2", "10.0.0.2"))
    check_eq(b.recv().WhichOneof("msg"), "ack")
    b.desired()
    job = s["jobs"].Submit(J.SubmitJobRequest(job=J.JobSpec(
        nodes=2, gpus_per_node=2, procs_per_node=2, command=["torchrun", "train.py"], env={"LR": "0.1"},
        workdir="/work", time_limit="10:00")), metadata=md(s["user"]), timeout=10).job
    run_id = c.sql_value(
        "WITH r AS (INSERT INTO runs (job_id, attempt, epoch, nodes, gpus_per_node, time_limit, master_addr,"
        " master_port, grace_period) VALUES ($1, 1, 1, 2, 2, 600, '10.0.0.1', 29400, 7) RETURNING id),"
        " a AS (INSERT INTO run_allocations (run_id, node_id, node_rank, gpu_index)"
        "  SELECT r.id, n.id, CASE n.name WHEN 'gpu-n1' THEN 0 ELSE 1 END, g"
        "  FROM r, nodes n, (VALUES (1), (3)) v(g) WHERE n.name IN ('gpu-n1', 'gpu-n2'))"
        " SELECT id FROM r", str(job.id))
    c.sql("UPDATE jobs SET state = 'STARTING' WHERE id = $1; SELECT pg_notify('muster_agents', 'gpu-n1');"
          "SELECT pg_notify('muster_agents', 'gpu-n2')", str(job.id))
    d1 = a.desired(lambda d: len(d.runs) == 1)
    d2 = b.desired(lambda d: len(d.runs) == 1)
    r1, r2 = d1.runs[0], d2.runs[0]
    check_eq((r1.run_id, r1.job_id, r1.attempt), (int(run_id), job.id, 1))
    check_eq(list(r1.command), ["torchrun", "train.py"])
    check_eq(dict(r1.env), {"LR": "0.1"})
    check_eq((r1.workdir, r1.procs_per_node, r1.gpus_per_node, r1.time_limit_s), ("/work", 2, 2, 600))
    check_eq((r1.node_rank, r2.node_rank), (0, 1))
    check_eq(list(r1.gpu_indices), [1, 3])
    check_eq((r1.master_addr, r1.master_port), ("10.0.0.1", 29400))
    check_eq([(n.rank, n.name, n.address, n.gpus) for n in r1.nodes],
             [(0, "gpu-n1", "10.0.0.1", 2), (1, "gpu-n2", "10.0.0.2", 2)])
    check_eq((r1.stop, r1.tenant, r1.user), (False, "ag", "uma"))
    check(d1.generation > 0, d1)

    # RunStatus: RUNNING moves the run; both parts exiting 0 completes it
    a.send(A.AgentMessage(run_status=A.RunStatus(run_id=int(run_id), phase=A.RUN_PHASE_RUNNING,
                                                 log_path="/var/log/muster/%s" % run_id)))
    c.wait_until(lambda: c.sql_value("SELECT state FROM runs WHERE id = $1", run_id) == "RUNNING",
                 what="run RUNNING")
    check(c.sql_value("SELECT started_at IS NOT NULL FROM runs WHERE id = $1", run_id) == "t")
    b.send(A.AgentMessage(run_status=A.RunStatus(run_id=int(run_id), phase=A.RUN_PHASE_RUNNING)))
    a.send(A.AgentMessage(run_status=A.RunStatus(run_id=int(run_id), phase=A.RUN_PHASE_EXITED, exit_code=0)))
    # the exited part leaves gpu-n1's desired state; the run is not over while gpu-n2 runs
    a.desired(lambda d: len(d.runs) == 0)
    check_eq(c.sql_value("SELECT ended_at IS NULL FROM runs WHERE id = $1", run_id), "t")
    b.send(A.AgentMessage(run_status=A.RunStatus(run_id=int(run_id), phase=A.RUN_PHASE_EXITED, exit_code=0)))
    c.wait_until(lambda: c.sql_value("SELECT state FROM runs WHERE id = $1", run_id) == "COMPLETED",
                 what="run COMPLETED")
    check_eq(c.sql_value("SELECT exit_code FROM runs WHERE id = $1", run_id), "0")
    b.desired(lambda d: len(d.runs) == 0)
    kinds = [r[0] for r in c.sql("SELECT kind FROM events WHERE run_id = $1 ORDER BY id", run_id)]
    check("run.running" in kinds and kinds.count("run.node_exited") == 2, kinds)
    finish_runs(c, job.id)

    # a second run fails on one node: the run FAILED, the other part is dropped at once
    run2 = c.sql_value(
        "WITH r AS (INSERT INTO runs (job_id, attempt, epoch, nodes, gpus_per_node, time_limit)"
        " VALUES ($1, 2, 1, 2, 1, 600) RETURNING id),"
        " a AS (INSERT INTO run_allocations (run_id, node_id, node_rank, gpu_index)"
        "  SELECT r.id, n.id, CASE n.name WHEN 'gpu-n1' THEN 0 ELSE 1 END, 0"
        "  FROM r, nodes n WHERE n.name IN ('gpu-n1', 'gpu-n2'))"
        " SELECT id FROM r; SELECT pg_notify('muster_agents', 'gpu-n1'), pg_notify('muster_agents', 'gpu-n2')",
        str(job.id))
    r = a.desired(lambda d: len(d.runs) == 1).runs[0]
    check_eq(r.run_id, int(run2))
    check(r.master_addr == "10.0.0.1" and r.master_port > 0, r)  # filled when the scheduler left them empty
    b.desired(lambda d: len(d.runs) == 1)
    b.send(A.AgentMessage(run_status=A.RunStatus(run_id=int(run2), phase=A.RUN_PHASE_EXITED, exit_signal=9,
                                                 exit_code=137)))
    c.wait_until(lambda: c.sql_value("SELECT state FROM runs WHERE id = $1", run2) == "FAILED", what="FAILED")
    check_eq(c.sql("SELECT exit_code, exit_signal FROM runs WHERE id = $1", run2)[0], ("137", "9"))
    a.desired(lambda d: len(d.runs) == 0)
    finish_runs(c, job.id)

    # a stop order: the run stays in the desired state with stop = true and its grace
    run3 = c.sql_value(
        "WITH r AS (INSERT INTO runs (job_id, attempt, epoch, nodes, gpus_per_node, time_limit, grace_period)"
        " VALUES ($1, 3, 1, 1, 1, 600, 5) RETURNING id),"
        " a AS (INSERT INTO run_allocations (run_id, node_id, node_rank, gpu_index)"
        "  SELECT r.id, n.id, 0, 2 FROM r, nodes n WHERE n.name = 'gpu-n1')"
        " SELECT id FROM r; SELECT pg_notify('muster_agents', 'gpu-n1')", str(job.id))
    a.desired(lambda d: len(d.runs) == 1 and not d.runs[0].stop)
    c.sql("UPDATE runs SET state = 'STOPPING', stop_reason = 'cancel', stop_requested_at = now() WHERE id = $1;"
          " SELECT pg_notify('muster_agents', 'gpu-n1')", run3)
    r = a.desired(lambda d: len(d.runs) == 1 and d.runs[0].stop).runs[0]
    check_eq((r.stop_reason, r.grace_period_s), ("cancel", 5))
    a.send(A.AgentMessage(run_status=A.RunStatus(run_id=int(run3), phase=A.RUN_PHASE_EXITED, exit_signal=15)))
    c.wait_until(lambda: c.sql_value("SELECT ended_at IS NOT NULL FROM runs WHERE id = $1", run3) == "t",
                 what="stop confirmed")
    check_eq(c.sql_value("SELECT state FROM runs WHERE id = $1", run3), "STOPPING")  # the scheduler finishes it

    # a fatal XID: GPU unhealthy, node drained, the agent told
    a.send(A.AgentMessage(heartbeat=A.Heartbeat(seq=2, gpus=[A.GpuHealth(index=2, xids=[79])])))
    c.wait_until(lambda: c.sql_value("SELECT drain FROM nodes WHERE id = $1", str(node_id)) == "t",
                 what="node drained")
    check_eq(c.sql("SELECT healthy, last_xid FROM gpus WHERE node_id = $1 AND idx = 2", str(node_id))[0],
             ("f", "79"))
    check("79" in c.sql_value("SELECT drain_reason FROM nodes WHERE id = $1", str(node_id)))
    d = a.desired(lambda d: d.drain)
    check("XID 79" in d.drain_reason, d)
    # a fabric link down on gpu-n2 drains it too
    b.send(A.AgentMessage(heartbeat=A.Heartbeat(seq=2, links=[A.LinkState(iface="ib0", up=False)])))
    c.wait_until(lambda: c.sql_value("SELECT drain_reason FROM nodes WHERE name = 'gpu-n2'") ==
                 "fabric link ib0 down", what="link drain")
    check_eq(c.sql_value("SELECT count(*) FROM events e JOIN nodes n ON n.id = e.node_id"
                         " WHERE n.name = 'gpu-n2' AND kind = 'node.link_down'"), "1")
    check_eq(c.sql_value("SELECT fabric_fault FROM nodes WHERE name = 'gpu-n2'"),
             "fabric link ib0 down", "the scheduler sees the fabric fault")
    check_eq(c.api("POST", "/v1/nodes/gpu-n2/resume")[0], 200)
    check_eq(c.sql_value("SELECT fabric_fault = '' FROM nodes WHERE name = 'gpu-n2'"), "t",
             "a resume clears the fault with the drain")
    check_eq(c.sql_value("SELECT count(*) FROM events e JOIN nodes n ON n.id = e.node_id"
                         " WHERE n.name = 'gpu-n1' AND kind = 'gpu.unhealthy'"), "1")
    a.close()
    b.close()


def test_reconnect_resync(c):
    s = setup(c)
    A = s["pb"]["agent"]
    # a new stream for the same node gets the full state again, and a
    # non-fatal XID only records last_xid
    a = Agent(s["agent"], s["tok1"], register("gpu-n1", "10.0.0.1"))
    check_eq(a.recv().WhichOneof("msg"), "ack")
    d = a.desired()
    check_eq(d.drain, True)
    # the GPU that reported XID 79 stays unhealthy across the agent's restart (node still drained)
    check_eq(c.sql("SELECT healthy, health_reason FROM gpus g JOIN nodes n ON n.id = g.node_id"
                   " WHERE n.name = 'gpu-n1' AND idx = 2")[0], ("f", "GPU 2 reported XID 79"))
    a.send(A.AgentMessage(heartbeat=A.Heartbeat(seq=1, gpus=[A.GpuHealth(index=0, xids=[13])])))
    c.wait_until(lambda: c.sql_value("SELECT last_xid FROM gpus g JOIN nodes n ON n.id = g.node_id"
                                     " WHERE n.name = 'gpu-n1' AND idx = 0") == "13", what="xid 13")
    check_eq(c.sql_value("SELECT healthy FROM gpus g JOIN nodes n ON n.id = g.node_id"
                         " WHERE n.name = 'gpu-n1' AND idx = 0"), "t")
    # resume through REST reaches the agent's desired state (NOTIFY muster_sched node:)
    st, _, body = c.api("POST", "/v1/nodes/gpu-n1/resume")
    check_eq(st, 200, body)
    a.desired(lambda d: not d.drain)
    a.close()
    # after the resume a re-registration clears it
    a = Agent(s["agent"], s["tok1"], register("gpu-n1", "10.0.0.1"))
    check_eq(a.recv().WhichOneof("msg"), "ack")
    check_eq(c.sql_value("SELECT healthy FROM gpus g JOIN nodes n ON n.id = g.node_id"
                         " WHERE n.name = 'gpu-n1' AND idx = 2"), "t")
    a.close()


def test_with_scheduler(c):
    """The whole loop with the real scheduler: submit over gRPC, the
    scheduler places the job on the agent's node, the agent gets it in its
    desired state, reports RUNNING then EXITED, the job completes."""
    s = setup(c)
    harness.require_binary("muster-scheduler")
    A = s["pb"]["agent"]
    J = s["pb"]["jobs"]
    tok = make_token(c, "agent", node="gpu-n3")
    a = Agent(s["agent"], tok, register("gpu-n3", "10.0.0.3", ngpus=8))
    check_eq(a.recv().WhichOneof("msg"), "ack")
    a.desired()
    # only gpu-n3 may take the job
    c.sql("UPDATE nodes SET drain = true, drain_reason = 'test' WHERE name <> 'gpu-n3'")
    c.start_process(["muster-scheduler", "--db", c.db_url, "--log-level", "info"], name="scheduler")
    job = s["jobs"].Submit(J.SubmitJobRequest(job=J.JobSpec(
        nodes=1, gpus_per_node=4, command=["python", "-c", "print(1)"], time_limit="5:00")),
        metadata=md(s["user"]), timeout=10).job
    d = a.desired(lambda d: any(r.job_id == job.id for r in d.runs), timeout=20)
    r = [r for r in d.runs if r.job_id == job.id][0]
    check_eq((len(r.gpu_indices), r.node_rank, len(r.nodes), r.nodes[0].name), (4, 0, 1, "gpu-n3"))
    check(r.master_addr == "10.0.0.3" and r.master_port > 0, r)
    a.send(A.AgentMessage(run_status=A.RunStatus(run_id=r.run_id, phase=A.RUN_PHASE_RUNNING)))
    c.wait_until(lambda: s["jobs"].Get(J.GetJobRequest(job_id=job.id), metadata=md(s["user"]),
                                       timeout=10).state == "RUNNING", timeout=20, what="job RUNNING")
    a.send(A.AgentMessage(run_status=A.RunStatus(run_id=r.run_id, phase=A.RUN_PHASE_EXITED, exit_code=0)))
    c.wait_until(lambda: s["jobs"].Get(J.GetJobRequest(job_id=job.id), metadata=md(s["user"]),
                                       timeout=10).state == "COMPLETED", timeout=20, what="job COMPLETED")
    a.desired(lambda d: not any(x.job_id == job.id for x in d.runs))
    g = s["jobs"].Get(J.GetJobRequest(job_id=job.id), metadata=md(s["user"]), timeout=10)
    check_eq((g.has_exit_code, g.exit_code), (True, 0))
    check_eq([x.state for x in g.runs], ["COMPLETED"])
    a.close()


if __name__ == "__main__":
    harness.main(api=True)
