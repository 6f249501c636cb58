#!/usr/bin/python3
"""muster-api under abuse (issue 13, item 5): the gate before the body.

Raw sockets, so a test sees when the server answers: a refusal must come
after the headers alone, before any body byte is sent. Clients bind
127.0.0.x source addresses to play different hosts.
"""
import json
import os
import re
import select
import socket
import subprocess
import threading
import time

import harness
from harness import check, check_eq

MIB = 1 << 20


def connect(c, src="127.0.0.1"):
    s = socket.create_connection(("127.0.0.1", c.http_port), timeout=30,
                                 source_address=(src, 0))
    return s


def read_response(s, timeout=30):
    """(status, headers, body bytes) of one response read from s."""
    s.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a response: %r" % data[:200])
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    n = int(hdrs.get("content-length", "0"))
    while len(rest) < n:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, hdrs, rest[:n]


def head_bytes(method, path, token=None, length=None, extra=""):
    h = "%s %s HTTP/1.1\r\nHost: muster\r\n" % (method, path)
    if token:
        h += "Authorization: Bearer %s\r\n" % token
    if length is not None:
        h += "Content-Type: application/json\r\nContent-Length: %d\r\n" % length
    return (h + extra + "\r\n").encode()


def answered_before_body(c, method, path, token, length, src="127.0.0.1"):
    """Sends only the headers of a request announcing `length` body bytes;
    the server must answer without waiting for them."""
    s = connect(c, src)
    try:
        s.sendall(head_bytes(method, path, token, length))
        return read_response(s, timeout=10)
    finally:
        s.close()


def request(c, method, path, token=None, body=b"", src="127.0.0.1", sock=None):
    s = sock or connect(c, src)
    try:
        s.sendall(head_bytes(method, path, token, len(body) if body or method in ("POST", "PUT") else None) + body)
        return read_response(s)
    finally:
        if sock is None:
            s.close()


def metrics(c):
    st, _, text = c.api("GET", "/metrics", token="")
    check_eq(st, 200)
    out = {}
    for ln in text.splitlines():
        if ln and not ln.startswith("#"):
            k, _, v = ln.rpartition(" ")
            out[k] = float(v)
    return out


def api_pid(c):
    return c.api_proc.pid


def rss_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith(field + ":"):
                return int(ln.split()[1])
    raise RuntimeError(field)


def test_grpc_bogus_tokens_are_cached(c):
    from test_grpc_common import load, channel, md
    import grpc
    pb = load()
    stub = pb["jobs_grpc"].JobServiceStub(channel(c))
    J = pb["jobs"]
    before = metrics(c)
    for _ in range(20):
        try:
            stub.Get(J.GetJobRequest(job_id=1), metadata=md("mst_grpc_bogus"), timeout=10)
            check(False, "a bogus token was served")
        except grpc.RpcError as e:
            check_eq(e.code(), grpc.StatusCode.UNAUTHENTICATED)
    after = metrics(c)
    looked = after["muster_api_grpc_token_lookups_total"] - before["muster_api_grpc_token_lookups_total"]
    check(looked <= 2, "a repeated bogus gRPC token went to the database %d times" % looked)
    check_eq(after["muster_api_grpc_auth_failures_total"] - before["muster_api_grpc_auth_failures_total"], 20)


def test_grpc_and_rest_share_the_token_cache(c):
    """One auth function and one cache under both APIs: repeated gRPC calls
    with a valid token cost (about) one lookup, a REST request with that
    token right after costs none, and a revoke fails the token at once over
    gRPC on this replica."""
    from test_grpc_common import load, channel, md
    import grpc
    pb = load()
    stub = pb["jobs_grpc"].JobServiceStub(channel(c))
    J = pb["jobs"]
    tok = c.make_token("tenant", tenant="root", user="gina")
    before = metrics(c)
    for _ in range(30):
        r = stub.List(J.ListJobsRequest(page_size=1), metadata=md(tok), timeout=10)
        check(r is not None, "List answered")
    st, _, b = c.api("GET", "/v1/whoami", token=tok)
    check_eq((st, b["user"]), (200, "gina"), b)
    after = metrics(c)
    grpc_looked = (after["muster_api_grpc_token_lookups_total"]
                   - before["muster_api_grpc_token_lookups_total"])
    rest_looked = after["muster_api_token_lookups_total"] - before["muster_api_token_lookups_total"]
    print("token lookups: grpc %d for 30 calls, rest %d for 1 request" % (grpc_looked, rest_looked))
    # the cache keeps a token 2 s: 30 calls on a busy machine may span a few TTLs
    check(grpc_looked <= 5, "30 gRPC calls with one token went to the database %d times"
          % grpc_looked)
    check(rest_looked <= 1, "REST looked up a token gRPC had just cached (%d)" % rest_looked)
    st, _, b = c.api("GET", "/v1/tokens?limit=1000")
    tid = [t["id"] for t in b["items"] if t.get("user") == "gina"][0]
    admin = pb["admin_grpc"].AdminServiceStub(channel(c))
    A = pb["admin"]
    admin.RevokeToken(A.RevokeTokenRequest(id=tid), metadata=md(c.admin_token), timeout=10)
    try:
        stub.List(J.ListJobsRequest(page_size=1), metadata=md(tok), timeout=10)
        check(False, "a revoked token was served from the cache")
    except grpc.RpcError as e:
        check_eq(e.code(), grpc.StatusCode.UNAUTHENTICATED)
    st, _, _ = c.api("GET", "/v1/whoami", token=tok)
    check_eq(st, 401, "REST after a gRPC revoke")


