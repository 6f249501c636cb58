#!/usr/bin/python3
"""Tenant isolation and roles, against the running muster-api.

Tenant `a` (with child `a-sub`) and tenant `b` each own jobs and tokens.
A's tokens, against every endpoint that touches B's resources (jobs get,
cancel, explain, list and its filters, dependencies, idempotency keys,
tenants, quotas, tokens), get 404 or an empty list and never one byte of B's
data; an operation closed to A's role answers the same for B's resource and
for one that does not exist (existence is not leaked). Readers cannot write
anything; agents cannot use REST beyond GET /v1/whoami and their own node.
Every response is also validated against openapi/muster.yaml.
"""
import json
import os
import sys

import harness
from harness import check, check_eq

sys.path.insert(0, os.path.join(harness.SOURCE_DIR, 'openapi'))
import spec_check  # noqa: E402

SPEC = spec_check.Spec.load()
ROUTE_ROWS = spec_check.read_routes(os.path.join(harness.SOURCE_DIR, 'api', 'routes.def'))
ROUTES = {(m, p) for m, p, _ in ROUTE_ROWS}
S = {}


def routed(method, path):
    op = SPEC.operation(method, path.split('?', 1)[0])
    return op is not None and (op.method, op.template) in ROUTES


def job(**kw):
    b = {'nodes': 1, 'gpus_per_node': 1, 'command': ['python', 'train.py']}
    b.update(kw)
    return b


def setup(c):
    if S.get('ready'):
        return S['cc']
    check(not S, 'setup failed in an earlier test')
    check(routed('POST', '/v1/jobs'), 'no route in api/routes.def for POST /v1/jobs')
    S.update(spec_check.sql_fixtures(
        c, tenants=[('a', 'root'), ('a-sub', 'a'), ('b', 'root')],
        tokens={'a': dict(role='tenant', tenant='a', user='alice'),
                'asub': dict(role='tenant', tenant='a-sub', user='sam'),
                'b': dict(role='tenant', tenant='b', user='bob'),
                'a_reader': dict(role='reader', tenant='a', user='ann'),
                'reader': dict(role='reader'),
                'agent': dict(role='agent', node='n1')}))
    c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name IN ('a', 'b');"
          "INSERT INTO nodes (name, gpu_count) VALUES ('n1', 0), ('n2', 0)")
    S['b_token_id'] = int(c.sql_value("SELECT id FROM api_tokens WHERE name = 'test-b'"))
    cc = S['cc'] = spec_check.CheckedClient(c, SPEC)

    def submit(tok, **kw):
        st, _, b = cc('POST', '/v1/jobs', job(**kw), token=tok, expect=201)
        check_eq(st, 201, b)
        return b['id']
    S['b_job'] = submit(S['b'], name='b-secret-job', labels={'owner': 'b'}, env={'B_SECRET': 's3cr3t'})
    S['b_job2'] = submit(S['b'], name='b-other', labels={'owner': 'b'})
    S['a_job'] = submit(S['a'], name='a-job', labels={'owner': 'a'})
    S['asub_job'] = submit(S['asub'], name='a-sub-job')
    st, _, b = cc('POST', '/v1/jobs', job(name='b-idem'), token=S['b'],
                  headers={'Idempotency-Key': 'shared-key'}, expect=201)
    S['b_idem'] = b['id']
    S['ready'] = True
    return cc


def no_b_data(cc, what, body):
    text = json.dumps(body)
    for needle in ('b-secret-job', 'b-other', 'b-idem', 's3cr3t', '"bob"', '"owner": "b"'):
        cc.expect(needle not in text, '%s leaks B data (%s): %.300s' % (what, needle, text))


