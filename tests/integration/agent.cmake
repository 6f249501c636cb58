# AGENT: muster-agent end to end (fake GPUs, real muster-api + scheduler).
muster_py_test(agent.gang test_agent_gang.py TIMEOUT 120 LABELS agent RUN_SERIAL)
muster_py_test(agent.restart test_agent_restart.py TIMEOUT 90 LABELS agent)
muster_py_test(agent.elastic test_agent_elastic.py TIMEOUT 180 LABELS agent)
muster_py_test(agent.isolation test_agent_isolation.py TIMEOUT 180 COST 25 LABELS agent)
muster_py_test(agent.channel test_agent_channel.py TIMEOUT 120 LABELS agent)
muster_py_test(agent.outage test_agent_outage.py TIMEOUT 300 COST 120 LABELS agent)
