/*
 * muster-agent core: launch environment, hostfile, real children (env
 * dumps, exit codes, TERM/grace/KILL, time limit), reconciler decisions,
 * fake-GPU fault lines, the state file across an agent "restart", and the
 * node credential file's rules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "alloc.h"

static char tmpdir[256];
static struct ag_node node; /* runs as the test's own account, no cgroups */

static void node_init(struct ag_node *n, const char *dir)
{
	memset(n, 0, sizeof(*n));
	n->state_dir = dir;
	n->name = "test-node";
	assert_int_equal(ag_runas_policy_init(&n->runas, 1000, true, true), 0);
}

static int setup_dir(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/mu-agent-test.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	node_init(&node, tmpdir);
	return 0;
}

static int teardown_dir(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static char **strv(const char *a, const char *b, const char *c)
{
	char **v = mu_calloc(4, sizeof(char *));
	int n = 0;
	if (a)
		v[n++] = mu_strdup(a);
	if (b)
		v[n++] = mu_strdup(b);
	if (c)
		v[n++] = mu_strdup(c);
	return v;
}

/* 2 nodes x 4 GPUs, `ppn` processes per node, this node rank 1 */
static void make_spec(struct ag_spec *s, int64_t run_id, char **argv, int ppn)
{
	memset(s, 0, sizeof(*s));
	s->run_id = run_id;
	s->job_id = 77;
	s->attempt = 1;
	s->job_name = mu_strdup("t");
	s->argv = argv;
	s->env = strv("JOBVAR=hello", "RANK=999", NULL);
	s->workdir = mu_strdup("/tmp");
	s->procs_per_node = ppn;
	s->gpus_per_node = 4;
	s->node_rank = 1;
	s->ngpu_indices = 4;
	s->gpu_indices = mu_calloc(4, sizeof(int));
	for (int i = 0; i < 4; i++)
		s->gpu_indices[i] = 4 + i;
	s->nnodes = 2;
	s->nodes = mu_calloc(2, sizeof(*s->nodes));
	s->nodes[0].name = mu_strdup("gpu-a");
	s->nodes[0].address = mu_strdup("10.0.0.1");
	s->nodes[0].gpus = 4;
	s->nodes[1].name = mu_strdup("gpu-b");
	s->nodes[1].address = mu_strdup("10.0.0.2");
	s->nodes[1].gpus = 4;
	s->master_addr = mu_strdup("");
	s->master_port = 0;
	s->grace_period_s = 1;
}

static const char *env_get(char **env, const char *name)
{
	size_t n = strlen(name);
	const char *found = NULL;
	for (char **e = env; *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') {
			assert_null(found); /* each name once */
			found = *e + n + 1;
		}
	return found;
}

static void launch_env_contract(void **state)
{
	(void)state;
	struct ag_spec s;
	make_spec(&s, 12345, strv("true", NULL, NULL), 4);
	char *base[] = { "PATH=/usr/bin:/bin", "MUSTER_AGENT_TOKEN=secret", "MUSTER_URL=x",
			 "HOME=/root", NULL };
	char **env = ag_launch_env(&s, 2, "/tmp/hf", base, NULL);
	assert_string_equal(env_get(env, "PATH"), "/usr/bin:/bin");
	assert_null(env_get(env, "MUSTER_AGENT_TOKEN")); /* the token never leaks */
	assert_null(env_get(env, "MUSTER_URL"));
	assert_string_equal(env_get(env, "JOBVAR"), "hello");
	assert_string_equal(env_get(env, "MUSTER_JOB_ID"), "77");
	assert_string_equal(env_get(env, "MUSTER_RUN_ID"), "12345");
	assert_string_equal(env_get(env, "NNODES"), "2");
	assert_string_equal(env_get(env, "NODE_RANK"), "1");
	assert_string_equal(env_get(env, "GPUS_PER_NODE"), "4");
	assert_string_equal(env_get(env, "MASTER_ADDR"), "10.0.0.1"); /* rank-0 node */
	assert_string_equal(env_get(env, "MASTER_PORT"), "22345");    /* 20000 + id % 10000 */
	assert_string_equal(env_get(env, "WORLD_SIZE"), "8");
	assert_string_equal(env_get(env, "RANK"), "6"); /* the contract wins over the job's env */
	assert_string_equal(env_get(env, "LOCAL_RANK"), "2");
	assert_string_equal(env_get(env, "LOCAL_WORLD_SIZE"), "4");
	assert_string_equal(env_get(env, "CUDA_VISIBLE_DEVICES"), "4,5,6,7");
	assert_string_equal(env_get(env, "SLURM_JOB_ID"), "77");
	assert_string_equal(env_get(env, "SLURM_JOB_NODELIST"), "gpu-a,gpu-b");
	assert_string_equal(env_get(env, "SLURM_NNODES"), "2");
	assert_string_equal(env_get(env, "SLURM_NODEID"), "1");
	assert_string_equal(env_get(env, "SLURM_PROCID"), "6");
	assert_string_equal(env_get(env, "SLURM_LOCALID"), "2");
	assert_string_equal(env_get(env, "SLURM_NTASKS"), "8");
	assert_string_equal(env_get(env, "MUSTER_HOSTFILE"), "/tmp/hf");
	ag_env_free(env);
	/* an explicit master from the scheduler wins */
	mu_free(s.master_addr);
	s.master_addr = mu_strdup("10.9.9.9");
	s.master_port = 29500;
	env = ag_launch_env(&s, 0, NULL, NULL, NULL);
	assert_string_equal(env_get(env, "MASTER_ADDR"), "10.9.9.9");
	assert_string_equal(env_get(env, "MASTER_PORT"), "29500");
	assert_string_equal(env_get(env, "RANK"), "4");
	assert_null(env_get(env, "MUSTER_HOSTFILE"));
	ag_env_free(env);
	ag_spec_free(&s);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = mu_calloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void hostfile_format(void **state)
{
	(void)state;
	struct ag_spec s;
	char path[300];
	make_spec(&s, 1, strv("true", NULL, NULL), 1);
	s.nodes[1].gpus = 2;
	mu_free(s.nodes[1].address);
	s.nodes[1].address = mu_strdup(""); /* no address: the name */
	snprintf(path, sizeof(path), "%s/hf", tmpdir);
	assert_int_equal(ag_write_hostfile(&s, path), 0);
	char *text = slurp(path);
	assert_string_equal(text, "10.0.0.1 slots=4\ngpu-b slots=2\n");
	mu_free(text);
	ag_spec_free(&s);
}

/* An elastic run that shrank: the hostfile is rewritten only when the
 * membership differs, and then lists the kept nodes alone. */
static void hostfile_update_on_shrink(void **state)
{
	(void)state;
	struct ag_spec s;
	char path[300];
	bool changed = true;
	make_spec(&s, 1, strv("true", NULL, NULL), 1);
	snprintf(path, sizeof(path), "%s/hf-shrink", tmpdir);
	assert_int_equal(ag_write_hostfile(&s, path), 0);
	assert_int_equal(ag_update_hostfile(&s, path, &changed), 0);
	assert_false(changed);
	/* node 0 lost: only the second remains */
	struct ag_gang_node first = s.nodes[0];
	s.nodes[0] = s.nodes[1];
	s.nnodes = 1;
	assert_int_equal(ag_update_hostfile(&s, path, &changed), 0);
	assert_true(changed);
	char *text = slurp(path);
	assert_string_equal(text, "10.0.0.2 slots=4\n");
	mu_free(text);
	assert_int_equal(ag_update_hostfile(&s, path, &changed), 0);
	assert_false(changed);
	s.nodes[0] = first; /* each node freed once */
	s.nnodes = 2;
	ag_spec_free(&s);
}

static void wait_done(struct ag_run *r, double timeout)
{
	double end = ag_now() + timeout;
	while (ag_now() < end) {
		ag_reap(r, 1);
		if (ag_run_poll(r) || r->state == AG_RUN_DONE)
			return;
		usleep(20000);
	}
	fail_msg("run %lld not done after %.1fs", (long long)r->run_id, timeout);
}

static void real_children_env_and_exit(void **state)
{
	(void)state;
	struct ag_spec s;
	struct ag_run r;
	char path[400];
	setenv("MUSTER_AGENT_TOKEN", "secret", 1);
	int leak = dup2(0, 100); /* not CLOEXEC: must not reach the job */
	assert_int_equal(leak, 100);
	make_spec(&s, 501,
		  strv("/bin/sh", "-c", "env > env.$LOCAL_RANK; echo out$LOCAL_RANK; echo err >&2; "
					"ls /proc/self/fd > fds.$LOCAL_RANK; "
					"[ $LOCAL_RANK = 1 ] && exit 3; exit 0"),
		  2);
	mu_free(s.workdir);
	s.workdir = mu_malloc(400);
	snprintf(s.workdir, 400, "%s/runs/501", tmpdir);
	assert_int_equal(ag_run_start(&r, &s, &node), 0);
	assert_true(r.pgid > 0);
	assert_int_equal(getpgid(r.pids[1]), r.pgid); /* one group for the run */
	assert_int_not_equal(r.pgid, getpgrp());
	wait_done(&r, 10);
	close(leak);
	assert_int_equal(r.exit_code, 3); /* first non-zero */
	assert_int_equal(r.exit_signal, 0);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/runs/501/env.%d", tmpdir, i);
		char *env = slurp(path);
		assert_non_null(env);
		char want[400];
		snprintf(want, sizeof(want), "\nRANK=%d\n", 2 + i);
		assert_non_null(strstr(env, want));
		assert_non_null(strstr(env, "\nCUDA_VISIBLE_DEVICES=4,5,6,7\n"));
		assert_non_null(strstr(env, "\nWORLD_SIZE=4\n"));
		snprintf(want, sizeof(want), "\nMUSTER_HOSTFILE=%s/runs/501/hostfile\n", tmpdir);
		assert_non_null(strstr(env, want));
		assert_null(strstr(env, "MUSTER_AGENT_TOKEN"));
		mu_free(env);
		snprintf(path, sizeof(path), "%s/runs/501/fds.%d", tmpdir, i);
		char *fds = slurp(path);
		assert_non_null(fds);
		char leakname[32];
		snprintf(leakname, sizeof(leakname), "\n%d\n", leak);
		assert_null(strstr(fds, leakname)); /* 0,1,2 and ls's own directory fd only */
		mu_free(fds);
		snprintf(path, sizeof(path), "%s/runs/501/proc%d.out", tmpdir, i);
		char *out = slurp(path);
		assert_non_null(out);
		snprintf(want, sizeof(want), "out%d\n", i);
		assert_string_equal(out, want);
		mu_free(out);
		snprintf(path, sizeof(path), "%s/runs/501/proc%d.err", tmpdir, i);
		out = slurp(path);
		assert_string_equal(out, "err\n");
		mu_free(out);
	}
	ag_spec_free(&s);
	/* a command that cannot be executed: exit 127 */
	make_spec(&s, 502, strv("/nonexistent/prog", NULL, NULL), 1);
	assert_int_equal(ag_run_start(&r, &s, &node), 0);
	wait_done(&r, 10);
	assert_int_equal(r.exit_code, 127);
	ag_spec_free(&s);
}

static void stop_term_grace_kill(void **state)
{
	(void)state;
	struct ag_spec s;
	struct ag_run r;
	/* TERM ends it within the grace */
	make_spec(&s, 601, strv("/bin/sleep", "30", NULL), 2);
	assert_int_equal(ag_run_start(&r, &s, &node), 0);
	usleep(100000);
	double t0 = ag_now();
	ag_run_stop(&r, 8, "cancel");
	wait_done(&r, 10);
	assert_true(ag_now() - t0 < 7.5); /* before the grace ran out (signal says so too) */
	assert_int_equal(r.exit_signal, SIGTERM);
	ag_spec_free(&s);
	/* TERM ignored: KILL after the grace */
	make_spec(&s, 602, strv("/bin/sh", "-c", "trap '' TERM; sleep 30 & wait; sleep 30"), 1);
	assert_int_equal(ag_run_start(&r, &s, &node), 0);
	usleep(200000);
	t0 = ag_now();
	ag_run_stop(&r, 1, "preempt");
	wait_done(&r, 10);
	double took = ag_now() - t0;
	assert_true(took >= 0.9 && took < 8); /* not before the grace; loaded CI machines are slow */
	assert_int_equal(r.exit_signal, SIGKILL);
	assert_int_equal(kill(-r.pgid, 0), -1); /* nothing of the group left */
	ag_spec_free(&s);
	/* the time-limit backstop */
	make_spec(&s, 603, strv("/bin/sleep", "30", NULL), 1);
	s.time_limit_s = 1;
	assert_int_equal(ag_run_start(&r, &s, &node), 0);
	wait_done(&r, 10);
	assert_int_equal(r.exit_signal, SIGTERM);
	assert_string_equal(r.message, "time limit reached");
	ag_spec_free(&s);
}

static void reconcile_decisions(void **state)
{
	(void)state;
	struct ag_run runs[4];
	struct ag_action act[16];
	memset(runs, 0, sizeof(runs));
	runs[0] = (struct ag_run){ .run_id = 1, .state = AG_RUN_LIVE, .told_running = true };
	runs[1] = (struct ag_run){ .run_id = 2, .state = AG_RUN_LIVE };
	runs[2] = (struct ag_run){ .run_id = 3, .state = AG_RUN_DONE };
	runs[3] = (struct ag_run){ .run_id = 4, .state = AG_RUN_LIVE, .told_running = true };
	struct ag_desired want[] = {
		{ 1, false }, /* running, told: nothing */
		{ 2, false }, /* running, not told on this stream: report RUNNING */
		{ 3, false }, /* ended here: never start again, report EXITED */
		{ 5, false }, /* new: start */
		{ 6, true },  /* stop before it ever started: report EXITED */
		{ 4, true },  /* stop: TERM, grace */
	};
	int n = ag_reconcile_plan(want, 6, runs, 4, false, act, 16);
	assert_int_equal(n, 5);
	assert_int_equal(act[0].kind, AG_ACT_REPORT_RUNNING);
	assert_int_equal(act[0].run_id, 2);
	assert_int_equal(act[1].kind, AG_ACT_REPORT_EXIT);
	assert_int_equal(act[1].run_id, 3);
	assert_int_equal(act[1].actual, 2);
	assert_int_equal(act[2].kind, AG_ACT_START);
	assert_int_equal(act[2].run_id, 5);
	assert_int_equal(act[2].desired, 3);
	assert_int_equal(act[3].kind, AG_ACT_REPORT_EXIT);
	assert_int_equal(act[3].run_id, 6);
	assert_int_equal(act[3].actual, -1);
	assert_int_equal(act[4].kind, AG_ACT_STOP);
	assert_int_equal(act[4].run_id, 4);
	/* nothing desired: every live run is killed, the ended one left alone */
	n = ag_reconcile_plan(NULL, 0, runs, 4, false, act, 16);
	assert_int_equal(n, 3);
	for (int i = 0; i < n; i++)
		assert_int_equal(act[i].kind, AG_ACT_KILL);
	assert_int_equal(act[0].run_id, 1);
	assert_int_equal(act[1].run_id, 2);
	assert_int_equal(act[2].run_id, 4);
	/* drained: start nothing new */
	struct ag_desired one[] = { { 9, false } };
	assert_int_equal(ag_reconcile_plan(one, 1, runs, 0, true, act, 16), 0);
	assert_int_equal(ag_reconcile_plan(one, 1, runs, 0, false, act, 16), 1);
	/* a stopping run listed with stop again: no second TERM */
	runs[3].state = AG_RUN_STOPPING;
	struct ag_desired stop4[] = { { 4, true } };
	assert_int_equal(ag_reconcile_plan(stop4, 1, &runs[3], 1, false, act, 16), 0);
	/* max respected */
	assert_int_equal(ag_reconcile_plan(want, 6, runs, 4, false, act, 2), 2);
}

static void fault_lines(void **state)
{
	(void)state;
	int gpu, xid;
	assert_int_equal(ag_fault_parse_line("gpu 3 xid 79", &gpu, &xid), 0);
	assert_int_equal(gpu, 3);
	assert_int_equal(xid, 79);
	assert_int_equal(ag_fault_parse_line("  GPU 1 healthy ", &gpu, &xid), 0);
	assert_int_equal(gpu, 1);
	assert_int_equal(xid, 0);
	static const char *const bad[] = { "", "# gpu 1 xid 79", "gpu", "gpu 1", "gpu x xid 79",
					   "gpu -1 xid 79", "gpu 1 xid", "gpu 1 xid 0", "gpu 1 xid 7x",
					   "gpu 1 xid 79 80", "gpu 1 healthy now", "cpu 1 xid 79",
					   "gpu 1 sick", "gpu 99 xid 79" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ag_fault_parse_line(bad[i], &gpu, &xid), MU_EINVAL);

	/* the fake backend applies each line of the file once, as it grows */
	struct ag_gpus g;
	char path[300];
	snprintf(path, sizeof(path), "%s/fault", tmpdir);
	unlink(path);
	assert_int_equal(ag_gpus_open_fake(&g, 4, "H100-80GB", 81920, "n1", tmpdir), 0);
	assert_int_equal(g.n, 4);
	assert_string_equal(g.gpu[2].model, "H100-80GB");
	assert_true(strncmp(g.gpu[0].uuid, "GPU-", 4) == 0);
	assert_string_not_equal(g.gpu[0].uuid, g.gpu[1].uuid);
	FILE *f = fopen(path, "w");
	fprintf(f, "gpu 2 xid 79\ngpu 1 xid 13\nnonsense\ngpu 9 xid 79\ngpu 3 xid");
	fclose(f);
	ag_gpus_poll(&g);
	assert_false(g.gpu[2].healthy); /* 79 is fatal */
	assert_int_equal(g.gpu[2].nxids, 1);
	assert_int_equal(g.gpu[2].xids[0], 79);
	assert_true(g.gpu[1].healthy); /* 13 is not */
	assert_int_equal(g.gpu[1].nxids, 1);
	assert_int_equal(g.gpu[3].nxids, 0); /* the unfinished line waits */
	g.gpu[1].nxids = g.gpu[2].nxids = 0;
	ag_gpus_poll(&g); /* nothing applied twice */
	assert_int_equal(g.gpu[2].nxids, 0);
	f = fopen(path, "a");
	fprintf(f, " 48\ngpu 2 healthy\n");
	fclose(f);
	ag_gpus_poll(&g);
	assert_false(g.gpu[3].healthy);
	assert_true(g.gpu[2].healthy);
	/* a restarted agent does not replay the old file */
	struct ag_gpus g2;
	assert_int_equal(ag_gpus_open_fake(&g2, 4, "H100-80GB", 81920, "n1", tmpdir), 0);
	ag_gpus_poll(&g2);
	assert_true(g2.gpu[3].healthy);
	assert_string_equal(g2.gpu[0].uuid, g.gpu[0].uuid); /* stable per node */
	/* links from sysfs-like files */
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/net/ib0", tmpdir);
	snprintf(path, sizeof(path), "%s/net", tmpdir);
	mkdir(path, 0755);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/net/ib0/operstate", tmpdir);
	f = fopen(path, "w");
	fprintf(f, "up\n");
	fclose(f);
	snprintf(dir, sizeof(dir), "%s/net", tmpdir);
	assert_true(ag_link_up(dir, "ib0"));
	f = fopen(path, "w");
	fprintf(f, "down\n");
	fclose(f);
	assert_false(ag_link_up(dir, "ib0"));
	assert_false(ag_link_up(dir, "ib9"));
	/* nvml without the library: a clear error, no crash */
	struct mu_error err = { 0 };
	struct ag_gpus nv;
	if (ag_gpus_open_nvml(&nv, &err) != 0) {
		assert_non_null(strstr(err.msg, "libnvidia-ml.so.1"));
	} else {
		ag_gpus_poll(&nv);
		ag_gpus_close(&nv);
	}
}

static void state_file_restart(void **state)
{
	(void)state;
	struct ag_spec s;
	struct ag_run runs[3];
	struct ag_action act[8];
	char sd[300];
	snprintf(sd, sizeof(sd), "%s/restart", tmpdir);
	mkdir(sd, 0755);
	struct ag_node snode;
	node_init(&snode, sd);
	make_spec(&s, 701, strv("/bin/sleep", "30", NULL), 2);
	assert_int_equal(ag_run_start(&runs[0], &s, &snode), 0);
	ag_spec_free(&s);
	make_spec(&s, 702, strv("/bin/sh", "-c", "exit 5"), 1);
	assert_int_equal(ag_run_start(&runs[1], &s, &snode), 0);
	ag_spec_free(&s);
	make_spec(&s, 703, strv("/bin/sleep", "30", NULL), 1);
	assert_int_equal(ag_run_start(&runs[2], &s, &snode), 0);
	ag_spec_free(&s);
	usleep(300000); /* 702 ends while "the agent is down" (not polled) */
	pid_t pg701 = runs[0].pgid, pg703 = runs[2].pgid;
	runs[2].start_time += 1; /* as if 703's group id now belonged to someone else */
	runs[0].deadline_epoch = (int64_t)time(NULL) + 100; /* the backstop comes back */
	assert_int_equal(ag_state_save(sd, runs, 3), 0);

	/* the "new agent" */
	struct ag_run *back = NULL;
	int n = 0;
	assert_int_equal(ag_state_load(sd, &snode.cg, &back, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(back[0].run_id, 701);
	assert_int_equal(back[0].state, AG_RUN_LIVE);
	assert_true(back[0].adopted);
	assert_int_equal(back[0].pgid, pg701);
	assert_true(back[0].deadline > ag_now() + 98 && back[0].deadline < ag_now() + 101);
	assert_int_equal(back[1].deadline, 0);
	assert_int_equal(back[2].pgid, 0); /* start time differs: not ours */
	ag_reap(NULL, 0); /* the test process is the keepers' parent: no zombies */
	assert_true(ag_run_poll(&back[1]));
	assert_int_equal(back[1].exit_code, 5); /* from the keeper's exit file */
	/* desired lists 701: no second start, only a RUNNING report */
	struct ag_desired want[] = { { 701, false }, { 702, false } };
	int na = ag_reconcile_plan(want, 2, back, 2, false, act, 8);
	assert_int_equal(na, 2);
	assert_int_equal(act[0].kind, AG_ACT_REPORT_RUNNING);
	assert_int_equal(act[1].kind, AG_ACT_REPORT_EXIT); /* 702 ended: told, never restarted */
	assert_false(ag_run_poll(&back[0])); /* still running */
	/* desired no longer lists 701: killed */
	na = ag_reconcile_plan(NULL, 0, back, 2, false, act, 8);
	assert_int_equal(na, 1);
	assert_int_equal(act[0].kind, AG_ACT_KILL);
	ag_run_stop(&back[0], -1, "not desired");
	double end = ag_now() + 5;
	while (ag_now() < end && !ag_run_poll(&back[0])) {
		ag_reap(NULL, 0);
		usleep(20000);
	}
	assert_int_equal(back[0].state, AG_RUN_DONE);
	assert_int_equal(back[0].exit_signal, SIGKILL);
	assert_int_equal(kill(-pg701, 0), -1);
	kill(-pg703, SIGKILL);
	usleep(50000);
	ag_reap(NULL, 0);
	mu_free(back);
	/* no state file: nothing */
	snprintf(sd, sizeof(sd), "%s/none", tmpdir);
	assert_int_equal(ag_state_load(sd, &snode.cg, &back, &n), 0);
	assert_int_equal(n, 0);
}

/* Who a job runs as: the policy's decisions, from real passwd entries. */
static void runas_policy(void **state)
{
	(void)state;
	struct ag_runas_policy p = { .min_uid = 1000, .agent_uid = 0 };
	struct ag_ident id;
	char why[256];

	snprintf(p.agent_user, sizeof(p.agent_user), "root");
	assert_int_equal(ag_runas_resolve(&p, "root", &id, why, sizeof(why)), MU_EFORBIDDEN);
	assert_non_null(strstr(why, "is root"));
	assert_int_equal(ag_runas_resolve(&p, "daemon", &id, why, sizeof(why)), MU_EFORBIDDEN);
	assert_non_null(strstr(why, "below --min-uid 1000"));
	assert_int_equal(ag_runas_resolve(&p, "no-such-user-x9", &id, why, sizeof(why)), MU_EFORBIDDEN);
	assert_non_null(strstr(why, "no Unix account no-such-user-x9"));
	assert_int_equal(ag_runas_resolve(&p, "", &id, why, sizeof(why)), MU_EFORBIDDEN);
	/* nobody (65534) is an ordinary account above the minimum */
	assert_int_equal(ag_runas_resolve(&p, "nobody", &id, why, sizeof(why)), 0);
	assert_int_equal(id.uid, 65534);
	assert_true(id.drop);
	assert_true(id.ngroups >= 1);
	assert_string_equal(id.name, "nobody");
	p.allow_root = true;
	assert_int_equal(ag_runas_resolve(&p, "root", &id, why, sizeof(why)), 0);
	assert_false(id.drop); /* root stays root: nothing to drop */
	assert_string_equal(id.home, "/root");
	/* a non-root agent: its own user only, unless single-user */
	struct ag_runas_policy q = { .min_uid = 1000, .agent_uid = 65534 };
	snprintf(q.agent_user, sizeof(q.agent_user), "nobody");
	assert_int_equal(ag_runas_resolve(&q, "root", &id, why, sizeof(why)), MU_EFORBIDDEN);
	assert_non_null(strstr(why, "not root"));
	assert_int_equal(ag_runas_resolve(&q, "nobody", &id, why, sizeof(why)), 0);
	assert_false(id.drop);
	q.single_user = true;
	assert_int_equal(ag_runas_resolve(&q, "someone-else", &id, why, sizeof(why)), 0);
	assert_int_equal(id.uid, 65534);
	/* the account's environment wins over the agent's */
	struct ag_spec s;
	make_spec(&s, 9, strv("true", NULL, NULL), 1);
	char *base[] = { "HOME=/root", "USER=root", NULL };
	char **env = ag_launch_env(&s, 0, NULL, base, &id);
	assert_string_equal(env_get(env, "HOME"), id.home);
	assert_string_equal(env_get(env, "USER"), "nobody");
	assert_string_equal(env_get(env, "LOGNAME"), "nobody");
	assert_string_equal(env_get(env, "SHELL"), id.shell);
	assert_string_equal(env_get(env, "PATH"), "/usr/local/bin:/usr/bin:/bin");
	ag_env_free(env);
	ag_spec_free(&s);
}

/* A state file names the cgroups the agent created; a name outside its
 * --cgroup-root (someone else's) is never adopted, and old lines load. */
static void state_file_cgroups(void **state)
{
	(void)state;
	char sd[300], path[400];
	struct ag_cg cg = { .mode = AG_CG_V2 };
	struct ag_run *back = NULL;
	int n = 0;
	snprintf(sd, sizeof(sd), "%s/cgstate", tmpdir);
	mkdir(sd, 0755);
	snprintf(cg.root, sizeof(cg.root), "muster");
	snprintf(cg.v2, sizeof(cg.v2), "%s/nonexistent", tmpdir);
	snprintf(path, sizeof(path), "%s/agent.state", sd);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "muster-agent-state 2\n"
		   "run2 1 10 2 0 0 1 0 9 0 muster/n1/run-1 oom /x/runs/1\n"
		   "run2 2 20 2 0 0 1 0 0 0 other/n1/run-2 - /x/runs/2\n"
		   "run2 3 30 2 0 0 1 0 0 0 muster/../etc - /x/runs/3\n"
		   "run 4 40 2 0 0 1 3 0 0 /x/runs/4\n");
	fclose(f);
	assert_int_equal(ag_state_load(sd, &cg, &back, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(back[0].cgroup, "muster/n1/run-1");
	assert_string_equal(back[0].end_reason, "oom");
	assert_string_equal(back[0].dir, "/x/runs/1");
	assert_string_equal(back[1].cgroup, ""); /* not under our root: not ours */
	assert_string_equal(back[2].cgroup, "");
	assert_string_equal(back[3].cgroup, ""); /* a state file of before cgroups */
	assert_int_equal(back[3].exit_code, 3);
	assert_string_equal(back[3].dir, "/x/runs/4");
	assert_int_equal(ag_state_save(sd, back, n), 0);
	mu_free(back);
	assert_int_equal(ag_state_load(sd, &cg, &back, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(back[0].cgroup, "muster/n1/run-1");
	assert_string_equal(back[0].end_reason, "oom");
	assert_string_equal(back[3].dir, "/x/runs/4");
	mu_free(back);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

/* The node credential file: regular, ours, 0600 or stricter; first line. */
static void token_file_rules(void **state)
{
	(void)state;
	struct mu_error err = { 0 };
	char path[400], link[400];
	snprintf(path, sizeof(path), "%s/token", tmpdir);
	snprintf(link, sizeof(link), "%s/token-link", tmpdir);

	write_file(path, "mst_good\nsecond line ignored\n", 0600);
	assert_int_equal(ag_token_load_file(path, &err), 0);
	assert_true(ag_token_loaded());
	assert_string_equal(ag_token_header(), "Bearer mst_good");
	write_file(path, "mst_ro", 0400);
	assert_int_equal(ag_token_load_file(path, &err), 0);
	assert_string_equal(ag_token_header(), "Bearer mst_ro");
	/* too open: group or other bits, or owner execute */
	mode_t bad[] = { 0644, 0640, 0604, 0700, 0660 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(path, "mst_x\n", bad[i]);
		assert_int_equal(ag_token_load_file(path, &err), MU_EINVAL);
		assert_non_null(strstr(err.msg, "0600"));
	}
	/* a symlink, a directory, an empty file, a token with a space */
	write_file(path, "mst_x\n", 0600);
	unlink(link);
	assert_int_equal(symlink(path, link), 0);
	assert_true(ag_token_load_file(link, &err) < 0);
	assert_int_equal(ag_token_load_file(tmpdir, &err), MU_EINVAL);
	write_file(path, "\n", 0600);
	assert_int_equal(ag_token_load_file(path, &err), MU_EINVAL);
	write_file(path, "mst a\n", 0600);
	assert_int_equal(ag_token_load_file(path, &err), MU_EINVAL);
	/* what a fork does first */
	ag_token_wipe();
	assert_false(ag_token_loaded());
	assert_string_equal(ag_token_header(), "");
	unlink(link);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(launch_env_contract), cmocka_unit_test(hostfile_format),
		cmocka_unit_test(hostfile_update_on_shrink),
		cmocka_unit_test(real_children_env_and_exit), cmocka_unit_test(stop_term_grace_kill),
		cmocka_unit_test(reconcile_decisions), cmocka_unit_test(fault_lines),
		cmocka_unit_test(state_file_restart), cmocka_unit_test(runas_policy),
		cmocka_unit_test(state_file_cgroups), cmocka_unit_test(token_file_rules),
	};
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
