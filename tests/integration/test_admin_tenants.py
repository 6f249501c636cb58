"""Tenants over REST: create, list (subtree-scoped), get, PATCH (shares,
description, moving a subtree), delete; roles; bad requests change nothing."""
import threading

import harness
from harness import check, check_eq
from test_admin_common import expect_problem, make_job, events, walk, snapshot


def test_create_and_get(c):
    st, hdr, b = c.api("POST", "/v1/tenants", {"name": "ml", "shares": 3, "description": "ML org"})
    check_eq(st, 201, b)
    check_eq(hdr.get("location"), "/v1/tenants/ml")
    check_eq(b["name"], "ml")
    check_eq(b["parent"], "root")
    check_eq(b["path"], "root/ml")
    check_eq(b["shares"], 3)
    check_eq(b["description"], "ML org")
    check(b["created_at"].endswith("Z") and "T" in b["created_at"], b)
    check_eq(set(b), {"name", "parent", "path", "shares", "description", "unix_account", "created_at",
                     "updated_at"})
    st, _, v = c.api("POST", "/v1/tenants", {"name": "vision", "parent": "ml"})
    check_eq(st, 201, v)
    check_eq(v["path"], "root/ml/vision")
    check_eq(v["shares"], 1)
    check_eq(c.sql_value("SELECT path FROM tenants WHERE name = 'vision'"), "root/ml/vision")
    check_eq(len(events(c, "tenant.created")), 2)
    st, _, g = c.api("GET", "/v1/tenants/vision")
    check_eq(st, 200, g)
    check_eq(g, v)
    st, _, r = c.api("GET", "/v1/tenants/root")
    check_eq(r["parent"], None)


def test_create_refusals(c):
    expect_problem(c, "POST", "/v1/tenants", {"name": "ml"}, 409, "conflict", "name")
    expect_problem(c, "POST", "/v1/tenants", {"name": "root"}, 409, "conflict", "name")
    expect_problem(c, "POST", "/v1/tenants", {"name": "x1", "parent": "nope"}, 404, "not-found", "parent")
    bad = [
        ({}, "missing-field", "name"),
        ({"name": "x1", "extra": 1}, "unknown-field", "extra"),
        ({"name": 12}, "wrong-type", "name"),
        ({"name": "Upper"}, "invalid-request", "name"),
        ({"name": "a" * 64}, "string-too-long", "name"),
        ({"name": "x'; DROP TABLE tenants; --"}, "invalid-request", "name"),
        ({"name": "x1", "shares": -1}, "out-of-range", "shares"),
        ({"name": "x1", "shares": 1000001}, "out-of-range", "shares"),
        ({"name": "x1", "shares": 2 ** 63 - 1}, "out-of-range", "shares"),
        ({"name": "x1", "shares": 1.5}, "wrong-type", "shares"),
        ({"name": "x1", "shares": "2"}, "wrong-type", "shares"),
        ({"name": "x1", "description": "d" * 1025}, "string-too-long", "description"),
        ({"name": "x1", "description": ["d"]}, "wrong-type", "description"),
        ({"name": None}, "missing-field", "name"),
        ({"name": "x1", "parent": 7}, "wrong-type", "parent"),
    ]
    for body, slug, field in bad:
        expect_problem(c, "POST", "/v1/tenants", body, 400, slug, field)
    expect_problem(c, "POST", "/v1/tenants", None, 400, "malformed-json", raw='{"name": "x1",')
    expect_problem(c, "POST", "/v1/tenants", None, 400, "wrong-type", raw='["x1"]')
    expect_problem(c, "POST", "/v1/tenants", None, 400, "invalid-utf8", raw=b'{"name": "x\xff"}')
    expect_problem(c, "POST", "/v1/tenants", None, 400, None, raw='{"name": "x\\u0000y"}')
    expect_problem(c, "POST", "/v1/tenants", None, 400, None,
                   raw='{"name": "x1", "description": "a\\u0000b"}')
    check_eq(c.sql_value("SELECT count(*) FROM tenants WHERE name LIKE 'x%'"), "0")


