#!/usr/bin/env python3
"""Fair share converges to the shares over a long simulation: tenants a and b
(shares 3:1) both keep a deep backlog of identical jobs; while both wait, the
muster policy gives a about 75% of the GPU time. FCFS over the same trace
gives about 50%, so the measure can tell them apart."""
import json, os, subprocess, sys, tempfile

SIM = sys.argv[1]
N = 800  # jobs per tenant
with tempfile.TemporaryDirectory() as d:
    cl = {'nodes': [{'name': 'n', 'count': 1, 'gpus': 8}],
          'tenants': [{'name': 'a', 'shares': 3}, {'name': 'b', 'shares': 1}],
          'settings': {'half_life': 0, 'weight_fairshare': 10000, 'weight_age': 0, 'weight_size': 0}}
    open(os.path.join(d, 'c.json'), 'w').write(json.dumps(cl))
    rows = ['submit,duration,gpus,tenant,user,time_limit']
    for i in range(N):
        rows.append(f'0,100,1,a,ua,100')
        rows.append(f'0,100,1,b,ub,100')
    open(os.path.join(d, 't.csv'), 'w').write('\n'.join(rows) + '\n')
    shares = {}
    for pol in ('muster', 'fcfs'):
        pl = os.path.join(d, pol + '.jsonl')
        subprocess.run([SIM, '--csv', os.path.join(d, 't.csv'), '--cluster', os.path.join(d, 'c.json'),
                        '--policy', pol, '--check', '--placements-out', pl], check=True)
        window = 100 * N * 2 // 8 // 2  # the first half of the makespan: both tenants still wait
        use = {'a': 0, 'b': 0}
        for line in open(pl):
            r = json.loads(line)
            s, e = r['start'], min(r['end'], window)
            if s < window:
                use[r['tenant']] += (e - s) * sum(len(n['gpus']) for n in r['nodes'])
        shares[pol] = use['a'] / (use['a'] + use['b'])
    print('share of a while both wait:', shares)
    ok = abs(shares['muster'] - 0.75) < 0.03 and abs(shares['fcfs'] - 0.5) < 0.03
    print('ok' if ok else 'FAIL: muster should give a 0.75 (+-0.03), fcfs 0.5')
    sys.exit(0 if ok else 1)
