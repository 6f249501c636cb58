"""Keyset pagination while other clients insert: a reader paging GET /v1/jobs
never sees a job twice and never skips one that exists below its cursor
(API-CORE)."""
import threading

import harness
from harness import check, check_eq
from test_jobs_common import job, tenant


def test_pages_under_concurrent_inserts(c):
    tenant(c, "pg")
    st, _, r = c.api("POST", "/v1/jobs/batch", {"jobs": [job("pg") for _ in range(300)]})
    check_eq(st, 201, r)
    stop = threading.Event()
    errors = []

    def writer(n):
        while not stop.is_set():
            if n % 2:
                st, _, b = c.api("POST", "/v1/jobs", job("pg"))
            else:
                st, _, b = c.api("POST", "/v1/jobs/batch", {"jobs": [job("pg")] * 7})
            if st != 201:
                errors.append((st, b))

    writers = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
    for w in writers:
        w.start()
    try:
        for rnd in range(4):
            seen, cursor, pages = [], None, 0
            while True:
                path = "/v1/jobs?tenant=pg&limit=37" + ("&cursor=" + cursor if cursor else "")
                st, _, page = c.api("GET", path)
                check_eq(st, 200, page)
                seen += [x["id"] for x in page["items"]]
                cursor = page["next_cursor"]
                pages += 1
                if cursor is None or pages > 200:
                    break
            check_eq(len(seen), len(set(seen)), "a job was listed twice")
            check_eq(seen, sorted(seen), "ids not ascending")
            # every job that exists up to the last id seen was seen
            below = [int(x[0]) for x in c.sql(
                "SELECT j.id FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
                " WHERE t.name = 'pg' AND j.id <= $1 ORDER BY j.id", seen[-1])]
            check_eq(below, seen[:len(below)], "a job was skipped")
            check_eq(len(below), len(seen))
    finally:
        stop.set()
        for w in writers:
            w.join()
    check_eq(errors, [])
    for bad in ["abc", "-1", "99999999999999999999999", "1.5"]:
        st, _, p = c.api("GET", "/v1/jobs?cursor=" + bad)
        check_eq(st, 400, bad, p)
        check_eq(p["field"], "cursor", bad)


if __name__ == "__main__":
    harness.main(api=True)
