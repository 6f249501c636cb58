#!/usr/bin/python3
"""bench/history: `muster history` (sacct) on a month of a million ended jobs.

Seeds 1,000,000 ended jobs spread evenly over October 2026 (a job every
2.6 s) in one tenant of a private PostgreSQL, starts muster-api, and times
(wall clock, best of 5):
  - GET /v1/history, one day's window, the first page of 1,000
  - the same window, a page deep in it (cursor after 20,000 jobs)
  - GET /v1/history, the whole month, the last page (cursor near the end)
  - `muster history -S ... -E ...` of one day (~33,000 jobs, 34 pages) to /dev/null
and prints EXPLAIN of the page query (an index scan on jobs_ended_at_id).

usage: bench/history/run.py BUILD_DIR      (about 1 minute; a quiet machine)
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "integration"))
os.environ.setdefault("MUSTER_BUILD_DIR", os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build"))
import harness  # noqa: E402

N = 1000000


def best(fn, n=5):
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    with harness.Cluster(api=False) as c:
        c.sql("INSERT INTO tenants (name, parent_id, path) SELECT 'bench', id, path || '/bench'"
              " FROM tenants WHERE name = 'root'")
        t0 = time.perf_counter()
        c.sql("INSERT INTO jobs (tenant_id, user_name, name, priority_class_id, state, nodes,"
              " gpus_per_node, time_limit, exit_code, end_reason, created_at, started_at, ended_at)"
              " SELECT (SELECT id FROM tenants WHERE name = 'bench'), 'u' || mod(g, 50), 'j' || g,"
              "  (SELECT id FROM priority_classes ORDER BY id LIMIT 1), 'COMPLETED', 1, 8, 3600, 0,"
              "  'completed', t - interval '1 hour', t - interval '30 minutes', t"
              " FROM generate_series(0, %d) g, LATERAL (SELECT timestamptz '2026-10-01 00:00:00+00'"
              "  + g * interval '2678 milliseconds' AS t) x" % (N - 1))
        c.sql("ANALYZE jobs")
        print("seeded %d ended jobs in %.1f s" % (N, time.perf_counter() - t0))
        c.start_api()

        def get(q):
            r = urllib.request.Request(c.api_url + "/v1/history?" + q,
                                       headers={"Authorization": "Bearer " + c.admin_token})
            with urllib.request.urlopen(r, timeout=60) as f:
                return json.load(f)

        day = "start=2026-10-15T00:00:00Z&end=2026-10-16T00:00:00Z&limit=1000"
        first = get(day)
        assert len(first["items"]) == 1000
        page = get(day)
        for _ in range(20):
            page = get(day + "&cursor=" + page["next_cursor"])
        deep = page["next_cursor"]
        month = "start=2026-10-01T00:00:00Z&end=2026-11-01T00:00:00Z&limit=1000"
        last_id = c.sql_value("SELECT max(id) FROM jobs")
        last_us = c.sql_value("SELECT (extract(epoch FROM ended_at) * 1000000)::bigint FROM jobs"
                              " WHERE id = $1::bigint - 500", last_id)
        tail = "%s.%d" % (last_us, int(last_id) - 500)
        r = {
            "day, first page": best(lambda: get(day)),
            "day, page 21": best(lambda: get(day + "&cursor=" + deep)),
            "month, last page": best(lambda: get(month + "&cursor=" + tail)),
            "month, user filter (u7), first page": best(lambda: get(month + "&user=u7")),
        }
        env = dict(os.environ, MUSTER_URL=c.api_url, MUSTER_TOKEN=c.admin_token, TZ="UTC")
        cli = harness.binary("muster")

        def cli_day():
            subprocess.run([cli, "history", "-S", "2026-10-15T00:00", "-E", "2026-10-16T00:00",
                            "-P", "-n"], env=env, stdout=subprocess.DEVNULL, check=True)
        rows = subprocess.run([cli, "history", "-S", "2026-10-15T00:00", "-E", "2026-10-16T00:00",
                               "-P", "-n"], env=env, capture_output=True, text=True,
                              check=True).stdout.count("\n")
        r["muster history, one day (%d jobs)" % rows] = best(cli_day, 3)
        for k, v in r.items():
            print("%-45s %8.3f s" % (k, v))
        plan = c.sql("EXPLAIN SELECT j.id FROM jobs j WHERE j.ended_at IS NOT NULL"
                     " AND j.ended_at >= '2026-10-15' AND j.ended_at < '2026-10-16'"
                     " AND (j.ended_at, j.id) > ('2026-10-15 05:00', 0) ORDER BY j.ended_at, j.id LIMIT 1001")
        print("\n".join(row[0] for row in plan))


if __name__ == "__main__":
    main()
