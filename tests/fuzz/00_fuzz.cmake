# muster_fuzz_driver(NAME n TEST ctest-name SOURCES ... [INCLUDES ...] [LIBS ...] CORPUS dirs...)
#
# Every driver gets two binaries: n_replay (the driver + replay_main.c), which
# CTest runs over the seed corpus in every build, and, with -DMUSTER_FUZZ=ON
# and clang, the libFuzzer binary n:   build/tests/fuzz/n tests/fuzz/corpus/<dir>
function(muster_fuzz_driver)
  cmake_parse_arguments(F "" "NAME;TEST" "SOURCES;INCLUDES;LIBS;CORPUS" ${ARGN})
  add_executable(${F_NAME}_replay ${F_SOURCES} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/replay_main.c)
  target_include_directories(${F_NAME}_replay PRIVATE ${F_INCLUDES})
  target_link_libraries(${F_NAME}_replay ${F_LIBS})
  add_test(NAME ${F_TEST} COMMAND ${F_NAME}_replay ${F_CORPUS})
  if(MUSTER_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
    add_executable(${F_NAME} ${F_SOURCES})
    target_include_directories(${F_NAME} PRIVATE ${F_INCLUDES})
    target_compile_options(${F_NAME} PRIVATE -fsanitize=fuzzer)
    target_link_options(${F_NAME} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${F_NAME} ${F_LIBS})
    # scripts/fuzz-run reads one line per driver: <binary> <seed dir>...
    list(JOIN F_CORPUS " " corpus)
    set_property(GLOBAL APPEND_STRING PROPERTY MU_FUZZ_MANIFEST "$<TARGET_FILE:${F_NAME}> ${corpus}\n")
  endif()
endfunction()

if(NOT TARGET PkgConfig::JANSSON)
  pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
endif()
