#!/usr/bin/python3
"""Contract test: every endpoint of the running muster-api, on happy and error
paths, answers as openapi/muster.yaml says.

Each response is checked for a status the operation declares, its content
type and its body against the response schema (Draft 2020-12, $refs inlined,
strict RFC 3339 date-times); each body the server accepted is checked against
the request schema (the spec must not be stricter than the server). Every
operation that has a route in api/routes.def must have been answered with a
2xx at least once. An operation without a route fails (test_routes_spec says
which); nothing here skips because a feature is missing.

GET /openapi.json must be byte for byte the JSON the build generated.
"""
import os
import sys

import harness
from harness import check, check_eq

sys.path.insert(0, os.path.join(harness.SOURCE_DIR, 'openapi'))
import spec_check  # noqa: E402

SPEC = spec_check.Spec.load()
ROUTES = {(m, p) for m, p, _ in spec_check.read_routes(
    os.path.join(harness.SOURCE_DIR, 'api', 'routes.def'))}
S = {}  # state shared by the tests below, in order


def routed(op_id):
    op = next(o for o in SPEC.ops if o.id == op_id)
    return (op.method, op.template) in ROUTES


def need(*op_ids):
    missing = [o for o in op_ids if not routed(o)]
    check(not missing, 'no route in api/routes.def for %s' % ', '.join(missing))


def job_body(**kw):
    b = {'nodes': 1, 'gpus_per_node': 1, 'command': ['python', 'train.py']}
    b.update(kw)
    return b


def client(c):
    if 'cc' not in S:
        S['cc'] = spec_check.CheckedClient(c, SPEC)
    return S['cc']


def test_service(c):
    cc = client(c)
    cc('GET', '/healthz', token='', expect=200)
    cc('GET', '/readyz', token='', expect=200)
    cc('GET', '/metrics', token='', expect=200)
    cc('GET', '/v1/whoami', expect=200)
    cc('GET', '/v1/whoami', token='', expect=401, what='no token')
    cc('GET', '/v1/whoami', token='mst_' + 'A' * 43, expect=401, what='unknown token')
    cc('GET', '/v1/whoami', token='garbage', expect=401, what='malformed token')
    cc('GET', '/v1/no-such-thing', expect=404)
    cc('DELETE', '/v1/jobs', expect=405, what='known path, other method')
    cc('PUT', '/healthz', token='', expect=405)
    # the served document is the generated JSON, byte for byte
    import http.client
    conn = http.client.HTTPConnection('127.0.0.1', c.http_port, timeout=30)
    conn.request('GET', '/openapi.json')
    r = conn.getresponse()
    served = r.read()
    ctype = r.getheader('content-type', '')
    conn.close()
    check_eq(r.status, 200)
    check(ctype.startswith('application/json'), ctype)
    with open(os.path.join(c.build_dir, 'openapi', 'openapi.json'), 'rb') as f:
        built = f.read()
    check(served == built, 'GET /openapi.json differs from build/openapi/openapi.json '
          '(%d vs %d bytes)' % (len(served), len(built)))
    cc.seen.setdefault('getOpenapi', set()).add(200)


def test_tenants(c):
    need('createTenant', 'listTenants', 'getTenant', 'updateTenant', 'deleteTenant')
    cc = client(c)
    cc('POST', '/v1/tenants', {'name': 'ml', 'shares': 5, 'description': 'machine learning'}, expect=201)
    cc('POST', '/v1/tenants', {'name': 'vision', 'parent': 'ml', 'shares': 10}, expect=201)
    cc('POST', '/v1/tenants', {'name': 'speech', 'parent': 'ml'}, expect=201)
    cc('POST', '/v1/tenants', {'name': 'other'}, expect=201)
    cc('POST', '/v1/tenants', {'name': 'vision'}, expect=409, what='duplicate')
    cc('POST', '/v1/tenants', {'name': 'Bad Name'}, expect=400)
    cc('POST', '/v1/tenants', {'name': 'x', 'bogus': 1}, expect=400)
    cc('POST', '/v1/tenants', {'name': 'orphan', 'parent': 'nope'}, expect=404)
    cc('POST', '/v1/tenants', raw='{"name":', headers={'Content-Type': 'application/json'},
       expect=400, what='malformed')
    st, _, b = cc('GET', '/v1/tenants', expect=200)
    names = [t['name'] for t in b['items']] if st == 200 else []
    check(set(['root', 'ml', 'vision', 'speech', 'other']) <= set(names), names)
    # pagination walks every tenant exactly once
    seen, cursor = [], None
    for _ in range(20):
        st, _, b = cc('GET', '/v1/tenants?limit=2' + ('&cursor=' + cursor if cursor else ''), expect=200)
        if st != 200:
            break
        check(len(b['items']) <= 2, b)
        seen += [t['name'] for t in b['items']]
        cursor = b['next_cursor']
        if not cursor:
            break
    check_eq(sorted(seen), sorted(names), 'paged tenants')
    cc('GET', '/v1/tenants?limit=0', expect=400)
    cc('GET', '/v1/tenants?limit=abc', expect=400)
    cc('GET', '/v1/tenants/vision', expect=200)
    cc('GET', '/v1/tenants/nope', expect=404)
    st, _, b = cc('PATCH', '/v1/tenants/vision', {'shares': 20, 'description': 'cv'}, expect=200)
    if st == 200:
        check_eq(b['shares'], 20)
    cc('PATCH', '/v1/tenants/vision', {'shares': -1}, expect=400)
    cc('PATCH', '/v1/tenants/nope', {'shares': 1}, expect=404)
    cc('DELETE', '/v1/tenants/ml', expect=409, what='has children')
    cc('POST', '/v1/tenants', {'name': 'doomed'}, expect=201)
    cc('DELETE', '/v1/tenants/doomed', expect=204)
    cc('DELETE', '/v1/tenants/doomed', expect=404)


