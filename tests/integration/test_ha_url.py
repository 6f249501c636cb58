#!/usr/bin/python3
"""Multi-host database URLs, as `pg_autoctl show uri` prints them for a
replicated PostgreSQL (bench/ha/failover.py runs the real failover): the
first host is down, the second is the live primary. muster-devdb migrate
(key=value form), muster-api (URI form, with a write) and muster-scheduler
(key=value form, takes the lead) all connect through to the live host."""
import os
import urllib.parse

import harness
from harness import check, check_eq


def urls(c):
    q = urllib.parse.parse_qs(urllib.parse.urlparse(c.db_url).query)
    sock, port = q["host"][0], q["port"][0]
    dead = harness.free_port()  # nothing listens there
    kv = ("host=127.0.0.1,%s port=%d,%s dbname=muster user=postgres target_session_attrs=read-write"
          % (sock, dead, port))
    uri = ("postgresql:///muster?host=127.0.0.1,%s&port=%d,%s&user=postgres&target_session_attrs=read-write"
           % (urllib.parse.quote(sock, safe="/"), dead, port))
    return kv, uri


def test_multi_host_urls():
    with harness.Cluster(migrate=False) as c:
        kv, uri = urls(c)
        import subprocess
        r = subprocess.run([harness.require_binary("muster-devdb"), "migrate", "--db", kv],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        check_eq(r.returncode, 0, r.stdout)
        check(int(c.sql_value("SELECT count(*) FROM schema_migrations")) > 0, "migrated")
        c.db_url = uri  # muster-api gets MUSTER_DATABASE_URL from here
        c.start_api()
        st, _, body = c.api("GET", "/readyz", token="")
        check_eq(st, 200, body)
        st, _, body = c.api("POST", "/v1/tenants", {"name": "ha-url", "parent": "root"})
        check_eq(st, 201, body)
        c.start_process(["muster-scheduler", "--db", kv], name="scheduler",
                        env={"MUSTER_DATABASE_URL": kv}, wait_for="leader: epoch=")


if __name__ == "__main__":
    harness.main()
