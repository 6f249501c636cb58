# Fair Tree fair share: the pure core (service/sched/fairtree.c) and the
# `muster-sim --fairshare` calculator (service/sim/fairshare_cli.c). The
# sources are compiled here directly so these tests do not depend on the
# muster_sched / muster-sim targets' shape.
if(NOT TARGET PkgConfig::CMOCKA)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
endif()
if(NOT TARGET PkgConfig::JANSSON)
  pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
endif()

set(MU_FT_DIR ${CMAKE_CURRENT_LIST_DIR}/../../service/sched)
set(MU_FS_DIR ${CMAKE_CURRENT_LIST_DIR}/../../service/sim)

add_library(mu_fairshare_test STATIC ${MU_FT_DIR}/fairtree.c ${MU_FS_DIR}/fairshare_cli.c)
target_include_directories(mu_fairshare_test PUBLIC ${MU_FT_DIR} ${MU_FS_DIR})
target_link_libraries(mu_fairshare_test PUBLIC muster_common PkgConfig::JANSSON m)

add_executable(test_fairtree ${CMAKE_CURRENT_LIST_DIR}/fairtree/test_fairtree.c)
target_link_libraries(test_fairtree mu_fairshare_test PkgConfig::CMOCKA)
add_test(NAME unit.fairtree COMMAND test_fairtree)

add_executable(fairshare_driver ${CMAKE_CURRENT_LIST_DIR}/fairtree/fairshare_driver.c)
target_link_libraries(fairshare_driver mu_fairshare_test)
add_test(NAME unit.fairtree.cases
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/fairtree/run_cases.py
                 $<TARGET_FILE:fairshare_driver> ${CMAKE_CURRENT_LIST_DIR}/fairtree/cases)

# The same golden cases through the real `muster-sim --fairshare`.
add_test(NAME unit.fairtree.sim_cases
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/fairtree/run_cases.py
                 $<TARGET_FILE:muster-sim> ${CMAKE_CURRENT_LIST_DIR}/fairtree/cases --fairshare)