def test_tokens(c):
    need('createToken', 'listTokens', 'getToken', 'revokeToken')
    cc = client(c)
    st, _, b = cc('POST', '/v1/tokens', {'name': 'vision-ci', 'role': 'tenant', 'tenant': 'vision',
                                         'user': 'alice'}, expect=201)
    check_eq(st, 201, b)
    S['vision'] = b['token']
    S['vision_id'] = b['id']
    st, _, b = cc('POST', '/v1/tokens', {'role': 'reader', 'tenant': 'vision'}, expect=201)
    S['vision_reader'] = b['token'] if st == 201 else None
    st, _, b = cc('POST', '/v1/tokens', {'role': 'tenant', 'tenant': 'other', 'user': 'bob'}, expect=201)
    S['other'] = b['token'] if st == 201 else None
    st, _, b = cc('POST', '/v1/tokens', {'role': 'reader'}, expect=201)
    S['reader'] = b['token'] if st == 201 else None
    st, _, b = cc('POST', '/v1/tokens', {'role': 'agent', 'node': 'gpu-001'}, expect=201)
    S['agent'] = b['token'] if st == 201 else None
    cc('POST', '/v1/tokens', {'role': 'wizard'}, expect=400)
    cc('POST', '/v1/tokens', {'role': 'tenant'}, expect=400, what='no tenant')
    cc('POST', '/v1/tokens', {'role': 'tenant', 'tenant': 'nope'}, expect=404)
    # a tenant token may create tokens in its subtree, not outside it, not admin
    cc('POST', '/v1/tokens', {'role': 'reader', 'tenant': 'vision'}, token=S['vision'], expect=201)
    cc('POST', '/v1/tokens', {'role': 'tenant', 'tenant': 'other'}, token=S['vision'], expect=404)
    cc('POST', '/v1/tokens', {'role': 'admin'}, token=S['vision'], expect=403)
    cc('POST', '/v1/tokens', {'role': 'reader'}, token=S['reader'], expect=403)
    cc('GET', '/v1/tokens', token='', expect=401)
    cc('GET', '/v1/tokens?limit=1001', expect=400)
    st, _, b = cc('GET', '/v1/tokens', expect=200)
    if st == 200:
        check(all('token' not in t for t in b['items']), 'a listed token carries its secret')
    cc('GET', '/v1/tokens/%d' % S['vision_id'], expect=200)
    cc('GET', '/v1/tokens/999999', expect=404)
    st, _, b = cc('GET', '/v1/whoami', token=S['vision'], expect=200)
    if st == 200:
        check_eq((b['role'], b['tenant'], b['user'], b['token_id']),
                 ('tenant', 'vision', 'alice', S['vision_id']))
    st, _, b = cc('POST', '/v1/tokens', {'role': 'reader', 'tenant': 'vision'}, expect=201)
    if st == 201:
        cc('DELETE', '/v1/tokens/%d' % b['id'], expect=204)
        cc('DELETE', '/v1/tokens/%d' % b['id'], expect=404, what='revoked twice')
        cc('GET', '/v1/whoami', token=b['token'], expect=401, what='revoked token')


