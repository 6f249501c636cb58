# API-CORE: fuzzing the job body decoder (api/jv.c + api/codec_job.c). The
# replay binary runs the seed corpus in every build; the libFuzzer binary
# needs -DMUSTER_FUZZ=ON and clang:
#   build/tests/fuzz/fuzz_job_json tests/fuzz/corpus/job_json
if(NOT TARGET PkgConfig::JANSSON)
  pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
endif()
set(MU_JOBFUZZ_SRC ${CMAKE_CURRENT_LIST_DIR}/fuzz_job_json.c
    ${CMAKE_CURRENT_LIST_DIR}/../../api/jv.c ${CMAKE_CURRENT_LIST_DIR}/../../api/codec_job.c)
set(MU_JOBFUZZ_INC ${CMAKE_CURRENT_LIST_DIR}/../../api ${CMAKE_CURRENT_LIST_DIR}/../../store)

add_executable(fuzz_job_json_replay ${MU_JOBFUZZ_SRC})
target_compile_definitions(fuzz_job_json_replay PRIVATE MU_FUZZ_REPLAY_MAIN)
target_include_directories(fuzz_job_json_replay PRIVATE ${MU_JOBFUZZ_INC})
target_link_libraries(fuzz_job_json_replay muster_common PkgConfig::JANSSON)
add_test(NAME fuzz.job_json COMMAND fuzz_job_json_replay ${CMAKE_CURRENT_LIST_DIR}/corpus/job_json)

if(MUSTER_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  add_executable(fuzz_job_json ${MU_JOBFUZZ_SRC})
  target_include_directories(fuzz_job_json PRIVATE ${MU_JOBFUZZ_INC})
  target_compile_options(fuzz_job_json PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_job_json PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_job_json muster_common PkgConfig::JANSSON)
endif()
