# Fuzz drivers for muster-sim's readers: SWF and CSV traces and the cluster
# file. The *_replay binaries run the seed corpus in every build (CTest); the
# libFuzzer binaries need -DMUSTER_FUZZ=ON and clang:
#   build/tests/fuzz/fuzz_swf tests/fuzz/corpus/swf
foreach(name swf csv cluster)
  add_executable(fuzz_${name}_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_${name}.c)
  target_compile_definitions(fuzz_${name}_replay PRIVATE MU_FUZZ_REPLAY_MAIN)
  target_link_libraries(fuzz_${name}_replay muster_simlib)
  add_test(NAME fuzz.sched.${name} COMMAND fuzz_${name}_replay ${CMAKE_CURRENT_LIST_DIR}/corpus/${name})
  if(MUSTER_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
    add_executable(fuzz_${name} ${CMAKE_CURRENT_LIST_DIR}/fuzz_${name}.c)
    target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(fuzz_${name} muster_simlib)
  endif()
endforeach()
