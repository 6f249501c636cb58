# API-ADMIN: tenants, quotas, priority classes, tokens and nodes over REST,
# against a real PostgreSQL and muster-api (skipped when muster-api is not built).
foreach(t tenants quotas pclasses tokens nodes)
  muster_py_test(api.admin_${t} test_admin_${t}.py)
endforeach()
