/* Slurm's hostlist / tasks-per-node forms, and the launchers' argv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "hostlist.h"
#include "launcher.h"

static char *compress(const char *const *names, size_t n)
{
	static char out[512];
	struct mu_buf b = MU_BUF_INIT;

	mu_hostlist_compress(names, n, &b);
	snprintf(out, sizeof(out), "%s", b.p);
	mu_buf_release(&b);
	return out;
}

static void hostlist_compress_forms(void **state)
{
	static const char *const a[] = { "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-7" };
	static const char *const b[] = { "gpu-01", "gpu-02", "gpu-03", "gpu-10" };
	static const char *const c[] = { "login", "gpu-7" };
	static const char *const d[] = { "n3", "n1", "n2", "x9", "x10" };
	static const char *const e[] = { "a1", "b1", "a2" };
	static const char *const f[] = { "node7" };
	(void)state;
	assert_string_equal(compress(a, 5), "gpu-[1-4,7]");
	assert_string_equal(compress(b, 4), "gpu-[01-03,10]");
	assert_string_equal(compress(c, 2), "login,gpu-7");
	/* order kept: rank i stays the i-th name of the expansion */
	assert_string_equal(compress(d, 5), "n[3,1-2],x[9-10]");
	assert_string_equal(compress(e, 3), "a1,b1,a2");
	assert_string_equal(compress(f, 1), "node7");
	assert_string_equal(compress(NULL, 0), "");
}

static void hostlist_round_trip(void **state)
{
	static const char *const d[] = { "n3", "n1", "n2", "x9", "x10", "gpu-007", "gpu-008", "h" };
	struct mu_buf b = MU_BUF_INIT, x = MU_BUF_INIT;
	(void)state;
	mu_hostlist_compress(d, 8, &b);
	assert_int_equal(mu_hostlist_expand(b.p, &x), 0);
	assert_string_equal(x.p, "n3,n1,n2,x9,x10,gpu-007,gpu-008,h");
	mu_buf_reset(&x);
	assert_int_equal(mu_hostlist_expand("gpu-[1-4,7]", &x), 0);
	assert_string_equal(x.p, "gpu-1,gpu-2,gpu-3,gpu-4,gpu-7");
	mu_buf_reset(&x);
	assert_int_equal(mu_hostlist_expand("r[1-2]-s", &x), 0);
	assert_string_equal(x.p, "r1-s,r2-s");
	static const char *const bad[] = { "a[1-", "a]", "a[]", "a[3-1]", "a[1-2][3]", "a,", ",a",
					   "a[x]", "a[1-200000]" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mu_buf_reset(&x);
		assert_int_equal(mu_hostlist_expand(bad[i], &x), MU_EINVAL);
	}
	mu_buf_release(&b);
	mu_buf_release(&x);
}

static void tasks_per_node_forms(void **state)
{
	static const int a[] = { 2, 2, 2, 2 }, b[] = { 2, 2, 2, 1 }, c[] = { 4 }, d[] = { 1, 2, 2 };
	struct mu_buf x = MU_BUF_INIT;
	(void)state;
	mu_hostlist_tasks_per_node(a, 4, &x);
	assert_string_equal(x.p, "2(x4)");
	mu_buf_reset(&x);
	mu_hostlist_tasks_per_node(b, 4, &x);
	assert_string_equal(x.p, "2(x3),1");
	mu_buf_reset(&x);
	mu_hostlist_tasks_per_node(c, 1, &x);
	assert_string_equal(x.p, "4");
	mu_buf_reset(&x);
	mu_hostlist_tasks_per_node(d, 3, &x);
	assert_string_equal(x.p, "1,2(x2)");
	mu_buf_release(&x);
}

static char *joined(char **argv)
{
	static char out[2048];
	size_t off = 0;

	out[0] = '\0';
	for (char **a = argv; *a; a++)
		off += (size_t)snprintf(out + off, sizeof(out) - off, "%s%s", a == argv ? "" : " ", *a);
	return out;
}

static void launcher_lines(void **state)
{
	char *user[] = { "train.py", "--lr", "0.1", NULL };
	struct mu_launch_params p = { .nnodes = 4, .nproc_per_node = 8, .node_rank = "2",
				      .master_addr = "10.0.0.1", .master_port = "29511",
				      .hostfile = "/run/hf", .job_id = "77", .max_restarts = 3 };
	enum mu_launcher l;
	char **v;
	(void)state;
	assert_int_equal(mu_launcher_parse("torchrun", &l), 0);
	assert_int_equal(l, MU_LAUNCHER_TORCHRUN);
	assert_int_equal(mu_launcher_parse("", &l), 0);
	assert_int_equal(l, MU_LAUNCHER_NONE);
	assert_int_equal(mu_launcher_parse("mpirun", &l), MU_EINVAL);
	assert_int_equal(mu_launcher_parse("Torchrun", &l), MU_EINVAL);
	assert_string_equal(mu_launcher_name(MU_LAUNCHER_ACCELERATE), "accelerate");

	p.launcher = MU_LAUNCHER_NONE;
	v = mu_launcher_argv(&p, user);
	assert_string_equal(joined(v), "train.py --lr 0.1");
	mu_launcher_argv_free(v);

	p.launcher = MU_LAUNCHER_TORCHRUN;
	v = mu_launcher_argv(&p, user);
	assert_string_equal(joined(v), "python3 -m torch.distributed.run --nnodes=4 --node_rank=2"
				       " --nproc_per_node=8 --master_addr=10.0.0.1 --master_port=29511"
				       " train.py --lr 0.1");
	mu_launcher_argv_free(v);

	p.min_nodes = 2;
	p.rdzv_host = true;
	v = mu_launcher_argv(&p, user);
	assert_string_equal(joined(v), "python3 -m torch.distributed.run --nnodes=2:4"
				       " --nproc_per_node=8 --rdzv_backend=c10d"
				       " --rdzv_endpoint=10.0.0.1:29511 --rdzv_id=muster-77"
				       " --rdzv_conf=is_host=1 --max_restarts=3 train.py --lr 0.1");
	mu_launcher_argv_free(v);
	p.min_nodes = 0;

	p.launcher = MU_LAUNCHER_DEEPSPEED;
	v = mu_launcher_argv(&p, user);
	assert_string_equal(joined(v), "deepspeed --hostfile=/run/hf --no_ssh --node_rank=2"
				       " --num_nodes=4 --num_gpus=8 --master_addr=10.0.0.1"
				       " --master_port=29511 train.py --lr 0.1");
	mu_launcher_argv_free(v);

	p.launcher = MU_LAUNCHER_ACCELERATE;
	v = mu_launcher_argv(&p, user);
	assert_string_equal(joined(v), "accelerate launch --multi_gpu --num_machines=4"
				       " --machine_rank=2 --main_process_ip=10.0.0.1"
				       " --main_process_port=29511 --num_processes=32 train.py --lr 0.1");
	mu_launcher_argv_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hostlist_compress_forms), cmocka_unit_test(hostlist_round_trip),
		cmocka_unit_test(tasks_per_node_forms), cmocka_unit_test(launcher_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
