#!/usr/bin/python3
"""Launchers on muster, end to end: three fake-GPU agents (4 GPUs each) on
their own loopback addresses (127.0.0.2-4, as separate hosts), real
muster-api and muster-scheduler, Debian's torch (torch.distributed.run and
gloo on CPU).

- the environment of a 2-node x 2-process job read by Lightning's rules
  (SLURMEnvironment: detect, validate, ranks; no Lightning needed), Slurm's
  formats (compressed SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE "2(x2)") and
  torchrun's PET_* defaults;
- a bare `torchrun launch_prog.py` on a 2-node x 2-GPU gang forms one
  world of 2x2 from PET_* alone and all-reduces correctly;
- launcher torchrun, rigid and elastic (2 x 1): one world, and Lightning's rules
  pick torchelastic's environment, not Slurm's (no per-task SLURM_* names);
- launcher deepspeed and accelerate: stand-ins on PATH record the argv,
  which DeepSpeed's runner and accelerate's launch parsers (their flags, as
  their sources define them) accept, with the right values; the hostfile
  is DeepSpeed's/OpenMPI's "host slots=N" with no host twice;
- GET /v1/jobs/{id} and `muster show` give the composed line;
- signal {"name": "USR1", "before": 6}: it arrives 6 s ahead of the time
  limit, within a second; batch_only spares the children; under a
  launcher the launcher survives it and its worker's handler gets it.

Debian 12's torch 1.13 crashes in torchrun with --redirects/--tee 0 (its
Std.from_str returns None): the jobs set PET_REDIRECTS=1 PET_TEE=1."""
import argparse
import json
import os
import re
import stat
import subprocess
import time

