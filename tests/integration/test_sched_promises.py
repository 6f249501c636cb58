"""What the scheduler promises beyond limits, end to end with real
PostgreSQL, muster-api and muster-scheduler: runtime prediction from each
user's recent actual run times (a backfill only the prediction allows, none
without it, a run that outlives its prediction is not killed and moves the
reservation to its limit), per-GPU-model quotas (QuotaMax naming the model,
a tenant's own row for a model deciding whether it reclaims it) and the
quota a reservation holds against backfill (max_gpus and max_running_jobs).

Jobs go in over REST; the agent side is played by SQL on runs, as in
test_sched_common.py. Each test uses its own GPU model and users."""
import harness
from harness import check, check_eq
from test_sched_common import add_nodes, agent_end, agent_running, lease, q, sql, start_scheduler, val, \
    wait_live_run

STARTED = False


def setup(c):
    global STARTED
    if not STARTED:
        harness.require_binary("muster-scheduler")
        c.make_tenant("pr")
        c.make_tenant("mq")
        c.make_tenant("rq")
        c.make_tenant("ot")
        # Reservations for several blocked jobs at once: each test's own.
        sql(c, "UPDATE settings SET value = '4' WHERE key = 'reservation_depth'")
        start_scheduler(c, "sched", "--tick", "200ms")
        c.wait_until(lambda: lease(c)["cycles"] > 0, 10, "first cycle")
        STARTED = True


def submit(c, **body):
    b = {"tenant": "pr", "nodes": 1, "gpus_per_node": 1, "command": ["true"], "time_limit": 3600}
    b.update(body)
    st, _, j = c.api("POST", "/v1/jobs", b)
    check_eq(st, 201, j)
    return j["id"]


def job(c, jid):
    r = sql(c, "SELECT state, pending_reason, pending_message,"
               " coalesce(extract(epoch FROM planned_start)::bigint, 0) FROM jobs WHERE id = $1", jid)[0]
    return {"state": r[0], "reason": r[1], "message": r[2], "planned_start": int(r[3])}


def history(c, user, model, seconds, tenant="pr"):
    """Two runs of `user` that ran `seconds` each, ended COMPLETED by the agent."""
    for _ in range(2):
        jid = submit(c, tenant=tenant, user=user, gpu_model=model)
        run, _, _ = wait_live_run(c, jid)
        sql(c, "UPDATE runs SET state = 'COMPLETED', exit_code = 0, ended_at = now(),"
               " started_at = now() - make_interval(secs => $2::int) WHERE id = $1;"
               " NOTIFY muster_sched, 'run:0'", run, seconds)
        c.wait_until(lambda: val(c, "SELECT state FROM jobs WHERE id = $1", jid) == "COMPLETED", 10,
                     "history job %s completed" % jid)
    check_eq(val(c, "SELECT recent::text FROM user_runtimes WHERE user_name = $1", user),
             "{%d,%d}" % (seconds, seconds), "user_runtimes of %s" % user)


def test_failed_launch_is_no_run_time(c):
    """A run that ended FAILED without ever starting (its launch failed) says nothing of
    how long its user's jobs run: user_runtimes keeps the two real run times."""
    setup(c)
    add_nodes(c, "fl", 1, gpus=2, model="fl")
    history(c, "lena", "fl", 600)
    jid = submit(c, user="lena", gpu_model="fl")
    run, _, _ = wait_live_run(c, jid)
    sql(c, "UPDATE runs SET state = 'FAILED', exit_code = 127, ended_at = now(), started_at = NULL"
           " WHERE id = $1; NOTIFY muster_sched, 'run:0'", run)
    c.wait_until(lambda: val(c, "SELECT state FROM jobs WHERE id = $1", jid) == "FAILED", 10, "the failed launch")
    check_eq(val(c, "SELECT recent::text FROM user_runtimes WHERE user_name = 'lena'"), "{600,600}",
             "a launch that never started is not a run time")


def started_at(c, run):
    return int(val(c, "SELECT extract(epoch FROM coalesce(started_at, created_at))::bigint FROM runs"
                      " WHERE id = $1", run))


