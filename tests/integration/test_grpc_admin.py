#!/usr/bin/python3
"""AdminService's REST-parity methods over gRPC from an independent client
(python3-grpcio, stubs generated at test time): UpdateTenant (update_mask,
subtree move), GetTenantQuotas, Get/Create/Update/DeletePriorityClass,
Create/List/Get/RevokeToken. Every happy path is read back over REST (and
REST writes over gRPC); refusals carry the REST problem slug and field in the
trailers and change nothing in the database; auth (UNAUTHENTICATED,
PERMISSION_DENIED), tenant isolation (NOT_FOUND), truncated and random
protobuf bytes (INVALID_ARGUMENT, never a crash)."""
import contextlib
import random

import harness
from harness import check, check_eq
from test_admin_common import PROBLEM, _api, snapshot
from test_grpc_common import channel, expect_code, load, md

S = {}


def setup(c):
    if S:
        return S
    pb = load()
    import grpc
    S["grpc"] = grpc
    S["code"] = grpc.StatusCode
    S["A"] = pb["admin"]
    c.make_tenant("ta")
    c.make_tenant("tsub", parent="ta")
    c.make_tenant("tb")
    S["admin"] = c.admin_token
    S["a"] = c.make_token("tenant", tenant="ta", user="alice")
    S["b"] = c.make_token("tenant", tenant="tb", user="bob")
    S["sub"] = c.make_token("tenant", tenant="tsub", user="sam")
    S["reader"] = c.make_token("reader", tenant="ta", user="rita")
    S["ch"] = channel(c)
    S["svc"] = pb["admin_grpc"].AdminServiceStub(S["ch"])
    S["c"] = c
    return S


def call(method, req, tok):
    S["c"]._admin_snap = None  # it may change the database (c.api forgets it too)
    return getattr(S["svc"], method)(req, metadata=md(tok), timeout=10)


def trailer(e, key):
    return dict(e.trailing_metadata() or ()).get(key)


def refused(c, code, method, req, tok=None, field=None, rest=None):
    """gRPC `method` must fail with `code` and (a write) change nothing in the database;
    with rest=(http method, path, body[, token]) REST must refuse the same
    request with the same problem slug and field, also changing nothing."""
    # one snapshot per request: the last one stands while only refusals ran;
    # none for reads and auth refusals (refused before any database work)
    db = not method.startswith(("Get", "List")) and code not in (S["code"].UNAUTHENTICATED,
                                                                 S["code"].PERMISSION_DENIED) \
        and not S.get("batch")
    before = (getattr(c, "_admin_snap", None) or snapshot(c)) if db else None
    e = expect_code(code, getattr(S["svc"], method), req, metadata=md(tok if tok is not None else S["admin"]),
                    timeout=10)
    if field is not None:
        check_eq(trailer(e, "muster-field"), field, e.details())
    if rest:
        st, _, b = _api(c, rest[0], rest[1], rest[2], token=rest[3] if len(rest) > 3 else None)
        check(st >= 400, "REST accepted what gRPC refused", rest, b)
        check_eq(PROBLEM + trailer(e, "muster-error"), b["type"], rest, e.details())
        check_eq(trailer(e, "muster-field"), b.get("field") or None, rest, b)
    if db:
        c._admin_snap = snapshot(c)
        check_eq(c._admin_snap, before, "the database changed after a refused", method, rest or "")
    return e


@contextlib.contextmanager
def unchanged(c, what):
    """A run of refusals: the database is the same after all of them (one
    snapshot each side instead of one per request keeps the test short)."""
    before = snapshot(c)
    S["batch"] = True
    try:
        yield
    finally:
        S["batch"] = False
    c._admin_snap = snapshot(c)
    check_eq(c._admin_snap, before, "the database changed during", what)


