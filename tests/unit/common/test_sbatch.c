/* Unit tests of common/sbatch.c (#SBATCH directives, output patterns) and
 * common/slurmtime.c (Slurm's time forms). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sbatch.h"
#include "slurmtime.h"

static int64_t parse_ok(const char *s, int64_t now, int flags)
{
	int64_t t = 0;
	int ret = mu_slurmtime_parse(s, now, flags, &t);
	if (ret != 0)
		fail_msg("'%s' refused (%d)", s, ret);
	return t;
}

/* Local times are computed in UTC here (TZ set in main) so figures are fixed. */
static void slurmtime_forms(void **state)
{
	/* 2026-12-02T10:30:00Z, a Wednesday */
	const int64_t now = 1796207400;
	(void)state;
	assert_int_equal(parse_ok("now", now, 0), now);
	assert_int_equal(parse_ok("now+1hour", now, 0), now + 3600);
	assert_int_equal(parse_ok("NOW+90", now, 0), now + 90);
	assert_int_equal(parse_ok("now-2days", now, 0), now - 2 * 86400);
	assert_int_equal(parse_ok("now+30minutes", now, 0), now + 1800);
	assert_int_equal(parse_ok("now+1w", now, 0), now + 604800);
	assert_int_equal(parse_ok("today", now, 0), now - 10 * 3600 - 1800);
	assert_int_equal(parse_ok("midnight", now, 0), now - 10 * 3600 - 1800);
	assert_int_equal(parse_ok("tomorrow", now, 0), now - 10 * 3600 - 1800 + 86400);
	assert_int_equal(parse_ok("noon", now, 0), now + 5400);
	assert_int_equal(parse_ok("teatime", now, 0), now + 5 * 3600 + 1800);
	assert_int_equal(parse_ok("16:00", now, 0), now + 5 * 3600 + 1800);
	assert_int_equal(parse_ok("16:00:30", now, 0), now + 5 * 3600 + 1830);
	assert_int_equal(parse_ok("4:00PM", now, 0), now + 5 * 3600 + 1800);
	/* past times of day: today for sacct, tomorrow for --begin */
	assert_int_equal(parse_ok("08:00", now, 0), now - 2 * 3600 - 1800);
	assert_int_equal(parse_ok("08:00", now, MU_SLURMTIME_FUTURE), now - 2 * 3600 - 1800 + 86400);
	assert_int_equal(parse_ok("elevenses", now, MU_SLURMTIME_FUTURE), now + 1800);
	assert_int_equal(parse_ok("2027-01-31T08:00", now, 0), 1801382400);
	assert_int_equal(parse_ok("2027-01-31", now, 0), 1801353600);
	assert_int_equal(parse_ok("2027-01-31T08:00:00Z", now, 0), 1801382400);
	assert_int_equal(parse_ok("2027-01-31T09:00:00+01:00", now, 0), 1801382400);
	assert_int_equal(parse_ok("0131", now, 0), 1769817600); /* this year: 2026-01-31 */
	assert_int_equal(parse_ok("0131", now, MU_SLURMTIME_FUTURE), 1801353600);
	assert_int_equal(parse_ok("013127", now, 0), 1801353600);
	assert_int_equal(parse_ok("01/31/27", now, 0), 1801353600);
	assert_int_equal(parse_ok("01.31.27-08:00", now, 0), 1801382400);
	assert_int_equal(parse_ok("12/25-18:30", now, 0), 1798223400);
}

static void slurmtime_bad(void **state)
{
	static const char *const bad[] = {
		"", "now+", "now+x", "now+1parsec", "now1", "nowish", "25:00", "12:60", "1:2",
		"2027-13-01", "2027-02-30", "2027-01-31T", "2027-01-31T8", "2027-01-31 08:00", "13/01",
		"0230", "1/31", "today+1", "yesterday", "99999-01-01", "0:00PM", "13:00PM", "16:00 ",
		" 16:00", "2027-01-31T08:00:00+1:00", "now+99999999999999", "12/25-", "12/25-9",
		"0131x", "1", "12", "123", "2027-01-31T08:00:00.Z",
	};
	int64_t t;
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (mu_slurmtime_parse(bad[i], 1796207400, 0, &t) == 0)
			fail_msg("'%s' accepted", bad[i]);
}