import harness
from harness import check, check_eq
from test_grpc_common import make_tenant, make_token

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "launch_prog.py")
NODES = ["ln-n1", "ln-n2", "ln-n3"]
S = {}
TORCH_ENV = {"PET_REDIRECTS": "1", "PET_TEE": "1", "PATH": "/usr/bin:/bin",
             "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}


def setup(c):
    if S:
        return S
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    c.start_api()
    make_tenant(c, "lch")
    c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = 'lch'")
    S["user"] = make_token(c, "tenant", tenant="lch", user="lea")
    S["sched"] = c.start_process(["muster-scheduler", "--db", c.db_url, "--log-level", "info"],
                                 name="scheduler")
    S["out"] = os.path.join(c.dir, "out")
    os.makedirs(S["out"])
    os.chmod(S["out"], 0o777)
    S["stubs"] = os.path.join(c.dir, "stubs")
    os.makedirs(S["stubs"])
    for name in ("deepspeed", "accelerate"):
        p = os.path.join(S["stubs"], name)
        with open(p, "w") as f:
            f.write("#!/bin/sh\nexec /usr/bin/python3 %s argv %s \"$@\"\n" % (PROG, name))
        os.chmod(p, 0o755)
    S["agents"] = [c.start_agent(n, i, make_token(c, "agent", node=n), gpus=4) for i, n in enumerate(NODES)]
    c.wait_until(lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name LIKE 'ln-n%' AND up") == "3",
                 20, "three agents registered")
    return S


def submit(c, body):
    b = {"priority_class": None, "time_limit": "5:00", "gpus_per_node": 2}
    b.update(body)
    b = {k: v for k, v in b.items() if v is not None}
    st, _, r = c.api("POST", "/v1/jobs", b, token=S["user"])
    check_eq(st, 201, "submit", r)
    return str(r["id"])


def wait_done(c, jid, timeout=90):
    c.wait_until(lambda: c.sql_value("SELECT state FROM jobs WHERE id = $1", jid)
                 in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"), timeout, "job %s ends" % jid)
    st = c.sql_value("SELECT state FROM jobs WHERE id = $1", jid)
    if st != "COMPLETED":
        run = c.sql_value("SELECT max(id) FROM runs WHERE job_id = $1", jid)
        for n in NODES:
            d = os.path.join(c.dir, "agent-" + n, "runs", run or "0")
            for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                if f.endswith(".err") or f.endswith(".out"):
                    print("--- %s %s\n%s" % (n, f, open(os.path.join(d, f)).read()[-3000:]))
    return st


def gang(c, jid):
    """[(name, address)] of the job's run in rank order."""
    return c.sql("SELECT n.name, n.address FROM run_allocations a JOIN nodes n ON n.id = a.node_id"
                 " JOIN runs r ON r.id = a.run_id WHERE r.job_id = $1 GROUP BY n.name, n.address"
                 " ORDER BY min(a.node_rank)", jid)


def results(tag):
    return [json.load(open(os.path.join(S["out"], f))) for f in sorted(os.listdir(S["out"]))
            if f.startswith(tag + ".") and f.endswith(".json")]


def expand_hostlist(text):
    """Slurm's hostlist syntax, expanded as `scontrol show hostnames` does."""
    names = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?([^,]*)", text):
        pre, rng, suf = m.group(1), m.group(2), m.group(3)
        if not rng:
            names.append(pre + suf)
            continue
        for part in rng.split(","):
            lo, _, hi = part.partition("-")
            hi = hi or lo
            for v in range(int(lo), int(hi) + 1):
                names.append("%s%0*d%s" % (pre, len(lo) if lo.startswith("0") else 0, v, suf))
    return names


# ---- Lightning's rules (lightning.fabric.plugins.environments), read from
# its source: SLURMEnvironment.detect/_validate_srun_variables/validate_settings
# and TorchElasticEnvironment.detect; the environments are tried in this order.

def lightning_slurm_detect(env):
    return "SLURM_NTASKS" in env and env.get("SLURM_JOB_NAME") not in ("bash", "interactive")


def lightning_slurm_validate(env, devices, num_nodes):
    ntasks = int(env.get("SLURM_NTASKS", "1"))
    if ntasks > 1 and "SLURM_NTASKS_PER_NODE" not in env:
        raise RuntimeError("SLURM_NTASKS_PER_NODE missing")
    tpn = env.get("SLURM_NTASKS_PER_NODE")
    if tpn is not None and int(tpn) != devices:
        raise ValueError("devices=%d but SLURM_NTASKS_PER_NODE=%s" % (devices, tpn))
    nn = env.get("SLURM_NNODES")
    if nn is not None and int(nn) != num_nodes:
        raise ValueError("num_nodes=%d but SLURM_NNODES=%s" % (num_nodes, nn))


def lightning_slurm_view(env):
    addr = env.get("MASTER_ADDR") or expand_hostlist(env.get("SLURM_NODELIST", "127.0.0.1"))[0]
    return {"world": int(env["SLURM_NTASKS"]), "rank": int(env["SLURM_PROCID"]),
            "local": int(env["SLURM_LOCALID"]), "node": int(env["SLURM_NODEID"]), "addr": addr}


def lightning_torchelastic_detect(env):
    return all(k in env for k in ("RANK", "GROUP_RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE"))


def lightning_choose(env):
    if lightning_slurm_detect(env):
        return "slurm"
    if lightning_torchelastic_detect(env):
        return "torchelastic"
    return "lightning"


def test_env_slurm_lightning_pet(c):
    setup(c)
    jid = submit(c, {"name": "train", "nodes": 2, "procs_per_node": 2,
                     "command": ["/usr/bin/python3", PROG, "env", "envj"], "env": {"OUT": S["out"]}})
    check_eq(wait_done(c, jid), "COMPLETED")
    g = gang(c, jid)
    rs = results("envj")
    check_eq(len(rs), 4, "four processes wrote their environment")
    views = []
    for r in rs:
        env = r["env"]
        check(lightning_slurm_detect(env), "Lightning detects its SLURM environment")
        lightning_slurm_validate(env, devices=2, num_nodes=2)
        v = lightning_slurm_view(env)
        views.append(v)
        check_eq(v["addr"], g[0][1], "Lightning's root address: the rank-0 node")
        check_eq(expand_hostlist(env["SLURM_JOB_NODELIST"]), [n for n, _ in g], "SLURM_JOB_NODELIST",
                 env["SLURM_JOB_NODELIST"])
        check_eq(env["SLURM_NODELIST"], env["SLURM_JOB_NODELIST"])
        check_eq(env["SLURM_TASKS_PER_NODE"], "2(x2)")
        check_eq(env["SLURM_JOB_NUM_NODES"], "2")
        check_eq(env["SLURMD_NODENAME"], g[v["node"]][0], "SLURMD_NODENAME")
        check_eq(env["SLURM_GPUS_ON_NODE"], "2")
        check_eq(env["SLURM_JOB_GPUS"], env["CUDA_VISIBLE_DEVICES"])
        check_eq(env["SLURM_JOB_NAME"], "train")
        check(int(env["SLURM_CPUS_ON_NODE"]) >= 1, "SLURM_CPUS_ON_NODE")
        check_eq((env["PET_NNODES"], env["PET_NODE_RANK"], env["PET_MASTER_ADDR"], env["PET_NPROC_PER_NODE"]),
                 ("2", str(v["node"]), g[0][1], "1"), "PET_* (2 GPUs / 2 processes per node)")
        check_eq(env["PET_MASTER_PORT"], env["MASTER_PORT"])
        check_eq(v["rank"], v["node"] * 2 + v["local"], "global rank = node x 2 + local")
    check_eq(sorted(v["rank"] for v in views), [0, 1, 2, 3], "distinct global ranks")
    check_eq({v["world"] for v in views}, {4}, "world size N x G")


def torch_results(tag, n, world):
    rs = results(tag)
    check_eq(len(rs), n, "%s: %d workers" % (tag, n))
    check_eq(sorted(r["rank"] for r in rs), list(range(world)), tag)
    check_eq({r["world"] for r in rs}, {world}, "%s: one world, not one per node" % tag)
    check_eq({r["sum"] for r in rs}, {world * (world + 1) / 2.0}, "%s: all-reduce of rank+1" % tag)
    return rs


def test_torchrun_bare_rigid_elastic(c):
    """All three at once (their torch imports share the CPUs): bare
    torchrun (2 nodes x 2 GPUs, from PET_* alone), launcher torchrun rigid
    and elastic (2 nodes x 1 GPU each)."""
    setup(c)
    env = dict(TORCH_ENV, OUT=S["out"])
    bare = submit(c, {"nodes": 2, "command": ["torchrun", PROG, "allreduce", "bare"], "env": env})
    jobs = {}
    for tag, extra in (("rigid", {}), ("elastic", {"min_nodes": 1})):
        b = {"launcher": "torchrun", "nodes": 2, "gpus_per_node": 1,
             "command": [PROG, "allreduce", tag], "env": env}
        b.update(extra)
        jobs[tag] = submit(c, b)
        st, _, j = c.api("GET", "/v1/jobs/%s" % jobs[tag], token=S["user"])
        check_eq(st, 200)
        check_eq(j["launcher"], "torchrun")
        check_eq(j["launch_argv"][:3], ["python3", "-m", "torch.distributed.run"], "the composed line", j)
        check_eq(j["launch_argv"][-3:], [PROG, "allreduce", tag])
        S["argv." + tag] = j["launch_argv"]
    a = S["argv.rigid"]
    check("--nnodes=2" in a and "--nproc_per_node=1" in a, "rigid flags", a)
    check("--node_rank=$NODE_RANK" in a, "per-node values as placeholders", a)
    a = S["argv.elastic"]
    check("--nnodes=1:2" in a and "--rdzv_backend=c10d" in a, "elastic flags", a)
    # the CLI shows the same line
    p = subprocess.run([harness.binary("muster"), "--url", c.api_url, "show", jobs["rigid"]],
                       capture_output=True, text=True, env=dict(os.environ, MUSTER_TOKEN=S["user"]))
    check_eq(p.returncode, 0, "muster show", p.stderr)
    check("Launcher=torchrun" in p.stdout and "LaunchLine=python3 -m torch.distributed.run" in p.stdout,
          "muster show gives the launch line", p.stdout)

    check_eq(wait_done(c, bare, 150), "COMPLETED", "bare torchrun")
    torch_results("bare", 4, 4)
    for tag, jid in jobs.items():
        check_eq(wait_done(c, jid, 150), "COMPLETED", tag)
        for r in torch_results(tag, 2, 2):
            env = r["env"]
            check_eq(lightning_choose(env), "torchelastic", "Lightning takes torchelastic's ranks",
                     {k: v for k, v in env.items() if k.startswith("SLURM")})
            for k in ("SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID"):
                check(k not in env, "%s not set under launcher torchrun" % k)
            check_eq(env["SLURM_NNODES"], "2")
            check_eq(int(env["WORLD_SIZE"]), 2, "torchelastic's WORLD_SIZE")


def deepspeed_parser():
    """deepspeed.launcher.runner's parse_args, the flags muster writes (names,
    types and nargs as in DeepSpeed's runner.py)."""
    p = argparse.ArgumentParser(allow_abbrev=False)
    p.add_argument("-H", "--hostfile", type=str, default="/job/hostfile")
    p.add_argument("-i", "--include", type=str, default="")
    p.add_argument("-e", "--exclude", type=str, default="")
    p.add_argument("--num_nodes", type=int, default=-1)
    p.add_argument("--num_gpus", "--num_accelerators", type=int, default=-1)
    p.add_argument("--master_port", default=29500, type=int)
    p.add_argument("--master_addr", default="", type=str)
    p.add_argument("--node_rank", default=-1, type=int)
    p.add_argument("--launcher", default="pdsh", type=str)
    p.add_argument("--no_ssh", action="store_true")
    p.add_argument("--no_ssh_check", action="store_true")
    p.add_argument("--no_local_rank", action="store_true")
    p.add_argument("user_script", type=str)
    p.add_argument("user_args", nargs=argparse.REMAINDER)
    return p


def accelerate_parser():
    """`accelerate launch`'s parser (accelerate/commands/launch.py), the
    flags muster writes."""
    p = argparse.ArgumentParser(allow_abbrev=False)
    p.add_argument("--multi_gpu", action="store_true")
    p.add_argument("--num_processes", type=int, default=None)
    p.add_argument("--num_machines", type=int, default=None)
    p.add_argument("--machine_rank", type=int, default=None)
    p.add_argument("--main_process_ip", type=str, default=None)
    p.add_argument("--main_process_port", type=int, default=None)
    p.add_argument("training_script", type=str)
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def parse_hostfile(text):
    """DeepSpeed's _parse_hostfile: "host slots=N" lines, a host at most once."""
    res = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^(\S+)\s+slots\s*=\s*(\d+)$", line)
        check(m is not None, "hostfile line %r" % line)
        check(m.group(1) not in res, "host %s twice in the hostfile" % m.group(1))
        res[m.group(1)] = int(m.group(2))
    return res


def test_deepspeed_and_accelerate_lines(c):
    setup(c)
    env = {"OUT": S["out"], "PATH": S["stubs"] + ":/usr/bin:/bin"}
    ds = submit(c, {"nodes": 3, "launcher": "deepspeed", "command": ["train.py", "--deepspeed"], "env": env})
    ac = submit(c, {"nodes": 2, "gpus_per_node": 1, "launcher": "accelerate",
                    "command": ["train.py", "--lr", "1"], "env": env})
    check_eq(wait_done(c, ds), "COMPLETED")
    check_eq(wait_done(c, ac), "COMPLETED")
    g = gang(c, ds)
    rs = results("deepspeed")
    check_eq(len(rs), 3, "one deepspeed per node")
    for r in rs:
        a = deepspeed_parser().parse_args(r["argv"])
        rank = int(r["env"]["NODE_RANK"])
        check(a.no_ssh, "--no_ssh: no fan-out from every node")
        check_eq((a.node_rank, a.num_nodes, a.num_gpus, a.master_addr, a.master_port),
                 (rank, 3, 2, g[0][1], int(r["env"]["MASTER_PORT"])), "deepspeed flags", r["argv"])
        check_eq((a.user_script, a.user_args), ("train.py", ["--deepspeed"]))
        check_eq(a.hostfile, r["env"]["MUSTER_HOSTFILE"])
        check_eq(parse_hostfile(r["hostfile"]), {addr: 2 for _, addr in g}, "hostfile")
        check_eq(list(parse_hostfile(r["hostfile"])), [addr for _, addr in g], "hostfile in rank order")
    g = gang(c, ac)
    rs = results("accelerate")
    check_eq(len(rs), 2, "one accelerate per node")
    for r in rs:
        check_eq(r["argv"][0], "launch")
        a = accelerate_parser().parse_args(r["argv"][1:])
        rank = int(r["env"]["NODE_RANK"])
        check_eq((a.num_machines, a.machine_rank, a.main_process_ip, a.main_process_port, a.num_processes),
                 (2, rank, g[0][1], int(r["env"]["MASTER_PORT"]), 2), "accelerate flags", r["argv"])
        check(a.multi_gpu, "--multi_gpu")
        check_eq((a.training_script, a.training_script_args), ("train.py", ["--lr", "1"]))
        check("SLURM_NTASKS" not in r["env"], "no per-task Slurm names under a launcher")


def test_bad_launch_fields(c):
    setup(c)
    base = {"nodes": 1, "gpus_per_node": 0, "command": ["true"]}
    for extra, field in (({"launcher": "mpirun"}, "launcher"), ({"launcher": 3}, "launcher"),
                         ({"on_shrink": "pause"}, "on_shrink"),
                         ({"signal": {"name": "NOPE"}}, "signal.name"),
                         ({"signal": {"name": "USR1", "before": 0}}, "signal.before"),
                         ({"signal": {"name": "USR1", "when": 3}}, "signal.when"),
                         ({"signal": "USR1@60"}, "signal")):
        b = dict(base, **extra)
        st, _, r = c.api("POST", "/v1/jobs", b, token=S["user"])
        check_eq(st, 400, "bad %s" % extra, r)
        check(field in json.dumps(r), "the problem names %s" % field, r)


def test_grpc_launch_fields(c):
    setup(c)
    import grpc
    from test_grpc_common import channel, load, md
    pb = load()
    J = pb["jobs"]
    stub = pb["jobs_grpc"].JobServiceStub(channel(c))
    spec = J.JobSpec(nodes=2, gpus_per_node=1, command=["t.py"], launcher="accelerate", on_shrink="keep",
                     signal=J.JobSignal(name="SIGUSR2", batch_only=True), time_limit="1",
                     env={"PATH": S["stubs"] + ":/usr/bin:/bin", "OUT": S["out"]})
    r = stub.Submit(J.SubmitJobRequest(job=spec), metadata=md(S["user"]), timeout=10)
    check_eq((r.job.launcher, r.job.on_shrink, r.job.signal.name, r.job.signal.before, r.job.signal.batch_only),
             ("accelerate", "keep", "USR2", 60, True), "gRPC submit")
    g = stub.Get(J.GetJobRequest(job_id=r.job.id), metadata=md(S["user"]), timeout=10)
    check_eq(list(g.launch_argv)[:3], ["accelerate", "launch", "--multi_gpu"], "Job.launch_argv", g.launch_argv)
    try:
        stub.Submit(J.SubmitJobRequest(job=J.JobSpec(nodes=1, command=["x"], launcher="srun")),
                    metadata=md(S["user"]), timeout=10)
        check(False, "a bad launcher was accepted")
    except grpc.RpcError as e:
        check_eq(e.code(), grpc.StatusCode.INVALID_ARGUMENT, e.details())
        check("launcher" in e.details(), e.details())
    stub.Cancel(J.CancelJobRequest(job_id=r.job.id), metadata=md(S["user"]), timeout=10)


SIG_SH = ("trap 'date +%s.%N > $OUT/$T.usr1' USR1; sleep 1000 & echo $! > $OUT/$T.child; "
          "date +%s.%N > $OUT/$T.start; while :; do sleep 0.05; done")


LAUNCHER_SIG = """#!/bin/sh
# a launcher stand-in that keeps a worker with a USR1 handler (as Lightning's)
/usr/bin/python3 -c '
import os, signal, time
o = os.environ["OUT"]
signal.signal(signal.SIGUSR1, lambda *a: open(o + "/sigl.usr1", "w").write(str(time.time())))
while True:
    time.sleep(0.05)
' &
echo $$ > $OUT/sigl.launcher
wait
"""


def test_signal_before_time_limit(c):
    setup(c)
    sig = os.path.join(c.dir, "sigstubs")
    os.makedirs(sig, exist_ok=True)
    with open(os.path.join(sig, "deepspeed"), "w") as f:
        f.write(LAUNCHER_SIG)
    os.chmod(os.path.join(sig, "deepspeed"), 0o755)
    jobs = {}
    jobs["sigl"] = submit(c, {"nodes": 1, "gpus_per_node": 1, "time_limit": "0:12", "launcher": "deepspeed",
                              "signal": {"name": "USR1", "before": 6}, "command": ["w.py"],
                              "env": {"OUT": S["out"], "PATH": sig + ":/usr/bin:/bin"}})
    for t, batch in (("sig", False), ("sigb", True)):
        jobs[t] = submit(c, {"nodes": 1, "gpus_per_node": 0, "time_limit": "0:12",
                             "signal": {"name": "USR1", "before": 6, "batch_only": batch},
                             "command": ["/bin/sh", "-c", SIG_SH], "env": {"OUT": S["out"], "T": t}})
    st, _, j = c.api("GET", "/v1/jobs/%s" % jobs["sigb"], token=S["user"])
    check_eq(j["signal"], {"name": "USR1", "before": 6, "batch_only": True})
    def came(t):  # the handler's file exists before its one write: wait for the write
        p = os.path.join(S["out"], t + ".usr1")
        return os.path.exists(p) and os.path.getsize(p) > 0

    for t in jobs:
        c.wait_until(lambda: came(t), 20, "%s: USR1 came" % t)
    launcher = int(open(os.path.join(S["out"], "sigl.launcher")).read())
    check(os.path.exists("/proc/%d" % launcher), "the launcher ignored USR1; its worker handled it")
    S["sigl"] = jobs.pop("sigl")
    for t in jobs:
        start = float(open(os.path.join(S["out"], t + ".start")).read())
        got = float(open(os.path.join(S["out"], t + ".usr1")).read())
        print("%s: USR1 %.2fs after the start (limit 12 s, before 6 s)" % (t, got - start))
        check(5.0 <= got - start <= 7.0, "USR1 6 s ahead of the limit, within a second", got - start)
    child = {t: int(open(os.path.join(S["out"], t + ".child")).read()) for t in jobs}
    time.sleep(0.5)
    check(os.path.exists("/proc/%d" % child["sigb"]), "batch_only: the child did not get it")
    st = open("/proc/%d/stat" % child["sig"]).read().rsplit(")", 1)[1].split()[0] \
        if os.path.exists("/proc/%d" % child["sig"]) else "gone"
    check(st in ("gone", "Z"), "the whole run got it: the child ended", st)
    jobs["sigl"] = S["sigl"]
    for t in jobs:
        # ends at its limit TIMEOUT, also when the agent's own backstop (the
        # same limit, from its start) TERMs it before the scheduler does
        c.wait_until(lambda: c.sql_value("SELECT state FROM jobs WHERE id = $1", jobs[t])
                     in ("TIMEOUT", "FAILED"), 30, "%s ends at its time limit" % t)
        check_eq(c.sql_value("SELECT state FROM jobs WHERE id = $1", jobs[t]), "TIMEOUT", t)


def test_zz_cleanup(c):
    for p in S.get("agents", []):
        c.stop_process(p)


if __name__ == "__main__":
    harness.main(api=False)
