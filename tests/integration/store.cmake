# The store's integration tests: dev database lifecycle and migrations.
muster_py_test(store.devdb test_store_devdb.py)
muster_py_test(store.migrate test_store_migrate.py)
muster_py_test(store.dev_cluster test_store_dev_cluster.py)
