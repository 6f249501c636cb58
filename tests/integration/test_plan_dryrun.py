"""POST /v1/jobs/dry-run through service/plan: the same admission answers as
POST /v1/jobs for a table of inputs (status, problem type, field), the
states of any job a dry-run depends on (not only those some pending job
names), and answers that follow the planning generation the leader's cycles
bump (migration 160) rather than a full snapshot load per request."""
import harness
from harness import check, check_eq
from test_sched_common import add_nodes, lease, sql, start_scheduler, val

STARTED = False


def setup(c):
    global STARTED
    if STARTED:
        return
    harness.require_binary("muster-scheduler")
    c.make_tenant("ml", shares=2)
    c.make_tenant("web", shares=1)
    c.make_tenant("cap", shares=1)
    sql(c, "INSERT INTO priority_classes (name, priority, default_time_limit, max_time_limit)"
           " VALUES ('short', 50, 300, 600)")
    sql(c, "INSERT INTO quotas (tenant_id, max_time_limit) SELECT id, 900 FROM tenants WHERE name = 'cap'")
    add_nodes(c, "pd", 2, gpus=8, model="a100")
    start_scheduler(c, "sched")
    c.wait_until(lambda: lease(c)["cycles"] > 0, 10, "first cycle")
    c.tok_web = c.make_token(role="tenant", tenant="web", user="wu")
    c.tok_ml = c.make_token(role="tenant", tenant="ml", user="mu")
    STARTED = True


def ended_job(c, tenant, state="COMPLETED", exit_code=0):
    """A job that ended before any pending job named it."""
    return int(val(c, "INSERT INTO jobs (tenant_id, user_name, priority_class_id, state, nodes,"
                      " gpus_per_node, gpu_model, time_limit, command, exit_code, ended_at)"
                      " SELECT t.id, 'x', pc.id, $2, 1, 1, 'a100', 60, '[\"true\"]', $3::int, now()"
                      " FROM tenants t, priority_classes pc WHERE t.name = $1 AND pc.is_default"
                      " RETURNING id", tenant, state, exit_code))


def body(**kw):
    b = {"nodes": 1, "gpus_per_node": 1, "gpu_model": "a100", "command": ["true"]}
    b.update(kw)
    return {k: v for k, v in b.items() if v is not None}


def answer(c, path, b, token):
    st, _, r = c.api("POST", path, b, token=token)
    if st >= 400:
        return (st, r.get("type"), r.get("field"))
    return ("ok",)


def test_submit_and_dry_run_agree(c):
    setup(c)
    other = ended_job(c, "ml")
    mine = ended_job(c, "web")
    # (what, body, token key): admin is the cluster's admin token (None)
    table = [
        ("valid, admin", body(tenant="ml"), None),
        ("valid, tenant token defaults its tenant", body(), "web"),
        ("admin without a tenant", body(), None),
        ("unknown tenant", body(tenant="nope"), None),
        ("tenant outside the token's scope", body(tenant="ml"), "web"),
        ("unknown priority class", body(tenant="ml", priority_class="nope"), None),
        ("over the class's maximum time", body(tenant="ml", priority_class="short", time_limit=601), None),
        ("class maximum exactly", body(tenant="ml", priority_class="short", time_limit=600), None),
        ("over the tenant's maximum time", body(tenant="cap", time_limit=901), None),
        ("unknown required level", body(tenant="ml", topology={"required": "row"}), None),
        ("unknown preferred level", body(tenant="ml", topology={"preferred": "row"}), None),
        ("known levels", body(tenant="ml", topology={"required": "block", "preferred": "rack"}), None),
        ("dependency on no job", body(tenant="ml", dependencies=[{"type": "afterok", "job_id": 99999999}]),
         None),
        ("dependency outside scope", body(dependencies=[{"type": "afterany", "job_id": other}]), "web"),
        ("dependency in scope", body(dependencies=[{"type": "afterany", "job_id": mine}]), "web"),
        ("second dependency outside scope",
         body(dependencies=[{"type": "afterany", "job_id": mine}, {"type": "afterok", "job_id": other}]), "web"),
        ("user set by a tenant token", body(user="someone"), "web"),
        ("zero nodes", body(tenant="ml", nodes=0), None),
        ("bad dependency type", body(tenant="ml", dependencies=[{"type": "after", "job_id": other}]), None),
    ]
    toks = {None: None, "web": c.tok_web, "ml": c.tok_ml}
    for what, b, tk in table:
        dry = answer(c, "/v1/jobs/dry-run", b, toks[tk])
        sub = answer(c, "/v1/jobs", b, toks[tk])
        check_eq(dry, sub, "%s: dry-run and submit answer alike (%s)" % (what, b))
    # In a batch, after a valid job, the same answer names the field jobs.1.<field>
    # (the store reports (job, column); api/codec_job.c names it).
    for what, b, tk in table:
        sub = answer(c, "/v1/jobs", b, toks[tk])
        valid = body() if tk else body(tenant="ml")
        got = answer(c, "/v1/jobs/batch", {"jobs": [valid, b]}, toks[tk])
        if sub == ("ok",):
            check_eq(got, ("ok",), what)
        elif sub[2]:
            check_eq(got, (sub[0], sub[1], "jobs.1." + sub[2]), "%s in a batch" % what)
    # The four divergences the issue named, pinned to the submit's answers.
    expect = {
        "admin without a tenant": (400, "missing-field", "tenant"),
        "unknown priority class": (404, "not-found", "priority_class"),
        "over the class's maximum time": (400, "out-of-range", "time_limit"),
        "unknown required level": (400, "invalid-value", "topology.required"),
    }
    for what, b, tk in table:
        if what in expect:
            got = answer(c, "/v1/jobs/dry-run", b, toks[tk])
            check_eq(got[0], expect[what][0], what, got)
            check_eq(got[2], expect[what][2], what, got)


