#!/usr/bin/python3
"""The cluster policy settings: store/settings.def is the one table; the
defaults the migrations write, the table in docs/api.md "Settings" and the
OpenAPI schema Settings must agree with it. GET/PATCH /v1/settings round
trip with events, every bad value refused with the database unchanged,
roles, the leader applying a change on its next cycle (heartbeat_timeout
with a real muster-scheduler), gRPC GetSettings/UpdateSettings and
`muster settings`."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import harness
from harness import check, check_eq

sys.path.insert(0, os.path.join(harness.SOURCE_DIR, "openapi"))

ROOT = harness.SOURCE_DIR


def table():
    src = open(os.path.join(ROOT, "store", "settings.def")).read()
    rows = re.findall(r'MU_SETTING\((\w+),\s*(MU_SET_\w+),\s*"((?:[^"\\]|\\.)*)",\s*([0-9.e+-]+),'
                      r'\s*([0-9.e+-]+),\s*"((?:[^"\\]|\\.)*)"\)', src)
    check(len(rows) >= 10, "settings.def parsed", len(rows))
    return [{"name": n, "type": t, "default": json.loads(d.replace('\\"', '"')), "min": float(lo),
             "max": float(hi), "doc": doc} for n, t, d, lo, hi, doc in rows]


TYPES = {"MU_SET_INT": "integer", "MU_SET_NUM": "number", "MU_SET_BOOL": "boolean",
         "MU_SET_LEVELS": "array"}


def test_sql_docs_and_spec_agree_with_the_table(c):
    rows = table()
    stored = {k: json.loads(v) for k, v in c.sql("SELECT key, value::text FROM settings")}
    for r in rows:
        check(r["name"] in stored, "the migrations insert", r["name"])
        check_eq(stored[r["name"]], r["default"], "SQL default of", r["name"])
    # docs/api.md: one table row per setting: | `name` | type | `default` | bounds | doc |
    docs = open(os.path.join(ROOT, "docs", "api.md")).read()
    sec = docs[docs.index("## Settings"):]
    sec = sec[:sec.index("\n## ", 5)]
    doc_rows = {m.group(1): m for m in re.finditer(
        r"^\| `(\w+)` \| (\w+) \| `([^`]*)` \| ([^|]*) \| ([^|]*) \|$", sec, re.M)}
    check_eq(sorted(doc_rows), sorted(r["name"] for r in rows), "docs table rows")
    for r in rows:
        m = doc_rows[r["name"]]
        check_eq(m.group(2), TYPES[r["type"]], r["name"])
        check_eq(json.loads(m.group(3)), r["default"], "docs default of", r["name"])
        if r["type"] in ("MU_SET_INT", "MU_SET_NUM"):
            check_eq(m.group(4).strip(), "%d..%d" % (r["min"], r["max"]), r["name"])
        check_eq(m.group(5).strip(), r["doc"], r["name"])
    # openapi: components.schemas.Settings
    import spec_check  # noqa: E402  (openapi/spec_check.py)
    spec = spec_check.Spec.load()
    props = spec.doc["components"]["schemas"]["Settings"]["properties"]
    check_eq(sorted(props), sorted(r["name"] for r in rows), "OpenAPI Settings properties")
    for r in rows:
        p = props[r["name"]]
        check_eq(p["type"], TYPES[r["type"]], r["name"])
        check_eq(p["default"], r["default"], "OpenAPI default of", r["name"])
        if r["type"] in ("MU_SET_INT", "MU_SET_NUM"):
            check_eq((p["minimum"], p["maximum"]), (r["min"], r["max"]), r["name"])
        if r["type"] == "MU_SET_LEVELS":
            check_eq((p["minItems"], p["maxItems"]), (r["min"], r["max"]), r["name"])
    # and the API answers exactly the table, with the defaults
    st, _, b = c.api("GET", "/v1/settings")
    check_eq(st, 200, b)
    check_eq(b, {r["name"]: r["default"] for r in rows})


def state(c):
    return (c.sql("SELECT key, value::text, updated_at FROM settings ORDER BY key"),
            c.sql_value("SELECT count(*) FROM events"))


def test_round_trip_and_events(c):
    st, _, b = c.api("PATCH", "/v1/settings", {"reservation_depth": 4, "heartbeat_timeout": 60,
                                               "topology_levels": ["block", "rack", "row"],
                                               "weight_age": 12.5, "predict_runtimes": False})
    check_eq(st, 200, b)
    check_eq((b["reservation_depth"], b["heartbeat_timeout"], b["topology_levels"], b["weight_age"],
              b["predict_runtimes"]), (4, 60, ["block", "rack", "row"], 12.5, False))
    check_eq(c.api("GET", "/v1/settings")[2], b)
    ev = c.sql("SELECT data->>'key', data->>'old', data->>'new' FROM events"
               " WHERE kind = 'settings.changed' ORDER BY id")
    check_eq(sorted(e[0] for e in ev), sorted(["reservation_depth", "heartbeat_timeout",
                                               "topology_levels", "weight_age", "predict_runtimes"]))
    check(("reservation_depth", "1", "4") in ev, ev)
    # the same value again changes nothing and writes no event
    before = state(c)
    check_eq(c.api("PATCH", "/v1/settings", {"reservation_depth": 4})[0], 200)
    check_eq(state(c), before)
    c.api("PATCH", "/v1/settings", {"reservation_depth": 1, "heartbeat_timeout": 30,
                                    "topology_levels": ["block", "rack"], "weight_age": 1000,
                                    "predict_runtimes": True})


BAD = [
    ({}, 400, ""),
    ({"no_such": 1}, 400, "no_such"),
    ({"reservation_depth": -1}, 400, "reservation_depth"),
    ({"reservation_depth": 10001}, 400, "reservation_depth"),
    ({"reservation_depth": 1.5}, 400, "reservation_depth"),
    ({"reservation_depth": "4"}, 400, "reservation_depth"),
    ({"reservation_depth": None}, 400, "reservation_depth"),
    ({"heartbeat_timeout": 1}, 400, "heartbeat_timeout"),
    ({"half_life": 99999999999}, 400, "half_life"),
    ({"weight_fairshare": -0.5}, 400, "weight_fairshare"),
    ({"weight_fairshare": "high"}, 400, "weight_fairshare"),
    ({"predict_runtimes": "yes"}, 400, "predict_runtimes"),
    ({"predict_runtimes": 1}, 400, "predict_runtimes"),
    ({"topology_levels": "block,rack"}, 400, "topology_levels"),
    ({"topology_levels": ["Block"]}, 400, "topology_levels"),
    ({"topology_levels": ["rack", "rack"]}, 400, "topology_levels"),
    ({"topology_levels": ["a", "b", "c", "d", "e", "f", "g", "h", "i"]}, 400, "topology_levels"),
    ({"topology_levels": [1]}, 400, "topology_levels"),
    ({"job_spec_max_bytes": 10}, 400, "job_spec_max_bytes"),
    ({"lease_timeout": 0}, 400, "lease_timeout"),
    # one bad value among good ones: nothing changes
    ({"reservation_depth": 3, "max_age": 0}, 400, "max_age"),
]


def test_bad_values_change_nothing(c):
    before = state(c)
    for body, status, field in BAD:
        st, _, b = c.api("PATCH", "/v1/settings", body)
        check_eq((st, b.get("field", "")), (status, field), body, b)
    for raw in ("", "[]", "{", '{"max_age": 5, "max_age": 6}', "null"):
        st, _, b = c.api("PATCH", "/v1/settings", None, raw=raw)
        check_eq(st, 400, raw, b)
    check_eq(state(c), before, "no refused PATCH changed a setting or wrote an event")


def test_roles(c):
    c.make_tenant("st")
    tok = c.make_token("tenant", tenant="st", user="sam")
    reader = c.make_token("reader", tenant="st")
    before = state(c)
    check_eq(c.api("PATCH", "/v1/settings", {"reservation_depth": 2}, token=tok)[0], 403)
    check_eq(c.api("PATCH", "/v1/settings", {"reservation_depth": 2}, token=reader)[0], 403)
    check_eq(c.api("PATCH", "/v1/settings", {"reservation_depth": 2}, token="")[0], 401)
    check_eq(c.api("GET", "/v1/settings", token=reader)[0], 200)
    check_eq(c.api("GET", "/v1/settings", token="")[0], 401)
    check_eq(state(c), before)


def test_leader_applies_on_next_cycle(c):
    harness.require_binary("muster-scheduler")
    c.sql("INSERT INTO nodes (name, address, topology, gpu_model, gpu_count, last_heartbeat, up)"
          " VALUES ('st-n1', '10.0.0.1', 'block-1/rack-1', 'x', 1, now() - interval '8 seconds', true)")
    c.start_process(["muster-scheduler", "--db", c.db_url, "--tick", "200ms"], name="sched")
    c.wait_until(lambda: int(c.sql_value("SELECT cycles FROM scheduler_lease")) >= 1, 15,
                 "the leader's first cycle")
    time.sleep(1.5)  # several ticks (200 ms), each marking stale nodes down
    check_eq(c.sql_value("SELECT up FROM nodes WHERE name = 'st-n1'"), "t",
             "8 s without a heartbeat is fine under the default 30 s")
    check_eq(c.api("PATCH", "/v1/settings", {"heartbeat_timeout": 5})[0], 200)
    c.wait_until(lambda: c.sql_value("SELECT up FROM nodes WHERE name = 'st-n1'") == "f", 10,
                 "the node is down once the leader read heartbeat_timeout 5")
    c.api("PATCH", "/v1/settings", {"heartbeat_timeout": 30})


def test_grpc(c):
    from test_grpc_common import channel, expect_code, load, md
    pb = load()
    import grpc
    A = pb["admin"]
    stub = pb["admin_grpc"].AdminServiceStub(channel(c))
    got = stub.GetSettings(A.GetSettingsRequest(), metadata=md(c.admin_token), timeout=10)
    check_eq(json.loads(got.values["reservation_depth"]), 1)
    r = stub.UpdateSettings(A.UpdateSettingsRequest(values={"reservation_depth": "2"}),
                            metadata=md(c.admin_token), timeout=10)
    check_eq(r.values["reservation_depth"], "2")
    check_eq(c.api("GET", "/v1/settings")[2]["reservation_depth"], 2)
    before = state(c)
    for vals in ({"reservation_depth": "x"}, {"reservation_depth": "-3"}, {"nope": "1"}, {}):
        expect_code(grpc.StatusCode.INVALID_ARGUMENT, stub.UpdateSettings,
                    A.UpdateSettingsRequest(values=vals), metadata=md(c.admin_token), timeout=10)
    check_eq(state(c), before)
    stub.UpdateSettings(A.UpdateSettingsRequest(values={"reservation_depth": "1"}),
                        metadata=md(c.admin_token), timeout=10)


def cli(c, *args):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    e.update(HOME=tempfile.gettempdir() + "/muster-cli-nohome", MUSTER_URL=c.api_url,
             MUSTER_TOKEN=c.admin_token)
    r = subprocess.run([harness.require_binary("muster")] + list(args), capture_output=True,
                       text=True, env=e, timeout=60)
    return r.returncode, r.stdout, r.stderr


def test_cli(c):
    rc, out, err = cli(c, "settings")
    check_eq(rc, 0, err)
    check(re.search(r"^reservation_depth\s+= 1$", out, re.M), out)
    rc, out, err = cli(c, "settings", "set", "reservation_depth=3", "topology_levels=block,rack,row")
    check_eq((rc, err), (0, ""))
    rc, out, _ = cli(c, "settings", "get", "reservation_depth", "topology_levels")
    check_eq(out.splitlines(), ['topology_levels      = ["block","rack","row"]',
                                "reservation_depth    = 3"])
    before = state(c)
    check_eq(cli(c, "settings", "set", "reservation_depth=-1")[0], 1)
    check_eq(cli(c, "settings", "set", "reservation_depth")[0], 2)
    check_eq(cli(c, "settings", "frobnicate")[0], 2)
    check_eq(state(c), before)
    cli(c, "settings", "set", "reservation_depth=1", "topology_levels=block,rack")


if __name__ == "__main__":
    harness.main(api=True)
