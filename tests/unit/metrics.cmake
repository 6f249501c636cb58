# common/metrics: the text format helpers and the /metrics listener (issue 13).
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
add_executable(test_metrics ${CMAKE_CURRENT_LIST_DIR}/common/test_metrics.c)
target_link_libraries(test_metrics muster_common PkgConfig::CMOCKA)
add_test(NAME unit.metrics COMMAND test_metrics)
