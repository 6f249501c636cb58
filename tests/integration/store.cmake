# The store's integration tests: dev database lifecycle and migrations.
muster_py_test(store.devdb test_store_devdb.py)
muster_py_test(store.migrate test_store_migrate.py)
