#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "cli_args.h"
#include "cli_conf.h"
#include "cli_out.h"

#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(s, err, ...) cli_submit_parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (s), (err))

/* The body as compact JSON with sorted keys, for exact comparisons. */
static char *dump(const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	char *r = mu_strdup(s);
	free(s);
	return r;
}

static void dependency_syntax(void **state)
{
	static const char *const bad[] = {
		"",         "afterok",       "afterok:",          "afterok:1:",     "afterok::1",
		":1",       "after:1",       "singleton:1",       "aftercorr:1",    "afterok:1?afterany:2",
		"afterok:1+5", "afterok:abc", "afterok:0",        ",afterok:1",     "afterok:1,",
		"afterok:1,,afterany:2",     "afterok:-1",        "afterok:99999999999999999999",
		"AFTEROK:1", "afterok:1 ",   "afterok:0x10",
	};
	struct mu_error err;
	json_t *deps = json_array();
	char *s;
	(void)state;

	assert_int_equal(cli_parse_dependency("afterok:1:2,afterany:3", deps, &err), 0);
	assert_int_equal(cli_parse_dependency("afternotok:9223372036854775807", deps, &err), 0);
	s = dump(deps);
	assert_string_equal(s, "[{\"job_id\":1,\"type\":\"afterok\"},{\"job_id\":2,\"type\":\"afterok\"},"
			       "{\"job_id\":3,\"type\":\"afterany\"},"
			       "{\"job_id\":9223372036854775807,\"type\":\"afternotok\"}]");
	mu_free(s);
	json_decref(deps);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		deps = json_array();
		mu_error_clear(&err);
		if (cli_parse_dependency(bad[i], deps, &err) >= 0)
			fail_msg("dependency '%s' was accepted", bad[i]);
		assert_string_equal(err.field, "dependency");
		assert_true(strlen(err.msg) > 0);
		json_decref(deps);
	}
	/* The messages name what is unsupported. */
	deps = json_array();
	assert_int_equal(cli_parse_dependency("afterok:1?afterok:2", deps, &err), MU_EINVAL);
	assert_non_null(strstr(err.msg, "any of"));
	assert_int_equal(cli_parse_dependency("singleton:1", deps, &err), MU_EINVAL);
	assert_non_null(strstr(err.msg, "singleton"));
	json_decref(deps);
	/* singleton names no job (Slurm's --dependency=singleton) */
	deps = json_array();
	assert_int_equal(cli_parse_dependency("singleton,afterok:4", deps, &err), 0);
	s = dump(deps);
	assert_string_equal(s, "[{\"type\":\"singleton\"},{\"job_id\":4,\"type\":\"afterok\"}]");
	mu_free(s);
	json_decref(deps);
}

static void labels_and_env(void **state)
{
	static const char *const bad_labels[] = { "=v", "novalue", "a b=c", "ü=x", "",
						  "k:1=v" };
	static const char *const bad_env[] = { "1A=x", "A-B=x", "=x", "A B=x" };
	struct mu_error err;
	json_t *obj = json_object();
	char *s;
	(void)state;

	assert_int_equal(cli_parse_kv("team=vision", "label", obj, &err), 0);
	assert_int_equal(cli_parse_kv("a.b/c-d_e=", "label", obj, &err), 0);
	assert_int_equal(cli_parse_kv("x=a=b", "label", obj, &err), 0); /* first '=' splits */
	assert_int_equal(cli_parse_kv("team=other", "label", obj, &err), MU_EINVAL);
	assert_non_null(strstr(err.msg, "twice"));
	s = dump(obj);
	assert_string_equal(s, "{\"a.b/c-d_e\":\"\",\"team\":\"vision\",\"x\":\"a=b\"}");
	mu_free(s);
	json_decref(obj);
	for (size_t i = 0; i < sizeof(bad_labels) / sizeof(bad_labels[0]); i++) {
		obj = json_object();
		if (cli_parse_kv(bad_labels[i], "label", obj, &err) >= 0)
			fail_msg("label '%s' was accepted", bad_labels[i]);
		assert_int_equal(json_object_size(obj), 0);
		json_decref(obj);
	}
	{
		char key[80];
		memset(key, 'k', 64);
		strcpy(key + 64, "=v");
		obj = json_object();
		assert_int_equal(cli_parse_kv(key, "label", obj, &err), MU_EINVAL);
		key[63] = '=';
		key[64] = 'v';
		key[65] = '\0';
		assert_int_equal(cli_parse_kv(key, "label", obj, &err), 0); /* 63 chars is the limit */
		json_decref(obj);
	}

	obj = json_object();
	setenv("MU_TEST_CLI_VAR", "from-env", 1);
	unsetenv("MU_TEST_CLI_UNSET");
	assert_int_equal(cli_parse_kv("OMP_NUM_THREADS=4", "env", obj, &err), 0);
	assert_int_equal(cli_parse_kv("MU_TEST_CLI_VAR", "env", obj, &err), 0);
	assert_int_equal(cli_parse_kv("_X=", "env", obj, &err), 0);
	assert_int_equal(cli_parse_kv("MU_TEST_CLI_UNSET", "env", obj, &err), MU_EINVAL);
	s = dump(obj);
	assert_string_equal(s, "{\"MU_TEST_CLI_VAR\":\"from-env\",\"OMP_NUM_THREADS\":\"4\",\"_X\":\"\"}");
	mu_free(s);
	json_decref(obj);
	for (size_t i = 0; i < sizeof(bad_env) / sizeof(bad_env[0]); i++) {
		obj = json_object();
		if (cli_parse_kv(bad_env[i], "env", obj, &err) >= 0)
			fail_msg("env '%s' was accepted", bad_env[i]);
		json_decref(obj);
	}
}

