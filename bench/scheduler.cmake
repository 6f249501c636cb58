# Scheduler daemon benchmarks (bench/scheduler/bench_scheduler.py; figures in
# bench/RESULTS.md). Minutes on a small machine, so build targets, not CTest:
#   cmake --build build --target bench-scheduler
if(TARGET muster-scheduler AND TARGET muster-devdb)
  add_custom_target(bench-scheduler
    COMMAND ${CMAKE_COMMAND} -E env MUSTER_BUILD_DIR=${CMAKE_BINARY_DIR}
            /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/scheduler/bench_scheduler.py latency
    COMMAND ${CMAKE_COMMAND} -E env MUSTER_BUILD_DIR=${CMAKE_BINARY_DIR}
            /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/scheduler/bench_scheduler.py failover
    COMMAND ${CMAKE_COMMAND} -E env MUSTER_BUILD_DIR=${CMAKE_BINARY_DIR}
            /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/scheduler/bench_scheduler.py cycle
    DEPENDS muster-scheduler muster-devdb
    USES_TERMINAL
    COMMENT "bench/scheduler: submit latency, failover, one cycle at 10k nodes")
endif()