def test_jobs(c):
    cc = setup(c)
    cc.problems = []
    a, b_job = S['a'], S['b_job']
    snapshot = spec_check.db_snapshot(c)
    for path in ('/v1/jobs/%d' % b_job, '/v1/jobs/%d/explain' % b_job):
        if routed('GET', path):
            st, _, body = cc('GET', path, token=a, expect=404, what='A reads B job')
            no_b_data(cc, path, body)
    st, _, body = cc('POST', '/v1/jobs/%d/cancel' % b_job, token=a, expect=404, what='A cancels B job')
    no_b_data(cc, 'cancel', body)
    for q in ('', '?tenant=b', '?user=bob', '?label=owner=b', '?state=PENDING', '?limit=1000',
              '?tenant=a', '?limit=1'):
        st, _, body = cc('GET', '/v1/jobs' + q, token=a, expect=(200, 404), what='A lists' + q)
        if st == 200:
            ids = {j['id'] for j in body['items']}
            cc.expect(not ids & {b_job, S['b_job2'], S['b_idem']}, 'A sees B jobs in /v1/jobs%s' % q)
            cc.expect(all(j['tenant'] in ('a', 'a-sub') for j in body['items']),
                      'A sees foreign tenants in /v1/jobs%s' % q)
        no_b_data(cc, 'list' + q, body)
    # A's list shows its subtree; a-sub does not see its parent's jobs
    st, _, body = cc('GET', '/v1/jobs', token=a, expect=200)
    cc.expect({S['a_job'], S['asub_job']} <= {j['id'] for j in body['items']}, 'A misses its subtree')
    cc('GET', '/v1/jobs/%d' % S['a_job'], token=S['asub'], expect=404, what='child reads parent job')
    cc('GET', '/v1/jobs/%d' % S['asub_job'], token=a, expect=200, what='parent reads child job')
    # a job's events are that job's only
    st, _, body = cc('GET', '/v1/jobs/%d' % S['a_job'], token=a, expect=200)
    if st == 200:
        want = c.sql("SELECT id FROM events WHERE job_id = $1 ORDER BY id", S['a_job'])
        check_eq(sorted(e['id'] for e in body['events']), [int(r[0]) for r in want], 'events of A job')
        no_b_data(cc, 'A job detail', body)
    # writes that name B
    cc('POST', '/v1/jobs', job(tenant='b'), token=a, expect=404, what='A submits into B')
    cc('POST', '/v1/jobs', job(dependencies=[{'type': 'afterany', 'job_id': b_job}]), token=a,
       expect=404, what='A depends on B job')
    if routed('POST', '/v1/jobs/batch'):
        cc('POST', '/v1/jobs/batch', {'jobs': [job(), job(tenant='b')]}, token=a, expect=404,
           what='A batch into B')
    if routed('POST', '/v1/jobs/dry-run'):
        cc('POST', '/v1/jobs/dry-run', job(tenant='b'), token=a, expect=404, what='A dry-runs in B')
    check_eq(spec_check.db_snapshot(c), snapshot, 'A changed something of B')
    check_eq(c.sql_value('SELECT state FROM jobs WHERE id = $1', b_job), 'PENDING')
    # idempotency keys are per tenant: A's use of B's key is a new A job
    st, _, body = cc('POST', '/v1/jobs', job(name='a-idem'), token=a,
                     headers={'Idempotency-Key': 'shared-key'}, expect=201, what='A reuses B key')
    if st == 201:
        check(body['id'] != S['b_idem'] and body['tenant'] == 'a', body)
    check(not cc.problems, '\n'.join(cc.problems))


def test_tenants_quotas_tokens(c):
    cc = setup(c)
    cc.problems = []
    a = S['a']
    if routed('GET', '/v1/tenants'):
        st, _, body = cc('GET', '/v1/tenants', token=a, expect=200)
        if st == 200:
            check_eq(sorted(t['name'] for t in body['items']), ['a', 'a-sub'], 'A sees its subtree only')
        cc('GET', '/v1/tenants/b', token=a, expect=404)
        cc('GET', '/v1/tenants/root', token=a, expect=404)
        cc('GET', '/v1/tenants/a-sub', token=a, expect=200)
        cc('GET', '/v1/tenants/a', token=S['asub'], expect=404, what='child reads parent')
    if routed('GET', '/v1/tenants/b/quota'):
        cc('GET', '/v1/tenants/b/quota', token=a, expect=404)
        cc('GET', '/v1/tenants/a/quota', token=a, expect=200)
    if routed('GET', '/v1/quotas'):
        st, _, body = cc('GET', '/v1/quotas', token=a, expect=200)
        if st == 200:
            check_eq(sorted(q['tenant'] for q in body['items']), ['a'], 'A sees only its quotas')
    if routed('GET', '/v1/tokens'):
        st, _, body = cc('GET', '/v1/tokens', token=a, expect=200)
        if st == 200:
            cc.expect(all(t['tenant'] in ('a', 'a-sub') for t in body['items']),
                      'A lists foreign tokens: %s' % [t['tenant'] for t in body['items']])
            cc.expect(all('token' not in t for t in body['items']), 'secrets listed')
        cc('GET', '/v1/tokens/%d' % S['b_token_id'], token=a, expect=404)
        cc('DELETE', '/v1/tokens/%d' % S['b_token_id'], token=a, expect=404)
        cc('POST', '/v1/tokens', {'role': 'tenant', 'tenant': 'b'}, token=a, expect=404)
        st, _, body = cc('POST', '/v1/tokens', {'role': 'reader'}, token=a, expect=(201, 403, 404),
                         what='A mints a reader without naming a tenant')
        if st == 201:
            cc.expect(body['tenant'] == 'a', 'A minted a reader outside its subtree: %s' % body)
        st, _, _ = cc('GET', '/v1/whoami', token=S['b'], expect=200, what='B token still works')
    # operations closed to a tenant: the same answer for B's resource and a missing one
    for method, tmpl, roles in ROUTE_ROWS:
        if 'ADMIN' not in roles.split('|')[0] or '{name}' not in tmpl or not tmpl.startswith('/v1/tenants'):
            continue
        body = {} if method in ('PUT', 'PATCH') else None
        st1, _, b1 = cc(method, tmpl.replace('{name}', 'b'), body, token=a, expect=(403, 404))
        st2, _, b2 = cc(method, tmpl.replace('{name}', 'nosuch'), body, token=a, expect=(403, 404))
        t1 = b1.get('type') if isinstance(b1, dict) else b1
        t2 = b2.get('type') if isinstance(b2, dict) else b2
        cc.expect(st1 == st2 and t1 == t2,
                  '%s %s leaks existence: %d vs %d' % (method, tmpl, st1, st2))
    check(not cc.problems, '\n'.join(cc.problems))


