# Fuzz drivers for muster-sim's readers: SWF and CSV traces and the cluster file.
foreach(name swf csv cluster)
  muster_fuzz_driver(NAME fuzz_${name} TEST fuzz.sched.${name}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_${name}.c
    LIBS muster_simlib
    CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus/${name})
endforeach()