def test_priority_classes(c):
    need('createPriorityClass', 'listPriorityClasses', 'getPriorityClass', 'updatePriorityClass',
         'deletePriorityClass')
    cc = client(c)
    cc('POST', '/v1/priority-classes', {'name': 'urgent', 'priority': 5000, 'preemptible': False,
                                        'default_time_limit': 3600, 'max_time_limit': '2-00:00:00',
                                        'grace_period': 60, 'description': 'deadlines'}, expect=201)
    cc('POST', '/v1/priority-classes', {'name': 'urgent', 'priority': 1}, expect=409)
    cc('POST', '/v1/priority-classes', {'name': 'nopri'}, expect=400)
    cc('POST', '/v1/priority-classes', {'name': 'x', 'priority': 'high'}, expect=400)
    cc('GET', '/v1/priority-classes', expect=200)
    cc('GET', '/v1/priority-classes?limit=abc', expect=400)
    cc('GET', '/v1/priority-classes', token=S.get('vision'), expect=200)
    cc('GET', '/v1/priority-classes/urgent', expect=200)
    cc('GET', '/v1/priority-classes/nope', expect=404)
    cc('PATCH', '/v1/priority-classes/urgent', {'max_time_limit': 172800}, expect=200)
    cc('PATCH', '/v1/priority-classes/urgent', {'name': 'renamed'}, expect=400)
    cc('POST', '/v1/priority-classes', {'name': 'urgent', 'priority': 1}, token=S.get('vision'),
       expect=403)
    cc('POST', '/v1/priority-classes', {'name': 'temp', 'priority': 1}, expect=201)
    cc('DELETE', '/v1/priority-classes/temp', expect=204)
    cc('DELETE', '/v1/priority-classes/temp', expect=404)


def test_quotas(c):
    need('putTenantQuota', 'getTenantQuota', 'deleteTenantQuota', 'listQuotas')
    cc = client(c)
    cc('PUT', '/v1/tenants/speech/quota', {'guaranteed_gpus': 8, 'max_gpus': 16, 'max_pending_jobs': 2,
                                           'max_running_jobs': None, 'max_time_limit': '1-00:00:00'},
       expect=200)
    cc('PUT', '/v1/tenants/vision/quota', {'gpu_model': 'H100', 'max_gpus': 64}, expect=200)
    cc('PUT', '/v1/tenants/vision/quota', {'guaranteed_gpus': 10, 'max_gpus': 5}, expect=400)
    cc('PUT', '/v1/tenants/vision/quota', {'max_gpus': 'lots'}, expect=400)
    cc('PUT', '/v1/tenants/nope/quota', {}, expect=404)
    cc('GET', '/v1/tenants/speech/quota', expect=200)
    cc('GET', '/v1/tenants/nope/quota', expect=404)
    cc('GET', '/v1/quotas', expect=200)
    cc('GET', '/v1/quotas?limit=0', expect=400)
    cc('DELETE', '/v1/tenants/vision/quota?gpu_model=H100', expect=204)
    cc('DELETE', '/v1/tenants/vision/quota?gpu_model=H100', expect=404)
    cc('PUT', '/v1/tenants/vision/quota', {'max_gpus': 1}, token=S.get('vision'), expect=403)


