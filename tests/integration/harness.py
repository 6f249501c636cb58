"""harness.py - the integration-test harness every muster test uses.

Python 3 standard library only; run tests with /usr/bin/python3.

A test file looks like this:

    import harness
    from harness import Cluster, check, check_eq, skip

    def test_submit(c):                  # c: one Cluster shared by the file's tests
        st, hdr, body = c.api("POST", "/v1/jobs", {...})
        check_eq(st, 201, body)
        check_eq(c.sql_value("SELECT count(*) FROM jobs"), "1")

    def test_crash():                    # no parameter: the test makes its own
        with Cluster(api=True) as c2:
            ...

    if __name__ == "__main__":
        harness.main(api=True)           # Cluster(**kwargs) for tests that take `c`

and is registered in CTest from a fragment in tests/integration/ with
    muster_py_test(api.jobs test_api_jobs.py)
(defined in 00_harness.cmake; sets MUSTER_BUILD_DIR, TIMEOUT 300, SKIP_RETURN_CODE 77).

What a Cluster is
-----------------
`with Cluster(api=False) as c:` creates a fresh temp dir under /tmp (traversable by
the `postgres` user), starts a private PostgreSQL in it with `muster-devdb start`,
applies the migrations (`muster-devdb migrate`), and, with api=True, starts
`muster-api` on free ports with a random MUSTER_ADMIN_TOKEN and waits for /healthz.
On exit (also when the test fails or raises) every process it started is killed and
reaped, PostgreSQL is stopped and the temp dir removed. When the block raised, the
tail of every log (each process's, postgres.log) is printed first. A watchdog process
does the same cleanup if the test process itself is killed (CTest timeout, kill -9),
so no postgres is ever left behind. MUSTER_KEEP=1 keeps the temp dir for a look.

Attributes: c.dir (temp dir), c.db_url, c.api_url ("http://127.0.0.1:PORT"),
c.http_port, c.grpc_port, c.admin_token, c.build_dir, c.source_dir.
c.ssl_context: None, or an ssl.SSLContext set before c.start_api() for a muster-api with
--tls-cert: then c.api_url is https:// and c.api() speaks TLS (test_tls.py).

Methods:
  c.sql(query, *params)       -> list of tuples of str (None for NULL). Params are $1..$n
                                 in the query and are passed as psql variables, quoted by
                                 psql (:'pN'): any string is safe. None -> NULL. Several
                                 statements may be given; rows of all are returned.
  c.sql_value(query, *params) -> first column of the first row, or None
  c.new_database(name, migrate=False) -> URL of a new, empty database on the same server
                                 (cheaper than a second Cluster when a test needs a clean schema)
  c.api(method, path, body=None, token=None, headers=None, raw=None, timeout=30)
                              -> (status, headers (dict, lowercase names), body) where body
                                 is parsed JSON for JSON/problem+json responses, else text.
                                 token=None sends the admin token; token="" sends none.
                                 raw (bytes/str) is sent instead of json.dumps(body).
                                 One fresh connection per call (no keep-alive).
  c.start_api(**env)          -> (re)starts muster-api on the same ports; extra env vars as
                                 keyword arguments (MUSTER_MAX_BODY="2048"); waits /healthz.
  c.kill_api(sig=SIGKILL)     -> kills muster-api and reaps it; returns its exit status.
  c.start_process(args, env=None, name=None, wait_for=None)
                              -> subprocess.Popen of args (args[0] a binary name is looked
                                 up in the build dir), stdout+stderr to <dir>/<name>.log,
                                 DATABASE/ADMIN env preset; killed and reaped at exit.
                                 wait_for: a callable polled until true (10 s) or a string
                                 awaited in the log.
  c.stop_process(p, sig=SIGTERM, timeout=10) -> exit status
  c.make_tenant(name, parent="root", **fields) -> tenant JSON (POST /v1/tenants, admin)
  c.make_token(role="tenant", tenant=None, user=None, name=None, **fields)
                              -> the secret string (POST /v1/tokens, admin)
  c.token_file(secret, name=None) -> path of a new 0600 file holding secret (for
                                 muster-agent --token-file)
  c.log_text(name)            -> a process log's contents ("api", "postgres", ...)
  c.agent_flags(identity=False) -> muster-agent flags: this cluster's own --cgroup-root and,
                                 unless the test is about identity, --single-user
                                 --allow-root-jobs (jobs of any `user` run as the agent)
  c.cgroup_root()             -> that cgroup root; at exit what runs below it is killed and
                                 the cgroups removed (harness.remove_cgroup_tree)
  c.make_user(prefix, groups=None) -> pwd entry of a new real account (useradd -m, uid >= 1000,
                                 unique name), removed with userdel -r at exit; skips when
                                 not root.  c.make_group(prefix) -> a new group's name, likewise
  c.wait_until(fn, timeout=10, what="")  polls fn until it returns a true value (also
                                 harness.wait_until)
  harness.binary(name)        -> path of a built binary, or None
  harness.require_binary(n)   -> path, else skips the test (exit 77)

Environment: MUSTER_BUILD_DIR (required: the CMake build dir), MUSTER_SOURCE_DIR,
MUSTER_KEEP=1, MUSTER_HARNESS_VERBOSE=1 (print logs even on success).
"""

