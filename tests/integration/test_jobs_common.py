"""Helpers shared by the jobs integration tests (API-CORE). Tenants and tokens
are made in SQL so these tests depend on no other area's endpoint."""

import hashlib
import json
import secrets


def tenant(c, name, parent="root", max_pending=None, max_time=None):
    """Creates tenant `name` under `parent` (SQL); optionally a quota."""
    c.sql("INSERT INTO tenants (name, parent_id, path)"
          " SELECT $1, id, path || '/' || $1 FROM tenants WHERE name = $2", name, parent)
    if max_pending is not None or max_time is not None:
        c.sql("INSERT INTO quotas (tenant_id, max_pending_jobs, max_time_limit)"
              " SELECT id, $2::int, $3::int FROM tenants WHERE name = $1",
              name, max_pending, max_time)


def token(c, role, tenant_name=None, user=""):
    """A live token (SQL insert of its hash); returns the secret."""
    secret = "mst_" + secrets.token_urlsafe(32)[:43]
    sha = hashlib.sha256(secret.encode()).hexdigest()
    c.sql("INSERT INTO api_tokens (name, secret_sha256, prefix, role, tenant_id, user_name)"
          " VALUES ('test', $1, $2, $3, (SELECT id FROM tenants WHERE name = $4), $5)",
          sha, secret[:12], role, tenant_name, user)
    return secret


def job(tenant_name=None, **over):
    b = {"nodes": 1, "gpus_per_node": 1, "command": ["true"]}
    if tenant_name:
        b["tenant"] = tenant_name
    b.update(over)
    return b


def count_jobs(c, where="true", *params):
    return int(c.sql_value("SELECT count(*) FROM jobs WHERE " + where, *params))


def dumps(b):
    return json.dumps(b, separators=(",", ":"))
