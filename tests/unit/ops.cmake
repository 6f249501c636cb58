# The operations layer under REST and gRPC (api/ops/): router, principal
# rules, the shared token cache, the rules of a submit, the scheduler reads.
add_executable(test_ops_router ${CMAKE_CURRENT_LIST_DIR}/api/test_ops_router.c)
target_link_libraries(test_ops_router muster_api_ops muster_common PkgConfig::CMOCKA)
add_test(NAME unit.api.ops_router COMMAND test_ops_router)

add_executable(test_ops_principal ${CMAKE_CURRENT_LIST_DIR}/api/test_ops_principal.c)
target_link_libraries(test_ops_principal muster_api_ops muster_common PkgConfig::CMOCKA)
add_test(NAME unit.api.ops_principal COMMAND test_ops_principal)

add_executable(test_ops_submit ${CMAKE_CURRENT_LIST_DIR}/api/test_ops_submit.c)
target_link_libraries(test_ops_submit muster_api_ops muster_common PkgConfig::CMOCKA)
add_test(NAME unit.api.ops_submit COMMAND test_ops_submit)

add_executable(test_ops_sched ${CMAKE_CURRENT_LIST_DIR}/api/test_ops_sched.c)
target_link_libraries(test_ops_sched muster_api_ops muster_common PkgConfig::CMOCKA)
add_test(NAME unit.api.ops_sched COMMAND test_ops_sched)
