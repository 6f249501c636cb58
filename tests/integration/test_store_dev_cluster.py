"""`make run` (scripts/dev-cluster) non-interactively: it brings up the
database (and the API, schedulers, agents when built) in a temp state dir,
writes a working env file, stops everything cleanly on Ctrl-C (SIGINT) and
after MUSTER_RUN_FOR seconds, and a second run keeps the first run's data
and reuses its tokens."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import harness
from harness import check, check_eq

SCRIPT = os.path.join(harness.SOURCE_DIR, "scripts", "dev-cluster")


def env_of(state):
    """The variables of state/env, as a shell that sources it sees them."""
    r = subprocess.run(["bash", "-c", '. "$1/env" && env -0', "sh", state],
                       stdout=subprocess.PIPE, check=True, timeout=10)
    return dict(kv.split("=", 1) for kv in r.stdout.decode().split("\0") if "=" in kv)


CGROOT = "muster-devtest-%d" % os.getpid()  # not the `make run` default, `muster`


def start(state, http, grpc, run_for):
    env = dict(os.environ, MUSTER_STATE_DIR=state, MUSTER_RUN_FOR=str(run_for),
               MUSTER_HTTP_ADDR="127.0.0.1:%d" % http, MUSTER_GRPC_ADDR="127.0.0.1:%d" % grpc,
               MUSTER_AGENT_CGROUP_ROOT=CGROOT)
    log = open(os.path.join(os.path.dirname(state), "dev-cluster.log"), "ab")
    # Ctrl-C at a terminal reaches a shell whose SIGINT is not ignored. A
    # CI runner may start us with SIGINT ignored (a background job of a
    # non-interactive shell), and bash cannot trap a signal ignored on entry,
    # so the script would never see the test's Ctrl-C: give it the default.
    return subprocess.Popen([SCRIPT, harness.build_dir()], env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def metrics_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status == 200 and b"# TYPE muster_" in r.read()
    except OSError:
        return False


def wait_up(p, state, api):
    def up():
        check(p.poll() is None, "dev-cluster exited early with", p.returncode)
        if not os.path.exists(os.path.join(state, "env")):
            return False
        if not api:
            return True
        try:
            with urllib.request.urlopen(env_of(state)["MUSTER_URL"] + "/healthz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False
    harness.wait_until(up, 120, "dev-cluster up")


def psql(url, q):
    r = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", q],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    check_eq(r.returncode, 0, r.stderr)
    return r.stdout.strip()


def get(url, token):
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, json.loads(r.read())


def test_make_run_twice():
    top = tempfile.mkdtemp(prefix="muster-run.", dir="/tmp")
    os.chmod(top, 0o755)
    state = os.path.join(top, "state")
    devdb = harness.require_binary("muster-devdb")
    api = harness.binary("muster-api") is not None
    http, grpc = harness.free_port(), harness.free_port()
    p = None
    try:
        # first run: stopped with Ctrl-C
        p = start(state, http, grpc, 240)
        wait_up(p, state, api)
        e = env_of(state)
        for k in ("MUSTER_URL", "MUSTER_TOKEN", "MUSTER_ADMIN_TOKEN", "MUSTER_DATABASE_URL"):
            check(k in e, k, "missing from env")
        check(e["MUSTER_ADMIN_TOKEN"].startswith("mst_"))
        check_eq(psql(e["MUSTER_DATABASE_URL"], "SELECT count(*) > 0 FROM schema_migrations"), "t")
        psql(e["MUSTER_DATABASE_URL"], "INSERT INTO settings (key, value) VALUES "
             "('dev_cluster_test', '\"kept\"')")
        if api:
            # every daemon's metrics URL (issue 13): the API, 2 schedulers, 2 agents
            urls = e["MUSTER_METRICS_URLS"].split()
            check_eq(len(urls), 5 if harness.binary("muster-agent") else 1, urls)
            for u in urls:
                harness.wait_until(lambda: metrics_ok(u), 20, "metrics at " + u)
            st, who = get(e["MUSTER_URL"] + "/v1/whoami", e["MUSTER_TOKEN"])
            check_eq((st, who.get("role"), who.get("tenant")), (200, "tenant", "demo"))
            cli = harness.binary("muster")
            if cli:
                r = subprocess.run(["bash", "-c", '. "$1/env" && "$2" queue', "sh", state, cli],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   timeout=30)
                check_eq(r.returncode, 0, r.stderr)
        os.killpg(p.pid, signal.SIGINT)
        check_eq(p.wait(timeout=120), 0, "Ctrl-C exits cleanly")
        r = subprocess.run([devdb, "status", "--dir", os.path.join(state, "db")],
                           stdout=subprocess.PIPE, text=True)
        check_eq(r.stdout.strip(), "stopped", "postgres stopped with it")

        # second run: same tokens, same data; MUSTER_RUN_FOR ends it
        os.unlink(os.path.join(state, "env"))
        p = start(state, http, grpc, 4)
        wait_up(p, state, api)
        e2 = env_of(state)
        check_eq(e2["MUSTER_ADMIN_TOKEN"], e["MUSTER_ADMIN_TOKEN"], "admin token reused")
        check_eq(e2["MUSTER_TOKEN"], e["MUSTER_TOKEN"], "demo token reused")
        check_eq(psql(e2["MUSTER_DATABASE_URL"],
                      "SELECT value #>> '{}' FROM settings WHERE key = 'dev_cluster_test'"), "kept")
        check_eq(p.wait(timeout=120), 0, "MUSTER_RUN_FOR exits cleanly")
        r = subprocess.run([devdb, "status", "--dir", os.path.join(state, "db")],
                           stdout=subprocess.PIPE, text=True)
        check_eq(r.stdout.strip(), "stopped")
        if api and all(harness.binary(b) for b in ("muster-scheduler", "muster-agent")):
            # the demo gang ran on both fake-GPU agents and completed
            with open(os.path.join(top, "dev-cluster.log"), "rb") as f:
                log = f.read().decode(errors="replace")
            check("2-node gang job" in log and "is COMPLETED" in log, "demo gang completed")
            outs = [os.path.join(d, "proc0.out") for node in ("dev-node-1", "dev-node-2")
                    for d in [os.path.join(state, "agents", node, "runs", r)
                              for r in os.listdir(os.path.join(state, "agents", node, "runs"))]]
            ranks = sorted(open(o).read().split()[1] for o in outs if os.path.exists(o))
            check("0" in ranks and "1" in ranks, "both ranks of the demo gang ran", ranks)
            # as an unprivileged account: muster-demo when root, else ourselves
            import pwd
            want = pwd.getpwnam("muster-demo").pw_uid if os.geteuid() == 0 else os.geteuid()
            for o in outs:
                if os.path.exists(o):
                    st = os.stat(o)
                    check_eq(st.st_uid, want, "demo job log owner", o)
                    check_eq(st.st_mode & 0o777, 0o600, "demo job log mode", o)
    except BaseException:
        try:
            with open(os.path.join(top, "dev-cluster.log"), "rb") as f:
                print(f.read()[-8000:].decode(errors="replace"))
            for name in sorted(os.listdir(os.path.join(state, "logs"))):
                print("----", name)
                with open(os.path.join(state, "logs", name), "rb") as f:
                    print(f.read()[-4000:].decode(errors="replace"))
        except OSError:
            pass
        raise
    finally:
        if p and p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        subprocess.run([devdb, "stop", "--dir", os.path.join(state, "db")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        harness.remove_cgroup_tree(CGROOT)
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    harness.main()
