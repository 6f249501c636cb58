# AGENT: muster-agent core (launcher, reconciler, state file, fake GPUs).
add_executable(test_agent ${CMAKE_CURRENT_LIST_DIR}/agent/test_agent.c)
target_link_libraries(test_agent muster_agent_core PkgConfig::CMOCKA)
add_test(NAME unit.agent COMMAND test_agent)
set_tests_properties(unit.agent PROPERTIES TIMEOUT 60 LABELS agent)
