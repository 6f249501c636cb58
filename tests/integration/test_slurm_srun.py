#!/usr/bin/python3
"""srun in batch scripts, end to end: two fake-GPU agents, real muster-api
and muster-scheduler; scripts submitted with the CLI run as a real account
and call muster's srun (agent/srun/), which the agent put first on their
PATH. Every task runs a plain `srun CMD` once; `--ntasks-per-node=1` once
per node, `-n 3` three times, renumbered for the step; `-l` labels lines;
--export applies; `srun -n` beyond the job fails with the message; in a
--batch-host script a step across nodes fails the job with the message,
`srun -n 1` runs. A job that is no script has no srun; an srun directory
that others may write is refused."""
import os
import subprocess
import tempfile

import harness
from harness import check, check_eq
from test_grpc_common import make_tenant, make_token

S = {}
NODES = ("sr-n1", "sr-n2")


def setup(c):
    if S:
        return S
    for b in ("muster-agent", "muster-scheduler", "muster"):
        harness.require_binary(b)
    c.start_api()
    make_tenant(c, "sr")
    c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = 'sr'")
    # a real account: srun's directory must be one that others may run
    S["acct"] = c.make_user("sr")
    S["user"] = make_token(c, "tenant", tenant="sr", user=S["acct"].pw_name)
    c.start_process(["muster-scheduler", "--db", c.db_url], name="scheduler")
    S["work"] = os.path.join(c.dir, "work")
    os.makedirs(S["work"])
    os.chmod(c.dir, 0o755)
    os.chmod(S["work"], 0o777)
    for i, n in enumerate(NODES):
        c.start_process(
            [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port, "--node", n,
             "--address", c.agent_address(i), "--state-dir", os.path.join(c.dir, "agent-" + n),
             "--gpu-backend", "fake", "--fake-gpus", "4", "--heartbeat-interval", "300ms"]
            + c.agent_flags(identity=True),
            env={"MUSTER_AGENT_TOKEN": make_token(c, "agent", node=n)}, name="agent-" + n)
    c.wait_until(lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name LIKE 'sr-n%' AND up") == "2",
                 30, "both agents up")
    return S


def submit(c, name, text, *args):
    """Runs script `text` with `muster submit --wait --parsable`: (rc, job id, output file's lines)."""
    p = os.path.join(S["work"], name)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, 0o755)
    e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    e.update(HOME=tempfile.gettempdir() + "/muster-cli-nohome", MUSTER_URL=c.api_url,
             MUSTER_TOKEN=S["user"])
    r = subprocess.run([harness.binary("muster"), "submit", "--wait", "--parsable"] + list(args) + [p],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
                       cwd=S["work"], timeout=120)
    jid = r.stdout.split()[0] if r.stdout.split() else None
    check(jid, "a job id", r.stdout, r.stderr)
    out = os.path.join(S["work"], "slurm-%s.out" % jid)
    lines = open(out).read().splitlines() if os.path.exists(out) else []
    return r.returncode, jid, lines


def state(c, jid):
    return c.sql_value("SELECT state FROM jobs WHERE id = $1", jid)


