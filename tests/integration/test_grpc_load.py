#!/usr/bin/python3
"""Many agents on one muster-api: N AgentService streams (one asyncio
client multiplexing them, python3-grpcio aio), each registering a node with
8 GPUs and sending one heartbeat per second for D seconds. Checks that
every heartbeat reached PostgreSQL (muster-api logs received/flushed at
shutdown: zero lost) and that every node's last_heartbeat and GPU figures
were written; prints muster-api's CPU time and peak RSS.

CTest runs it small (GRPC_LOAD_AGENTS=100, GRPC_LOAD_SECONDS=3). The
benchmark: GRPC_LOAD_AGENTS=1000 GRPC_LOAD_SECONDS=30.
"""
import asyncio
import hashlib
import os
import re
import secrets
import signal
import time

import harness
from harness import check, check_eq
from test_grpc_common import load, md

N = int(os.environ.get("GRPC_LOAD_AGENTS", "100"))
SECS = int(os.environ.get("GRPC_LOAD_SECONDS", "3"))


def proc_stats(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(parts[11]) + int(parts[12])) / ticks
    rss = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                rss = int(line.split()[1]) // 1024
    return cpu, rss


async def run_agents(port, tokens, pb):
    import grpc
    A = pb["agent"]
    sent = [0] * len(tokens)
    errors = []

    async def one(i, tok, ch):
        stub = pb["agent_grpc"].AgentServiceStub(ch)
        call = stub.Connect(metadata=md(tok))
        name = "load-%04d" % i
        await call.write(A.AgentMessage(register=A.Register(
            node_name=name, address="10.1.%d.%d" % (i // 250, i % 250 + 1), topology="block-%d/rack-%d" % (i // 64, i // 8),
            gpus=[A.GpuInfo(index=g, uuid="GPU-%s-%d" % (name, g), model="H100", memory_mb=81559)
                  for g in range(8)])))
        m = await call.read()
        if m.WhichOneof("msg") != "ack":
            errors.append((i, m))
            return

        async def drain():
            while True:
                m = await call.read()
                if m is grpc.aio.EOF:
                    return

        reader = asyncio.ensure_future(drain())
        await asyncio.sleep((i % 100) / 100.0)  # spread the heartbeats over the second
        for k in range(SECS):
            await call.write(A.AgentMessage(heartbeat=A.Heartbeat(seq=k + 1, gpus=[
                A.GpuHealth(index=g, memory_used_mb=1000 + k, utilization=g * 10, temperature=40 + k)
                for g in range(8)])))
            sent[i] += 1
            await asyncio.sleep(1.0)
        await call.done_writing()
        try:
            await asyncio.wait_for(reader, 10)
        except Exception as e:
            errors.append((i, e))

    # a few HTTP/2 connections, many streams each (as a load driver would)
    chans = [grpc.aio.insecure_channel("127.0.0.1:%d" % port) for _ in range(8)]
    t0 = time.monotonic()
    await asyncio.gather(*(one(i, tok, chans[i % len(chans)]) for i, tok in enumerate(tokens)))
    dt = time.monotonic() - t0
    for ch in chans:
        await ch.close()
    return sum(sent), dt, errors


def test_many_agents(c):
    pb = load()
    values, tokens = [], []
    for i in range(N):
        secret = "mst_" + secrets.token_urlsafe(32)[:43]
        tokens.append(secret)
        values.append("('load-%d', '%s', '%s', 'agent', 'load-%04d')" % (
            i, hashlib.sha256(secret.encode()).hexdigest(), secret[:12], i))
    c.sql("INSERT INTO api_tokens (name, secret_sha256, prefix, role, node_name) VALUES " + ",".join(values))
    api = c.api_proc
    cpu0, _ = proc_stats(api.pid)
    total, dt, errors = asyncio.run(run_agents(c.grpc_port, tokens, pb))
    cpu1, rss = proc_stats(api.pid)
    check(not errors, errors[:5])
    check_eq(total, N * SECS)
    check_eq(c.sql_value("SELECT count(*) FROM nodes WHERE name LIKE 'load-%' AND last_heartbeat IS NOT NULL"),
             str(N))
    check_eq(c.sql_value("SELECT count(*) FROM gpus g JOIN nodes n ON n.id = g.node_id"
                         " WHERE n.name LIKE 'load-%%' AND g.memory_used_mb = %d" % (1000 + SECS - 1)), str(N * 8))
    c.kill_api(signal.SIGTERM)
    log = c.log_text("api")
    m = re.findall(r"grpc heartbeats received=(\d+) flushed=(\d+)", log)
    check(m, "no heartbeat counters in the log")
    received, flushed = int(m[-1][0]), int(m[-1][1])
    check_eq((received, flushed), (total, total), "lost heartbeats")
    print("grpc load: %d agents x %d heartbeats (8 GPUs each) in %.1fs: received=%d flushed=%d lost=0;"
          " muster-api CPU %.2fs (%.0f%% of one core), peak RSS %d MiB"
          % (N, SECS, dt, received, flushed, cpu1 - cpu0, 100.0 * (cpu1 - cpu0) / dt, rss), flush=True)


if __name__ == "__main__":
    harness.main(api=True)
