#!/usr/bin/python3
"""muster-agent end to end: three fake-GPU agents (4 GPUs each) register
with a real muster-api; muster-scheduler places a 2-node x 4-GPU gang
(4 processes per node) and the agents run a real program that proves the
launch contract (agent_gang_prog.py: every process reaches MASTER_ADDR:
MASTER_PORT from its environment, rank 0 counts WORLD_SIZE distinct ranks,
CUDA_VISIBLE_DEVICES checked). Then XID 79 injected on one node of a
second gang: that node is drained, the gang is stopped on every node and
reruns on healthy nodes, where it completes.

Each agent has its own address. With `ip netns` permitted, each agent runs
in its own network namespace (10.250.<n>.2, veth to the root namespace,
where muster-api and the scheduler listen); otherwise the agents use the
loopback addresses 127.0.0.2-4 (same kernel, distinct IPs), said on stdout."""
import json
import os
import subprocess
import time

import harness
from harness import check, check_eq
from test_grpc_common import make_tenant, make_token

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "agent_gang_prog.py")
NODES = ["ag-n1", "ag-n2", "ag-n3"]
S = {}


def sh(*args):
    return subprocess.run(list(args), capture_output=True, text=True)


class Netns:
    """One namespace per agent, a veth pair each; torn down at exit."""

    def __init__(self, tag):
        self.tag = tag
        self.names = []

    def try_make(self, n):
        ok = sh("ip", "netns", "add", "mu-%s-probe" % self.tag)
        if ok.returncode != 0:
            return None
        sh("ip", "netns", "del", "mu-%s-probe" % self.tag)
        addrs = []
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1")
        for i in range(n):
            ns = "mu-%s-%d" % (self.tag, i)
            host_if, ns_if = "mh%s%d" % (self.tag, i), "mn%s%d" % (self.tag, i)
            sub = 250 + 0  # 10.250.<x>.0/24 per agent
            x = (int(self.tag, 16) % 50) * 4 + i + 1
            cmds = [
                ["ip", "netns", "add", ns],
                ["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if],
                ["ip", "link", "set", ns_if, "netns", ns],
                ["ip", "addr", "add", "10.%d.%d.1/24" % (sub, x), "dev", host_if],
                ["ip", "link", "set", host_if, "up"],
                ["ip", "netns", "exec", ns, "ip", "addr", "add", "10.%d.%d.2/24" % (sub, x), "dev", ns_if],
                ["ip", "netns", "exec", ns, "ip", "link", "set", ns_if, "up"],
                ["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"],
                ["ip", "netns", "exec", ns, "ip", "route", "add", "default", "via", "10.%d.%d.1" % (sub, x)],
            ]
            self.names.append((ns, host_if))
            for c in cmds:
                r = sh(*c)
                if r.returncode != 0:
                    self.close()
                    return None
            addrs.append(("10.%d.%d.2" % (sub, x), "10.%d.%d.1" % (sub, x), ns))
        return addrs

    def close(self):
        for ns, host_if in self.names:
            sh("ip", "link", "del", host_if)
            sh("ip", "netns", "del", ns)
        self.names = []


def setup(c):
    if S:
        return S
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    t0 = time.monotonic()
    tag = "%02x" % (os.getpid() % 250)
    nets = Netns(tag)
    addrs = nets.try_make(len(NODES)) if os.environ.get("MUSTER_AGENT_TEST_NETNS", "1") != "0" else None
    S["nets"] = nets
    if addrs:
        print("multi-host: network namespaces %s" % ", ".join(a[2] for a in addrs))
        # muster-api must be reachable from the namespaces: listen on every address
        c.http_port, c.grpc_port = harness.free_port(), harness.free_port()
        c.start_api(MUSTER_GRPC_ADDR="0.0.0.0:%d" % c.grpc_port)
    else:
        print("multi-host: `ip netns` not permitted here; agents use loopback addresses 127.0.0.2-4")
        addrs = [("127.0.0.%d" % (i + 2), "127.0.0.1", None) for i in range(len(NODES))]
        c.start_api()
    S["addrs"] = addrs
    t1 = time.monotonic()
    make_tenant(c, "agt")
    c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = 'agt'")
    S["user"] = make_token(c, "tenant", tenant="agt", user="ada")
    S["sched"] = c.start_process(["muster-scheduler", "--db", c.db_url, "--log-level", "info"],
                                 name="scheduler")
    S["out"] = os.path.join(c.dir, "gang-out")
    os.makedirs(S["out"], exist_ok=True)
    S["agents"] = {}
    for i, n in enumerate(NODES):
        S["agents"][n] = start_agent(c, i, n)
    c.wait_until(lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name LIKE 'ag-n%' AND up") == "3",
                 15, "three agents registered")
    print("setup: namespaces + api %.2fs, scheduler + agents registered %.2fs"
          % (t1 - t0, time.monotonic() - t1))
    return S


def start_agent(c, i, n):
    addr, api_host, ns = S["addrs"][i]
    tok = S.setdefault("tokens", {}).get(n) or make_token(c, "agent", node=n)
    S["tokens"][n] = tok
    tokf = os.path.join(c.dir, "token-" + n)
    if not os.path.exists(tokf):
        c.token_file(tok, "token-" + n)
    state = os.path.join(c.dir, "agent-" + n)
    args = [harness.binary("muster-agent"), "--api", "%s:%d" % (api_host, c.grpc_port),
            "--node", n, "--address", addr, "--topology", "block-1/rack-1",
            "--state-dir", state, "--gpu-backend", "fake", "--fake-gpus", "4",
            "--heartbeat-interval", "500ms", "--log-level", "debug", "--token-file", tokf] + c.agent_flags()
    if ns:
        args = ["ip", "netns", "exec", ns] + args
    return c.start_process(args, name="agent-" + n)


def submit(c, name, **extra):
    body = {"name": name, "nodes": 2, "gpus_per_node": 4, "procs_per_node": 4,
            "command": ["/usr/bin/python3", PROG], "env": {"OUT": S["out"]},
            "time_limit": "5:00", "max_retries": 2}
    body.update(extra)
    st, _, b = c.api("POST", "/v1/jobs", body, token=S["user"])
    check_eq(st, 201, "submit %s: %s" % (name, b))
    return b["id"]


def job_state(c, jid):
    return c.sql_value("SELECT state FROM jobs WHERE id = $1", str(jid))


def result(run_id, timeout=20):
    path = os.path.join(S["out"], "result-%s.json" % run_id)
    harness.wait_until(lambda: os.path.exists(path), timeout, path)
    return json.load(open(path))


def check_result(res):
    check_eq(res["world"], 8, "WORLD_SIZE")
    check_eq(res["ranks"], list(range(8)), "distinct ranks")
    for p in res["procs"]:
        check_eq(p["problems"], [], "rank %d environment" % p["rank"])
    check(res["master"][0] in [a[0] for a in S["addrs"]], "MASTER_ADDR is a node address", res)


def run_nodes(c, run_id):
    rows = c.sql("SELECT DISTINCT n.name FROM run_allocations a JOIN nodes n ON n.id = a.node_id"
                 " WHERE a.run_id = $1 ORDER BY 1", str(run_id))
    return [r[0] for r in rows]


def test_registered_and_heartbeating(c):
    setup(c)
    rows = c.sql("SELECT g.idx, g.uuid, g.model, g.memory_mb, g.healthy FROM gpus g JOIN nodes n"
                 " ON n.id = g.node_id WHERE n.name = 'ag-n2' ORDER BY g.idx")
    check_eq([r[0] for r in rows], ["0", "1", "2", "3"], "GPU indices")
    check(all(r[1].startswith("GPU-fake") and r[2] == "H100-80GB" and r[3] == "81920" and r[4] == "t"
              for r in rows), "GPU rows", rows)
    check_eq(c.sql_value("SELECT address FROM nodes WHERE name = 'ag-n2'"), S["addrs"][1][0], "address")
    hb = lambda: c.sql_value("SELECT last_heartbeat FROM nodes WHERE name = 'ag-n2'")
    first = hb()
    c.wait_until(lambda: hb() != first, 5, "a later heartbeat")


def test_gang_runs_and_completes(c):
    s = setup(c)
    t0 = time.monotonic()
    jid = submit(c, "gang-ok")
    c.wait_until(lambda: job_state(c, jid) in ("COMPLETED", "FAILED"), 30, "job %s ends" % jid)
    run_id = c.sql_value("SELECT id FROM runs WHERE job_id = $1", str(jid))
    check_eq(job_state(c, jid), "COMPLETED", "job state; runs: %s" %
             c.sql("SELECT id, state, exit_code FROM runs WHERE job_id = $1", str(jid)))
    check_result(result(run_id))
    check_eq(len(run_nodes(c, run_id)), 2, "two nodes")
    running = c.sql_value("SELECT extract(epoch FROM max(e.at) - j.created_at) FROM events e JOIN jobs j"
                          " ON j.id = e.job_id WHERE e.run_id = $1 AND e.kind = 'run.node_running'"
                          " GROUP BY j.created_at HAVING count(*) = 2", run_id)
    print("gang-ok: submit to both nodes' processes running %ss, to COMPLETED %.2fs"
          % (running and "%.3f" % float(running), time.monotonic() - t0))
    # logs and hostfile where the docs say
    node = run_nodes(c, run_id)[0]
    d = os.path.join(c.dir, "agent-" + node, "runs", run_id)
    check(os.path.exists(os.path.join(d, "proc0.out")) and os.path.exists(os.path.join(d, "hostfile")),
          "per-run logs and hostfile in", d)


def test_xid_requeues_on_healthy_nodes(c):
    s = setup(c)
    open(os.path.join(s["out"], "hold"), "w").close()
    try:
        jid = submit(c, "gang-xid")
        c.wait_until(lambda: c.sql_value("SELECT count(*) FROM runs WHERE job_id = $1 AND state = 'RUNNING'",
                                         str(jid)) == "1", 20, "first run RUNNING")
        run1 = c.sql_value("SELECT id FROM runs WHERE job_id = $1", str(jid))
        check_result(result(run1))
        nodes1 = run_nodes(c, run1)
        bad = nodes1[0]
        t0 = time.monotonic()
        with open(os.path.join(c.dir, "agent-" + bad, "fault"), "a") as f:
            f.write("gpu 2 xid 79\n")
        c.wait_until(lambda: c.sql_value("SELECT count(*) FROM runs WHERE job_id = $1", str(jid)) == "2",
                     20, "a second run")
        run2 = c.sql_value("SELECT max(id) FROM runs WHERE job_id = $1", str(jid))
        check_eq(c.sql_value("SELECT drain FROM nodes WHERE name = $1", bad), "t", "node drained")
        check_eq(c.sql_value("SELECT healthy FROM gpus g JOIN nodes n ON n.id = g.node_id"
                             " WHERE n.name = $1 AND g.idx = 2", bad), "f", "GPU 2 unhealthy")
        nodes2 = run_nodes(c, run2)
        check(bad not in nodes2 and len(nodes2) == 2, "rerun avoids", bad, nodes2)
        check_result(result(run2))
        print("xid: injected on %s to the rerun's ranks all connected in %.2fs (run %s on %s -> run %s on %s)"
              % (bad, time.monotonic() - t0, run1, nodes1, run2, nodes2))
        # the first run is stopped on every node: its processes are gone
        c.wait_until(lambda: c.sql_value("SELECT ended_at IS NOT NULL FROM runs WHERE id = $1", run1) == "t",
                     15, "run %s ended" % run1)
        open(os.path.join(s["out"], "release-%s" % run2), "w").close()
        c.wait_until(lambda: job_state(c, jid) in ("COMPLETED", "FAILED"), 20, "job %s ends" % jid)
        check_eq(job_state(c, jid), "COMPLETED", "job after the rerun")
        out = subprocess.run(["pgrep", "-f", "MUSTER_RUN_ID=%s" % run1], capture_output=True)
        check(out.returncode != 0, "no process of the stopped run left")
    finally:
        os.unlink(os.path.join(s["out"], "hold"))


def test_zz_cleanup(c):
    for p in S.get("agents", {}).values():
        c.stop_process(p)
    if S.get("nets"):
        S["nets"].close()


if __name__ == "__main__":
    try:
        harness.main(api=False)
    finally:
        if S.get("nets"):
            S["nets"].close()
