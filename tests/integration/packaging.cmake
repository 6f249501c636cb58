# Packaging (issue 13): install tree, smoke test from it, systemd units, Dockerfile.
muster_py_test(packaging.install test_install.py TIMEOUT 180 LABELS packaging)
