#!/usr/bin/python3
"""TLS end to end, with openssl-made certificates (tls_certs.py): muster-api
serves REST (HTTP/1.1 and HTTP/2 by ALPN) and gRPC over TLS; curl, Python's
ssl, python3-grpcio and the CLI (--cacert, MUSTER_CA_FILE) succeed with the
right CA; plaintext to the TLS ports, a wrong CA and expired certificates
are refused with clear errors; agents connect over TLS with a client
certificate that must name their node (--tls-client-ca); SIGHUP re-reads the
certificate for REST and gRPC, and a bad file on reload keeps the old one;
a bad --tls-* configuration stops muster-api at start with the reason."""
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import urllib.request

import grpc

import harness
from harness import check, check_eq
from tls_certs import Pki

S = {}


def setup(c):
    if S:
        return S
    d = os.path.join(c.dir, "pki")
    S["pki"] = pki = Pki(d)
    S["other"] = Pki(os.path.join(c.dir, "pki-other"), name="someone-else-ca")
    S["crt"], S["key"] = pki.issue("localhost", dns=["localhost"], ips=["127.0.0.1"])
    # the files muster-api reads; reload tests overwrite them
    S["api_crt"], S["api_key"] = os.path.join(d, "api.crt"), os.path.join(d, "api.key")
    shutil.copy(S["crt"], S["api_crt"])
    shutil.copy(S["key"], S["api_key"])
    os.chmod(S["api_key"], 0o600)
    c.ssl_context = ssl.create_default_context(cafile=pki.ca_crt)
    c.start_api(MUSTER_TLS_CERT=S["api_crt"], MUSTER_TLS_KEY=S["api_key"],
                MUSTER_TLS_CLIENT_CA=pki.ca_crt)
    return S


def curl(*args):
    r = subprocess.run(["curl", "-sS", "--max-time", "10"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=30)
    return r.returncode, r.stdout, r.stderr


def url(c, path):
    return "https://127.0.0.1:%d%s" % (c.http_port, path)


def health(target, creds=None, override=None):
    opts = [("grpc.ssl_target_name_override", override)] if override else []
    ch = grpc.secure_channel(target, creds, options=opts) if creds else grpc.insecure_channel(target)
    try:
        return ch.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=10)
    finally:
        ch.close()


def grpc_error(fn):
    try:
        fn()
    except grpc.RpcError as e:
        return e.code(), e.details()
    raise AssertionError("the call succeeded")


def test_rest_over_tls(c):
    s = setup(c)
    rc, out, err = curl("--http1.1", "--cacert", s["pki"].ca_crt, "-w", " %{http_version}",
                        url(c, "/healthz"))
    check_eq((rc, out), (0, '{"status":"ok"} 1.1'), err)
    rc, out, err = curl("--http2", "--cacert", s["pki"].ca_crt, "-w", " %{http_version}",
                        url(c, "/healthz"))
    check_eq((rc, out), (0, '{"status":"ok"} 1.1'), "ALPN offers HTTP/1.1 only (the gate reads HTTP/1)", err)
    st, _, body = c.api("GET", "/v1/nodes")  # python ssl, admin token
    check_eq(st, 200, body)
    check(c.api_url.startswith("https://"), c.api_url)


def test_plaintext_to_tls_ports_refused(c):
    setup(c)
    rc, out, err = curl("-w", " %{http_code}", "http://127.0.0.1:%d/healthz" % c.http_port)
    check_eq(rc, 0, err)
    check(out.endswith(" 400") and "speaks TLS only: use https://" in out, out)
    code, det = grpc_error(lambda: health("127.0.0.1:%d" % c.grpc_port))
    check_eq(code, grpc.StatusCode.UNAVAILABLE, det)
    # a client that connects and sends nothing is dropped, the server lives on
    sk = socket.create_connection(("127.0.0.1", c.http_port))
    st, _, _ = c.api("GET", "/healthz", token="")
    check_eq(st, 200)
    sk.close()


