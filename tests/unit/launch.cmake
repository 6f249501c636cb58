# LAUNCH: Slurm's host-list and task-layout forms, and the launch lines of
# the launchers (common/hostlist.c, common/launcher.c).
add_executable(test_launch ${CMAKE_CURRENT_LIST_DIR}/common/test_launch.c)
target_link_libraries(test_launch muster_common PkgConfig::CMOCKA)
add_test(NAME unit.launch COMMAND test_launch)
set_tests_properties(unit.launch PROPERTIES TIMEOUT 30 LABELS agent)
