#!/usr/bin/python3
"""Node runtime isolation, end to end: a root muster-agent (fake GPUs with
fake device nodes made by mknod, real cgroups) with real muster-api and
muster-scheduler, and real Unix accounts made here with useradd (removed
at the end).

- A job runs as its user's account: uid, gid, supplementary groups, HOME,
  USER, LOGNAME, SHELL, the home as default workdir; it cannot become root
  again. Its logs are its own (0600) in a run directory it cannot write;
  the exit files are the agent's.
- Another user's job cannot read the first one's /proc/<pid>/environ or
  logs, nor its keeper's or the agent's environ, nor signal it.
- Cancel kills a double-forked setsid child (it was in the run's cgroup).
- mem_per_node: the run's cgroup limit; an overrun ends FAILED, `oom`.
  cpus_per_node: the cgroup's CPU quota.
- A GPU not granted cannot be opened (EPERM from the device cgroup); the
  granted one gets past the cgroup to the missing driver (ENXIO).
- bad_user for a missing account, root, a uid below --min-uid; bad_workdir
  for a workdir the user cannot enter; a relative workdir is a 400.
Needs root (accounts, cgroups, mknod): skipped otherwise."""
import json
import os
import pwd
import signal
import stat
import time

import harness
from harness import check, check_eq

S = {}
NODE = "iso-n1"
PY = "/usr/bin/python3"

# Tries what a hostile job would, prints one JSON line of outcomes.
PROBE = r"""
import errno, json, os, signal, sys
def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
t = int(os.environ["TARGET_PID"])
run_dir = os.path.dirname(os.environ["MUSTER_HOSTFILE"])  # this job's own run directory
out = {
    "environ": attempt(lambda: open("/proc/%d/environ" % t).read()),
    "log": attempt(lambda: open(os.environ["TARGET_LOG"]).read()),
    "keeper_environ": attempt(lambda: open("/proc/%d/environ" % os.getppid()).read()),
    "agent_environ": attempt(lambda: open("/proc/%s/environ" % os.environ["AGENT_PID"]).read()),
    "kill": attempt(lambda: os.kill(t, signal.SIGTERM)),
    "setuid0": attempt(lambda: os.setuid(0)),
    "exit_file": attempt(lambda: open(os.path.join(run_dir, "exit.0"), "w")),
    "run_dir_write": attempt(lambda: open(os.path.join(run_dir, "forged"), "w")),
}
print(json.dumps(out), flush=True)
"""

WHOAMI = ("import os, json; print(json.dumps({'uid': os.getuid(), 'euid': os.geteuid(),"
          " 'gid': os.getgid(), 'groups': sorted(os.getgroups()), 'cwd': os.getcwd(),"
          " 'env': {k: os.environ.get(k) for k in ('HOME', 'USER', 'LOGNAME', 'SHELL')}}))")

GPU_PROBE = r"""
import errno, json, os
d = os.environ["DEV_DIR"]
res = {}
for i in range(4):
    try:
        os.close(os.open("%s/nvidia%d" % (d, i), os.O_RDWR))
        res[i] = "ok"
    except OSError as e:
        res[i] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"visible": os.environ["CUDA_VISIBLE_DEVICES"], "open": res}), flush=True)
"""


def setup(c):
    if S:
        return S
    if os.geteuid() != 0:
        harness.skip("needs root: Unix accounts, cgroups, mknod")
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    c.start_api()
    S["cgroot"] = c.cgroup_root()
    grp = c.make_group()
    S["alice"] = c.make_user("mua", groups=[grp])
    S["bob"] = c.make_user("mub")
    S["group"] = grp
    for t in ("iso-a", "iso-b"):
        c.make_tenant(t)
        c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = $1", t)
    S["tok_a"] = c.make_token("tenant", tenant="iso-a", user=S["alice"].pw_name)
    S["tok_b"] = c.make_token("tenant", tenant="iso-b", user=S["bob"].pw_name)
    S["dev"] = os.path.join(c.dir, "dev")
    os.makedirs(S["dev"])
    for i in range(4):
        p = os.path.join(S["dev"], "nvidia%d" % i)
        os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(195, i))
        os.chmod(p, 0o666)
    c.start_process(["muster-scheduler", "--db", c.db_url], name="scheduler")
    S["state"] = os.path.join(c.dir, "agent-" + NODE)
    S["agent_token"] = c.make_token("agent", node=NODE)
    start_agent(c)
    return S