def test_jobs(c):
    need('submitJob', 'listJobs', 'getJob', 'cancelJob')
    cc = client(c)
    tok = S.get('vision')
    full = job_body(tenant='vision', name='resnet', priority_class='normal', nodes=2, min_nodes=1,
                    gpus_per_node=8, gpu_model='H100', procs_per_node=8,
                    topology={'preferred': 'rack'}, time_limit='1:30:00',
                    command=['torchrun', '--nproc-per-node=8', 'train.py'],
                    env={'NCCL_DEBUG': 'WARN'}, workdir='/w', max_retries=2,
                    labels={'team': 'vision', 'run': 'a'})
    st, h, b = cc('POST', '/v1/jobs', full, expect=201, what='admin, every field')
    check_eq(st, 201, b)
    check_eq(h.get('location'), '/v1/jobs/%d' % b['id'], 'Location of a new job')
    j1 = b['id']
    check_eq(b['time_limit'], 5400)
    check_eq(b['state'], 'PENDING')
    if tok:
        st, _, b = cc('POST', '/v1/jobs', job_body(time_limit=90,
                                                   dependencies=[{'type': 'afterok', 'job_id': j1}]),
                      token=tok, expect=201, what='tenant token')
        check_eq(b.get('tenant'), 'vision', b)
    st, h, b = cc('POST', '/v1/jobs', job_body(tenant='vision'), headers={'Idempotency-Key': 'k-1'},
                  expect=201)
    first = b.get('id') if st == 201 else None
    st, h, b = cc('POST', '/v1/jobs', job_body(tenant='vision'), headers={'Idempotency-Key': 'k-1'},
                  expect=200, what='idempotent replay')
    if st == 200:
        check_eq(b['id'], first)
        check_eq(h.get('idempotent-replayed'), 'true')
    cc('POST', '/v1/jobs', job_body(tenant='vision', nodes=3), headers={'Idempotency-Key': 'k-1'},
       expect=409, what='key reused')
    cc('POST', '/v1/jobs', job_body(tenant='vision', nodes=0), expect=400)
    cc('POST', '/v1/jobs', job_body(tenant='vision', time_limit='soon'), expect=400)
    cc('POST', '/v1/jobs', job_body(tenant='nope'), expect=404)
    cc('POST', '/v1/jobs', job_body(), expect=400, what='admin without tenant')
    cc('POST', '/v1/jobs', job_body(tenant='vision', priority_class='nope'), expect=404)
    cc('POST', '/v1/jobs', job_body(tenant='vision'), token='', expect=401)
    if S.get('reader'):
        cc('POST', '/v1/jobs', job_body(tenant='vision'), token=S['reader'], expect=403)
    big = job_body(tenant='vision', env={'X%d' % i: 'v' * 8000 for i in range(150)})
    cc('POST', '/v1/jobs', big, expect=413, what='body over 1 MiB')
    # list, filters, pagination
    cc('GET', '/v1/jobs', expect=200)
    cc('GET', '/v1/jobs?state=PENDING&tenant=vision&label=team=vision', expect=200)
    cc('GET', '/v1/jobs?state=PENDING,RUNNING&user=alice', expect=200)
    cc('GET', '/v1/jobs?state=BOGUS', expect=400)
    cc('GET', '/v1/jobs?cursor=not-a-cursor', expect=400)
    ids, cursor = [], None
    for _ in range(50):
        st, _, b = cc('GET', '/v1/jobs?limit=1' + ('&cursor=' + cursor if cursor else ''), expect=200)
        if st != 200:
            break
        ids += [j['id'] for j in b['items']]
        cursor = b['next_cursor']
        if not cursor:
            break
    check_eq(ids, sorted(set(ids)), 'paged job ids ascending, no repeats')
    check_eq(len(ids), int(c.sql_value('SELECT count(*) FROM jobs')))
    st, _, b = cc('GET', '/v1/jobs/%d' % j1, expect=200)
    if st == 200:
        check(any(e['kind'] == 'job.submitted' for e in b['events']), b['events'])
    cc('GET', '/v1/jobs/999999', expect=404)
    cc('GET', '/v1/jobs/abc', expect=404)
    st, _, b = cc('POST', '/v1/jobs/%d/cancel' % j1, expect=200)
    if st == 200:
        check_eq(b['state'], 'CANCELLED')
    cc('POST', '/v1/jobs/%d/cancel' % j1, expect=409, what='already finished')
    cc('POST', '/v1/jobs/999999/cancel', expect=404)
    st, _, b = cc('POST', '/v1/jobs/cancel', {'ids': [j1, 999999]}, expect=200)
    if st == 200:
        check_eq([r['ok'] for r in b['results']], [False, False], 'ended, not found')
    cc('POST', '/v1/jobs/cancel', {'ids': [j1, j1]}, expect=400, what='an id twice')
    S['job'] = first or j1


def test_quota_exceeded(c):
    need('submitJob', 'putTenantQuota')
    cc = client(c)
    # speech: max_pending_jobs 2 (test_quotas)
    for i in range(2):
        cc('POST', '/v1/jobs', job_body(tenant='speech'), expect=201)
    cc('POST', '/v1/jobs', job_body(tenant='speech'), expect=429)


def test_batch(c):
    need('submitJobBatch')
    cc = client(c)
    n0 = int(c.sql_value('SELECT count(*) FROM jobs'))
    st, _, b = cc('POST', '/v1/jobs/batch',
                  {'jobs': [job_body(tenant='vision', name='b%d' % i) for i in range(5)]}, expect=201)
    if st == 201:
        check_eq([j['name'] for j in b['items']], ['b%d' % i for i in range(5)])
    st, _, b = cc('POST', '/v1/jobs/batch',
                  {'jobs': [job_body(tenant='vision'), job_body(tenant='vision', nodes=-1)]}, expect=400)
    if st == 400:
        check_eq(b.get('field'), 'jobs.1.nodes', b)
    cc('POST', '/v1/jobs/batch', {'jobs': []}, expect=400)
    cc('POST', '/v1/jobs/batch', {'jobs': [job_body(tenant='vision')], 'x': 1}, expect=400)
    check_eq(int(c.sql_value('SELECT count(*) FROM jobs')), n0 + 5, 'batch all-or-nothing')


