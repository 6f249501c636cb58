"""Nodes over REST: list/get with the derived state (IDLE, MIXED, ALLOCATED,
DRAINING, DRAINED, DOWN) and per-GPU allocation, drain/resume (admin) with
an event and NOTIFY muster_sched 'node:<name>', roles (agents: own node)."""
import os
import subprocess
import time
import harness
from harness import check, check_eq
from test_admin_common import expect_problem, make_job, events, walk


def add_node(c, name, gpus, up=True, topology="block-1/rack-1"):
    nid = c.sql_value("INSERT INTO nodes (name, address, topology, gpu_model, gpu_count, up, labels,"
                      " last_heartbeat) VALUES ($1, $2, $3, 'H100', $4, $5, '{\"zone\": \"a\"}', now())"
                      " RETURNING id", name, "10.0.0.%d" % (len(name) + gpus), topology, gpus, up)
    c.sql("INSERT INTO gpus (node_id, idx, uuid, model, memory_mb) SELECT $1, i, 'GPU-' || $2 || '-' || i,"
          " 'H100', 81920 FROM generate_series(0, $3 - 1) i", nid, name, gpus)
    return nid


def allocate(c, job, placements):
    """A live run of `job` holding {node id: [gpu indices]}."""
    run = c.sql_value("INSERT INTO runs (job_id, attempt, epoch, nodes, gpus_per_node, time_limit)"
                      " VALUES ($1, 1, 1, $2, 1, 60) RETURNING id", job, len(placements))
    for rank, (nid, idxs) in enumerate(placements.items()):
        c.sql("INSERT INTO run_allocations (run_id, node_id, node_rank, gpu_index)"
              " SELECT $1, $2, $3, unnest($4::int[])", run, nid, rank,
              "{%s}" % ",".join(str(g) for g in idxs))
    return run


def states(c, token=None):
    st, _, b = c.api("GET", "/v1/nodes", token=token)
    check_eq(st, 200, b)
    return {n["name"]: n["state"] for n in b["items"]}


def test_states(c):
    c.make_tenant("ml")
    n1 = add_node(c, "n1", 8)
    n2 = add_node(c, "n2", 8)
    n3 = add_node(c, "n3", 4)
    add_node(c, "n4", 4, up=False)
    check_eq(states(c), {"n1": "IDLE", "n2": "IDLE", "n3": "IDLE", "n4": "DOWN"})
    allocate(c, make_job(c, "ml", "RUNNING"), {n2: [0, 1]})
    allocate(c, make_job(c, "ml", "RUNNING"), {n3: [0, 1, 2, 3]})
    check_eq(states(c), {"n1": "IDLE", "n2": "MIXED", "n3": "ALLOCATED", "n4": "DOWN"})
    st, _, n = c.api("GET", "/v1/nodes/n2")
    check_eq(st, 200, n)
    check_eq((n["name"], n["gpu_model"], n["gpu_count"], n["topology"], n["labels"]),
             ("n2", "H100", 8, "block-1/rack-1", {"zone": "a"}))
    check_eq([g["allocated"] for g in n["gpus"]], [True, True] + [False] * 6)
    check_eq([g["index"] for g in n["gpus"]], list(range(8)))
    g0 = n["gpus"][0]
    check_eq((g0["uuid"], g0["model"], g0["memory_mb"], g0["healthy"]), ("GPU-n2-0", "H100", 81920, True))
    check(set(g0) >= {"index", "uuid", "model", "memory_mb", "healthy", "health_reason", "allocated",
                      "utilization", "temperature", "memory_used_mb"}, g0)
    check(n["last_heartbeat"].endswith("Z"), n)
    check_eq([x["name"] for x in walk(c, "/v1/nodes", limit=3)], ["n1", "n2", "n3", "n4"])
    expect_problem(c, "GET", "/v1/nodes/nope", None, 404, "not-found")