static void time_forms(void **state)
{
	static const struct { const char *in; int64_t secs; } ok[] = {
		{ "90", 5400 },        { "90:30", 5430 },      { "1:30:00", 5400 },
		{ "2-12", 216000 },    { "2-00:00:00", 172800 }, { "1-2:30", 95400 },
		{ "0:1", 1 },
	};
	static const char *const bad[] = { "0", "0:0", "1h", "unlimited", "INFINITE", "-1", "",
					   "1:2:3:4", "99999999999" };
	struct mu_error err;
	int64_t secs;
	(void)state;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(cli_parse_time(ok[i].in, &secs, &err), 0);
		assert_int_equal(secs, ok[i].secs);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (cli_parse_time(bad[i], &secs, &err) >= 0)
			fail_msg("time '%s' was accepted", bad[i]);
}

static void states(void **state)
{
	struct mu_error err;
	char *out = NULL;
	(void)state;

	assert_int_equal(cli_parse_states("PD,r", &out, &err), 0);
	assert_string_equal(out, "PENDING,RUNNING");
	assert_int_equal(cli_parse_states("canceled,TO", &out, &err), 0);
	assert_string_equal(out, "PENDING,RUNNING,CANCELLED,TIMEOUT");
	assert_int_equal(cli_parse_states("all", &out, &err), 0);
	assert_null(out);
	assert_int_equal(cli_parse_states("running,bogus", &out, &err), MU_EINVAL);
	assert_null(out);
	assert_int_equal(cli_parse_states(",", &out, &err), MU_EINVAL);
	assert_string_equal(cli_state_short("STARTING"), "CF");
	assert_string_equal(cli_state_short("COMPLETED"), "CD");
	assert_string_equal(cli_state_short("WEIRD"), "??");
}

