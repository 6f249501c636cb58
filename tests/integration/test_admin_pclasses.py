"""Priority classes over REST: CRUD, exactly one default, refusing to delete
the default or a class jobs use, roles, bad requests that change nothing."""
import threading

import harness
from harness import check, check_eq
from test_admin_common import expect_problem, make_job, events, walk


def defaults(c):
    return [r[0] for r in c.sql("SELECT name FROM priority_classes WHERE is_default")]


def test_seeded(c):
    st, _, b = c.api("GET", "/v1/priority-classes")
    check_eq(st, 200, b)
    check_eq([p["name"] for p in b["items"]], ["high", "low", "normal"])
    normal = [p for p in b["items"] if p["name"] == "normal"][0]
    check_eq((normal["priority"], normal["is_default"], normal["default_time_limit"],
              normal["max_time_limit"], normal["grace_period"], normal["preemptible"]),
             (100, True, 3600, None, 30, True))
    check_eq([p["name"] for p in walk(c, "/v1/priority-classes", limit=1)], ["high", "low", "normal"])
    expect_problem(c, "GET", "/v1/priority-classes?cursor=NOT%20A%20NAME", None, 400, "invalid-request", "cursor")


def test_create(c):
    st, hdr, p = c.api("POST", "/v1/priority-classes",
                       {"name": "urgent", "priority": 5000, "preemptible": False,
                        "default_time_limit": "1:00:00", "max_time_limit": 86400,
                        "grace_period": 60, "description": "deadlines"})
    check_eq(st, 201, p)
    check_eq(hdr.get("location"), "/v1/priority-classes/urgent")
    check_eq((p["priority"], p["preemptible"], p["default_time_limit"], p["max_time_limit"],
              p["grace_period"], p["is_default"]), (5000, False, 3600, 86400, 60, False))
    check_eq(c.api("GET", "/v1/priority-classes/urgent")[2], p)
    st, _, p = c.api("POST", "/v1/priority-classes", {"name": "batch", "priority": 1, "is_default": True})
    check_eq((st, p["is_default"]), (201, True))
    check_eq(defaults(c), ["batch"])
    check_eq(len(events(c, "priority_class.created")), 2)


def test_create_refusals(c):
    P = "/v1/priority-classes"
    expect_problem(c, "POST", P, {"name": "urgent", "priority": 1}, 409, "conflict", "name")
    for body, slug, field in [
        ({"priority": 1}, "missing-field", "name"),
        ({"name": "x"}, "missing-field", "priority"),
        ({"name": "x", "priority": 1, "weight": 2}, "unknown-field", "weight"),
        ({"name": "X", "priority": 1}, "invalid-request", "name"),
        ({"name": "x", "priority": "high"}, "wrong-type", "priority"),
        ({"name": "x", "priority": 10 ** 10}, "out-of-range", "priority"),
        ({"name": "x", "priority": 1, "preemptible": "no"}, "wrong-type", "preemptible"),
        ({"name": "x", "priority": 1, "default_time_limit": 0}, "out-of-range", "default_time_limit"),
        ({"name": "x", "priority": 1, "default_time_limit": "1h"}, "invalid-request", "default_time_limit"),
        ({"name": "x", "priority": 1, "default_time_limit": 7200, "max_time_limit": 60},
         "out-of-range", "default_time_limit"),
        ({"name": "x", "priority": 1, "grace_period": -5}, "out-of-range", "grace_period"),
        ({"name": "x", "priority": 1, "is_default": 1}, "wrong-type", "is_default"),
        ({"name": "x", "priority": 1, "description": "d" * 1025}, "string-too-long", "description"),
    ]:
        expect_problem(c, "POST", P, body, 400, slug, field)