# -- routing and limits from the headers alone ---------------------------------

def test_refusals_before_the_body(c):
    tok = c.make_token("tenant", tenant="root", user="alice")
    # unknown route, wrong method, no token, bad token: answered on headers
    st, h, b = answered_before_body(c, "POST", "/v1/nope", None, 60 * MIB)
    check_eq(st, 404, b)
    check_eq(json.loads(b)["type"], "https://muster.dev/problems/not-found")
    st, _, b = answered_before_body(c, "PUT", "/v1/jobs", tok, 60 * MIB)
    check_eq(st, 405, b)
    st, h, b = answered_before_body(c, "POST", "/v1/jobs/batch", None, 60 * MIB, "127.0.0.9")
    check_eq(st, 401, b)
    check("www-authenticate" in h, h)
    st, _, b = answered_before_body(c, "POST", "/v1/jobs", "mst_bogus", 100, "127.0.0.9")
    check_eq(st, 401, b)
    # per-route limits: 1 MiB on /v1/jobs, the batch route keeps 64 MiB
    st, _, b = answered_before_body(c, "POST", "/v1/jobs", tok, 2 * MIB)
    check_eq(st, 413, b)
    check_eq(json.loads(b)["type"], "https://muster.dev/problems/payload-too-large")
    st, _, b = answered_before_body(c, "POST", "/v1/jobs/batch", tok, 65 * MIB)
    check_eq(st, 413, b)
    # a 2 MiB batch body is read (and judged on its content)
    st, _, b = request(c, "POST", "/v1/jobs/batch", tok, b"[" + b" " * (2 * MIB) + b"]")
    check_eq(st, 400, b)
    # a valid token is served, on the same kept-alive connection too
    s = connect(c)
    try:
        for _ in range(3):
            st, _, b = request(c, "GET", "/v1/whoami", tok, sock=s)
            check_eq(st, 200, b)
            check_eq(json.loads(b)["user"], "alice")
        # a later request on that connection with a bad token: 401, closed
        st, h, b = request(c, "GET", "/v1/whoami", "mst_nope", sock=s)
        check_eq(st, 401, b)
        check_eq(h.get("connection"), "close")
    finally:
        s.close()


