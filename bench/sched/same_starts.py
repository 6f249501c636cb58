#!/usr/bin/env python3
"""Compares muster-sim's schedule (SWF, field 3 = wait) with easy_ref.py's
start times job by job: same_starts.py SCHEDULE.swf STARTS.txt. Exit 1 and
the first differences when any start differs."""
import sys

sim = {}
for line in open(sys.argv[1]):
    x = line.split()
    if not x or x[0].startswith(';'):
        continue
    sim.setdefault(int(float(x[0])), []).append(round(float(x[1])) + round(float(x[2])))
ref = [tuple(int(v) for v in line.split()) for line in open(sys.argv[2])]
bad = [(j, s, sim.get(j)) for j, s in ref if sim.get(j) != [s]]
print(f'{len(ref)} jobs compared, {len(bad)} with a different start')
for j, s, m in bad[:10]:
    print(f'  job {j}: easy_ref {s}, muster-sim {m}')
sys.exit(1 if bad or len(sim) != len(ref) else 0)