def test_update_tenant(c):
    s = setup(c)
    A, code = s["A"], s["code"]
    t = call("UpdateTenant", A.UpdateTenantRequest(tenant=A.Tenant(name="ta", shares=5, description="team a"),
                                                   update_mask=["shares", "description"]), s["admin"])
    check_eq((t.name, t.path, t.shares, t.description), ("ta", "root/ta", 5, "team a"))
    check(t.updated_at.endswith("Z"), t)
    st, _, r = c.api("GET", "/v1/tenants/ta")
    check_eq((st, r["shares"], r["description"], r["updated_at"]), (200, 5, "team a", t.updated_at))
    # unset and zero differ: shares 0 outside the mask changes nothing, inside it sets 0
    t = call("UpdateTenant", A.UpdateTenantRequest(tenant=A.Tenant(name="ta", description="only this"),
                                                   update_mask=["description"]), s["admin"])
    check_eq((t.shares, t.description), (5, "only this"))
    t = call("UpdateTenant", A.UpdateTenantRequest(tenant=A.Tenant(name="ta"), update_mask=["shares"]),
             s["admin"])
    check_eq((t.shares, t.description), (0, "only this"))
    check_eq(c.api("GET", "/v1/tenants/ta")[2]["shares"], 0)
    # REST writes, gRPC reads
    check_eq(c.api("PATCH", "/v1/tenants/ta", {"shares": 7})[0], 200)
    check_eq(call("GetTenant", A.GetTenantRequest(name="ta"), s["a"]).shares, 7)
    # move a subtree; a REST token bound inside it keeps working at once
    # (its cached principal held the old path: the move flushed the cache)
    check_eq(c.api("GET", "/v1/tenants/tsub", token=s["sub"])[0], 200)
    t = call("UpdateTenant", A.UpdateTenantRequest(tenant=A.Tenant(name="tsub", parent="tb"),
                                                   update_mask=["parent"]), s["admin"])
    check_eq((t.parent, t.path), ("tb", "root/tb/tsub"))
    st, _, r = c.api("GET", "/v1/tenants/tsub", token=s["sub"])
    check_eq((st, r.get("path")), (200, "root/tb/tsub"), r)
    expect_code(code.NOT_FOUND, call, "GetTenant", A.GetTenantRequest(name="tsub"), s["a"])
    check_eq(call("GetTenant", A.GetTenantRequest(name="tsub"), s["b"]).path, "root/tb/tsub")
    t = call("UpdateTenant", A.UpdateTenantRequest(tenant=A.Tenant(name="tsub", parent="ta"),
                                                   update_mask=["parent"]), s["admin"])
    check_eq(t.path, "root/ta/tsub")
    # the tenant's service account for the nodes: set, read by REST, cleared
    t = call("UpdateTenant", A.UpdateTenantRequest(tenant=A.Tenant(name="ta", unix_account="svc_ta"),
                                                   update_mask=["unix_account"]), s["admin"])
    check_eq(t.unix_account, "svc_ta")
    check_eq(c.api("GET", "/v1/tenants/ta")[2]["unix_account"], "svc_ta")
    t = call("UpdateTenant", A.UpdateTenantRequest(tenant=A.Tenant(name="ta"), update_mask=["unix_account"]),
             s["admin"])
    check_eq((t.unix_account, c.api("GET", "/v1/tenants/ta")[2]["unix_account"]), ("", ""))
    # an empty mask changes nothing (REST's PATCH {})
    check_eq(call("UpdateTenant", A.UpdateTenantRequest(tenant=A.Tenant(name="ta", shares=99)),
                  s["admin"]).shares, 7)
    with unchanged(c, "UpdateTenant refusals"):
        # bad input: INVALID_ARGUMENT with REST's slug and field, nothing changed
        for mask in (["name"], ["path"], ["shares", "bogus"], ["created_at"]):
            e = refused(c, code.INVALID_ARGUMENT, "UpdateTenant",
                        A.UpdateTenantRequest(tenant=A.Tenant(name="ta", shares=3), update_mask=mask),
                        field="update_mask")
            check(mask[-1] in e.details(), e.details())
        refused(c, code.INVALID_ARGUMENT, "UpdateTenant",
                A.UpdateTenantRequest(tenant=A.Tenant(name="ta", shares=-1), update_mask=["shares"]),
                rest=("PATCH", "/v1/tenants/ta", {"shares": -1}))
        refused(c, code.INVALID_ARGUMENT, "UpdateTenant",
                A.UpdateTenantRequest(tenant=A.Tenant(name="ta", shares=2000000), update_mask=["shares"]),
                rest=("PATCH", "/v1/tenants/ta", {"shares": 2000000}))
        refused(c, code.INVALID_ARGUMENT, "UpdateTenant",
                A.UpdateTenantRequest(tenant=A.Tenant(name="ta", description="x" * 1025), update_mask=["description"]),
                rest=("PATCH", "/v1/tenants/ta", {"description": "x" * 1025}))
        refused(c, code.INVALID_ARGUMENT, "UpdateTenant",
                A.UpdateTenantRequest(tenant=A.Tenant(name="ta", parent="Not A Name"), update_mask=["parent"]),
                rest=("PATCH", "/v1/tenants/ta", {"parent": "Not A Name"}))
        refused(c, code.INVALID_ARGUMENT, "UpdateTenant",
                A.UpdateTenantRequest(tenant=A.Tenant(name="ta", unix_account="Root!"),
                                      update_mask=["unix_account"]),
                field="unix_account", rest=("PATCH", "/v1/tenants/ta", {"unix_account": "Root!"}))
        refused(c, code.INVALID_ARGUMENT, "UpdateTenant",   # a cycle
                A.UpdateTenantRequest(tenant=A.Tenant(name="ta", parent="tsub"), update_mask=["parent"]),
                rest=("PATCH", "/v1/tenants/ta", {"parent": "tsub"}))
        refused(c, code.NOT_FOUND, "UpdateTenant",
                A.UpdateTenantRequest(tenant=A.Tenant(name="ta", parent="nope"), update_mask=["parent"]),
                rest=("PATCH", "/v1/tenants/ta", {"parent": "nope"}))
        refused(c, code.NOT_FOUND, "UpdateTenant",
                A.UpdateTenantRequest(tenant=A.Tenant(name="nope", shares=1), update_mask=["shares"]),
                rest=("PATCH", "/v1/tenants/nope", {"shares": 1}))
        refused(c, code.INVALID_ARGUMENT, "UpdateTenant", A.UpdateTenantRequest(update_mask=["shares"]),
                field="tenant")
        # auth: admin only, as PATCH /v1/tenants/{name}
        req = A.UpdateTenantRequest(tenant=A.Tenant(name="ta", shares=1), update_mask=["shares"])
        refused(c, code.PERMISSION_DENIED, "UpdateTenant", req, s["a"],
                rest=("PATCH", "/v1/tenants/ta", {"shares": 1}, s["a"]))
        refused(c, code.PERMISSION_DENIED, "UpdateTenant", req, s["reader"])
        refused(c, code.UNAUTHENTICATED, "UpdateTenant", req, "")
        refused(c, code.UNAUTHENTICATED, "UpdateTenant", req, "mst_not-a-real-token")