def test_unauthenticated_60mib_bodies_keep_rss_small(c):
    """Twelve clients each push a 60 MiB body with no valid token, all at
    once. Bound (docs/operations.md): muster-api's peak RSS grows by less
    than 32 MiB (before the gate it grew by ~490 MB)."""
    pid = api_pid(c)
    base = rss_kib(pid, "VmHWM")
    results = [None] * 12
    chunk = b"x" * MIB

    def blind(i):
        # sends all 60 MiB whatever the server says (as curl without
        # Expect does); the answer may then be lost to a reset
        s = connect(c, "127.0.0.%d" % (20 + i))
        try:
            s.sendall(head_bytes("POST", "/v1/jobs/batch", "mst_blind%d" % i, 60 * MIB))
            for _ in range(60):
                s.sendall(chunk)
            results[i] = read_response(s, timeout=10)[0]
        except OSError:
            results[i] = "reset"  # refused and closed while we still sent
        finally:
            s.close()

    def one(i):
        if i % 3 == 0:
            return blind(i)
        s = connect(c, "127.0.0.%d" % (20 + i))
        s.setblocking(False)
        token = "" if i % 2 else "mst_bogus%d" % i
        out = head_bytes("POST", "/v1/jobs/batch", token, 60 * MIB)
        sent = 0
        try:
            while True:
                r, w, _ = select.select([s], [s] if sent < 60 * MIB else [], [], 10)
                if r:
                    break
                if not w:
                    break
                try:
                    if out:
                        n = s.send(out)
                        out = out[n:]
                    else:
                        n = s.send(chunk)
                        sent += n
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    break
            s.setblocking(True)
            results[i] = read_response(s, timeout=10)[0]
        except OSError as e:
            results[i] = e
        finally:
            s.close()

    ts = [threading.Thread(target=one, args=(i,)) for i in range(12)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    check_eq([r for i, r in enumerate(results) if i % 3], [401] * 8)
    check(all(r in (401, "reset") for r in results), results)
    check(c.api_proc.poll() is None, "muster-api died")
    check_eq(c.api("GET", "/healthz", token="")[0], 200)
    grown = rss_kib(pid, "VmHWM") - base
    print("peak RSS grew by %d KiB" % grown)
    # Under AddressSanitizer freed memory sits in its quarantine (256 MiB by
    # default) instead of being reused, so peak RSS measures ASan, not
    # muster-api: there the bound is ASan's quarantine on top of ours.
    asan = b"__asan_init" in open(harness.binary("muster-api"), "rb").read()
    bound = 32 * 1024 + (256 * 1024 if asan else 0)
    check(grown < bound, "peak RSS grew by %d KiB (bound %d KiB)" % (grown, bound))


def test_auth_failures_are_cached_and_rate_limited(c):
    bogus = "mst_" + "q" * 43
    before = metrics(c)["muster_api_token_lookups_total"]
    # the same bogus token from ten addresses (five each, within their budgets)
    for i in range(50):
        st, _, b = request(c, "GET", "/v1/jobs", bogus, src="127.0.1.%d" % (i % 10 + 1))
        check_eq(st, 401, b)
    looked = metrics(c)["muster_api_token_lookups_total"] - before
    check(looked <= 2, "a repeated bogus token went to the database %d times" % looked)
    # one address spends its budget (50) on distinct bogus tokens: then 429
    statuses = []
    hdrs = None
    for i in range(75):
        st, h, _ = request(c, "GET", "/v1/jobs", "mst_flood%d" % i, src="127.0.2.1")
        statuses.append(st)
        if st == 429:
            hdrs = h
    check(statuses[:40] == [401] * 40, statuses)
    check(429 in statuses[50:], statuses)
    check(hdrs and int(hdrs["retry-after"]) >= 1, hdrs)
    # a missing token counts too
    st, _, _ = request(c, "GET", "/v1/jobs", None, src="127.0.2.1")
    check_eq(st, 429)
    # other addresses are unaffected; a token known to be valid still works
    # from the limited address (an unknown one waits for Retry-After: telling
    # it from a guess would take the query the limit saves)
    tok = c.make_token("reader", user="bob")
    st, _, b = request(c, "GET", "/v1/jobs", tok, src="127.0.2.2")
    check_eq(st, 200, b)
    st, _, b = request(c, "GET", "/v1/whoami", tok, src="127.0.2.1")
    check_eq(st, 200, b)
    m = metrics(c)
    check(m['muster_http_gate_refusals_total{reason="rate_limited"}'] >= 1, m)


def test_connection_caps(c):
    c.start_api(MUSTER_MAX_CONNS="6", MUSTER_MAX_CONNS_PER_ADDR="4")
    held = []
    try:
        for _ in range(4):
            s = connect(c, "127.0.3.1")
            check_eq(request(c, "GET", "/healthz", sock=s)[0], 200)
            held.append(s)
        st, h, b = request(c, "GET", "/healthz", src="127.0.3.1")
        check_eq(st, 503, b)
        check_eq(h.get("retry-after"), "1")
        for _ in range(2):
            s = connect(c, "127.0.3.2")
            check_eq(request(c, "GET", "/healthz", sock=s)[0], 200)
            held.append(s)
        st, h, b = request(c, "GET", "/healthz", src="127.0.3.3")
        check_eq(st, 503, b)
        check("retry-after" in h, h)
    finally:
        for s in held:
            s.close()
    c.wait_until(lambda: request(c, "GET", "/healthz", src="127.0.3.1")[0] == 200, 10,
                 "a connection slot freed")
    c.start_api()


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def test_bogus_token_flood_beside_a_legitimate_client(c):
    """A flood of distinct bogus tokens from one host (the issue's 1.6k/s)
    must leave a legitimate client's p99 within 2x of its quiet p99, both
    measured in this run, phases interleaved so machine load hits both."""
    tok = c.make_token("tenant", tenant="root", user="carol")
    st, _, job = c.api("POST", "/v1/jobs", {"tenant": "root", "nodes": 1, "gpus_per_node": 1,
                                            "command": ["true"]}, token=tok)
    check_eq(st, 201, job)
    path = "/v1/jobs/%d" % job["id"]
    legit = connect(c)
    stop = threading.Event()
    flooding = threading.Event()
    sent = [0]

    def flooder():
        n = 0
        while not stop.is_set():
            if not flooding.is_set():
                time.sleep(0.01)
                continue
            t0 = time.monotonic()
            for _ in range(16):   # 16 per 10 ms = 1.6k/s
                n += 1
                try:
                    request(c, "GET", "/v1/jobs", "mst_flood_%d" % n, src="127.0.4.1")
                    sent[0] += 1
                except OSError:
                    pass
            dt = time.monotonic() - t0
            if dt < 0.01:
                time.sleep(0.01 - dt)

    def sample(n):
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            st, _, b = request(c, "GET", path, tok, sock=legit)
            out.append(time.perf_counter() - t0)
            check_eq(st, 200, b)
        return out

    th = threading.Thread(target=flooder, daemon=True)
    th.start()
    # A p99 is the few slowest samples: on a shared machine one stall of
    # someone else's can land in either phase. A real regression fails
    # every attempt; three chances keep a stray stall from failing CI.
    results = []
    try:
        sample(50)  # warm
        for attempt in range(3):
            quiet, flood = [], []
            for _ in range(4):
                quiet += sample(150)
                flooding.set()
                time.sleep(0.2)
                flood += sample(150)
                flooding.clear()
                time.sleep(0.1)
            q, f = percentile(quiet, 0.99), percentile(flood, 0.99)
            results.append((q, f))
            print("legitimate p99: quiet %.2f ms, flood %.2f ms (ratio %.2f); flood sent %d"
                  % (q * 1e3, f * 1e3, f / q, sent[0]))
            if f <= 2 * q:
                break
    finally:
        stop.set()
        th.join(5)
        legit.close()
    check(sent[0] > 500, "the flood barely ran: %d" % sent[0])
    q, f = results[-1]
    check(f <= 2 * q, "p99 under flood %.2f ms > 2 x quiet %.2f ms in 3 attempts" % (f * 1e3, q * 1e3))


# -- tokens cannot escalate -----------------------------------------------------

def test_tokens_cannot_escalate(c):
    c.make_tenant("esc")
    soon = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 90))
    later = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
    parent = c.make_token("tenant", tenant="esc", user="dora", expires_at=soon)
    # another user's name, a later expiry: refused
    st, _, b = c.api("POST", "/v1/tokens", {"role": "tenant", "tenant": "esc", "user": "eve"}, token=parent)
    check_eq((st, b.get("field")), (403, "user"), b)
    st, _, b = c.api("POST", "/v1/tokens", {"role": "reader", "expires_at": later}, token=parent)
    check_eq((st, b.get("field")), (403, "expires_at"), b)
    st, _, b = c.api("POST", "/v1/tokens", {"role": "admin"}, token=parent)
    check_eq(st, 403, b)
    # no expiry asked: it gets the parent's; its user and tenant are the parent's
    st, _, child = c.api("POST", "/v1/tokens", {"role": "tenant", "tenant": "esc"}, token=parent)
    check_eq(st, 201, child)
    check_eq((child["user"], child["tenant"]), ("dora", "esc"))
    pid = c.api("GET", "/v1/whoami", token=parent)[2]["token_id"]
    pexp = c.sql_value("SELECT expires_at FROM api_tokens WHERE id = $1", pid)
    cexp = c.sql_value("SELECT expires_at FROM api_tokens WHERE id = $1", child["id"])
    check_eq(cexp, pexp)
    st, _, grand = c.api("POST", "/v1/tokens", {"role": "reader"}, token=child["token"])
    check_eq(st, 201, grand)
    check_eq(c.api("GET", "/v1/whoami", token=grand["token"])[0], 200)
    # revoking the parent revokes what it minted, and what those minted
    st, _, b = c.api("DELETE", "/v1/tokens/%s" % pid)
    check_eq(st, 204, b)
    for t in (parent, child["token"], grand["token"]):
        check_eq(c.api("GET", "/v1/whoami", token=t, headers={})[0], 401)
    check_eq(c.sql_value("SELECT count(*) FROM api_tokens WHERE user_name = 'dora' AND revoked_at IS NULL"), "0")


