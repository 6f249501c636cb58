#!/usr/bin/env python3
"""muster-sim as a user meets it: formats, errors with line numbers,
--lenient, determinism, the outputs' shape, --fairshare."""
import json, os, subprocess, sys, tempfile, gzip

SIM = sys.argv[1]
failures = 0


def run(args, ok=True):
    r = subprocess.run([SIM] + args, capture_output=True, text=True)
    if ok and r.returncode != 0:
        raise AssertionError(f'{args}: exit {r.returncode}: {r.stderr}')
    return r


def check(cond, msg):
    global failures
    if not cond:
        failures += 1
        print('FAIL:', msg)


SWF_HEAD = '; MaxProcs: 8\n'
def swf_line(i, sub, run_, procs, est, user=1):
    return f'{i} {sub} -1 {run_} {procs} -1 -1 {procs} {est} -1 1 {user} 1 -1 -1 -1 -1 -1\n'

with tempfile.TemporaryDirectory() as d:
    p = lambda n: os.path.join(d, n)
    # a small SWF: 8 procs, a blocked head and a backfill
    lines = [swf_line(1, 0, 100, 6, 100), swf_line(2, 10, 50, 8, 50), swf_line(3, 20, 30, 2, 30),
             swf_line(4, 20, 500, 2, 500)]
    open(p('t.swf'), 'w').write(SWF_HEAD + ''.join(lines))
    with gzip.open(p('t.swf.gz'), 'wt') as f:
        f.write(SWF_HEAD + ''.join(lines))
    for pol in ('fcfs', 'easy', 'conservative', 'muster'):
        r = run(['--swf', p('t.swf'), '--policy', pol, '--schedule-out', p(pol + '.swf'),
                 '--metrics-out', p(pol + '.json'), '--placements-out', p(pol + '.jsonl'), '--check'])
        m = json.load(open(p(pol + '.json')))
        check(m['jobs'] == 4 and m['completed'] == 4, f'{pol}: metrics jobs {m}')
        for k in ('mean', 'p50', 'p95', 'max'):
            check(k in m['wait'], f'{pol}: wait.{k}')
        for k in ('mean', 'max', 'rms'):
            check(k in m['bounded_slowdown'], f'{pol}: bounded_slowdown.{k}')
        for k in ('utilization', 'makespan', 'fragmentation', 'tenants'):
            check(k in m, f'{pol}: {k}')
        pl = [json.loads(x) for x in open(p(pol + '.jsonl'))]
        check(len(pl) == 4 and all('nodes' in x and 'start' in x and 'end' in x for x in pl), f'{pol}: placements {pl}')
    waits = lambda f: {int(l.split()[0]): int(l.split()[2]) for l in open(f) if not l.startswith(';')}
    # fcfs: job 3 waits behind the blocked job 2; easy: job 3 backfills, job 4 (long) does not
    w = waits(p('fcfs.swf'))
    check(w == {1: 0, 2: 90, 3: 130, 4: 130}, f'fcfs waits {w}')
    w = waits(p('easy.swf'))
    check(w == {1: 0, 2: 90, 3: 0, 4: 130}, f'easy waits {w}')
    # .gz reads the same
    run(['--swf', p('t.swf.gz'), '--policy', 'easy', '--schedule-out', p('gz.swf')])
    check(open(p('gz.swf')).read() == open(p('easy.swf')).read(), 'gzip input gives the same schedule')
    # determinism: byte-identical outputs
    for pol in ('easy', 'muster'):
        run(['--swf', p('t.swf'), '--policy', pol, '--schedule-out', p('again.swf'),
             '--metrics-out', p('again.json'), '--placements-out', p('again.jsonl')])
        for ext in ('swf', 'json', 'jsonl'):
            check(open(p('again.' + ext), 'rb').read() == open(p(pol + '.' + ext), 'rb').read(),
                  f'{pol}: .{ext} not byte-identical on a second run')
    # malformed SWF: line number in the error; --lenient skips and counts
    bad = SWF_HEAD + lines[0] + '2 10 -1 x 8 -1 -1 8 50 -1 1 1 1 -1 -1 -1 -1 -1\n' + lines[2] + '4 20 -1\n'
    open(p('bad.swf'), 'w').write(bad)
    r = run(['--swf', p('bad.swf')], ok=False)
    check(r.returncode == 1 and 'line 3:' in r.stderr and 'field 4' in r.stderr, f'bad SWF error: {r.stderr!r}')
    r = run(['--swf', p('bad.swf'), '--lenient', '--metrics-out', p('len.json')])
    check('2 skipped' in r.stderr and json.load(open(p('len.json')))['jobs'] == 2, f'lenient: {r.stderr!r}')
    # a job bigger than the cluster is an inconsistent line, named by line
    open(p('big.swf'), 'w').write(SWF_HEAD + swf_line(1, 0, 10, 9, 10))
    r = run(['--swf', p('big.swf')], ok=False)
    check(r.returncode == 1 and 'line 2:' in r.stderr and 'needs' in r.stderr, f'too big: {r.stderr!r}')
    # CSV: documented columns, errors by line
    csv = ('submit,duration,nodes,gpus_per_node,tenant,user,time_limit,class,depends,exit\n'
           '0,100,1,8,a,u1,200,normal,,0\n'
           '0,50,2,8,b,u2,100,high,,1\n'
           '5,10,1,4,a,u1,,,afternotok:2,0\n')
    open(p('t.csv'), 'w').write(csv)
    r = run(['--csv', p('t.csv'), '--nodes', '2', '--gpus-per-node', '8', '--policy', 'muster', '--check',
             '--schedule-out', p('csv.swf'), '--metrics-out', p('csv.json')])
    m = json.load(open(p('csv.json')))
    check(m['completed'] == 3, f'csv: {m}')
    names = sorted(t['tenant'] for t in m['tenants'])
    check(names == ['a', 'b'], f'csv tenants {names}')
    w = waits(p('csv.swf'))
    check(w[2] == 0 and w[3] >= 45, f'csv: high class first, dependency waits for job 2: {w}')
    for bad_csv, what in (('submit,duration,gpus,colour\n', 'unknown column'),
                          ('submit,duration,gpus\n0,10,1\n1,x,1\n', 'line 3:'),
                          ('submit,duration,gpus\n0,10\n', 'line 2:'),
                          ('submit,duration,gpus,depends\n0,10,1,afterwards:1\n', 'line 2:'),
                          ('duration,gpus\n10,1\n', 'line 1:')):
        open(p('bad.csv'), 'w').write(bad_csv)
        r = run(['--csv', p('bad.csv'), '--gpus', '4'], ok=False)
        check(r.returncode == 1 and what in r.stderr, f'bad csv {bad_csv!r}: {r.stderr!r}')
    # cluster JSON errors and topology
    cl = {'levels': ['block', 'rack'], 'nodes': [{'name': 'x', 'count': 4, 'topology': 'b1/r1', 'gpus': 8}],
          'tenants': [{'name': 'a', 'max_gpus': 8}], 'settings': {'reservation_depth': 2}}
    open(p('c.json'), 'w').write(json.dumps(cl))
    csv = 'submit,duration,nodes,gpus_per_node,tenant,topology_required\n' + '0,10,1,8,a,rack\n' * 5
    open(p('q.csv'), 'w').write(csv)
    r = run(['--csv', p('q.csv'), '--cluster', p('c.json'), '--policy', 'muster', '--check',
             '--schedule-out', p('q.swf')])
    w = waits(p('q.swf'))
    check(sorted(w.values()) == [0, 10, 20, 30, 40], f'max_gpus 8 serialises tenant a: {w}')
    for bad_cl, what in (({'nodes': [{'gpus': 65}]}, 'gpus'), ({'nodes': [], 'colour': 1}, 'unknown field'),
                         ({'levels': ['rack'], 'nodes': [{'topology': 'a/b'}]}, 'level'), ({}, 'no nodes')):
        open(p('bad.json'), 'w').write(json.dumps(bad_cl))
        r = run(['--csv', p('q.csv'), '--cluster', p('bad.json')], ok=False)
        check(r.returncode == 1 and what in r.stderr, f'bad cluster {bad_cl}: {r.stderr!r}')
    r = run(['--swf', p('t.swf'), '--policy', 'bogus'], ok=False)
    check(r.returncode == 2, 'bad policy is a usage error')
    # --fairshare goes to the Fair Tree calculator
    open(p('tree.json'), 'w').write(json.dumps({'tenants': [{'name': 'a', 'parent': None, 'shares': 1}],
                                               'users': [{'tenant': 'a', 'name': 'u', 'shares': 1, 'usage': 1}]}))
    r = run(['--fairshare', p('tree.json')])
    check('associations' in json.loads(r.stdout), f'fairshare: {r.stdout!r}')

print('ok' if not failures else f'{failures} failure(s)')
sys.exit(1 if failures else 0)
