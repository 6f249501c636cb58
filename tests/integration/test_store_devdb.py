"""The embedded dev database (store/devdb.c via muster-devdb): start/stop/start
keeps data, start is idempotent, a stale postmaster.pid after a crash is
cleared, a cluster owned by another user and an overlong path are refused
with clear messages."""
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time

import harness
from harness import check, check_eq

DEVDB = None


def devdb(*args):
    return subprocess.run([DEVDB] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=180)


def psql(url, q):
    r = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", q],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    check_eq(r.returncode, 0, r.stderr)
    return r.stdout.strip()


@contextlib.contextmanager
def state_dir():
    top = tempfile.mkdtemp(prefix="muster-devdb.", dir="/tmp")
    os.chmod(top, 0o755)
    d = os.path.join(top, "s")
    try:
        yield d
    finally:
        try:
            devdb("stop", "--dir", d)
        except (OSError, subprocess.SubprocessError):
            # muster-devdb itself is gone (a rebuild under us): never leave
            # a postgres behind
            try:
                os.kill(postmaster_pid(d), signal.SIGQUIT)
            except (OSError, ValueError):
                pass
        shutil.rmtree(top, ignore_errors=True)


def gone(pid):
    """Dead: no such process, or a zombie nobody reaped (containers whose
    init does not reap)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def postmaster_pid(d):
    with open(os.path.join(d, "data", "postmaster.pid")) as f:
        return int(f.readline())


SHARED = {}  # the lifecycle test's running cluster, reused by the crash test


def test_lifecycle_keeps_data():
    """start/stop/start keeps data; start twice is a no-op; a cluster owned
    by another user is refused."""
    d = SHARED["dir"]
    check_eq(devdb("status", "--dir", d).returncode, 4, "no cluster yet")
    r = devdb("start", "--dir", d)
    check_eq(r.returncode, 0, r.stderr)
    url = r.stdout.strip()
    check_eq(url, "postgresql:///muster?host=%s/socket&port=5432&user=postgres" % d)
    check_eq(devdb("url", "--dir", d).stdout.strip(), url)
    r2 = devdb("start", "--dir", d)
    check_eq((r2.returncode, r2.stdout.strip()), (0, url), "second start is a no-op", r2.stderr)
    check_eq(devdb("status", "--dir", d).returncode, 0)
    psql(url, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('first run')")
    check_eq(psql(url, "SHOW fsync"), "on")
    check_eq(psql(url, "SHOW listen_addresses"), "")
    r = devdb("stop", "--dir", d)
    check_eq(r.returncode, 0, r.stderr)
    st = devdb("status", "--dir", d)
    check_eq((st.returncode, st.stdout.strip()), (3, "stopped"))
    check_eq(devdb("stop", "--dir", d).returncode, 0, "stopping a stopped cluster is fine")
    if os.geteuid() == 0:
        # a cluster that belongs to another user is refused, not taken over
        data = os.path.join(d, "data")
        os.chown(data, 65534, 65534)  # nobody
        r = devdb("start", "--dir", d)
        check_eq((r.returncode, r.stdout), (1, ""), r.stderr)
        check("belongs to user nobody" in r.stderr, r.stderr)
        pg = __import__("pwd").getpwnam("postgres")
        os.chown(data, pg.pw_uid, pg.pw_gid)
    r = devdb("start", "--dir", d)
    check_eq(r.returncode, 0, r.stderr)
    check_eq(psql(url, "SELECT v FROM kept"), "first run")


def test_crash_and_stale_pid():
    """Runs on the lifecycle test's cluster (one initdb less per CI run)."""
    d = SHARED["dir"]
    url = devdb("start", "--dir", d).stdout.strip()
    psql(url, "CREATE TABLE t (v int); INSERT INTO t VALUES (42)")
    pid = postmaster_pid(d)
    os.kill(pid, signal.SIGKILL)
    harness.wait_until(lambda: gone(pid), 10, "postmaster gone")
    check_eq(devdb("status", "--dir", d).returncode, 3)
    # The pid in the stale file now belongs to a live process that is not
    # postgres (as after a reboot, when pids are reused): start must not
    # believe another server is running.
    pidfile = os.path.join(d, "data", "postmaster.pid")
    with open(pidfile) as f:
        lines = f.readlines()
    lines[0] = "%d\n" % os.getpid()
    with open(pidfile, "w") as f:
        f.writelines(lines)
    # the orphaned backends of the killed postmaster may need a moment
    deadline = time.monotonic() + 20
    while True:
        r = devdb("start", "--dir", d)
        if r.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    check_eq(r.returncode, 0, r.stderr)
    check("stale postmaster.pid" in r.stderr, r.stderr)
    check_eq(psql(url, "SELECT v FROM t"), "42", "committed data survives kill -9")
    # stop with a stale pid file is not an error either
    pid = postmaster_pid(d)
    os.kill(pid, signal.SIGKILL)
    harness.wait_until(lambda: gone(pid), 10, "postmaster gone")
    r = devdb("stop", "--dir", d)
    check_eq(r.returncode, 0, r.stderr)
    check(not os.path.exists(pidfile), "stale pid file removed")


def test_long_path_refused():
    top = tempfile.mkdtemp(prefix="muster-devdb.", dir="/tmp")
    try:
        d = os.path.join(top, "x" * 100)
        r = devdb("start", "--dir", d)
        check_eq(r.returncode, 1)
        check("too long for a Unix socket" in r.stderr, r.stderr)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_usage_errors():
    check_eq(devdb("bogus").returncode, 2)
    check_eq(devdb().returncode, 2)
    r = devdb("--help")
    check_eq(r.returncode, 0)
    check("migrate" in r.stdout)


if __name__ == "__main__":
    DEVDB = harness.require_binary("muster-devdb")
    with state_dir() as shared_dir:
        SHARED["dir"] = shared_dir
        harness.main()
