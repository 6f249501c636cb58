"""GET /v1/events (server-sent events) without a browser, and CORS: resume
by Last-Event-ID / ?after with every event exactly once and in order (also
across the switch from the table to the live buffer), tenant scope, filters,
heartbeats, overflow of a client that stops reading, the per-token and
global caps, and the CORS allow-list. A real muster-api and PostgreSQL; a
small buffer (200 events) so that resumes really read the table."""

import json
import socket
import subprocess
import threading
import time

import harness
from harness import check, check_eq
from test_jobs_common import job, tenant, token

ENV = {"MUSTER_EVENTS_BUFFER": "200", "MUSTER_SSE_MAX_STREAMS": "40",
       "MUSTER_SSE_MAX_PER_TOKEN": "20", "MUSTER_SSE_HEARTBEAT": "1",
       "MUSTER_CORS_ORIGINS": "http://allowed.example:8000, https://two.example"}


class SSE:
    """A raw HTTP/1.1 SSE client: chunked decoding and the event format."""

    def __init__(self, c, query="", token=None, last_id=None, rcvbuf=None, timeout=20,
                 expect=200):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", c.http_port))
        h = ["GET /v1/events%s HTTP/1.1" % query, "Host: 127.0.0.1",
             "Accept: text/event-stream",
             "Authorization: Bearer %s" % (token or c.admin_token)]
        if last_id is not None:
            h.append("Last-Event-ID: %s" % last_id)
        self.sock.sendall(("\r\n".join(h) + "\r\n\r\n").encode())
        self.raw = b""
        self.body = b""
        self.closed = False
        while b"\r\n\r\n" not in self.raw:
            self._recv()
        head, self.raw = self.raw.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.lower(): v.strip() for k, v in
                        (ln.split(":", 1) for ln in lines[1:])}
        self.chunked = "chunked" in self.headers.get("transfer-encoding", "")
        self.comments = []
        if expect is not None and self.status != expect:
            self.sock.close()
            raise harness.CheckFailed("GET /v1/events%s: %d, want %d" % (query, self.status, expect))

    def _recv(self):
        d = self.sock.recv(65536)
        if not d:
            self.closed = True
            raise EOFError("stream closed")
        self.raw += d

    def _dechunk(self):
        while True:
            if not self.chunked:
                self.body += self.raw
                self.raw = b""
                return
            i = self.raw.find(b"\r\n")
            if i < 0:
                return
            n = int(self.raw[:i].split(b";")[0], 16)
            if n == 0:
                self.closed = True
                self.raw = b""
                return
            if len(self.raw) < i + 2 + n + 2:
                return
            self.body += self.raw[i + 2:i + 2 + n]
            self.raw = self.raw[i + 2 + n + 2:]

    def event(self, within=None):
        """The next event as a dict (id, event, data parsed); comments are kept.
        within: seconds, else socket.timeout (heartbeats do not count)."""
        deadline = time.monotonic() + within if within else None
        while True:
            if deadline and time.monotonic() > deadline:
                raise socket.timeout("no event within %s s" % within)
            self._dechunk()
            while b"\n\n" in self.body:
                block, self.body = self.body.split(b"\n\n", 1)
                ev = {}
                for ln in block.decode().split("\n"):
                    if ln.startswith(":"):
                        self.comments.append(ln)
                        continue
                    k, _, v = ln.partition(":")
                    ev[k] = v[1:] if v.startswith(" ") else v
                if "data" in ev:
                    ev["data"] = json.loads(ev["data"])
                    ev["id"] = int(ev["id"])
                    return ev
            if self.closed:
                raise EOFError("stream closed")
            self._recv()

    def events(self, n):
        return [self.event() for _ in range(n)]

    def until(self, pred, limit=100000):
        got = []
        while True:
            e = self.event()
            got.append(e)
            if pred(e):
                return got
            check(len(got) < limit, "no matching event in %d" % limit)

    def close(self):
        self.sock.close()


def submit(c, tname, n=1, tok=None):
    if n == 1:
        st, _, b = c.api("POST", "/v1/jobs", job(tname), token=tok)
        check_eq(st, 201, b)
        return [b["id"]]
    st, _, b = c.api("POST", "/v1/jobs/batch", {"jobs": [job(tname) for _ in range(n)]}, token=tok)
    check_eq(st, 201, b)
    return [x["id"] for x in b["items"]]


def max_event(c):
    return int(c.sql_value("SELECT coalesce(max(id), 0) FROM events"))


