#!/usr/bin/env python3
"""Long randomized simulations with the invariant checker after every event
(muster-sim --check): no GPU double-booked, no quota exceeded, every gang
whole, no start before a dependency ends, no start on an unhealthy GPU or a
node that is not up, and (easy) no job starting after its reservation.
Mixed gangs, elastic jobs, topology constraints, GPU models, classes with
preemption, tenants with guarantees and limits, dependencies with failures."""
import json, os, random, subprocess, sys, tempfile

SIM = sys.argv[1]
SEEDS = [int(x) for x in sys.argv[2:] if not x.startswith('jobs=')] or [1, 2, 3]
JOBS = ([int(x[5:]) for x in sys.argv[2:] if x.startswith('jobs=')] or [400])[0]


def cluster(rng):
    nodes = []
    for b in range(2):
        for r in range(3):
            for n in range(4):
                node = {'name': f'b{b}r{r}n{n}', 'topology': f'b{b}/r{r}', 'gpus': 8,
                        'model': 'h100' if b == 0 else 'a100'}
                if rng.random() < 0.1:
                    node['unhealthy'] = rng.sample(range(8), rng.randint(1, 3))
                if rng.random() < 0.05:
                    node['state'] = rng.choice(['drain', 'down'])
                nodes.append(node)
    return {'levels': ['block', 'rack'], 'nodes': nodes,
            'tenants': [{'name': 'org', 'max_gpus': 120},
                        {'name': 'a', 'parent': 'org', 'shares': 3, 'guaranteed_gpus': 32},
                        {'name': 'b', 'parent': 'org', 'shares': 1, 'max_running_jobs': 6},
                        {'name': 'c', 'shares': 2, 'guaranteed_gpus': 16, 'max_gpus': 64}],
            'classes': [{'name': 'low', 'priority': 10, 'preemptible': True},
                        {'name': 'normal', 'priority': 100, 'preemptible': True},
                        {'name': 'high', 'priority': 1000, 'preemptible': False}],
            'settings': {'reservation_depth': rng.choice([0, 1, 4]), 'half_life': 3600}}


def trace(rng, n):
    rows = ['id,submit,duration,nodes,gpus_per_node,min_nodes,tenant,user,time_limit,class,gpu_model,'
            'topology_required,topology_preferred,depends,exit']
    t = 0
    for i in range(1, n + 1):
        t += int(rng.expovariate(1 / 30))
        nodes = rng.choice([1, 1, 1, 2, 4, 8])
        gpn = rng.choice([1, 2, 4, 8]) if nodes == 1 else 8
        minn = rng.randint(1, nodes) if nodes > 1 and rng.random() < 0.3 else ''
        limit = rng.choice([60, 300, 1800, 7200])
        dur = rng.randint(1, limit) if rng.random() < 0.9 else limit + 100
        dep = ''
        if i > 5 and rng.random() < 0.1:
            dep = f"{rng.choice(['afterok', 'afterany', 'afternotok'])}:{rng.randint(max(1, i - 20), i - 1)}"
        rows.append(','.join(str(x) for x in [
            i, t, dur, nodes, gpn, minn, rng.choice(['a', 'b', 'c', 'root']), f'u{rng.randint(1, 6)}', limit,
            rng.choice(['low', 'normal', 'normal', 'high']),
            rng.choice(['', '', 'h100', 'a100']),
            rng.choice(['', '', '', 'rack', 'block']) if nodes > 1 else '',
            rng.choice(['', 'rack']), dep, 1 if rng.random() < 0.1 else 0]))
    return '\n'.join(rows) + '\n'


failures = 0
with tempfile.TemporaryDirectory() as d:
    for seed in SEEDS:
        rng = random.Random(seed)
        open(os.path.join(d, 'c.json'), 'w').write(json.dumps(cluster(rng)))
        open(os.path.join(d, 't.csv'), 'w').write(trace(rng, JOBS))
        for pol in ('fcfs', 'easy', 'conservative', 'muster'):
            for predict in ([], ['--predict']):
                m = os.path.join(d, 'm.json')
                r = subprocess.run([SIM, '--csv', os.path.join(d, 't.csv'), '--cluster', os.path.join(d, 'c.json'),
                                    '--policy', pol, '--check', '--quiet', '--metrics-out', m] + predict,
                                   capture_output=True, text=True)
                tag = f'seed {seed} {pol} {" ".join(predict)}'
                if r.returncode != 0:
                    failures += 1
                    print(f'FAIL {tag}: {r.stderr.strip()}')
                    continue
                res = json.load(open(m))
                print(f'{tag}: completed {res["completed"]}/{res["jobs"]}, failed {res["failed"]}, '
                      f'never started {res["never_started"]}, preemptions {res["preemptions"]}, '
                      f'mean wait {res["wait"]["mean"]:.0f}')
                if res['completed'] + res['failed'] + res['never_started'] != res['jobs']:
                    failures += 1
                    print(f'FAIL {tag}: job accounting')
print('ok' if not failures else f'{failures} failure(s)')
sys.exit(1 if failures else 0)
