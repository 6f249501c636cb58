/* The CLI's sbatch side: batch scripts (directives under the command line),
 * the Slurm options from the #SBATCH table, and --wait's exit codes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "cli_args.h"
#include "cli_history.h"

#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(s, err, ...) cli_submit_parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (s), (err))

static char script_path[64];

static char *dump(const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	char *r = mu_strdup(s);
	free(s);
	return r;
}

static void write_script(const char *text)
{
	FILE *f = fopen(script_path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void script_under_command_line(void **state)
{
	struct cli_submit s = { 0 };
	struct mu_error err;
	char *body;
	(void)state;

	write_script("#!/bin/bash\n"
		     "#SBATCH -N 2 --ntasks-per-node=4 -J fromscript -t 10\n"
		     "#SBATCH --gres=gpu:2 --export=FOO=bar --mail-type=END -o out-%j\n"
		     "#SBATCH -D /scratch\n"
		     "echo hi\n");
	assert_int_equal(PARSE(&s, &err, "submit", "-J", "cli", "-N", "3", "--export", "FOO=cli",
			       script_path, "a", "b"),
			 0);
	body = dump(s.body);
	/* name and nodes from the command line, the rest from the script */
	assert_non_null(strstr(body, "\"name\":\"cli\""));
	assert_non_null(strstr(body, "\"nodes\":3"));
	assert_non_null(strstr(body, "\"procs_per_node\":4"));
	assert_non_null(strstr(body, "\"gpus_per_node\":2"));
	assert_non_null(strstr(body, "\"time_limit\":600"));
	assert_non_null(strstr(body, "\"env\":{\"FOO\":\"cli\"}"));
	assert_non_null(strstr(body, "\"output\":\"out-%j\""));
	assert_non_null(strstr(body, "\"workdir\":\"/scratch\""));
	assert_non_null(strstr(body, "\"script_args\":[\"a\",\"b\"]"));
	assert_non_null(strstr(body, "\"script\":\"#!/bin/bash\\n"));
	assert_null(strstr(body, "\"command\""));
	mu_free(body);
	assert_int_equal(json_array_size(s.warnings), 1);
	assert_non_null(strstr(json_string_value(json_array_get(s.warnings, 0)), ": line 3: --mail-type"));
	cli_submit_release(&s);

	/* sbatch's defaults: the script's base name, the directory of the submit */
	write_script("#!/bin/sh\necho x\n");
	memset(&s, 0, sizeof(s));
	assert_int_equal(PARSE(&s, &err, "submit", script_path), 0);
	assert_string_equal(json_string_value(json_object_get(s.body, "name")), strrchr(script_path, '/') + 1);
	{
		char cwd[4096];
		assert_non_null(getcwd(cwd, sizeof(cwd)));
		assert_string_equal(json_string_value(json_object_get(s.body, "workdir")), cwd);
	}
	assert_int_equal(json_integer_value(json_object_get(s.body, "nodes")), 1);
	cli_submit_release(&s);

	/* a file without "#!" and a missing path are commands, as before */
	write_script("echo not a script\n");
	memset(&s, 0, sizeof(s));
	assert_int_equal(PARSE(&s, &err, "submit", script_path), 0);
	assert_non_null(json_object_get(s.body, "command"));
	assert_null(json_object_get(s.body, "script"));
	cli_submit_release(&s);

	/* a refused directive names the file and the line */
	write_script("#!/bin/sh\n#SBATCH -N 1\n#SBATCH --constraint=a100\n");
	memset(&s, 0, sizeof(s));
	assert_true(PARSE(&s, &err, "submit", script_path) < 0);
	assert_non_null(strstr(err.msg, script_path));
	assert_non_null(strstr(err.msg, "line 3: --constraint cannot be honoured"));
	cli_submit_release(&s);
}

static void slurm_options(void **state)
{
	struct cli_submit s = { 0 };
	struct mu_error err;
	(void)state;

	assert_int_equal(PARSE(&s, &err, "submit", "-a", "0-15%4", "-H", "--begin=2027-01-31T08:00:00Z",
			       "--signal=B:USR1@60", "-o", "slurm-%A_%a.out", "-e", "e-%j", "-W",
			       "--qos", "high", "-A", "t1", "-c", "2", "--ntasks-per-node", "4",
			       "-p", "gpu", "--", "true"),
			 0);
	assert_string_equal(json_string_value(json_object_get(s.body, "array")), "0-15%4");
	assert_true(json_is_true(json_object_get(s.body, "hold")));
	assert_string_equal(json_string_value(json_object_get(s.body, "begin")), "2027-01-31T08:00:00Z");
	{
		char *sig = dump(json_object_get(s.body, "signal"));
		assert_string_equal(sig, "{\"batch_only\":true,\"before\":60,\"name\":\"USR1\"}");
		mu_free(sig);
	}
	assert_string_equal(json_string_value(json_object_get(s.body, "output")), "slurm-%A_%a.out");
	assert_string_equal(json_string_value(json_object_get(s.body, "error")), "e-%j");
	assert_string_equal(json_string_value(json_object_get(s.body, "priority_class")), "high");
	assert_string_equal(json_string_value(json_object_get(s.body, "tenant")), "t1");
	/* -c is per process: times the processes per node given after it */
	assert_int_equal(json_integer_value(json_object_get(s.body, "cpus_per_node")), 8);
	assert_true(s.wait);
	assert_int_equal(json_array_size(s.warnings), 1);
	cli_submit_release(&s);

	/* bad values of the Slurm options are usage errors naming them */
	{
		static const char *const bad[][2] = {
			{ "--begin", "someday" }, { "--signal", "NOPE" }, { "-a", "x" },
			{ "--gres", "fpga:1" },	  { "-w", "n1" },      { "--export", "1=2" },
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			memset(&s, 0, sizeof(s));
			mu_error_clear(&err);
			if (PARSE(&s, &err, "submit", (char *)bad[i][0], (char *)bad[i][1], "--", "true") >= 0)
				fail_msg("%s %s accepted", bad[i][0], bad[i][1]);
			assert_true(strlen(err.msg) > 0);
			cli_submit_release(&s);
		}
	}
}

