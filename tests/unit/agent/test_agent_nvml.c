/*
 * The NVML backend through dlopen("libnvidia-ml.so.1") against
 * fake_nvml.c (LD_LIBRARY_PATH set by CTest): devices, figures, and an XID
 * event becoming a fatal fault on the right GPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "agent.h"

static void nvml_backend(void **state)
{
	(void)state;
	struct ag_gpus g;
	struct mu_error err = { 0 };
	setenv("FAKE_NVML_XID", "79", 1);
	assert_int_equal(ag_gpus_open_nvml(&g, &err), 0);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.gpu[1].uuid, "GPU-nvmlfake-1");
	assert_int_equal(g.gpu[0].minor, 1); /* /dev/nvidia1 is GPU 0 there */
	assert_int_equal(g.gpu[1].minor, 0);
	assert_string_equal(g.gpu[0].model, "NVIDIA H200");
	assert_int_equal(g.gpu[0].memory_mb, 143771);
	ag_gpus_poll(&g);
	assert_int_equal(g.gpu[1].memory_used_mb, 1001);
	assert_int_equal(g.gpu[1].utilization, 41);
	assert_int_equal(g.gpu[1].temperature, 51);
	assert_int_equal(g.gpu[1].ecc_errors, 2);
	assert_int_equal(g.gpu[0].nxids, 0);
	assert_int_equal(g.gpu[1].nxids, 1);
	assert_int_equal(g.gpu[1].xids[0], 79);
	assert_false(g.gpu[1].healthy);
	assert_true(g.gpu[0].healthy);
	ag_gpus_poll(&g); /* the event comes once */
	assert_int_equal(g.gpu[1].nxids, 1);
	ag_gpus_close(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(nvml_backend) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