def cycles_pass(c, n=3):
    """n more full cycles (a NOTIFY each: quiet ticks load no snapshot)."""
    k = lease(c)["cycles"]

    def more():
        q(c, "NOTIFY muster_sched, 'node:x'")
        return lease(c)["cycles"] >= k + n
    c.wait_until(more, 10, "%d more cycles" % n)


def gang(c, model, long_user, short_user, h_user):
    """A runs (never preemptible) on one of two GPUs, H (2 GPUs, higher than
    B) is blocked behind it, B asks for the free GPU with a long limit."""
    a = submit(c, user=long_user, gpu_model=model, priority_class="high")
    arun, _, _ = wait_live_run(c, a)
    agent_running(c, arun)
    h = submit(c, user=h_user, gpu_model=model, gpus_per_node=2, priority_class="normal")
    c.wait_until(lambda: job(c, h)["reason"] == "Reservation", 10, "H reserved: %s" % job(c, h))
    b = submit(c, user=short_user, gpu_model=model, priority_class="low", time_limit=7200)
    return a, arun, h, b


def test_backfill_only_prediction_allows(c):
    setup(c)
    add_nodes(c, "pr", 1, gpus=2, model="pr")
    check_eq(val(c, "SELECT value::text FROM settings WHERE key = 'predict_runtimes'"), "true",
             "prediction is on by default")
    history(c, "long", "pr", 1000)
    history(c, "short", "pr", 20)
    a, arun, h, b = gang(c, "pr", "long", "short", "hpr")
    check_eq(val(c, "SELECT predicted_runtime FROM runs WHERE id = $1", arun), "1000",
             "A was started with its user's prediction")
    # H is planned at A's predicted end, not at its limit ...
    delta = job(c, h)["planned_start"] - started_at(c, arun)
    check(990 <= delta <= 1010, "H planned %d s after A started (prediction 1000)" % delta)
    # ... so B, predicted 20 s, ends before it and starts now although its
    # limit (7200 s) reaches far past H's planned start.
    c.wait_until(lambda: job(c, b)["state"] in ("STARTING", "RUNNING"), 10, "B backfilled: %s" % job(c, b))
    brun, _, _ = wait_live_run(c, b)
    check_eq(val(c, "SELECT predicted_runtime FROM runs WHERE id = $1", brun), "20")
    check_eq(val(c, "SELECT time_limit FROM runs WHERE id = $1", brun), "7200", "the limit is kept for killing")
    check_eq(val(c, "SELECT state FROM runs WHERE id = $1", arun), "RUNNING")
    for r in (arun, brun):
        agent_end(c, r)
    c.wait_until(lambda: job(c, h)["state"] in ("STARTING", "RUNNING"), 10, "H starts when both end")
    agent_end(c, wait_live_run(c, h)[0])


def test_no_backfill_without_prediction(c):
    setup(c)
    add_nodes(c, "np", 1, gpus=2, model="np")
    sql(c, "UPDATE settings SET value = 'false' WHERE key = 'predict_runtimes'")
    cycles_pass(c, 2)  # a cycle that read the settings before the change is over
    try:
        # The same users, the same histories (user_runtimes): planned at limits.
        a, arun, h, b = gang(c, "np", "long", "short", "hnp")
        check_eq(val(c, "SELECT predicted_runtime FROM runs WHERE id = $1", arun), None)
        delta = job(c, h)["planned_start"] - started_at(c, arun)
        check(3590 <= delta <= 3610, "H planned %d s after A started (limit 3600)" % delta)
        c.wait_until(lambda: job(c, b)["reason"], 10, "B has a reason")
        cycles_pass(c)
        st = job(c, b)
        check_eq(st["state"], "PENDING", "B must not backfill past H's reservation: %s" % st)
        check(st["reason"] in ("Priority", "Reservation"), st)
        check(st["reason"] == "Priority" or st["planned_start"] >= job(c, h)["planned_start"] + 3600,
              "B is planned after H: %s" % st)
        agent_end(c, arun)
        c.wait_until(lambda: job(c, h)["state"] in ("STARTING", "RUNNING"), 10, "H starts")
        agent_end(c, wait_live_run(c, h)[0])
        c.wait_until(lambda: job(c, b)["state"] in ("STARTING", "RUNNING"), 10, "B starts last")
        agent_end(c, wait_live_run(c, b)[0])
    finally:
        sql(c, "UPDATE settings SET value = 'true' WHERE key = 'predict_runtimes'")


