#!/usr/bin/python3
"""POST /v1/jobs/batch with 10,000 jobs per request, N times on one
keep-alive connection; prints jobs/s (request build excluded)."""
import http.client
import json
import os
import sys
import time

port, token, rounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 5
job = {"tenant": "root", "name": "bench", "nodes": 2, "gpus_per_node": 8,
       "command": ["torchrun", "--nproc-per-node=8", "train.py"], "time_limit": "1:00:00",
       "labels": {"bench": "batch"}}
body = json.dumps({"jobs": [job] * 10000}).encode()
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
hdr = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
best, total_t = 0.0, 0.0
for i in range(rounds):
    t0 = time.perf_counter()
    conn.request("POST", "/v1/jobs/batch", body=body, headers=hdr)
    r = conn.getresponse()
    data = r.read()
    dt = time.perf_counter() - t0
    if r.status != 201:
        sys.exit("batch failed: %d %s" % (r.status, data[:300]))
    n = len(json.loads(data)["items"])
    assert n == 10000, n
    total_t += dt
    best = max(best, 10000 / dt)
print("batch: %d x 10000 jobs, mean %.0f jobs/s, best %.0f jobs/s, body %.1f MB"
      % (rounds, rounds * 10000 / total_t, best, len(body) / 1e6))
