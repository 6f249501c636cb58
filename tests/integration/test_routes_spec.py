#!/usr/bin/python3
"""The route table and the OpenAPI spec agree, and the spec checks itself.

- every REST_ROUTE row of api/routes.def is an operation of openapi/muster.yaml
  (method + path) and every operation of the spec has a row (no operation is
  marked as planned: an `x-muster-*` marker on an operation fails);
- a REST_PUBLIC route is `security: []` in the spec and the other way round;
  an authenticated operation declares 401, one closed to some role 403;
- every example in the spec validates against its schema;
- the Problem `type` list is exactly common/error.h's slug table;
- every error response is application/problem+json with the Problem schema;
- every request object schema refuses unknown fields;
- the JSON the build embeds (MUSTER_BUILD_DIR/openapi/openapi.json) is the YAML.
No server needed.
"""
import json
import os
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'openapi'))
import spec_check  # noqa: E402

SPEC = spec_check.Spec.load()
ROUTES = spec_check.read_routes(os.path.join(ROOT, 'api', 'routes.def'))
ALL_ROLES = ('REST_ANYONE',)
class RoutesAgree(unittest.TestCase):
    def test_every_route_is_in_the_spec(self):
        missing = []
        for method, pattern, roles in ROUTES:
            op = next((o for o in SPEC.ops if o.method == method and o.template == pattern), None)
            if op is None:
                missing.append('%s %s' % (method, pattern))
        self.assertEqual(missing, [], 'routes.def rows missing from openapi/muster.yaml')

    def test_every_operation_has_a_route(self):
        rows = {(m, p) for m, p, _ in ROUTES}
        missing = [o.id + ' (%s %s)' % (o.method, o.template) for o in SPEC.ops
                   if (o.method, o.template) not in rows]
        self.assertEqual(missing, [], 'spec operations without a routes.def row')

    def test_no_planned_markers(self):
        marked = ['%s: %s' % (o.id, k) for o in SPEC.ops for k in o.raw if k.startswith('x-muster-')]
        self.assertEqual(marked, [], 'operations marked as planned: ship them or take them out')

    def test_no_duplicate_routes(self):
        seen = [(m, p) for m, p, _ in ROUTES]
        self.assertEqual(len(seen), len(set(seen)), 'duplicate routes.def rows')

    def test_auth_agrees(self):
        bad = []
        for method, pattern, roles in ROUTES:
            op = next((o for o in SPEC.ops if o.method == method and o.template == pattern), None)
            if op is None:
                continue
            public = roles.split('|')[0].strip() == 'REST_PUBLIC'
            if public != op.public:
                bad.append('%s: route %s but spec security %s' % (op.id, roles, op.op.get('security')))
            codes = op.op.get('responses', {})
            if not public and '401' not in codes:
                bad.append('%s: authenticated but no 401 declared' % op.id)
            if not public and roles.split('|')[0].strip() not in ALL_ROLES and '403' not in codes:
                bad.append('%s: closed to some roles (%s) but no 403 declared' % (op.id, roles))
        self.assertEqual(bad, [])


class SpecSelfCheck(unittest.TestCase):
    def test_examples_validate(self):
        bad = []
        for where, schema, value in SPEC.examples():
            errs = SPEC.schema_errors(schema, value)
            if errs:
                bad.append('%s: %s' % (where, errs))
        self.assertEqual(bad, [])
        self.assertGreater(len(SPEC.examples()), 40)

    def test_every_operation_has_an_example(self):
        bad = []
        for op in SPEC.ops:
            ok = [c for c, r in op.op['responses'].items() if c.startswith('2')]
            for code in ok:
                for ct, media in op.op['responses'][code].get('content', {}).items():
                    if not media.get('examples'):
                        bad.append('%s %s %s' % (op.id, code, ct))
            body = op.op.get('requestBody')
            for ct, media in (body or {}).get('content', {}).items():
                if not media.get('examples'):
                    bad.append('%s request %s' % (op.id, ct))
        self.assertEqual(bad, [])

    def test_problem_slugs_are_error_h(self):
        slugs = spec_check.read_error_slugs(os.path.join(ROOT, 'common', 'error.h'))
        self.assertGreater(len(slugs), 10)
        self.assertEqual(sorted(SPEC.problem_slugs()), sorted(slugs))
        pattern = SPEC.doc['components']['schemas']['Problem']['properties']['type']['pattern']
        for s in slugs:
            self.assertIn('|%s|' % s, '|' + pattern.split('(')[1].split(')')[0] + '|')

    def test_errors_are_problems(self):
        problem = SPEC.doc['components']['schemas']['Problem']
        bad = []
        for op in SPEC.ops:
            for code, resp in op.op['responses'].items():
                if code[0] in '45':
                    content = resp.get('content', {})
                    if list(content) != ['application/problem+json'] or \
                            content['application/problem+json'].get('schema') != problem:
                        bad.append('%s %s' % (op.id, code))
        self.assertEqual(bad, [])

    def test_request_objects_are_closed(self):
        bad = []

        def walk(where, s):
            if isinstance(s, dict):
                if s.get('type') == 'object' or 'properties' in s:
                    if 'properties' in s and s.get('additionalProperties') is not False:
                        bad.append(where)
                for k, v in s.items():
                    walk(where + '/' + k, v)
            elif isinstance(s, list):
                for i, v in enumerate(s):
                    walk('%s/%d' % (where, i), v)
        for op in SPEC.ops:
            schema = op.request_schema()
            if schema:
                walk(op.id, schema)
        self.assertEqual(bad, [])

    def test_operation_ids_unique(self):
        ids = [o.id for o in SPEC.ops]
        self.assertEqual(len(ids), len(set(ids)))

    def test_generator_refuses_non_json_yaml(self):
        import subprocess
        import tempfile
        gen = os.path.join(ROOT, 'openapi', 'gen_blob.py')
        with tempfile.TemporaryDirectory() as d:
            def run(text):
                src = os.path.join(d, 'in.yaml')
                with open(src, 'w') as f:
                    f.write(text)
                return subprocess.run([sys.executable, gen, src, os.path.join(d, 'o.json'),
                                       os.path.join(d, 'o.c')], capture_output=True, text=True)
            r = run('a: 1\n200: x\n')
            self.assertNotEqual(r.returncode, 0, 'an integer key must be refused')
            self.assertIn('quote it', r.stdout + r.stderr)
            r = run('when: 2026-11-30\nset: !!set {a}\n')
            self.assertNotEqual(r.returncode, 0, 'a non-JSON value must be refused')
            r = run("v: '3.1.0'\nd: 2026-11-30\nu: caf\u00e9\n")
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(d, 'o.json'), 'rb') as f:
                data = f.read()
            self.assertEqual(json.loads(data), {'v': '3.1.0', 'd': '2026-11-30', 'u': 'caf\u00e9'})
            with open(os.path.join(d, 'o.c')) as f:
                c = f.read()
            self.assertIn('mu_openapi_json_len = %d;' % len(data), c)

    def test_embedded_json_is_the_yaml(self):
        build = os.environ.get('MUSTER_BUILD_DIR')
        if not build:
            self.skipTest('MUSTER_BUILD_DIR not set')
        path = os.path.join(build, 'openapi', 'openapi.json')
        with open(path, 'rb') as f:
            self.assertEqual(json.loads(f.read().decode('utf-8')), SPEC.doc)


if __name__ == '__main__':
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful() or result.skipped:
        sys.exit(1)
