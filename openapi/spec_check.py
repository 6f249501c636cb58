"""spec_check - openapi/muster.yaml as a test oracle (standard library + Debian
python3-yaml and python3-jsonschema only).

    spec = Spec.load()                      # the YAML next to this file
    op = spec.operation('GET', '/v1/jobs/12')
    problems = spec.check_response('GET', '/v1/jobs/12', 200, headers, body)

`$ref`s are resolved here by inlining components (the spec has no recursive
schemas); bodies are validated with Draft 2020-12 plus a strict RFC 3339
`date-time` format check. Used by tests/integration/test_contract.py,
test_bad_requests.py, test_isolation.py and test_routes_spec.py.
"""
import copy
import json
import os
import re

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
METHODS = ('get', 'put', 'post', 'delete', 'patch', 'head', 'options')
PROBLEM_BASE = 'https://muster.dev/problems/'

_RFC3339 = re.compile(
    r'^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)'
    r'(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$')

FORMATS = jsonschema.FormatChecker(formats=())


@FORMATS.checks('date-time')
def _is_datetime(value):
    return not isinstance(value, str) or bool(_RFC3339.match(value))


@FORMATS.checks('int64')
def _is_int64(value):
    return not isinstance(value, int) or -(1 << 63) <= value < (1 << 63)


class _Loader(yaml.SafeLoader):
    """Keeps YAML timestamps as strings, as openapi/gen_blob.py does."""


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != 'tag:yaml.org,2002:timestamp']
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(path):
    with open(path, encoding='utf-8') as f:
        return yaml.load(f, Loader=_Loader)


def _pointer(doc, ref):
    if not ref.startswith('#/'):
        raise ValueError('only local $refs are supported: %s' % ref)
    node = doc
    for part in ref[2:].split('/'):
        node = node[part.replace('~1', '/').replace('~0', '~')]
    return node


def inline_refs(doc, node, seen=()):
    """A deep copy of `node` with every $ref replaced by its target."""
    if isinstance(node, dict):
        if '$ref' in node:
            ref = node['$ref']
            if ref in seen:
                raise ValueError('recursive $ref %s' % ref)
            target = inline_refs(doc, _pointer(doc, ref), seen + (ref,))
            rest = {k: inline_refs(doc, v, seen) for k, v in node.items() if k != '$ref'}
            if not rest:
                return target
            return {'allOf': [target], **rest}
        return {k: inline_refs(doc, v, seen) for k, v in node.items()}
    if isinstance(node, list):
        return [inline_refs(doc, v, seen) for v in node]
    return copy.deepcopy(node)


def _declared(schema):
    """(properties, has a schema for other keys) of an object schema, through
    allOf/oneOf/anyOf branches."""
    props, open_map = {}, False
    if not isinstance(schema, dict):
        return props, True
    props.update(schema.get('properties', {}))
    ap = schema.get('additionalProperties')
    if isinstance(ap, dict) or ap is True:
        open_map = True
    for key in ('allOf', 'oneOf', 'anyOf'):
        for sub in schema.get(key, []):
            p, o = _declared(sub)
            for k, v in p.items():
                props.setdefault(k, v)
            open_map = open_map or o
    return props, open_map


def _branches(schema):
    out = [schema]
    for key in ('allOf', 'oneOf', 'anyOf'):
        for sub in schema.get(key, []):
            out += _branches(sub)
    return out


def undocumented(schema, value, path=''):
    """Keys of `value` (recursively) that the schema does not declare: the
    server sends something the spec does not describe."""
    out = []
    if not isinstance(schema, dict):
        return out
    if isinstance(value, dict):
        props, open_map = _declared(schema)
        if not props and not open_map and not any('properties' in b for b in _branches(schema)):
            return out  # a free-form object (e.g. event data)
        for k, v in value.items():
            if k in props:
                out += undocumented(props[k], v, path + '/' + k)
            elif not open_map:
                out.append(path + '/' + k)
    elif isinstance(value, list):
        items = [b.get('items') for b in _branches(schema) if isinstance(b.get('items'), dict)]
        for i, v in enumerate(value):
            for it in items[:1]:
                out += undocumented(it, v, '%s/%d' % (path, i))
    return out


def _schema_has_path(schema, parts):
    if not parts:
        return True
    head, rest = parts[0], parts[1:]
    for b in _branches(schema):
        if head in b.get('properties', {}) and _schema_has_path(b['properties'][head], rest):
            return True
        ap = b.get('additionalProperties')
        if isinstance(ap, dict) and _schema_has_path(ap, rest):
            return True
        if head.isdigit() and isinstance(b.get('items'), dict) and _schema_has_path(b['items'], rest):
            return True
    return False


