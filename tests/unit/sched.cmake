# The policy core's scenario tests: one CTest test per scenario file
# (tests/unit/sched/README.md). The runner links the core only.
add_executable(sched_scenario ${CMAKE_CURRENT_LIST_DIR}/sched/scenario.c)
target_link_libraries(sched_scenario muster_sched)
file(GLOB MU_SCHED_SCENARIOS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/sched/scenarios/*.scn)
foreach(f IN LISTS MU_SCHED_SCENARIOS)
  get_filename_component(n ${f} NAME_WE)
  add_test(NAME unit.sched.scenario.${n} COMMAND sched_scenario ${f})
endforeach()
# Random-cluster properties of the topology rules (required, preferred, best
# fit), start-now and reservation paths.
add_executable(sched_topo_prop ${CMAKE_CURRENT_LIST_DIR}/sched/topo_prop.c)
target_link_libraries(sched_topo_prop muster_sched)
add_test(NAME unit.sched.topo_prop COMMAND sched_topo_prop 20000 12345)
# The explainer (one plan, many probes) answers as sched_explain does.
add_executable(sched_explainer_prop ${CMAKE_CURRENT_LIST_DIR}/sched/explainer_prop.c)
target_link_libraries(sched_explainer_prop muster_sched)
add_test(NAME unit.sched.explainer_prop COMMAND sched_explainer_prop 300 4242)
# The walk's order (the sort of pending jobs) is the documented one.
add_executable(sched_order_prop ${CMAKE_CURRENT_LIST_DIR}/sched/order_prop.c)
target_link_libraries(sched_order_prop muster_sched)
add_test(NAME unit.sched.order_prop COMMAND sched_order_prop 80 77)
