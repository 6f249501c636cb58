# LOGS: job logs from the node's agent over REST, gRPC and the CLI (fake
# GPUs, real muster-api + scheduler + agent).
muster_py_test(logs.e2e test_logs.py TIMEOUT 180 COST 25 LABELS agent)
