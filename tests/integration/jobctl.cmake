# Changing jobs (issue 12 item 4): hold/release/requeue/PATCH, ETag/If-Match,
# begin times, with a real muster-scheduler and muster-api.
if(TARGET muster-scheduler AND TARGET muster-api)
  muster_py_test(api.jobctl test_jobctl.py TIMEOUT 240 LABELS scheduler)
endif()
if(TARGET muster-api)
  muster_py_test(grpc.jobctl test_grpc_jobctl.py LABELS grpc)
endif()
# Job arrays (issue 12 item 3): a real agent, scheduler and API.
if(TARGET muster-scheduler AND TARGET muster-api AND TARGET muster-agent)
  muster_py_test(api.arrays test_arrays.py TIMEOUT 240 LABELS scheduler)
endif()
# Settings (issue 12 item 7): the one table agrees with SQL, docs and spec.
if(TARGET muster-api)
  muster_py_test(api.settings test_settings.py TIMEOUT 120)
endif()