# -- env values only to the job's user and admins ---------------------------------

def test_env_values_only_to_owner_and_admins(c):
    c.make_tenant("envt")
    owner = c.make_token("tenant", tenant="envt", user="olga")
    peer = c.make_token("tenant", tenant="envt", user="pete")
    reader = c.make_token("reader", tenant="envt", user="rhea")
    st, _, job = c.api("POST", "/v1/jobs", {"tenant": "envt", "nodes": 1, "gpus_per_node": 1,
                                            "command": ["true"], "env": {"WANDB_KEY": "s3cr3t", "X": "1"}},
                       token=owner)
    check_eq(st, 201, job)
    check_eq(job["env"], {"WANDB_KEY": "s3cr3t", "X": "1"})
    path = "/v1/jobs/%d" % job["id"]
    for tok in (owner, c.admin_token):
        check_eq(c.api("GET", path, token=tok)[2]["env"], {"WANDB_KEY": "s3cr3t", "X": "1"})
    redacted = {"WANDB_KEY": "<redacted>", "X": "<redacted>"}
    for tok in (peer, reader):
        st, _, b = c.api("GET", path, token=tok)
        check_eq((st, b["env"]), (200, redacted), b)
        st, _, b = c.api("GET", "/v1/jobs?tenant=envt", token=tok)
        check_eq(st, 200, b)
        check("s3cr3t" not in json.dumps(b), b)
        check_eq([j["env"] for j in b["items"] if j["id"] == job["id"]], [redacted])
    st, _, b = c.api("POST", path + "/cancel", token=peer)
    check_eq(st, 200, b)
    check_eq(b["env"], redacted)
    # gRPC: the same rule
    from test_grpc_common import load, channel, md
    pb = load()
    stub = pb["jobs_grpc"].JobServiceStub(channel(c))
    J = pb["jobs"]
    g = stub.Get(J.GetJobRequest(job_id=job["id"]), metadata=md(peer), timeout=10)
    check_eq(dict(g.env), redacted)
    g = stub.Get(J.GetJobRequest(job_id=job["id"]), metadata=md(owner), timeout=10)
    check_eq(dict(g.env), {"WANDB_KEY": "s3cr3t", "X": "1"})
    lst = stub.List(J.ListJobsRequest(), metadata=md(reader), timeout=10)
    check_eq([dict(x.env) for x in lst.jobs if x.id == job["id"]], [redacted])