def start_agent(c, *extra):
    S["agent"] = c.start_process(
        [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port, "--node", NODE,
         "--address", "127.0.0.1", "--state-dir", S["state"], "--gpu-backend", "fake",
         "--fake-gpus", "4", "--gpu-dev-dir", S["dev"], "--heartbeat-interval", "300ms",
         "--cgroups", "on", "--pids-max", "512", "--log-level", "debug"] + c.agent_flags(identity=True) + list(extra),
        env={"MUSTER_AGENT_TOKEN": S["agent_token"]}, name="agent",
        wait_for="registered node_id")
    S["agent_log"] = c._procs[-1][1]


def submit(c, token, command, expect=201, **extra):
    body = {"name": "iso", "nodes": 1, "gpus_per_node": 1, "time_limit": "5:00",
            "command": command}
    body.update(extra)
    st, _, b = c.api("POST", "/v1/jobs", body, token=token)
    check_eq(st, expect, "submit: %s" % b)
    return b.get("id") if expect == 201 else b


def job(c, jid):
    st, _, b = c.api("GET", "/v1/jobs/%s" % jid)
    check_eq(st, 200, b)
    return b


def wait_end(c, jid, timeout=30):
    return c.wait_until(lambda: (lambda j: j if j["state"] in ("COMPLETED", "FAILED", "CANCELLED",
                                                                "TIMEOUT") else None)(job(c, jid)),
                        timeout, "job %s ends" % jid)


def run_of(c, jid):
    return c.sql_value("SELECT max(id) FROM runs WHERE job_id = $1", str(jid))


def run_dir(run):
    return os.path.join(S["state"], "runs", str(run))


def out_of(run, n=0, stream="out"):
    try:
        with open(os.path.join(run_dir(run), "proc%d.%s" % (n, stream))) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def wait_out(c, run, what="output"):
    return c.wait_until(lambda: out_of(run).strip(), 20, "%s of run %s" % (what, run))


def cgroup_dir(ctrl, run):
    return os.path.join(harness.CGROUP_MOUNT, ctrl, c_root(), NODE, "run-%s" % run)


def c_root():
    return S["cgroot"]


def test_runs_as_the_users_account(c):
    s = setup(c)
    a = s["alice"]
    jid = submit(c, s["tok_a"], [PY, "-c", WHOAMI])
    j = wait_end(c, jid)
    run = run_of(c, jid)
    check_eq(j["state"], "COMPLETED", j, out_of(run, 0, "err"))
    who = json.loads(out_of(run))
    check_eq(who["uid"], a.pw_uid, "uid")
    check_eq(who["euid"], a.pw_uid, "euid")
    check_eq(who["gid"], a.pw_gid, "gid")
    import grp as grpmod
    extra = grpmod.getgrnam(s["group"]).gr_gid
    check_eq(who["groups"], sorted({a.pw_gid, extra}), "supplementary groups from initgroups")
    check_eq(who["cwd"], a.pw_dir, "the default workdir is the home")
    check_eq(who["env"], {"HOME": a.pw_dir, "USER": a.pw_name, "LOGNAME": a.pw_name,
                          "SHELL": a.pw_shell}, "account environment")
    d = run_dir(run)
    ds = os.stat(d)
    check_eq((ds.st_uid, ds.st_gid, stat.S_IMODE(ds.st_mode)), (0, a.pw_gid, 0o750),
             "run dir: the agent's, readable by the user's group only")
    for f in ("proc0.out", "proc0.err"):
        fs = os.stat(os.path.join(d, f))
        check_eq((fs.st_uid, stat.S_IMODE(fs.st_mode)), (a.pw_uid, 0o600), f)
    for f in ("exit.0", "hostfile"):
        fs = os.stat(os.path.join(d, f))
        check_eq((fs.st_uid, stat.S_IMODE(fs.st_mode)), (0, 0o644), f)
    check(not os.path.exists(cgroup_dir("memory", run)) and not os.path.exists(
        cgroup_dir("unified", run)), "the run's cgroup is removed when it ends")