def listen(c):
    """A psql session LISTENing on muster_sched for 2 s more; returns the
    process once the LISTEN is in effect."""
    psql = "/usr/lib/postgresql/15/bin/psql"
    if not os.path.exists(psql):
        psql = "psql"
    p = subprocess.Popen([psql, "-X", "-d", c.db_url], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    p.stdin.write(b"LISTEN muster_sched;\nSELECT pg_sleep(2);\n")
    p.stdin.close()
    line = p.stdout.readline()
    check(line.strip() == b"LISTEN", line)
    return p


def test_drain_resume(c):
    p = listen(c)
    st, _, n = c.api("POST", "/v1/nodes/n2/drain", {"reason": "xid 79"})
    check_eq(st, 200, n)
    check_eq((n["state"], n["drain_reason"]), ("DRAINING", "xid 79"))    # live allocations remain
    st, _, n = c.api("POST", "/v1/nodes/n1/drain")
    check_eq((st, n["state"], n["drain_reason"]), (200, "DRAINED", ""))
    out = p.stdout.read().decode()
    p.wait(timeout=20)
    check('payload "node:n2"' in out and 'payload "node:n1"' in out, out)
    ev = events(c, "node.drain")
    check_eq(len(ev), 2)
    check_eq(ev[0][2], "xid 79")
    check(ev[0][1] is not None, ev)
    c.sql("UPDATE run_allocations SET live = false WHERE node_id = (SELECT id FROM nodes WHERE name = 'n2')")
    check_eq(states(c)["n2"], "DRAINED")
    st, _, n = c.api("POST", "/v1/nodes/n2/resume")
    check_eq((st, n["state"], n["drain_reason"]), (200, "IDLE", ""))
    check_eq(len(events(c, "node.resume")), 1)
    check_eq(c.sql_value("SELECT drain FROM nodes WHERE name = 'n2'"), "f")
    # refusals change nothing
    expect_problem(c, "POST", "/v1/nodes/nope/drain", {"reason": "x"}, 404, "not-found")
    expect_problem(c, "POST", "/v1/nodes/n3/drain", {"reason": 5}, 400, "wrong-type", "reason")
    expect_problem(c, "POST", "/v1/nodes/n3/drain", {"why": "x"}, 400, "unknown-field", "why")
    expect_problem(c, "POST", "/v1/nodes/n3/drain", {"reason": "r" * 1025}, 400, "string-too-long", "reason")
    expect_problem(c, "POST", "/v1/nodes/n3/drain", None, 400, "malformed-json", raw="{")
    expect_problem(c, "POST", "/v1/nodes/n3/resume", {"now": True}, 400, "unknown-field", "now")


def test_roles(c):
    tt = c.make_token("tenant", tenant="ml")
    rd = c.make_token("reader")
    ag = c.make_token("agent", node="n3")
    for tok in (tt, rd):
        check_eq(len(states(c, tok)), 4)
        check_eq(c.api("GET", "/v1/nodes/n1", token=tok)[0], 200)
        expect_problem(c, "POST", "/v1/nodes/n3/drain", {}, 403, "forbidden", token=tok)
        expect_problem(c, "POST", "/v1/nodes/n1/resume", None, 403, "forbidden", token=tok)
    st, _, n = c.api("GET", "/v1/nodes/n3", token=ag)
    check_eq((st, n["name"]), (200, "n3"))
    expect_problem(c, "GET", "/v1/nodes/n1", None, 404, "not-found", token=ag)
    expect_problem(c, "GET", "/v1/nodes", None, 403, "forbidden", token=ag)
    expect_problem(c, "POST", "/v1/nodes/n3/drain", {}, 403, "forbidden", token=ag)
    expect_problem(c, "GET", "/v1/nodes", None, 401, "unauthenticated", token="")


def test_register(c):
    """store_node_register: the agents' upsert (node row, GPU rows, event, NOTIFY)."""
    probe = harness.require_binary("admin_node_register_probe")
    p = listen(c)
    r = subprocess.run([probe, c.db_url, "gpu-new", "8", "3"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    check_eq(r.returncode, 0, r.stderr)
    nid = int(r.stdout)
    out = p.stdout.read().decode()
    p.wait(timeout=20)
    check('payload "node:gpu-new"' in out, out)
    st, _, n = c.api("GET", "/v1/nodes/gpu-new")
    check_eq(st, 200, n)
    check_eq((n["address"], n["topology"], n["gpu_model"], n["gpu_count"], n["state"], n["labels"],
              n["agent_version"]), ("10.1.0.1", "block-9/rack-9", "H100", 8, "IDLE", {"probe": "yes"}, "probe-1"))
    check_eq([g["healthy"] for g in n["gpus"]], [True, True, True, False] + [True] * 4)
    check_eq(n["gpus"][3]["health_reason"], "xid 79")
    check(n["last_heartbeat"] is not None, n)
    # a second registration updates in place: same id, GPUs beyond the new count go
    c.sql("UPDATE nodes SET up = false WHERE id = $1", nid)
    r = subprocess.run([probe, c.db_url, "gpu-new", "4"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    check_eq((r.returncode, int(r.stdout or 0)), (0, nid), r.stderr)
    st, _, n = c.api("GET", "/v1/nodes/gpu-new")
    check_eq((n["gpu_count"], len(n["gpus"]), n["state"]), (4, 4, "IDLE"))
    check(all(g["healthy"] for g in n["gpus"]), n)
    check_eq(c.sql_value("SELECT count(*) FROM gpus WHERE node_id = $1", nid), "4")
    check_eq(len(events(c, "node.registered")), 2)


if __name__ == "__main__":
    harness.main(api=True)