def test_nodes(c):
    need('listNodes', 'getNode', 'drainNode', 'resumeNode')
    cc = client(c)
    c.sql("INSERT INTO nodes (name, address, topology, gpu_model, gpu_count, labels, agent_version, "
          "last_heartbeat) VALUES ('gpu-001', '10.0.0.1', 'block-1/rack-1', 'H100', 2, "
          "'{\"zone\": \"a\"}', '0.1.0', now()), ('gpu-002', '10.0.0.2', 'block-1/rack-2', 'H100', 0, "
          "'{}', '', NULL)")
    c.sql("INSERT INTO gpus (node_id, idx, uuid, model, memory_mb) SELECT id, g, 'GPU-' || g, 'H100', "
          "81559 FROM nodes, generate_series(0, 1) g WHERE name = 'gpu-001'")
    st, _, b = cc('GET', '/v1/nodes', expect=200)
    cc('GET', '/v1/nodes?limit=1', expect=200)
    st, _, b = cc('GET', '/v1/nodes/gpu-001', expect=200)
    if st == 200:
        check_eq(len(b['gpus']), 2)
    cc('GET', '/v1/nodes/nope', expect=404)
    st, _, b = cc('POST', '/v1/nodes/gpu-001/drain', {'reason': 'maintenance'}, expect=200)
    if st == 200:
        check(b['state'] in ('DRAINING', 'DRAINED'), b['state'])
    cc('POST', '/v1/nodes/gpu-002/drain', expect=200, what='no body')
    cc('POST', '/v1/nodes/gpu-001/drain', {'why': 'x'}, expect=400)
    cc('POST', '/v1/nodes/nope/drain', {'reason': 'x'}, expect=404)
    st, _, b = cc('POST', '/v1/nodes/gpu-001/resume', expect=200)
    cc('POST', '/v1/nodes/gpu-002/resume', {}, expect=200, what='empty object body')
    cc('POST', '/v1/nodes/gpu-002/resume', {'reason': 'x'}, expect=400)
    cc('POST', '/v1/nodes/nope/resume', expect=404)
    if S.get('vision'):
        cc('POST', '/v1/nodes/gpu-001/drain', {'reason': 'x'}, token=S['vision'], expect=403)
    if S.get('agent'):
        cc('GET', '/v1/nodes/gpu-001', token=S['agent'], expect=200, what='agent, own node')
        cc('GET', '/v1/nodes/gpu-002', token=S['agent'], expect=(403, 404), what='agent, other node')
        cc('GET', '/v1/nodes', token=S['agent'], expect=403)
        cc('GET', '/v1/jobs', token=S['agent'], expect=403)


def test_running_job(c):
    """A job the scheduler would have started (made RUNNING in SQL, no scheduler
    here): its runs and allocations as the API shows them, and a cancel that
    orders the run stopped."""
    need('submitJob', 'getJob', 'cancelJob', 'getNode')
    cc = client(c)
    st, _, b = cc('POST', '/v1/jobs', job_body(tenant='vision', nodes=1, gpus_per_node=2), expect=201)
    check_eq(st, 201, b)
    jid = b['id']
    run = c.sql_value(
        "UPDATE jobs SET state = 'RUNNING', started_at = now() WHERE id = $1;"
        "INSERT INTO runs (job_id, attempt, epoch, state, nodes, gpus_per_node, time_limit, started_at) "
        "VALUES ($1, 1, 1, 'RUNNING', 1, 2, 3600, now()) RETURNING id", jid)
    c.sql("INSERT INTO run_allocations (run_id, node_id, node_rank, gpu_index) "
          "SELECT $1, id, 0, g FROM nodes, generate_series(0, 1) g WHERE name = 'gpu-001'", run)
    st, _, b = cc('GET', '/v1/jobs/%d' % jid, expect=200)
    if st == 200:
        check_eq(b['state'], 'RUNNING')
        check_eq(len(b['runs']), 1, b['runs'])
        r = b['runs'][0]
        check_eq((r['id'], r['attempt'], r['state']), (int(run), 1, 'RUNNING'))
        check_eq([(n['node'], n['rank'], sorted(n['gpus'])) for n in r['nodes']], [('gpu-001', 0, [0, 1])])
        check_eq(b['pending_reason'], None, 'pending_reason of a running job')
    st, _, b = cc('GET', '/v1/nodes/gpu-001', expect=200)
    if st == 200:
        check(all(g['allocated'] for g in b['gpus']), b['gpus'])
        check(b['state'] in ('ALLOCATED', 'DRAINING'), b['state'])
    st, _, b = cc('POST', '/v1/jobs/%d/cancel' % jid, expect=200)
    if st == 200:
        check(b['state'] in ('RUNNING', 'CANCELLED'), b['state'])
    check_eq(c.sql_value('SELECT stop_reason FROM runs WHERE id = $1', run), 'cancel')