def test_tenant_quotas(c):
    s = setup(c)
    A, code = s["A"], s["code"]
    st, _, q = c.api("PUT", "/v1/tenants/ta/quota", {"gpu_model": "H100", "guaranteed_gpus": 2, "max_gpus": 8})
    check_eq(st, 200, q)
    call("SetQuota", A.SetQuotaRequest(quota=A.Quota(tenant="ta", max_gpus=16, max_running_jobs=-1,
                                                     max_pending_jobs=5, max_time_limit_s=-1)), s["admin"])
    r = call("GetTenantQuotas", A.GetTenantQuotasRequest(tenant="ta"), s["a"])
    got = {x.gpu_model: (x.guaranteed_gpus, x.max_gpus, x.max_running_jobs, x.max_pending_jobs,
                         x.max_time_limit_s) for x in r.quotas}
    check_eq(got, {"": (0, 16, -1, 5, -1), "H100": (2, 8, -1, -1, -1)})
    st, _, rest = c.api("GET", "/v1/tenants/ta/quota")
    check_eq({x["gpu_model"]: x["updated_at"] for x in rest["items"]},
             {x.gpu_model: x.updated_at for x in r.quotas})
    check_eq(len(call("GetTenantQuotas", A.GetTenantQuotasRequest(tenant="ta"), s["reader"]).quotas), 2)
    check_eq(len(call("GetTenantQuotas", A.GetTenantQuotasRequest(tenant="tb"), s["admin"]).quotas), 0)
    # isolation: another subtree is NOT_FOUND, exactly as an unknown tenant
    for name in ("tb", "nope", "Bad Name", ""):
        refused(c, code.NOT_FOUND, "GetTenantQuotas", A.GetTenantQuotasRequest(tenant=name), s["a"])
    st, _, b = c.api("GET", "/v1/tenants/tb/quota", token=s["a"])
    check_eq(st, 404, b)
    refused(c, code.UNAUTHENTICATED, "GetTenantQuotas", A.GetTenantQuotasRequest(tenant="ta"), "")
    refused(c, code.INVALID_ARGUMENT, "DeleteQuota", A.DeleteQuotaRequest(tenant="ta", gpu_model="m" * 65),
            rest=("DELETE", "/v1/tenants/ta/quota?gpu_model=" + "m" * 65, None))


