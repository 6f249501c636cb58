/* The launch contract for the frameworks: PET_*, Slurm's names and
 * formats, the launcher modes, restart renumbering (agent/launch.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "alloc.h"
#include "launcher.h"

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

/* 4 nodes gpu-1..gpu-4 x 2 GPUs, this node rank `rank`. */
static void spec(struct ag_spec *s, int rank, int ppn)
{
	static const char *const names[] = { "gpu-1", "gpu-2", "gpu-3", "gpu-7" };
	memset(s, 0, sizeof(*s));
	s->run_id = 501;
	s->job_id = 42;
	s->job_name = mu_strdup("");
	s->argv = mu_calloc(3, sizeof(char *));
	s->argv[0] = mu_strdup("/opt/bin/train.py");
	s->argv[1] = mu_strdup("--x");
	s->env = mu_calloc(3, sizeof(char *));
	s->env[0] = mu_strdup("SLURM_NTASKS=99");
	s->env[1] = mu_strdup("PET_NNODES=7");
	s->workdir = mu_strdup("/w");
	s->procs_per_node = ppn;
	s->gpus_per_node = 2;
	s->node_rank = rank;
	s->ngpu_indices = 2;
	s->gpu_indices = mu_calloc(2, sizeof(int));
	s->gpu_indices[0] = 2;
	s->gpu_indices[1] = 3;
	s->nnodes = 4;
	s->nodes = mu_calloc(4, sizeof(*s->nodes));
	for (int i = 0; i < 4; i++) {
		char a[32];
		snprintf(a, sizeof(a), "10.0.0.%d", i + 1);
		s->nodes[i].name = mu_strdup(names[i]);
		s->nodes[i].address = mu_strdup(a);
		s->nodes[i].gpus = 2;
	}
	s->master_addr = mu_strdup("10.0.0.1");
	s->master_port = 29400;
	s->cpus_per_node = 16;
}

static void slurm_names_without_launcher(void **state)
{
	struct ag_spec s;
	char *base[] = { "PATH=/bin", "SLURM_JOB_ID=1", "PET_MASTER_ADDR=x", NULL };
	(void)state;
	spec(&s, 2, 2);
	char **env = ag_launch_env(&s, 1, "/hf", base, NULL);
	assert_string_equal(env_get(env, "SLURM_JOB_NODELIST"), "gpu-[1-3,7]");
	assert_string_equal(env_get(env, "SLURM_NODELIST"), "gpu-[1-3,7]");
	assert_string_equal(env_get(env, "SLURM_TASKS_PER_NODE"), "2(x4)");
	assert_string_equal(env_get(env, "SLURM_NTASKS_PER_NODE"), "2");
	assert_string_equal(env_get(env, "SLURM_NTASKS"), "8"); /* the contract wins over the job's env */
	assert_string_equal(env_get(env, "SLURM_PROCID"), "5");
	assert_string_equal(env_get(env, "SLURM_LOCALID"), "1");
	assert_string_equal(env_get(env, "SLURM_NODEID"), "2");
	assert_string_equal(env_get(env, "SLURMD_NODENAME"), "gpu-3");
	assert_string_equal(env_get(env, "SLURM_JOB_ID"), "42"); /* not the agent's own */
	assert_string_equal(env_get(env, "SLURM_JOB_NAME"), "train.py");
	assert_string_equal(env_get(env, "SLURM_JOB_NUM_NODES"), "4");
	assert_string_equal(env_get(env, "SLURM_GPUS_ON_NODE"), "2");
	assert_string_equal(env_get(env, "SLURM_JOB_GPUS"), "2,3");
	assert_string_equal(env_get(env, "SLURM_CPUS_ON_NODE"), "16");
	assert_string_equal(env_get(env, "SLURM_SUBMIT_DIR"), "/w");
	assert_string_equal(env_get(env, "PET_NNODES"), "4");
	assert_string_equal(env_get(env, "PET_NODE_RANK"), "2");
	assert_string_equal(env_get(env, "PET_MASTER_ADDR"), "10.0.0.1");
	assert_string_equal(env_get(env, "PET_MASTER_PORT"), "29400");
	assert_string_equal(env_get(env, "PET_NPROC_PER_NODE"), "1"); /* 2 GPUs / 2 processes */
	assert_string_equal(env_get(env, "MUSTER_RESTART_COUNT"), "0");
	ag_env_free(env);
	/* a default name is never Lightning's "interactive" one */
	mu_free(s.argv[0]);
	s.argv[0] = mu_strdup("/bin/bash");
	env = ag_launch_env(&s, 1, "/hf", base, NULL);
	assert_string_equal(env_get(env, "SLURM_JOB_NAME"), "muster"); /* argv[1] is an option */
	ag_env_free(env);
	mu_free(s.argv[1]);
	s.argv[1] = mu_strdup("/home/u/run.sh");
	env = ag_launch_env(&s, 1, "/hf", base, NULL);
	assert_string_equal(env_get(env, "SLURM_JOB_NAME"), "run.sh");
	ag_env_free(env);
	mu_free(s.job_name);
	s.job_name = mu_strdup("bash"); /* the user's own choice stands */
	env = ag_launch_env(&s, 1, "/hf", base, NULL);
	assert_string_equal(env_get(env, "SLURM_JOB_NAME"), "bash");
	ag_env_free(env);
	ag_spec_free(&s);
}