def settled(c, upto):
    """Waits until the API's event reader has read up to id `upto`."""
    s = SSE(c, "?after=%d" % (upto - 1))
    try:
        check_eq(s.status, 200)
        check_eq(s.event()["id"], upto)
    finally:
        s.close()


def test_bad_requests(c):
    tenant(c, "ev_bad")
    for q, field in [("?after=x", "after"), ("?after=-1", "after"), ("?job=0", "job"),
                     ("?kinds=Job!", "kinds"), ("?kinds=a,,b", "kinds"), ("?tenant=", "tenant"),
                     ("?nope=1", "nope")]:
        st, _, p = c.api("GET", "/v1/events" + q)
        check_eq(st, 400, q, p)
        check_eq(p["field"], field, q)
    st, _, p = c.api("GET", "/v1/events", headers={"Last-Event-ID": "12x"})
    check_eq(st, 400, p)
    check_eq(p["field"], "Last-Event-ID")
    st, _, _ = c.api("GET", "/v1/events", token="")
    check_eq(st, 401)
    st, _, _ = c.api("GET", "/v1/events", token="mst_wrong")
    check_eq(st, 401)
    other = token(c, "tenant", "ev_bad")
    jid = submit(c, "ev_bad")[0]
    tenant(c, "ev_bad2")
    t2 = token(c, "tenant", "ev_bad2")
    st, _, p = c.api("GET", "/v1/events?job=%d" % jid, token=t2)
    check_eq(st, 404, p)  # another tenant's job: as GET /v1/jobs/{id}
    s = SSE(c, "?job=%d" % jid, token=other)
    check_eq(s.status, 200)
    check_eq(s.headers["content-type"], "text/event-stream")
    check_eq(s.headers["cache-control"], "no-store")
    s.close()


def test_scope_and_filters(c):
    tenant(c, "ev_a")
    tenant(c, "ev_a_sub", parent="ev_a")
    tenant(c, "ev_b")
    ta, tb = token(c, "tenant", "ev_a"), token(c, "tenant", "ev_b")
    start = max_event(c)
    sa = SSE(c, "?after=%d" % start, token=ta)
    sb = SSE(c, "?after=%d" % start, token=tb)
    sadm = SSE(c, "?after=%d" % start)
    sk = SSE(c, "?after=%d&kinds=job.cancelled,node.custom" % start)
    st_ = SSE(c, "?after=%d&tenant=ev_a_sub" % start)
    ja = submit(c, "ev_a")[0]
    jsub = submit(c, "ev_a_sub")[0]
    jb = submit(c, "ev_b")[0]
    st, _, b = c.api("POST", "/v1/jobs/%d/cancel" % jb)
    check(st in (200, 202), st, b)
    # a node event (no job): admins only
    c.sql("INSERT INTO events (kind, reason) VALUES ('node.custom', 'test')")
    last = max_event(c)
    got_adm = sadm.until(lambda e: e["id"] == last)
    kinds = [(e["event"], e["data"].get("job_id")) for e in got_adm]
    check_eq(kinds, [("job.submitted", ja), ("job.submitted", jsub), ("job.submitted", jb),
                     ("job.cancelled", jb), ("node.custom", None)])
    for e in got_adm:
        check_eq(e["data"]["id"], e["id"])
        check_eq(e["data"]["kind"], e["event"])
        check("at" in e["data"] and "reason" in e["data"] and "data" in e["data"], e)
    got_a = sa.until(lambda e: e["data"].get("job_id") == jsub)
    check_eq([e["data"]["job_id"] for e in got_a], [ja, jsub])
    got_b = sb.until(lambda e: e["event"] == "job.cancelled")
    check_eq([e["data"]["job_id"] for e in got_b], [jb, jb])
    got_k = sk.events(2)
    check_eq([e["event"] for e in got_k], ["job.cancelled", "node.custom"])
    check_eq(st_.event()["data"]["job_id"], jsub)
    # nothing else reached the tenants: the next event each sees is its own
    ja2 = submit(c, "ev_a")[0]
    jb2 = submit(c, "ev_b")[0]
    check_eq(sa.event()["data"]["job_id"], ja2)
    check_eq(sb.event()["data"]["job_id"], jb2)
    # a tenant naming a tenant outside its scope sees nothing of it
    sx = SSE(c, "?after=%d&tenant=ev_b" % start, token=ta)
    try:
        e = sx.event(within=2.5)
        check(False, "tenant ev_a saw", e)
    except socket.timeout:
        pass
    check(any("heartbeat" in x for x in sx.comments), sx.comments)  # 1 s heartbeat
    for s in (sa, sb, sadm, sk, st_, sx):
        s.close()