def test_scheduler_endpoints(c):
    """The scheduler status, usage, fair-share, explain and dry-run endpoints."""
    cc = client(c)
    need('getScheduler', 'getUsage', 'getFairshare', 'explainJob', 'dryRunJob')
    cc('GET', '/v1/scheduler', expect=200)
    cc('GET', '/v1/scheduler', token='', expect=401)
    cc('GET', '/v1/usage', expect=200)
    cc('GET', '/v1/usage?group_by=user&from=2026-01-01T00:00:00Z&to=2030-01-01T00:00:00Z', expect=200)
    cc('GET', '/v1/usage?from=2026-01-01&group_by=tenant', expect=200, what='plain date')
    cc('GET', '/v1/usage?group_by=planet', expect=400)
    cc('GET', '/v1/usage?colour=red', expect=400)
    cc('GET', '/v1/usage', token='', expect=401)
    cc('GET', '/v1/usage?from=yesterday', expect=400)
    cc('GET', '/v1/fairshare', expect=200)
    cc('GET', '/v1/fairshare', token=S.get('vision'), expect=200, what='tenant view')
    cc('GET', '/v1/fairshare', token='', expect=401)
    if S.get('job'):
        cc('GET', '/v1/jobs/%d/explain' % S['job'], expect=200)
    cc('GET', '/v1/jobs/999999/explain', expect=404)
    cc('POST', '/v1/jobs/dry-run', job_body(tenant='vision'), expect=200)
    cc('POST', '/v1/jobs/dry-run', job_body(tenant='vision', nodes=0), expect=400)
    cc('POST', '/v1/jobs/dry-run', job_body(tenant='vision', topology={'required': 'rack'}, nodes=64),
       expect=200, what='never fits')
    n = c.sql_value('SELECT count(*) FROM jobs')
    cc('POST', '/v1/jobs/dry-run', job_body(), token=S.get('vision'), expect=200)
    check_eq(c.sql_value('SELECT count(*) FROM jobs'), n, 'dry-run wrote a job')