static void launcher_drops_per_task_names(void **state)
{
	struct ag_spec s;
	(void)state;
	spec(&s, 1, 4);
	s.launcher = MU_LAUNCHER_TORCHRUN;
	char **env = ag_launch_env(&s, 0, "/hf", NULL, NULL);
	assert_null(env_get(env, "SLURM_NTASKS")); /* not even the job's own */
	assert_null(env_get(env, "SLURM_PROCID"));
	assert_null(env_get(env, "SLURM_LOCALID"));
	assert_string_equal(env_get(env, "SLURM_NNODES"), "4");
	assert_string_equal(env_get(env, "SLURM_TASKS_PER_NODE"), "1(x4)");
	assert_string_equal(env_get(env, "PET_NPROC_PER_NODE"), "2"); /* the GPUs granted */
	assert_string_equal(env_get(env, "WORLD_SIZE"), "4");          /* one process per node */
	ag_env_free(env);
	char **argv = ag_launch_argv(&s, "/hf");
	assert_string_equal(argv[0], "python3");
	assert_string_equal(argv[4], "--node_rank=1");
	assert_string_equal(argv[5], "--nproc_per_node=2");
	assert_string_equal(argv[6], "--master_addr=10.0.0.1");
	assert_string_equal(argv[7], "--master_port=29400");
	assert_string_equal(argv[8], "/opt/bin/train.py");
	mu_launcher_argv_free(argv);
	s.ngpu_indices = 0; /* no GPUs: procs_per_node workers */
	assert_int_equal(ag_launch_nproc(&s), 4);
	ag_spec_free(&s);
}

static void restart_renumbers(void **state)
{
	struct ag_spec s;
	(void)state;
	spec(&s, 2, 1);
	/* rank 0 (gpu-1) and rank 1 (gpu-2) lost: the kept list is gpu-3, gpu-7 */
	mu_free(s.nodes[0].name);
	mu_free(s.nodes[0].address);
	mu_free(s.nodes[1].name);
	mu_free(s.nodes[1].address);
	s.nodes[0] = s.nodes[2];
	s.nodes[1] = s.nodes[3];
	s.nnodes = 2;
	s.restart_count = 1;
	assert_int_equal(ag_spec_renumber(&s, "gpu-7"), 0);
	assert_int_equal(s.node_rank, 1);
	assert_string_equal(s.master_addr, "10.0.0.3");
	assert_int_equal(s.master_port, 29401);
	char **env = ag_launch_env(&s, 0, NULL, NULL, NULL);
	assert_string_equal(env_get(env, "RANK"), "1");
	assert_string_equal(env_get(env, "WORLD_SIZE"), "2");
	assert_string_equal(env_get(env, "MASTER_ADDR"), "10.0.0.3");
	assert_string_equal(env_get(env, "SLURM_JOB_NODELIST"), "gpu-[3,7]");
	assert_string_equal(env_get(env, "SLURMD_NODENAME"), "gpu-7");
	assert_string_equal(env_get(env, "MUSTER_RESTART_COUNT"), "1");
	ag_env_free(env);
	assert_int_equal(ag_spec_renumber(&s, "gpu-1"), MU_ENOTFOUND);
	ag_spec_free(&s);
}

static void hostfile_no_host_twice(void **state)
{
	struct ag_spec s;
	char path[] = "/tmp/mu-hf-XXXXXX", buf[256];
	(void)state;
	spec(&s, 0, 1);
	mu_free(s.nodes[2].address);
	s.nodes[2].address = mu_strdup("10.0.0.1"); /* shares rank 0's address */
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(ag_write_hostfile(&s, path), 0);
	FILE *f = fopen(path, "r");
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_string_equal(buf, "10.0.0.1 slots=2\n10.0.0.2 slots=2\ngpu-3 slots=2\n10.0.0.4 slots=2\n");
	unlink(path);
	ag_spec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(slurm_names_without_launcher),
		cmocka_unit_test(launcher_drops_per_task_names),
		cmocka_unit_test(restart_renumbers),
		cmocka_unit_test(hostfile_no_host_twice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
