# API-CORE: the submit-path benchmark (wrk vs pgbench, batch). It needs a
# quiet machine and ~1 minute, so it is a build target, not a CTest test:
#   cmake --build build --target bench-submit     (or: bench/submit/run build 15)
# Figures and the exact command are recorded in bench/RESULTS.md.
if(TARGET muster-api AND TARGET muster-devdb)
  add_custom_target(bench-submit
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/submit/run ${CMAKE_BINARY_DIR} 15
    DEPENDS muster-api muster-devdb
    USES_TERMINAL
    COMMENT "bench/submit: POST /v1/jobs (64 connections) vs pgbench, and the batch endpoint")
endif()
