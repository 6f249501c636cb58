# Abuse: the gate before the body, connection caps, auth failure limits,
# token escalation, env redaction, readiness text (issue 13 item 5).
muster_py_test(api.abuse test_abuse.py TIMEOUT 240)