static void wait_codes(void **state)
{
	json_t *three = json_integer(3), *zero = json_integer(0), *big = json_integer(300);
	(void)state;
	assert_int_equal(cli_wait_exit_code("COMPLETED", "completed", zero), 0);
	assert_int_equal(cli_wait_exit_code("FAILED", "failed", three), 3);
	assert_int_equal(cli_wait_exit_code("FAILED", "node_fail", NULL), 1);
	assert_int_equal(cli_wait_exit_code("FAILED", "failed", big), 1);
	assert_int_equal(cli_wait_exit_code("FAILED", "oom", three), 137);
	assert_int_equal(cli_wait_exit_code("TIMEOUT", "timeout", NULL), 124);
	assert_int_equal(cli_wait_exit_code("CANCELLED", "cancelled", NULL), 130);
	json_decref(three);
	json_decref(zero);
	json_decref(big);
}

static void queue_notation(void **state)
{
	static const int64_t a[] = { 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
	static const int64_t b[] = { 1, 3, 5, 6, 7 };
	char out[96];
	struct mu_error err;
	(void)state;
	cli_array_collapse(123, a, 12, "0-15%4", out, sizeof(out));
	assert_string_equal(out, "123_[4-15%4]");
	cli_array_collapse(9, b, 5, "1,3,5-7", out, sizeof(out));
	assert_string_equal(out, "9_[1,3,5-7]");
	assert_int_equal(cli_queue_format_check("%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R %%", &err), 0);
	assert_int_equal(cli_queue_format_check("%-10j|%S", &err), 0);
	assert_int_equal(cli_queue_format_check("%.18z", &err), MU_EINVAL);
	assert_non_null(strstr(err.msg, "'%z'"));
	assert_int_equal(cli_queue_format_check("%.18", &err), MU_EINVAL);
}

static void history_args(void **state)
{
	struct cli_history h = { 0 };
	struct mu_error err;
	/* 2026-12-02T10:30:00Z; TZ=UTC (main) */
	const int64_t now = 1796207400;
	(void)state;
	assert_int_equal(cli_history_parse(ARGC("history", "-S", "now-1days", "-E", "16:00", "-u", "ann",
						"-s", "CD,F", "-A", "t1"),
					   ARGV("history", "-S", "now-1days", "-E", "16:00", "-u", "ann", "-s",
						"CD,F", "-A", "t1"),
					   now, &h, &err),
			 0);
	assert_string_equal(h.query, "user=ann&tenant=t1&start=2026-12-01T10%3A30%3A00Z"
				     "&end=2026-12-02T16%3A00%3A00Z&state=COMPLETED%2CFAILED");
	assert_int_equal(h.ncols, 8);
	cli_history_release(&h);
	/* -j alone: no window; a default start (midnight) otherwise */
	assert_int_equal(cli_history_parse(ARGC("history", "-j", "4,5", "-o", "JobID%4,account", "-P"),
					   ARGV("history", "-j", "4,5", "-o", "JobID%4,account", "-P"), now,
					   &h, &err),
			 0);
	assert_string_equal(h.query, "job=4%2C5");
	assert_int_equal(h.ncols, 2);
	assert_int_equal(h.cols[0].width, 4);
	assert_true(h.parsable);
	cli_history_release(&h);
	assert_int_equal(cli_history_parse(1, ARGV("history"), now, &h, &err), 0);
	assert_string_equal(h.query, "start=2026-12-02T00%3A00%3A00Z");
	cli_history_release(&h);
	{
		static const char *const bad[][2] = {
			{ "-S", "yesterday" }, { "-E", "2027-13-01" }, { "-o", "Bogus" }, { "-o", "JobID%x" },
			{ "-j", "1;2" },       { "-s", "NOPE" },       { "--frob", "x" },
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			memset(&h, 0, sizeof(h));
			if (cli_history_parse(3, ARGV("history", (char *)bad[i][0], (char *)bad[i][1]), now, &h,
					      &err) >= 0)
				fail_msg("%s %s accepted", bad[i][0], bad[i][1]);
			cli_history_release(&h);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(script_under_command_line),
		cmocka_unit_test(slurm_options),
		cmocka_unit_test(wait_codes),
		cmocka_unit_test(queue_notation),
		cmocka_unit_test(history_args),
	};
	int fd, ret;

	setenv("TZ", "UTC", 1);
	tzset();
	snprintf(script_path, sizeof(script_path), "/tmp/muster-sbatch-XXXXXX");
	fd = mkstemp(script_path);
	if (fd < 0)
		return 1;
	close(fd);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(script_path);
	return ret;
}