class Operation:
    def __init__(self, method, template, raw, resolved):
        self.method = method.upper()
        self.template = template
        self.raw = raw
        self.op = resolved
        self.id = raw.get('operationId', '%s %s' % (self.method, template))
        self.public = resolved.get('security') == []
        self._parts = template.strip('/').split('/')

    def match(self, path):
        parts = path.split('?', 1)[0].strip('/').split('/')
        if len(parts) != len(self._parts):
            return None
        params = {}
        literal = 0
        for want, got in zip(self._parts, parts):
            if want.startswith('{') and want.endswith('}'):
                if not got:
                    return None
                params[want[1:-1]] = got
            elif want != got:
                return None
            else:
                literal += 1
        return literal, params

    def response(self, status):
        rs = self.op.get('responses', {})
        for key in (str(status), '%dXX' % (status // 100), 'default'):
            if key in rs:
                return rs[key]
        return None

    def field_known(self, field):
        """Whether a problem's `field` names an input of this operation: a
        parameter (query, header, path) or a dotted path into the request body
        (`jobs.17.nodes`, `env.FOO`)."""
        names = {p['name'] for p in self.op.get('parameters', [])}
        if field in names:
            return True
        schema = self.request_schema()
        if schema is None:
            return False
        return _schema_has_path(schema, field.split('.'))

    def request_schema(self, content_type='application/json'):
        body = self.op.get('requestBody')
        if not body:
            return None
        media = body.get('content', {}).get(content_type)
        return media.get('schema') if media else None


class Spec:
    def __init__(self, doc):
        self.doc = doc
        self.ops = []
        for template, item in doc['paths'].items():
            shared = item.get('parameters', [])
            for method in METHODS:
                if method not in item:
                    continue
                raw = item[method]
                resolved = inline_refs(doc, raw)
                resolved['parameters'] = inline_refs(doc, shared) + resolved.get('parameters', [])
                self.ops.append(Operation(method, template, raw, resolved))
        self._validators = {}

    @classmethod
    def load(cls, path=None):
        return cls(load_yaml(path or os.path.join(HERE, 'muster.yaml')))

    def problem_slugs(self):
        prop = self.doc['components']['schemas']['Problem']['properties']['type']
        return list(prop['x-muster-slugs'])

    def operation(self, method, path):
        """The operation serving `method path` (most literal segments win), or None."""
        best = None
        for op in self.ops:
            if op.method != method.upper():
                continue
            m = op.match(path)
            if m and (best is None or m[0] > best[0]):
                best = (m[0], op)
        return best[1] if best else None

    def path_known(self, path):
        return any(op.match(path) for op in self.ops)

    def validator(self, schema):
        key = json.dumps(schema, sort_keys=True)
        v = self._validators.get(key)
        if v is None:
            jsonschema.Draft202012Validator.check_schema(schema)
            v = jsonschema.Draft202012Validator(schema, format_checker=FORMATS)
            self._validators[key] = v
        return v

    def schema_errors(self, schema, value):
        errs = sorted(self.validator(schema).iter_errors(value), key=lambda e: list(e.absolute_path))
        return ['%s: %s' % ('/'.join(str(p) for p in e.absolute_path) or '(root)', e.message)
                for e in errs[:5]]

    def check_request(self, method, path, body):
        """Problems with a request body the server accepted (the spec must allow it)."""
        op = self.operation(method, path)
        if op is None:
            return ['%s %s: no such operation in the spec' % (method, path)]
        schema = op.request_schema()
        if schema is None:
            return [] if body is None else ['%s: the spec declares no request body' % op.id]
        if body is None and not op.op['requestBody'].get('required', False):
            return []
        return ['%s request: %s' % (op.id, e) for e in self.schema_errors(schema, body)]

    def check_response(self, method, path, status, headers, body):
        """Problems with one real response (empty list = it conforms).

        headers: mapping with lowercase names; body: bytes."""
        op = self.operation(method, path)
        where = '%s %s -> %d' % (method, path, status)
        if op is None:
            # an unknown path (404) or a known path with another method (405):
            # no operation, but still a problem document
            if (status == 404 and not self.path_known(path)) or status == 405:
                return self._check_problem(where, status, headers, body)
            return ['%s: no operation in the spec' % where]
        resp = op.response(status)
        if resp is None:
            return ['%s: status %d is not declared for %s' % (where, status, op.id)]
        content = resp.get('content')
        ctype = (headers.get('content-type') or '').split(';')[0].strip().lower()
        if not content:
            if body:
                return ['%s: %s declares no body, got %d bytes' % (where, op.id, len(body))]
            return []
        if ctype not in content:
            return ['%s: content type %r not declared (want one of %s)'
                    % (where, ctype, ', '.join(content))]
        schema = content[ctype].get('schema')
        if ctype.endswith('json'):
            try:
                value = json.loads(body.decode('utf-8'))
            except (UnicodeDecodeError, ValueError) as e:
                return ['%s: body is not JSON: %s' % (where, e)]
            problems = ['%s: %s' % (where, e) for e in self.schema_errors(schema, value)] if schema else []
            if schema:
                extra = undocumented(schema, value)
                if extra:
                    problems.append('%s: fields the spec does not declare: %s'
                                    % (where, ', '.join(extra[:10])))
            if ctype == 'application/problem+json' and isinstance(value, dict):
                if value.get('status') != status:
                    problems.append('%s: problem status %r != HTTP status' % (where, value.get('status')))
                f = value.get('field')
                if f is not None and value.get('type', '').endswith('/unknown-field'):
                    f = f.rpartition('.')[0] or None  # the unknown key's parent must exist
                if f is not None and status != 405 and not op.field_known(f):
                    problems.append('%s: problem field %r names no input of %s' % (where, f, op.id))
            return problems
        if schema and schema.get('type') == 'string':
            try:
                body.decode('utf-8')
            except UnicodeDecodeError:
                return ['%s: text body is not UTF-8' % where]
        return []

    def _check_problem(self, where, status, headers, body):
        ctype = (headers.get('content-type') or '').split(';')[0].strip().lower()
        if ctype != 'application/problem+json':
            return ['%s: content type %r, want application/problem+json' % (where, ctype)]
        try:
            value = json.loads(body.decode('utf-8'))
        except (UnicodeDecodeError, ValueError) as e:
            return ['%s: body is not JSON: %s' % (where, e)]
        schema = inline_refs(self.doc, {'$ref': '#/components/schemas/Problem'})
        out = ['%s: %s' % (where, e) for e in self.schema_errors(schema, value)]
        if isinstance(value, dict) and value.get('status') != status:
            out.append('%s: problem status %r != HTTP status' % (where, value.get('status')))
        return out

    def examples(self):
        """(where, schema, value) for every example of a media type, to self-check the spec."""
        out = []
        for op in self.ops:
            places = []
            body = op.op.get('requestBody')
            if body:
                places += [('%s request %s' % (op.id, ct), m) for ct, m in body.get('content', {}).items()]
            for code, resp in op.op.get('responses', {}).items():
                places += [('%s %s %s' % (op.id, code, ct), m) for ct, m in resp.get('content', {}).items()]
            for where, media in places:
                schema = media.get('schema')
                for name, ex in (media.get('examples') or {}).items():
                    if schema is not None and 'value' in ex:
                        out.append(('%s example %s' % (where, name), schema, ex['value']))
        return out


def read_routes(path):
    """(METHOD, pattern, roles) of every REST_ROUTE row of api/routes.def."""
    rows = []
    row = re.compile(r'^\s*REST_ROUTE\(\s*([A-Z]+)\s*,\s*"([^"]*)"\s*,\s*(\w+)\s*,\s*([^,]+?)\s*,')
    with open(path, encoding='utf-8') as f:
        text = f.read()
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    for line in text.splitlines():
        m = row.match(line)
        if m:
            rows.append((m.group(1), m.group(2), m.group(4)))
        elif 'REST_ROUTE(' in line:
            raise ValueError('routes.def: cannot parse %r' % line)
    return rows


def read_error_slugs(path):
    """Problem type slugs of common/error.h's MU_ERRORS table, in order."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    return re.findall(r'X\(\s*\w+\s*,\s*-?\d+\s*,\s*\d+\s*,\s*\d+\s*,\s*"([a-z0-9-]+)"', text)


def body_bytes(body):
    """The harness's parsed body back to bytes for validation."""
    if body is None:
        return b''
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode('utf-8')
    return json.dumps(body).encode('utf-8')


class CheckedClient:
    """Wraps a harness Cluster's api(): every response is checked against the
    spec (declared status, content type, body schema), every accepted request
    body against the request schema; problems are collected, not raised, so
    one run lists them all. `expect` (a status or a tuple) is checked too."""

    def __init__(self, cluster, spec):
        self.c = cluster
        self.spec = spec
        self.problems = []
        self.seen = {}  # operation id -> set of statuses

    def __call__(self, method, path, body=None, token=None, headers=None, raw=None, expect=None,
                 what=''):
        st, hdrs, b = self.c.api(method, path, body=body, token=token, headers=headers, raw=raw)
        label = '%s %s%s' % (method, path[:120], (' [%s]' % what) if what else '')
        for p in self.spec.check_response(method, path.split('?', 1)[0], st, hdrs, body_bytes(b)):
            self.problems.append('%s: %s' % (label, p))
        if st // 100 == 2 and raw is None and method in ('POST', 'PUT', 'PATCH'):
            for p in self.spec.check_request(method, path.split('?', 1)[0], body):
                self.problems.append('%s: accepted, but %s' % (label, p))
        op = self.spec.operation(method, path.split('?', 1)[0])
        if op is not None:
            self.seen.setdefault(op.id, set()).add(st)
        if expect is not None:
            want = expect if isinstance(expect, tuple) else (expect,)
            if st not in want:
                self.problems.append('%s: status %d, want %s; body %.300s'
                                     % (label, st, '/'.join(map(str, want)), body_bytes(b)))
        return st, hdrs, b

    def problem(self, msg):
        self.problems.append(msg)

    def expect(self, cond, msg):
        if not cond:
            self.problems.append(msg)
        return cond


# ---- test fixtures made with SQL, so a test does not depend on the admin
# routes to get tenants and tokens (tokens are stored as SHA-256 of the
# secret, as store/store_auth.c does).

def sql_fixtures(c, tenants=(), tokens=None):
    """Creates tenants [(name, parent)] (in order) and tokens {key: dict(role,
    tenant=None, user='', node=None, revoked=False, expired=False)} directly in
    the database, in one psql call; returns {key: secret}. Make revoked or
    expired tokens before their first use: the API may cache a token it has
    already accepted."""
    import hashlib
    import secrets
    stmts, params, out = [], [], {}

    def p(v):
        params.append(v)
        return '$%d' % len(params)
    for name, parent in tenants:
        n = p(name)
        stmts.append("INSERT INTO tenants (name, parent_id, path) SELECT %s, id, path || '/' || %s "
                     "FROM tenants WHERE name = %s;" % (n, n, p(parent)))
    for key, t in (tokens or {}).items():
        secret = 'mst_' + secrets.token_urlsafe(32)[:43]
        out[key] = secret
        stmts.append(
            "INSERT INTO api_tokens (name, secret_sha256, prefix, role, tenant_id, user_name, node_name, "
            "revoked_at, expires_at) VALUES (%s, %s, %s, %s, (SELECT id FROM tenants WHERE name = %s), "
            "%s, %s, CASE WHEN %s::boolean THEN now() END, "
            "CASE WHEN %s::boolean THEN now() - interval '1 hour' END);"
            % (p('test-' + key), p(hashlib.sha256(secret.encode()).hexdigest()), p(secret[:8]),
               p(t['role']), p(t.get('tenant')), p(t.get('user', '')), p(t.get('node')),
               p(bool(t.get('revoked'))), p(bool(t.get('expired')))))
    if stmts:
        c.sql('\n'.join(stmts), *params)
    return out


def sql_tenant(c, name, parent='root'):
    sql_fixtures(c, tenants=[(name, parent)])


def sql_token(c, role, tenant=None, user='', node=None, revoked=False, expired=False):
    return sql_fixtures(c, tokens={'t': dict(role=role, tenant=tenant, user=user, node=node,
                                             revoked=revoked, expired=expired)})['t']


SNAPSHOT_TABLES = {
    'tenants': 'SELECT id, name, parent_id, path, shares, description, updated_at FROM tenants',
    'quotas': 'SELECT * FROM quotas',
    'priority_classes': 'SELECT * FROM priority_classes',
    'api_tokens': 'SELECT id, name, secret_sha256, role, tenant_id, user_name, node_name, expires_at, '
                  'revoked_at FROM api_tokens',
    'jobs': 'SELECT * FROM jobs',
    'runs': 'SELECT * FROM runs',
    'events': 'SELECT * FROM events',
    'nodes': 'SELECT id, name, drain, drain_reason, labels, up FROM nodes',
    'settings': 'SELECT * FROM settings',
}


def db_snapshot(c):
    """{table: (row count, md5 of all rows)} of the tables an API request may change
    (token last_used_at excluded: using a token may stamp it)."""
    parts = ["SELECT '%s', count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) "
             "FROM (%s) x" % (t, q) for t, q in SNAPSHOT_TABLES.items()]
    return {r[0]: (r[1], r[2]) for r in c.sql(' UNION ALL '.join(parts))}
