# API-ADMIN: fuzzing the admin body codecs (api/codec_admin.c). The replay
# binary runs the seed corpus in every build; the libFuzzer binary needs
# -DMUSTER_FUZZ=ON and clang:
#   build/tests/fuzz/fuzz_admin_json tests/fuzz/corpus/admin_json
pkg_check_modules(MU_ADMIN_JANSSON REQUIRED IMPORTED_TARGET jansson)
set(MU_ADMINFUZZ_SRC ${CMAKE_CURRENT_LIST_DIR}/fuzz_admin_json.c
    ${CMAKE_CURRENT_LIST_DIR}/../../api/codec_admin.c)
set(MU_ADMINFUZZ_INC ${CMAKE_CURRENT_LIST_DIR}/../../api ${CMAKE_CURRENT_LIST_DIR}/../../store)

add_executable(fuzz_admin_json_replay ${MU_ADMINFUZZ_SRC})
target_compile_definitions(fuzz_admin_json_replay PRIVATE MU_FUZZ_REPLAY_MAIN)
target_include_directories(fuzz_admin_json_replay PRIVATE ${MU_ADMINFUZZ_INC})
target_link_libraries(fuzz_admin_json_replay muster_common PkgConfig::MU_ADMIN_JANSSON)
add_test(NAME fuzz.admin_json COMMAND fuzz_admin_json_replay ${CMAKE_CURRENT_LIST_DIR}/corpus/admin_json)

if(MUSTER_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  add_executable(fuzz_admin_json ${MU_ADMINFUZZ_SRC})
  target_include_directories(fuzz_admin_json PRIVATE ${MU_ADMINFUZZ_INC})
  target_compile_options(fuzz_admin_json PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_admin_json PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_admin_json muster_common PkgConfig::MU_ADMIN_JANSSON)
endif()
