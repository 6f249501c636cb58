#!/usr/bin/python3
"""muster-agent restarts without orphaning or double-starting: a run's
processes outlive a SIGKILLed agent; the next agent re-adopts them from its
state file (no second start), reports their exit when they end; a run
cancelled while its agent was down is stopped when the agent comes back.
One fake-GPU agent on loopback, real muster-api + muster-scheduler."""
import os
import signal
import time

import harness
from harness import check, check_eq
from test_grpc_common import make_tenant, make_token

S = {}
HOLD = ("echo $RANK >> $OUT/starts.$MUSTER_RUN_ID; "
        "while [ ! -e $OUT/release.$MUSTER_RUN_ID ]; do sleep 0.05; done")


def setup(c):
    if S:
        return S
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    c.start_api()
    make_tenant(c, "rst")
    c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = 'rst'")
    S["user"] = make_token(c, "tenant", tenant="rst", user="rob")
    S["token"] = make_token(c, "agent", node="rs-n1")
    S["token_file"] = c.token_file(S["token"])
    c.start_process(["muster-scheduler", "--db", c.db_url], name="scheduler")
    S["out"] = os.path.join(c.dir, "out")
    os.makedirs(S["out"])
    S["state"] = os.path.join(c.dir, "agent-state")
    S["net"] = os.path.join(c.dir, "net")
    os.makedirs(os.path.join(S["net"], "ib0"))
    set_link("up")
    S["agent"] = start_agent(c)
    return S


def start_agent(c):
    return c.start_process(
        [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port, "--node", "rs-n1",
         "--address", "127.0.0.1", "--state-dir", S["state"], "--gpu-backend", "fake",
         "--fake-gpus", "4", "--heartbeat-interval", "300ms", "--fabric-ifaces", "ib0",
         "--sysfs-net", S["net"], "--token-file", S["token_file"]] + c.agent_flags(),
        name="agent",
        wait_for=lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name = 'rs-n1' AND up") == "1")


def submit(c):
    st, _, b = c.api("POST", "/v1/jobs", {
        "name": "hold", "nodes": 1, "gpus_per_node": 2, "procs_per_node": 2,
        "command": ["/bin/sh", "-c", HOLD], "env": {"OUT": S["out"]}, "time_limit": "5:00"},
        token=S["user"])
    check_eq(st, 201, "submit", b)
    jid = b["id"]
    c.wait_until(lambda: c.sql_value("SELECT count(*) FROM runs WHERE job_id = $1 AND state = 'RUNNING'",
                                     str(jid)) == "1", 15, "run RUNNING")
    run = c.sql_value("SELECT id FROM runs WHERE job_id = $1", str(jid))
    c.wait_until(lambda: len(starts(run)) == 2, 10, "both processes started")
    return jid, run


def starts(run):
    try:
        return open(os.path.join(S["out"], "starts." + run)).read().split()
    except FileNotFoundError:
        return []


def group_alive(run):
    for line in open(os.path.join(S["state"], "agent.state")):
        f = line.split()
        if f[0] in ("run", "run2") and f[1] == run:
            try:
                os.killpg(int(f[4]), 0)
                return int(f[4])
            except OSError:
                return 0
    return 0


def job_state(c, jid):
    return c.sql_value("SELECT state FROM jobs WHERE id = $1", str(jid))


def set_link(state):
    path = os.path.join(S["net"], "ib0", "operstate")
    with open(path + ".tmp", "w") as f:
        f.write(state + "\n")
    os.rename(path + ".tmp", path)


def test_killed_agent_readopts(c):
    s = setup(c)
    jid, run = submit(c)
    pgid = group_alive(run)
    check(pgid > 0, "run's group alive")
    c.stop_process(s["agent"], signal.SIGKILL)
    time.sleep(0.3)
    check_eq(group_alive(run), pgid, "processes outlive the agent")
    s["agent"] = start_agent(c)
    c.wait_until(lambda: "run=%s re-adopted" % run in c.log_text("agent.2"), 10, "re-adopted")
    time.sleep(1.0)  # a desired state or two later: still one start per process
    check_eq(sorted(starts(run)), ["0", "1"], "no second start")
    check_eq(group_alive(run), pgid, "same group")
    check_eq(job_state(c, jid), "RUNNING", "job")
    open(os.path.join(s["out"], "release." + run), "w").close()
    c.wait_until(lambda: job_state(c, jid) == "COMPLETED", 15, "job COMPLETED after re-adoption")
    check_eq(c.sql_value("SELECT exit_code FROM runs WHERE id = $1", run), "0", "exit code")


def test_cancel_while_agent_down(c):
    s = setup(c)
    jid, run = submit(c)
    pgid = group_alive(run)
    c.stop_process(s["agent"], signal.SIGKILL)
    st, _, b = c.api("POST", "/v1/jobs/%s/cancel" % jid, {}, token=s["user"])
    check(st in (200, 202), "cancel", st, b)
    time.sleep(0.5)
    check_eq(group_alive(run), pgid, "nobody stopped it while the agent was down")
    s["agent"] = start_agent(c)
    c.wait_until(lambda: group_alive(run) == 0, 10, "stopped by the restarted agent")
    c.wait_until(lambda: job_state(c, jid) == "CANCELLED", 15, "job CANCELLED")
    check_eq(sorted(starts(run)), ["0", "1"], "never restarted")


def test_zz_fabric_link_down_drains(c):
    setup(c)
    check_eq(c.sql_value("SELECT drain FROM nodes WHERE name = 'rs-n1'"), "f", "not drained yet")
    set_link("down")
    c.wait_until(lambda: c.sql_value("SELECT drain FROM nodes WHERE name = 'rs-n1'") == "t", 5, "drained")
    check_eq(c.sql_value("SELECT drain_reason FROM nodes WHERE name = 'rs-n1'"), "fabric link ib0 down",
             "reason")


if __name__ == "__main__":
    harness.main(api=False)
