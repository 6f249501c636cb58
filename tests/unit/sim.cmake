# muster-sim: exactness against the published KTH-SP2 EASY schedule, the CLI
# (formats, errors, determinism), fair-share convergence and randomized
# simulations under the invariant checker, the expansion-factor order and the starvation
# bound. Python 3 standard library only.
if(NOT DEFINED MUSTER_SHARED_DIR)
  set(MUSTER_SHARED_DIR ${CMAKE_SOURCE_DIR}/../shared CACHE PATH
      "the shared folder beside the clone (traces/, tools/)")
endif()
add_test(NAME unit.sim.kth_easy_exact
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/sim/kth_exact.py
                 $<TARGET_FILE:muster-sim> ${MUSTER_SHARED_DIR})
set_tests_properties(unit.sim.kth_easy_exact PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME unit.sim.cli
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/sim/test_sim_cli.py $<TARGET_FILE:muster-sim>)
add_test(NAME unit.sim.fairshare_converges
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/sim/test_fairshare_converge.py
                 $<TARGET_FILE:muster-sim>)
add_test(NAME unit.sim.random_invariants
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/sim/test_random_invariants.py
                 $<TARGET_FILE:muster-sim> 1 2 jobs=250)
set_tests_properties(unit.sim.random_invariants PROPERTIES TIMEOUT 300)
# Under the sanitizers (-O0, ASan's checks) the two replay-heavy property
# tests run ~10x slower: the same cases at a smaller size there; the full
# size runs in every other build (make test).
if(MUSTER_ASAN OR MUSTER_TSAN)
  set(MU_SIM_INC_JOBS 150)
  set(MU_SIM_FVT_ARGS 1 jobs=150)
else()
  set(MU_SIM_INC_JOBS 400)
  set(MU_SIM_FVT_ARGS 1 2 jobs=250)
endif()
add_test(NAME unit.sim.incremental
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/sim/test_incremental.py $<TARGET_FILE:muster-sim> jobs=${MU_SIM_INC_JOBS})
set_tests_properties(unit.sim.incremental PROPERTIES TIMEOUT 300)
add_test(NAME unit.sim.flat_vs_topology
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/sim/test_flat_vs_topology.py
                 $<TARGET_FILE:muster-sim> ${MU_SIM_FVT_ARGS})
set_tests_properties(unit.sim.flat_vs_topology PROPERTIES TIMEOUT 300)
add_test(NAME unit.sim.easy_ref_same
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/sim/test_easy_ref.py
                 $<TARGET_FILE:muster-sim> ${CMAKE_SOURCE_DIR} ${MUSTER_SHARED_DIR}
                 --floor $<TARGET_FILE:easy_floor>)
set_tests_properties(unit.sim.easy_ref_same PROPERTIES TIMEOUT 120)
add_test(NAME unit.sim.xfactor_order
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/sim/test_xfactor.py $<TARGET_FILE:muster-sim>)
add_test(NAME unit.sim.starve_guard
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/sim/test_starve_guard.py $<TARGET_FILE:muster-sim>)
add_test(NAME unit.sim.wide_starve
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/sim/test_wide_starve.py $<TARGET_FILE:muster-sim>)
add_test(NAME unit.sim.backfill_order
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/sim/test_backfill_order.py $<TARGET_FILE:muster-sim>)
