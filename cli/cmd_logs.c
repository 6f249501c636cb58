/*
 * cmd_logs.c - `muster logs JOB`: a process's stdout or stderr, as the
 * node's agent has it (GET /v1/jobs/{id}/logs). Without -f it reads the
 * file as it is now, 1 MiB per request, until the size the server reported;
 * with -f one chunked request streams until the process ends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cli_out.h"
#include "cmd.h"

static int to_stdout(void *arg, const char *p, size_t n)
{
	(void)arg;
	if (fwrite(p, 1, n, stdout) != n)
		return 1;
	fflush(stdout);
	return 0;
}

int cmd_logs(struct cli_global *g, int argc, char **argv)
{
	struct cli_logs l = { .g = *g };
	struct cli_session sess;
	struct mu_error err;
	long long offset = 0;
	char run[40] = "";
	int ret;

	mu_error_clear(&err);
	ret = cli_logs_parse(argc, argv, &l, &err);
	if (ret == 1) {
		cli_help("logs");
		return CLI_EXIT_OK;
	}
	if (ret < 0)
		return cli_usage_error("logs", &err);
	ret = cli_session_open(&sess, &l.g);
	if (ret)
		return ret;
	if (l.run_id)
		snprintf(run, sizeof(run), "&run_id=%lld", l.run_id);
	for (;;) {
		struct cli_http_header h[3] = { { "muster-next-offset", "" }, { "muster-log-size", "" },
						{ "muster-log-ended", "" } };
		char *path = mu_asprintf("/v1/jobs/%s/logs?node_rank=%lld&local_rank=%lld&stream=%s%s"
					 "&offset=%lld%s",
					 l.job, l.node_rank, l.local_rank, l.err_stream ? "stderr" : "stdout",
					 run, offset, l.follow ? "&follow=true" : "");
		long long next, size;
		int rc;

		rc = cli_http_stream(&sess.http, path, l.follow ? 0 : 300, to_stdout, NULL, h, 3, NULL,
				     &err);
		mu_free(path);
		if (rc < 0) {
			ret = cli_report_about("job", l.job, &err);
			break;
		}
		if (l.follow)
			break;
		next = strtoll(h[0].value, NULL, 10);
		size = strtoll(h[1].value, NULL, 10);
		/* what the file held when asked is printed; a growing file is -f's job */
		if (next <= offset || next >= size)
			break;
		offset = next;
	}
	cli_session_close(&sess);
	return ret;
}