def test_outlived_prediction_moves_reservation(c):
    setup(c)
    add_nodes(c, "ol", 1, gpus=2, model="ol")
    history(c, "brief", "ol", 15)
    a = submit(c, user="brief", gpu_model="ol", priority_class="high", time_limit=600)
    arun, _, _ = wait_live_run(c, a)
    agent_running(c, arun)
    h = submit(c, user="hol", gpu_model="ol", gpus_per_node=2, priority_class="normal")
    c.wait_until(lambda: job(c, h)["reason"] == "Reservation", 10, "H reserved: %s" % job(c, h))
    t0 = started_at(c, arun)
    first = job(c, h)["planned_start"] - t0
    check(first < 600, "H planned at A's prediction (15 s), got +%d s" % first)
    # Past its prediction A keeps running (it is killed only at its limit)
    # and H's reservation moves to A's limit.
    c.wait_until(lambda: job(c, h)["planned_start"] - t0 >= 590, 45,
                 "H's reservation moved to A's limit: %s" % job(c, h))
    check_eq(sql(c, "SELECT state, stop_reason FROM runs WHERE id = $1", arun)[0], ("RUNNING", ""),
             "A is not stopped past its prediction")
    check(int(val(c, "SELECT extract(epoch FROM now() - started_at)::int FROM runs WHERE id = $1", arun)) >= 15,
          "A outlived its prediction")
    agent_end(c, arun)
    c.wait_until(lambda: job(c, h)["state"] in ("STARTING", "RUNNING"), 10, "H starts")
    agent_end(c, wait_live_run(c, h)[0])


def test_per_model_quota(c):
    setup(c)
    add_nodes(c, "qa", 1, gpus=4, model="qa")
    st, _, body = c.api("PUT", "/v1/tenants/mq/quota", {"gpu_model": "qa", "max_gpus": 2})
    check_eq(st, 200, body)
    jobs = [submit(c, tenant="mq", user="m%d" % i, gpu_model="qa") for i in range(3)]
    for jid in jobs[:2]:
        wait_live_run(c, jid)
    c.wait_until(lambda: job(c, jobs[2])["reason"] == "QuotaMax", 10, "QuotaMax: %s" % job(c, jobs[2]))
    check("qa" in job(c, jobs[2])["message"], "QuotaMax names the model: %s" % job(c, jobs[2]))
    check_eq(job(c, jobs[2])["state"], "PENDING")
    st, _, e = c.api("GET", "/v1/jobs/%d/explain" % jobs[2])
    check_eq(st, 200, e)
    check_eq(e["pending_reason"], "QuotaMax", e)
    check("qa" in e["message"], e)
    # The limit is mq's: another tenant still gets the model's free GPUs.
    other = submit(c, tenant="ot", user="o1", gpu_model="qa")
    wait_live_run(c, other)
    check_eq(job(c, jobs[2])["state"], "PENDING")
    # One of mq's runs ends: the third starts.
    agent_end(c, wait_live_run(c, jobs[0])[0])
    wait_live_run(c, jobs[2])
    for jid in jobs[1:] + [other]:
        agent_end(c, wait_live_run(c, jid)[0])


def reclaimed(c, borrower, claimant, model):
    """O of tenant `borrower` runs on both GPUs of the one `model` node; G of tenant
    `claimant` (whose guarantee covers them) then reclaims them: O's run is stopped.
    (O's job, O's run, G's job.)"""
    o = submit(c, tenant=borrower, user="o", gpu_model=model, gpus_per_node=2)
    orun, _, _ = wait_live_run(c, o)
    agent_running(c, orun)
    g = submit(c, tenant=claimant, user="g", gpu_model=model, gpus_per_node=2)
    c.wait_until(lambda: val(c, "SELECT stop_reason FROM runs WHERE id = $1", orun) == "preempt", 10,
                 "the borrower's run is stopped")
    return o, orun, g


