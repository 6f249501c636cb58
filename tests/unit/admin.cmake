# API-ADMIN: the pure admin codecs (api/codec_admin.c).
if(TARGET muster_api_codec)
  pkg_check_modules(MU_ADMIN_CMOCKA REQUIRED IMPORTED_TARGET cmocka)
  add_executable(test_codec_admin ${CMAKE_CURRENT_LIST_DIR}/admin/test_codec_admin.c)
  target_link_libraries(test_codec_admin muster_api_codec PkgConfig::MU_ADMIN_CMOCKA)
  add_test(NAME unit.codec_admin COMMAND test_codec_admin)
endif()

# Not a unit test: a driver of store_node_register() for tests/integration/test_admin_nodes.py.
if(TARGET muster_store)
  add_executable(admin_node_register_probe ${CMAKE_CURRENT_LIST_DIR}/admin/node_register_probe.c)
  target_link_libraries(admin_node_register_probe muster_store)
  set_target_properties(admin_node_register_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
endif()