def test_resume_1000_exactly_once(c):
    tenant(c, "ev_r")
    s = SSE(c)
    first = submit(c, "ev_r")[0]
    e = s.until(lambda e: e["data"].get("job_id") == first)[-1]
    last_id = e["id"]
    s.close()
    ids = submit(c, "ev_r", 1000)  # while disconnected: 1000 > the 200-event buffer
    more = []

    def later():  # more events while the resumed stream switches from table to live
        time.sleep(0.2)
        for _ in range(5):
            more.extend(submit(c, "ev_r", 10))

    t = threading.Thread(target=later)
    s = SSE(c, "?kinds=job.submitted", last_id=last_id)
    t.start()
    got = s.events(1000)
    t.join()
    got += s.events(50)
    s.close()
    check_eq([e["data"]["job_id"] for e in got], ids + more)
    evs = [e["id"] for e in got]
    check_eq(evs, sorted(set(evs)), "ids strictly ascending")
    check(evs[0] > last_id)
    # ?after= from the middle of the run gives the rest, the same way
    mid = got[499]["id"]
    s = SSE(c, "?after=%d&kinds=job.submitted" % mid)
    rest = s.events(550)
    s.close()
    check_eq([e["id"] for e in rest], evs[500:])


def test_overflow_then_resume(c):
    tenant(c, "ev_o")
    s = SSE(c, "?kinds=job.submitted", rcvbuf=4096)
    check_eq(s.status, 200)
    ids = submit(c, "ev_o", 3000)  # the client reads nothing meanwhile
    settled(c, max_event(c))
    s.sock.settimeout(20)
    got = []
    while True:
        e = s.event(within=20)
        if e["event"] == "overflow":
            break
        got.append(e)
        check(len(got) < 3000, "no overflow: the client took every event")
    check_eq(e["data"]["last_id"], e["id"])
    check(len(got) < 3000, "overflow came after every event", len(got))
    check_eq([x["data"]["job_id"] for x in got], ids[:len(got)])
    if got:
        check_eq(e["id"], got[-1]["id"])
    try:
        x = s.event()
        check(False, "an event after overflow", x)
    except EOFError:
        pass
    s.close()
    # resuming from the overflow's id gives the rest exactly once
    s = SSE(c, "?kinds=job.submitted", last_id=e["id"])
    rest = s.events(3000 - len(got))
    s.close()
    check_eq([x["data"]["job_id"] for x in got + rest], ids)


def hub_query(c):
    """The last statement of the API's event reader (its backend in pg_stat_activity)."""
    return c.sql_value("SELECT query FROM pg_stat_activity"
                       " WHERE application_name = 'muster-api:events' ORDER BY backend_start LIMIT 1") or ""


