# service/plan: the leader's incremental planning (delta.c) gives the
# decisions of a full rebuild, cycle after cycle on evolving clusters.
add_executable(test_plan_delta ${CMAKE_CURRENT_LIST_DIR}/plan/test_delta.c)
target_link_libraries(test_plan_delta muster_plan)
add_test(NAME unit.plan.delta COMMAND test_plan_delta 60 40 99)
