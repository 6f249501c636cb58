/* muster's srun for batch scripts: its option table and parser, the step
 * it plans in a job (agent/srun/srun_opts.c), and the agent's reading of
 * the API's script runner (ag_script_mode, ag_script_env). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "agent.h"
#include "alloc.h"
#include "codec_script.h"
#include "srun_opts.h"

static int parse(struct srun_opts *o, char *err, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = "srun";
	va_start(ap, err);
	for (char *a; (a = va_arg(ap, char *)) != NULL && argc < 31;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	return srun_opts_parse(o, argc, argv, err, 256);
}

static void forms(void **state)
{
	struct srun_opts o;
	char err[256];
	(void)state;

	/* --opt=value, --opt value, -x value, -xvalue; CMD and its own options */
	assert_int_equal(parse(&o, err, "--ntasks-per-node=2", "-N", "3", "-n6", "--export", "ALL,A=1",
			       "python", "-u", "train.py", NULL), 0);
	assert_int_equal(o.ntasks_per_node, 2);
	assert_int_equal(o.nodes, 3);
	assert_int_equal(o.nodes_max, 3);
	assert_int_equal(o.ntasks, 6);
	assert_string_equal(o.export, "ALL,A=1");
	assert_int_equal(o.argi, 7); /* "python": srun stops at the first non-option */
	assert_false(o.label);
	/* bundled flags, a value at the end of a bundle, an optional value */
	assert_int_equal(parse(&o, err, "-lun4", "-K", "-K1", "--kill-on-bad-exit=0", "hostname", NULL), 0);
	assert_true(o.label);
	assert_int_equal(o.ntasks, 4);
	assert_int_equal(o.argi, 5);
	/* -N MIN-MAX, a unique prefix of a long name, "--" before CMD */
	assert_int_equal(parse(&o, err, "-N", "1-2", "--ntasks-per-n=1", "--", "-weird", NULL), 0);
	assert_int_equal(o.nodes, 1);
	assert_int_equal(o.nodes_max, 2);
	assert_int_equal(o.ntasks_per_node, 1);
	assert_int_equal(o.argi, 5);
	/* the ones without a meaning here: silently, or one warning line */
	assert_int_equal(parse(&o, err, "--mpi=pmix", "--cpu-bind=cores", "--gpu-bind", "closest",
			       "--hint=nomultithread", "-m", "block:cyclic", "--overlap", "--exclusive",
			       "--mem=0", "--mem-per-gpu", "10G", "-c", "8", "--gpus-per-task=1",
			       "-G", "2", "--time=10", "-J", "x", "--wait=0", "--quit-on-interrupt",
			       "-u", "--unbuffered", "a.out", NULL), 0);
	assert_string_equal(o.warn, "");
	assert_int_equal(parse(&o, err, "-o", "x.out", "--error=y.err", "true", NULL), 0);
	assert_non_null(strstr(o.warn, "muster: srun: warning: -o/--output: output goes to the job's"));
	assert_non_null(strstr(o.warn, "--error"));
	assert_int_equal(o.argi, 4);
	/* no CMD: argi = argc, for srun.c's usage error */
	assert_int_equal(parse(&o, err, "-n", "1", NULL), 0);
	assert_int_equal(o.argi, 3);
	assert_int_equal(parse(&o, err, "--help", NULL), 0);
	assert_true(o.help);
}