def test_priority_classes(c):
    s = setup(c)
    A, code = s["A"], s["code"]
    # gRPC create, REST read: every field as given (grace 0, not preemptible),
    # default_time_limit_s 0 = the REST default
    p = call("CreatePriorityClass", A.CreatePriorityClassRequest(priority_class=A.PriorityClass(
        name="gold", priority=900, preemptible=False, max_time_limit_s=86400, grace_period_s=0,
        description="deadlines")), s["admin"])
    check_eq((p.name, p.priority, p.preemptible, p.default_time_limit_s, p.max_time_limit_s,
              p.grace_period_s, p.is_default, p.description),
             ("gold", 900, False, 3600, 86400, 0, False, "deadlines"))
    st, _, r = c.api("GET", "/v1/priority-classes/gold", token=s["reader"])
    check_eq((st, r["priority"], r["preemptible"], r["default_time_limit"], r["max_time_limit"],
              r["grace_period"], r["is_default"], r["created_at"]),
             (200, 900, False, 3600, 86400, 0, False, p.created_at))
    # REST create, gRPC read
    check_eq(c.api("POST", "/v1/priority-classes", {"name": "tin", "priority": -5})[0], 201)
    g = call("GetPriorityClass", A.GetPriorityClassRequest(name="tin"), s["a"])
    check_eq((g.priority, g.preemptible, g.default_time_limit_s, g.max_time_limit_s, g.grace_period_s),
             (-5, True, 3600, 0, 30))
    # update: only the masked fields, zero inside the mask is a value
    p = call("UpdatePriorityClass", A.UpdatePriorityClassRequest(
        priority_class=A.PriorityClass(name="gold", priority=0, description="not sent"),
        update_mask=["priority"]), s["admin"])
    check_eq((p.priority, p.description), (0, "deadlines"))
    # the tenant's service account for the nodes: set, read by REST, cleared
    t = call("UpdateTenant", A.UpdateTenantRequest(tenant=A.Tenant(name="ta", unix_account="svc_ta"),
                                                   update_mask=["unix_account"]), s["admin"])
    check_eq(t.unix_account, "svc_ta")
    check_eq(c.api("GET", "/v1/tenants/ta")[2]["unix_account"], "svc_ta")
    t = call("UpdateTenant", A.UpdateTenantRequest(tenant=A.Tenant(name="ta"), update_mask=["unix_account"]),
             s["admin"])
    check_eq((t.unix_account, c.api("GET", "/v1/tenants/ta")[2]["unix_account"]), ("", ""))
    # an empty mask changes nothing (REST's PATCH {}), whatever the message holds
    p = call("UpdatePriorityClass", A.UpdatePriorityClassRequest(priority_class=A.PriorityClass(
        name="gold", priority=55, preemptible=True, grace_period_s=1, is_default=True)), s["admin"])
    check_eq((p.priority, p.preemptible, p.grace_period_s, p.is_default, p.description),
             (0, False, 0, False, "deadlines"))
    p = call("UpdatePriorityClass", A.UpdatePriorityClassRequest(
        priority_class=A.PriorityClass(name="gold", preemptible=True, max_time_limit_s=0, grace_period_s=45,
                                       default_time_limit_s=7200),
        update_mask=["preemptible", "max_time_limit_s", "grace_period_s", "default_time_limit_s"]), s["admin"])
    check_eq((p.preemptible, p.max_time_limit_s, p.grace_period_s, p.default_time_limit_s), (True, 0, 45, 7200))
    r = c.api("GET", "/v1/priority-classes/gold")[2]
    check_eq((r["preemptible"], r["max_time_limit"], r["grace_period"], r["default_time_limit"]),
             (True, None, 45, 7200))
    check_eq(r["updated_at"], p.updated_at)
    # the default mark moves, as over REST
    call("UpdatePriorityClass", A.UpdatePriorityClassRequest(
        priority_class=A.PriorityClass(name="gold", is_default=True), update_mask=["is_default"]), s["admin"])
    check_eq(c.api("GET", "/v1/priority-classes/normal")[2]["is_default"], False)
    check_eq(c.api("PATCH", "/v1/priority-classes/normal", {"is_default": True})[0], 200)
    check_eq(call("GetPriorityClass", A.GetPriorityClassRequest(name="gold"), s["a"]).is_default, False)
    with unchanged(c, "priority class refusals"):
        # bad input: REST's slug and field, nothing changed
        PC = A.PriorityClass
        for pc, body in [
            (PC(name="Bad Name", priority=1), {"name": "Bad Name", "priority": 1}),
            (PC(priority=1), {"priority": 1}),
            (PC(name="x", priority=2000000000), {"name": "x", "priority": 2000000000}),
            (PC(name="x", priority=1, default_time_limit_s=7200, max_time_limit_s=60),
             {"name": "x", "priority": 1, "default_time_limit": 7200, "max_time_limit": 60}),
            (PC(name="x", priority=1, grace_period_s=-5), {"name": "x", "priority": 1, "grace_period": -5}),
            (PC(name="x", priority=1, grace_period_s=86401), {"name": "x", "priority": 1, "grace_period": 86401}),
            (PC(name="gold", priority=1), {"name": "gold", "priority": 1}),   # taken
        ]:
            refused(c, code.INVALID_ARGUMENT if pc.name != "gold" else code.ALREADY_EXISTS, "CreatePriorityClass",
                    A.CreatePriorityClassRequest(priority_class=pc), rest=("POST", "/v1/priority-classes", body))
        refused(c, code.INVALID_ARGUMENT, "CreatePriorityClass", A.CreatePriorityClassRequest(), field="priority_class")
        for mask in (["name"], ["created_at"], ["priority", "nope"]):
            refused(c, code.INVALID_ARGUMENT, "UpdatePriorityClass", A.UpdatePriorityClassRequest(
                priority_class=PC(name="gold", priority=3), update_mask=mask), field="update_mask")
        for want, pc, mask, body in [
            (code.INVALID_ARGUMENT, PC(name="gold"), ["default_time_limit_s"], {"default_time_limit": 0}),
            (code.INVALID_ARGUMENT, PC(name="gold", grace_period_s=-1), ["grace_period_s"], {"grace_period": -1}),
            (code.INVALID_ARGUMENT, PC(name="gold", max_time_limit_s=60), ["max_time_limit_s"],
             {"max_time_limit": 60}),                                   # below its default_time_limit 7200
            (code.INVALID_ARGUMENT, PC(name="gold", description="\u00e9" * 1025), ["description"],
             {"description": "\u00e9" * 1025}),
            (code.ALREADY_EXISTS, PC(name="normal"), ["is_default"], {"is_default": False}),  # unmark the default
            (code.NOT_FOUND, PC(name="nope", priority=1), ["priority"], {"priority": 1}),
        ]:
            refused(c, want, "UpdatePriorityClass", A.UpdatePriorityClassRequest(priority_class=pc, update_mask=mask),
                    rest=("PATCH", "/v1/priority-classes/" + pc.name, body))
        # delete: the default class and unknown names are refused as over REST
        refused(c, code.ALREADY_EXISTS, "DeletePriorityClass", A.DeletePriorityClassRequest(name="normal"),
                rest=("DELETE", "/v1/priority-classes/normal", None))
        refused(c, code.NOT_FOUND, "DeletePriorityClass", A.DeletePriorityClassRequest(name="Bad Name"))
    call("DeletePriorityClass", A.DeletePriorityClassRequest(name="tin"), s["admin"])
    check_eq(c.api("GET", "/v1/priority-classes/tin")[0], 404)
    refused(c, code.NOT_FOUND, "GetPriorityClass", A.GetPriorityClassRequest(name="tin"), s["reader"],
            rest=("GET", "/v1/priority-classes/tin", None, s["reader"]))
    # auth: writes admin only, reads any reader
    for tok in (s["a"], s["reader"]):
        refused(c, code.PERMISSION_DENIED, "CreatePriorityClass",
                A.CreatePriorityClassRequest(priority_class=PC(name="y", priority=1)), tok)
        refused(c, code.PERMISSION_DENIED, "UpdatePriorityClass", A.UpdatePriorityClassRequest(
            priority_class=PC(name="gold", priority=1), update_mask=["priority"]), tok)
        refused(c, code.PERMISSION_DENIED, "DeletePriorityClass", A.DeletePriorityClassRequest(name="gold"), tok)
    refused(c, code.UNAUTHENTICATED, "GetPriorityClass", A.GetPriorityClassRequest(name="gold"), "")


