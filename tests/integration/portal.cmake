# PORTAL: the web portal in a real browser (Debian chromium + chromium-driver,
# python3-selenium, headless) against muster-api, muster-scheduler and a
# fake-GPU agent; screenshots of every view go to <build>/portal-screenshots/.
if(TARGET muster_portal)
  muster_py_test(portal.browser test_portal.py TIMEOUT 180 COST 25 LABELS agent)
endif()
