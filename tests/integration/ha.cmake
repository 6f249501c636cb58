# PostgreSQL HA (issue 13): multi-host URLs. The pg_auto_failover failover
# itself is bench/ha/failover.py (about a minute; result in bench/RESULTS.md).
muster_py_test(ha.multi_host_url test_ha_url.py TIMEOUT 120 LABELS ha)