static void submit_full(void **state)
{
	struct cli_submit s = { 0 };
	struct mu_error err;
	char *body;
	(void)state;

	assert_int_equal(PARSE(&s, &err, "submit", "-N", "2-4", "--gpus-per-node=a100:8", "-t",
			       "1:00:00", "-J", "train", "--tenant", "ml", "--qos", "high",
			       "--dependency=afterok:3:4", "-d", "afterany:5", "--label", "team=v",
			       "--label", "run=1", "--env", "A=1", "--workdir", "/w",
			       "--procs-per-node", "8", "--topology", "required:rack",
			       "--max-retries", "2", "--idempotency-key", "k-1", "--parsable",
			       "--url", "http://x:1", "--json", "--", "torchrun", "-N", "3",
			       "--nproc=8"),
			 0);
	body = dump(s.body);
	assert_string_equal(
		body, "{\"command\":[\"torchrun\",\"-N\",\"3\",\"--nproc=8\"],"
		      "\"dependencies\":[{\"job_id\":3,\"type\":\"afterok\"},{\"job_id\":4,"
		      "\"type\":\"afterok\"},{\"job_id\":5,\"type\":\"afterany\"}],"
		      "\"env\":{\"A\":\"1\"},\"gpu_model\":\"a100\",\"gpus_per_node\":8,"
		      "\"labels\":{\"run\":\"1\",\"team\":\"v\"},\"max_retries\":2,\"min_nodes\":2,"
		      "\"name\":\"train\",\"nodes\":4,\"priority_class\":\"high\",\"procs_per_node\":8,"
		      "\"tenant\":\"ml\",\"time_limit\":3600,\"topology\":{\"required\":\"rack\"},"
		      "\"workdir\":\"/w\"}");
	mu_free(body);
	assert_string_equal(s.idempotency_key, "k-1");
	assert_true(s.parsable);
	assert_false(s.test_only);
	assert_true(s.g.json);
	assert_string_equal(s.g.url, "http://x:1");
	cli_submit_release(&s);

	/* Defaults; the command starts at the first positional, its flags are its own. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(PARSE(&s, &err, "submit", "--test-only", "python", "-u", "x.py", "--nodes",
			       "9"),
			 0);
	body = dump(s.body);
	assert_string_equal(body, "{\"command\":[\"python\",\"-u\",\"x.py\",\"--nodes\",\"9\"],"
				  "\"gpus_per_node\":0,\"name\":\"python\",\"nodes\":1}");
	mu_free(body);
	assert_true(s.test_only);
	cli_submit_release(&s);

	/* Slurm's --mem goes to the API as written (it parses "64G"); CPUs per node */
	memset(&s, 0, sizeof(s));
	assert_int_equal(PARSE(&s, &err, "submit", "--mem", "64G", "--cpus-per-node", "16", "x"), 0);
	body = dump(s.body);
	assert_string_equal(body, "{\"command\":[\"x\"],\"cpus_per_node\":16,\"gpus_per_node\":0,"
				  "\"mem_per_node\":\"64G\",\"name\":\"x\",\"nodes\":1}");
	mu_free(body);
	cli_submit_release(&s);

	memset(&s, 0, sizeof(s));
	assert_int_equal(PARSE(&s, &err, "submit", "--wrap", "echo $HOSTNAME", "--priority-class",
			       "low", "--min-nodes", "1", "-N", "3", "--topology", "preferred:block"),
			 0);
	body = dump(s.body);
	assert_string_equal(body, "{\"command\":[\"/bin/sh\",\"-c\",\"echo $HOSTNAME\"],"
				  "\"gpus_per_node\":0,\"min_nodes\":1,\"name\":\"wrap\",\"nodes\":3,"
				  "\"priority_class\":\"low\",\"topology\":{\"preferred\":\"block\"}}");
	mu_free(body);
	cli_submit_release(&s);

	memset(&s, 0, sizeof(s));
	assert_int_equal(PARSE(&s, &err, "submit", "/opt/jobs/train.sh", "a"), 0);
	assert_string_equal(json_string_value(json_object_get(s.body, "name")), "train.sh");
	cli_submit_release(&s);

	memset(&s, 0, sizeof(s));
	assert_int_equal(PARSE(&s, &err, "submit", "-N", "2", "--help"), 1);
	assert_null(s.body);
	assert_int_equal(PARSE(&s, &err, "submit", "-h"), 1);
	assert_null(s.body);
	/* After the command starts, -h is the command's own flag. */
	assert_int_equal(PARSE(&s, &err, "submit", "ls", "-h"), 0);
	cli_submit_release(&s);
}

