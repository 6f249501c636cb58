# service/plan: the leader's incremental planning (delta.c) gives the
# decisions of a full rebuild, cycle after cycle on evolving clusters, and
# so do allocations as ranges of nodes (with and without the hint); bad
# ranges are refused.
add_executable(test_plan_delta ${CMAKE_CURRENT_LIST_DIR}/plan/test_delta.c)
target_link_libraries(test_plan_delta muster_plan)
add_test(NAME unit.plan.delta COMMAND test_plan_delta 60 40 99)
# Stored rows -> core snapshot: topology units from node paths, users.
add_executable(test_plan_snapshot ${CMAKE_CURRENT_LIST_DIR}/plan/test_snapshot.c)
target_link_libraries(test_plan_snapshot muster_plan)
add_test(NAME unit.plan.snapshot COMMAND test_plan_snapshot 300 5)
