"""kill -9 muster-api in the middle of a submit stream: every job that got a
201 is in the database afterwards, and the API serves again on restart
(API-CORE)."""
import http.client
import json
import signal
import subprocess
import threading
import time

import harness
from harness import check, check_eq
from test_jobs_common import job


def test_kill9_during_submits(c):
    acked, lock, stop = [], threading.Lock(), threading.Event()

    def client(n):
        conn = None
        body = json.dumps(job("root", name="dur-%d" % n))
        while not stop.is_set():
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=10)
                conn.request("POST", "/v1/jobs", body=body,
                             headers={"Authorization": "Bearer " + c.admin_token,
                                      "Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                if resp.status == 201:
                    with lock:
                        acked.append(json.loads(data)["id"])
            except (OSError, http.client.HTTPException, ValueError):
                conn = None
                time.sleep(0.01)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    c.wait_until(lambda: len(acked) > 300, 60, "300 acknowledged submits")
    c.kill_api(signal.SIGKILL)
    n_at_kill = len(acked)
    time.sleep(0.3)
    stop.set()
    for t in threads:
        t.join()
    check(n_at_kill > 0)
    ids = set(acked)
    in_db = {int(r[0]) for r in c.sql("SELECT id FROM jobs")}
    missing = ids - in_db
    check_eq(sorted(missing), [], "acknowledged jobs lost")
    # each has its event row (same transaction)
    no_event = c.sql_value("SELECT count(*) FROM jobs j WHERE NOT EXISTS"
                           " (SELECT 1 FROM events e WHERE e.job_id = j.id)")
    check_eq(no_event, "0")
    c.start_api()
    st, _, j = c.api("POST", "/v1/jobs", job("root"))
    check_eq(st, 201, j)
    check(j["id"] > max(ids))


def test_database_restart_reconnects(c):
    """PostgreSQL goes away under a running muster-api: requests answer 503
    `unavailable` (never hang, never 201), /readyz says 503, and the pool
    reconnects by itself once the database is back."""
    st, _, j = c.api("POST", "/v1/jobs", job("root"))
    check_eq(st, 201, j)
    subprocess.run([c.devdb, "stop", "--dir", c.state_dir], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    try:
        for _ in range(3):
            st, _, p = c.api("POST", "/v1/jobs", job("root"), timeout=30)
            check_eq(st, 503, p)
            check_eq(p["type"], "https://muster.dev/problems/unavailable")
        check_eq(c.api("GET", "/readyz", token="")[0], 503)
        check_eq(c.api("GET", "/healthz", token="")[0], 200)
    finally:
        subprocess.run([c.devdb, "start", "--dir", c.state_dir], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    c.wait_until(lambda: c.api("POST", "/v1/jobs", job("root"))[0] == 201, 30, "reconnect")
    check_eq(c.api("GET", "/readyz", token="")[0], 200)
    check_eq(c.api("GET", "/v1/jobs/%d" % j["id"])[0], 200)


if __name__ == "__main__":
    harness.main(api=True)