def test_tokens(c):
    s = setup(c)
    A, code = s["A"], s["code"]
    t = call("CreateToken", A.CreateTokenRequest(name="ci", role="tenant", tenant="ta", user="alice",
                                                 expires_at="2099-01-01T00:00:00Z"), s["admin"])
    check(t.id > 0 and t.secret.startswith("mst_") and t.secret.startswith(t.prefix), t)
    check_eq((t.name, t.role, t.tenant, t.user, t.node), ("ci", "tenant", "ta", "alice", ""))
    # the secret works over REST and gRPC; REST shows the same token
    st, _, w = c.api("GET", "/v1/whoami", token=t.secret)
    check_eq((st, w["token_id"], w["tenant"], w["user"]), (200, t.id, "ta", "alice"))
    st, _, r = c.api("GET", "/v1/tokens/%d" % t.id)
    check_eq((r["name"], r["role"], r["tenant"], r["prefix"], r["created_at"]),
             (t.name, t.role, t.tenant, t.prefix, t.created_at))
    check(r["expires_at"].startswith("2099-01-01T00:00:00") and r["expires_at"] == t.expires_at, r, t)
    g = call("GetToken", A.GetTokenRequest(id=t.id), t.secret)
    check_eq((g.id, g.name, g.secret), (t.id, "ci", ""))
    lst = call("ListTokens", A.ListTokensRequest(page_size=1000), s["admin"]).tokens
    check(t.id in [x.id for x in lst] and not any(x.secret for x in lst), lst)
    # REST create, gRPC read
    st, _, rt = c.api("POST", "/v1/tokens", {"role": "agent", "node": "gpu-9", "name": "agent9"})
    g = call("GetToken", A.GetTokenRequest(id=rt["id"]), s["admin"])
    check_eq((g.role, g.node, g.tenant, g.name, g.prefix), ("agent", "gpu-9", "", "agent9", rt["prefix"]))
    # paging
    p1 = call("ListTokens", A.ListTokensRequest(page_size=1), s["admin"])
    p2 = call("ListTokens", A.ListTokensRequest(page_size=1, page_token=p1.next_page_token), s["admin"])
    check(p1.next_page_token and p2.tokens[0].id > p1.tokens[0].id, p1, p2)
    # a tenant token: tenant/reader tokens in its subtree, its own tenant by default
    mine = call("CreateToken", A.CreateTokenRequest(role="reader"), s["a"])
    check_eq(mine.tenant, "ta")
    check_eq(call("CreateToken", A.CreateTokenRequest(role="tenant", tenant="tsub"), s["a"]).tenant, "tsub")
    with unchanged(c, "CreateToken refusals"):
        refused(c, code.PERMISSION_DENIED, "CreateToken", A.CreateTokenRequest(role="admin"), s["a"],
                rest=("POST", "/v1/tokens", {"role": "admin"}, s["a"]))
        refused(c, code.PERMISSION_DENIED, "CreateToken", A.CreateTokenRequest(role="agent", node="n1"), s["a"],
                rest=("POST", "/v1/tokens", {"role": "agent", "node": "n1"}, s["a"]))
        refused(c, code.NOT_FOUND, "CreateToken", A.CreateTokenRequest(role="reader", tenant="tb"), s["a"],
                rest=("POST", "/v1/tokens", {"role": "reader", "tenant": "tb"}, s["a"]))
        refused(c, code.PERMISSION_DENIED, "CreateToken", A.CreateTokenRequest(role="reader"), s["reader"],
                rest=("POST", "/v1/tokens", {"role": "reader"}, s["reader"]))
        # bad input
        for req, body in [
            (A.CreateTokenRequest(), {}),
            (A.CreateTokenRequest(role="root"), {"role": "root"}),
            (A.CreateTokenRequest(role="tenant"), {"role": "tenant"}),
            (A.CreateTokenRequest(role="admin", tenant="ta"), {"role": "admin", "tenant": "ta"}),
            (A.CreateTokenRequest(role="agent"), {"role": "agent"}),
            (A.CreateTokenRequest(role="reader", node="n1"), {"role": "reader", "node": "n1"}),
            (A.CreateTokenRequest(role="reader", user="no spaces"), {"role": "reader", "user": "no spaces"}),
            (A.CreateTokenRequest(role="reader", name="n" * 129), {"role": "reader", "name": "n" * 129}),
            (A.CreateTokenRequest(role="reader", expires_at="tomorrow"), {"role": "reader", "expires_at": "tomorrow"}),
            (A.CreateTokenRequest(role="reader", expires_at="2001-01-01T00:00:00Z"),
             {"role": "reader", "expires_at": "2001-01-01T00:00:00Z"}),
        ]:
            refused(c, code.INVALID_ARGUMENT, "CreateToken", req, rest=("POST", "/v1/tokens", body))
        refused(c, code.NOT_FOUND, "CreateToken", A.CreateTokenRequest(role="tenant", tenant="nope"),
                rest=("POST", "/v1/tokens", {"role": "tenant", "tenant": "nope"}))
    # isolation: another subtree's token is NOT_FOUND, as one that does not exist
    theirs = call("CreateToken", A.CreateTokenRequest(role="reader", tenant="tb"), s["admin"])
    with unchanged(c, "isolation refusals"):
        for tid in (theirs.id, 0, -1, 10 ** 15):
            refused(c, code.NOT_FOUND, "GetToken", A.GetTokenRequest(id=tid), s["a"])
            refused(c, code.NOT_FOUND, "RevokeToken", A.RevokeTokenRequest(id=tid), s["a"])
    ids = [x.id for x in call("ListTokens", A.ListTokensRequest(), s["a"]).tokens]
    check(mine.id in ids and theirs.id not in ids and rt["id"] not in ids, ids)
    check_eq(call("GetToken", A.GetTokenRequest(id=theirs.id), theirs.secret).tenant, "tb")
    refused(c, code.PERMISSION_DENIED, "RevokeToken", A.RevokeTokenRequest(id=mine.id), s["reader"])
    refused(c, code.UNAUTHENTICATED, "ListTokens", A.ListTokensRequest(), "")
    # revoke by gRPC: fails at once over REST (even from the auth cache) and gRPC
    for _ in range(3):
        check_eq(c.api("GET", "/v1/whoami", token=t.secret)[0], 200)
    call("RevokeToken", A.RevokeTokenRequest(id=t.id), s["a"])
    check_eq(c.api("GET", "/v1/whoami", token=t.secret)[0], 401)
    expect_code(code.UNAUTHENTICATED, call, "ListTokens", A.ListTokensRequest(), t.secret)
    refused(c, code.NOT_FOUND, "GetToken", A.GetTokenRequest(id=t.id),
            rest=("GET", "/v1/tokens/%d" % t.id, None))
    refused(c, code.NOT_FOUND, "RevokeToken", A.RevokeTokenRequest(id=t.id),
            rest=("DELETE", "/v1/tokens/%d" % t.id, None))
    # revoke by REST: gRPC refuses it at once
    check_eq(c.api("DELETE", "/v1/tokens/%d" % mine.id)[0], 204)
    expect_code(code.UNAUTHENTICATED, call, "ListTokens", A.ListTokensRequest(), mine.secret)


