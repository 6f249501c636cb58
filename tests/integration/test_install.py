#!/usr/bin/python3
"""Packaging: `cmake --install` puts binaries, migrations, units and
examples where packaging/CMakeLists.txt says; a real muster runs from the
installed tree alone (installed muster-devdb, muster-api, muster-scheduler,
muster-agent and CLI: a job is submitted with the CLI and completes);
`systemd-analyze verify` accepts the installed units, which are hardened
(API, scheduler) or say why not (agent); docker/Dockerfile agrees with the
install tree: its build stage installs with the same prefix, builds every
installed binary, COPYs only paths the install produced, and its runtime
stage installs the Debian package of every library the binaries link."""
import glob
import os
import re
import shutil
import subprocess
import tempfile

import harness
from harness import check, check_eq

SRC = harness.SOURCE_DIR
TMP = tempfile.mkdtemp(prefix="muster-install.", dir="/tmp")
os.chmod(TMP, 0o755)
BINARIES = ["muster-api", "muster-scheduler", "muster-agent", "muster", "muster-devdb", "muster-sim"]
# helpers outside bin/: installed path under the prefix -> CMake target
HELPERS = {"libexec/muster/bin/srun": "muster-srun"}


def install(prefix, destdir=None):
    env = dict(os.environ)
    env.pop("DESTDIR", None)
    if destdir:
        env["DESTDIR"] = destdir
    r = subprocess.run(["cmake", "--install", harness.build_dir(), "--prefix", prefix],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=120)
    check_eq(r.returncode, 0, "cmake --install", r.stdout)
    return r.stdout


PREFIX = os.path.join(TMP, "usr")
_installed = []


def installed():
    if not _installed:
        install(PREFIX)
        _installed.append(PREFIX)
    return PREFIX


def test_install_layout():
    p = installed()
    for b in BINARIES:
        f = os.path.join(p, "bin", b)
        check(os.path.isfile(f) and os.access(f, os.X_OK), "installed binary", f)
    for h in HELPERS:
        f = os.path.join(p, h)
        # jobs of every account run it; only root may change it
        check(os.path.isfile(f) and os.stat(f).st_mode & 0o777 == 0o755, "installed helper", f)
        check(os.stat(os.path.dirname(f)).st_mode & 0o022 == 0, "helper dir writable by owner only", f)
    mig = sorted(os.path.basename(f) for f in glob.glob(os.path.join(p, "share/muster/migrations/*.sql")))
    src = sorted(os.path.basename(f) for f in glob.glob(os.path.join(SRC, "store/migrations/*.sql")))
    check_eq(mig, src, "migrations installed")
    for u in ("muster-api", "muster-scheduler", "muster-agent"):
        check(os.path.isfile(os.path.join(p, "lib/systemd/system", u + ".service")), u)
    check(os.path.isfile(os.path.join(p, "lib/sysusers.d/muster.conf")), "sysusers")
    for e in ("muster.env", "agent.env"):
        check(os.path.isfile(os.path.join(p, "share/muster/examples", e)), e)
    portal = os.path.join(SRC, "web/dist")
    if os.path.isdir(portal) and os.listdir(portal):
        check(os.path.isdir(os.path.join(p, "share/muster/portal")), "portal assets installed")


def unit(name):
    with open(os.path.join(installed(), "lib/systemd/system", name + ".service")) as f:
        return f.read()


