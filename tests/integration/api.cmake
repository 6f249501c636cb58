# API-CORE: the jobs endpoints against a real PostgreSQL and muster-api.
muster_py_test(api.jobs test_jobs.py)
muster_py_test(api.jobs_idempotency test_idempotency.py)
muster_py_test(api.jobs_pagination test_pagination.py)
muster_py_test(api.jobs_durability test_durability.py)
muster_py_test(api.events test_events.py TIMEOUT 120)