def test_roles(c):
    cv = c.make_tenant("cv")
    check_eq(cv["path"], "root/cv")
    ml_tok = c.make_token("tenant", tenant="ml", user="alice")
    rd_tok = c.make_token("reader")
    rd_ml = c.make_token("reader", tenant="ml")
    ag_tok = c.make_token("agent", node="gpu-1")
    # writes are admin only
    for tok in (ml_tok, rd_tok, rd_ml):
        expect_problem(c, "POST", "/v1/tenants", {"name": "x2"}, 403, "forbidden", token=tok)
        expect_problem(c, "PATCH", "/v1/tenants/ml", {"shares": 9}, 403, "forbidden", token=tok)
        expect_problem(c, "DELETE", "/v1/tenants/vision", None, 403, "forbidden", token=tok)
    expect_problem(c, "GET", "/v1/tenants", None, 403, "forbidden", token=ag_tok)
    expect_problem(c, "GET", "/v1/tenants", None, 401, "unauthenticated", token="")
    expect_problem(c, "GET", "/v1/tenants", None, 401, "unauthenticated", token="mst_" + "A" * 43)
    expect_problem(c, "POST", "/v1/tenants", {"name": "x3"}, 401, "unauthenticated", token="")
    # reads are scoped to the subtree; others' tenants are 404
    for tok in (ml_tok, rd_ml):
        st, _, b = c.api("GET", "/v1/tenants", token=tok)
        check_eq(st, 200, b)
        check_eq([t["name"] for t in b["items"]], ["ml", "vision"])
        check_eq(b["next_cursor"], None)
        check_eq(c.api("GET", "/v1/tenants/vision", token=tok)[0], 200)
        for other in ("cv", "root", "nope"):
            expect_problem(c, "GET", "/v1/tenants/" + other, None, 404, "not-found", token=tok)
    st, _, b = c.api("GET", "/v1/tenants", token=rd_tok)
    check_eq([t["name"] for t in b["items"]], ["root", "cv", "ml", "vision"])
    st, _, b = c.api("GET", "/v1/tenants")
    check_eq([t["path"] for t in b["items"]], ["root", "root/cv", "root/ml", "root/ml/vision"])


def test_list_pagination(c):
    for i in range(5):
        c.make_tenant("p%d" % i, parent="cv")
    names = [t["name"] for t in walk(c, "/v1/tenants", limit=2)]
    check_eq(len(names), len(set(names)), names)
    check_eq(names, [t["name"] for t in c.api("GET", "/v1/tenants?limit=1000")[2]["items"]])
    check_eq(len(names), 9)
    expect_problem(c, "GET", "/v1/tenants?limit=0", None, 400, "out-of-range", "limit")
    expect_problem(c, "GET", "/v1/tenants?limit=1001", None, 400, "out-of-range", "limit")
    expect_problem(c, "GET", "/v1/tenants?limit=x", None, 400, "wrong-type", "limit")
    expect_problem(c, "GET", "/v1/tenants?color=red", None, 400, "unknown-field", "color")
    for bad in ("x", "root/", "root//cv", "root/CV", "'%20OR%201=1"):
        expect_problem(c, "GET", "/v1/tenants?cursor=" + bad, None, 400, "invalid-request", "cursor")


def test_patch(c):
    st, _, b = c.api("PATCH", "/v1/tenants/ml", {"shares": 7, "description": "new"})
    check_eq(st, 200, b)
    check_eq((b["shares"], b["description"], b["path"]), (7, "new", "root/ml"))
    check_eq(c.sql_value("SELECT shares FROM tenants WHERE name = 'ml'"), "7")
    ev = events(c, "tenant.updated")
    check_eq(len(ev), 1)
    check('"shares": 7' in ev[0][3], ev)
    st, _, b = c.api("PATCH", "/v1/tenants/ml", {})
    check_eq((st, b["shares"]), (200, 7))
    expect_problem(c, "PATCH", "/v1/tenants/ml", {"shares": -2}, 400, "out-of-range", "shares")
    expect_problem(c, "PATCH", "/v1/tenants/ml", {"name": "mm"}, 400, "unknown-field", "name")
    expect_problem(c, "PATCH", "/v1/tenants/nope", {"shares": 2}, 404, "not-found")
    expect_problem(c, "PATCH", "/v1/tenants/ml", {"parent": "nope"}, 404, "not-found", "parent")


