# The muster CLI, run as a real process against a real muster-api + PostgreSQL.
muster_py_test(cli.e2e test_cli.py LABELS cli)