def test_page_tokens(c):
    """Each list refuses a page_token it cannot have made, as REST its cursor."""
    s = setup(c)
    A, code = s["A"], s["code"]
    for method, req, path in [
        ("ListTenants", A.ListTenantsRequest(page_token="zz"), "/v1/tenants?cursor=zz"),
        ("ListPriorityClasses", A.ListPriorityClassesRequest(page_token="Bad"), "/v1/priority-classes?cursor=Bad"),
        ("ListQuotas", A.ListQuotasRequest(page_token="a|b"), "/v1/quotas?cursor=a%7Cb"),
        ("ListNodes", A.ListNodesRequest(page_token="n" * 513), "/v1/nodes?cursor=" + "n" * 513),
        ("ListTokens", A.ListTokensRequest(page_token="zz"), "/v1/tokens?cursor=zz"),
    ]:
        refused(c, code.INVALID_ARGUMENT, method, req, field="cursor", rest=("GET", path, None))
    # and pages through with the ones it made
    p1 = call("ListTenants", A.ListTenantsRequest(page_size=2), s["admin"])
    p2 = call("ListTenants", A.ListTenantsRequest(page_size=2, page_token=p1.next_page_token), s["admin"])
    check(p1.next_page_token and p2.tenants[0].path > p1.tenants[-1].path, p1, p2)