def dry(c, b, token=None):
    st, _, d = c.api("POST", "/v1/jobs/dry-run", b, token=token)
    check_eq(st, 200, b, d)
    return d


def test_dependency_states_of_any_job(c):
    setup(c)
    ok = ended_job(c, "ml")
    failed = ended_job(c, "ml", state="FAILED", exit_code=3)
    # No pending job names these: the dry-run still knows how they ended.
    d = dry(c, body(tenant="ml", dependencies=[{"type": "afterok", "job_id": ok}]))
    check_eq(d["feasible"], True, "afterok on a job that completed", d)
    d = dry(c, body(tenant="ml", dependencies=[{"type": "afternotok", "job_id": ok}]))
    check_eq(d["feasible"], False, d)
    check_eq(d["pending_reason"], "DependencyNeverSatisfied", d)
    d = dry(c, body(tenant="ml", dependencies=[{"type": "afternotok", "job_id": failed}]))
    check_eq(d["feasible"], True, "afternotok on a failed job", d)
    d = dry(c, body(tenant="ml", dependencies=[{"type": "afterok", "job_id": failed}]))
    check_eq(d["pending_reason"], "DependencyNeverSatisfied", d)
    # A job still pending: the dry-run waits for it.
    st, _, p = c.api("POST", "/v1/jobs", body(tenant="ml", nodes=9, gpus_per_node=8))
    check_eq(st, 201, p)
    d = dry(c, body(tenant="ml", dependencies=[{"type": "afterany", "job_id": p["id"]}]))
    check_eq(d["pending_reason"], "Dependency", d)
    c.api("POST", "/v1/jobs/%d/cancel" % p["id"])


def test_answers_follow_the_generation(c):
    setup(c)
    check(int(val(c, "SELECT generation FROM plan_generation")) > 0, "the leader's cycles bumped it")
    b = body(tenant="ml", gpu_model="h200")
    d = dry(c, b)
    check_eq(d["feasible"], False, "no h200 node yet", d)
    # Read after the dry-run: the plan it answered from is at most this
    # generation (a cycle of an earlier test may have bumped it since).
    g0 = int(val(c, "SELECT generation FROM plan_generation"))
    add_nodes(c, "pg", 1, gpus=8, model="h200")  # NOTIFY: the leader plans again
    c.wait_until(lambda: int(val(c, "SELECT generation FROM plan_generation")) > g0, 10, "a new generation")
    d = dry(c, b)
    check_eq(d["feasible"], True, "the new node is in the answer", d)
    check_eq(val(c, "SELECT count(*) FROM jobs WHERE gpu_model = 'h200'"), "0", "dry-run wrote nothing")



