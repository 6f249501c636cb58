"""test_grpc_common.py - helpers for the gRPC tests (not a test itself).

An independent client: Debian's python3-grpcio with stubs generated AT TEST
TIME from api/proto/muster/v1/*.proto (and Debian's grpc-proto health.proto)
by python3 -m grpc_tools.protoc into a temp dir, so the tests exercise the
protos as shipped, not code muster wrote.
"""
import atexit
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

import harness

try:
    import grpc  # noqa: F401
except ImportError:  # pragma: no cover
    grpc = None

HEALTH_PROTO = "/usr/share/grpc-proto/grpc/health/v1/health.proto"
PB = {}


def load():
    """Generates and imports the stubs once; skips the test without grpcio/grpc_tools."""
    if PB:
        return PB
    if grpc is None:
        harness.skip("python3-grpcio is not installed")
    try:
        import grpc_tools  # noqa: F401
    except ImportError:
        harness.skip("python3-grpc-tools is not installed")
    if not os.path.exists(HEALTH_PROTO):
        harness.skip("grpc-proto (health.proto) is not installed")
    out = tempfile.mkdtemp(prefix="muster-grpc-stubs-")
    atexit.register(shutil.rmtree, out, True)
    src = os.path.join(out, "src")
    # health.proto under another import path so its Python module does not
    # shadow the grpc package (the proto package stays grpc.health.v1)
    os.makedirs(os.path.join(src, "muster_health"))
    shutil.copy(HEALTH_PROTO, os.path.join(src, "muster_health", "health.proto"))
    proto_dir = os.path.join(harness.SOURCE_DIR, "api", "proto")
    protos = sorted("muster/v1/" + f for f in os.listdir(os.path.join(proto_dir, "muster", "v1"))
                    if f.endswith(".proto"))
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + proto_dir, "-I" + src,
                    "--python_out=" + out, "--grpc_python_out=" + out]
                   + protos + ["muster_health/health.proto"], check=True)
    sys.path.insert(0, out)
    for name in ("jobs", "admin", "sched", "agent"):
        PB[name] = importlib.import_module("muster.v1.%s_pb2" % name)
        PB[name + "_grpc"] = importlib.import_module("muster.v1.%s_pb2_grpc" % name)
    PB["health"] = importlib.import_module("muster_health.health_pb2")
    PB["health_grpc"] = importlib.import_module("muster_health.health_pb2_grpc")
    return PB


def channel(c):
    load()
    ch = grpc.insecure_channel("127.0.0.1:%d" % c.grpc_port)
    grpc.channel_ready_future(ch).result(timeout=10)
    return ch


def md(token):
    return (("authorization", "Bearer " + token),) if token else ()


def expect_code(code, fn, *args, **kw):
    """Calls fn; returns the RpcError, which must carry `code`."""
    try:
        r = fn(*args, **kw)
    except grpc.RpcError as e:
        harness.check_eq(e.code(), code, e.details())
        return e
    raise harness.CheckFailed("expected %s, got a reply: %r" % (code, r))


def make_tenant(c, name, parent="root"):
    """A tenant by SQL (the gRPC tests do not depend on REST admin routes)."""
    c.sql("INSERT INTO tenants (name, parent_id, path) SELECT $1, id, path || '/' || $1 FROM tenants"
          " WHERE name = $2", name, parent)


def make_token(c, role, tenant=None, user="", node=None):
    """A live token by SQL, stored the way muster-api stores them (SHA-256)."""
    import hashlib
    import secrets
    secret = "mst_" + secrets.token_urlsafe(32)[:43]
    c.sql("INSERT INTO api_tokens (name, secret_sha256, prefix, role, tenant_id, user_name, node_name)"
          " VALUES ($1, $2, $3, $4, (SELECT id FROM tenants WHERE name = $5), $6, $7)",
          "grpc-test-" + secrets.token_hex(3), hashlib.sha256(secret.encode()).hexdigest(), secret[:12],
          role, tenant, user or "", node)
    return secret
