#!/usr/bin/env python3
"""The flat fast path and the topology path follow the same placement rules:
on random clusters without topology levels muster-sim takes the fast paths
(placement from the free-count buckets, the sparse reservation sweep); the
same cluster declared with levels ["block", "rack"] and every node in one
rack takes the general topology paths (sched__place, sched__earliest), where
every unit comparison ties and only the node-level rules decide. Schedules
and placements (nodes and GPU indexes of every run) must be byte-identical,
start-now and reservations alike, for every policy, with and without
runtime prediction.
usage: test_flat_vs_topology.py MUSTER_SIM [SEED...] [jobs=N]"""
import json, os, random, subprocess, sys, tempfile

SIM = sys.argv[1]
SEEDS = [int(x) for x in sys.argv[2:] if not x.startswith('jobs=')] or [1, 2, 3, 4]
JOBS = ([int(x[5:]) for x in sys.argv[2:] if x.startswith('jobs=')] or [300])[0]


def cluster(rng, levels):
    nodes = []
    for n in range(rng.randint(6, 40)):
        g = rng.choice([1, 2, 4, 8, 8])
        node = {'name': f'n{n}', 'gpus': g, 'model': rng.choice(['h100', 'h100', 'a100'])}
        if levels:
            node['topology'] = 'b0/r0'
        if g > 1 and rng.random() < 0.1:
            node['unhealthy'] = rng.sample(range(g), 1)
        if rng.random() < 0.05:
            node['state'] = 'drain'
        nodes.append(node)
    c = {'nodes': nodes, 'tenants': [{'name': 'a', 'shares': 2}, {'name': 'b', 'shares': 1, 'max_gpus': 40}],
         'settings': {'reservation_depth': rng.choice([1, 1, 3])}}
    if levels:
        c['levels'] = ['block', 'rack']
    return c


def trace(rng, n, c):
    rows = ['id,submit,duration,nodes,gpus_per_node,min_nodes,tenant,user,time_limit,gpu_model']
    t = 0
    for i in range(1, n + 1):
        t += int(rng.expovariate(1 / 20))
        gpn = rng.choice([1, 1, 2, 4, 8])
        model = rng.choice(['', '', 'h100', 'a100'])
        fit = sum(1 for x in c['nodes'] if x['gpus'] - len(x.get('unhealthy', [])) >= gpn and
                  x.get('state', 'up') == 'up' and model in ('', x['model']))
        if fit == 0:
            gpn, model = 1, ''
            fit = sum(1 for x in c['nodes'] if x.get('state', 'up') == 'up')
        nodes = min(fit, rng.choice([1, 1, 1, 2, 3, 4, 8, 12]))
        minn = rng.randint(1, nodes) if nodes > 1 and rng.random() < 0.2 else ''
        limit = rng.choice([60, 300, 1800, 7200])
        dur = rng.randint(1, limit)
        rows.append(','.join(str(x) for x in [i, t, dur, nodes, gpn, minn, rng.choice(['a', 'b']),
                                              f'u{rng.randint(1, 5)}', limit, model]))
    return '\n'.join(rows) + '\n'


failures = 0
runs = 0
with tempfile.TemporaryDirectory() as d:
    for seed in SEEDS:
        rng = random.Random(seed)
        st = rng.getstate()
        c = cluster(rng, False)
        open(os.path.join(d, 'flat.json'), 'w').write(json.dumps(c))
        rng.setstate(st)
        open(os.path.join(d, 'topo.json'), 'w').write(json.dumps(cluster(rng, True)))
        open(os.path.join(d, 't.csv'), 'w').write(trace(rng, JOBS, c))
        for pol in ('easy', 'conservative', 'muster'):
            for predict in ([], ['--predict']):
                out = {}
                for kind in ('flat', 'topo'):
                    s, p = os.path.join(d, kind + '.swf'), os.path.join(d, kind + '.jsonl')
                    r = subprocess.run([SIM, '--csv', os.path.join(d, 't.csv'), '--cluster',
                                        os.path.join(d, kind + '.json'), '--policy', pol, '--quiet', '--lenient',
                                        '--schedule-out', s, '--placements-out', p] + predict,
                                       capture_output=True, text=True)
                    if r.returncode != 0:
                        print(f'FAIL seed {seed} {pol} {kind}: {r.stderr.strip()}')
                        failures += 1
                    out[kind] = (open(s).read(), open(p).read()) if r.returncode == 0 else None
                runs += 1
                tag = f'seed {seed} {pol} {" ".join(predict)}'
                if out['flat'] and out['flat'] != out['topo']:
                    failures += 1
                    a, b = out['flat'][1].splitlines(), out['topo'][1].splitlines()
                    diff = next((f'{x}\n   vs {y}' for x, y in zip(a, b) if x != y), 'lengths differ')
                    print(f'FAIL {tag}: flat and topology paths differ; first: {diff}')
print(f'{runs} comparisons: ' + ('ok' if not failures else f'{failures} failure(s)'))
sys.exit(1 if failures else 0)
