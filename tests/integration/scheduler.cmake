# muster-scheduler: election/fencing under failure, and time/failure/accounting
# end to end through the database. Each file starts its own PostgreSQL and
# real scheduler processes.
if(TARGET muster-scheduler)
  muster_py_test(sched.failover test_sched_failover.py TIMEOUT 240 COST 30 LABELS scheduler)
  muster_py_test(sched.lifecycle test_sched_lifecycle.py TIMEOUT 240 COST 30 LABELS scheduler)
endif()
if(TARGET muster-scheduler AND TARGET muster-api)
  muster_py_test(sched.api test_sched_api.py TIMEOUT 240 LABELS scheduler)
  muster_py_test(sched.promises test_sched_promises.py TIMEOUT 240 COST 30 LABELS scheduler)
  muster_py_test(plan.dryrun test_plan_dryrun.py TIMEOUT 240 LABELS scheduler)
endif()