def test_wrong_ca_refused(c):
    s = setup(c)
    rc, _, err = curl("--cacert", s["other"].ca_crt, url(c, "/healthz"))
    check_eq(rc, 60, err)
    check("SSL certificate problem" in err, err)
    ctx = ssl.create_default_context(cafile=s["other"].ca_crt)
    try:
        with socket.create_connection(("127.0.0.1", c.http_port), timeout=10) as sk:
            ctx.wrap_socket(sk, server_hostname="127.0.0.1")
        raise AssertionError("handshake with the wrong CA succeeded")
    except ssl.SSLCertVerificationError as e:
        check("certificate verify failed" in str(e), e)
    with open(s["other"].ca_crt, "rb") as f:
        creds = grpc.ssl_channel_credentials(root_certificates=f.read())
    code, det = grpc_error(lambda: health("127.0.0.1:%d" % c.grpc_port, creds, "localhost"))
    check_eq(code, grpc.StatusCode.UNAVAILABLE, det)


def test_expired_server_cert_refused_by_clients(c):
    """muster-api will not serve an expired certificate (below); a server
    that does (openssl s_server here) is refused by the CLI, curl and gRPC."""
    s = setup(c)
    crt, key = s["pki"].issue("localhost", dns=["localhost"], ips=["127.0.0.1"], expired=True,
                              prefix="expired-srv")
    port = harness.free_port()
    p = c.start_process(["openssl", "s_server", "-quiet", "-accept", "127.0.0.1:%d" % port, "-cert", crt,
                         "-key", key, "-www"], name="s_server")
    def listening():
        check(p.poll() is None, "openssl s_server exited", c.log_text("s_server"))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    c.wait_until(listening, 10, "s_server listening")
    rc, _, err = curl("--cacert", s["pki"].ca_crt, "https://127.0.0.1:%d/" % port)
    check(rc == 60 and "expired" in err, rc, err)
    e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    e.update(HOME=os.path.join(c.dir, "nohome"), MUSTER_TOKEN=c.admin_token,
             MUSTER_URL="https://127.0.0.1:%d" % port, MUSTER_CA_FILE=s["pki"].ca_crt)
    r = subprocess.run([harness.require_binary("muster"), "queue"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=e, timeout=60)
    check(r.returncode == 5 and "certificate has expired" in r.stderr, r.returncode, r.stderr)
    c.stop_process(p)


def test_grpc_over_tls(c):
    s = setup(c)
    with open(s["pki"].ca_crt, "rb") as f:
        creds = grpc.ssl_channel_credentials(root_certificates=f.read())
    check_eq(health("127.0.0.1:%d" % c.grpc_port, creds, "localhost"), b"\x08\x01", "SERVING")
    check_eq(health("localhost:%d" % c.grpc_port, creds), b"\x08\x01", "by name, SERVING")


def cli(c, *args, ca=None, env_ca=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    e.update(HOME=os.path.join(c.dir, "nohome"), MUSTER_URL=c.api_url, MUSTER_TOKEN=c.admin_token)
    if env_ca:
        e["MUSTER_CA_FILE"] = env_ca
    argv = [harness.require_binary("muster")] + (["--cacert", ca] if ca else []) + list(args)
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
                       timeout=60)
    return r.returncode, r.stdout, r.stderr


def test_cli_cacert(c):
    s = setup(c)
    rc, out, err = cli(c, "queue", ca=s["pki"].ca_crt)
    check_eq(rc, 0, out, err)
    rc, out, err = cli(c, "queue", env_ca=s["pki"].ca_crt)
    check_eq(rc, 0, "MUSTER_CA_FILE", out, err)
    rc, out, err = cli(c, "queue")
    check(rc == 5 and "SSL certificate problem" in err, "no CA: exit 5 (unavailable)", rc, err)
    rc, out, err = cli(c, "queue", ca=s["other"].ca_crt)
    check(rc != 0 and "SSL certificate problem" in err, "wrong CA", rc, err)


def start_agent(c, node, crt=None, key=None, ca=None, wait_up=True):
    s = setup(c)
    tok = c.make_token("agent", node=node)
    args = ["muster-agent", "--api", "127.0.0.1:%d" % c.grpc_port, "--node", node,
            "--address", "127.0.0.1", "--state-dir", os.path.join(c.dir, "st-" + node),
            "--gpu-backend", "fake", "--fake-gpus", "1", "--heartbeat-interval", "300ms",
            "--tls-ca", ca or s["pki"].ca_crt] + c.agent_flags()
    if crt:
        args += ["--tls-cert", crt, "--tls-key", key]
    up = "SELECT count(*) FROM nodes WHERE name = '%s' AND up" % node
    p = c.start_process(args, env={"MUSTER_AGENT_TOKEN": tok}, name="agent-" + node,
                        wait_for=(lambda: c.sql_value(up) == "1") if wait_up else None)
    return p


def agent_log_until(c, node, *needles, timeout=20):
    def seen():
        t = c.log_text("agent-" + node)
        return any(n in t for n in needles) and t
    return c.wait_until(seen, timeout, "agent %s log shows %s" % (node, needles))


def test_agent_with_client_cert(c):
    s = setup(c)
    crt, key = s["pki"].issue("tls-n1", client=True)
    p = start_agent(c, "tls-n1", crt, key)
    check_eq(c.sql_value("SELECT count(*) FROM gpus g JOIN nodes n ON n.id = g.node_id"
                         " WHERE n.name = 'tls-n1'"), "1")
    c.stop_process(p)


def test_agent_cert_must_name_its_node(c):
    s = setup(c)
    crt, key = s["pki"].issue("tls-n1", client=True, prefix="n1-again")
    start_agent(c, "tls-n2", crt, key, wait_up=False)
    t = agent_log_until(c, "tls-n2", "names tls-n1, not node tls-n2")
    check("status=7" in t, t[-600:])
    start_agent(c, "tls-n3", wait_up=False)  # no client certificate at all
    t = agent_log_until(c, "tls-n3", "must present a client certificate")
    check("status=7" in t, t[-600:])
    check_eq(c.sql_value("SELECT count(*) FROM nodes WHERE name IN ('tls-n2', 'tls-n3') AND up"), "0")


def agent_start_fails(c, *extra):
    r = subprocess.run([harness.require_binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port,
                        "--node", "x", "--state-dir", os.path.join(c.dir, "st-x"), "--gpu-backend",
                        "fake"] + list(extra) + c.agent_flags(),
                       env={"MUSTER_AGENT_TOKEN": "mst_" + "x" * 43, "PATH": os.environ["PATH"]},
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
    return r.returncode, r.stdout


def test_agent_expired_or_foreign_cert_refused(c):
    s = setup(c)
    ca = s["pki"].ca_crt
    with open(ca, "rb") as f:
        roots = f.read()
    crt, key = s["pki"].issue("tls-n4", client=True, expired=True)
    # the agent says so at start ...
    rc, out = agent_start_fails(c, "--tls-ca", ca, "--tls-cert", crt, "--tls-key", key)
    check(rc != 0 and "the certificate has expired" in out, rc, out)
    good, _ = s["pki"].issue("tls-n4", client=True, prefix="n4-good")
    rc, out = agent_start_fails(c, "--tls-ca", ca, "--tls-cert", good, "--tls-key", s["key"])
    check(rc != 0 and "does not belong to --tls-cert" in out, rc, out)
    rc, out = agent_start_fails(c, "--tls-cert", crt, "--tls-key", key)
    check(rc != 0 and "need --tls-ca" in out, rc, out)
    # ... and muster-api refuses the handshake of a client presenting it
    with open(crt, "rb") as f, open(key, "rb") as k:
        creds = grpc.ssl_channel_credentials(roots, k.read(), f.read())
    code, det = grpc_error(lambda: health("127.0.0.1:%d" % c.grpc_port, creds, "localhost"))
    check_eq(code, grpc.StatusCode.UNAVAILABLE, det)
    crt, key = s["other"].issue("tls-n5", client=True)  # a certificate of another CA
    start_agent(c, "tls-n5", crt, key, wait_up=False)
    agent_log_until(c, "tls-n5", "status=14")
    start_agent(c, "tls-n6", ca=s["other"].ca_crt, wait_up=False)  # the agent trusts another CA
    t = agent_log_until(c, "tls-n6", "status=14")
    check("certificate verify failed" in t, t[-800:])
    check_eq(c.sql_value("SELECT count(*) FROM nodes WHERE name IN ('tls-n5', 'tls-n6') AND up"), "0")


def peer_cert(port, alpn=None):
    ctx = ssl.create_default_context(cafile=S["pki"].ca_crt)
    if alpn:
        ctx.set_alpn_protocols([alpn])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sk:
        with ctx.wrap_socket(sk, server_hostname="localhost") as tls:
            return tls.getpeercert(binary_form=True)


def der(path):
    with open(path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def test_sighup_reloads_certificate(c):
    s = setup(c)
    old = der(s["crt"])
    check_eq(peer_cert(c.http_port), old)
    new_crt, new_key = s["pki"].issue("localhost", dns=["localhost"], ips=["127.0.0.1"], prefix="renewed")
    shutil.copy(new_crt, s["api_crt"])
    shutil.copy(new_key, s["api_key"])
    c.api_proc.send_signal(signal.SIGHUP)
    new = der(new_crt)
    c.wait_until(lambda: peer_cert(c.http_port) == new, 10, "REST serves the renewed certificate")
    c.wait_until(lambda: peer_cert(c.grpc_port, "h2") == new, 10, "gRPC serves the renewed certificate")
    with open(s["pki"].ca_crt, "rb") as f:
        creds = grpc.ssl_channel_credentials(root_certificates=f.read())
    check_eq(health("127.0.0.1:%d" % c.grpc_port, creds, "localhost"), b"\x08\x01")
    # a broken file on reload: logged, the renewed certificate stays
    with open(s["api_key"], "w") as f:
        f.write("not a key\n")
    c.api_proc.send_signal(signal.SIGHUP)
    c.wait_until(lambda: "tls reload failed" in c.log_text("api"), 10, "reload failure logged")
    check("not a PEM private key" in c.log_text("api"), c.log_text("api")[-500:])
    check_eq(peer_cert(c.http_port), new)
    check_eq(c.api_proc.poll(), None, "muster-api still runs")
    shutil.copy(new_key, s["api_key"])


def api_start_fails(c, **env):
    e = dict(MUSTER_HTTP_ADDR="127.0.0.1:0", MUSTER_GRPC_ADDR="off", MUSTER_DATABASE_URL=c.db_url)
    e.update(env)
    r = subprocess.run([harness.require_binary("muster-api")], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, env=e, timeout=30)
    return r.returncode, r.stdout


def test_bad_tls_config_refused_at_start(c):
    s = setup(c)
    crt, key = s["pki"].issue("localhost", dns=["localhost"], expired=True, prefix="expired-api")
    rc, out = api_start_fails(c, MUSTER_TLS_CERT=crt, MUSTER_TLS_KEY=key)
    check_eq(rc, 2, out)
    check("--tls-cert" in out and "expired" in out, out)
    rc, out = api_start_fails(c, MUSTER_TLS_CERT=s["crt"], MUSTER_TLS_KEY=key)  # another key
    check(rc == 2 and "does not belong to the certificate" in out, out)
    rc, out = api_start_fails(c, MUSTER_TLS_CERT=s["crt"])
    check(rc == 2 and "go together" in out, out)
    rc, out = api_start_fails(c, MUSTER_TLS_CERT=s["crt"], MUSTER_TLS_KEY=s["key"],
                              MUSTER_TLS_CLIENT_CA=os.path.join(c.dir, "missing.pem"))
    check(rc == 2 and "missing.pem" in out, out)


# ---- the database over TLS (libpq sslmode) ------------------------------------


class SslPostgres:
    """A PostgreSQL of its own on 127.0.0.1 that takes TCP connections only
    over TLS (hostssl trust, hostnossl reject), run as `postgres` when root."""

    def __init__(self, d, pki):
        import glob
        self.dir = d
        self.bindir = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))[-1]
        self.port = harness.free_port()
        self.data = os.path.join(d, "data")
        os.makedirs(d)
        crt, key = pki.issue("pg", ips=["127.0.0.1"], dns=["localhost"], prefix="pg-server")
        self.crt, self.key = os.path.join(d, "server.crt"), os.path.join(d, "server.key")
        shutil.copy(crt, self.crt)
        shutil.copy(key, self.key)
        os.chmod(self.key, 0o600)
        self.asuser = []
        if os.geteuid() == 0:
            import pwd
            pw = pwd.getpwnam("postgres")
            for f in (d, self.crt, self.key):
                os.chown(f, pw.pw_uid, pw.pw_gid)
            self.asuser = ["runuser", "-u", "postgres", "--"]
        self.run("initdb", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "-D", self.data)
        with open(os.path.join(self.data, "pg_hba.conf"), "w") as f:
            f.write("local all all trust\nhostssl all all 127.0.0.1/32 trust\n"
                    "hostnossl all all 127.0.0.1/32 reject\n")
        opts = ("-c listen_addresses=127.0.0.1 -p %d -k %s -c ssl=on -c ssl_cert_file=%s -c ssl_key_file=%s"
                % (self.port, d, self.crt, self.key))
        self.run("pg_ctl", "-w", "-D", self.data, "-l", os.path.join(d, "pg.log"), "-o", opts, "start")

    def run(self, tool, *args):
        r = subprocess.run(self.asuser + [os.path.join(self.bindir, tool)] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                           cwd=self.dir)
        if r.returncode != 0:
            raise RuntimeError("%s: %s" % (tool, r.stdout))

    def url(self, **params):
        q = "&".join("%s=%s" % kv for kv in params.items())
        return "postgresql://postgres@127.0.0.1:%d/postgres?%s" % (self.port, q)

    def stop(self):
        self.run("pg_ctl", "-w", "-D", self.data, "-m", "fast", "stop")


def test_database_over_tls(c):
    s = setup(c)
    pg = SslPostgres(os.path.join(c.dir, "sslpg"), s["pki"])
    try:
        good = pg.url(sslmode="verify-full", sslrootcert=s["pki"].ca_crt)
        port = harness.free_port()
        api = c.start_process(["muster-api"], name="api-sslpg",
                              env={"MUSTER_DATABASE_URL": good, "MUSTER_HTTP_ADDR": "127.0.0.1:%d" % port,
                                   "MUSTER_GRPC_ADDR": "off"},
                              wait_for="http listening on")
        def ready():
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port, timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False
        c.wait_until(ready, 20, "muster-api ready on the TLS database")
        sched = c.start_process(["muster-scheduler", "--db", good], name="sched-sslpg",
                                env={"MUSTER_DATABASE_URL": good})
        c.wait_until(lambda: "leader" in c.log_text("sched-sslpg") or sched.poll() is not None, 20,
                     "scheduler leads on the TLS database")
        check_eq(sched.poll(), None, c.log_text("sched-sslpg")[-800:])
        c.stop_process(sched)
        c.stop_process(api)
        # every connection was TLS: the server refuses any other
        for params, why in (({"sslmode": "disable"}, "no encryption"),
                            ({"sslmode": "verify-full", "sslrootcert": s["other"].ca_crt},
                             "certificate verify failed")):
            r = subprocess.run([harness.require_binary("muster-api")],
                               env={"MUSTER_DATABASE_URL": pg.url(**params), "MUSTER_HTTP_ADDR": "127.0.0.1:0",
                                    "MUSTER_GRPC_ADDR": "off", "PATH": os.environ["PATH"]},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
            check(r.returncode != 0 and why in r.stdout, params, r.returncode, r.stdout)
    finally:
        pg.stop()


if __name__ == "__main__":
    harness.main()
