# TLS (issue 13): REST + gRPC over TLS, client certificates of agents, reload, CLI --cacert.
muster_py_test(tls.e2e test_tls.py TIMEOUT 180 LABELS tls)
muster_py_test(tls.dev_cluster test_tls_dev_cluster.py TIMEOUT 300 LABELS tls)