def test_job_logs(c):
    """GET /v1/jobs/{id}/logs against a real fake-GPU agent: a run made in
    SQL on its node (no scheduler here) is started by the agent; its stdout
    comes back as text/plain; a node without an agent answers 503."""
    need('getJobLogs', 'submitJob')
    check(harness.binary('muster-agent'), 'muster-agent is not built')
    cc = client(c)
    token = c.make_token('agent', node='log-001')
    c.start_process(
        [harness.binary('muster-agent'), '--api', '127.0.0.1:%d' % c.grpc_port, '--node', 'log-001',
         '--address', '127.0.0.1', '--state-dir', os.path.join(c.dir, 'log-agent'), '--gpu-backend',
         'fake', '--fake-gpus', '1', '--heartbeat-interval', '300ms'] + c.agent_flags(),
        env={'MUSTER_AGENT_TOKEN': token}, name='log-agent',
        wait_for=lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name = 'log-001' AND up") == '1')
    jobs = {}
    for node in ('log-001', 'gpu-002'):
        st, _, b = cc('POST', '/v1/jobs', job_body(tenant='vision', gpus_per_node=0,
                                                   command=['/bin/sh', '-c', 'echo contract']), expect=201)
        check_eq(st, 201, b)
        jobs[node] = b['id']
        run = c.sql_value(
            "UPDATE jobs SET state = 'RUNNING', started_at = now() WHERE id = $1;"
            "INSERT INTO runs (job_id, attempt, epoch, state, nodes, gpus_per_node, time_limit, started_at) "
            "VALUES ($1, 1, 1, 'RUNNING', 1, 0, 3600, now()) RETURNING id", b['id'])
        c.sql("INSERT INTO run_allocations (run_id, node_id, node_rank, gpu_index) "
              "SELECT $1, id, 0, -1 FROM nodes WHERE name = $2", run, node)
        c.sql("NOTIFY muster_agents, '%s'" % node)
    jid = jobs['log-001']
    c.wait_until(lambda: c.api('GET', '/v1/jobs/%d/logs' % jid)[2] == 'contract\n', 15, 'the job printed')
    cc('GET', '/v1/jobs/%d/logs' % jid, expect=200)
    cc('GET', '/v1/jobs/%d/logs?stream=stderr&offset=0&limit=10&node_rank=0&local_rank=0' % jid, expect=200)
    cc('GET', '/v1/jobs/%d/logs?stream=both' % jid, expect=400)
    cc('GET', '/v1/jobs/%d/logs?local_rank=1' % jid, expect=400)
    cc('GET', '/v1/jobs/%d/logs?node_rank=1' % jid, expect=400)
    cc('GET', '/v1/jobs/%d/logs' % jid, token='', expect=401)
    cc('GET', '/v1/jobs/%d/logs' % jid, token=token, expect=403, what='agent token')
    cc('GET', '/v1/jobs/999999/logs', expect=404)
    cc('GET', '/v1/jobs/%d/logs' % jobs['gpu-002'], expect=503, what='no agent for the node')
    st, _, b = cc('POST', '/v1/jobs', job_body(tenant='vision'), expect=201)
    cc('GET', '/v1/jobs/%d/logs' % b['id'], expect=409, what='not started')


def test_events(c):
    """GET /v1/events: the stream's head and first message against the spec
    (it never ends, so it is read raw), its error paths, and 429 at the cap."""
    import socket
    cc = client(c)
    need('streamEvents')

    def open_stream(query='', tok=None):
        s = socket.create_connection(('127.0.0.1', c.http_port), timeout=20)
        s.sendall(('GET /v1/events%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n'
                   % (query, tok or c.admin_token)).encode())
        data = b''
        while b'\r\n\r\n' not in data or b'\n\n' not in data.split(b'\r\n\r\n', 1)[1]:
            d = s.recv(65536)
            if not d:
                break
            data += d
        return s, data

    s, data = open_stream('?after=0&kinds=job.submitted')
    head, body = data.split(b'\r\n\r\n', 1)
    lines = head.decode().split('\r\n')
    st = int(lines[0].split()[1])
    hdrs = {k.lower(): v.strip() for k, v in (ln.split(':', 1) for ln in lines[1:])}
    # the first chunk: its size line, then a whole message
    first = body.split(b'\r\n', 1)[1].split(b'\n\n', 1)[0] + b'\n\n'
    for p in SPEC.check_response('GET', '/v1/events', st, hdrs, first):
        cc.problem('GET /v1/events: %s' % p)
    cc.seen.setdefault('streamEvents', set()).add(st)
    cc.expect(st == 200 and hdrs.get('content-type') == 'text/event-stream', 'events: %d %s' % (st, hdrs))
    s.close()
    cc('GET', '/v1/events?after=-1', expect=400)
    cc('GET', '/v1/events?kinds=A', expect=400)
    cc('GET', '/v1/events?job=999999999', expect=404)
    cc('GET', '/v1/events', token='', expect=401)
    held = []
    tok = spec_check.sql_token(c, 'admin')  # a fresh token: no stream of it is open
    for _ in range(8):  # --sse-max-per-token
        held.append(open_stream(tok=tok)[0])
    st, hdrs, _ = cc('GET', '/v1/events', token=tok, expect=429)
    cc.expect('retry-after' in hdrs, 'events 429 without Retry-After')
    for s in held:
        s.close()
def test_history(c):
    """GET /v1/history (sacct): a window, filters, the cursor, bad values."""
    cc = client(c)
    cc('GET', '/v1/history', expect=200)
    cc('GET', '/v1/history?start=2026-01-01T00:00:00Z&end=2030-01-01T00:00:00Z&state=COMPLETED,FAILED'
       '&user=alice&tenant=vision&job=1,2&limit=5', expect=200)
    cc('GET', '/v1/history?cursor=1.1', expect=200)
    for bad in ('start=yesterday', 'state=RUNNING', 'job=x', 'cursor=12', 'limit=0',
                'start=2030-01-01T00:00:00Z&end=2026-01-01T00:00:00Z', 'colour=red'):
        cc('GET', '/v1/history?' + bad, expect=400)
    cc('GET', '/v1/history', token='', expect=401)


def test_jobs_control(c):
    """hold, release, requeue and PATCH (docs/api.md "Changing jobs"), with ETag / If-Match."""
    need('holdJob', 'releaseJob', 'requeueJob', 'updateJob')
    cc = client(c)
    st, h, b = cc('POST', '/v1/jobs', job_body(tenant='vision', hold=True,
                                               begin='2030-01-31T08:00:00Z'), expect=201)
    j = b['id']
    check_eq((b['held'], b['pending_reason'], b['begin']), (True, 'Held', '2030-01-31T08:00:00.000Z'))
    etag = h.get('etag')
    cc('POST', '/v1/jobs', job_body(tenant='vision', begin='soon'), expect=400)
    st, h, b = cc('PATCH', '/v1/jobs/%d' % j, {'time_limit': '2:00:00', 'labels': {'stage': 'eval'}},
                  headers={'If-Match': etag}, expect=200)
    check_eq(b['time_limit'], 7200)
    cc('PATCH', '/v1/jobs/%d' % j, {'time_limit': 60}, headers={'If-Match': etag}, expect=412,
       what='stale version')
    cc('PATCH', '/v1/jobs/%d' % j, {'nodes': 0}, expect=400)
    cc('PATCH', '/v1/jobs/%d' % j, {'time_limit': 60}, token=S.get('other') or '', expect=(404, 401))
    cc('PATCH', '/v1/jobs/999999', {'time_limit': 60}, expect=404)
    st, _, b = cc('POST', '/v1/jobs/%d/hold' % j, expect=200)
    st, _, b = cc('POST', '/v1/jobs/%d/release' % j, expect=200)
    check_eq((b['held'], b['pending_reason']), (False, 'BeginTime'))
    cc('POST', '/v1/jobs/%d/hold' % j, headers={'If-Match': etag}, expect=412)
    cc('POST', '/v1/jobs/%d/release' % j, headers={'If-Match': etag}, expect=412)
    cc('POST', '/v1/jobs/%d/requeue' % j, expect=409, what='pending')
    cc('POST', '/v1/jobs/999999/hold', expect=404)
    cc('POST', '/v1/jobs/999999/release', expect=404)
    cc('POST', '/v1/jobs/999999/requeue', expect=404)
    # a running job (the scheduler is played here: a run row, as test_running_job does)
    c.sql("UPDATE jobs SET state = 'RUNNING', started_at = now() WHERE id = $1;"
          " INSERT INTO runs (job_id, attempt, epoch, nodes, gpus_per_node, time_limit, state)"
          " VALUES ($1::bigint, 1, 1, 1, 1, 60, 'RUNNING')", j)
    st, h, b = cc('POST', '/v1/jobs/%d/requeue' % j, expect=200)
    check_eq(c.sql_value("SELECT stop_reason FROM runs WHERE job_id = $1 AND live", j), 'requeue')
    cc('PATCH', '/v1/jobs/%d' % j, {'time_limit': 60}, expect=409, what='not pending')
    cc('POST', '/v1/jobs/%d/hold' % j, expect=409, what='running')
    cc('POST', '/v1/jobs/%d/cancel' % j, expect=200)


def test_settings(c):
    need('getSettings', 'updateSettings')
    cc = client(c)
    st, _, b = cc('GET', '/v1/settings', expect=200)
    cc('GET', '/v1/settings', token='', expect=401)
    cc('PATCH', '/v1/settings', {'reservation_depth': 2}, expect=200)
    cc('PATCH', '/v1/settings', {'reservation_depth': -2}, expect=400)
    cc('PATCH', '/v1/settings', {'nope': 1}, expect=400)
    if S.get('vision'):
        cc('PATCH', '/v1/settings', {'reservation_depth': 2}, token=S['vision'], expect=403)
    cc('PATCH', '/v1/settings', {'reservation_depth': b.get('reservation_depth', 1)}, expect=200)


def test_zz_every_routed_operation_answered(c):
    cc = client(c)
    missing = []
    for op in SPEC.ops:
        if (op.method, op.template) not in ROUTES:
            continue
        if not any(s // 100 == 2 for s in cc.seen.get(op.id, ())):
            missing.append(op.id)
    if missing:
        cc.problem('operations never answered with a 2xx: %s' % ', '.join(missing))
    no_error = [op.id for op in SPEC.ops if (op.method, op.template) in ROUTES and not op.public
                and not any(s // 100 == 4 for s in cc.seen.get(op.id, ()))]
    if no_error:
        cc.problem('operations never exercised on an error path: %s' % ', '.join(no_error))
    unrouted = [o.id for o in SPEC.ops if (o.method, o.template) not in ROUTES]
    if unrouted:
        print('not exercised (no route yet): %s' % ', '.join(unrouted))
    if cc.problems:
        raise harness.CheckFailed('%d contract problems:\n  %s'
                                  % (len(cc.problems), '\n  '.join(cc.problems)))
    print('contract: %d operations answered, all responses conform'
          % sum(1 for o in cc.seen if any(s // 100 == 2 for s in cc.seen[o])))


if __name__ == '__main__':
    for b in ('muster-devdb', 'muster-api'):
        if not harness.binary(b):
            print('SKIP: %s is not built' % b)
            sys.exit(harness.SKIP)
    harness.main(api=True)