def test_patch(c):
    st, _, p = c.api("PATCH", "/v1/priority-classes/urgent", {"priority": 6000, "max_time_limit": None})
    check_eq((st, p["priority"], p["max_time_limit"]), (200, 6000, None))
    # unmarking the default is refused; marking another moves the mark
    expect_problem(c, "PATCH", "/v1/priority-classes/batch", {"is_default": False}, 409, "conflict", "is_default")
    st, _, p = c.api("PATCH", "/v1/priority-classes/normal", {"is_default": True})
    check_eq((st, p["is_default"]), (200, True))
    check_eq(defaults(c), ["normal"])
    check_eq(c.api("GET", "/v1/priority-classes/batch")[2]["is_default"], False)
    # a default limit above the class's max is refused (checked against stored values)
    check_eq(c.api("PATCH", "/v1/priority-classes/urgent", {"max_time_limit": 7200})[0], 200)
    expect_problem(c, "PATCH", "/v1/priority-classes/urgent", {"default_time_limit": 7201}, 400,
                   "out-of-range", "default_time_limit")
    expect_problem(c, "PATCH", "/v1/priority-classes/urgent", {"max_time_limit": 60}, 400,
                   "out-of-range", "max_time_limit")
    expect_problem(c, "PATCH", "/v1/priority-classes/urgent", {"name": "u2"}, 400, "unknown-field", "name")
    expect_problem(c, "PATCH", "/v1/priority-classes/nope", {"priority": 1}, 404, "not-found")
    check_eq(len(events(c, "priority_class.updated")), 3)


def test_concurrent_defaults(c):
    """Many classes marked default at once: all succeed, one default remains."""
    for i in range(6):
        check_eq(c.api("POST", "/v1/priority-classes", {"name": "race%d" % i, "priority": i})[0], 201)
    results = []

    def mark(name):
        results.append(c.api("PATCH", "/v1/priority-classes/" + name, {"is_default": True})[0])

    ts = [threading.Thread(target=mark, args=("race%d" % i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check_eq(results, [200] * 6)
    check_eq(len(defaults(c)), 1)
    check_eq(c.api("PATCH", "/v1/priority-classes/normal", {"is_default": True})[0], 200)
    for i in range(6):
        check_eq(c.api("DELETE", "/v1/priority-classes/race%d" % i)[0], 204)
    check_eq(defaults(c), ["normal"])


def test_roles(c):
    c.make_tenant("ml")
    tt = c.make_token("tenant", tenant="ml")
    rd = c.make_token("reader")
    ag = c.make_token("agent", node="n1")
    for tok in (tt, rd):
        check_eq(c.api("GET", "/v1/priority-classes", token=tok)[0], 200)
        check_eq(c.api("GET", "/v1/priority-classes/high", token=tok)[0], 200)
        expect_problem(c, "POST", "/v1/priority-classes", {"name": "mine", "priority": 1}, 403, "forbidden", token=tok)
        expect_problem(c, "PATCH", "/v1/priority-classes/low", {"priority": 1}, 403, "forbidden", token=tok)
        expect_problem(c, "DELETE", "/v1/priority-classes/low", None, 403, "forbidden", token=tok)
    expect_problem(c, "GET", "/v1/priority-classes", None, 403, "forbidden", token=ag)
    expect_problem(c, "GET", "/v1/priority-classes", None, 401, "unauthenticated", token="")


def test_delete(c):
    deleted = len(events(c, "priority_class.deleted"))
    expect_problem(c, "DELETE", "/v1/priority-classes/normal", None, 409, "conflict")  # the default
    job = make_job(c, "ml", pclass="urgent")
    b = expect_problem(c, "DELETE", "/v1/priority-classes/urgent", None, 409, "conflict")
    check("active" in b["detail"], b)
    c.sql("UPDATE jobs SET state = 'CANCELLED' WHERE id = $1", job)
    expect_problem(c, "DELETE", "/v1/priority-classes/urgent", None, 409, "conflict")  # history
    st, _, b = c.api("DELETE", "/v1/priority-classes/batch")
    check_eq(st, 204, b)
    expect_problem(c, "DELETE", "/v1/priority-classes/batch", None, 404, "not-found")
    expect_problem(c, "GET", "/v1/priority-classes/batch", None, 404, "not-found")
    check_eq(len(events(c, "priority_class.deleted")), deleted + 1)


if __name__ == "__main__":
    harness.main(api=True)
