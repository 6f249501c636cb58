# Policy-core and simulator benchmarks (bench/sched/run.sh runs them all;
# figures in bench/RESULTS.md). Only a tiny smoke size runs in CTest.
add_executable(bench_sched_cycle ${CMAKE_CURRENT_LIST_DIR}/sched/bench_cycle.c)
target_link_libraries(bench_sched_cycle muster_sched)
add_test(NAME bench.sched.cycle_smoke
         COMMAND bench_sched_cycle --nodes 200 --running 600 --pending 2000 --depth 4 --repeat 1)
# The count-only EASY floor (bench/sched/easy_floor.c): run_wide.sh times it next to
# muster-sim and easy_ref.py; unit.sim.easy_ref_same checks its output against the Python's.
find_package(ZLIB REQUIRED)
add_executable(easy_floor ${CMAKE_CURRENT_LIST_DIR}/sched/easy_floor.c)
target_link_libraries(easy_floor ZLIB::ZLIB m)
