#!/usr/bin/env python3
"""Add user runtime estimates and users to a synthetic SWF trace that has none.

swf_estimates.py IN.swf OUT.swf [SEED]. For traces of the Lublin-Feitelson
model (e.g. lublin_256.swf, public in DIR-LAB/deep-batch-scheduler/data), which
carry submit, runtime and size only. Estimates overestimate as real users do
(Tsafrir, Etsion, Feitelson 2005): the runtime times a factor drawn
log-uniformly from 1..20, rounded up to a round limit (15 min, 30 min, 1, 2, 4,
8, 12, 18, 24, 36, 48 h); 10% of jobs request the queue maximum. A job's user
is the (size, log2 runtime) class it falls in, 70% of the time, so that a
user's recent runtimes say something of the next (a random user otherwise).
Writes MaxProcs from MaxNodes.
"""
import math
import random
import sys

ROUND = [900, 1800, 3600, 7200, 14400, 28800, 43200, 64800, 86400, 129600, 172800]


def main():
    src, dst = sys.argv[1], sys.argv[2]
    rnd = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    out = []
    maxp = 0
    for line in open(src):
        if line.startswith(";"):
            if "MaxNodes:" in line:
                maxp = int(line.split(":")[1])
            out.append(line.rstrip("\n"))
            continue
        v = line.split()
        if len(v) < 18:
            continue
        run, n = max(1, int(v[3])), int(v[4])
        if rnd.random() < 0.1:
            est = ROUND[-1]
        else:
            want = run * math.exp(rnd.uniform(0, math.log(20)))
            est = next((r for r in ROUND if r >= want), ROUND[-1])
        est = max(est, run)
        if rnd.random() < 0.7:
            user = 1 + (hash((n, int(math.log2(run)))) % 97)
        else:
            user = 1 + rnd.randrange(97)
        v[3], v[7], v[8], v[10], v[11] = str(run), str(n), str(est), "1", str(user)
        out.append(" ".join(v))
    out.insert(0, f"; MaxProcs: {maxp}")
    open(dst, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