import contextlib
import http.client
import inspect
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("MUSTER_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
SKIP = 77


class Skip(Exception):
    """Raised by skip(); harness.main exits 77 (CTest: skipped)."""


class CheckFailed(AssertionError):
    pass


def skip(why):
    raise Skip(why)


def check(cond, *what):
    if not cond:
        raise CheckFailed(" ".join(str(w) for w in what) or "check failed")


def check_eq(got, want, *what):
    if got != want:
        raise CheckFailed("got %r, want %r %s" % (got, want, " ".join(str(w) for w in what)))


def build_dir():
    d = os.environ.get("MUSTER_BUILD_DIR")
    if not d:
        for cand in ("build", "build-devdb"):
            p = os.path.join(SOURCE_DIR, cand)
            if os.path.isdir(p):
                return p
        raise RuntimeError("set MUSTER_BUILD_DIR to the CMake build directory")
    return os.path.abspath(d)


def binary(name):
    """The built binary `name` (build dir root first, then subdirs), or None."""
    b = build_dir()
    for sub in ("", "api", "store", "service", "service/scheduler", "service/sim", "agent",
                "cli", "bench"):
        p = os.path.join(b, sub, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    for root, dirs, files in os.walk(b):
        dirs[:] = [d for d in dirs if d not in ("CMakeFiles", "Testing")]
        if name in files:
            p = os.path.join(root, name)
            if os.access(p, os.X_OK):
                return p
    return None


def require_binary(name):
    p = binary(name)
    if not p:
        skip("%s is not built" % name)
    return p


def wait_until(fn, timeout=10, what=""):
    """Polls fn (backing off to 0.2 s) until it returns a true value, which
    is returned; raises TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise TimeoutError("timed out after %ss waiting for %s" % (timeout, what or fn))
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path, lines=60):
    try:
        with open(path, "rb") as f:
            data = f.read()[-20000:].decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


# The watchdog: a separate session that outlives a killed test process. It
# reads "pid N" lines from a pipe; at EOF (the test ended, however it ended)
# it SIGKILLs those pids, stops the dev database and removes the dir.
_WATCHDOG = r"""
import os, signal, subprocess, sys, shutil
devdb, statedir, tmpdir, keep, here = sys.argv[1:6]
pids, cgroups, users = [], [], []
for line in sys.stdin:
    w = line.split()
    if len(w) == 2 and w[0] == "pid":
        pids.append(int(w[1]))
    elif len(w) == 2 and w[0] == "done":
        pids = [p for p in pids if p != int(w[1])]
    elif len(w) == 2 and w[0] == "cgroup":
        cgroups.append(w[1])
    elif len(w) == 2 and w[0] == "user":
        users.append(w[1])
    elif len(w) == 2 and w[0] == "gone":
        cgroups = [x for x in cgroups if x != w[1]]
        users = [x for x in users if x != w[1]]
for p in pids:
    try:
        os.kill(p, signal.SIGKILL)
    except OSError:
        pass
if cgroups or users:
    sys.path.insert(0, here)
    import harness
    for r in cgroups:
        harness.remove_cgroup_tree(r)
    for u in reversed(users):
        harness.del_user(u)
subprocess.run([devdb, "stop", "--dir", statedir], stdout=subprocess.DEVNULL,
               stderr=subprocess.DEVNULL)
if keep != "1":
    shutil.rmtree(tmpdir, ignore_errors=True)
"""


class Cluster:
    def __init__(self, api=False, api_env=None, migrate=True, name="muster"):
        self.want_api = api
        self.api_env = dict(api_env or {})
        self.migrate = migrate
        self.name = name
        self.build_dir = build_dir()
        self.source_dir = SOURCE_DIR
        self.dir = None
        self.db_url = None
        self.api_url = None
        self.http_port = None
        self.grpc_port = None
        self.admin_token = "mst_" + secrets.token_urlsafe(32)[:43]
        self.api_proc = None
        self._procs = []  # (Popen, name)
        self._logs = {}
        self._watchdog = None
        self._failed = False
        self._cgroup_root = None
        self._users = []
        self.ssl_context = None  # set (ssl.SSLContext) to talk https to a TLS muster-api

    # -- lifecycle ---------------------------------------------------------
    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self._failed = True
            self._cleanup()
            raise
        return self

    def __exit__(self, typ, val, tb):
        if typ is not None and not issubclass(typ, Skip):
            self._failed = True
        self._cleanup()
        return False

    def mark_failed(self):
        """Print logs at exit even though no exception left the with-block."""
        self._failed = True

    def _start(self):
        self.devdb = binary("muster-devdb")
        if not self.devdb:
            raise RuntimeError("muster-devdb is not built in %s" % self.build_dir)
        self.dir = tempfile.mkdtemp(prefix="muster-test.", dir="/tmp")
        os.chmod(self.dir, 0o755)  # postgres must reach its state dir
        self.state_dir = os.path.join(self.dir, "db")
        self._logs["postgres"] = os.path.join(self.state_dir, "postgres.log")
        self._logs["initdb"] = os.path.join(self.state_dir, "initdb.log")
        self._start_watchdog()
        r = subprocess.run([self.devdb, "start", "--dir", self.state_dir],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=180)
        if r.returncode != 0:
            raise RuntimeError("muster-devdb start failed (%d): %s" % (r.returncode, r.stderr))
        self.db_url = r.stdout.strip()
        if self.migrate:
            r = subprocess.run([self.devdb, "migrate", "--db", self.db_url],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=120)
            if r.returncode != 0:
                raise RuntimeError("migrate failed (%d): %s" % (r.returncode, r.stderr))
        if self.want_api:
            self.start_api(**self.api_env)

    def _start_watchdog(self):
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, self.devdb, self.state_dir, self.dir,
             os.environ.get("MUSTER_KEEP", "0"), HERE],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, text=True)

    def _tell_watchdog(self, line):
        try:
            self._watchdog.stdin.write(line + "\n")
            self._watchdog.stdin.flush()
        except (OSError, ValueError, AttributeError):
            pass

    def _cleanup(self):
        for p, _ in reversed(self._procs):
            self._reap(p, signal.SIGTERM, 5)
        if self._cgroup_root:
            remove_cgroup_tree(self._cgroup_root)
            self._tell_watchdog("gone " + self._cgroup_root)
        for u in reversed(self._users):
            del_user(u)
            self._tell_watchdog("gone " + u)
        if self._failed or os.environ.get("MUSTER_HARNESS_VERBOSE") == "1":
            self.print_logs()
        if self.dir and getattr(self, "devdb", None):
            try:
                subprocess.run([self.devdb, "stop", "--dir", self.state_dir],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
            except (subprocess.SubprocessError, OSError) as e:
                print("harness: stopping postgres: %s" % e, file=sys.stderr)
        if self._watchdog:
            try:
                self._watchdog.stdin.close()
            except OSError:
                pass
            try:
                self._watchdog.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._watchdog.kill()
        if self.dir and os.environ.get("MUSTER_KEEP") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)
        elif self.dir:
            print("harness: kept %s" % self.dir, file=sys.stderr)

    def print_logs(self):
        for name, path in sorted(self._logs.items()):
            t = _tail(path)
            if t:
                sys.stderr.write("---- %s (%s) ----\n%s\n" % (name, path, t))
        sys.stderr.flush()

    def log_text(self, name):
        try:
            with open(self._logs[name], "rb") as f:
                return f.read().decode("utf-8", "replace")
        except (KeyError, OSError):
            return ""

    # -- processes ---------------------------------------------------------
    # Variables a developer's shell may carry (`. .muster/env`) that must not
    # leak into a test's processes.
    _SCRUB = ("MUSTER_URL", "MUSTER_TOKEN", "MUSTER_ADMIN_TOKEN", "MUSTER_DATABASE_URL",
              "MUSTER_CONFIG", "MUSTER_STATE_DIR", "MUSTER_HTTP_ADDR", "MUSTER_GRPC_ADDR")

    def base_env(self):
        env = {k: v for k, v in os.environ.items() if k not in self._SCRUB}
        env["MUSTER_DATABASE_URL"] = self.db_url
        env["MUSTER_ADMIN_TOKEN"] = self.admin_token
        if self.api_url:
            env["MUSTER_URL"] = self.api_url
        return env

    def start_process(self, args, env=None, name=None, wait_for=None, timeout=10):
        args = [str(a) for a in args]
        if "/" not in args[0]:
            p = binary(args[0])
            if p:
                args[0] = p
        name = name or os.path.basename(args[0])
        base, n = name, 1
        while name in self._logs and name != "api":
            n += 1
            name = "%s.%d" % (base, n)
        log = os.path.join(self.dir, name + ".log")
        self._logs[name] = log
        full_env = self.base_env()
        if any(os.path.basename(a) == "muster-agent" for a in args):
            # an agent's only peer is muster-api: no database URL, no admin
            # token in its environment (its forks are the parents of jobs)
            full_env.pop("MUSTER_DATABASE_URL", None)
            full_env.pop("MUSTER_ADMIN_TOKEN", None)
        full_env.update({k: str(v) for k, v in (env or {}).items()})
        with open(log, "ab") as f:
            p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                 env=full_env, cwd=self.dir)
        self._procs.append((p, name))
        self._tell_watchdog("pid %d" % p.pid)
        if isinstance(wait_for, str):
            self.wait_until(lambda: wait_for in self.log_text(name) or p.poll() is not None,
                            timeout, "%r in %s" % (wait_for, log))
            if p.poll() is not None:
                raise RuntimeError("%s exited with %s:\n%s" % (name, p.returncode, _tail(log)))
        elif callable(wait_for):
            self.wait_until(lambda: p.poll() is not None or wait_for(), timeout, name)
            if p.poll() is not None:
                raise RuntimeError("%s exited with %s:\n%s" % (name, p.returncode, _tail(log)))
        return p

    def _reap(self, p, sig, timeout):
        if p.poll() is None:
            try:
                p.send_signal(sig)
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            except OSError:
                pass
        self._tell_watchdog("done %d" % p.pid)
        return p.returncode

    def stop_process(self, p, sig=signal.SIGTERM, timeout=10):
        rc = self._reap(p, sig, timeout)
        self._procs = [(q, n) for q, n in self._procs if q is not p]
        return rc

    def start_api(self, **env):
        api = require_binary("muster-api")
        if self.api_proc and self.api_proc.poll() is None:
            self.kill_api(signal.SIGTERM)
        # Ports we pick ourselves can be taken by a parallel test between
        # free_port() and muster-api's bind (ctest -j): then muster-api
        # exits at once with "cannot listen", and we try fresh ports.
        chosen = not self.http_port
        for attempt in range(5):
            if not self.http_port:
                self.http_port = free_port()
                self.grpc_port = free_port()
            self.api_url = "%s://127.0.0.1:%d" % ("https" if self.ssl_context else "http", self.http_port)
            e = {"MUSTER_HTTP_ADDR": "127.0.0.1:%d" % self.http_port,
                 "MUSTER_GRPC_ADDR": "127.0.0.1:%d" % self.grpc_port}
            e.update(env)
            self.api_proc = self.start_process([api], env=e, name="api")
            try:
                self.wait_until(lambda: self.api_proc.poll() is not None or self._healthy(), 30,
                                "muster-api /healthz")
            except TimeoutError:
                self._failed = True
                raise
            if (chosen and self.api_proc.poll() is not None and attempt < 4
                    and "cannot listen" in _tail(self._logs["api"], 5)):
                self.http_port = self.grpc_port = None
                continue
            break
        if self.api_proc.poll() is not None:
            self._failed = True
            raise RuntimeError("muster-api exited with %s:\n%s"
                               % (self.api_proc.returncode, _tail(self._logs["api"])))
        return self.api_proc

    def kill_api(self, sig=signal.SIGKILL):
        if not self.api_proc:
            return None
        rc = self.stop_process(self.api_proc, sig)
        self.api_proc = None
        return rc

    def _healthy(self):
        try:
            st, _, _ = self.api("GET", "/healthz", token="", timeout=2)
            return st == 200
        except (OSError, http.client.HTTPException):
            return False

    def wait_until(self, fn, timeout=10, what=""):
        return wait_until(fn, timeout, what)

    # -- SQL ---------------------------------------------------------------
    def sql(self, query, *params, db_url=None):
        """Rows as tuples of str/None. $1..$n are bound safely via psql variables."""
        args = ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                "-F", "\x1f", "-R", "\x1e", "-P", "null=\x1d", "-d", db_url or self.db_url]
        text = query
        # highest index first so $1 does not eat the prefix of $10
        for i in range(len(params), 0, -1):
            v = params[i - 1]
            if v is None:
                lit = "NULL"
            else:
                if isinstance(v, bool):
                    v = "true" if v else "false"
                elif isinstance(v, (dict, list)):
                    v = json.dumps(v)
                v = str(v)
                if "\x00" in v:
                    raise ValueError("NUL byte in SQL parameter")
                args += ["-v", "p%d=%s" % (i, v)]
                lit = ":'p%d'" % i
            text = text.replace("$%d" % i, lit)
        r = subprocess.run(args, input=text.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("psql failed: %s\nquery: %s" % (r.stderr.decode(errors="replace"),
                                                             query))
        out = r.stdout.decode()
        rows = []
        for rec in out.split("\x1e"):
            rec = rec.strip("\n")
            if rec == "":
                continue
            rows.append(tuple(None if f == "\x1d" else f for f in rec.split("\x1f")))
        return rows

    def sql_value(self, query, *params):
        rows = self.sql(query, *params)
        return rows[0][0] if rows and rows[0] else None

    def new_database(self, name, migrate=False):
        if not name.replace("_", "").isalnum():
            raise ValueError("database name: letters, digits, _")
        self.sql('CREATE DATABASE "%s"' % name)
        url = self.db_url.replace("postgresql:///muster?", "postgresql:///%s?" % name, 1)
        if url == self.db_url:
            raise RuntimeError("cannot derive a URL from %s" % self.db_url)
        if migrate:
            r = subprocess.run([self.devdb, "migrate", "--db", url], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=120)
            if r.returncode != 0:
                raise RuntimeError("migrate failed (%d): %s" % (r.returncode, r.stderr))
        return url

    # -- REST --------------------------------------------------------------
    def api(self, method, path, body=None, token=None, headers=None, raw=None, timeout=30):
        if not self.http_port:
            raise RuntimeError("no API: use Cluster(api=True) or c.start_api()")
        h = {}
        if token is None:
            token = self.admin_token
        if token:
            h["Authorization"] = "Bearer " + token
        data = None
        if raw is not None:
            data = raw.encode() if isinstance(raw, str) else raw
        elif body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        if self.ssl_context:
            conn = http.client.HTTPSConnection("127.0.0.1", self.http_port, timeout=timeout,
                                               context=self.ssl_context)
        else:
            conn = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=timeout)
        try:
            conn.request(method, path, body=data, headers=h)
            resp = conn.getresponse()
            payload = resp.read()
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
            status = resp.status
        finally:
            conn.close()
        ctype = hdrs.get("content-type", "")
        text = payload.decode("utf-8", "replace")
        if "json" in ctype:
            try:
                return status, hdrs, json.loads(text)
            except ValueError:
                return status, hdrs, text
        return status, hdrs, text

    def cgroup_root(self):
        """This cluster's agents' --cgroup-root (relative, unique per Cluster):
        every run's cgroup lands below it; at exit whatever is still running
        there is killed and the tree removed."""
        if not self._cgroup_root:
            self._cgroup_root = "muster-test-%d-%s" % (os.getpid(), secrets.token_hex(3))
            self._tell_watchdog("cgroup " + self._cgroup_root)  # even if we get killed
        return self._cgroup_root

    def agent_flags(self, identity=False):
        """Flags for a muster-agent of this cluster: its own cgroup root and,
        unless the test is about identity, every job as the agent's account
        (root in CI) so tests can submit as any `user`."""
        f = ["--cgroup-root", self.cgroup_root()]
        if not identity:
            f += ["--single-user", "--allow-root-jobs"]
        return f

    @staticmethod
    def agent_address(i):
        """The address of the cluster's i-th agent (0-based): 127.0.0.2,
        127.0.0.3, ... (all on lo), so that MASTER_ADDR, hostfiles and
        SLURM_NODELIST look as they do with separate hosts."""
        return "127.0.0.%d" % (i + 2)

    def start_agent(self, node, i, token, gpus=4, extra=None):
        """A fake-GPU muster-agent for `node` (its i-th, at agent_address(i)),
        state in <dir>/agent-<node>, credential from `token`. Returns the
        process (stop it with stop_process)."""
        return self.start_process(
            [binary("muster-agent"), "--api", "127.0.0.1:%d" % self.grpc_port, "--node", node,
             "--address", self.agent_address(i), "--state-dir", os.path.join(self.dir, "agent-" + node),
             "--gpu-backend", "fake", "--fake-gpus", str(gpus), "--heartbeat-interval", "300ms",
             "--token-file", self.token_file(token, "token-" + node)] + self.agent_flags() + (extra or []),
            name="agent-" + node)

    def make_user(self, prefix="mu", groups=None):
        """A real Unix account (useradd, uid >= 1000, a home directory) with a
        unique name, removed (userdel -r) at exit. Returns its passwd entry.
        Skips the test when not root."""
        if os.geteuid() != 0:
            skip("making Unix accounts needs root")
        name = "%s%d%s" % (prefix, os.getpid() % 100000, secrets.token_hex(2))
        args = ["useradd", "-m", "-K", "UID_MIN=1000", "-s", "/bin/sh", "-U"]
        if groups:
            args += ["-G", ",".join(groups)]
        r = subprocess.run(args + [name], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("useradd %s: %s" % (name, r.stderr))
        self._users.append(name)
        self._tell_watchdog("user " + name)
        import pwd
        return pwd.getpwnam(name)

    def make_group(self, prefix="mg"):
        """A real Unix group, removed at exit. Returns its name."""
        name = "%s%d%s" % (prefix, os.getpid() % 100000, secrets.token_hex(2))
        r = subprocess.run(["groupadd", name], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("groupadd %s: %s" % (name, r.stderr))
        self._users.append("group:" + name)
        self._tell_watchdog("user group:" + name)
        return name

    def make_tenant(self, name, parent="root", **fields):
        body = {"name": name, "parent": parent}
        body.update(fields)
        st, _, b = self.api("POST", "/v1/tenants", body)
        if st != 201:
            raise RuntimeError("POST /v1/tenants %s: %s %s" % (name, st, b))
        return b

    def make_token(self, role="tenant", tenant=None, user=None, name=None, **fields):
        body = {"name": name or "t-" + secrets.token_hex(4), "role": role}
        if tenant is not None:
            body["tenant"] = tenant
        if user is not None:
            body["user"] = user
        body.update(fields)
        st, _, b = self.api("POST", "/v1/tokens", body)
        if st != 201:
            raise RuntimeError("POST /v1/tokens: %s %s" % (st, b))
        return b["token"]

    def token_file(self, secret, name=None):
        """Writes an agent token to a new file of mode 0600 in the cluster dir
        (what muster-agent --token-file wants) and returns its path."""
        path = os.path.join(self.dir, name or "token-" + secrets.token_hex(4))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secret + "\n")
        return path


CGROUP_MOUNT = "/sys/fs/cgroup"


def _cgroup_hierarchies():
    """Every mounted cgroup hierarchy's root: /sys/fs/cgroup itself when it
    is cgroup2, else its subdirectories (v1 controllers, unified)."""
    if os.path.exists(os.path.join(CGROUP_MOUNT, "cgroup.controllers")):
        return [CGROUP_MOUNT]
    try:
        return [os.path.join(CGROUP_MOUNT, d) for d in sorted(os.listdir(CGROUP_MOUNT))
                if os.path.exists(os.path.join(CGROUP_MOUNT, d, "cgroup.procs"))]
    except OSError:
        return []


def remove_cgroup_tree(rel):
    """Kills every process under <hierarchy>/<rel> and removes the cgroups."""
    for h in _cgroup_hierarchies():
        top = os.path.join(h, rel)
        if not os.path.isdir(top):
            continue
        for _ in range(50):
            left = False
            for root, dirs, files in os.walk(top, topdown=False):
                kill = os.path.join(root, "cgroup.kill")
                try:
                    if os.path.exists(kill):
                        with open(kill, "w") as f:
                            f.write("1")
                    else:
                        for pid in open(os.path.join(root, "cgroup.procs")).read().split():
                            try:
                                os.kill(int(pid), signal.SIGKILL)
                            except OSError:
                                pass
                except OSError:
                    pass
                try:
                    os.rmdir(root)
                except OSError:
                    left = True
            if not left:
                break
            time.sleep(0.1)


def del_user(name):
    if name.startswith("group:"):
        subprocess.run(["groupdel", name[6:]], capture_output=True)
        return
    for _ in range(3):
        if subprocess.run(["userdel", "-r", "-f", name], capture_output=True).returncode in (0, 6):
            break
        time.sleep(0.2)


def record_skip(name, why):
    """Appends `<script>:<test> <reason>` to $MUSTER_SKIP_LOG (set by `make
    test`), so scripts/check-skips sees a skip inside a test that passed."""
    log = os.environ.get("MUSTER_SKIP_LOG")
    if not log:
        return
    script = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    line = "%s:%s\t%s\n" % (script, name, str(why).replace("\n", " "))
    with open(log, "a") as f:  # one short O_APPEND write per line
        f.write(line)


def main(**cluster_kwargs):
    """Runs every test_* function of __main__ in definition order. Tests with
    a parameter share one Cluster(**cluster_kwargs), started on first use.
    Exits 0 when all pass, 77 when all skipped, 1 otherwise.
    Command line: test names to run a subset."""
    mod = sys.modules["__main__"]
    tests = [(n, f) for n, f in vars(mod).items() if n.startswith("test_") and callable(f)]
    tests.sort(key=lambda t: t[1].__code__.co_firstlineno)
    if len(sys.argv) > 1:
        tests = [t for t in tests if t[0] in sys.argv[1:]]
    passed = failed = skipped = 0
    with contextlib.ExitStack() as stack:
        shared = None
        for name, fn in tests:
            t0 = time.monotonic()
            try:
                if inspect.signature(fn).parameters:
                    if shared is None:
                        shared = stack.enter_context(Cluster(**cluster_kwargs))
                    fn(shared)
                else:
                    fn()
                passed += 1
                print("PASS %s (%.2fs)" % (name, time.monotonic() - t0), flush=True)
            except Skip as e:
                skipped += 1
                print("SKIP %s: %s" % (name, e), flush=True)
                record_skip(name, e)
            except Exception:
                failed += 1
                if shared is not None:
                    shared.mark_failed()
                print("FAIL %s (%.2fs)" % (name, time.monotonic() - t0), flush=True)
                traceback.print_exc()
                sys.stdout.flush()
                sys.stderr.flush()
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped), flush=True)
    if failed:
        sys.exit(1)
    if skipped and not passed:
        sys.exit(SKIP)
    sys.exit(0)