# -- readiness says not ready, without internal detail ------------------------------

def test_readyz_hides_database_errors(c):
    subprocess.run([c.devdb, "stop", "--dir", c.state_dir], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    try:
        st, _, b = c.api("GET", "/readyz", token="")
        check_eq(st, 503, b)
        check_eq(b["detail"], "database unreachable")
        check(c.state_dir not in json.dumps(b) and "socket" not in json.dumps(b), b)
    finally:
        subprocess.run([c.devdb, "start", "--dir", c.state_dir], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    check("readyz database check failed" in c.log_text("api"), "the detail goes to the log")
    c.wait_until(lambda: c.api("GET", "/readyz", token="")[0] == 200, 30, "ready again")


# -- the dev database is its owner's alone -------------------------------------------

def test_devdb_socket_private_and_peer_checked(c):
    sock = os.path.join(c.state_dir, "socket")
    check_eq(oct(os.stat(sock).st_mode & 0o777), oct(0o700))
    if os.geteuid() != 0:
        harness.skip("needs root to act as another user")
    # another local user: refused by the directory...
    r = subprocess.run(["runuser", "-u", "nobody", "--", "psql", "-X", "-At", "-d", c.db_url,
                        "-c", "SELECT 1"], capture_output=True, text=True, timeout=30)
    check(r.returncode != 0 and "ermission denied" in r.stderr, r.stdout, r.stderr)
    # ... and, should the directory be opened, by peer authentication
    os.chmod(sock, 0o755)
    try:
        r = subprocess.run(["runuser", "-u", "nobody", "--", "psql", "-X", "-At", "-d", c.db_url,
                            "-c", "SELECT 1"], capture_output=True, text=True, timeout=30)
        check(r.returncode != 0 and "authentication failed" in r.stderr, r.stdout, r.stderr)
    finally:
        os.chmod(sock, 0o700)
    check_eq(c.sql_value("SELECT 1"), "1")  # the owner still connects


if __name__ == "__main__":
    harness.main(api=True)
