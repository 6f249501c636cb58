pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
add_executable(test_common ${CMAKE_CURRENT_LIST_DIR}/common/test_common.c)
target_link_libraries(test_common muster_common PkgConfig::CMOCKA)
add_test(NAME unit.common COMMAND test_common)
# common/admit.c: the admission checks submit, dry-run and PATCH share
add_executable(test_admit ${CMAKE_CURRENT_LIST_DIR}/common/test_admit.c)
target_link_libraries(test_admit muster_common PkgConfig::CMOCKA)
add_test(NAME unit.common.admit COMMAND test_admit)