def test_units_verify_and_hardening():
    p = installed()
    units = sorted(glob.glob(os.path.join(p, "lib/systemd/system/*.service")))
    check_eq(len(units), 3, units)
    r = subprocess.run(["systemd-analyze", "verify"] + units, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    # verify exits 0 on unknown keys too: any word from it is a finding
    check_eq((r.returncode, r.stdout.strip()), (0, ""), "systemd-analyze verify")
    for u in ("muster-api", "muster-scheduler"):
        t = unit(u)
        for want in ("User=muster", "NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes",
                     "ExecStart=%s/bin/%s" % (p, u), "CapabilityBoundingSet=\n"):
            check(want in t, u, "lacks", repr(want))
    a = unit("muster-agent")
    check("User=root" in a and "KillMode=process" in a, "agent unit", a)
    check("NoNewPrivileges" not in a.replace("# such as NoNewPrivileges", ""), "agent must not set NoNewPrivileges")
    with open(os.path.join(p, "lib/sysusers.d/muster.conf")) as f:
        check(re.search(r"^u muster ", f.read(), re.M), "sysusers makes the muster account")


def test_smoke_from_installed_tree():
    """A real muster from <prefix>/bin only: no build dir on any path."""
    p = installed()
    bindir = os.path.join(p, "bin")
    old = os.environ.get("MUSTER_BUILD_DIR")
    os.environ["MUSTER_BUILD_DIR"] = bindir
    try:
        with harness.Cluster(api=True) as c:
            for b in ("muster-devdb", "muster-api"):
                check_eq(os.path.dirname(harness.binary(b)), bindir, b)
            api_exe = os.readlink("/proc/%d/exe" % c.api_proc.pid)
            check_eq(api_exe, os.path.join(bindir, "muster-api"), "API runs from the install tree")
            c.sql("INSERT INTO tenants (name, parent_id, path) SELECT 'inst', id, path || '/inst'"
                  " FROM tenants WHERE name = 'root'")
            c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 8 FROM tenants WHERE name = 'inst'")
            user = c.make_token("tenant", tenant="inst", user="ina")
            agent_tok = c.make_token("agent", node="inst-n1")
            c.start_process([os.path.join(bindir, "muster-scheduler"), "--db", c.db_url], name="scheduler")
            c.start_process(
                [os.path.join(bindir, "muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port,
                 "--node", "inst-n1", "--address", "127.0.0.1", "--state-dir", os.path.join(c.dir, "ag"),
                 "--gpu-backend", "fake", "--fake-gpus", "2", "--heartbeat-interval", "300ms"]
                + c.agent_flags(),
                env={"MUSTER_AGENT_TOKEN": agent_tok}, name="agent",
                wait_for=lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name = 'inst-n1' AND up") == "1")
            e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
            e.update(HOME=os.path.join(c.dir, "home"), MUSTER_URL=c.api_url, MUSTER_TOKEN=user)
            r = subprocess.run([os.path.join(bindir, "muster"), "submit", "--gpus", "1", "--",
                                "/bin/true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=e, timeout=60)
            check_eq(r.returncode, 0, "muster submit", r.stdout, r.stderr)
            jid = c.sql_value("SELECT max(id) FROM jobs")
            check(jid, "a job was stored", r.stdout)
            c.wait_until(lambda: c.sql_value("SELECT state FROM jobs WHERE id = $1", jid) == "COMPLETED",
                         60, "installed cluster ran the job")
            # a batch script's srun: the installed agent finds the installed srun
            sb = os.path.join(c.dir, "srun.sbatch")
            with open(sb, "w") as f:
                f.write("#!/bin/sh\nsrun --ntasks-per-node=1 --mpi=pmix true\n")
            r = subprocess.run([os.path.join(bindir, "muster"), "submit", "--wait", sb],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
                               cwd=c.dir, timeout=90)
            check_eq(r.returncode, 0, "a script calling srun", r.stdout, r.stderr)
    finally:
        if old is None:
            os.environ.pop("MUSTER_BUILD_DIR", None)
        else:
            os.environ["MUSTER_BUILD_DIR"] = old


def sanitized():
    with open(os.path.join(harness.build_dir(), "CMakeCache.txt")) as f:
        return re.search(r"^MUSTER_(ASAN|UBSAN|TSAN):BOOL=ON$", f.read(), re.M) is not None


def dockerfile():
    with open(os.path.join(SRC, "docker/Dockerfile")) as f:
        text = f.read()
    return text.replace("\\\n", " ")  # join continued lines


def test_dockerfile_matches_install_tree():
    text = dockerfile()
    m = re.search(r"DESTDIR=(\S+) cmake --install \S+ --prefix (\S+)", text)
    check(m, "the build stage installs with DESTDIR=... cmake --install ... --prefix ...")
    staging, prefix = m.group(1), m.group(2)
    dest = os.path.join(TMP, "docker-staging")
    install(prefix, destdir=dest)
    # every COPY --from=build source is part of the install tree, and not empty
    copies = re.findall(r"^COPY --from=build (.+)$", text, re.M)
    check(copies, "runtime stage copies from the build stage")
    copied = []
    for line in copies:
        parts = line.split()
        srcs, dst = parts[:-1], parts[-1]
        for s in srcs:
            check(s.startswith(staging + "/"), "COPY source outside the staging dir", s)
            local = os.path.join(dest, s[len(staging) + 1:])
            check(os.path.exists(local), "COPY source the install does not produce", s)
            if os.path.isdir(local):
                check(os.listdir(local), "empty COPY source", s)
            inside = s[len(staging):]
            check(dst.rstrip("/") == inside.rstrip("/") or dst.endswith("/"), "COPY", s, "to", dst)
            copied.append(inside.rstrip("/"))
    bindir = prefix + "/bin"
    check(bindir in copied, "the runtime stage copies", bindir, copied)
    inst_bins = sorted(os.listdir(os.path.join(dest, prefix.lstrip("/"), "bin")))
    check_eq(inst_bins, sorted(BINARIES), "installed binaries")
    tm = re.search(r"cmake --build .*?--target ([\w\s-]+?)\s*&&", text)
    check(tm, "the build stage names its targets")
    inst_helpers = sorted(h for h in HELPERS if os.path.isfile(os.path.join(dest, prefix.lstrip("/"), h)))
    check_eq(inst_helpers, sorted(HELPERS), "installed helpers")
    check_eq(sorted(tm.group(1).split()), sorted(inst_bins + list(HELPERS.values())),
             "--target list = installed binaries and helpers")
    for h in HELPERS:
        check(prefix + "/" + os.path.dirname(os.path.dirname(h)) in copied, "the runtime stage copies", h)
    cm = re.search(r'^CMD \["([\w-]+)"', text, re.M)
    check(cm and cm.group(1) in inst_bins, "CMD runs an installed binary")
    # runtime packages: the Debian package of every library a binary needs
    am = re.search(r"^FROM debian:12-slim\s*\nRUN (.+)$", text, re.M)
    check(am, "runtime stage installs packages")
    pkgs = set(am.group(1).split())
    base = {"libc6", "libgcc-s1", "zlib1g"}
    provided = pkgs | base
    if sanitized():
        return  # `make asan`'s binaries link the sanitizer runtimes; the image builds without
    for b in inst_bins + list(HELPERS):
        exe = os.path.join(dest, prefix.lstrip("/"), b if "/" in b else "bin/" + b)
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]",
                            subprocess.run(["readelf", "-d", exe], stdout=subprocess.PIPE, text=True).stdout)
        ldd = subprocess.run(["ldd", exe], stdout=subprocess.PIPE, text=True).stdout
        for lib in needed:
            lm = re.search(r"^\s*%s => (\S+)" % re.escape(lib), ldd, re.M)
            check(lm, b, "needs", lib, "which ldd cannot resolve")
            path = os.path.realpath(lm.group(1))
            owner = None
            for cand in (path, path.replace("/usr/lib/", "/lib/", 1)):
                r = subprocess.run(["dpkg", "-S", cand], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   text=True)
                if r.returncode == 0:
                    owner = r.stdout.split(":")[0]
                    break
            check(owner, b, lib, path, "belongs to no package")
            check(owner in provided, b, "needs", lib, "from", owner,
                  "which the runtime stage's packages do not bring")


if __name__ == "__main__":
    try:
        harness.main()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
