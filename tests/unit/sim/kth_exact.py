#!/usr/bin/env python3
"""muster-sim --policy easy must reproduce the published EASY schedule of
KTH-SP2 job for job (../shared/traces/kth-sp2/README.md). Exit 77 (skipped)
only when the shared directory is absent."""
import os, subprocess, sys, tempfile

sim, shared = sys.argv[1], sys.argv[2]
trace = os.path.join(shared, 'traces', 'kth-sp2', 'input.swf.gz')
published = os.path.join(shared, 'traces', 'kth-sp2', 'easy-published.swf.gz')
tool = os.path.join(shared, 'tools', 'swf_metrics.py')
if not os.path.isdir(shared):
    print(f'SKIP: {shared} is absent (set -DMUSTER_SHARED_DIR)')
    sys.exit(77)
for p in (trace, published, tool):
    if not os.path.exists(p):
        print(f'FAIL: {p} is missing from the shared directory')
        sys.exit(1)
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, 'easy.swf')
    subprocess.run([sim, '--swf', trace, '--policy', 'easy', '--schedule-out', out], check=True)
    r = subprocess.run([sys.executable, tool, out, published], check=True, capture_output=True, text=True)
    last = r.stdout.strip().splitlines()[-1]
    print(last)
    want = 'common jobs 28481, only-A 0, only-B 0, identical wait 28481, max |dwait| 0.0'
    if last != want:
        print(f'FAIL: expected "{want}"')
        sys.exit(1)
print('ok: every wait identical')
