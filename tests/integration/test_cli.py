"""The real `muster` binary against a real muster-api and PostgreSQL.

Every check runs the CLI as a user would (a subprocess with MUSTER_URL /
MUSTER_TOKEN or a config file) and checks its stdout, stderr, exit code,
and the database or REST state it should have changed. An endpoint the API
does not serve fails the test that needs it.
"""

import json
import os
import re
import secrets
import subprocess
import tempfile

import harness
from harness import check, check_eq

EXIT_ERROR, EXIT_USAGE, EXIT_NOTFOUND, EXIT_AUTH, EXIT_UNAVAIL = 1, 2, 3, 4, 5
ENDPOINT_MISSING = (404, 405, 501)


def muster():
    return harness.require_binary("muster")


def run(c, *args, token=None, env=None, url=None):
    """Runs muster; returns (exit code, stdout, stderr). token=None: the admin token."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    e["HOME"] = tempfile.gettempdir() + "/muster-cli-nohome"  # no ~/.config/muster here
    if c is not None:
        e["MUSTER_URL"] = url or c.api_url
        e["MUSTER_TOKEN"] = c.admin_token if token is None else token
    e.update(env or {})
    r = subprocess.run([muster()] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=e, timeout=60)
    return r.returncode, r.stdout, r.stderr


def check_one_error_line(err, *needles):
    lines = err.splitlines()
    check_eq(len(lines), 1, "stderr should be one line:", repr(err))
    check(lines[0].startswith("muster: error: "), repr(err))
    for n in needles:
        check(n in lines[0], "stderr %r lacks %r" % (err, n))


def need(c, method, path, body=None):
    """Fails the calling test when the API does not route `path`."""
    st, _, b = c.api(method, path, body)
    check(st not in ENDPOINT_MISSING or (isinstance(b, dict) and b.get("field")),
          "muster-api does not serve %s %s (%s)" % (method, path, st))
    return st, b


_tenants = {}


def tenant(c, name):
    """A tenant and a tenant-scoped token for it (made once per cluster)."""
    if name not in _tenants:
        need(c, "GET", "/v1/tenants")
        c.make_tenant(name)
        _tenants[name] = c.make_token("tenant", tenant=name, user="u-" + name)
    return _tenants[name]


def submitted_id(out):
    m = re.fullmatch(r"Submitted job (\d+)\n", out)
    check(m, "unexpected submit output %r" % out)
    return int(m.group(1))


# -- no server needed ------------------------------------------------------

def test_usage_errors_without_server():
    rc, out, err = run(None, "--help")
    check_eq(rc, 0, err)
    check("submit" in out and "queue" in out and "Exit codes" in out, out)
    rc, out, _ = run(None, "submit", "--help")
    check_eq(rc, 0)
    check("--dependency" in out, out)
    cases = [
        (["bogus"], "unknown command"),
        (["submit", "-N", "2"], "no command given"),
        (["submit", "-t", "1h", "--", "x"], "invalid --time"),
        (["submit", "--dependency=after:1", "--", "x"], "not supported"),
        (["submit", "--frob", "x"], "--frob"),
        (["queue", "--state", "XX"], "unknown job state"),
        (["cancel"], "missing argument"),
        (["cancel", "12", "x"], "invalid job id 'x'"),
        (["show", "-5"], "-5"),
        (["tenants", "frob"], "unknown action"),
        (["quota", "set", "ml"], "nothing to set"),
        (["tokens", "create"], "--role is required"),
    ]
    for args, needle in cases:
        rc, out, err = run(None, *args, env={"MUSTER_URL": "http://127.0.0.1:1"})
        check_eq(rc, EXIT_USAGE, args, err)
        check_eq(out, "", args)
        check_one_error_line(err, needle)


def test_output_write_failure():
    with open("/dev/full", "w") as full:
        r = subprocess.run([muster(), "--help"], stdout=full, stderr=subprocess.PIPE, text=True)
    check_eq(r.returncode, EXIT_ERROR, r.stderr)
    check_one_error_line(r.stderr, "cannot write the output")


def test_unreachable_server():
    port = harness.free_port()  # nothing listens there
    rc, out, err = run(None, "queue", env={"MUSTER_URL": "http://127.0.0.1:%d" % port,
                                           "MUSTER_TOKEN": "mst_never_printed"})
    check_eq(rc, EXIT_UNAVAIL, err)
    check_eq(out, "")
    check_one_error_line(err, "cannot reach http://127.0.0.1:%d" % port)
    check("mst_never_printed" not in err)


def test_bad_url_is_usage_error():
    rc, out, err = run(None, "queue", env={"MUSTER_URL": "localhost:8080"})
    check_eq(rc, EXIT_USAGE, err)
    check_one_error_line(err, "invalid server URL 'localhost:8080'")


def test_config_file_missing_is_usage_error():
    rc, _, err = run(None, "queue", env={"MUSTER_CONFIG": "/nonexistent/muster.conf"})
    check_eq(rc, EXIT_USAGE, err)
    check_one_error_line(err, "/nonexistent/muster.conf")


# -- against muster-api ----------------------------------------------------

def test_submit_queue_show_cancel(c):
    need(c, "GET", "/v1/jobs")
    tok = tenant(c, "cli-ml")
    rc, out, err = run(c, "submit", "-N", "2", "--gpus-per-node", "8", "-t", "1:30:00",
                       "-J", "train", "--label", "team=vision", "--env", "LR=3e-4",
                       "--workdir", "/data", "--max-retries", "2", "--",
                       "torchrun", "train.py", "--lr", "3e-4", token=tok)
    check_eq(rc, 0, err)
    jid = submitted_id(out)
    row = c.sql("SELECT state, nodes, gpus_per_node, time_limit, name, command::text, "
                "labels->>'team', env->>'LR', workdir, max_retries FROM jobs WHERE id = $1", jid)
    check_eq(row, [("PENDING", "2", "8", "5400", "train",
                    '["torchrun", "train.py", "--lr", "3e-4"]', "vision", "3e-4", "/data",
                    "2")])

    rc, out, err = run(c, "submit", "--parsable", "-t", "2-12", "--", "true", token=tok)
    check_eq(rc, 0, err)
    check(re.fullmatch(r"\d+\n", out), repr(out))
    jid2 = int(out)
    check_eq(c.sql_value("SELECT time_limit FROM jobs WHERE id = $1", jid2), "216000")

    rc, out, err = run(c, "queue", token=tok)
    check_eq(rc, 0, err)
    lines = out.splitlines()
    check_eq(lines[0].split(), ["JOBID", "TENANT", "USER", "NAME", "ST", "NODES", "GPUS",
                                "TIME_LIMIT", "REASON"])
    rows = {int(l.split()[0]): l.split() for l in lines[1:]}
    check(jid in rows and jid2 in rows, out)
    check_eq(rows[jid][1:8], ["cli-ml", "u-cli-ml", "train", "PD", "2", "16", "1:30:00"], out)

    rc, out, err = run(c, "queue", "--json", token=tok)
    check_eq(rc, 0, err)
    doc = json.loads(out)
    check_eq(doc["next_cursor"], None)
    got = {j["id"]: j for j in doc["items"]}
    check_eq(got[jid]["time_limit"], 5400)
    check_eq(got[jid]["labels"], {"team": "vision"})

    rc, out, err = run(c, "queue", "--label", "team=vision", "--json", token=tok)
    check_eq(rc, 0, err)
    check_eq([j["id"] for j in json.loads(out)["items"]], [jid])

    rc, out, err = run(c, "show", jid, token=tok)
    check_eq(rc, 0, err)
    for needle in ("JobId=%d JobName=train" % jid, "JobState=PENDING", "TimeLimit=1:30:00",
                   "NumNodes=2", "GpusPerNode=8", "Command=torchrun train.py --lr 3e-4",
                   "Labels=team=vision", "Tenant=cli-ml", "Kind=job.submitted"):
        check(needle in out, "show lacks %r:\n%s" % (needle, out))
    check("3e-4" not in out.split("Env=")[1], "show must not print env values")

    rc, out, err = run(c, "show", jid, "--json", token=tok)
    check_eq(rc, 0, err)
    doc = json.loads(out)
    check_eq(doc["id"], jid)
    check_eq(doc["command"], ["torchrun", "train.py", "--lr", "3e-4"])

    rc, out, err = run(c, "cancel", jid, jid2, token=tok)
    check_eq((rc, out, err), (0, "", ""))
    check_eq(c.sql("SELECT state FROM jobs WHERE id IN ($1, $2)", jid, jid2),
             [("CANCELLED",), ("CANCELLED",)])
    rc, out, err = run(c, "queue", token=tok)
    check(not any(l.split()[0] in (str(jid), str(jid2)) for l in out.splitlines()[1:]), out)
    rc, out, err = run(c, "queue", "-t", "CA", token=tok)
    check(re.search(r"^%d\s.*\sCA\s" % jid, out, re.M), out)
    rc, out, err = run(c, "cancel", jid, token=tok)
    check_eq(rc, EXIT_ERROR, err)
    check_one_error_line(err, "job %d:" % jid, "Invalid state")


def test_dependencies_and_idempotency(c):
    need(c, "GET", "/v1/jobs")
    tok = tenant(c, "cli-dep")
    ids = []
    for _ in range(2):
        rc, out, err = run(c, "submit", "--parsable", "--", "true", token=tok)
        check_eq(rc, 0, err)
        ids.append(int(out))
    rc, out, err = run(c, "submit", "--parsable",
                       "--dependency=afterok:%d:%d,afterany:%d" % (ids[0], ids[1], ids[0]),
                       "--", "true", token=tok)
    check_eq(rc, 0, err)
    deps = json.loads(c.sql_value("SELECT dependencies::text FROM jobs WHERE id = $1", int(out)))
    check_eq(sorted((d["type"], d["job_id"]) for d in deps),
             sorted([("afterok", ids[0]), ("afterok", ids[1]), ("afterany", ids[0])]))

    key = "ci-" + secrets.token_hex(6)
    rc1, out1, err1 = run(c, "submit", "--parsable", "--idempotency-key", key, "--", "echo",
                          "once", token=tok)
    rc2, out2, err2 = run(c, "submit", "--parsable", "--idempotency-key", key, "--", "echo",
                          "once", token=tok)
    check_eq((rc1, rc2), (0, 0), err1, err2)
    check_eq(out1, out2)
    check_eq(c.sql_value("SELECT count(*) FROM jobs WHERE idempotency_key = $1", key), "1")
    rc, out, err = run(c, "submit", "--idempotency-key", key, "--", "echo", "other", token=tok)
    check_eq(rc, EXIT_ERROR, err)
    check_one_error_line(err, "Idempotency key reused")


def test_errors(c):
    need(c, "GET", "/v1/jobs")
    tok = tenant(c, "cli-err")
    bad = "mst_" + secrets.token_urlsafe(32)[:43]
    rc, out, err = run(c, "queue", token=bad)
    check_eq(rc, EXIT_AUTH, err)
    check_eq(out, "")
    check_one_error_line(err, "Unauthenticated")
    check(bad not in err)
    rc, out, err = run(c, "queue", token="")
    check_eq(rc, EXIT_AUTH, err)

    rc, out, err = run(c, "show", "999999999", token=tok)
    check_eq(rc, EXIT_NOTFOUND, err)
    check_one_error_line(err, "Not found")

    before = c.sql_value("SELECT count(*) FROM jobs")
    rc, out, err = run(c, "submit", "-J", "x" * 300, "--", "true", token=tok)
    check_eq(rc, EXIT_ERROR, err)
    check_one_error_line(err, "(field: name)")
    rc, out, err = run(c, "submit", "--env", "A=" + "v" * 40000, "--", "true", token=tok)
    check_eq(rc, EXIT_ERROR, err)
    check_one_error_line(err, "(field: env.A)")
    check_eq(c.sql_value("SELECT count(*) FROM jobs"), before)

    # A tenant token may not touch nodes: 403 -> the auth exit code.
    st, _ = need(c, "GET", "/v1/nodes")
    rc, out, err = run(c, "node", "drain", "n-x", token=tok)
    check_eq(rc, EXIT_AUTH, err)
    check_one_error_line(err, "Forbidden")


def test_tenant_isolation(c):
    need(c, "GET", "/v1/jobs")
    a, b = tenant(c, "cli-iso-a"), tenant(c, "cli-iso-b")
    rc, out, err = run(c, "submit", "--parsable", "-J", "secret-a", "--", "true", token=a)
    check_eq(rc, 0, err)
    jid = int(out)
    rc, out, err = run(c, "show", jid, token=b)
    check_eq(rc, EXIT_NOTFOUND, err)
    check_one_error_line(err, "Not found")
    rc, out, err = run(c, "cancel", jid, token=b)
    check_eq(rc, EXIT_NOTFOUND, err)
    rc, out, err = run(c, "explain", jid, token=b)
    check(rc in (EXIT_NOTFOUND, EXIT_ERROR), rc, err)  # not found, or no explain yet
    rc, out, err = run(c, "queue", "-t", "all", "--json", token=b)
    check_eq(rc, 0, err)
    check(jid not in [j["id"] for j in json.loads(out)["items"]])
    check("secret-a" not in out)
    rc, out, err = run(c, "queue", "-A", "cli-iso-a", "--json", token=b)
    check(rc != 0 or json.loads(out)["items"] == [], rc, out)
    check_eq(c.sql_value("SELECT state FROM jobs WHERE id = $1", jid), "PENDING")
    # The admin sees both, and can filter by tenant.
    rc, out, err = run(c, "queue", "-A", "cli-iso-a", "--json")
    check_eq(rc, 0, err)
    check_eq([j["id"] for j in json.loads(out)["items"]], [jid])


def test_queue_follows_cursors(c):
    need(c, "GET", "/v1/jobs")
    tok = tenant(c, "cli-many")
    n = 1203  # over one page of 1000
    st, body = need(c, "POST", "/v1/jobs/batch",
                    {"jobs": [{"tenant": "cli-many", "nodes": 1, "gpus_per_node": 0,
                               "command": ["true"], "name": "b%d" % i} for i in range(n)]})
    check_eq(st, 201, body)
    rc, out, err = run(c, "queue", "--json", token=tok)
    check_eq(rc, 0, err)
    ids = [j["id"] for j in json.loads(out)["items"]]
    check_eq(len(ids), n)
    check_eq(ids, sorted(set(ids)))
    rc, out, err = run(c, "queue", token=tok)
    check_eq(len(out.splitlines()), n + 1)


def test_config_file_and_flags(c):
    need(c, "GET", "/v1/jobs")
    tok = tenant(c, "cli-conf")
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write("# written by test_cli\nurl = %s\ntoken = \"%s\"\n" % (c.api_url, tok))
        path = f.name
    try:
        env = {"MUSTER_CONFIG": path}
        r = subprocess.run([muster(), "submit", "--parsable", "--", "true"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict({k: v for k, v in os.environ.items()
                                     if not k.startswith("MUSTER_")}, **env))
        check_eq(r.returncode, 0, r.stderr)
        check_eq(c.sql_value("SELECT t.name FROM jobs j JOIN tenants t ON t.id = j.tenant_id "
                             "WHERE j.id = $1", int(r.stdout)), "cli-conf")
        # The flag wins over the file.
        r = subprocess.run([muster(), "--token", "mst_wrong", "queue"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict({k: v for k, v in os.environ.items()
                                     if not k.startswith("MUSTER_")}, **env))
        check_eq(r.returncode, EXIT_AUTH, r.stderr)
        check(tok not in r.stderr and "mst_wrong" not in r.stderr)
    finally:
        os.unlink(path)


def test_admin_commands(c):
    need(c, "GET", "/v1/tenants")
    rc, out, err = run(c, "tenants", "create", "cli-adm", "--shares", "5", "--description",
                       "made by the CLI test")
    check_eq((rc, out), (0, "Created tenant cli-adm\n"), err)
    check_eq(c.sql_value("SELECT shares FROM tenants WHERE name = 'cli-adm'"), "5")
    rc, out, err = run(c, "tenants", "list")
    check_eq(rc, 0, err)
    check(re.search(r"^cli-adm\s+root\s+\S+\s+5\s", out, re.M), out)
    rc, out, err = run(c, "tenants", "update", "cli-adm", "--shares", "7")
    check_eq(rc, 0, err)
    rc, out, err = run(c, "tenants", "show", "cli-adm", "--json")
    check_eq(json.loads(out)["shares"], 7)
    rc, out, err = run(c, "tenants", "show", "nope-nope")
    check_eq(rc, EXIT_NOTFOUND, err)

    st, _ = need(c, "GET", "/v1/tenants/cli-adm/quota")
    rc, out, err = run(c, "quota", "set", "cli-adm", "--max-gpus", "16", "--max-time-limit",
                       "1-00:00:00")
    check_eq(rc, 0, err)
    rc, out, err = run(c, "quota", "set", "cli-adm", "--max-pending-jobs", "3")
    check_eq(rc, 0, err)
    rc, out, err = run(c, "quota", "show", "cli-adm", "--json")
    check_eq(rc, 0, err)
    q = [x for x in json.loads(out)["items"] if x.get("gpu_model", "") == ""][0]
    check_eq((q["max_gpus"], q["max_pending_jobs"], q["max_time_limit"]), (16, 3, 86400), q)
    rc, out, err = run(c, "quota", "show", "cli-adm")
    check(re.search(r"\(any\)\s+0\s+16\s+-\s+3\s+1-00:00:00", out), out)
    rc, out, err = run(c, "quota", "set", "cli-adm", "--max-gpus", "none")
    check_eq(rc, 0, err)
    check_eq(c.sql("SELECT max_gpus, max_pending_jobs FROM quotas q JOIN tenants t "
                   "ON t.id = q.tenant_id WHERE t.name = 'cli-adm'"), [(None, "3")])

    need(c, "GET", "/v1/tokens")
    rc, secret, err = run(c, "tokens", "create", "--role", "tenant", "--tenant", "cli-adm",
                          "--user", "carol", "--name", "cli-test")
    check_eq(rc, 0, err)
    secret = secret.strip()
    check(re.fullmatch(r"mst_[A-Za-z0-9_-]{43}", secret), secret)
    check(secret not in err)
    rc, out, err = run(c, "whoami", "--json", token=secret)
    check_eq(rc, 0, err)
    check_eq(json.loads(out)["tenant"], "cli-adm")
    rc, out, err = run(c, "tokens", "list", "--json")
    mine = [t for t in json.loads(out)["items"] if t["name"] == "cli-test"]
    check_eq(len(mine), 1)
    check(secret not in out, "the list must not show secrets")
    rc, out, err = run(c, "tokens", "revoke", mine[0]["id"])
    check_eq(rc, 0, err)
    rc, out, err = run(c, "queue", token=secret)
    check_eq(rc, EXIT_AUTH, err)

    rc, out, err = run(c, "tenants", "delete", "cli-adm")
    check_eq(rc, 0, err)
    check_eq(c.sql_value("SELECT count(*) FROM tenants WHERE name = 'cli-adm'"), "0")


def test_priority_classes(c):
    need(c, "GET", "/v1/priority-classes")
    rc, out, err = run(c, "classes", "create", "cli-hi", "--priority", "100", "--preemptible",
                       "no", "--default-time-limit", "30", "--max-time-limit", "2-00:00:00",
                       "--grace-period", "60", "--description", "urgent")
    check_eq((rc, out), (0, "Created priority class cli-hi\n"), err)
    check_eq(c.sql("SELECT priority, preemptible, default_time_limit, max_time_limit, "
                   "grace_period FROM priority_classes WHERE name = 'cli-hi'"),
             [("100", "f", "1800", "172800", "60")])
    rc, out, err = run(c, "classes", "list")
    check_eq(rc, 0, err)
    check(re.search(r"^cli-hi\s+100\s+no\s+30:00\s+2-00:00:00\s+60s\s+no\s+urgent$", out,
                    re.M), out)
    rc, out, err = run(c, "classes", "update", "cli-hi", "--priority", "200",
                       "--max-time-limit", "none")
    check_eq(rc, 0, err)
    rc, out, err = run(c, "classes", "show", "cli-hi", "--json")
    doc = json.loads(out)
    check_eq((doc["priority"], doc["max_time_limit"]), (200, None))
    tok = tenant(c, "cli-cls")
    rc, out, err = run(c, "submit", "--parsable", "-q", "cli-hi", "--", "true", token=tok)
    check_eq(rc, 0, err)
    rc, out, err = run(c, "show", out.strip(), token=tok)
    check("PriorityClass=cli-hi" in out, out)
    rc, out, err = run(c, "submit", "-q", "cli-nope", "--", "true", token=tok)
    check_eq(rc, EXIT_NOTFOUND, err)
    check_one_error_line(err, "(field: priority_class)")
    rc, out, err = run(c, "classes", "create", "cli-tmp", "--priority", "1")
    check_eq(rc, 0, err)
    rc, out, err = run(c, "classes", "delete", "cli-tmp")
    check_eq((rc, out), (0, "Deleted priority class cli-tmp\n"), err)
    rc, out, err = run(c, "classes", "show", "cli-tmp")
    check_eq(rc, EXIT_NOTFOUND, err)
    rc, out, err = run(c, "classes", "create", "x", "--priority", "1", "--preemptible", "maybe")
    check_eq(rc, EXIT_USAGE, err)


def test_nodes(c):
    need(c, "GET", "/v1/nodes")
    c.sql("INSERT INTO nodes (name, address, topology, gpu_model, gpu_count, last_heartbeat) "
          "VALUES ('cli-n1', '10.0.0.1', 'b1/r1', 'H100', 2, now())")
    c.sql("INSERT INTO gpus (node_id, idx, model, healthy) SELECT id, g, 'H100', g = 0 "
          "FROM nodes, generate_series(0, 1) g WHERE name = 'cli-n1'")
    rc, out, err = run(c, "nodes")
    check_eq(rc, 0, err)
    check(re.search(r"^cli-n1\s+IDLE\s+H100\s+2\s+0\s+1/2\s+b1/r1\s", out, re.M), out)
    rc, out, err = run(c, "node", "drain", "cli-n1", "--reason", "bad fan")
    check_eq(rc, 0, err)
    check(out.startswith("Node cli-n1: DRAIN"), out)
    check_eq(c.sql("SELECT drain, drain_reason FROM nodes WHERE name = 'cli-n1'"),
             [("t", "bad fan")])
    rc, out, err = run(c, "node", "resume", "cli-n1")
    check_eq(rc, 0, err)
    check_eq(c.sql_value("SELECT drain FROM nodes WHERE name = 'cli-n1'"), "f")
    rc, out, err = run(c, "node", "show", "nope")
    check_eq(rc, EXIT_NOTFOUND, err)


def test_running_job_views(c):
    """A job the scheduler started (written here as the scheduler writes it) in
    queue, show and nodes, and a cancel that orders its run stopped."""
    need(c, "GET", "/v1/nodes")
    tok = tenant(c, "cli-run")
    c.sql("INSERT INTO nodes (name, topology, gpu_model, gpu_count, last_heartbeat) "
          "VALUES ('cli-r1', 'b1/r2', 'H100', 4, now())")
    c.sql("INSERT INTO gpus (node_id, idx, model) SELECT id, g, 'H100' "
          "FROM nodes, generate_series(0, 3) g WHERE name = 'cli-r1'")
    rc, out, err = run(c, "submit", "--parsable", "--gpus-per-node", "2", "-t", "10",
                       "-J", "live", "--", "sleep", "600", token=tok)
    check_eq(rc, 0, err)
    jid = int(out)
    c.sql("UPDATE jobs SET state = 'RUNNING', started_at = now() WHERE id = $1; "
          "INSERT INTO runs (job_id, attempt, epoch, state, nodes, gpus_per_node, time_limit, "
          "started_at) VALUES ($1, 1, 1, 'RUNNING', 1, 2, 600, now()); "
          "INSERT INTO run_allocations (run_id, node_id, node_rank, gpu_index) "
          "SELECT r.id, n.id, 0, g FROM runs r, nodes n, generate_series(0, 1) g "
          "WHERE r.job_id = $1 AND n.name = 'cli-r1'", jid)
    rc, out, err = run(c, "queue", token=tok)
    check(re.search(r"^%d\s+cli-run\s+u-cli-run\s+live\s+R\s+1\s+2\s+10:00\s" % jid, out,
                    re.M), out)
    rc, out, err = run(c, "show", jid, token=tok)
    check_eq(rc, 0, err)
    check("JobState=RUNNING" in out, out)
    check(re.search(r"^  Run=\d+ Attempt=1 State=RUNNING ", out, re.M), out)
    check("Nodes=cli-r1[rank=0,gpus=0,1]" in out, out)
    rc, out, err = run(c, "nodes")
    check(re.search(r"^cli-r1\s+MIXED\s+H100\s+4\s+2\s+4/4\s", out, re.M), out)
    rc, out, err = run(c, "cancel", jid, token=tok)
    check_eq((rc, err), (0, ""))
    check_eq(c.sql("SELECT stop_reason FROM runs WHERE job_id = $1", jid), [("cancel",)])


def test_default_name_and_later_endpoints(c):
    need(c, "GET", "/v1/jobs")
    tok = tenant(c, "cli-later")
    rc, out, err = run(c, "submit", "--parsable", "--", "/opt/jobs/train.sh", "--fast",
                       token=tok)
    check_eq(rc, 0, err)
    jid = int(out)
    check_eq(c.sql_value("SELECT name FROM jobs WHERE id = $1", jid), "train.sh")
    rc, out, err = run(c, "submit", "--parsable", "--wrap", "echo hi", token=tok)
    check_eq(c.sql("SELECT name, command::text FROM jobs WHERE id = $1", int(out)),
             [("wrap", '["/bin/sh", "-c", "echo hi"]')])
    for args, path in ((["explain", jid], "/v1/jobs/%d/explain" % jid),
                       (["usage", "--group-by", "user"], "/v1/usage"),
                       (["fairshare"], "/v1/fairshare"),
                       (["scheduler"], "/v1/scheduler")):
        need(c, "GET", path)
        rc, out, err = run(c, *args)
        check_eq(rc, 0, args, err)
        check(out, args)
    rc, out, err = run(c, "explain", "999999999")
    check_eq(rc, EXIT_NOTFOUND, err)
    check_one_error_line(err, "Not found")


def test_test_only(c):
    need(c, "GET", "/v1/jobs")
    tok = tenant(c, "cli-dry")
    c.sql("INSERT INTO nodes (name, gpu_model, gpu_count, last_heartbeat) "
          "VALUES ('cli-dry-n', 'H100', 0, now()) ON CONFLICT (name) DO NOTHING")
    before = c.sql_value("SELECT count(*) FROM jobs")
    rc, out, err = run(c, "submit", "--test-only", "-N", "1", "--", "true", token=tok)
    need(c, "POST", "/v1/jobs/dry-run",
         {"tenant": "cli-dry", "nodes": 1, "gpus_per_node": 0, "command": ["true"]})
    check_eq(rc, 0, err)
    check(out.startswith("Job would"), out)
    check_eq(c.sql_value("SELECT count(*) FROM jobs"), before)


if __name__ == "__main__":
    harness.require_binary("muster")
    harness.require_binary("muster-api")
    harness.main(api=True)