def fill(tmpl):
    if tmpl.startswith('/v1/jobs/'):
        return tmpl.replace('{id}', str(S['a_job']))
    if tmpl.startswith('/v1/tokens/'):
        return tmpl.replace('{id}', str(S['b_token_id']))
    if tmpl.startswith('/v1/tenants/'):
        return tmpl.replace('{name}', 'a')
    if tmpl.startswith('/v1/priority-classes/'):
        return tmpl.replace('{name}', 'normal')
    if tmpl.startswith('/v1/nodes/'):
        return tmpl.replace('{name}', 'n2')
    return tmpl


def test_readers_cannot_write(c):
    cc = setup(c)
    cc.problems = []
    snapshot = spec_check.db_snapshot(c)
    n = 0
    for op in SPEC.ops:
        if op.method == 'GET' or op.public or (op.method, op.template) not in ROUTES:
            continue
        body = job() if 'jobs' in op.template else ({} if op.request_schema() else None)
        for who in ('reader', 'a_reader'):
            cc(op.method, fill(op.template), body, token=S[who], expect=403, what=who)
            n += 1
    check(n > 0, 'no write operation routed')
    check_eq(spec_check.db_snapshot(c), snapshot, 'a reader changed the database')
    # a scoped reader reads its subtree only; the global reader reads all
    cc('GET', '/v1/jobs/%d' % S['b_job'], token=S['a_reader'], expect=404)
    cc('GET', '/v1/jobs/%d' % S['a_job'], token=S['a_reader'], expect=200)
    cc('GET', '/v1/jobs/%d' % S['b_job'], token=S['reader'], expect=200)
    check(not cc.problems, '\n'.join(cc.problems))


def test_agents_have_no_rest(c):
    cc = setup(c)
    cc.problems = []
    snapshot = spec_check.db_snapshot(c)
    n = 0
    for op in SPEC.ops:
        if op.public or op.id == 'whoami' or (op.method, op.template) not in ROUTES:
            continue
        path = fill(op.template)
        if op.id == 'getNode':
            cc('GET', op.template.replace('{name}', 'n1'), token=S['agent'], expect=200, what='own node')
            cc('GET', path, token=S['agent'], expect=(403, 404), what='other node')
            continue
        body = job() if op.request_schema() and 'jobs' in op.template else (
            {} if op.request_schema() else None)
        cc(op.method, path, body, token=S['agent'], expect=403, what='agent')
        n += 1
    check(n > 0, 'no operation routed')
    cc('GET', '/v1/whoami', token=S['agent'], expect=200)
    check_eq(spec_check.db_snapshot(c), snapshot, 'an agent changed the database')
    check(not cc.problems, '\n'.join(cc.problems))


if __name__ == '__main__':
    for b in ('muster-devdb', 'muster-api'):
        if not harness.binary(b):
            print('SKIP: %s is not built' % b)
            sys.exit(harness.SKIP)
    harness.main(api=True)