def test_model_guarantee_reclaims(c):
    """A tenant below its guarantee for a model reclaims that model's GPUs
    from a borrower: the borrower's run is stopped, the job waits with
    QuotaGuaranteed while it stops (every cycle, not only the first), then
    starts on the freed GPUs ahead of the requeued victim, which is older
    (not the victim, stopped again the next cycle, forever)."""
    setup(c)
    c.make_tenant("gr")
    c.make_tenant("gb")
    add_nodes(c, "ga", 1, gpus=2, model="ga")
    st, _, body = c.api("PUT", "/v1/tenants/gr/quota", {"gpu_model": "ga", "guaranteed_gpus": 2})
    check_eq(st, 200, body)
    o, orun, g = reclaimed(c, "gb", "gr", "ga")
    cycles_pass(c)
    st = job(c, g)
    check_eq((st["state"], st["reason"]), ("PENDING", "QuotaGuaranteed"), st)
    check("reclaims" in st["message"], st)
    check_eq(val(c, "SELECT count(*) FROM runs WHERE job_id = $1", o), "1", "no further victims")
    agent_end(c, orun, exit_code=143)
    grun, _, _ = wait_live_run(c, g)
    cycles_pass(c)
    check_eq(job(c, o)["state"], "PENDING", "the victim waits behind it")
    check_eq(val(c, "SELECT count(*) FROM runs WHERE job_id = $1", o), "1", "the victim did not restart")
    check_eq(val(c, "SELECT state FROM runs WHERE id = $1", grun), "STARTING", "nor was G stopped")
    agent_end(c, grun)
    agent_end(c, wait_live_run(c, o)[0])


def test_parent_guarantee_reclaims(c):
    """A guarantee counts the tenant's subtree: a job of a child of a
    guaranteed parent reclaims the parent's GPUs from a borrower."""
    setup(c)
    c.make_tenant("sgp")
    c.make_tenant("sgc", parent="sgp")
    c.make_tenant("sgb")
    add_nodes(c, "sg", 1, gpus=2, model="sg")
    st, _, body = c.api("PUT", "/v1/tenants/sgp/quota", {"guaranteed_gpus": 2})
    check_eq(st, 200, body)
    o, orun, g = reclaimed(c, "sgb", "sgc", "sg")
    check_eq(job(c, g)["reason"], "QuotaGuaranteed", job(c, g))
    agent_end(c, orun, exit_code=143)
    agent_end(c, wait_live_run(c, g)[0])
    agent_end(c, wait_live_run(c, o)[0])


def test_model_row_decides_reclaim(c):
    """Two tenants with a tenant-wide guarantee and a row of guarantee 0 for
    one model both borrow that model's GPUs: neither reclaims them from the
    other (else each takes them back the next cycle, forever)."""
    setup(c)
    add_nodes(c, "pp", 1, gpus=2, model="pp")
    for t in ("pa", "pb"):
        c.make_tenant(t)
        for body in ({"guaranteed_gpus": 4}, {"gpu_model": "pp", "guaranteed_gpus": 0}):
            st, _, b = c.api("PUT", "/v1/tenants/%s/quota" % t, body)
            check_eq(st, 200, b)
    a = submit(c, tenant="pa", user="a", gpu_model="pp", gpus_per_node=2)
    arun, _, _ = wait_live_run(c, a)
    agent_running(c, arun)
    b = submit(c, tenant="pb", user="b", gpu_model="pp", gpus_per_node=2)
    c.wait_until(lambda: job(c, b)["reason"] not in ("", "Priority"), 10, "B has a reason: %s" % job(c, b))
    cycles_pass(c)
    check_eq(sql(c, "SELECT state, stop_reason FROM runs WHERE id = $1", arun)[0], ("RUNNING", ""),
             "A is not reclaimed: pb borrows pp as pa does")
    check(job(c, b)["reason"] not in ("QuotaGuaranteed", "Preempting"), job(c, b))
    agent_end(c, arun)
    c.wait_until(lambda: job(c, b)["state"] in ("STARTING", "RUNNING"), 10, "B starts when A ends")
    agent_end(c, wait_live_run(c, b)[0])


