# SPEC's tests: openapi/muster.yaml against the route table (no server) and
# against the running muster-api. While a piece they need does not exist yet
# (muster-api, a route), a script exits 77 (skipped) and names it.
muster_py_test(spec.routes test_routes_spec.py TIMEOUT 60)
muster_py_test(spec.contract test_contract.py)
muster_py_test(spec.bad_requests test_bad_requests.py)
muster_py_test(spec.isolation test_isolation.py)