def test_other_users_job_is_out_of_reach(c):
    s = setup(c)
    secret = "b0b-" + os.urandom(6).hex()
    bj = submit(c, s["tok_b"], ["/bin/sh", "-c", "echo $$; exec sleep 300"], env={"SECRET": secret})
    brun = c.wait_until(lambda: run_of(c, bj), 20, "bob's run")
    bpid = int(wait_out(c, brun, "bob's pid").split()[0])
    # sh prints its pid and then execs sleep: read mid-exec, /proc/<pid>/environ can be empty
    c.wait_until(lambda: secret in open("/proc/%d/environ" % bpid).read(), 5,
                 "bob's process has the secret (root sees it)")
    check_eq(os.stat("/proc/%d" % bpid).st_uid, s["bob"].pw_uid, "bob's process runs as bob")
    aj = submit(c, s["tok_a"], [PY, "-c", PROBE], env={
        "TARGET_PID": str(bpid), "TARGET_LOG": os.path.join(run_dir(brun), "proc0.out"),
        "AGENT_PID": str(s["agent"].pid)})
    j = wait_end(c, aj)
    arun = run_of(c, aj)
    check_eq(j["state"], "COMPLETED", j, out_of(arun, 0, "err"))
    got = json.loads(out_of(arun))
    check_eq(got["environ"], "EACCES", "another user's /proc/<pid>/environ", got)
    check_eq(got["log"], "EACCES", "another user's log", got)
    check_eq(got["keeper_environ"], "EACCES", "its keeper's (root) environ", got)
    check_eq(got["agent_environ"], "EACCES", "the agent's environ", got)
    check_eq(got["kill"], "EPERM", "signal another user's job", got)
    check_eq(got["setuid0"], "EPERM", "become root again", got)
    check(got["exit_file"] in ("EACCES", "ENOENT"), "forge an exit file", got)
    check(got["run_dir_write"] in ("EACCES", "ENOENT"), "write in the run dir", got)
    check(os.path.exists("/proc/%d" % bpid), "bob's job survived")
    st, _, b = c.api("POST", "/v1/jobs/%s/cancel" % bj, token=s["tok_b"])
    check(st in (200, 202), "cancel", st, b)
    wait_end(c, bj)


def test_cancel_kills_a_double_forked_setsid_child(c):
    s = setup(c)
    # the setsid'd shell prints its background sleep's pid and exits: the
    # sleep is in another session and process group, orphaned, and ignores
    # TERM: only a KILL of the whole cgroup ends it
    jid = submit(c, s["tok_a"], ["/bin/sh", "-c",
                                 "setsid /bin/sh -c 'trap \"\" TERM; sleep 600 & echo $!' & wait;"
                                 " exec sleep 600"])
    run = c.wait_until(lambda: run_of(c, jid), 20, "run")
    gpid = int(wait_out(c, run, "grandchild pid").split()[0])
    check(os.getsid(gpid) != os.getsid(s["agent"].pid) and os.getpgid(gpid) == os.getsid(gpid),
          "the grandchild left the run's session and group")
    ign = [l for l in open("/proc/%d/status" % gpid) if l.startswith("SigIgn:")][0]
    check(int(ign.split()[1], 16) & (1 << (signal.SIGTERM - 1)), "the grandchild ignores TERM", ign)
    cg = open("/proc/%d/cgroup" % gpid).read()
    check("/%s/%s/run-%s" % (c_root(), NODE, run) in cg, "the grandchild is in the run's cgroup", cg)
    c.wait_until(lambda: job(c, jid)["state"] == "RUNNING", 20, "RUNNING")
    st, _, b = c.api("POST", "/v1/jobs/%s/cancel" % jid, token=s["tok_a"])
    check(st in (200, 202), "cancel", st, b)
    j = wait_end(c, jid, 60)
    check_eq(j["state"], "CANCELLED", j)

    def gone():
        try:
            with open("/proc/%d/stat" % gpid) as f:
                return f.read().split(") ")[1].split()[0] == "Z"
        except FileNotFoundError:
            return True
    c.wait_until(gone, 15, "the setsid grandchild %d killed" % gpid)


