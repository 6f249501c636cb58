#!/usr/bin/env python3
"""A plain-Python EASY backfilling reference for muster-sim --policy easy, on
a homogeneous cluster of whole nodes: first fit on node counts (every job
takes whole nodes, so a count of free nodes is the whole state).

easy_ref.py TRACE.swf[.gz] NODES GPUS_PER_NODE [--out STARTS.txt]

Reads the SWF as muster-sim does (processors = field 8 when positive, else
field 5; run time = field 4; estimate = field 9, field 4 when missing, at
least 1; a run longer than its estimate is cut to it; a job of P processors
takes ceil(P / GPUS_PER_NODE) nodes) and replays it with muster-sim's event
semantics: at each instant, runs whose estimated end is now free their nodes
first, then each submission (input order) and each termination (start order)
gets its own scheduling pass. A pass walks the queue in submit order: jobs
start while they fit; the first that does not gets the reservation (the
earliest planned end of running jobs at which enough nodes are free, the
"shadow" time, and the nodes left over then, the "extra" nodes); a later job
starts if it fits now and either ends by the shadow time or uses no more
than the extra nodes. Prints the job count and the CPU time; --out writes
"job_id start" lines in trace order."""
import bisect, gzip, heapq, math, sys, time

t0 = time.process_time()
path, nodes_total, gpn = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = sys.argv[sys.argv.index('--out') + 1] if '--out' in sys.argv else None

jobs = []  # [id, submit, runtime, limit, nodes]
with (gzip.open(path, 'rt') if path.endswith('.gz') else open(path)) as f:
    for line in f:
        s = line.strip()
        if not s or s[0] == ';':
            continue
        x = s.split()
        procs = float(x[7]) if float(x[7]) >= 0.5 else float(x[4])
        run, est = round(float(x[3])), float(x[8])
        limit = max(1, round(est) if est > 0 else run)
        p = round(procs)
        n = p if gpn == 1 else (1 if p <= gpn else -(-p // gpn))
        if n > nodes_total:
            sys.exit(f'job {x[0]} needs {n} nodes; the cluster has {nodes_total}')
        jobs.append([int(float(x[0])), round(float(x[1])), min(run, limit), limit, n])

order = sorted(range(len(jobs)), key=lambda i: (jobs[i][1], i))
start = [-1] * len(jobs)
free = nodes_total
queue = []          # pending job indexes, submit order
ends = []           # running: sorted (planned end, seq, job)
term = []           # heap of (actual end, seq, job)
seq = 0
released = set()


def begin(i, now):
    global free, seq
    free -= jobs[i][4]
    start[i] = now
    seq += 1
    bisect.insort(ends, (now + jobs[i][3], seq, i))
    heapq.heappush(term, (now + jobs[i][2], seq, i))


def release(i, key):
    global free
    free += jobs[i][4]
    del ends[bisect.bisect_left(ends, key)]


def schedule(now):
    shadow = None
    extra = 0
    kept = []
    for qi, i in enumerate(queue):
        n, limit = jobs[i][4], jobs[i][3]
        if shadow is None:
            if n <= free:
                begin(i, now)
                continue
            avail, shadow = free, None
            for e, _, r in ends:  # every run ending at the shadow time counts
                if shadow is not None and e > shadow:
                    break
                avail += jobs[r][4]
                if shadow is None and avail >= n:
                    shadow = e
            extra = avail - n
            kept.append(i)
            if free == 0:
                kept.extend(queue[qi + 1:])
                break
            continue
        if n <= free and (now + limit <= shadow or n <= extra):
            begin(i, now)
            if now + limit > shadow:
                extra -= n
            if free == 0:
                kept.extend(queue[qi + 1:])
                break
            continue
        kept.append(i)
    queue[:] = kept


nxt = 0
while nxt < len(order) or term:
    t = jobs[order[nxt]][1] if nxt < len(order) else math.inf
    if term and term[0][0] < t:
        t = term[0][0]
    due = []
    while term and term[0][0] == t:
        due.append(heapq.heappop(term))
    for end, sq, i in due:
        if start[i] + jobs[i][3] <= t:  # its estimated end is now: free before the submissions
            release(i, (start[i] + jobs[i][3], sq, i))
            released.add(sq)
    while nxt < len(order) and jobs[order[nxt]][1] == t:
        queue.append(order[nxt])
        nxt += 1
        schedule(t)
    while due:
        for end, sq, i in due:
            if sq not in released:
                release(i, (start[i] + jobs[i][3], sq, i))
            else:
                released.discard(sq)
            schedule(t)
        due = []
        while term and term[0][0] == t:  # zero-length runs started just now
            due.append(heapq.heappop(term))

cpu = time.process_time() - t0
print(f'easy_ref: {len(jobs)} jobs, {nodes_total} x {gpn} GPUs; {cpu:.2f} s CPU')
if out:
    with open(out, 'w') as f:
        for j, s in zip(jobs, start):
            f.write(f'{j[0]} {s}\n')
