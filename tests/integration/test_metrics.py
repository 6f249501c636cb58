#!/usr/bin/python3
"""Prometheus metrics from every daemon (issue 13, item 2).

muster-api, muster-scheduler --metrics-addr and muster-agent --metrics-addr
run against one cluster with a job done and an XID injected; each daemon's
text passes `promtool check metrics` (Debian `prometheus`), carries the
names dashboards and alerts rely on, and every query of the Grafana
dashboard in docker/ names a metric one of them exposes.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request

import harness
from harness import check, check_eq

S = {}
DASHBOARD = os.path.join(harness.SOURCE_DIR, "docker", "grafana-dashboard.json")


def scrape(port, path="/metrics"):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
        check_eq(r.status, 200)
        check(r.headers["Content-Type"].startswith("text/plain"), r.headers["Content-Type"])
        return r.read().decode()


def samples(text):
    """{(name, frozenset(labels.items())): value}"""
    out = {}
    for ln in text.splitlines():
        if not ln or ln.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', ln)
        check(m, "unparsable line %r" % ln)
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), frozenset(labels.items()))] = float(m.group(4))
    return out


def names(text):
    """Every series name the text can produce (histograms: _bucket/_sum/_count too)."""
    out = set()
    for ln in text.splitlines():
        m = re.match(r"^# TYPE (\S+) (\S+)$", ln)
        if m:
            out.add(m.group(1))
            if m.group(2) == "histogram":
                out |= {m.group(1) + s for s in ("_bucket", "_sum", "_count")}
    return out


def value(text, name, **labels):
    want = set(labels.items())
    for (n, ls), v in samples(text).items():
        if n == name and want <= set(ls):
            return v
    return None


def promtool(text, who):
    if not shutil.which("promtool"):
        harness.skip("promtool (Debian package prometheus) is not installed: scripts/bootstrap")
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=30)
    check_eq(r.returncode, 0, who, r.stdout, r.stderr)


def setup(c):
    if S:
        return S
    harness.require_binary("muster-scheduler")
    harness.require_binary("muster-agent")
    S["sched_port"] = harness.free_port()
    S["agent_port"] = harness.free_port()
    c.make_tenant("mt")
    token = c.make_token("agent", node="m1")
    state = os.path.join(c.dir, "state-m1")
    S["sched"] = c.start_process(["muster-scheduler", "--db", c.db_url, "--tick", "200ms",
                     "--metrics-addr", "127.0.0.1:%d" % S["sched_port"]], name="sched")
    S["agent"] = c.start_process(
        [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port, "--node", "m1",
         "--address", "127.0.0.1", "--state-dir", state, "--gpu-backend", "fake",
         "--fake-gpus", "4", "--fake-gpu-model", "H100", "--heartbeat-interval", "300ms",
         "--metrics-addr", "127.0.0.1:%d" % S["agent_port"]] + c.agent_flags(),
        env={"MUSTER_AGENT_TOKEN": token}, name="agent",
        wait_for=lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name = 'm1' AND up") == "1",
        timeout=30)
    st, _, job = c.api("POST", "/v1/jobs", {"tenant": "mt", "nodes": 1, "gpus_per_node": 1,
                                            "command": ["true"]})
    check_eq(st, 201, job)
    c.wait_until(lambda: c.sql_value("SELECT state FROM jobs WHERE id = $1", job["id"]) == "COMPLETED",
                 60, "the job completes")
    # a job that cannot fit stays pending with a reason
    st, _, big = c.api("POST", "/v1/jobs", {"tenant": "mt", "nodes": 1, "gpus_per_node": 8,
                                            "command": ["true"]})
    check_eq(st, 201, big)
    with open(os.path.join(state, "fault"), "a") as f:
        f.write("gpu 1 xid 79\n")
    c.api("GET", "/v1/jobs", token="mst_not_a_token")  # one auth failure
    return S


def test_scheduler_metrics(c):
    s = setup(c)
    c.wait_until(lambda: value(scrape(s["sched_port"]), "muster_scheduler_leader") == 1, 20, "leader")
    c.wait_until(lambda: value(scrape(s["sched_port"]), "muster_jobs_pending") is not None, 20,
                 "a pending reason")
    text = scrape(s["sched_port"])
    promtool(text, "muster-scheduler")
    check(value(text, "muster_scheduler_cycle_duration_seconds_count") >= 1, text)
    check_eq(value(text, "muster_jobs", state="COMPLETED", tenant="mt"), 1.0)
    check_eq(value(text, "muster_jobs", state="PENDING", tenant="mt"), 1.0)
    check(value(text, "muster_scheduler_epoch") >= 1, text)
    # every GPU in exactly one state (the XID may have drained the node by now)
    check_eq(sum(value(text, "muster_gpus", state=st, model="H100")
                 for st in ("allocated", "idle", "unhealthy", "draining", "down")), 4.0)
    check(value(text, "muster_scheduler_starts_total") >= 1, text)
    for n in ("muster_scheduler_preemptions_total", "muster_scheduler_requeues_total",
              "muster_scheduler_reservations", "muster_fairshare_factor",
              "muster_scheduler_database_up"):
        check(n in names(text), n, text)
    # only GET /metrics answers there
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % s["sched_port"], timeout=10) as r:
        check_eq(r.status, 200)
    try:
        scrape(s["sched_port"], "/other")
        check(False, "/other answered")
    except urllib.error.HTTPError as e:
        check_eq(e.code, 404)
    S["sched_text"] = text


def test_agent_metrics(c):
    s = setup(c)
    c.wait_until(lambda: value(scrape(s["agent_port"]), "muster_gpu_xid_errors_total",
                               gpu="1", xid="79") == 1, 20, "the XID counted")
    text = scrape(s["agent_port"])
    promtool(text, "muster-agent")
    check_eq(value(text, "muster_agent_gpu_temperature_celsius", node="m1", gpu="0", model="H100") is not None, True)
    check_eq(value(text, "muster_agent_gpu_memory_total_bytes", node="m1", gpu="3") > 0, True)
    check(value(text, "muster_agent_runs_started_total", node="m1") >= 1, text)
    check_eq(value(text, "muster_agent_stream_connected", node="m1"), 1.0)
    check(value(text, "muster_agent_stream_reconnects_total", node="m1") is not None, text)
    check(value(text, "muster_gpu_ecc_errors_total", node="m1", gpu="0") is not None, text)
    S["agent_text"] = text


def test_api_metrics(c):
    setup(c)
    st, _, text = c.api("GET", "/metrics", token="")
    check_eq(st, 200)
    promtool(text, "muster-api")
    check(value(text, "muster_api_submits_total", api="rest", kind="single") >= 2, text)
    check(value(text, "muster_api_batch_jobs_total", api="rest") is not None, text)
    check(value(text, "muster_api_auth_failures_total") >= 1, text)
    check(value(text, "muster_api_event_streams", kind="watch") is not None, text)
    S["api_text"] = text


def test_dashboard_queries_name_existing_metrics(c):
    setup(c)
    known = set()
    for k in ("sched_text", "agent_text", "api_text"):
        check(k in S, "run with the daemon tests first")
        known |= names(S[k])
    with open(DASHBOARD) as f:
        dash = json.load(f)
    exprs = []

    def walk(o):
        if isinstance(o, dict):
            if isinstance(o.get("expr"), str):
                exprs.append(o["expr"])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(dash)
    check(len(exprs) >= 8, "the dashboard has %d queries" % len(exprs))
    for e in exprs:
        used = set(re.findall(r"\bmuster_[a-z0-9_]+", e))
        check(used, "a query naming no muster metric: %r" % e)
        missing = used - known
        check(not missing, "dashboard query %r names %s, which no daemon exposes" % (e, sorted(missing)))


def test_bad_metrics_addr_is_refused(c):
    r = subprocess.run([harness.binary("muster-scheduler"), "--db", c.db_url, "--metrics-addr", "nonsense"],
                       capture_output=True, text=True, timeout=30)
    check_eq(r.returncode, 2, r.stderr)
    check("metrics-addr" in r.stderr or "host:port" in r.stderr, r.stderr)



def test_daemons_with_metrics_stop_promptly(c):
    """SIGTERM still ends a daemon serving metrics (the listener thread joins)."""
    setup(c)
    for k in ("agent", "sched"):
        p = S[k]
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=20)
        check_eq(rc, 0, k)
        check(time.monotonic() - t0 < 5, "%s took %.1fs to stop" % (k, time.monotonic() - t0))


if __name__ == "__main__":
    harness.main(api=True)
