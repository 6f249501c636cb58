#!/usr/bin/python3
"""PostgreSQL failover under muster, on pg_auto_failover (Debian
postgresql-15-auto-failover + pg-auto-failover-cli).

    bench/ha/failover.py BUILD_DIR [--steady 5] [--after 8] [--keep]

Builds a monitor, a primary and a synchronous secondary with pg_autoctl (as
the `postgres` account when run as root: pg_autoctl refuses root), then runs
muster on the multi-host URL `pg_autoctl show uri` prints (+ user):
muster-devdb migrate (key=value form), muster-api and muster-scheduler (URI
form) and one fake-GPU agent. A client streams POST /v1/jobs (each with an
Idempotency-Key) while the primary node is lost (its pg_autoctl keeper and
its postgres SIGKILLed, so nothing restarts it) and the monitor promotes the
secondary. Checks, and prints as JSON:
  - every job answered 201 is on the new primary (synchronous replication);
  - while the database switched, the API answered 503 and never anything else;
  - no job has two live runs (the scheduler's fencing), and the jobs
    submitted after the switch are scheduled (the scheduler resumed);
  - the time from the kill to the first 201 again (the outage), and to the
    monitor reporting the promotion.
Exit 0 when every check holds. Takes about a minute; results are recorded
in bench/RESULTS.md ("PostgreSQL failover").
"""
import argparse
import glob
import http.client
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