def test_idle_hub(c):
    """With no stream open the hub settles new ids without reading their rows (its last
    statement is the id scan); a stream opened later still starts at the newest settled
    event, never past an id still uncommitted (the gap rule), and one resumed from before
    the idle stretch replays every event exactly once from the table."""
    tenant(c, "ev_i")
    harness.wait_until(lambda: hub_query(c).startswith("SELECT id FROM events"), 15,
                       "the hub idle (every earlier stream freed)")
    before = max_event(c)
    ids = submit(c, "ev_i", 500)  # more than the 200-event buffer, nobody reading
    p = subprocess.Popen(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", c.db_url],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        # an event id drawn by a transaction still open: a gap below the next submit's
        p.stdin.write(b"BEGIN;\nINSERT INTO events (kind) VALUES ('test.gap') RETURNING id;\n")
        p.stdin.flush()
        gap_id = int(p.stdout.readline().decode().strip())
        after = submit(c, "ev_i")[0]
        time.sleep(0.3)  # the hub has seen the gap and waits (GAP_MS, 2 s)
        s = SSE(c)
        p.stdin.write(b"COMMIT;\n")
        p.stdin.close()
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    e = s.event()
    check_eq((e["id"], e["event"]), (gap_id, "test.gap"))
    e = s.event()
    check_eq(e["data"]["job_id"], after)
    check(not hub_query(c).startswith("SELECT id FROM events"), "the hub reads rows again")
    s.close()
    s = SSE(c, "?kinds=job.submitted", last_id=before)
    got = s.events(501)
    s.close()
    check_eq([x["data"]["job_id"] for x in got], ids + [after])
    evs = [x["id"] for x in got]
    check_eq(evs, sorted(set(evs)), "ids strictly ascending")


def test_caps(c):
    c.start_api(**dict(ENV, MUSTER_SSE_MAX_STREAMS="6", MUSTER_SSE_MAX_PER_TOKEN="3"))
    tenant(c, "ev_c")
    t1, t2, t3 = (token(c, "tenant", "ev_c") for _ in range(3))

    def opened(tok):
        s = SSE(c, token=tok, expect=None)
        return s if s.status == 200 else (s.close(), None)[1]

    held = []

    def fill():  # streams of earlier tests are freed within about a second
        x = opened(t1)
        if x:
            held.append(x)
        return len(held) == 3

    harness.wait_until(fill, 10, "three streams")
    st, h, p = c.api("GET", "/v1/events", token=t1)
    check_eq(st, 429, p)
    check(int(h["retry-after"]) > 0, h)
    check("this token" in p["detail"], p)
    held += [opened(t2), opened(t2), opened(t2)]
    check(all(held), "six streams")
    st, h, p = c.api("GET", "/v1/events", token=t3)
    check_eq(st, 429, p)
    check("server" in p["detail"], p)
    check("retry-after" in h, h)
    held.pop(0).close()  # a slot comes back when a client leaves
    s = harness.wait_until(lambda: opened(t3), 10, "a freed slot")
    held.append(s)
    for x in held:
        x.close()
    c.start_api(**ENV)


def test_cors(c):
    ok, bad = "http://allowed.example:8000", "http://evil.example"
    st, h, _ = c.api("OPTIONS", "/v1/jobs", token="",
                     headers={"Origin": ok, "Access-Control-Request-Method": "POST",
                              "Access-Control-Request-Headers": "authorization,content-type"})
    check_eq(st, 204)
    check_eq(h["access-control-allow-origin"], ok)
    check("POST" in h["access-control-allow-methods"] and "GET" in h["allow"], h)
    for name in ("Authorization", "Content-Type", "Idempotency-Key", "If-Match", "Last-Event-ID"):
        check(name in h["access-control-allow-headers"], name, h)
    # every /v1 route answers a preflight, its path parameters included
    for path in ("/v1/events", "/v1/jobs/12/cancel", "/v1/nodes/n1/drain", "/v1/scheduler",
                 "/v1/tenants/x/quota"):
        st, h, _ = c.api("OPTIONS", path, token="",
                         headers={"Origin": ok, "Access-Control-Request-Method": "GET"})
        check_eq(st, 204, path)
        check_eq(h.get("access-control-allow-origin"), ok, path)
    st, h, _ = c.api("OPTIONS", "/v1/jobs", token="",
                     headers={"Origin": bad, "Access-Control-Request-Method": "POST"})
    check_eq(st, 204)
    check("access-control-allow-origin" not in h, h)
    st, h, _ = c.api("OPTIONS", "/v1/nope", token="", headers={"Origin": ok})
    check_eq(st, 404)
    st, h, _ = c.api("GET", "/v1/jobs", headers={"Origin": "https://two.example"})
    check_eq(st, 200)
    check_eq(h["access-control-allow-origin"], "https://two.example")
    for name in ("Location", "Retry-After", "ETag"):
        check(name in h["access-control-expose-headers"], name, h)
    check("Origin" in h["vary"], h)
    st, h, _ = c.api("GET", "/v1/jobs", headers={"Origin": bad})
    check_eq(st, 200)
    check("access-control-allow-origin" not in h, h)
    st, h, _ = c.api("GET", "/v1/jobs", token="", headers={"Origin": ok})  # errors too
    check_eq(st, 401)
    check_eq(h["access-control-allow-origin"], ok)
    s = SSE(c)
    s.close()
    # a list with a non-origin in it stops the server at start
    p = c.start_process([harness.binary("muster-api")], name="api-badcors",
                        env={"MUSTER_CORS_ORIGINS": "allowed.example",
                             "MUSTER_HTTP_ADDR": "127.0.0.1:%d" % harness.free_port(),
                             "MUSTER_GRPC_ADDR": "off"})
    check_eq(p.wait(timeout=20), 2)


def test_ui_not_installed(c):
    st, h, p = c.api("GET", "/ui/", token="")
    check_eq(st, 404, p)
    check("MUSTER_UI_DIR" in p["detail"], p)
    check("default-src 'self'" in h["content-security-policy"], h)


if __name__ == "__main__":
    harness.main(api=True, api_env=dict(ENV, MUSTER_UI_DIR="/nonexistent"))