def test_steps_in_a_two_node_job(c):
    setup(c)
    rc, jid, lines = submit(c, "steps.sbatch", """#!/bin/sh
#SBATCH -N 2 --ntasks-per-node=2
srun --mpi=pmix --cpu-bind=cores -u sh -c 'echo "all $SLURM_PROCID/$SLURM_NTASKS node=$SLURM_NODEID"'
srun --ntasks-per-node=1 sh -c 'echo "pernode $SLURM_PROCID/$SLURM_NTASKS node=$SLURM_NODEID rank=$RANK ws=$WORLD_SIZE"'
srun -l -n 3 sh -c 'echo "three $SLURM_PROCID/$SLURM_NTASKS local=$SLURM_LOCALID"'
srun -N 1 --export=ALL,FOO=bar sh -c 'echo "one-node $SLURM_PROCID foo=$FOO"'
srun -n1 --export=NONE,FOO=1 sh -c 'echo "none foo=$FOO home=${HOME:-unset} ntasks=$SLURM_NTASKS"'
if [ "$SLURM_PROCID" = 0 ]; then echo "which $(command -v srun | sed 's,.*/libexec/,libexec/,')"; fi
""")
    check_eq((rc, state(c, jid)), (0, "COMPLETED"), lines)
    want = ["all %d/4 node=%d" % (r, r // 2) for r in range(4)]
    want += ["pernode 0/2 node=0 rank=0 ws=2", "pernode 1/2 node=1 rank=1 ws=2"]
    # -n 3 over 2 nodes: 2 + 1
    want += ["0: three 0/3 local=0", "1: three 1/3 local=1", "2: three 2/3 local=0"]
    want += ["one-node 0 foo=bar", "one-node 1 foo=bar", "none foo=1 home=unset ntasks=1",
             "which libexec/muster/bin/srun"]
    check_eq(sorted(lines), sorted(want))


def test_more_tasks_than_the_job_fails(c):
    setup(c)
    rc, jid, lines = submit(c, "toomany.sbatch", "#!/bin/sh\n#SBATCH -N 2 --ntasks-per-node=2\n"
                            "srun -n 16 hostname || exit $?\necho not-reached\n")
    check_eq((rc, state(c, jid)), (1, "FAILED"), lines)
    msg = "muster: srun: -n 16 asks for more tasks than the job has (2 nodes x 2 tasks per node = 4)"
    check_eq(lines, [msg] * 4)  # every task says why it failed
    rc, jid, lines = submit(c, "badopt.sbatch", "#!/bin/sh\nsrun --frobnicate hostname\n")
    check_eq((rc, state(c, jid)), (1, "FAILED"), lines)
    check_eq(lines[0], "muster: srun: unrecognized option '--frobnicate'")


BATCH_HOST_MSG = ("muster: srun: job steps across nodes are not supported in a --batch-host script; "
                  "submit without --batch-host (the script then runs on every node) or start a "
                  "launcher (torchrun --rdzv...) with $MUSTER_HOSTFILE")


def test_batch_host(c):
    setup(c)
    rc, jid, lines = submit(c, "bh.sbatch", "#!/bin/sh\n#SBATCH -N 2 --batch-host\n"
                            "set -e\nsrun hostname\necho not-reached\n")
    check_eq((rc, state(c, jid)), (1, "FAILED"), lines)
    check_eq(lines, [BATCH_HOST_MSG])
    rc, jid, lines = submit(c, "bh1.sbatch", """#!/bin/sh
#SBATCH -N 2 --ntasks-per-node=2 --batch-host
set -e
srun -n 1 sh -c 'echo "single $SLURM_PROCID/$SLURM_NTASKS rank=$RANK ws=$WORLD_SIZE"'
srun -N 1 --ntasks-per-node=1 sh -c 'echo "again $SLURM_PROCID/$SLURM_NTASKS nodes=$SLURM_NNODES"'
""")
    check_eq((rc, state(c, jid)), (0, "COMPLETED"), lines)
    check_eq(lines, ["single 0/1 rank=0 ws=1", "again 0/1 nodes=1"])


def test_no_srun_outside_scripts(c):
    setup(c)
    e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    e.update(HOME=tempfile.gettempdir() + "/muster-cli-nohome", MUSTER_URL=c.api_url,
             MUSTER_TOKEN=S["user"])
    r = subprocess.run([harness.binary("muster"), "submit", "--wait", "--parsable", "-o", "plain-%j.out",
                        "--", "/bin/sh", "-c", "echo path=$PATH; echo mode=${MUSTER_SCRIPT_MODE:-none}"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
                       cwd=S["work"], timeout=120)
    check_eq(r.returncode, 0, r.stdout, r.stderr)
    jid = r.stdout.split()[0]
    text = open(os.path.join(S["work"], "plain-%s.out" % jid)).read()
    check("libexec/muster" not in text and "mode=none" in text, text)


def test_srun_dir_others_may_write_is_refused(c):
    """An srun directory that another account may write is not put on any PATH."""
    setup(c)
    bad = os.path.join(c.dir, "open-srun")
    os.makedirs(bad)
    with open(os.path.join(bad, "srun"), "w") as f:
        f.write("#!/bin/sh\necho evil\n")
    os.chmod(os.path.join(bad, "srun"), 0o755)
    os.chmod(bad, 0o777)
    p = c.start_process(
        [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port, "--node", "sr-n3",
         "--address", c.agent_address(2), "--state-dir", os.path.join(c.dir, "agent-sr-n3"),
         "--gpu-backend", "fake", "--fake-gpus", "1", "--heartbeat-interval", "300ms",
         "--srun-dir", bad] + c.agent_flags(identity=True),
        env={"MUSTER_AGENT_TOKEN": make_token(c, "agent", node="sr-n3")}, name="agent-sr-n3")
    log = os.path.join(c.dir, "agent-sr-n3.log")
    c.wait_until(lambda: "script jobs get no srun" in open(log).read(), 10, "the warning")
    check("--srun-dir %s" % bad in open(log).read(), open(log).read())
    c.stop_process(p)


if __name__ == "__main__":
    harness.main(api=False)
