# The admission checks (common/admit.c) on facts and jobs from the input's bytes.
muster_fuzz_driver(NAME fuzz_admit TEST fuzz.admit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_admit.c
  LIBS muster_common
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus/admit)