def held_and_reserved(c, model, nodes):
    """X (tenant ot) holds half of each of the `nodes` 4-GPU nodes of `model` until its
    limit; R, a whole node of tenant `model`, is then reserved. Their job ids."""
    x = submit(c, tenant="ot", user="x", gpu_model=model, nodes=nodes, gpus_per_node=2, priority_class="high",
               time_limit=600)
    xrun, _, _ = wait_live_run(c, x)
    agent_running(c, xrun)
    r = submit(c, tenant=model, user="r", gpu_model=model, gpus_per_node=4, priority_class="normal")
    c.wait_until(lambda: job(c, r)["reason"] == "Reservation", 10, "R reserved: %s" % job(c, r))
    return x, r


def test_reservation_holds_quota(c):
    setup(c)
    add_nodes(c, "rq", 3, gpus=4, model="rq")
    st, _, body = c.api("PUT", "/v1/tenants/rq/quota", {"max_gpus": 4})
    check_eq(st, 200, body)
    x, r = held_and_reserved(c, "rq", 3)
    # B fits the free, unreserved GPUs and rq's quota now (0 + 2 <= 4), but
    # would still run when R starts: rq 6 > 4 then. It waits.
    b = submit(c, tenant="rq", user="b", gpu_model="rq", gpus_per_node=2, priority_class="low")
    # D ends before R starts; C is another tenant's: both start.
    d = submit(c, tenant="rq", user="d", gpu_model="rq", gpus_per_node=2, priority_class="low", time_limit=60)
    o = submit(c, tenant="ot", user="c", gpu_model="rq", gpus_per_node=2, priority_class="low")
    for jid in (d, o):
        wait_live_run(c, jid)
    c.wait_until(lambda: job(c, b)["reason"] == "QuotaMax", 10, "B waits on quota: %s" % job(c, b))
    check("reservation" in job(c, b)["message"] and str(r) in job(c, b)["message"],
          "B's reason names R's reservation: %s" % job(c, b))
    cycles_pass(c)
    check_eq(job(c, b)["state"], "PENDING")
    check_eq(job(c, r)["reason"], "Reservation")
    for jid in (x, d, o):
        agent_end(c, wait_live_run(c, jid)[0])
    c.wait_until(lambda: job(c, r)["state"] in ("STARTING", "RUNNING"), 10, "R starts")
    agent_end(c, wait_live_run(c, r)[0])
    c.wait_until(lambda: job(c, b)["state"] in ("STARTING", "RUNNING"), 10, "B starts after R")
    agent_end(c, wait_live_run(c, b)[0])



def test_reservation_holds_running_jobs(c):
    """max_running_jobs is held by a reservation as max_gpus is: a job of
    the tenant that fits now but would still run at the reserved start waits
    with QuotaMaxRunningJobs naming the reservation."""
    setup(c)
    c.make_tenant("rj")
    add_nodes(c, "rj", 2, gpus=4, model="rj")
    st, _, body = c.api("PUT", "/v1/tenants/rj/quota", {"max_running_jobs": 1})
    check_eq(st, 200, body)
    x, r = held_and_reserved(c, "rj", 2)
    # B fits the free GPUs R does not need and rj runs no job now, but B
    # would still run at R's start: rj would run 2 jobs then.
    b = submit(c, tenant="rj", user="b", gpu_model="rj", priority_class="low")
    c.wait_until(lambda: job(c, b)["reason"] == "QuotaMaxRunningJobs", 10, "B waits: %s" % job(c, b))
    check("reservation" in job(c, b)["message"] and str(r) in job(c, b)["message"], job(c, b))
    cycles_pass(c)
    check_eq(job(c, b)["state"], "PENDING")
    check_eq(job(c, r)["reason"], "Reservation")
    agent_end(c, wait_live_run(c, x)[0])
    c.wait_until(lambda: job(c, r)["state"] in ("STARTING", "RUNNING"), 10, "R starts")
    agent_end(c, wait_live_run(c, r)[0])
    c.wait_until(lambda: job(c, b)["state"] in ("STARTING", "RUNNING"), 10, "B starts after R")
    agent_end(c, wait_live_run(c, b)[0])

if __name__ == "__main__":
    harness.main(api=True)