def test_quiet_cycles_keep_the_generation(c):
    """A cycle over the very snapshot the last one planned from writes
    nothing and leaves the generation alone: dry-runs keep their plan."""
    setup(c)
    sql(c, "UPDATE jobs SET state = 'CANCELLED', ended_at = now() WHERE state = 'PENDING';"
           " NOTIFY muster_sched, 'node:x'")
    c.wait_until(lambda: int(val(c, "SELECT count(*) FROM jobs WHERE state = 'PENDING'")) == 0, 10, "no pending")
    # Settle: the cycle that saw the cancel may have started before it, so
    # wait for one whole cycle that leaves the generation where it found it.
    settled = []

    def one_cycle_same():
        g0 = int(val(c, "SELECT generation FROM plan_generation"))
        for _ in range(2):  # the first may have been under way already
            n = lease(c)["cycles"]
            sql(c, "NOTIFY muster_sched, 'node:x'")
            c.wait_until(lambda: lease(c)["cycles"] > n, 10, "a woken cycle after the cancel")
        settled[:] = [g0]
        return int(val(c, "SELECT generation FROM plan_generation")) == g0
    c.wait_until(one_cycle_same, 30, "the generation settles after the cancel")
    g = settled[0]
    n1 = lease(c)["cycles"]
    for _ in range(3):
        n = lease(c)["cycles"]
        sql(c, "NOTIFY muster_sched, 'node:x'")  # a wake: a full cycle, nothing changed
        c.wait_until(lambda: lease(c)["cycles"] > n, 10, "a woken cycle")
    check(lease(c)["cycles"] >= n1 + 3, "three more full cycles ran")
    check_eq(int(val(c, "SELECT generation FROM plan_generation")), g, "quiet cycles left the generation")
    add_nodes(c, "pq", 1, gpus=8, model="a100")
    c.wait_until(lambda: int(val(c, "SELECT generation FROM plan_generation")) > g, 10, "a change moves it")


def test_reloads_follow_every_change(c):
    """Each reload refreshes one of the plan's two kept snapshots with the
    rows changed since that one was read (two generations back): nodes
    added, drained and given back, over several reloads, each answered as
    the database stands."""
    setup(c)

    def moved(g):
        c.wait_until(lambda: int(val(c, "SELECT generation FROM plan_generation")) > g, 10, "a new generation")

    def feasible(model):
        return dry(c, body(tenant="ml", gpu_model=model))["feasible"]

    models = ["rk%d" % i for i in range(4)]
    for i, m in enumerate(models):
        check_eq(feasible(m), False, "no %s node yet" % m)
        g = int(val(c, "SELECT generation FROM plan_generation"))
        add_nodes(c, "n" + m, 1, gpus=8, model=m)
        moved(g)
        for seen in models[:i + 1]:
            check_eq(feasible(seen), True, "reload %d sees the %s node" % (i, seen))
    for m in models[:2]:  # a change to rows an earlier reload read
        g = int(val(c, "SELECT generation FROM plan_generation"))
        sql(c, "UPDATE nodes SET drain = true WHERE gpu_model = $1; NOTIFY muster_sched, 'node:x'", m)
        moved(g)
        check_eq(feasible(m), False, "drained %s node left the answer" % m)
    g = int(val(c, "SELECT generation FROM plan_generation"))
    sql(c, "UPDATE nodes SET drain = false WHERE gpu_model = $1; NOTIFY muster_sched, 'node:x'", models[0])
    moved(g)
    check_eq(feasible(models[0]), True, "undrained %s node is back" % models[0])
    check_eq(feasible(models[1]), False, "%s still drained" % models[1])


def test_concurrent_reloads(c):
    """Four clients ask while the generation moves under them: every
    answer is 200 and right, whichever plan it came from (the reloads
    refresh the two kept snapshots in turn while others answer; under
    ThreadSanitizer in make tsan)."""
    import threading
    setup(c)
    errors = []

    def client():
        for _ in range(25):
            st, _, d = c.api("POST", "/v1/jobs/dry-run", body(tenant="ml"))
            if st != 200 or d.get("feasible") is not True:
                errors.append((st, d))
    ts = [threading.Thread(target=client) for _ in range(4)]
    for t in ts:
        t.start()
    for i in range(3):
        g = int(val(c, "SELECT generation FROM plan_generation"))
        add_nodes(c, "cc%d" % i, 1, gpus=8, model="a100")
        c.wait_until(lambda: int(val(c, "SELECT generation FROM plan_generation")) > g, 10, "a new generation")
    for t in ts:
        t.join()
    check_eq(errors, [], "every concurrent dry-run answered")


if __name__ == "__main__":
    harness.main(api=True)