def test_move_subtree(c):
    # root/a/b/c and root/d; move b under d; then refuse cycles
    c.make_tenant("a")
    c.make_tenant("b", parent="a")
    c.make_tenant("c", parent="b")
    c.make_tenant("d")
    b_tok = c.make_token("tenant", tenant="b")
    st, _, seen = c.api("GET", "/v1/tenants", token=b_tok)
    check_eq([t["path"] for t in seen["items"]], ["root/a/b", "root/a/b/c"])
    st, _, b = c.api("PATCH", "/v1/tenants/b", {"parent": "d"})
    check_eq(st, 200, b)
    check_eq((b["parent"], b["path"]), ("d", "root/d/b"))
    rows = dict(c.sql("SELECT name, path FROM tenants WHERE name IN ('a','b','c','d')"))
    check_eq(rows, {"a": "root/a", "b": "root/d/b", "c": "root/d/b/c", "d": "root/d"})
    check_eq(c.sql_value("SELECT p.name FROM tenants t JOIN tenants p ON p.id = t.parent_id"
                         " WHERE t.name = 'b'"), "d")
    # the moved tenant's token follows its subtree at once
    st, _, seen = c.api("GET", "/v1/tenants", token=b_tok)
    check_eq([t["path"] for t in seen["items"]], ["root/d/b", "root/d/b/c"])
    # cycles and root are refused, nothing changes
    expect_problem(c, "PATCH", "/v1/tenants/d", {"parent": "c"}, 400, "invalid-request", "parent")
    expect_problem(c, "PATCH", "/v1/tenants/b", {"parent": "b"}, 400, "invalid-request", "parent")
    expect_problem(c, "PATCH", "/v1/tenants/d", {"parent": "b", "shares": 5}, 400,
                   "invalid-request", "parent")
    expect_problem(c, "PATCH", "/v1/tenants/root", {"parent": "a"}, 400, "invalid-request", "parent")
    # move back up to root
    st, _, b = c.api("PATCH", "/v1/tenants/c", {"parent": "root"})
    check_eq((st, b["path"]), (200, "root/c"))


def tree_consistent(c):
    """Every path is its parent's path + '/' + its name, down from root."""
    bad = c.sql("SELECT t.name, t.path, p.path FROM tenants t LEFT JOIN tenants p ON p.id = t.parent_id"
                " WHERE (t.parent_id IS NULL AND t.path <> 'root')"
                " OR (t.parent_id IS NOT NULL AND t.path <> p.path || '/' || t.name)")
    check_eq(bad, [], "inconsistent paths")


def test_concurrent_moves_never_make_a_cycle(c):
    """x under y and y under x at the same time: exactly one wins, every time."""
    c.make_tenant("cx")
    c.make_tenant("cy")
    for round_ in range(8):
        results = {}

        def move(child, parent):
            results[child] = c.api("PATCH", "/v1/tenants/" + child, {"parent": parent})

        ts = [threading.Thread(target=move, args=a) for a in (("cx", "cy"), ("cy", "cx"))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        codes = sorted(r[0] for r in results.values())
        check_eq(codes, [200, 400], round_, results)
        tree_consistent(c)
        # back to both under root for the next round
        for name in ("cx", "cy"):
            if c.sql_value("SELECT p.name FROM tenants t JOIN tenants p ON p.id = t.parent_id"
                           " WHERE t.name = $1", name) != "root":
                check_eq(c.api("PATCH", "/v1/tenants/" + name, {"parent": "root"})[0], 200)
    tree_consistent(c)


def test_delete(c):
    expect_problem(c, "DELETE", "/v1/tenants/ml", None, 409, "conflict")      # has a child
    expect_problem(c, "DELETE", "/v1/tenants/root", None, 409, "conflict")
    expect_problem(c, "DELETE", "/v1/tenants/nope", None, 404, "not-found")
    job = make_job(c, "vision")
    expect_problem(c, "DELETE", "/v1/tenants/vision", None, 409, "conflict")  # active job
    c.sql("UPDATE jobs SET state = 'COMPLETED' WHERE id = $1", job)
    b = expect_problem(c, "DELETE", "/v1/tenants/vision", None, 409, "conflict")  # history
    check("history" in b["detail"], b)
    # a leaf without jobs goes, with its tokens and quotas
    c.make_tenant("tmp", parent="ml")
    tok = c.make_token("tenant", tenant="tmp")
    check_eq(c.api("GET", "/v1/tenants/tmp", token=tok)[0], 200)
    check_eq(c.api("PUT", "/v1/tenants/tmp/quota", {"max_gpus": 4})[0], 200)
    st, _, b = c.api("DELETE", "/v1/tenants/tmp")
    check_eq(st, 204, b)
    check_eq(c.api("GET", "/v1/tenants/tmp")[0], 404)
    check_eq(c.api("GET", "/v1/tenants/tmp", token=tok)[0], 401)   # its token went with it
    check_eq(c.sql_value("SELECT count(*) FROM tenants WHERE name = 'tmp'"), "0")
    check_eq(len(events(c, "tenant.deleted")), 1)


if __name__ == "__main__":
    harness.main(api=True)