static void rfc3339(void **state)
{
	char buf[32];
	int64_t t;
	(void)state;
	mu_slurmtime_rfc3339(1801382400, buf, sizeof(buf));
	assert_string_equal(buf, "2027-01-31T08:00:00Z");
	mu_slurmtime_rfc3339(0, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
	assert_int_equal(mu_slurmtime_parse_rfc3339("2027-01-31T08:00:00.123Z", &t), 0);
	assert_int_equal(t, 1801382400);
	assert_int_equal(mu_slurmtime_parse_rfc3339("2027-01-31T08:00:00", &t), MU_EINVAL);
	assert_int_equal(mu_slurmtime_parse_rfc3339("2024-02-29T00:00:00Z", &t), 0);
	assert_int_equal(mu_slurmtime_parse_rfc3339("2023-02-29T00:00:00Z", &t), MU_ERANGE);
}

static const char *get(const struct mu_sbatch *sb, const char *k)
{
	const char *v = mu_sbatch_get(sb, k);
	return v ? v : "(none)";
}

static void directives_apply(void **state)
{
	static const char script[] =
		"#!/bin/bash\n"
		"# a comment\n"
		"\n"
		"#SBATCH -N 2-4\n"
		"#SBATCH --gres=gpu:a100:8 --ntasks-per-node=8   # trailing comment\n"
		"#SBATCH -t 1:30:00\n"
		"#SBATCH --job-name=\"my job\"\n"
		"#SBATCH -o out-%j.txt\n"
		"#SBATCH -e=err-%j.txt\n"
		"#SBATCH --array=0-15%4\n"
		"#SBATCH -d afterok:12:13,afterany:14\n"
		"#SBATCH --begin=2027-01-31T08:00\n"
		"#SBATCH -H\n"
		"#SBATCH --signal=B:USR1@90\n"
		"#SBATCH --no-requeue\n"
		"#SBATCH --mem=64G\n"
		"#SBATCH --cpus-per-task=4\n"
		"#SBATCH --qos=high -A team-a\n"
		"#SBATCH --export=NONE,FOO=bar,X='a b'\n"
		"#SBATCH -D /scratch/run\n"
		"#SBATCH --mail-type=END --partition=gpu\n"
		"#SBATCH --no-such-thing\n"
		"#SBATCHX --nodes=99\n"
		" #SBATCH --nodes=98\n"
		"echo hello\n"
		"#SBATCH --nodes=97\n";
	struct mu_sbatch sb;
	struct mu_error err = { 0 };
	(void)state;
	mu_sbatch_init(&sb, 1796207400, false);
	assert_int_equal(mu_sbatch_parse_script(&sb, script, strlen(script), &err), 0);
	assert_string_equal(get(&sb, "nodes"), "4");
	assert_string_equal(get(&sb, "min_nodes"), "2");
	assert_string_equal(get(&sb, "gpus_per_node"), "8");
	assert_string_equal(get(&sb, "gpu_model"), "\"a100\"");
	assert_string_equal(get(&sb, "procs_per_node"), "8");
	assert_string_equal(get(&sb, "time_limit"), "5400");
	assert_string_equal(get(&sb, "name"), "\"my job\"");
	assert_string_equal(get(&sb, "output"), "\"out-%j.txt\"");
	assert_string_equal(get(&sb, "error"), "\"err-%j.txt\"");
	assert_string_equal(get(&sb, "array"), "\"0-15%4\"");
	assert_string_equal(get(&sb, "dependencies"),
			    "[{\"type\":\"afterok\",\"job_id\":12},{\"type\":\"afterok\",\"job_id\":13},"
			    "{\"type\":\"afterany\",\"job_id\":14}]");
	assert_string_equal(get(&sb, "begin"), "\"2027-01-31T08:00:00Z\"");
	assert_string_equal(get(&sb, "hold"), "true");
	assert_string_equal(get(&sb, "signal"), "{\"name\":\"USR1\",\"before\":90,\"batch_only\":true}");
	assert_string_equal(get(&sb, "max_retries"), "0");
	assert_string_equal(get(&sb, "mem_per_node"), "68719476736");
	assert_string_equal(get(&sb, "cpus_per_node"), "32");
	assert_string_equal(get(&sb, "priority_class"), "\"high\"");
	assert_string_equal(get(&sb, "tenant"), "\"team-a\"");
	assert_string_equal(get(&sb, "env"), "{\"FOO\":\"bar\",\"X\":\"a b\"}");
	assert_string_equal(get(&sb, "workdir"), "\"/scratch/run\"");
	assert_int_equal(sb.nwarnings, 3);
	assert_non_null(strstr(sb.warnings[0], "line 21: --mail-type"));
	assert_non_null(strstr(sb.warnings[1], "--partition"));
	assert_non_null(strstr(sb.warnings[2], "no-such-thing"));
	mu_sbatch_release(&sb);
}

static void directives_derived(void **state)
{
	static const char script[] = "#!/bin/sh\n#SBATCH --nodes=2 --ntasks=16 --gpus=16\n"
				     "#SBATCH --mem-per-gpu=10G\n#SBATCH --requeue --gpus-per-n=3\n";
	struct mu_sbatch sb;
	struct mu_error err = { 0 };
	(void)state;
	mu_sbatch_init(&sb, 0, false);
	assert_int_equal(mu_sbatch_parse_script(&sb, script, strlen(script), &err), 0);
	assert_string_equal(get(&sb, "gpus_per_node"), "3"); /* a unique prefix, as getopt_long */
	mu_sbatch_release(&sb);
	mu_sbatch_init(&sb, 0, false);
	assert_int_equal(mu_sbatch_parse_script(&sb, script, strlen(script) - 16, &err), 0);
	assert_string_equal(get(&sb, "procs_per_node"), "8");
	assert_string_equal(get(&sb, "gpus_per_node"), "8");
	assert_string_equal(get(&sb, "mem_per_node"), "85899345920");
	assert_string_equal(get(&sb, "max_retries"), "5");
	assert_null(mu_sbatch_get(&sb, "_ntasks"));
	mu_sbatch_release(&sb);
	/* --gpus-per-task times the tasks per node (given or derived from --ntasks) */
	{
		static const struct {
			const char *script, *gpn, *model, *procs;
		} per_task[] = {
			{ "#SBATCH -N 2 --ntasks-per-node=4 --gpus-per-task=a100:2\n", "8", "\"a100\"", "4" },
			{ "#SBATCH --gpus-per-task=1\n", "1", NULL, NULL },
			{ "#SBATCH -N 2 -n 16 --gpus-per-task=1\n", "8", NULL, "8" },
			{ "#SBATCH --gpus-per-task=1 --gpus-per-node=3\n", "3", NULL, NULL },
		};
		for (size_t i = 0; i < sizeof(per_task) / sizeof(per_task[0]); i++) {
			mu_sbatch_init(&sb, 0, false);
			assert_int_equal(mu_sbatch_parse_script(&sb, per_task[i].script,
								strlen(per_task[i].script), &err), 0);
			assert_string_equal(get(&sb, "gpus_per_node"), per_task[i].gpn);
			if (per_task[i].model)
				assert_string_equal(get(&sb, "gpu_model"), per_task[i].model);
			if (per_task[i].procs)
				assert_string_equal(get(&sb, "procs_per_node"), per_task[i].procs);
			assert_null(mu_sbatch_get(&sb, "_gpus_per_task"));
			mu_sbatch_release(&sb);
		}
		/* --mem=0: all of each node's memory, i.e. no limit */
		mu_sbatch_init(&sb, 0, false);
		assert_int_equal(mu_sbatch_parse_script(&sb, "#SBATCH --mem=4G\n#SBATCH --mem=0\n", 33,
							&err), 0);
		assert_null(mu_sbatch_get(&sb, "mem_per_node"));
		mu_sbatch_release(&sb);
		mu_sbatch_init(&sb, 0, false);
		assert_int_not_equal(mu_sbatch_parse_script(&sb, "#SBATCH --ntasks-per-node=8 --gpus-per-task=16\n",
							    47, &err), 0);
		assert_non_null(strstr(err.msg, "above 64 GPUs per node"));
		mu_sbatch_release(&sb);
	}
}

/* Each bad directive is refused and its message names the option or the problem. */
static void directives_refused(void **state)
{
	static const struct {
		const char *line;
		const char *msg;
	} bad[] = {
		{ "--constraint=a100", "--constraint cannot be honoured" },
		{ "-C a100", "--constraint" },
		{ "--nodelist=n[1-4]", "--nodelist" },
		{ "-w n1", "--nodelist" },
		{ "--exclude=n1", "--exclude" },
		{ "--gres=fpga:1", "generic resource 'fpga:1'" },
		{ "--gres=gpu:1,gpu:2", "gpu given twice" },
		{ "-N 0", "out of range" },
		{ "-N 5-2", "minimum above maximum" },
		{ "-N two", "expected an integer" },
		{ "--nodes", "needs a value" },
		{ "-t forever", "invalid --time" },
		{ "-t UNLIMITED", "must be finite" },
		{ "--gpus-per-node=65", "out of range" },
		{ "--gpus-per-node=:8", "want [TYPE:]COUNT" },
		{ "--array=a-b", "want ranges" },
		{ "--dependency=after:12", "not supported" },
		{ "--dependency=afterok:", "needs job ids" },
		{ "--dependency=afterok:1?afterok:2", "any of" },
		{ "--dependency=afterok:x", "invalid job id" },
		{ "--dependency=afterok:1+5", "time offsets" },
		{ "--dependency=singleton", "not supported" },
		{ "--begin=someday", "invalid --begin" },
		{ "--signal=R:USR1", "not supported" },
		{ "--signal=FOO@10", "unknown signal" },
		{ "--signal=USR1@x", "expected an integer" },
		{ "--mem-per-gpu=0", "not a size" },
		{ "--mem=12X", "want a size" },
		{ "--mem=1K", "between 1M" },
		{ "--export=1BAD=x", "invalid variable name" },
		{ "--export=NOVALUE", "no value" },
		{ "--hold=yes", "takes no value" },
		{ "-Hx", "takes no value" },
		{ "--job-name \"unterminated", "unterminated" },
		{ "--n=2", "ambiguous" },
		{ "--nod=2", "ambiguous" },
		{ "--ntasks=3 --nodes=2", "does not divide" },
		{ "--mem-per-gpu=1G", "needs GPUs per node" },
		{ "--job-name=", "needs a value" },
		{ "--uid=0", "--uid cannot be honoured" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char script[256];
		struct mu_sbatch sb;
		struct mu_error err = { 0 };
		int ret;

		snprintf(script, sizeof(script), "#!/bin/sh\n#SBATCH %s\n", bad[i].line);
		mu_sbatch_init(&sb, 0, false);
		ret = mu_sbatch_parse_script(&sb, script, strlen(script), &err);
		if (ret >= 0)
			fail_msg("'%s' accepted", bad[i].line);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("'%s': message '%s' lacks '%s'", bad[i].line, err.msg, bad[i].msg);
		mu_sbatch_release(&sb);
	}
}

static void script_limits(void **state)
{
	struct mu_sbatch sb;
	struct mu_error err = { 0 };
	char *big = calloc(1, MU_SBATCH_MAX_SCRIPT + 2);
	(void)state;
	memset(big, '#', MU_SBATCH_MAX_SCRIPT + 1);
	mu_sbatch_init(&sb, 0, false);
	assert_int_equal(mu_sbatch_parse_script(&sb, big, MU_SBATCH_MAX_SCRIPT + 1, &err), MU_ETOOBIG);
	assert_int_equal(mu_sbatch_parse_script(&sb, "#!/bin/sh\n\0x", 12, &err), MU_EINVAL);
	assert_int_equal(mu_sbatch_parse_script(&sb, "#SBATCH -J \xff\n", 13, &err), MU_EUTF8);
	mu_sbatch_release(&sb);
	free(big);
	assert_true(mu_sbatch_has_shebang("#!/bin/sh", 9));
	assert_false(mu_sbatch_has_shebang("echo", 4));
}

static void expand_patterns(void **state)
{
	struct mu_sbatch_subst v = { .job_id = 123, .job_name = "train", .node = "gpu01",
				     .node_rank = 2, .task_rank = 5, .user = "alice" };
	struct mu_sbatch_subst arr = v;
	char out[64];
	(void)state;
	arr.array_job_id = 120;
	arr.array_task_id = 3;
	assert_int_equal(mu_sbatch_expand("slurm-%j.out", &v, out, sizeof(out)), 0);
	assert_string_equal(out, "slurm-123.out");
	assert_int_equal(mu_sbatch_expand("%x-%u-%N-%n-%t-100%%", &v, out, sizeof(out)), 0);
	assert_string_equal(out, "train-alice-gpu01-2-5-100%");
	assert_int_equal(mu_sbatch_expand("slurm-%A_%a.out", &arr, out, sizeof(out)), 0);
	assert_string_equal(out, "slurm-120_3.out");
	assert_int_equal(mu_sbatch_expand("%A_%a", &v, out, sizeof(out)), 0);
	assert_string_equal(out, "123_4294967294");
	assert_int_equal(mu_sbatch_expand("t%4a-%6j", &arr, out, sizeof(out)), 0);
	assert_string_equal(out, "t0003-000123");
	assert_int_equal(mu_sbatch_expand("%q%4z%", &v, out, sizeof(out)), 0);
	assert_string_equal(out, "%q%4z%");
	assert_int_equal(mu_sbatch_expand("%j%j%j", &v, out, 6), MU_ETOOLONG);
	assert_string_equal(out, "12312");
}

static void table_shape(void **state)
{
	size_t n = mu_sbatch_noptions();
	(void)state;
	assert_true(n > 40);
	for (size_t i = 0; i < n; i++) {
		const struct mu_sbatch_option *o = mu_sbatch_option_at(i);
		assert_non_null(o->help);
		for (size_t j = 0; j < i; j++) {
			const struct mu_sbatch_option *p = mu_sbatch_option_at(j);
			assert_string_not_equal(o->name, p->name);
			if (o->short_name)
				assert_true(o->short_name != p->short_name);
		}
	}
	assert_null(mu_sbatch_option_at(n));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(slurmtime_forms),  cmocka_unit_test(slurmtime_bad),
		cmocka_unit_test(rfc3339),	    cmocka_unit_test(directives_apply),
		cmocka_unit_test(directives_derived), cmocka_unit_test(directives_refused),
		cmocka_unit_test(script_limits),    cmocka_unit_test(expand_patterns),
		cmocka_unit_test(table_shape),
	};
	setenv("TZ", "UTC", 1);
	tzset();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