def test_reads_same_as_rest(c):
    """The admin reads are one operation each under both APIs
    (api/ops/ops_admin_read.c): every list and get answers each caller what
    REST answers it (its tenant scope), and refuses what REST refuses, with
    the same slug and field."""
    s = setup(c)
    A, code = s["A"], s["code"]
    c.sql("INSERT INTO nodes (name, gpu_count) VALUES ('rn1', 0), ('rn2', 0) ON CONFLICT DO NOTHING")
    s["agent"] = c.make_token("agent", node="rn1")
    for tok in (s["admin"], s["a"], s["b"], s["sub"], s["reader"]):
        for method, req, path, field, key in [
            ("ListTenants", A.ListTenantsRequest(page_size=1000), "/v1/tenants?limit=1000", "tenants", "name"),
            ("ListQuotas", A.ListQuotasRequest(page_size=1000), "/v1/quotas?limit=1000", "quotas", "tenant"),
            ("ListPriorityClasses", A.ListPriorityClassesRequest(page_size=1000),
             "/v1/priority-classes?limit=1000", "classes", "name"),
            ("ListTokens", A.ListTokensRequest(page_size=1000), "/v1/tokens?limit=1000", "tokens", "id"),
            ("ListNodes", A.ListNodesRequest(page_size=1000), "/v1/nodes?limit=1000", "nodes", "name"),
        ]:
            st, _, b = _api(c, "GET", path, None, token=tok)
            check_eq(st, 200, path, b)
            r = call(method, req, tok)
            check_eq([getattr(x, key) for x in getattr(r, field)], [x[key] for x in b["items"]], method)
        for name in ("ta", "tsub", "tb", "root"):
            st, _, b = _api(c, "GET", "/v1/tenants/" + name, None, token=tok)
            if st == 200:
                check_eq(call("GetTenant", A.GetTenantRequest(name=name), tok).path, b["path"], name)
                q = call("GetTenantQuotas", A.GetTenantQuotasRequest(tenant=name), tok)
                st, _, qb = _api(c, "GET", "/v1/tenants/%s/quota" % name, None, token=tok)
                check_eq((st, [x.gpu_model for x in q.quotas]), (200, [x["gpu_model"] for x in qb["items"]]))
            else:
                refused(c, code.NOT_FOUND, "GetTenant", A.GetTenantRequest(name=name), tok=tok,
                        rest=("GET", "/v1/tenants/" + name, None, tok))
                refused(c, code.NOT_FOUND, "GetTenantQuotas", A.GetTenantQuotasRequest(tenant=name), tok=tok,
                        rest=("GET", "/v1/tenants/%s/quota" % name, None, tok))
    # names and ids that cannot exist: NOT_FOUND without the database, the same on both faces
    for method, req, path in [
        ("GetTenant", A.GetTenantRequest(name="Not A Name"), "/v1/tenants/Not%20A%20Name"),
        ("GetTenantQuotas", A.GetTenantQuotasRequest(tenant="x/y"), "/v1/tenants/x%2Fy/quota"),
        ("GetPriorityClass", A.GetPriorityClassRequest(name="NO!"), "/v1/priority-classes/NO%21"),
        ("GetToken", A.GetTokenRequest(id=0), "/v1/tokens/0"),
        ("GetNode", A.GetNodeRequest(name="n" * 300), "/v1/nodes/" + "n" * 300),
    ]:
        refused(c, code.NOT_FOUND, method, req, tok=s["a"], rest=("GET", path, None, s["a"]))
    # another tenant's token is not found to a tenant; an agent reads its own node only
    tid = call("ListTokens", A.ListTokensRequest(page_size=1000), s["b"]).tokens[0].id
    refused(c, code.NOT_FOUND, "GetToken", A.GetTokenRequest(id=tid), tok=s["a"],
            rest=("GET", "/v1/tokens/%d" % tid, None, s["a"]))
    check_eq(call("GetNode", A.GetNodeRequest(name="rn1"), s["agent"]).name, "rn1")
    refused(c, code.NOT_FOUND, "GetNode", A.GetNodeRequest(name="rn2"), tok=s["agent"],
            rest=("GET", "/v1/nodes/rn2", None, s["agent"]))


