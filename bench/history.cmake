# Slurm CLI side: `muster history` / GET /v1/history on a month of 1M ended jobs
# (about a minute; a quiet machine): cmake --build build --target bench-history
# Figures and the command are recorded in bench/RESULTS.md.
if(TARGET muster-api AND TARGET muster-devdb AND TARGET muster)
  add_custom_target(bench-history
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/history/run.py ${CMAKE_BINARY_DIR}
    DEPENDS muster-api muster-devdb muster
    USES_TERMINAL
    COMMENT "bench/history: GET /v1/history and muster history on 1,000,000 ended jobs")
endif()