def test_mem_per_node_overrun_is_oom(c):
    s = setup(c)
    jid = submit(c, s["tok_a"], [PY, "-c", "b = bytearray(400 << 20); print(len(b))"],
                 mem_per_node="64M")
    check_eq(job(c, jid)["mem_per_node"], 64 << 20, "mem_per_node in bytes")
    j = wait_end(c, jid, 60)
    check_eq((j["state"], j["end_reason"]), ("FAILED", "oom"), j)
    run = run_of(c, jid)
    ev = c.sql("SELECT kind, reason, data->>'end_reason' FROM events WHERE run_id = $1"
               " ORDER BY id", run)
    check(any(e[2] == "oom" for e in ev), "the node's event says oom", ev)
    # a job within its limit completes; the limit is on the run's cgroup
    jid = submit(c, s["tok_a"], ["/bin/sh", "-c",
                                 "cat /proc/self/cgroup; sleep 1"], mem_per_node=96 << 20,
                 cpus_per_node=2)
    run = c.wait_until(lambda: run_of(c, jid), 20, "run")
    lim = c.wait_until(lambda: _read(os.path.join(cgroup_dir("memory", run),
                                                  "memory.limit_in_bytes")), 10, "memory cgroup")
    check_eq(int(lim), 96 << 20, "memory.limit_in_bytes")
    quota = _read(os.path.join(cgroup_dir("cpu", run), "cpu.cfs_quota_us"))
    check_eq(quota and int(quota), 200000, "cpu.cfs_quota_us for 2 CPUs")
    check_eq(_read(os.path.join(cgroup_dir("pids", run), "pids.max")), "512", "--pids-max")
    check_eq(wait_end(c, jid)["state"], "COMPLETED")


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def test_gpus_not_granted_cannot_be_opened(c):
    s = setup(c)
    gpu_probe(c, s)


def gpu_probe(c, s):
    jid = submit(c, s["tok_a"], [PY, "-c", GPU_PROBE], env={"DEV_DIR": s["dev"]}, gpus_per_node=1)
    j = wait_end(c, jid)
    run = run_of(c, jid)
    check_eq(j["state"], "COMPLETED", j, out_of(run, 0, "err"))
    got = json.loads(out_of(run))
    mine = int(got["visible"])
    for i in range(4):
        want = "ENXIO" if i == mine else "EPERM"
        check_eq(got["open"][str(i)], want, "open /dev/nvidia%d (granted %d)" % (i, mine), got)


