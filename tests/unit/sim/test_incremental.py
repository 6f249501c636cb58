#!/usr/bin/env python3
"""The policy core's incremental view (struct sched_delta, what muster-sim
passes by default) and allocations as ranges of nodes (settings.ranged_allocs,
also muster-sim's default) must not change a single decision: every replay
here runs four times, with the view and ranges, with --full-rebuild (the core
rebuilds everything from the snapshot each pass, as muster-scheduler calls
it), with --node-allocs (one allocation entry per node, as muster-scheduler
gets them) and with both, and the schedules and placements (nodes and GPU
indexes of every run, preemptions included) must be byte-identical. Clusters with and without topology levels (the flat
ones take the fast placement paths), GPU models, unhealthy GPUs, drained and
down nodes, quotas, guarantees, preemption, elastic gangs, dependencies; every
policy, with and without runtime prediction; and a generated SWF trace on
200 x 8 GPUs.
usage: test_incremental.py MUSTER_SIM [jobs=N]"""
import json, math, os, random, subprocess, sys, tempfile

SIM = sys.argv[1]
JOBS = ([int(x[5:]) for x in sys.argv[2:] if x.startswith('jobs=')] or [400])[0]


def cluster(rng, levels):
    nodes = []
    for b in range(2):
        for r in range(3):
            for n in range(4):
                node = {'name': f'b{b}r{r}n{n}', 'gpus': 8, 'model': 'h100' if b == 0 else 'a100'}
                if levels:
                    node['topology'] = f'b{b}/r{r}'
                if rng.random() < 0.1:
                    node['unhealthy'] = rng.sample(range(8), rng.randint(1, 3))
                if rng.random() < 0.05:
                    node['state'] = rng.choice(['drain', 'down'])
                nodes.append(node)
    c = {'nodes': nodes,
         'tenants': [{'name': 'org', 'max_gpus': 120},
                     {'name': 'a', 'parent': 'org', 'shares': 3, 'guaranteed_gpus': 32},
                     {'name': 'b', 'parent': 'org', 'shares': 1, 'max_running_jobs': 6},
                     {'name': 'c', 'shares': 2, 'guaranteed_gpus': 16, 'max_gpus': 64}],
         'classes': [{'name': 'low', 'priority': 10, 'preemptible': True},
                     {'name': 'normal', 'priority': 100, 'preemptible': True},
                     {'name': 'high', 'priority': 1000, 'preemptible': False}],
         'settings': {'reservation_depth': rng.choice([0, 1, 4]), 'half_life': 3600}}
    if levels:
        c['levels'] = ['block', 'rack']
    return c


def trace(rng, n, levels):
    rows = ['id,submit,duration,nodes,gpus_per_node,min_nodes,tenant,user,time_limit,class,gpu_model,'
            'topology_required,topology_preferred,depends,exit']
    t = 0
    for i in range(1, n + 1):
        t += int(rng.expovariate(1 / 30))
        nodes = rng.choice([1, 1, 1, 2, 4, 8])
        gpn = rng.choice([1, 2, 4, 8]) if nodes == 1 else rng.choice([4, 8, 8])
        minn = rng.randint(1, nodes) if nodes > 1 and rng.random() < 0.3 else ''
        limit = rng.choice([60, 300, 1800, 7200])
        dur = rng.randint(0, limit) if rng.random() < 0.9 else limit + 100
        dep = ''
        if i > 5 and rng.random() < 0.1:
            dep = f"{rng.choice(['afterok', 'afterany', 'afternotok'])}:{rng.randint(max(1, i - 20), i - 1)}"
        req = rng.choice(['', '', '', 'rack', 'block']) if nodes > 1 and levels else ''
        pref = rng.choice(['', 'rack']) if levels else ''
        rows.append(','.join(str(x) for x in [
            i, t, dur, nodes, gpn, minn, rng.choice(['a', 'b', 'c', 'root']), f'u{rng.randint(1, 6)}', limit,
            rng.choice(['low', 'normal', 'normal', 'high']), rng.choice(['', '', 'h100', 'a100']),
            req, pref, dep, 1 if rng.random() < 0.1 else 0]))
    return '\n'.join(rows) + '\n'


