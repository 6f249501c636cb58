#!/usr/bin/env python3
"""Which job backfills first when two fit the hole before a reservation but not
together. Five GPUs: a 4-GPU run until t=1000 and a 1-GPU run until t=2000; a
5-GPU job of class high (submitted t=1) holds the reservation at t=2000. B1 (3
GPUs, 50 s, submitted t=2) and B2 (3 GPUs, 10 s, submitted t=999) both end
before it, only one fits at t=1000. `--policy muster` backfills in its own
(multifactor) order: B1 has waited 998 s, expansion factor 21 against B2's 1.1,
so B1 starts at 1000 and B2 at 1050. `--policy easy --predict` backfills
shortest-predicted first (EASY-SJBF): B2 at 1000, B1 at 1010. Under the
invariant checker."""
import sys

from simcase import replay, starts_by_duration

SIM = sys.argv[1]
starts = {}
rows = ['submit,duration,gpus,tenant,user,time_limit,class',
        '0,1000,4,a,u0,1000,normal', '0,2000,1,a,u1,2000,normal', '1,100,5,a,u2,100,high',
        '2,50,3,a,u3,50,normal', '999,10,3,a,u4,10,normal']
cl = {'nodes': [{'name': 'n', 'count': 5, 'gpus': 1}], 'settings': {'preemption': False}}
for name, args in (('muster', ['--policy', 'muster']), ('easy_predict', ['--policy', 'easy', '--predict'])):
    starts[name] = starts_by_duration(replay(SIM, rows, cl, args))
print(starts)
ok = (starts['muster'][50] == 1000 and starts['muster'][10] == 1050 and
      starts['easy_predict'][10] == 1000 and starts['easy_predict'][50] == 1010)
print('ok' if ok else 'FAIL: muster backfills the older job (B1) first; easy --predict the shortest (B2)')
sys.exit(0 if ok else 1)
