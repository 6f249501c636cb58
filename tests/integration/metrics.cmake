# Metrics: each daemon's /metrics through promtool, and the Grafana dashboard's queries (issue 13 item 2).
muster_py_test(ops.metrics test_metrics.py TIMEOUT 180)
