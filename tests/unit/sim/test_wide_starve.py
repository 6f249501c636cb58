#!/usr/bin/env python3
"""A wide job that has waited a tenth of its time limit orders first (with
starve_after on). Four one-GPU nodes, one GPU busy until t=1000; a whole-pool
job W (4 GPUs, 100 s, limit LIMIT) submitted at t=1 and a whole-pool short job
S (4 GPUs, 10 s, limit 10) at t=2 wait for it. By expansion factor S goes
first at t=1000. With W's limit 1000 it has waited past a tenth of it, so it
starts first (S too, but W is older); with its limit 100000 it has not, and
with starve_after 0 the rule is off: S first in both."""
import sys

from simcase import replay, start_runs

SIM = sys.argv[1]
starts = {}
for name, limit, starve in (('wide', 1000, 172800), ('young', 100000, 172800), ('off', 1000, 0)):
    rows = ['submit,duration,gpus,tenant,user,time_limit',
            '0,1000,1,a,u0,1000', '1,100,4,a,u1,%d' % limit, '2,10,4,a,u2,10']
    cl = {'nodes': [{'name': 'n', 'count': 4, 'gpus': 1}],
          'settings': {'weight_fairshare': 0, 'weight_age': 1000, 'weight_size': 0, 'weight_xfactor': 100,
                       'predict_runtimes': False, 'starve_after': starve}}
    starts[name] = start_runs(replay(SIM, rows, cl))
print(starts)
ok = (starts['wide'] == [(0, 1000), (1000, 100), (1100, 10)] and
      starts['young'] == [(0, 1000), (1000, 10), (1010, 100)] and
      starts['off'] == starts['young'])
print('ok' if ok else 'FAIL: the wide job past a tenth of its limit starts first; else the short one')
sys.exit(0 if ok else 1)
