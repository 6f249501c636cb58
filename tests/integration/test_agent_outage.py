#!/usr/bin/python3
"""A control-plane outage is not a node failure (docs/agent.md "The node
channel"): muster-api is paused (SIGSTOP) for 60 s, three times the
heartbeat timeout, while two fake-GPU agents run a job each. The
scheduler keeps running but marks no node DOWN (every heartbeat stopped at
once: the control plane's silence, not the nodes'); the agents keep their
processes; after SIGCONT the job that exited during the pause is reported
with its real exit code (FAILED, 3) and the one still running ends
COMPLETED. Then one agent is killed while the other is heard: its node goes
DOWN after the timeout as before. The same for PostgreSQL stopped under a
running muster-api."""
import os
import signal
import subprocess
import time

import harness
from harness import check, check_eq

NODES = ("out-n1", "out-n2")
# settings.heartbeat_timeout for this test (s): above the agents' longest
# reconnect backoff (15 s), which a keepalive-broken stream may be in when
# muster-api resumes
TIMEOUT = 20
PAUSE = 60


def start_agent(c, n, tok):
    return c.start_process(
        [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port, "--node", n,
         "--address", "127.0.0.1", "--state-dir", os.path.join(c.dir, "state-" + n),
         "--gpu-backend", "fake", "--fake-gpus", "1", "--heartbeat-interval", "500ms",
         "--token-file", c.token_file(tok, "token-" + n)] + c.agent_flags(),
        name="agent-" + n)


def submit(c, user, script):
    st, _, b = c.api("POST", "/v1/jobs", {
        "name": "outage", "nodes": 1, "gpus_per_node": 1, "command": ["/bin/sh", "-c", script],
        "time_limit": "10:00"}, token=user)
    check_eq(st, 201, "submit", b)
    return str(b["id"])


def state(c, jid):
    return c.sql_value("SELECT state FROM jobs WHERE id = $1", jid)


def test_api_pause_is_not_a_node_failure():
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    with harness.Cluster(api=True) as c:
        c.make_tenant("out")
        c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = 'out'")
        c.sql("UPDATE settings SET value = $1 WHERE key = 'heartbeat_timeout'", str(TIMEOUT))
        user = c.make_token("tenant", tenant="out", user="oli")
        c.start_process(["muster-scheduler", "--db", c.db_url], name="scheduler")
        agents = {n: start_agent(c, n, c.make_token("agent", node=n)) for n in NODES}
        c.wait_until(lambda: c.sql_value("SELECT count(*) FROM nodes WHERE up") == "2", 20, "agents up")
        out = os.path.join(c.dir, "out")
        os.makedirs(out)
        # one exits (3) during the pause, one after it
        early = submit(c, user, "touch %s/early; sleep 20; exit 3" % out)
        late = submit(c, user, "touch %s/late; sleep %d; exit 0" % (out, PAUSE + 6))
        c.wait_until(lambda: state(c, early) == "RUNNING" and state(c, late) == "RUNNING", 30, "both RUNNING")
        c.wait_until(lambda: os.path.exists(out + "/early") and os.path.exists(out + "/late"), 10, "started")
        nodes = c.sql("SELECT DISTINCT n.name FROM run_allocations a JOIN nodes n ON n.id = a.node_id")
        check_eq(len(nodes), 2, "one job per node", nodes)
        api = c.api_proc
        os.kill(api.pid, signal.SIGSTOP)
        try:
            time.sleep(PAUSE)
        finally:
            os.kill(api.pid, signal.SIGCONT)
        t0 = time.monotonic()
        check_eq(c.sql_value("SELECT count(*) FROM events WHERE kind = 'node.down'"), "0", "no node DOWN")
        c.wait_until(lambda: state(c, early) not in ("RUNNING", "STARTING"), 30, "early job reported")
        print("exit during the pause reported %.1fs after SIGCONT" % (time.monotonic() - t0))
        check_eq(state(c, early), "FAILED", "the real outcome of the early job")
        check_eq(c.sql_value("SELECT exit_code FROM jobs WHERE id = $1", early), "3")
        check_eq(c.sql_value("SELECT end_reason FROM jobs WHERE id = $1", early) != "node_fail", True)
        c.wait_until(lambda: state(c, late) not in ("RUNNING", "STARTING"), 40, "late job ends")
        check_eq(state(c, late), "COMPLETED", "late job")
        check_eq(c.sql_value("SELECT exit_code FROM jobs WHERE id = $1", late), "0")
        check_eq(c.sql_value("SELECT count(*) FROM events WHERE kind = 'node.down'"), "0", "no node DOWN")
        check_eq(c.sql_value("SELECT count(*) FROM nodes WHERE up"), "2")
        # one node silent while the other is heard: DOWN after the timeout
        c.stop_process(agents[NODES[1]], signal.SIGKILL)
        t1 = time.monotonic()
        c.wait_until(lambda: c.sql_value("SELECT up FROM nodes WHERE name = $1", NODES[1]) == "f",
                     TIMEOUT + 30, "the silent node DOWN")
        print("silent node DOWN after %.1fs" % (time.monotonic() - t1))
        check(time.monotonic() - t1 >= TIMEOUT - 1, "not before the timeout")
        check_eq(c.sql_value("SELECT up FROM nodes WHERE name = $1", NODES[0]), "t", "the heard node stays up")


def test_database_outage_is_not_a_node_failure():
    """PostgreSQL stopped for three heartbeat timeouts under running agents:
    muster-api keeps their streams, no node goes DOWN when it is back, and
    a job that exited meanwhile is reported with its real exit code."""
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    timeout = 4
    with harness.Cluster(api=True) as c:
        c.make_tenant("odb")
        c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = 'odb'")
        c.sql("UPDATE settings SET value = $1 WHERE key = 'heartbeat_timeout'", str(timeout))
        user = c.make_token("tenant", tenant="odb", user="oda")
        c.start_process(["muster-scheduler", "--db", c.db_url], name="scheduler")
        for n in NODES:
            start_agent(c, n, c.make_token("agent", node=n))
        c.wait_until(lambda: c.sql_value("SELECT count(*) FROM nodes WHERE up") == "2", 20, "agents up")
        out = os.path.join(c.dir, "out")
        os.makedirs(out)
        early = submit(c, user, "touch %s/early; sleep 3; exit 5" % out)
        late = submit(c, user, "touch %s/late; sleep 25; exit 0" % out)
        c.wait_until(lambda: state(c, early) == "RUNNING" and state(c, late) == "RUNNING", 30, "both RUNNING")
        subprocess.run([c.devdb, "stop", "--dir", c.state_dir], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        try:
            time.sleep(3 * timeout)
        finally:
            subprocess.run([c.devdb, "start", "--dir", c.state_dir], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        c.wait_until(lambda: state(c, early) not in ("RUNNING", "STARTING"), 30, "early job reported")
        check_eq(state(c, early), "FAILED", "the real outcome of the early job")
        check_eq(c.sql_value("SELECT exit_code FROM jobs WHERE id = $1", early), "5")
        c.wait_until(lambda: state(c, late) not in ("RUNNING", "STARTING"), 40, "late job ends")
        check_eq(state(c, late), "COMPLETED", "late job")
        check_eq(c.sql_value("SELECT count(*) FROM events WHERE kind = 'node.down'"), "0", "no node DOWN")
        check_eq(c.sql_value("SELECT count(*) FROM nodes WHERE up"), "2")


if __name__ == "__main__":
    harness.main()