static void errors(void **state)
{
	struct srun_opts o;
	char err[256];
	(void)state;

	assert_int_equal(parse(&o, err, "--frobnicate", "x", NULL), MU_EINVAL);
	assert_string_equal(err, "unrecognized option '--frobnicate'");
	assert_int_equal(parse(&o, err, "-lz", "x", NULL), MU_EINVAL);
	assert_string_equal(err, "invalid option -- 'z'");
	assert_int_equal(parse(&o, err, "--ntasks", NULL), MU_EINVAL);
	assert_string_equal(err, "option '--ntasks' requires an argument");
	assert_int_equal(parse(&o, err, "-n", NULL), MU_EINVAL);
	assert_int_equal(parse(&o, err, "--label=1", "x", NULL), MU_EINVAL);
	assert_int_equal(parse(&o, err, "-n", "0", "x", NULL), MU_EINVAL);
	assert_int_equal(parse(&o, err, "-N", "two", "x", NULL), MU_EINVAL);
	assert_int_equal(parse(&o, err, "-N", "3-2", "x", NULL), MU_EINVAL);
	assert_int_equal(parse(&o, err, "--ntasks-per-node=-1", "x", NULL), MU_EINVAL);
	assert_int_equal(parse(&o, err, "--mem", "x", NULL), 0); /* takes "x" as its value */
	assert_int_equal(o.argi, 3);
	assert_int_equal(parse(&o, err, "--gpus-per", "1", "x", NULL), MU_EINVAL); /* ambiguous */
	assert_non_null(strstr(err, "ambiguous option '--gpus-per'"));
	assert_int_equal(parse(&o, err, "--multi-prog", "conf", NULL), MU_EINVAL);
}

/* The step of `args` seen from (node, local) of a nodes x ppn job. */
static int plan(struct srun_step *st, char *err, int nodes, int ppn, int node, int local, ...)
{
	char *argv[16];
	int argc = 0;
	struct srun_opts o;
	struct srun_job j = { .nnodes = nodes, .ppn = ppn, .node_id = node, .local_id = local };
	va_list ap;

	argv[argc++] = "srun";
	va_start(ap, local);
	for (char *a; (a = va_arg(ap, char *)) != NULL && argc < 14;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc++] = "cmd";
	argv[argc] = NULL;
	assert_int_equal(srun_opts_parse(&o, argc, argv, err, 256), 0);
	return srun_step_plan(&o, &j, st, err, 256);
}

static void steps(void **state)
{
	struct srun_step st;
	char err[256];
	int ran = 0;
	(void)state;

	/* no options: the job's every task, numbered as the job */
	assert_int_equal(plan(&st, err, 2, 4, 1, 2, NULL), 0);
	assert_true(st.runs);
	assert_int_equal(st.procid, 6);
	assert_int_equal(st.ntasks, 8);
	assert_string_equal(st.tasks_per_node, "4(x2)");
	/* --ntasks-per-node=1: local rank 0 of each node, renumbered */
	assert_int_equal(plan(&st, err, 2, 4, 1, 0, "--ntasks-per-node=1", NULL), 0);
	assert_true(st.runs);
	assert_int_equal(st.procid, 1);
	assert_int_equal(st.ntasks, 2);
	assert_int_equal(st.tasks_on_node, 1);
	assert_int_equal(plan(&st, err, 2, 4, 1, 1, "--ntasks-per-node=1", NULL), 0);
	assert_false(st.runs);
	/* -N 1: node 0 only */
	assert_int_equal(plan(&st, err, 3, 2, 1, 0, "-N", "1", NULL), 0);
	assert_false(st.runs);
	assert_int_equal(plan(&st, err, 3, 2, 0, 1, "-N1", NULL), 0);
	assert_true(st.runs);
	assert_int_equal(st.ntasks, 2);
	/* -n 5 over 2 nodes x 4: 3 + 2, each process once at most */
	for (int node = 0; node < 2; node++)
		for (int l = 0; l < 4; l++) {
			assert_int_equal(plan(&st, err, 2, 4, node, l, "-n", "5", NULL), 0);
			assert_int_equal(st.ntasks, 5);
			assert_string_equal(st.tasks_per_node, "3,2");
			if (st.runs)
				assert_int_equal(st.procid, node * 3 + l);
			ran += st.runs;
		}
	assert_int_equal(ran, 5);
	/* -n 1: one task, whatever -N says */
	assert_int_equal(plan(&st, err, 2, 4, 0, 0, "-N", "2", "-n", "1", NULL), 0);
	assert_int_equal(st.ntasks, 1);
	assert_int_equal(st.nnodes, 1);
	/* more than the job has: errors that say so */
	assert_int_equal(plan(&st, err, 2, 4, 0, 0, "-n", "16", NULL), MU_EINVAL);
	assert_string_equal(err, "-n 16 asks for more tasks than the job has (2 nodes x 4 tasks per "
				 "node = 8)");
	assert_int_equal(plan(&st, err, 2, 4, 0, 0, "-N", "3", NULL), MU_EINVAL);
	assert_non_null(strstr(err, "-N 3 asks for more nodes than the job has (2)"));
	assert_int_equal(plan(&st, err, 2, 4, 0, 0, "--ntasks-per-node=8", NULL), MU_EINVAL);
	assert_int_equal(plan(&st, err, 2, 4, 0, 0, "--ntasks-per-node=1", "-n", "3", NULL), MU_EINVAL);
	/* -N 1-4 in a 2-node job: as many as it has */
	assert_int_equal(plan(&st, err, 2, 1, 1, 0, "-N", "1-4", NULL), 0);
	assert_true(st.runs);
	assert_int_equal(st.nnodes, 2);
}

