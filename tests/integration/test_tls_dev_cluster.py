#!/usr/bin/python3
"""`MUSTER_TLS=1 make run` (scripts/dev-cluster): a dev CA and certificates
made with openssl, muster-api on https:// and gRPC over TLS requiring the
agents' client certificates, .muster/env with MUSTER_CA_FILE and an https
MUSTER_URL that the CLI uses as is; the demo gang runs on agents connected
over TLS; a second start reuses the CA."""
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import urllib.request

import harness
from harness import check, check_eq

SCRIPT = os.path.join(harness.SOURCE_DIR, "scripts", "dev-cluster")
CGROOT = "muster-tlsdev-%d" % os.getpid()


def env_of(state):
    r = subprocess.run(["bash", "-c", '. "$1/env" && env -0', "sh", state],
                       stdout=subprocess.PIPE, check=True, timeout=10)
    return dict(kv.split("=", 1) for kv in r.stdout.decode().split("\0") if "=" in kv)


def test_make_run_with_tls():
    for b in ("muster-api", "muster-agent", "muster-scheduler", "muster"):
        harness.require_binary(b)
    top = tempfile.mkdtemp(prefix="muster-tlsrun.", dir="/tmp")
    os.chmod(top, 0o755)
    state = os.path.join(top, "state")
    http, grpc_port = harness.free_port(), harness.free_port()
    env = dict(os.environ, MUSTER_STATE_DIR=state, MUSTER_RUN_FOR="300", MUSTER_TLS="1",
               MUSTER_HTTP_ADDR="127.0.0.1:%d" % http, MUSTER_GRPC_ADDR="127.0.0.1:%d" % grpc_port,
               MUSTER_AGENT_CGROUP_ROOT=CGROOT, MUSTER_SCHEDULERS="1")
    log_path = os.path.join(top, "dev-cluster.log")
    p = None
    try:
        for run in (1, 2):
            with open(log_path, "ab") as log:
                p = subprocess.Popen([SCRIPT, harness.build_dir()], env=env, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

            def up():
                check(p.poll() is None, "dev-cluster exited early with", p.returncode)
                with open(log_path) as f:
                    return "muster is running." in f.read().split("dev-cluster: stopped")[-1]
            harness.wait_until(up, 150, "dev-cluster up (run %d)" % run)
            e = env_of(state)
            check(e["MUSTER_URL"].startswith("https://127.0.0.1:"), e["MUSTER_URL"])
            ca = e["MUSTER_CA_FILE"]
            check_eq(ca, os.path.join(state, "tls", "ca.crt"))
            check_eq(os.stat(os.path.join(state, "tls", "ca.key")).st_mode & 0o077, 0, "CA key private")
            ctx = ssl.create_default_context(cafile=ca)
            with urllib.request.urlopen(e["MUSTER_URL"] + "/healthz", timeout=5, context=ctx) as r:
                check_eq(r.status, 200)
            # the CLI with nothing but the env file
            cli_env = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
            cli_env.update(e)
            cli_env["HOME"] = top
            r = subprocess.run([harness.binary("muster"), "nodes"], env=cli_env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=60)
            check_eq(r.returncode, 0, r.stdout, r.stderr)
            check(r.stdout.count("dev-node-") >= 2, "both agents registered over TLS", r.stdout)
            with open(log_path) as f:
                text = f.read()
            if run == 1:
                check("made a dev CA" in text, "first run makes the CA")
                check("2-node gang job" in text and "is COMPLETED" in text, "demo gang over TLS",
                      text[-2000:])
                with open(ca) as f:
                    first_ca = f.read()
            else:
                with open(ca) as f:
                    check_eq(f.read(), first_ca, "second run reuses the CA")
            os.killpg(p.pid, signal.SIGTERM)
            check_eq(p.wait(timeout=60), 0, "dev-cluster stops cleanly")
            p = None
    except BaseException:
        try:
            with open(log_path) as f:
                print(f.read()[-4000:])
            for name in ("api", "agent-1"):
                lp = os.path.join(state, "logs", name + ".log")
                if os.path.exists(lp):
                    with open(lp) as f:
                        print("----", name, "\n", f.read()[-2000:])
        except OSError:
            pass
        raise
    finally:
        if p is not None and p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        harness.remove_cgroup_tree(CGROOT)
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    harness.main()
