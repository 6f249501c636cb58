# The muster CLI, run as a real process against a real muster-api + PostgreSQL.
muster_py_test(cli.e2e test_cli.py LABELS cli)
# POST /v1/jobs/cancel (api/rest_bulk.c) and `muster cancel` of many ids in one request.
muster_py_test(cli.bulk_cancel test_bulk_cancel.py LABELS cli)
# muster queue page by page: array collapsing across pages, --json, -o.
muster_py_test(cli.stream test_cli_stream.py LABELS cli)