static void submit_bad(void **state)
{
	const struct {
		int argc;
		char **argv;
		const char *needle;
	} cases[] = {
#define CASE(needle, ...) { ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), needle }
		CASE("no command", "submit", "-N", "2"),
		CASE("no command", "submit", "--"),
		CASE("unknown", "submit", "--bogus", "x"),
		CASE("unknown option '-Z'", "submit", "-Z", "x"),
		CASE("needs a value", "submit", "-N"),
		CASE("needs a value", "submit", "x", "--time"), /* no: 'x' starts the command */
		CASE("out of range", "submit", "-N", "0", "x"),
		CASE("out of range", "submit", "-N", "10001", "x"),
		CASE("minimum above maximum", "submit", "-N", "4-2", "x"),
		CASE("expected an integer", "submit", "-N", "two", "x"),
		CASE("above --nodes", "submit", "-N", "2", "--min-nodes", "3", "x"),
		CASE("out of range", "submit", "--gpus-per-node", "65", "x"),
		CASE("empty GPU type", "submit", "--gpus-per-node", ":8", "x"),
		CASE("expected an integer", "submit", "--gpus-per-node", "a100:", "x"),
		CASE("invalid --time", "submit", "-t", "1h", "x"),
		CASE("finite", "submit", "-t", "UNLIMITED", "x"),
		CASE("required:LEVEL", "submit", "--topology", "rack", "x"),
		CASE("required:LEVEL", "submit", "--topology", "required:", "x"),
		CASE("out of range", "submit", "--max-retries", "101", "x"),
		CASE("out of range", "submit", "--procs-per-node", "0", "x"),
		CASE("out of range", "submit", "--cpus-per-node", "0", "x"),
		CASE("not supported", "submit", "-d", "after:1", "x"),
		CASE("twice", "submit", "--label", "a=1", "--label", "a=2", "x"),
		CASE("not both", "submit", "--wrap", "true", "x"),
		CASE("unknown or malformed", "submit", "--json=yes", "x"),
		CASE("UTF-8", "submit", "--label", "a=\xff", "x"),
		CASE("UTF-8", "submit", "--env", "A=\xc3(", "x"),
		CASE("UTF-8", "submit", "-J", "bad\xff", "x"),
		CASE("UTF-8", "submit", "--", "x", "\xed\xa0\x80"),
		CASE("UTF-8", "submit", "--wrap", "\xff"),
#undef CASE
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cli_submit s = { 0 };
		struct mu_error err;
		int ret;

		mu_error_clear(&err);
		ret = cli_submit_parse(cases[i].argc, cases[i].argv, &s, &err);
		if (i == 5) {
			/* "submit x --time": x is the command and --time its argument. */
			assert_int_equal(ret, 0);
			cli_submit_release(&s);
			continue;
		}
		if (ret >= 0)
			fail_msg("case %zu (%s) was accepted", i, cases[i].needle);
		assert_null(s.body);
		if (!strstr(err.msg, cases[i].needle))
			fail_msg("case %zu: message '%s' lacks '%s'", i, err.msg, cases[i].needle);
	}
}

static void logs_args(void **state)
{
	struct cli_logs l = { 0 };
	struct mu_error err;

	(void)state;
	assert_int_equal(cli_logs_parse(ARGC("logs", "12"), ARGV("logs", "12"), &l, &err), 0);
	assert_string_equal(l.job, "12");
	assert_false(l.follow);
	assert_false(l.err_stream);
	assert_int_equal(l.node_rank, 0);
	assert_int_equal(l.local_rank, 0);
	assert_int_equal(l.run_id, 0);
	/* options after the job id too */
	assert_int_equal(cli_logs_parse(ARGC("logs", "12", "-f", "--node-rank", "3", "--local-rank=2",
					     "--stderr", "--run", "40"),
					ARGV("logs", "12", "-f", "--node-rank", "3", "--local-rank=2",
					     "--stderr", "--run", "40"), &l, &err), 0);
	assert_true(l.follow);
	assert_true(l.err_stream);
	assert_int_equal(l.node_rank, 3);
	assert_int_equal(l.local_rank, 2);
	assert_int_equal(l.run_id, 40);
	assert_int_equal(cli_logs_parse(ARGC("logs", "-h"), ARGV("logs", "-h"), &l, &err), 1);
	assert_int_equal(cli_logs_parse(ARGC("logs"), ARGV("logs"), &l, &err), MU_EINVAL);
	assert_int_equal(cli_logs_parse(ARGC("logs", "x"), ARGV("logs", "x"), &l, &err), MU_EINVAL);
	assert_int_equal(cli_logs_parse(ARGC("logs", "1", "2"), ARGV("logs", "1", "2"), &l, &err), MU_EINVAL);
	assert_int_equal(cli_logs_parse(ARGC("logs", "1", "--local-rank", "-1"),
					ARGV("logs", "1", "--local-rank", "-1"), &l, &err), MU_ERANGE);
	assert_int_equal(cli_logs_parse(ARGC("logs", "1", "--tail"), ARGV("logs", "1", "--tail"), &l, &err),
			 MU_EINVAL);
}

