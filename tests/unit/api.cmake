# API-CORE: the pure JSON readers and the job codec.
add_executable(test_api_codec_job ${CMAKE_CURRENT_LIST_DIR}/api/test_codec_job.c)
target_link_libraries(test_api_codec_job muster_api_codec muster_common PkgConfig::CMOCKA)
add_test(NAME unit.api_codec_job COMMAND test_api_codec_job)
