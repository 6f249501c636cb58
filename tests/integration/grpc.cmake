# GRPC: muster-api's gRPC server from an independent client (python3-grpcio,
# stubs generated at test time), against a real PostgreSQL and muster-api.
muster_py_test(grpc.jobs test_grpc_jobs.py LABELS grpc)
muster_py_test(grpc.agent test_grpc_agent.py LABELS grpc)
muster_py_test(grpc.load test_grpc_load.py LABELS grpc)
muster_py_test(grpc.admin test_grpc_admin.py LABELS grpc)
