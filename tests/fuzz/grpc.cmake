# GRPC: fuzzing what muster-api's gRPC server does with untrusted bytes
# (protobuf-c unpacking of every request type; JobSpec -> REST JSON ->
# codec_job_decode). The replay binary runs the seed corpus in every build;
# the libFuzzer binary needs -DMUSTER_FUZZ=ON and clang:
#   build/tests/fuzz/fuzz_grpc_proto tests/fuzz/corpus/grpc_proto
if(NOT TARGET PkgConfig::JANSSON)
  pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
endif()
set(MU_GRPCFUZZ_SRC ${CMAKE_CURRENT_LIST_DIR}/fuzz_grpc_proto.c
    ${CMAKE_CURRENT_LIST_DIR}/../../api/grpc/grpc_codec.c
    ${CMAKE_CURRENT_LIST_DIR}/../../api/jv.c ${CMAKE_CURRENT_LIST_DIR}/../../api/codec_job.c)
set(MU_GRPCFUZZ_INC ${CMAKE_CURRENT_LIST_DIR}/../../api ${CMAKE_CURRENT_LIST_DIR}/../../api/grpc
    ${CMAKE_CURRENT_LIST_DIR}/../../store)

add_executable(fuzz_grpc_proto_replay ${MU_GRPCFUZZ_SRC})
target_compile_definitions(fuzz_grpc_proto_replay PRIVATE MU_FUZZ_REPLAY_MAIN)
target_include_directories(fuzz_grpc_proto_replay PRIVATE ${MU_GRPCFUZZ_INC})
target_link_libraries(fuzz_grpc_proto_replay muster_proto muster_common PkgConfig::JANSSON)
add_test(NAME fuzz.grpc_proto COMMAND fuzz_grpc_proto_replay ${CMAKE_CURRENT_LIST_DIR}/corpus/grpc_proto)

if(MUSTER_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  add_executable(fuzz_grpc_proto ${MU_GRPCFUZZ_SRC})
  target_include_directories(fuzz_grpc_proto PRIVATE ${MU_GRPCFUZZ_INC})
  target_compile_options(fuzz_grpc_proto PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_grpc_proto PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_grpc_proto muster_proto muster_common PkgConfig::JANSSON)
endif()