def test_write_keys_same_as_rest(c):
    """A write's key that cannot exist is refused alike on both faces, before
    its body (api/ops/ops_admin.c: ops_name_check, ops_node_name_check)."""
    s = setup(c)
    A, code = s["A"], s["code"]
    with unchanged(c, "bad keys"):
        for method, req, rest in [
            ("DeleteTenant", A.DeleteTenantRequest(name="Not A Name"), ("DELETE", "/v1/tenants/Not%20A%20Name", None)),
            ("UpdateTenant", A.UpdateTenantRequest(tenant=A.Tenant(name="x/y", shares=2), update_mask=["shares"]),
             ("PATCH", "/v1/tenants/x%2Fy", {"shares": 2})),
            ("SetQuota", A.SetQuotaRequest(quota=A.Quota(tenant="No Such", max_gpus=1)),
             ("PUT", "/v1/tenants/No%20Such/quota", {"max_gpus": 1})),
            ("DeleteQuota", A.DeleteQuotaRequest(tenant="No Such"), ("DELETE", "/v1/tenants/No%20Such/quota", None)),
            ("DeletePriorityClass", A.DeletePriorityClassRequest(name="NO!"), ("DELETE", "/v1/priority-classes/NO%21", None)),
            ("DrainNode", A.DrainNodeRequest(name="n" * 300, reason="x"),
             ("POST", "/v1/nodes/%s/drain" % ("n" * 300), {"reason": "x"})),
            ("ResumeNode", A.ResumeNodeRequest(name="n" * 300), ("POST", "/v1/nodes/%s/resume" % ("n" * 300), None)),
        ]:
            refused(c, code.NOT_FOUND, method, req, rest=rest)
    # a key that may exist but does not: the store's NOT_FOUND, alike
    refused(c, code.NOT_FOUND, "DrainNode", A.DrainNodeRequest(name="nosuchnode"),
            rest=("POST", "/v1/nodes/nosuchnode/drain", {}))


def test_bad_bytes(c):
    s = setup(c)
    A, code = s["A"], s["code"]
    ch = s["ch"]
    good = A.UpdatePriorityClassRequest(priority_class=A.PriorityClass(name="gold", priority=77, description="d"),
                                        update_mask=["priority", "description"]).SerializeToString()
    raw = ch.unary_unary("/muster.v1.AdminService/UpdatePriorityClass")
    before = snapshot(c)
    for body in (good[:len(good) // 2], good[:-1], b"\x0a\x80", b"\x12\x05ab"):  # truncated
        expect_code(code.INVALID_ARGUMENT, raw, body, metadata=md(s["admin"]), timeout=10)
    check_eq(snapshot(c), before, "a truncated request changed the database")
    # random bytes into every new method as an admin: never INTERNAL/UNKNOWN/UNAVAILABLE
    bad = {code.INTERNAL, code.UNKNOWN, code.UNAVAILABLE, code.DEADLINE_EXCEEDED}
    rnd = random.Random(11)
    seen = set()
    for m in ("UpdateTenant", "GetTenantQuotas", "GetPriorityClass", "CreatePriorityClass", "UpdatePriorityClass",
              "DeletePriorityClass", "CreateToken", "ListTokens", "GetToken", "RevokeToken"):
        fn = ch.unary_unary("/muster.v1.AdminService/" + m)
        for _ in range(12):
            body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40)))
            try:
                fn(body, metadata=md(s["reader"]), timeout=10)
                seen.add("OK")
            except s["grpc"].RpcError as e:
                check(e.code() not in bad, m, body, e.code(), e.details())
                seen.add(e.code())
    check(code.INVALID_ARGUMENT in seen, seen)
    # the whole request survives as a well-formed message
    p = raw(good, metadata=md(s["admin"]), timeout=10)
    check_eq(A.PriorityClass.FromString(p).priority, 77)


if __name__ == "__main__":
    harness.main(api=True)
