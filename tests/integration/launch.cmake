# LAUNCH: launchers (torchrun, deepspeed, accelerate), the frameworks'
# environment, the pre-timeout signal, and restart on shrink.
muster_py_test(launch.launchers test_launch.py TIMEOUT 240 LABELS agent RUN_SERIAL)
muster_py_test(launch.restart test_launch_restart.py TIMEOUT 180 LABELS agent RUN_SERIAL)
