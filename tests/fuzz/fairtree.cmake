# Fuzzing the `muster-sim --fairshare` JSON reader (service/sim/fairshare_cli.c)
# and the Fair Tree core behind it. The replay binary runs the seed corpus and
# the unit golden cases in every build; the libFuzzer binary needs
# -DMUSTER_FUZZ=ON and clang:
#   build/fuzz_fairshare_json tests/fuzz/corpus/fairshare
if(NOT TARGET PkgConfig::JANSSON)
  pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
endif()
set(MU_FSFUZZ_SRC ${CMAKE_CURRENT_LIST_DIR}/fuzz_fairshare_json.c
    ${CMAKE_CURRENT_LIST_DIR}/../../service/sched/fairtree.c
    ${CMAKE_CURRENT_LIST_DIR}/../../service/sim/fairshare_cli.c)
set(MU_FSFUZZ_INC ${CMAKE_CURRENT_LIST_DIR}/../../service/sched
    ${CMAKE_CURRENT_LIST_DIR}/../../service/sim)

add_executable(fuzz_fairshare_json_replay ${MU_FSFUZZ_SRC})
target_compile_definitions(fuzz_fairshare_json_replay PRIVATE MU_FUZZ_REPLAY_MAIN)
target_include_directories(fuzz_fairshare_json_replay PRIVATE ${MU_FSFUZZ_INC})
target_link_libraries(fuzz_fairshare_json_replay muster_common PkgConfig::JANSSON m)
add_test(NAME fuzz.fairshare_json
         COMMAND fuzz_fairshare_json_replay ${CMAKE_CURRENT_LIST_DIR}/corpus/fairshare
                 ${CMAKE_CURRENT_LIST_DIR}/../unit/fairtree/cases
                 ${CMAKE_CURRENT_LIST_DIR}/../unit/fairtree/cases/bad)

if(MUSTER_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  add_executable(fuzz_fairshare_json ${MU_FSFUZZ_SRC})
  target_include_directories(fuzz_fairshare_json PRIVATE ${MU_FSFUZZ_INC})
  target_compile_options(fuzz_fairshare_json PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_fairshare_json PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_fairshare_json muster_common PkgConfig::JANSSON m)
endif()
