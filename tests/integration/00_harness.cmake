# The helper every integration fragment uses; named 00_ so it is included
# before the other fragments (tests/integration/CMakeLists.txt includes
# *.cmake in sorted order).
#
#   muster_py_test(<test name> <file.py> [TIMEOUT s] [COST s] [ARGS a...] [LABELS l...] [RUN_SERIAL])
#
# <file.py> is relative to the calling fragment's directory. The test runs
# with /usr/bin/python3 (Debian's modules: jsonschema, yaml, grpc), with
# MUSTER_BUILD_DIR, MUSTER_SOURCE_DIR and MUSTER_SHARED_DIR set and
# tests/integration on PYTHONPATH (import harness). Exit 77 = skipped.
set(MUSTER_PYTHON /usr/bin/python3 CACHE FILEPATH "Python for integration tests")
set(MUSTER_SHARED_DIR ${CMAKE_SOURCE_DIR}/../shared CACHE PATH "the shared/ folder beside the repository")

function(muster_py_test name file)
  cmake_parse_arguments(PARSE_ARGV 2 T "RUN_SERIAL" "TIMEOUT;COST" "ARGS;LABELS")
  if(NOT IS_ABSOLUTE ${file})
    set(file ${CMAKE_CURRENT_LIST_DIR}/${file})
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${MUSTER_PYTHON} ${file} ${T_ARGS})
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "MUSTER_BUILD_DIR=${CMAKE_BINARY_DIR};MUSTER_SOURCE_DIR=${CMAKE_SOURCE_DIR};MUSTER_SHARED_DIR=${MUSTER_SHARED_DIR};PYTHONPATH=${CMAKE_SOURCE_DIR}/tests/integration;PYTHONDONTWRITEBYTECODE=1;PYTHONUNBUFFERED=1"
    TIMEOUT ${T_TIMEOUT}
    SKIP_RETURN_CODE 77
    LABELS "integration;${T_LABELS}")
  if(T_RUN_SERIAL)
    set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
  endif()
  # COST: the test's usual seconds. ctest starts the costliest first, so on
  # a clean clone (no timing data yet) a long test does not start last.
  if(T_COST)
    set_tests_properties(${name} PROPERTIES COST ${T_COST})
  endif()
endfunction()
