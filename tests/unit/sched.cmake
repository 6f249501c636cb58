# The policy core's scenario tests: one CTest test per scenario file
# (tests/unit/sched/README.md). The runner links the core only.
add_executable(sched_scenario ${CMAKE_CURRENT_LIST_DIR}/sched/scenario.c)
target_link_libraries(sched_scenario muster_sched)
file(GLOB MU_SCHED_SCENARIOS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/sched/scenarios/*.scn)
foreach(f IN LISTS MU_SCHED_SCENARIOS)
  get_filename_component(n ${f} NAME_WE)
  add_test(NAME unit.sched.scenario.${n} COMMAND sched_scenario ${f})
endforeach()