static void queue_args(void **state)
{
	struct cli_queue q = { 0 };
	struct mu_error err;
	(void)state;

	assert_int_equal(cli_queue_parse(1, ARGV("queue"), &q, &err), 0);
	assert_string_equal(q.states, "PENDING,STARTING,RUNNING");
	cli_queue_release(&q);

	memset(&q, 0, sizeof(q));
	assert_int_equal(cli_queue_parse(ARGC("queue", "-t", "all", "-A", "ml", "-u", "bob", "--label",
					      "a=b", "--label", "c=d", "--json"),
					 ARGV("queue", "-t", "all", "-A", "ml", "-u", "bob", "--label",
					      "a=b", "--label", "c=d", "--json"),
					 &q, &err),
			 0);
	assert_null(q.states);
	assert_string_equal(q.tenant, "ml");
	assert_string_equal(q.user, "bob");
	assert_int_equal(json_array_size(q.labels), 2);
	assert_string_equal(json_string_value(json_array_get(q.labels, 1)), "c=d");
	assert_true(q.g.json);
	cli_queue_release(&q);

	memset(&q, 0, sizeof(q));
	assert_int_equal(cli_queue_parse(ARGC("queue", "--state=PD", "--state", "R"),
					 ARGV("queue", "--state=PD", "--state", "R"), &q, &err),
			 0);
	assert_string_equal(q.states, "PENDING,RUNNING");
	cli_queue_release(&q);

	memset(&q, 0, sizeof(q));
	assert_int_equal(cli_queue_parse(2, ARGV("queue", "-h"), &q, &err), 1);
	cli_queue_release(&q);

	memset(&q, 0, sizeof(q));
	assert_int_equal(cli_queue_parse(2, ARGV("queue", "extra"), &q, &err), MU_EINVAL);
	cli_queue_release(&q);
	memset(&q, 0, sizeof(q));
	assert_int_equal(cli_queue_parse(3, ARGV("queue", "--label", "novalue"), &q, &err), MU_EINVAL);
	cli_queue_release(&q);
}

static void job_ids(void **state)
{
	static const char *const bad[] = { "", "0", "-1", "1a", " 1", "1.0", "+3",
					   "99999999999999999999" };
	struct mu_error err;
	int64_t id;
	(void)state;

	assert_int_equal(cli_parse_job_id("42", &id, &err), 0);
	assert_int_equal(id, 42);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (cli_parse_job_id(bad[i], &id, &err) >= 0)
			fail_msg("job id '%s' was accepted", bad[i]);
}

