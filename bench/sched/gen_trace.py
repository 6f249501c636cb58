#!/usr/bin/env python3
"""Generates a synthetic SWF trace of GPU jobs for muster-sim replay speed:
gen_trace.py JOBS GPUS [SEED] > trace.swf. Poisson arrivals at ~90% offered
load, gang sizes 1..512 GPUs (powers of two), log-uniform run times of
1 minute to 1 day, user estimates 1-4x the run time (capped at 2 days)."""
import math, random, sys

jobs, gpus = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
sizes = [1, 1, 1, 2, 4, 8, 8, 16, 32, 64, 128, 512]
mean_area = 0.0
samples = [(rng.choice(sizes), math.exp(rng.uniform(math.log(60), math.log(86400)))) for _ in range(20000)]
mean_area = sum(s * r for s, r in samples) / len(samples)
rate = 0.9 * gpus / mean_area  # jobs per second for 90% load
out = sys.stdout
out.write(f'; muster synthetic trace: {jobs} jobs\n; MaxProcs: {gpus}\n')
t = 0.0
for i in range(1, jobs + 1):
    t += rng.expovariate(rate)
    size = rng.choice(sizes)
    run = int(math.exp(rng.uniform(math.log(60), math.log(86400))))
    est = min(172800, max(run, int(run * rng.uniform(1, 4))))
    out.write(f'{i} {int(t)} -1 {run} {size} -1 -1 {size} {est} -1 1 {1 + rng.randrange(500)} 1 -1 -1 -1 -1 -1\n')
