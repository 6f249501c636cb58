# AGENT: muster-agent core (launcher, reconciler, state file, fake GPUs).
add_executable(test_agent ${CMAKE_CURRENT_LIST_DIR}/agent/test_agent.c)
target_link_libraries(test_agent muster_agent_core PkgConfig::CMOCKA)
add_test(NAME unit.agent COMMAND test_agent)
set_tests_properties(unit.agent PROPERTIES TIMEOUT 60 LABELS agent)

# The NVML backend's dlopen path against a stand-in libnvidia-ml.so.1.
add_library(fake_nvml SHARED ${CMAKE_CURRENT_LIST_DIR}/agent/fake_nvml.c)
set_target_properties(fake_nvml PROPERTIES OUTPUT_NAME nvidia-ml SOVERSION 1
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fake_nvml)
add_executable(test_agent_nvml ${CMAKE_CURRENT_LIST_DIR}/agent/test_agent_nvml.c)
target_link_libraries(test_agent_nvml muster_agent_core PkgConfig::CMOCKA)
add_dependencies(test_agent_nvml fake_nvml)
add_test(NAME unit.agent.nvml COMMAND test_agent_nvml)
set_tests_properties(unit.agent.nvml PROPERTIES TIMEOUT 30 LABELS agent
  ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/fake_nvml")

# LOGS: the agent's byte-range reader (planted symlinks, FIFO, hard link), its
# thread, and retention.
add_executable(test_agent_logs ${CMAKE_CURRENT_LIST_DIR}/agent/test_agent_logs.c)
target_link_libraries(test_agent_logs muster_agent_core PkgConfig::CMOCKA)
add_test(NAME unit.agent.logs COMMAND test_agent_logs)
set_tests_properties(unit.agent.logs PROPERTIES TIMEOUT 30 LABELS agent)