static char **script_argv(bool batch_host)
{
	json_t *body = json_pack("{s:s, s:b}", "script", "#!/bin/sh\nsrun hostname\n", "batch_host",
				 batch_host);
	struct mu_error err = { 0 };
	json_t *cmd;
	char **argv;

	assert_int_equal(codec_script_apply(body, "", &err), 0);
	cmd = json_object_get(body, "command");
	argv = mu_calloc(json_array_size(cmd) + 1, sizeof(char *));
	for (size_t i = 0; i < json_array_size(cmd); i++)
		argv[i] = mu_strdup(json_string_value(json_array_get(cmd, i)));
	json_decref(body);
	return argv;
}

static const char *env_get(char **env, const char *name)
{
	size_t n = strlen(name);

	for (char **e = env; *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* The agent knows a script job, and its mode, by the API's own runner. */
static void agent_mode(void **state)
{
	struct ag_spec s = { 0 };
	char *plain[] = { "/bin/sh", "-c", "echo hi", "x", "y", NULL };
	(void)state;

	s.argv = script_argv(false);
	assert_int_equal(ag_script_mode(s.argv), AG_SCRIPT_TASKS);
	char **env = mu_calloc(3, sizeof(char *));
	env[0] = mu_strdup("PATH=/usr/bin:/bin");
	env[1] = mu_strdup("A=1");
	env = ag_script_env(env, &s, "/opt/muster/libexec/muster/bin");
	assert_string_equal(env_get(env, "PATH"), "/opt/muster/libexec/muster/bin:/usr/bin:/bin");
	assert_string_equal(env_get(env, "MUSTER_SCRIPT_MODE"), "tasks");
	assert_string_equal(env_get(env, "A"), "1");
	ag_env_free(env);
	ag_spec_free(&s);

	s.argv = script_argv(true);
	assert_int_equal(ag_script_mode(s.argv), AG_SCRIPT_BATCH_HOST);
	env = mu_calloc(1, sizeof(char *));
	env = ag_script_env(env, &s, NULL);
	assert_string_equal(env_get(env, "MUSTER_SCRIPT_MODE"), "batch-host");
	assert_null(env_get(env, "PATH"));
	ag_env_free(env);
	ag_spec_free(&s);

	/* any other command: nothing changes */
	assert_int_equal(ag_script_mode(plain), AG_SCRIPT_NONE);
	s.argv = plain;
	env = mu_calloc(2, sizeof(char *));
	env[0] = mu_strdup("PATH=/bin");
	env = ag_script_env(env, &s, "/x");
	assert_string_equal(env_get(env, "PATH"), "/bin");
	assert_null(env_get(env, "MUSTER_SCRIPT_MODE"));
	ag_env_free(env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(forms),
		cmocka_unit_test(errors),
		cmocka_unit_test(steps),
		cmocka_unit_test(agent_mode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
