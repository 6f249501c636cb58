#!/usr/bin/python3
"""Slurm workflows from the CLI, end to end: a batch script whose #SBATCH
directives apply under a conflicting command-line flag and which runs with
the shape they give (processes, env, arguments); a refused directive
changes nothing; POST /v1/jobs with a `script` field; `muster submit
--wait` exit codes for COMPLETED, FAILED (the job's code), TIMEOUT and
CANCELLED, and a wait that rides out a muster-api restart.
One fake-GPU agent on loopback, real muster-api + muster-scheduler."""
import json
import os
import signal
import subprocess
import tempfile
import time

import harness
from harness import check, check_eq
from test_grpc_common import make_tenant, make_token

S = {}


def setup(c):
    if S:
        return S
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    harness.require_binary("muster")
    c.start_api()
    make_tenant(c, "sl")
    c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = 'sl'")
    # jobs run as a real account, so output files show whose they are
    S["acct"] = c.make_user("sl")
    S["user"] = make_token(c, "tenant", tenant="sl", user=S["acct"].pw_name)
    S["agent_token"] = make_token(c, "agent", node="sl-n1")
    c.start_process(["muster-scheduler", "--db", c.db_url], name="scheduler")
    S["work"] = os.path.join(c.dir, "work")
    os.makedirs(S["work"])
    os.chmod(c.dir, 0o755)
    os.chmod(S["work"], 0o777)
    c.start_process(
        [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port, "--node", "sl-n1",
         "--address", "127.0.0.1", "--state-dir", os.path.join(c.dir, "agent-state"),
         "--gpu-backend", "fake", "--fake-gpus", "8", "--heartbeat-interval", "300ms"]
        + c.agent_flags(identity=True),
        env={"MUSTER_AGENT_TOKEN": S["agent_token"]}, name="agent",
        wait_for=lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name = 'sl-n1' AND up") == "1")
    return S


def cli_env(c):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    e["HOME"] = tempfile.gettempdir() + "/muster-cli-nohome"
    e["MUSTER_URL"] = c.api_url
    e["MUSTER_TOKEN"] = S["user"]
    return e


def run(c, *args, timeout=90):
    r = subprocess.run([harness.binary("muster")] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=cli_env(c), cwd=S["work"],
                       timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def script(name, text):
    p = os.path.join(S["work"], name)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, 0o755)
    return p


def job(c, jid):
    st, _, b = c.api("GET", "/v1/jobs/%s" % jid, token=S["user"])
    check_eq(st, 200, b)
    return b


def logs(c, jid, rank):
    st, _, body = c.api("GET", "/v1/jobs/%s/logs?local_rank=%d" % (jid, rank), token=S["user"])
    check_eq(st, 200, body)
    return body


def njobs(c):
    return c.sql_value("SELECT count(*) FROM jobs")


def test_script_directives_under_the_command_line(c):
    setup(c)
    p = script("train.sbatch",
               "#!/bin/sh\n"
               "# a comment, then the directives\n"
               "#SBATCH -N 1 --ntasks-per-node=2\n"
               "#SBATCH -J fromscript -t 5\n"
               "#SBATCH --export=FOO=bar\n"
               "#SBATCH --mail-type=END\n"
               "echo \"rank=$LOCAL_RANK foo=$FOO args=$* pwd=$(pwd)\"\n"
               "#SBATCH --nodes=9\n")
    rc, out, err = run(c, "submit", "--wait", "-J", "cli", p, "a1", "a 2")
    check_eq(rc, 0, out, err)
    lines = out.splitlines()
    check(lines[0].startswith("Submitted job "), out)
    jid = lines[0].split()[-1]
    check_eq(lines[1], "Job %s COMPLETED ExitCode=0 Reason=completed" % jid, out)
    check_eq(err, "muster: warning: train.sbatch: line 6: --mail-type: muster sends no mail; ignored\n")
    j = job(c, jid)
    # -J from the command line; the rest from the script (a directive after the
    # first command is not one, as in sbatch)
    check_eq((j["name"], j["nodes"], j["procs_per_node"], j["time_limit"]), ("cli", 1, 2, 300), j)
    check_eq(j["env"], {"FOO": "bar"})
    check_eq(j["workdir"], S["work"])
    want = ["rank=%d foo=bar args=a1 a 2 pwd=%s\n" % (rank, S["work"]) for rank in (0, 1)]
    for rank in (0, 1):
        check_eq(logs(c, jid, rank), want[rank])
    # sbatch's default output file, in the workdir, the job's user's; both
    # processes append to it
    out = os.path.join(S["work"], "slurm-%s.out" % jid)
    check_eq(sorted(open(out).readlines()), want)
    check_eq(os.stat(out).st_uid, S["acct"].pw_uid)


def test_output_patterns(c):
    setup(c)
    p = script("pat.sbatch",
               "#!/bin/sh\n#SBATCH -J patjob --ntasks-per-node=2\n"
               "#SBATCH -o out-%x-%j-%t.txt\n#SBATCH -e logs/err-%u-%n.txt\n"
               "echo \"o$LOCAL_RANK\"; echo \"e$LOCAL_RANK\" >&2\n")
    os.makedirs(os.path.join(S["work"], "logs"), exist_ok=True)
    os.chmod(os.path.join(S["work"], "logs"), 0o777)
    rc, out, err = run(c, "submit", "--wait", "--parsable", p)
    check_eq(rc, 0, out, err)
    jid = out.split()[0]
    for t in (0, 1):
        f = os.path.join(S["work"], "out-patjob-%s-%d.txt" % (jid, t))
        check_eq(open(f).read(), "o%d\n" % t)
        check_eq(os.stat(f).st_uid, S["acct"].pw_uid)
    f = os.path.join(S["work"], "logs", "err-%s-0.txt" % S["acct"].pw_name)
    check_eq(sorted(open(f).readlines()), ["e0\n", "e1\n"])
    # the logs route still has every byte
    check_eq(logs(c, jid, 1), "o1\n")
    # a command with -o (no script): stdout there, stderr (no -e) with it
    rc, out, err = run(c, "submit", "--wait", "--parsable", "-o", "cmd-%j.log", "--wrap",
                       "echo to-out; echo to-err >&2")
    check_eq(rc, 0, out, err)
    jid = out.split()[0]
    check_eq(sorted(open(os.path.join(S["work"], "cmd-%s.log" % jid)).readlines()),
             ["to-err\n", "to-out\n"])
    # a file the user may not write fails the job, with the reason
    rc, out, err = run(c, "submit", "--wait", "-o", "/proc/nope/%j", "--wrap", "true")
    check_eq(rc, 127, out, err)  # as a program that cannot start
    check("Reason=bad_output" in out, out)


def test_batch_host_runs_the_script_once(c):
    setup(c)
    p = script("once.sbatch", "#!/bin/sh\n#SBATCH --ntasks-per-node=3 --batch-host\n"
               "echo \"once rank=$RANK of $WORLD_SIZE hostfile=$(cat $MUSTER_HOSTFILE)\"\n")
    rc, out, err = run(c, "submit", "--wait", "--parsable", p)
    check_eq(rc, 0, out, err)
    jid = out.split()[0]
    check_eq(open(os.path.join(S["work"], "slurm-%s.out" % jid)).read(),
             "once rank=0 of 3 hostfile=127.0.0.1 slots=0\n")
    # batch_host without a script is refused
    st, _, b = c.api("POST", "/v1/jobs", {"nodes": 1, "gpus_per_node": 0, "command": ["true"],
                                          "batch_host": True}, token=S["user"])
    check_eq((st, b.get("field")), (400, "batch_host"), b)


def test_refused_directive_changes_nothing(c):
    setup(c)
    before = njobs(c)
    p = script("bad.sbatch", "#!/bin/sh\n#SBATCH -N 1\n#SBATCH --nodelist=n[1-4]\ntrue\n")
    rc, out, err = run(c, "submit", p)
    check_eq(rc, 2, out, err)
    check_eq(out, "")
    check("bad.sbatch: line 3: --nodelist cannot be honoured" in err, err)
    check_eq(len(err.splitlines()), 1, err)
    for flag in (["--constraint=a100"], ["--gres=fpga:1"], ["--begin=someday"],
                 ["--signal=NOPE@5"], ["-a", "x-y"]):
        rc, out, err = run(c, "submit", *flag, "--", "true")
        check_eq(rc, 2, flag, out, err)
    check_eq(njobs(c), before)


def test_rest_script_field(c):
    setup(c)
    text = ("#!/bin/sh\n#SBATCH -J rest-script --ntasks-per-node=1\n#SBATCH --export=X=y\n"
            "echo \"x=$X $1\"\nexit 3\n")
    st, _, b = c.api("POST", "/v1/jobs", {"script": text, "script_args": ["arg1"]}, token=S["user"])
    check_eq(st, 201, b)
    check_eq((b["name"], b["nodes"], b["gpus_per_node"], b["env"]), ("rest-script", 1, 0, {"X": "y"}))
    c.wait_until(lambda: job(c, b["id"])["state"] == "FAILED", 30, "script job FAILED")
    check_eq(job(c, b["id"])["exit_code"], 3)
    check_eq(logs(c, b["id"], 0), "x=y arg1\n")
    before = njobs(c)
    for body, field in (({"script": "#!/bin/sh\n#SBATCH --constraint=x\n"}, "script"),
                        ({"script": "#!/bin/sh\n#SBATCH -N 0\n"}, "script"),
                        ({"script": "true", "command": ["true"]}, "command"),
                        ({"script": 7}, "script"),
                        ({"script": "x" * (100 * 1024 + 1)}, "script")):
        st, _, b = c.api("POST", "/v1/jobs", body, token=S["user"])
        check_eq((st, b.get("field")), (400, field), b)
    check_eq(njobs(c), before)


def test_grpc_script_field(c):
    setup(c)
    import test_grpc_common as g
    pb = g.load()
    J = pb["jobs"]
    ch = g.channel(c)
    try:
        stub = pb["jobs_grpc"].JobServiceStub(ch)
        r = stub.Submit(J.SubmitJobRequest(job=J.JobSpec(
            script="#!/bin/sh\n#SBATCH -J grpc-script -o g-%j.out\necho \"$1\"\n",
            script_args=["from-grpc"])), metadata=g.md(S["user"]), timeout=20)
        check_eq((r.job.name, r.job.output, r.job.error), ("grpc-script", "g-%j.out", ""))
        c.wait_until(lambda: job(c, r.job.id)["state"] == "COMPLETED", 30, "gRPC script job")
        check_eq(logs(c, r.job.id, 0), "from-grpc\n")
        try:
            stub.Submit(J.SubmitJobRequest(job=J.JobSpec(script="#!/bin/sh\n#SBATCH -w n1\n")),
                        metadata=g.md(S["user"]), timeout=20)
            check(False, "a refused directive was accepted over gRPC")
        except g.grpc.RpcError as e:
            check_eq(e.code(), g.grpc.StatusCode.INVALID_ARGUMENT)
            check("--nodelist" in e.details(), e.details())
    finally:
        ch.close()


def test_wait_exit_codes(c):
    setup(c)
    rc, out, err = run(c, "submit", "--wait", "--wrap", "exit 3")
    check_eq(rc, 3, out, err)
    check(" FAILED ExitCode=3" in out, out)
    rc, out, err = run(c, "submit", "--wait", "--parsable", "--wrap", "true")
    check_eq(rc, 0, out, err)
    check(out.strip().isdigit(), out)  # --parsable: the id alone
    rc, out, err = run(c, "submit", "--wait", "-t", "0:02", "--wrap", "sleep 60")
    check_eq(rc, 124, out, err)
    check(" TIMEOUT " in out, out)
    # CANCELLED: the wait is a live process while the job is cancelled
    p = subprocess.Popen([harness.binary("muster"), "submit", "--wait", "--parsable", "--wrap",
                          "sleep 60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=cli_env(c), cwd=S["work"])
    try:
        jid = p.stdout.readline().strip()
        c.wait_until(lambda: job(c, jid)["state"] == "RUNNING", 30, "job RUNNING")
        st, _, b = c.api("POST", "/v1/jobs/%s/cancel" % jid, token=S["user"])
        check(st in (200, 202), st, b)
        check_eq(p.wait(timeout=60), 130, p.stderr.read())
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_wait_survives_api_restart(c):
    setup(c)
    go = os.path.join(S["work"], "go")
    p = subprocess.Popen([harness.binary("muster"), "submit", "--wait", "--parsable", "--wrap",
                          "while [ ! -e %s ]; do [ -d %s ] || exit 9; sleep 0.1; done; exit 5"
                          % (go, S["work"])],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=cli_env(c), cwd=S["work"])
    try:
        jid = p.stdout.readline().strip()
        c.wait_until(lambda: job(c, jid)["state"] == "RUNNING", 30, "job RUNNING")
        c.kill_api(signal.SIGKILL)
        time.sleep(1.5)  # the waiting CLI meets a refused connection at least once
        check(p.poll() is None, "the wait gave up when the API went away", p.poll())
        open(go, "w").close()
        c.start_api()
        check_eq(p.wait(timeout=90), 5, p.stderr.read())
        check_eq(job(c, jid)["state"], "FAILED")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_queue_format_noheader_start(c):
    setup(c)
    # never fits (64 GPUs on an 8-GPU node): stays PENDING
    ids = []
    for name in ("qa", "qb"):
        rc, out, err = run(c, "submit", "--parsable", "-J", name, "--gpus-per-node", "64", "-t", "7",
                           "--", "true")
        check_eq(rc, 0, out, err)
        ids.append(out.strip())
    rc, out, err = run(c, "queue", "-o", "%.8i|%-4j|%t|%D|%b|%l|%%", "-t", "PD")
    check_eq(rc, 0, out, err)
    lines = out.splitlines()
    check_eq(lines[0], "   JOBID|NAME|ST|NODES|TRES_PER_NODE|TIME_LIMIT|%")
    for i, name in zip(ids, ("qa", "qb")):
        check("%8s|%-4s|PD|1|gpu:64|7:00|%%" % (i, name) in lines, i, out)
    rc, out, err = run(c, "queue", "--noheader", "-o", "%i", "-t", "PD")
    check_eq(rc, 0, out, err)
    check(set(ids) <= set(out.split()) and "JOBID" not in out, out)
    rc, out, err = run(c, "queue", "--noheader", "-t", "PD")
    check("JOBID" not in out and ids[0] in out, out)
    rc, out, err = run(c, "queue", "--start")
    check_eq(rc, 0, out, err)
    check(out.splitlines()[0].split()[:6] == ["JOBID", "TENANT", "USER", "NAME", "ST", "START_TIME"], out)
    check(all(l.split()[4] == "PD" for l in out.splitlines()[1:]), out)
    rc, out, err = run(c, "queue", "-o", "%Z")
    check_eq(rc, 2, out, err)
    check("'%Z'" in err, err)
    for i in ids:
        c.api("POST", "/v1/jobs/%s/cancel" % i, token=S["user"])


def complete(script, *words):
    """COMPREPLY of the generated completion for `muster WORDS...` (last word being completed)."""
    prog = (script + "\nCOMP_WORDS=(muster %s); COMP_CWORD=%d; _muster; printf '%%s\\n' \"${COMPREPLY[@]}\"\n"
            % (" ".join("'%s'" % w for w in words), len(words)))
    r = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=30)
    check_eq(r.returncode, 0, r.stderr)
    return r.stdout.split()


def test_bash_completion_from_the_option_tables():
    r = subprocess.run([harness.binary("muster"), "completion", "bash"], capture_output=True,
                       text=True, timeout=30)
    check_eq(r.returncode, 0, r.stderr)
    script = r.stdout
    check_eq(subprocess.run(["bash", "-n"], input=script, text=True).returncode, 0)
    check_eq(complete(script, "sub"), ["submit"])
    got = complete(script, "submit", "--ar")
    check_eq(got, ["--array="])  # from common/sbatch.c's table
    check("--wait" in complete(script, "submit", "--wa"), "")
    check_eq(complete(script, "queue", "--no"), ["--noheader"])
    check_eq(complete(script, "history", "--format=Job"), ["--format=JobID", "--format=JobName"])
    check_eq(complete(script, "queue", "-t", "RUN"), ["RUNNING"])
    r = subprocess.run([harness.binary("muster"), "completion", "zsh"], capture_output=True, text=True)
    check_eq(r.returncode, 2, r.stderr)


def seed_month(c):
    """A month of ended jobs (2026-10-01 .. 2026-10-31, one every 6 hours) in
    tenants hi (users ann, bob) and a second tenant's job for scope."""
    if "seeded" in S:
        return S["seeded"]
    make_tenant(c, "hi")
    make_tenant(c, "hx")
    c.sql("INSERT INTO jobs (tenant_id, user_name, name, priority_class_id, state, nodes, gpus_per_node,"
          " time_limit, exit_code, end_reason, created_at, started_at, ended_at)"
          " SELECT (SELECT id FROM tenants WHERE name = 'hi'), CASE WHEN g % 2 = 0 THEN 'ann' ELSE 'bob' END,"
          "   'h' || g, (SELECT id FROM priority_classes ORDER BY id LIMIT 1),"
          "   CASE WHEN g % 10 = 0 THEN 'FAILED' WHEN g % 10 = 5 THEN 'TIMEOUT' ELSE 'COMPLETED' END,"
          "   2, 4, 7200, CASE WHEN g % 10 = 0 THEN 3 ELSE 0 END,"
          "   CASE WHEN g % 10 = 0 THEN 'failed' WHEN g % 10 = 5 THEN 'timeout' ELSE 'completed' END,"
          "   t - interval '2 hours', t - interval '90 minutes', t"
          " FROM generate_series(0, 123) g, LATERAL (SELECT timestamptz '2026-10-01 03:00:00+00'"
          "   + g * interval '6 hours' AS t) x")
    c.sql("INSERT INTO jobs (tenant_id, user_name, name, priority_class_id, state, nodes, gpus_per_node,"
          " time_limit, end_reason, created_at, started_at, ended_at)"
          " SELECT id, 'zed', 'other', (SELECT id FROM priority_classes ORDER BY id LIMIT 1), 'COMPLETED', 1, 1,"
          " 60, 'completed', '2026-10-02', '2026-10-02', '2026-10-02 00:00:10' FROM tenants WHERE name = 'hx'")
    S["hi"] = make_token(c, "tenant", tenant="hi", user="ann")
    S["seeded"] = True
    return True


def hist(c, *args, token=None):
    e = cli_env(c)
    e["MUSTER_TOKEN"] = token or S["hi"]
    e["TZ"] = "UTC"
    r = subprocess.run([harness.binary("muster"), "history"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=e, timeout=60)
    return r.returncode, r.stdout, r.stderr


def test_history_on_a_seeded_month(c):
    setup(c)
    seed_month(c)
    win = ["-S", "2026-10-01T00:00", "-E", "2026-11-01T00:00"]
    rc, out, err = hist(c, *win, "-P", "-n", "--format=JobName,User,State,ExitCode")
    check_eq(rc, 0, err)
    rows = out.splitlines()
    check_eq(len(rows), 124)  # the other tenant's job is not visible
    check_eq(rows[0], "h0|ann|FAILED|3:0")
    check_eq(rows[1], "h1|bob|COMPLETED|0:0")
    check_eq(rows[5], "h5|bob|TIMEOUT|0:0")
    # -u, --state (Slurm's short names), -j, a narrower window, Elapsed and GPU-hours
    rc, out, _ = hist(c, *win, "-P", "-n", "-u", "bob", "-s", "TO", "-o", "JobName")
    check_eq(out.split(), ["h%d" % g for g in range(5, 124, 10)])
    jid = c.sql_value("SELECT id FROM jobs WHERE name = 'h7'")
    rc, out, _ = hist(c, "-j", jid, "-P", "-o", "JobID,Elapsed,NNodes,AllocGPUs,GPUHours,Start,End")
    check_eq(out.splitlines(), ["JobID|Elapsed|NNodes|AllocGPUs|GPUHours|Start|End",
                                "%s|01:30:00|2|8|12.00|2026-10-02T19:30:00|2026-10-02T21:00:00" % jid])
    rc, out, _ = hist(c, "-S", "2026-10-02T00:00", "-E", "2026-10-03T00:00", "-n", "-P", "-o", "JobName")
    check_eq(out.split(), ["h4", "h5", "h6", "h7"])
    rc, out, _ = hist(c, "-S", "1002", "-E", "100326", "-n", "-P", "-o", "JobName")  # MMDD, MMDDYY
    check_eq(out.split(), ["h4", "h5", "h6", "h7"])
    # the table: fixed widths, sacct's dashes, a cut cell ends in '+'
    rc, out, _ = hist(c, "-j", jid, "-o", "JobName%3,State")
    check_eq(out.splitlines(), ["Jo+      State", "--- ----------", " h7  COMPLETED"])
    # --json: the jobs themselves, paged through (1,000 a page) in order
    rc, out, _ = hist(c, *win, "--json")
    doc = json.loads(out)
    check_eq([j["name"] for j in doc["items"]], ["h%d" % g for g in range(124)])
    # default window: since midnight (nothing seeded today)
    rc, out, _ = hist(c, "-n", "-P")
    check_eq((rc, out), (0, ""))
    # bad input: each a usage error (2) before any request
    for bad in (["-S", "yesterday"], ["-E", "25:00"], ["-s", "BOGUS"], ["-j", "x"],
                ["--format", "Nope"], ["--format", "JobID%0"], ["extra"], ["--frob"]):
        rc, out, err = hist(c, *bad)
        check_eq(rc, 2, bad, out, err)
    rc, out, err = hist(c, "-s", "PD")  # a state no ended job has: the server says so
    check_eq(rc, 1, out, err)


if __name__ == "__main__":
    harness.main(api=False)
