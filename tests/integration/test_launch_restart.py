#!/usr/bin/python3
"""Kick the node, shrink and restart (on_shrink restart, the default), end to
end: three fake-GPU agents on 127.0.0.2-4, real muster-api and
muster-scheduler, Debian's torch with gloo on CPU.

A 3-node elastic job (min_nodes 2) all-reduces once a step and rank 0
checkpoints after each step. A fatal XID on the rank-0 node shrinks the run
to the two kept nodes, whose processes are stopped and started again with
the new world: ranks 0..1, MASTER_ADDR the new rank-0 node, a fresh
MASTER_PORT, MUSTER_RESTART_COUNT=1. The job resumes from its checkpoint
with world size 2 and completes with the right sums; event run.restarted
says {from: 3, to: 2, lost: [node]}; usage is exact (the kept GPUs to the
end, the lost one to the shrink)."""
import json
import os

import harness
from harness import check, check_eq
from test_grpc_common import make_tenant, make_token

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "launch_prog.py")
NODES = ["lr-n1", "lr-n2", "lr-n3"]
STEPS = 12
S = {}


def setup(c):
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    c.start_api()
    make_tenant(c, "lrs")
    c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = 'lrs'")
    c.sql("INSERT INTO priority_classes (name, priority, preemptible, grace_period)"
          " VALUES ('quick', 100, true, 2)")
    S["user"] = make_token(c, "tenant", tenant="lrs", user="rea")
    S["sched"] = c.start_process(["muster-scheduler", "--db", c.db_url, "--log-level", "info"],
                                 name="scheduler")
    S["out"] = os.path.join(c.dir, "out")
    os.makedirs(S["out"])
    S["agents"] = [c.start_agent(n, i, make_token(c, "agent", node=n), gpus=2) for i, n in enumerate(NODES)]
    c.wait_until(lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name LIKE 'lr-n%' AND up") == "3",
                 20, "three agents registered")


def test_xid_on_rank0_restarts_on_kept_nodes(c):
    setup(c)
    env = {"OUT": S["out"], "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
    st, _, b = c.api("POST", "/v1/jobs", {
        "name": "ckpt", "nodes": 3, "min_nodes": 2, "gpus_per_node": 1, "priority_class": "quick",
        "command": ["/usr/bin/python3", PROG, "ckpt", "rs", str(STEPS)], "env": env,
        "time_limit": "5:00"}, token=S["user"])
    check_eq(st, 201, "submit", b)
    jid = str(b["id"])
    check_eq(b["on_shrink"], "restart", "the default")
    ck = os.path.join(S["out"], "rs.ckpt")

    def steps():
        try:
            return len(json.load(open(ck))["worlds"])
        except (OSError, ValueError):
            return 0
    c.wait_until(lambda: steps() >= 2, 90, "two steps checkpointed by the 3-node world")
    run = c.sql_value("SELECT id FROM runs WHERE job_id = $1 AND live", jid)
    alloc = c.sql("SELECT n.name, n.address, a.node_rank, a.gpu_index FROM run_allocations a"
                  " JOIN nodes n ON n.id = a.node_id WHERE a.run_id = $1 ORDER BY a.node_rank", run)
    rank0, gpu0 = alloc[0][0], int(alloc[0][3])
    kept = [r for r in alloc if r[0] != rank0]
    port0 = int(c.sql_value("SELECT master_port FROM runs WHERE id = $1", run))
    with open(os.path.join(c.dir, "agent-" + rank0, "fault"), "a") as f:
        f.write("gpu %d xid 79\n" % gpu0)

    c.wait_until(lambda: c.sql_value("SELECT state FROM jobs WHERE id = $1", jid)
                 in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"), 120, "job %s ends" % jid)
    state = c.sql_value("SELECT state FROM jobs WHERE id = $1", jid)
    if state != "COMPLETED":
        for n in NODES:
            d = os.path.join(c.dir, "agent-" + n, "runs", run)
            for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                if f.endswith(".err"):
                    print("--- %s %s\n%s" % (n, f, open(os.path.join(d, f)).read()[-3000:]))
    check_eq(state, "COMPLETED", "the job completes after the restart")
    check_eq(c.sql_value("SELECT count(*) FROM runs WHERE job_id = $1", jid), "1", "the same run, no requeue")
    done = json.load(open(os.path.join(S["out"], "rs.done.json")))
    worlds = done["state"]["worlds"]
    k = worlds.index(2) if 2 in worlds else len(worlds)
    print("worlds per step:", worlds)
    check_eq(len(worlds), STEPS, "every step done once")
    check(k >= 2 and worlds == [3] * k + [2] * (STEPS - k), "3-node steps, then 2-node steps", worlds)
    check_eq(done["state"]["acc"], 3 * k + 2 * (STEPS - k), "the sums")
    check_eq(done["world"], 2, "resumed with world size 2")
    e = done["env"]
    check_eq((e["RANK"], e["WORLD_SIZE"], e["NNODES"], e["SLURM_NNODES"]), ("0", "2", "2", "2"))
    check_eq(e["MASTER_ADDR"], kept[0][1], "MASTER_ADDR: the new rank-0 node")
    check_eq(e["SLURMD_NODENAME"], kept[0][0])
    check_eq(e["MUSTER_RESTART_COUNT"], "1")
    check_eq(int(e["MASTER_PORT"]), port0 + 1, "a fresh MASTER_PORT")
    ev = c.sql("SELECT data->>'from', data->>'to', data->>'lost', data->>'restart_count' FROM events"
               " WHERE run_id = $1 AND kind = 'run.restarted'", run)
    check_eq(ev, [("3", "2", '["%s"]' % rank0, "1")], "run.restarted")
    u = c.sql("SELECT u.gpu_seconds,"
              " round(2 * extract(epoch FROM r.ended_at - r.started_at))::bigint + r.shrunk_gpu_seconds,"
              " r.shrunk_gpu_seconds, round(1 * extract(epoch FROM r.shrunk_at - r.started_at))::bigint"
              " FROM usage_records u JOIN runs r ON r.id = u.run_id WHERE u.run_id = $1", run)[0]
    check_eq(u[0], u[1], "gpu_seconds = kept part to the end + lost part to the shrink", u)
    check_eq(u[2], u[3], "lost part = 1 GPU x (shrink - start)", u)


def test_zz_cleanup(c):
    for p in S.get("agents", []):
        c.stop_process(p)


if __name__ == "__main__":
    harness.main(api=False)