static char *write_tmp(const char *text)
{
	char *path = mu_strdup("/tmp/mu-cli-conf-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void config_file(void **state)
{
	struct cli_conf conf = { 0 };
	struct mu_error err;
	char *good = write_tmp("# muster\n\n  url = http://file:1/  \ntoken = \"mst_file\"\n");
	char *bad = write_tmp("url = x\nfoo = bar\n");
	char *noeq = write_tmp("url http://x\n");
	(void)state;

	assert_int_equal(cli_conf_read_file(good, 1, &conf, &err), 0);
	assert_string_equal(conf.url, "http://file:1/");
	assert_string_equal(conf.token, "mst_file");
	cli_conf_release(&conf);
	assert_int_equal(cli_conf_read_file(bad, 1, &conf, &err), MU_EPARSE);
	assert_non_null(strstr(err.msg, ":2: unknown key 'foo'"));
	cli_conf_release(&conf);
	assert_int_equal(cli_conf_read_file(noeq, 1, &conf, &err), MU_EPARSE);
	cli_conf_release(&conf);
	assert_int_equal(cli_conf_read_file("/nonexistent/muster", 0, &conf, &err), 0);
	assert_int_equal(cli_conf_read_file("/nonexistent/muster", 1, &conf, &err), MU_EIO);

	/* Precedence: flag > env > file > default. */
	setenv("MUSTER_CONFIG", good, 1);
	unsetenv("MUSTER_URL");
	unsetenv("MUSTER_TOKEN");
	assert_int_equal(cli_conf_resolve(NULL, NULL, &conf, &err), 0);
	assert_string_equal(conf.url, "http://file:1/");
	assert_string_equal(conf.token, "mst_file");
	cli_conf_release(&conf);
	setenv("MUSTER_URL", "http://env:2", 1);
	setenv("MUSTER_TOKEN", "mst_env", 1);
	assert_int_equal(cli_conf_resolve(NULL, NULL, &conf, &err), 0);
	assert_string_equal(conf.url, "http://env:2");
	assert_string_equal(conf.token, "mst_env");
	cli_conf_release(&conf);
	assert_int_equal(cli_conf_resolve("http://flag:3", "mst_flag", &conf, &err), 0);
	assert_string_equal(conf.url, "http://flag:3");
	assert_string_equal(conf.token, "mst_flag");
	cli_conf_release(&conf);
	/* Flags and env complete: a broken config file is not even read. */
	setenv("MUSTER_CONFIG", bad, 1);
	assert_int_equal(cli_conf_resolve(NULL, NULL, &conf, &err), 0);
	cli_conf_release(&conf);
	unsetenv("MUSTER_TOKEN");
	assert_int_equal(cli_conf_resolve(NULL, NULL, &conf, &err), MU_EPARSE);
	cli_conf_release(&conf);
	setenv("MUSTER_CONFIG", "/nonexistent/muster", 1);
	assert_int_equal(cli_conf_resolve(NULL, NULL, &conf, &err), MU_EIO);
	cli_conf_release(&conf);
	unsetenv("MUSTER_CONFIG");
	unsetenv("MUSTER_URL");
	setenv("HOME", "/nonexistent", 1);
	assert_int_equal(cli_conf_resolve(NULL, NULL, &conf, &err), 0);
	assert_string_equal(conf.url, CLI_DEFAULT_URL);
	assert_null(conf.token);
	cli_conf_release(&conf);

	unlink(good);
	unlink(bad);
	unlink(noeq);
	mu_free(good);
	mu_free(bad);
	mu_free(noeq);
}

static void output(void **state)
{
	static const char *const hdr[] = { "A", "LONGER", "C" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct cli_table *t = cli_table_new(3, hdr);
	json_t *v = json_pack("{s:[i,s], s:{s:s}, s:n, s:b}", "a", 1, "x", "o", "k", "v", "n", "t", 1);
	char *s;
	(void)state;

	cli_table_add(t, (const char *const[]){ "1", "x", "last" });
	cli_table_add(t, (const char *const[]){ "wide\tcell", NULL, "z" });
	cli_table_print(t, f);
	cli_table_free(t);
	fclose(f);
	assert_string_equal(buf, "A          LONGER  C\n"
				 "1          x       last\n"
				 "wide cell          z\n");
	free(buf);

	s = cli_value_text(json_object_get(v, "a"));
	assert_string_equal(s, "1,x");
	mu_free(s);
	s = cli_value_text(json_object_get(v, "o"));
	assert_string_equal(s, "k=v");
	mu_free(s);
	s = cli_value_text(json_object_get(v, "n"));
	assert_string_equal(s, "");
	mu_free(s);
	s = cli_value_text(json_object_get(v, "t"));
	assert_string_equal(s, "yes");
	mu_free(s);
	json_decref(v);

	assert_int_equal(cli_exit_for(MU_ENOTFOUND), CLI_EXIT_NOTFOUND);
	assert_int_equal(cli_exit_for(MU_EUNAUTH), CLI_EXIT_AUTH);
	assert_int_equal(cli_exit_for(MU_EFORBIDDEN), CLI_EXIT_AUTH);
	assert_int_equal(cli_exit_for(MU_EUNAVAIL), CLI_EXIT_UNAVAIL);
	assert_int_equal(cli_exit_for(MU_EINVAL), CLI_EXIT_ERROR);
	assert_int_equal(cli_exit_for(MU_ESTATE), CLI_EXIT_ERROR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dependency_syntax), cmocka_unit_test(labels_and_env),
		cmocka_unit_test(time_forms),        cmocka_unit_test(states),
		cmocka_unit_test(submit_full),       cmocka_unit_test(submit_bad),
		cmocka_unit_test(queue_args), cmocka_unit_test(logs_args),        cmocka_unit_test(job_ids),
		cmocka_unit_test(config_file),       cmocka_unit_test(output),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