# Monitor settings: find a dead primary in ~5 s instead of ~50 s (defaults
# 5 s checks, 20 s unhealthy timeout, 30 s demote timeout).
MONITOR_GUCS = {
    "pgautofailover.health_check_period": 1000,
    "pgautofailover.health_check_timeout": 1000,
    "pgautofailover.health_check_max_retries": 1,
    "pgautofailover.health_check_retry_delay": 500,
    "pgautofailover.node_considered_unhealthy_timeout": 4000,
    "pgautofailover.primary_demote_timeout": 5000,
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find(build, name):
    for sub in ("", "api", "store", "service", "agent", "cli"):
        p = os.path.join(build, sub, name)
        if os.access(p, os.X_OK) and os.path.isfile(p):
            return p
    sys.exit("failover: %s is not built in %s" % (name, build))


class Ha:
    def __init__(self, top):
        self.top = top
        self.bindir = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                             key=lambda p: int(p.split("/")[-2]))[-1]
        self.asuser = []
        self.pw = None
        if os.geteuid() == 0:
            self.pw = pwd.getpwnam("postgres")
            os.chown(top, self.pw.pw_uid, self.pw.pw_gid)
            self.asuser = ["runuser", "-u", "postgres", "--"]
        self.env = ["env", "PATH=%s:%s" % (self.bindir, os.environ["PATH"]),
                    "XDG_CONFIG_HOME=%s/cfg" % top, "XDG_DATA_HOME=%s/share" % top,
                    "XDG_RUNTIME_DIR=%s/run" % top]
        self.procs = {}
        self.ports = {"mon": free_port(), "n1": free_port(), "n2": free_port()}

    def autoctl(self, *args, check=True, timeout=120):
        r = subprocess.run(self.asuser + self.env + ["pg_autoctl"] + list(args), cwd=self.top,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError("pg_autoctl %s: %s" % (" ".join(args), r.stdout[-2000:]))
        return r.stdout

    def spawn(self, name, *args):
        log = open(os.path.join(self.top, name + ".log"), "ab")
        self.procs[name] = subprocess.Popen(self.asuser + self.env + ["pg_autoctl"] + list(args),
                                            cwd=self.top, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def sql(self, node, q, db="postgres", user="postgres"):
        r = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-d",
                            "postgresql://%s@127.0.0.1:%d/%s?sslmode=disable" % (user, self.ports[node], db),
                            "-c", q], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError("psql %s: %s" % (node, r.stderr))
        return r.stdout.strip()

    def state(self):
        out = self.autoctl("show", "state", "--pgdata", self.pgdata("mon"), "--json", check=False)
        try:
            return {n["nodename"]: (n["current_group_state"], n["assigned_group_state"]) for n in json.loads(out)}
        except (ValueError, KeyError, TypeError):
            return {}

    def pgdata(self, name):
        return os.path.join(self.top, name)

    def wait(self, fn, timeout, what):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            v = fn()
            if v:
                return v
            time.sleep(0.2)
        raise TimeoutError(what)

    def monitor_uri(self):
        return "postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable" % self.ports["mon"]

    def start(self):
        common = ["--auth", "trust", "--no-ssl", "--hostname", "127.0.0.1"]
        self.autoctl("create", "monitor", "--pgdata", self.pgdata("mon"), "--pgport",
                     str(self.ports["mon"]), *common)
        self.spawn("mon", "run", "--pgdata", self.pgdata("mon"))
        self.wait(lambda: self._monitor_up(), 60, "monitor up")
        for k, v in MONITOR_GUCS.items():
            self.sql("mon", "ALTER SYSTEM SET %s = %d" % (k, v), db="pg_auto_failover")
        self.sql("mon", "SELECT pg_reload_conf()", db="pg_auto_failover")
        for n in ("n1", "n2"):
            self.spawn(n, "create", "postgres", "--pgdata", self.pgdata(n), "--pgport",
                       str(self.ports[n]), "--name", n, "--monitor", self.monitor_uri(), "--run", *common)
            want = "primary" if n == "n1" else "secondary"
            self.wait(lambda: self.state().get(n, ("", ""))[0] in (want, "single" if n == "n1" else want)
                      and self.state().get(n)[1] == self.state().get(n)[0], 120, n + " " + want)
        self.wait(lambda: self.state() == {"n1": ("primary", "primary"), "n2": ("secondary", "secondary")},
                  120, "primary + secondary")
        uri = self.autoctl("show", "uri", "--pgdata", self.pgdata("mon"), "--formation", "default").strip()
        return uri

    def _monitor_up(self):
        try:
            self.sql("mon", "SELECT 1", db="pg_auto_failover")
            return True
        except RuntimeError:
            return False

    def lose(self, node):
        """The node is gone: its keeper first (else it restarts postgres), then postgres."""
        with open(os.path.join(self.pgdata(node), "postmaster.pid")) as f:
            pm = int(f.readline())
        os.killpg(self.procs[node].pid, signal.SIGKILL)
        os.kill(pm, signal.SIGKILL)
        return pm

    def stop(self):
        for name, p in self.procs.items():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(timeout=30)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        for n in ("mon", "n1", "n2"):  # postgres left behind by a killed keeper
            pid_file = os.path.join(self.pgdata(n), "postmaster.pid")
            if os.path.exists(pid_file):
                subprocess.run(self.asuser + [os.path.join(self.bindir, "pg_ctl"), "-D", self.pgdata(n),
                                              "-m", "immediate", "stop"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)


class Muster:
    def __init__(self, build, top, url):
        self.build, self.top, self.url = build, top, url
        self.procs = []
        self.http, self.grpc = free_port(), free_port()
        self.admin = "mst_" + secrets.token_urlsafe(32)[:43]

    def start(self, name, args, env):
        e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
        e.update(env)
        log = open(os.path.join(self.top, name + ".log"), "ab")
        p = subprocess.Popen(args, env=e, stdout=log, stderr=subprocess.STDOUT, cwd=self.top)
        self.procs.append(p)
        return p

    def api(self, method, path, body=None, token=None, headers=None, timeout=15):
        c = http.client.HTTPConnection("127.0.0.1", self.http, timeout=timeout)
        h = {"Authorization": "Bearer " + (token or self.admin), "Content-Type": "application/json"}
        h.update(headers or {})
        try:
            c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
            r = c.getresponse()
            data = r.read()
            try:
                return r.status, json.loads(data)
            except ValueError:
                return r.status, data.decode("utf-8", "replace")
        finally:
            c.close()

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--steady", type=float, default=5, help="seconds of submits before the kill")
    ap.add_argument("--after", type=float, default=8, help="seconds of submits after service resumed")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    top = tempfile.mkdtemp(prefix="muster-ha.", dir="/tmp")
    os.chmod(top, 0o755)
    ha = Ha(top)
    m = None
    result = {"ok": False}
    try:
        t = time.monotonic()
        uri = ha.start()
        result["cluster_setup_s"] = round(time.monotonic() - t, 1)
        result["pg_autoctl_uri"] = uri
        result["synchronous_standby_names"] = ha.sql("n1", "SHOW synchronous_standby_names")
        sep = "&" if "?" in uri else "?"
        url = uri + sep + "user=postgres"
        kv = "host=127.0.0.1,127.0.0.1 port=%d,%d dbname=postgres user=postgres target_session_attrs=read-write" % (
            ha.ports["n1"], ha.ports["n2"])
        r = subprocess.run([find(build, "muster-devdb"), "migrate", "--db", kv], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("muster-devdb migrate on the multi-host URL: " + r.stdout)
        m = Muster(build, top, url)
        env = {"MUSTER_DATABASE_URL": url, "MUSTER_ADMIN_TOKEN": m.admin,
               "MUSTER_HTTP_ADDR": "127.0.0.1:%d" % m.http, "MUSTER_GRPC_ADDR": "127.0.0.1:%d" % m.grpc}
        m.start("api", [find(build, "muster-api")], env)
        ha.wait(lambda: _status(m, "/healthz") == 200, 30, "muster-api up")
        m.start("scheduler", [find(build, "muster-scheduler"), "--db", url], {"MUSTER_DATABASE_URL": url})
        st, b = m.api("POST", "/v1/tenants", {"name": "ha", "parent": "root"})
        assert st == 201, (st, b)
        ha.sql("n1", "INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 64 FROM tenants WHERE name = 'ha'")
        st, b = m.api("POST", "/v1/tokens", {"name": "ha-user", "role": "tenant", "tenant": "ha", "user": "hau"})
        user = b["token"]
        st, b = m.api("POST", "/v1/tokens", {"name": "ha-agent", "role": "agent", "node": "ha-n1"})
        m.start("agent", [find(build, "muster-agent"), "--api", "127.0.0.1:%d" % m.grpc, "--node", "ha-n1",
                          "--address", "127.0.0.1", "--state-dir", os.path.join(top, "agent"),
                          "--gpu-backend", "fake", "--fake-gpus", "8", "--heartbeat-interval", "500ms",
                          "--single-user", "--allow-root-jobs", "--cgroups", "off"],
                {"MUSTER_AGENT_TOKEN": b["token"]})
        ha.wait(lambda: ha.sql("n1", "SELECT count(*) FROM nodes WHERE name = 'ha-n1' AND up") == "1", 30,
                "agent up")

        log = []  # (t, status, job id or None, key)
        stop = threading.Event()

        def stream():
            i = 0
            while not stop.is_set():
                i += 1
                key = "ha-%d-%s" % (i, secrets.token_hex(4))
                t0 = time.monotonic()
                try:
                    st, b = m.api("POST", "/v1/jobs", {"name": "ha-%d" % i, "nodes": 1, "gpus_per_node": 1, "time_limit": 60,
                                                       "command": ["/bin/sleep", "0.3"]},
                                  token=user, headers={"Idempotency-Key": key}, timeout=30)
                    jid = b.get("id") if isinstance(b, dict) else None
                except OSError as e:
                    st, jid = "conn:%s" % type(e).__name__, None
                log.append((t0, time.monotonic(), st, jid, key))
                time.sleep(0.02 if st == 201 else 0.05)

        th = threading.Thread(target=stream)
        th.start()
        time.sleep(a.steady)
        epoch_at_kill = ha.sql("n1", "SELECT epoch FROM scheduler_lease")
        t_kill = time.monotonic()
        ha.lose("n1")
        promoted = ha.wait(lambda: ha.state().get("n2", ("",))[0] in ("wait_primary", "primary")
                           and time.monotonic(), 120, "n2 promoted")
        resumed = ha.wait(lambda: next((e[1] for e in log if e[0] > t_kill and e[2] == 201), None), 60,
                          "a 201 after the kill")
        time.sleep(a.after)
        stop.set()
        th.join()

        acked = {e[3] for e in log if e[2] == 201}
        present = set(int(x) for x in ha.sql("n2", "SELECT id FROM jobs").split())
        missing = sorted(acked - present)
        during = [e for e in log if e[0] > t_kill and e[1] < resumed]  # asked and answered in the switch
        statuses = {}
        for e in log:
            statuses[str(e[2])] = statuses.get(str(e[2]), 0) + 1
        bad = sorted({str(e[2]) for e in log if e[2] not in (201, 503)})
        # the scheduler resumed: a new epoch (fencing) started runs of jobs
        # submitted after the switch
        late = [e[3] for e in log if e[2] == 201 and e[0] > resumed]
        epoch_before = int(epoch_at_kill)

        def scheduled():
            if not late:
                return False
            q = ("SELECT count(*) FROM runs WHERE epoch > %d AND job_id IN (%s)"
                 % (epoch_before, ",".join(str(j) for j in late)))
            return int(ha.sql("n2", q)) > 0
        try:
            ha.wait(scheduled, 60, "jobs after the switch scheduled")
            sched_ok = True
        except TimeoutError:
            sched_ok = False
        epoch_after = int(ha.sql("n2", "SELECT epoch FROM scheduler_lease"))
        stale = int(ha.sql("n2", "SELECT count(*) FROM runs WHERE epoch < %d AND created_at > "
                                  "(SELECT min(created_at) FROM runs WHERE epoch = %d)" % (epoch_after, epoch_after)))
        double = ha.sql("n2", "SELECT count(*) FROM (SELECT job_id FROM runs WHERE live GROUP BY job_id"
                              " HAVING count(*) > 1) d")
        result.update({
            "requests": len(log), "statuses": statuses, "acknowledged": len(acked),
            "acknowledged_missing_on_new_primary": missing,
            "answers_during_switch": sorted({str(e[2]) for e in during}),
            "non_201_503_answers": bad,
            "kill_to_promoted_s": round(promoted - t_kill, 2),
            "kill_to_first_201_s": round(resumed - t_kill, 2),
            "jobs_with_two_live_runs": int(double),
            "jobs_after_switch": len(late), "jobs_after_switch_scheduled": sched_ok,
            "scheduler_epoch_before_after": [epoch_before, epoch_after],
            "runs_of_an_old_epoch_made_after_the_new_one_began": stale,
            "new_primary_state": ha.state().get("n2"),
        })
        result["ok"] = (not missing and not bad and int(double) == 0 and sched_ok and stale == 0
                        and epoch_after > epoch_before and {str(e[2]) for e in during} == {"503"})
    finally:
        if m:
            m.stop()
        ha.stop()
        if a.keep:
            print("kept", top, file=sys.stderr)
        else:
            shutil.rmtree(top, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


def _status(m, path):
    try:
        return m.api("GET", path)[0]
    except OSError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
