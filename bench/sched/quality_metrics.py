#!/usr/bin/env python3
"""Schedule-quality figures of muster-sim schedules (SWF, field 3 = wait).

quality_metrics.py LABEL EASY.swf NAME=OTHER.swf...: one line per schedule with mean
wait, p99 wait, max wait, mean / max bounded slowdown (tau = 10 s), mean bsld
of the worst-treated 1% of jobs, utilisation, and the max-wait ratio of OTHER
to EASY's (the starvation bound of issue 14 item 3: at most 2).
"""
import gzip
import sys

TAU = 10


def read(path):
    op = gzip.open if path.endswith(".gz") else open
    procs = 0
    jobs = []
    with op(path, "rt", errors="replace") as f:
        for line in f:
            if line.startswith(";"):
                if "MaxProcs:" in line:
                    procs = int(line.split(":")[1])
                continue
            v = line.split()
            if len(v) < 8:
                continue
            submit, wait, run = int(v[1]), float(v[2]), float(v[3])
            n = int(v[7]) if int(v[7]) > 0 else int(v[4])
            jobs.append((submit, wait, run, n))
    return procs, jobs


def figures(procs, jobs):
    waits = sorted(j[1] for j in jobs)
    bsld = sorted(max(1.0, (w + r) / max(r, TAU)) for _, w, r, _ in jobs)
    n = len(jobs)
    k = max(1, n // 100)
    first = min(j[0] for j in jobs)
    last = max(j[0] + j[1] + j[2] for j in jobs)
    work = sum(j[2] * j[3] for j in jobs)
    return {
        "jobs": n,
        "mean_wait": sum(waits) / n,
        "p99_wait": waits[min(n - 1, int(0.99 * n))],
        "max_wait": waits[-1],
        "mean_bsld": sum(bsld) / n,
        "max_bsld": bsld[-1],
        "worst1_bsld": sum(bsld[-k:]) / k,
        "util": work / (procs * (last - first)) if procs and last > first else 0.0,
    }


def main():
    label = sys.argv[1]
    procs, easy = read(sys.argv[2])
    e = figures(procs, easy)
    rows = [("easy", e)]
    for arg in sys.argv[3:]:
        name, path = arg.split("=", 1)
        rows.append((name, figures(procs, read(path)[1])))
    for name, f in rows:
        ratio = f["max_wait"] / e["max_wait"] if e["max_wait"] > 0 else 1.0
        print(f"{label:<14} {name:<13} {f['jobs']:>7} {f['mean_wait']:>10.1f} {f['p99_wait']:>10.0f} "
              f"{f['max_wait']:>10.0f} {f['mean_bsld']:>9.2f} {f['max_bsld']:>10.1f} "
              f"{f['worst1_bsld']:>11.1f} {f['util']:>6.3f} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
