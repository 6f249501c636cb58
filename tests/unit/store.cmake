# The store's C tests. test_store_db runs against a real PostgreSQL that it
# starts with store_devdb_start in a temp dir (no mocks).
add_executable(test_store_db ${CMAKE_CURRENT_LIST_DIR}/store/test_store_db.c)
target_link_libraries(test_store_db muster_store muster_sched PkgConfig::CMOCKA)
add_test(NAME unit.store_db COMMAND test_store_db)
set_tests_properties(unit.store_db PROPERTIES TIMEOUT 120)

# The leader's kept snapshot against a whole load after random changes
# (rounds, seed), on its own PostgreSQL.
add_executable(test_sched_keep ${CMAKE_CURRENT_LIST_DIR}/store/test_sched_keep.c)
target_link_libraries(test_sched_keep muster_store)
add_test(NAME unit.store.sched_keep COMMAND test_sched_keep 300 7)
set_tests_properties(unit.store.sched_keep PROPERTIES TIMEOUT 300)
