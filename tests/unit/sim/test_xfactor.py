#!/usr/bin/env python3
"""settings.weight_xfactor orders by expansion factor: on one GPU busy until
t=1000, a long job (1000 s) submitted at t=1 and a short one (10 s) at t=2
wait for it. By age the long job goes first; by expansion factor
((wait + runtime) / max(runtime, 10 s): about 2 against 100 at t=1000) the
short one does, and the long one follows it; with settings.starve_after 500
both have waited past it at t=1000, so the older (long) one goes first again.
All under the invariant checker."""
import sys

from simcase import replay, start_runs

SIM = sys.argv[1]
starts = {}
rows = ['submit,duration,gpus,tenant,user,time_limit',
        '0,1000,1,a,u0,1000', '1,1000,1,a,u1,1000', '2,10,1,a,u2,10']
for name, xf, starve in (('age', 0, 0), ('xfactor', 1, 0), ('starved', 1, 500)):
    cl = {'nodes': [{'name': 'n', 'count': 1, 'gpus': 1}],
          'settings': {'weight_fairshare': 0, 'weight_age': 1000, 'weight_size': 0, 'weight_xfactor': xf,
                       'starve_after': starve}}
    starts[name] = start_runs(replay(SIM, rows, cl))
print(starts)
ok = (starts['age'] == [(0, 1000), (1000, 1000), (2000, 10)] and
      starts['xfactor'] == [(0, 1000), (1000, 10), (1010, 1000)] and
      starts['starved'] == starts['age'])
print('ok' if ok else 'FAIL: by age (and starved) the long job starts at 1000; by expansion factor the short one')
sys.exit(0 if ok else 1)
