#!/usr/bin/env python3
"""Generates a synthetic SWF trace with wide gangs for muster-sim replay speed:
gen_wide_trace.py JOBS NODES GPUS_PER_NODE [SEED] > trace.swf.
Every job takes whole nodes (processors = nodes x GPUS_PER_NODE), so a count
of free nodes describes the cluster exactly and bench/sched/easy_ref.py can
replay it. A quarter of the jobs ask for 1,024 nodes up to the whole pool
(log-uniform), the rest 1 to 512 nodes (powers of two, small ones most
often). Poisson arrivals at ~90% offered load, log-uniform run times of 1
minute to 1 day (wide jobs up to 6 hours), user estimates 1-4x the run time
(capped at 2 days). The `; MaxProcs:` header is NODES x GPUS_PER_NODE."""
import math, random, sys

jobs, nodes, gpn = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
small = [1, 1, 1, 1, 2, 2, 4, 8, 16, 32, 64, 128, 512]
wide_lo = min(1024, nodes)


def job():
    if rng.random() < 0.25:
        n = int(math.exp(rng.uniform(math.log(wide_lo), math.log(nodes))))
        run = int(math.exp(rng.uniform(math.log(60), math.log(6 * 3600))))
    else:
        n = min(nodes, rng.choice(small))
        run = int(math.exp(rng.uniform(math.log(60), math.log(86400))))
    return max(1, min(n, nodes)), run


samples = [job() for _ in range(20000)]
mean_area = sum(n * r for n, r in samples) / len(samples)
rate = 0.9 * nodes / mean_area  # jobs per second for 90% load
out = sys.stdout
out.write(f'; muster synthetic wide-gang trace: {jobs} jobs on {nodes} x {gpn} GPUs\n'
          f'; MaxProcs: {nodes * gpn}\n')
t = 0.0
for i in range(1, jobs + 1):
    t += rng.expovariate(rate)
    n, run = job()
    est = min(172800, max(run, int(run * rng.uniform(1, 4))))
    p = n * gpn
    out.write(f'{i} {int(t)} -1 {run} {p} -1 -1 {p} {est} -1 1 {1 + rng.randrange(500)} 1 -1 -1 -1 -1 -1\n')
