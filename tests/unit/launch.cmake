# LAUNCH: Slurm's host-list and task-layout forms, and the launch lines of
# the launchers (common/hostlist.c, common/launcher.c).
add_executable(test_launch ${CMAKE_CURRENT_LIST_DIR}/common/test_launch.c)
target_link_libraries(test_launch muster_common PkgConfig::CMOCKA)
add_test(NAME unit.launch COMMAND test_launch)
set_tests_properties(unit.launch PROPERTIES TIMEOUT 30 LABELS agent)

# The agent's launch contract for the frameworks (PET_*, Slurm's names and
# formats, launcher modes, restart renumbering).
add_executable(test_agent_launch ${CMAKE_CURRENT_LIST_DIR}/agent/test_agent_launch.c)
target_link_libraries(test_agent_launch muster_agent_core PkgConfig::CMOCKA)
add_test(NAME unit.agent.launch COMMAND test_agent_launch)
set_tests_properties(unit.agent.launch PROPERTIES TIMEOUT 30 LABELS agent)

# The job codec's launch fields (api/codec_job.c).
add_executable(test_codec_launch ${CMAKE_CURRENT_LIST_DIR}/api/test_codec_launch.c)
target_link_libraries(test_codec_launch muster_api_codec muster_common PkgConfig::CMOCKA)
add_test(NAME unit.api.codec_launch COMMAND test_codec_launch)