def test_bad_user_and_bad_workdir(c):
    s = setup(c)
    low = next(p for p in pwd.getpwall() if 0 < p.pw_uid < 1000)
    for user, why in (("nosuch" + os.urandom(3).hex(), "no Unix account"), ("root", "is root"),
                      (low.pw_name, "below --min-uid")):
        st, _, b = c.api("POST", "/v1/jobs", {"tenant": "iso-a", "user": user, "nodes": 1,
                                              "gpus_per_node": 1, "command": ["/bin/true"]})
        check_eq(st, 201, b)
        j = wait_end(c, b["id"])
        check_eq((j["state"], j["end_reason"]), ("FAILED", "bad_user"), user, j)
        reasons = [r[0] for r in c.sql("SELECT reason FROM events WHERE job_id = $1", str(b["id"]))]
        check(any(why in r for r in reasons), "an event says why:", why, reasons)
    # root's 0700 directory: alice cannot enter it, checked as alice (root could)
    private = os.path.join(c.dir, "private")
    os.mkdir(private, 0o700)
    jid = submit(c, s["tok_a"], ["/bin/true"], workdir=private)
    j = wait_end(c, jid)
    check_eq((j["state"], j["end_reason"]), ("FAILED", "bad_workdir"), j)
    run = run_of(c, jid)
    check("workdir %s: Permission denied" % private in out_of(run, 0, "err"),
          "the reason in the err log", out_of(run, 0, "err"))
    b = submit(c, s["tok_a"], ["/bin/true"], expect=400, workdir="relative/dir")
    check_eq(b.get("field"), "workdir", b)


def test_tenant_unix_account_maps_every_user(c):
    """A team without personal accounts: its tenant names one service
    account (admins only); jobs of its subtree run as it, whatever their
    user; a nearer tenant's mapping wins; clearing it restores `user`."""
    s = setup(c)
    a, b = s["alice"], s["bob"]
    st, _, t = c.api("POST", "/v1/tenants", {"name": "iso-svc", "unix_account": a.pw_name})
    check_eq((st, t.get("unix_account")), (201, a.pw_name), t)
    c.make_tenant("iso-svc-proj", parent="iso-svc")
    c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name LIKE 'iso-svc%'")
    tok = c.make_token("tenant", tenant="iso-svc-proj", user="carol-has-no-account")
    st, _, e = c.api("PATCH", "/v1/tenants/iso-svc", {"unix_account": "Not Valid"})
    check_eq((st, e.get("field")), (400, "unix_account"), e)
    st, _, e = c.api("PATCH", "/v1/tenants/iso-svc", {"unix_account": b.pw_name}, token=tok)
    check(st in (403, 404), "a tenant token cannot set it", st, e)
    jid = submit(c, tok, [PY, "-c", WHOAMI])
    j = wait_end(c, jid)
    check_eq(j["state"], "COMPLETED", j)
    check_eq(json.loads(out_of(run_of(c, jid)))["uid"], a.pw_uid, "inherited from iso-svc")
    st, _, t = c.api("PATCH", "/v1/tenants/iso-svc-proj", {"unix_account": b.pw_name})
    check_eq(st, 200, t)
    jid = submit(c, tok, [PY, "-c", WHOAMI])
    check_eq(wait_end(c, jid)["state"], "COMPLETED")
    check_eq(json.loads(out_of(run_of(c, jid)))["uid"], b.pw_uid, "the nearer tenant's account")
    for name in ("iso-svc-proj", "iso-svc"):
        check_eq(c.api("PATCH", "/v1/tenants/" + name, {"unix_account": ""})[0], 200)
    jid = submit(c, tok, [PY, "-c", WHOAMI])
    check_eq(wait_end(c, jid)["end_reason"], "bad_user", "without a mapping: the user's own account")


def test_v1_freezer_kill_of_a_setsid_child(c):
    """Hosts with cgroup v1 only: stop = freeze, KILL everything, thaw."""
    s = setup(c)
    if not os.path.isdir(os.path.join(harness.CGROUP_MOUNT, "freezer")):
        harness.skip("no v1 freezer here")
    c.stop_process(s["agent"])
    start_agent(c, "--cgroups", "v1")
    check("cgroups=v1" in c.log_text(S["agent_log"]), "the agent uses v1 only")
    test_cancel_kills_a_double_forked_setsid_child(c)
    c.stop_process(s["agent"])
    start_agent(c)


