#!/usr/bin/python3
"""The program the agent tests run as a gang: it uses only the environment
muster gave it. Every process connects to MASTER_ADDR:MASTER_PORT (rank 0
listens there) and sends its rank; rank 0 counts WORLD_SIZE distinct ranks
and writes $OUT/result-<run id>.json. Each process checks
CUDA_VISIBLE_DEVICES (GPUS_PER_NODE entries, identical for all local ranks),
the Slurm names and the hostfile. With $OUT/hold present, rank 0 then waits
for $OUT/release-<run id> (at most 40 s) before exiting 0."""
import json
import os
import socket
import sys
import time

e = os.environ
rank, world = int(e["RANK"]), int(e["WORLD_SIZE"])
local, lws = int(e["LOCAL_RANK"]), int(e["LOCAL_WORLD_SIZE"])
nnodes, node_rank = int(e["NNODES"]), int(e["NODE_RANK"])
gpn = int(e["GPUS_PER_NODE"])
cuda = e["CUDA_VISIBLE_DEVICES"].split(",")
problems = []
if len(cuda) != gpn or len(set(cuda)) != gpn:
    problems.append("CUDA_VISIBLE_DEVICES=%s for GPUS_PER_NODE=%d" % (e["CUDA_VISIBLE_DEVICES"], gpn))
if world != nnodes * lws or rank != node_rank * lws + local:
    problems.append("rank arithmetic")
if (e["SLURM_PROCID"], e["SLURM_LOCALID"], e["SLURM_NODEID"], e["SLURM_NTASKS"], e["SLURM_NNODES"]) != \
        (str(rank), str(local), str(node_rank), str(world), str(nnodes)):
    problems.append("SLURM_* names")


def expand(text):
    """Slurm's compressed host list ("n[1-2,5]") expanded."""
    import re
    out = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?([^,]*)", text):
        if not m.group(2):
            out.append(m.group(1) + m.group(3))
            continue
        for part in m.group(2).split(","):
            lo, _, hi = part.partition("-")
            out += ["%s%0*d%s" % (m.group(1), len(lo) if lo[0] == "0" else 0, v, m.group(3))
                    for v in range(int(lo), int(hi or lo) + 1)]
    return out


if e["SLURM_JOB_ID"] != e["MUSTER_JOB_ID"] or len(expand(e["SLURM_JOB_NODELIST"])) != nnodes:
    problems.append("SLURM_JOB_ID/NODELIST")
hosts = [l.split() for l in open(e["MUSTER_HOSTFILE"]).read().splitlines()]
if len(hosts) != nnodes or any(h[1] != "slots=%d" % gpn for h in hosts) or hosts[0][0] != e["MASTER_ADDR"]:
    problems.append("hostfile %r" % hosts)
if any(k.startswith("MUSTER_AGENT") for k in e):
    problems.append("the agent's own config leaked")
me = {"rank": rank, "node_rank": node_rank, "cuda": e["CUDA_VISIBLE_DEVICES"], "problems": problems}
addr = (e["MASTER_ADDR"], int(e["MASTER_PORT"]))
out = e["OUT"]
run_id = e["MUSTER_RUN_ID"]

if rank == 0:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(addr)
    srv.listen(world)
    srv.settimeout(30)
    seen = {0: me}
    while len(seen) < world:
        conn, _ = srv.accept()
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        conn.close()
        m = json.loads(data)
        seen[m["rank"]] = m
    res = {"world": world, "ranks": sorted(seen), "procs": [seen[r] for r in sorted(seen)],
           "master": list(addr)}
    tmp = os.path.join(out, "result-%s.tmp" % run_id)
    with open(tmp, "w") as f:
        json.dump(res, f)
    os.rename(tmp, os.path.join(out, "result-%s.json" % run_id))
    if os.path.exists(os.path.join(out, "hold")):
        end = time.time() + 40
        while time.time() < end and not os.path.exists(os.path.join(out, "release-%s" % run_id)):
            time.sleep(0.1)
else:
    end = time.time() + 30
    while True:
        try:
            s = socket.create_connection(addr, timeout=2)
            break
        except OSError:
            if time.time() > end:
                sys.exit(4)
            time.sleep(0.05)
    s.sendall((json.dumps(me) + "\n").encode())
    s.close()
sys.exit(3 if problems else 0)
