# Changing jobs, job arrays and settings (issue 12): the pure parts.
add_executable(test_codec_jobctl ${CMAKE_CURRENT_LIST_DIR}/api/test_codec_jobctl.c)
target_link_libraries(test_codec_jobctl muster_api_codec muster_common PkgConfig::CMOCKA)
add_test(NAME unit.codec_jobctl COMMAND test_codec_jobctl)