def test_gpus_denied_by_a_bpf_device_program(c):
    """The cgroup v2 way (pure v2 hosts): a BPF_PROG_TYPE_CGROUP_DEVICE
    program on the run's v2 cgroup. On a hybrid host the unified
    hierarchy runs it too, so it is tested here with the v1 devices
    controller out of the way (--cgroup-devices bpf)."""
    s = setup(c)
    if not os.path.exists(os.path.join(harness.CGROUP_MOUNT, "unified", "cgroup.procs")) and \
            not os.path.exists(os.path.join(harness.CGROUP_MOUNT, "cgroup.controllers")):
        harness.skip("no cgroup v2 hierarchy here")
    c.stop_process(s["agent"])
    start_agent(c, "--cgroup-devices", "bpf")
    check("devices=bpf" in c.log_text(S["agent_log"]), "the agent uses the BPF program")
    gpu_probe(c, s)


def test_non_root_agent_runs_its_own_user_only(c):
    """An agent that is not root (here: alice's) says so at start, runs
    alice's jobs as alice and fails bob's with bad_user; with
    --single-user it runs bob's job too, as alice."""
    import shutil
    s = setup(c)
    a = s["alice"]
    node = "iso-n2"
    bindir = os.path.join(c.dir, "bin")  # the build dir may not be alice's to reach
    os.makedirs(bindir, exist_ok=True)
    agent = os.path.join(bindir, "muster-agent")
    shutil.copy(harness.binary("muster-agent"), agent)
    state = os.path.join(c.dir, "agent-" + node)
    os.makedirs(state)
    os.chown(state, a.pw_uid, a.pw_gid)
    tok = c.make_token("agent", node=node)
    st, _, b = c.api("POST", "/v1/nodes/%s/drain" % NODE, {"reason": "test: use iso-n2"})
    check_eq(st, 200, b)

    def start(*extra):
        p = c.start_process(
            ["runuser", "-u", a.pw_name, "--", agent, "--api", "127.0.0.1:%d" % c.grpc_port,
             "--node", node, "--address", "127.0.0.1", "--state-dir", state, "--gpu-backend",
             "fake", "--fake-gpus", "2", "--heartbeat-interval", "300ms"] + list(extra),
            env={"MUSTER_AGENT_TOKEN": tok}, name="agent-" + node, wait_for="registered node_id")
        return p, c._procs[-1][1]
    p, log = start()
    check("this agent is not root" in c.log_text(log), "it says so at start")
    check("cgroups: cannot create" in c.log_text(log), "no cgroups for a non-root agent, said")
    jid = submit(c, s["tok_a"], [PY, "-c", WHOAMI])
    j = wait_end(c, jid)
    check_eq(j["state"], "COMPLETED", j)
    run = run_of(c, jid)
    check_eq(c.sql_value("SELECT n.name FROM run_allocations x JOIN nodes n ON n.id = x.node_id"
                         " WHERE x.run_id = $1 LIMIT 1", run), node, "ran on the non-root node")
    who = json.loads(open(os.path.join(state, "runs", run, "proc0.out")).read())
    check_eq(who["uid"], a.pw_uid, "alice's job as alice")
    jid = submit(c, s["tok_b"], [PY, "-c", WHOAMI])
    j = wait_end(c, jid)
    check_eq((j["state"], j["end_reason"]), ("FAILED", "bad_user"), "bob's job on alice's agent", j)
    c.stop_process(p)
    p, log = start("--single-user")
    check("single-user: every job runs as %s" % a.pw_name in c.log_text(log), "single-user said")
    jid = submit(c, s["tok_b"], [PY, "-c", WHOAMI])
    j = wait_end(c, jid)
    check_eq(j["state"], "COMPLETED", j)
    who = json.loads(open(os.path.join(state, "runs", run_of(c, jid), "proc0.out")).read())
    check_eq(who["uid"], a.pw_uid, "bob's job as the agent's user in single-user mode")
    c.stop_process(p)
    c.api("POST", "/v1/nodes/%s/resume" % NODE, {})


if __name__ == "__main__":
    harness.main(api=False)
