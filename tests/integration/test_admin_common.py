"""test_admin_common.py - helpers the test_admin_*.py files share (not a test itself).

snapshot(c)   -> the admin tables' contents (tenants, quotas, priority_classes,
                 api_tokens without last_used_at, nodes, gpus, events, jobs), to prove a
                 refused request changed nothing.
expect_problem(c, method, path, body, status, slug, field=None, token=None, raw=None)
              -> sends the request, checks status, problem type and field, and that the
                 database is unchanged (snapshots before and after); returns the body.
make_job(c, tenant, state="PENDING", pclass="normal") -> job id inserted by SQL (the
                 admin tests need jobs without depending on the jobs endpoints).
"""
import subprocess

import harness
from harness import check, check_eq

PROBLEM = "https://muster.dev/problems/"

SNAP_QUERIES = [
    "SELECT id, name, parent_id, path, shares, description, updated_at FROM tenants ORDER BY id",
    "SELECT * FROM quotas ORDER BY tenant_id, gpu_model",
    "SELECT * FROM priority_classes ORDER BY id",
    "SELECT id, name, secret_sha256, role, tenant_id, user_name, node_name, expires_at, revoked_at"
    " FROM api_tokens ORDER BY id",
    "SELECT id, name, drain, drain_reason, up, updated_at FROM nodes ORDER BY id",
    "SELECT node_id, idx, healthy FROM gpus ORDER BY node_id, idx",
    "SELECT id, kind, tenant_id, node_id, reason, data::text FROM events ORDER BY id",
    "SELECT id, tenant_id, state FROM jobs ORDER BY id",
]


def snapshot(c):
    """One psql run (the Perl wrapper /usr/bin/psql costs ~0.1 s a call on a busy box)."""
    psql = "/usr/lib/postgresql/15/bin/psql"
    import os
    if not os.path.exists(psql):
        psql = "psql"
    text = ";\n".join("SELECT %d, md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')), count(*) FROM (%s) x"
                      % (i, q) for i, q in enumerate(SNAP_QUERIES)) + ";\n"
    r = subprocess.run([psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", c.db_url],
                       input=text.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    check_eq(r.returncode, 0, r.stderr.decode())
    return r.stdout.decode()


# Any request or SQL outside expect_problem may change the database, so it
# forgets the last snapshot; a run of refused requests then costs one snapshot
# each instead of two.
_api, _sql = harness.Cluster.api, harness.Cluster.sql


def _forget_api(self, *a, **k):
    self._admin_snap = None
    return _api(self, *a, **k)


def _forget_sql(self, *a, **k):
    self._admin_snap = None
    return _sql(self, *a, **k)


harness.Cluster.api = _forget_api
harness.Cluster.sql = _forget_sql


def expect_problem(c, method, path, body, status, slug, field=None, token=None, raw=None,
                   headers=None):
    before = getattr(c, "_admin_snap", None) or snapshot(c)
    st, hdr, b = _api(c, method, path, body, token=token, raw=raw, headers=headers)
    after = snapshot(c)
    c._admin_snap = after
    what = "%s %s %r -> %s %r" % (method, path, body if raw is None else raw, st, b)
    check_eq(st, status, what)
    check(isinstance(b, dict), "problem body", what)
    check("problem+json" in hdr.get("content-type", ""), "content type", what)
    if slug is not None:
        check_eq(b.get("type"), PROBLEM + slug, what)
    check_eq(b.get("status"), status, what)
    if field is not None:
        check_eq(b.get("field"), field, what)
    check(after == before, "the database changed after a refused request:", what, before, after)
    return b


def make_job(c, tenant, state="PENDING", pclass="normal"):
    return int(c.sql_value(
        "INSERT INTO jobs (tenant_id, priority_class_id, state, nodes, gpus_per_node, time_limit,"
        " command) SELECT t.id, p.id, $3, 1, 1, 60, '[\"true\"]'::jsonb FROM tenants t,"
        " priority_classes p WHERE t.name = $1 AND p.name = $2 RETURNING id",
        tenant, pclass, state))


def events(c, kind):
    return c.sql("SELECT tenant_id, node_id, reason, data::text FROM events WHERE kind = $1"
                 " ORDER BY id", kind)


def walk(c, path, token=None, limit=1):
    """Follows next_cursor through a collection; returns all items."""
    items, cursor, pages = [], None, 0
    while True:
        q = "%s?limit=%d" % (path, limit)
        if cursor is not None:
            import urllib.parse
            q += "&cursor=" + urllib.parse.quote(cursor, safe="")
        st, _, b = c.api("GET", q, token=token)
        check_eq(st, 200, q, b)
        check(len(b["items"]) <= limit, "page over the limit", b)
        items += b["items"]
        cursor = b["next_cursor"]
        pages += 1
        check(pages < 1000, "cursor loop")
        if cursor is None:
            return items
