#!/usr/bin/env python3
"""settings.starve_after protects a starved job's reservation from predictions.

Two GPUs. User p's last two runs took 10 s, so p's next job X (limit 5000 s,
really 3000 s) is predicted at 10 s. R holds one GPU until t=520; W (both GPUs)
waits from t=21 with a reservation at 520; X arrives at t=22. Planned on its
prediction X fits before 520 and backfills, then outlives it and holds W until
3022. With starve_after 1 (W has waited past it), the jobs behind W's
reservation backfill by their limits: X waits, W starts at 520, X at 620."""
import sys

from simcase import replay, starts_by_duration

SIM = sys.argv[1]
starts = {}
rows = ['submit,duration,gpus,tenant,user,time_limit',
        '0,10,1,a,p,5000', '0,10,1,a,p,5000',  # p's history: 10 s, 10 s
        '20,500,1,a,r,500',                    # R
        '21,100,2,a,w,100',                    # W
        '22,3000,1,a,p,5000']                  # X
for name, starve in (('off', 0), ('guard', 1)):
    cl = {'nodes': [{'name': 'n', 'count': 2, 'gpus': 1}],
          'settings': {'weight_fairshare': 0, 'weight_age': 1000, 'weight_size': 0, 'weight_xfactor': 0,
                       'predict_runtimes': True, 'starve_after': starve}}
    starts[name] = starts_by_duration(replay(SIM, rows, cl))
print(starts)
ok = (starts['off'][3000] == 22 and starts['off'][100] == 3022 and
      starts['guard'][100] == 520 and starts['guard'][3000] == 620)
print('ok' if ok else 'FAIL: without the bound X backfills at 22 and W waits to 3022; with it W starts at 520')
sys.exit(0 if ok else 1)
