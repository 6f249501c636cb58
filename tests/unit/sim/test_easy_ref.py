#!/usr/bin/env python3
"""muster-sim --policy easy gives the same schedule, start time by start time,
as the plain-Python EASY reference bench/sched/easy_ref.py (first fit on node
counts) on small generated wide-gang traces (bench/sched/gen_wide_trace.py: a
quarter of the jobs 1,024 nodes or, on small pools, a third of the pool up to
the whole pool) on 1-GPU and 8-GPU nodes, and on KTH-SP2 when the shared
directory has it. With --floor, bench/sched/easy_floor (the same reference in
C, which run_wide.sh times as a count-only floor) must write the
reference's output byte for byte on the same traces. The long version with
timings is bench/sched/run_wide.sh.
usage: test_easy_ref.py MUSTER_SIM REPO_ROOT [SHARED_DIR] [--floor EASY_FLOOR]"""
import os, subprocess, sys, tempfile

args = sys.argv[1:]
FLOOR = None
if '--floor' in args:
    k = args.index('--floor')
    FLOOR = args[k + 1]
    del args[k:k + 2]
SIM, ROOT = args[0], args[1]
SHARED = args[2] if len(args) > 2 else None
H = os.path.join(ROOT, 'bench', 'sched')
cases = [(1500, 3000, 1, 1), (1500, 600, 8, 2), (800, 20000, 1, 3)]
failures = 0
with tempfile.TemporaryDirectory() as d:
    runs = []
    for jobs, nodes, gpn, seed in cases:
        t = os.path.join(d, f'w{nodes}x{gpn}.swf')
        with open(t, 'w') as f:
            subprocess.run([sys.executable, os.path.join(H, 'gen_wide_trace.py'), str(jobs), str(nodes), str(gpn),
                            str(seed)], check=True, stdout=f)
        size = ['--gpus', str(nodes)] if gpn == 1 else ['--nodes', str(nodes), '--gpus-per-node', str(gpn)]
        runs.append((f'{jobs} jobs on {nodes} x {gpn}', t, nodes, gpn, size))
    kth = os.path.join(SHARED, 'traces', 'kth-sp2', 'input.swf.gz') if SHARED else ''
    if kth and os.path.exists(kth):
        runs.append(('KTH-SP2', kth, 100, 1, []))
    for name, t, nodes, gpn, size in runs:
        ref, sched = os.path.join(d, 'ref.txt'), os.path.join(d, 'sim.swf')
        subprocess.run([sys.executable, os.path.join(H, 'easy_ref.py'), t, str(nodes), str(gpn), '--out', ref],
                       check=True, capture_output=True)
        subprocess.run([SIM, '--swf', t, '--policy', 'easy', '--quiet', '--schedule-out', sched] + size,
                       check=True, capture_output=True)
        r = subprocess.run([sys.executable, os.path.join(H, 'same_starts.py'), sched, ref], capture_output=True,
                           text=True)
        print(f'{name}: {r.stdout.strip()}')
        if r.returncode:
            failures += 1
        if FLOOR:
            fl = os.path.join(d, 'floor.txt')
            subprocess.run([FLOOR, t, str(nodes), str(gpn), '--out', fl], check=True, capture_output=True)
            with open(fl, 'rb') as a, open(ref, 'rb') as b:
                same = a.read() == b.read()
            print(f'{name}: easy_floor {"writes the reference output" if same else "DIFFERS from the reference"}')
            if not same:
                failures += 1
    if FLOOR:  # bad input: a clear message and a non-zero exit, never a crash
        bad = os.path.join(d, 'bad.swf')
        for text, args in [('1 0 0 10 4 -1 -1 4 20\nfoo bar\n', ['10', '1']),
                           ('1 0 0 10 4 -1 -1 1e300 20\n', ['10', '1']),
                           ('1 0 0 10 400 -1 -1 400 20\n', ['10', '1']),
                           ('1 0 0 10 4 -1 -1 4 20\n', ['10', '0']),
                           ('1 0 0 10 4 -1 -1 4 20\n', ['ten', '1'])]:
            with open(bad, 'w') as f:
                f.write(text)
            r = subprocess.run([FLOOR, bad] + args, capture_output=True, text=True)
            ok = r.returncode in (1, 2) and r.stderr.strip() != ''  # a signal is a negative code
            print(f'easy_floor on {text.splitlines()[-1]!r} {args}: exit {r.returncode}, {r.stderr.strip()!r}')
            if not ok:
                failures += 1
print('ok' if not failures else f'{failures} failure(s)')
sys.exit(1 if failures else 0)