def swf(rng, n, gpus):
    """As bench/sched/gen_trace.py: Poisson arrivals at ~90% load, gangs of 1..64 GPUs."""
    sizes = [1, 1, 1, 2, 4, 8, 8, 16, 32, 64]
    mean_area = sum(s * (86400 - 60) / math.log(86400 / 60) for s in sizes) / len(sizes)
    rate = 0.9 * gpus / mean_area
    out = [f'; MaxProcs: {gpus}']
    t = 0.0
    for i in range(1, n + 1):
        t += rng.expovariate(rate)
        size = rng.choice(sizes)
        run = int(math.exp(rng.uniform(math.log(60), math.log(86400))))
        est = min(172800, max(run, int(run * rng.uniform(1, 4))))
        out.append(f'{i} {int(t)} -1 {run} {size} -1 -1 {size} {est} -1 1 {1 + rng.randrange(50)} 1 -1 -1 -1 -1 -1')
    return '\n'.join(out) + '\n'


# --check where there is a view: the core compares it with a rebuild each pass (settings.check_view),
# so a fast path that leaves a count wrong fails here even where no decision shows it
VARIANTS = (['--check'], ['--full-rebuild'], ['--node-allocs', '--check'], ['--node-allocs', '--full-rebuild'])


def replay(args, d, tag):
    outs = []
    for extra in VARIANTS:
        s, p = os.path.join(d, 's.swf'), os.path.join(d, 'p.json')
        r = subprocess.run([SIM] + args + ['--quiet', '--schedule-out', s, '--placements-out', p] + extra,
                           capture_output=True, text=True)
        if r.returncode != 0:
            return f'{tag} {" ".join(extra)}: exit {r.returncode}: {r.stderr.strip()}'
        outs.append((open(s).read(), open(p).read()))
    s1, p1 = outs[0]
    for extra, (s2, p2) in zip(VARIANTS[1:], outs[1:]):
        if s1 != s2 or p1 != p2:
            a, b = p1.splitlines(), p2.splitlines()
            first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            return (f'{tag}: {" ".join(extra)} changed the schedule (placement line {first + 1}:\n'
                    f'  view, ranges: {a[first] if first < len(a) else "(none)"}\n'
                    f'  {" ".join(extra)}: {b[first] if first < len(b) else "(none)"})')
    print(f'{tag}: identical ({len(p1.splitlines())} runs)')
    return None


failures = []
with tempfile.TemporaryDirectory() as d:
    for seed in (1, 2):
        for levels in (False, True):
            rng = random.Random(seed * 10 + levels)
            c, t = os.path.join(d, 'c.json'), os.path.join(d, 't.csv')
            open(c, 'w').write(json.dumps(cluster(rng, levels)))
            open(t, 'w').write(trace(rng, JOBS, levels))
            for pol, predict in (('fcfs', []), ('easy', []), ('conservative', []), ('muster', []),
                                 ('easy', ['--predict']), ('muster', ['--predict'])):
                tag = f'seed {seed} {"topology" if levels else "flat"} {pol} {" ".join(predict)}'
                err = replay(['--csv', t, '--cluster', c, '--policy', pol] + predict, d, tag)
                if err:
                    failures.append(err)
    rng = random.Random(7)
    t = os.path.join(d, 'g.swf')
    open(t, 'w').write(swf(rng, 6 * JOBS, 1600))
    for pol in ('easy', 'conservative', 'muster', 'easy --predict'):
        err = replay(['--swf', t, '--nodes', '200', '--gpus-per-node', '8', '--policy'] + pol.split(), d,
                     f'generated {6 * JOBS} jobs, 200 x 8 GPUs, {pol}')
        if err:
            failures.append(err)
    err = replay(['--swf', t, '--gpus', '1600', '--policy', 'easy'], d, f'generated {6 * JOBS} jobs, 1600 x 1 GPU, easy')
    if err:
        failures.append(err)
    # the invariant checker (--check) reads the ranges too: every GPU once, every gang its width
    err = replay(['--swf', t, '--gpus', '1600', '--policy', 'easy', '--check'], d,
                 f'generated {6 * JOBS} jobs, 1600 x 1 GPU, easy --check')
    if err:
        failures.append(err)
for f in failures:
    print('FAIL', f)
print('ok' if not failures else f'{len(failures)} failure(s)')
sys.exit(1 if failures else 0)
