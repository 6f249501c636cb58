/*
 * muster-agent logs: the byte-range reader (offset/limit/size/ended, and
 * what a job may have planted in its run directory: symlinks, a FIFO, a
 * hard link), the reader thread, and retention (old ended runs go, live
 * and young ones stay, nothing outside is touched through a symlink).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "alloc.h"

static char dir[256];

static int setup_dir(void **state)
{
	char p[512];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/mu-agent-logs.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/runs", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	return 0;
}

static int teardown_dir(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void path_of(char *out, size_t n, const char *rel)
{
	snprintf(out, n, "%s/%s", dir, rel);
}

static void write_file(const char *rel, const char *text)
{
	char p[512];
	FILE *f;

	path_of(p, sizeof(p), rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void make_dir(const char *rel)
{
	char p[512];

	path_of(p, sizeof(p), rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void age(const char *rel, int secs)
{
	char p[512];
	struct timeval tv[2];

	path_of(p, sizeof(p), rel);
	gettimeofday(&tv[0], NULL);
	tv[0].tv_sec -= secs;
	tv[1] = tv[0];
	assert_int_equal(lutimes(p, tv), 0);
}

static bool exists(const char *rel)
{
	char p[512];
	struct stat st;

	path_of(p, sizeof(p), rel);
	return lstat(p, &st) == 0;
}

static void ranges(void **state)
{
	struct ag_log_chunk c;

	(void)state;
	make_dir("runs/7");
	write_file("runs/7/proc0.out", "hello world\n");
	write_file("runs/7/proc0.err", "oops\n");
	write_file("runs/7/proc1.out", "");

	assert_int_equal(ag_log_read(dir, 7, 0, false, 0, 1 << 20, false, &c), 0);
	assert_int_equal(c.len, 12);
	assert_memory_equal(c.data, "hello world\n", 12);
	assert_int_equal(c.size, 12);
	assert_false(c.ended);
	assert_string_equal(c.error, "");
	ag_log_chunk_release(&c);

	assert_int_equal(ag_log_read(dir, 7, 0, false, 6, 3, false, &c), 0);
	assert_int_equal(c.len, 3);
	assert_memory_equal(c.data, "wor", 3);
	ag_log_chunk_release(&c);

	assert_int_equal(ag_log_read(dir, 7, 0, true, 0, 100, false, &c), 0);
	assert_int_equal(c.len, 5);
	assert_memory_equal(c.data, "oops\n", 5);
	ag_log_chunk_release(&c);

	/* past the end and an empty file: no bytes, the size, no error */
	assert_int_equal(ag_log_read(dir, 7, 0, false, 500, 100, false, &c), 0);
	assert_int_equal(c.len, 0);
	assert_null(c.data);
	assert_int_equal(c.size, 12);
	assert_int_equal(ag_log_read(dir, 7, 1, false, 0, 100, false, &c), 0);
	assert_int_equal(c.len, 0);

	/* the process ended: its exit file, or the agent knows the run did */
	assert_int_equal(ag_log_read(dir, 7, 0, false, 0, 1, false, &c), 0);
	assert_false(c.ended);
	ag_log_chunk_release(&c);
	write_file("runs/7/exit.0", "0 0\n");
	assert_int_equal(ag_log_read(dir, 7, 0, false, 0, 1, false, &c), 0);
	assert_true(c.ended);
	ag_log_chunk_release(&c);
	assert_int_equal(ag_log_read(dir, 7, 1, false, 0, 1, true, &c), 0);
	assert_true(c.ended);
}

static void bad_requests(void **state)
{
	struct ag_log_chunk c;

	(void)state;
	make_dir("runs/8");
	write_file("runs/8/proc0.out", "x");
	assert_int_equal(ag_log_read(dir, 0, 0, false, 0, 10, false, &c), MU_EINVAL);
	assert_true(!strncmp(c.error, "invalid:", 8));
	assert_int_equal(ag_log_read(dir, 8, -1, false, 0, 10, false, &c), MU_EINVAL);
	assert_int_equal(ag_log_read(dir, 8, AG_MAX_PROCS, false, 0, 10, false, &c), MU_EINVAL);
	assert_int_equal(ag_log_read(dir, 8, 0, false, -1, 10, false, &c), MU_EINVAL);
	assert_int_equal(ag_log_read(dir, 8, 0, false, 0, 0, false, &c), MU_EINVAL);
	assert_int_equal(ag_log_read(dir, 8, 0, false, 0, AG_LOG_MAX_CHUNK + 1, false, &c), MU_EINVAL);
	assert_int_equal(ag_log_read(dir, 9, 0, false, 0, 10, false, &c), MU_ENOTFOUND);
	assert_true(!strncmp(c.error, "unknown_run:", 12));
	assert_int_equal(ag_log_read(dir, 8, 3, false, 0, 10, false, &c), MU_EIO);
	assert_true(!strncmp(c.error, "gone:", 5));
}

/* What a job could leave in its run directory to read files it may not. */
static void planted(void **state)
{
	struct ag_log_chunk c;
	char secret[512], lp[512], other[512];

	(void)state;
	write_file("secret", "root only\n");
	path_of(secret, sizeof(secret), "secret");
	make_dir("runs/10");
	/* proc0.out -> a file elsewhere */
	path_of(lp, sizeof(lp), "runs/10/proc0.out");
	assert_int_equal(symlink(secret, lp), 0);
	assert_int_equal(ag_log_read(dir, 10, 0, false, 0, 100, false, &c), MU_EIO);
	assert_null(c.data);
	assert_non_null(strstr(c.error, "symlink"));
	/* proc0.err: a hard link to it */
	path_of(lp, sizeof(lp), "runs/10/proc0.err");
	assert_int_equal(link(secret, lp), 0);
	assert_int_equal(ag_log_read(dir, 10, 0, true, 0, 100, false, &c), MU_EIO);
	assert_null(c.data);
	/* proc1.out: a FIFO nobody writes (must not hang) */
	path_of(lp, sizeof(lp), "runs/10/proc1.out");
	assert_int_equal(mkfifo(lp, 0600), 0);
	assert_int_equal(ag_log_read(dir, 10, 1, false, 0, 100, false, &c), MU_EIO);
	/* proc2.out: a directory */
	make_dir("runs/10/proc2.out");
	assert_int_equal(ag_log_read(dir, 10, 2, false, 0, 100, false, &c), MU_EIO);
	/* the run directory itself a symlink to another run's */
	make_dir("runs/11");
	write_file("runs/11/proc0.out", "other run\n");
	path_of(other, sizeof(other), "runs/11");
	path_of(lp, sizeof(lp), "runs/12");
	assert_int_equal(symlink(other, lp), 0);
	assert_int_equal(ag_log_read(dir, 12, 0, false, 0, 100, false, &c), MU_ENOTFOUND);
	assert_null(c.data);
}

static void got(void *ctx, struct ag_log_job *j)
{
	struct ag_log_job *out = ctx;

	*out = *j;
	out->out.data = NULL; /* released by ag_logs_take */
	if (j->out.len)
		memcpy(out->out.error, j->out.data, j->out.len < 16 ? j->out.len : 16);
}

static void reader_thread(void **state)
{
	struct ag_logs *l;
	struct ag_log_job j = { 0 }, back = { 0 };

	(void)state;
	make_dir("runs/20");
	write_file("runs/20/proc0.out", "from the thread\n");
	l = ag_logs_new(dir);
	j.request_id = 42;
	j.run_id = 20;
	j.limit = 4;
	j.offset = 5;
	assert_true(ag_logs_submit(l, &j));
	for (int i = 0; i < 500 && !back.request_id; i++) {
		ag_logs_take(l, got, &back);
		if (!back.request_id)
			usleep(10000);
	}
	assert_int_equal(back.request_id, 42);
	assert_int_equal(back.rc, 0);
	assert_int_equal(back.out.len, 4);
	assert_memory_equal(back.out.error, "the ", 4);
	ag_logs_free(l);
	ag_logs_free(NULL);
}

static void retention(void **state)
{
	char target[512], lp[512];
	int64_t live[] = { 31 };

	(void)state;
	make_dir("keep");
	write_file("keep/precious", "x");
	make_dir("runs/30");            /* ended long ago: goes */
	write_file("runs/30/proc0.out", "a");
	make_dir("runs/30/sub");        /* the job's own tree, with a symlink out */
	path_of(target, sizeof(target), "keep");
	path_of(lp, sizeof(lp), "runs/30/sub/out");
	assert_int_equal(symlink(target, lp), 0);
	age("runs/30", 3600);
	make_dir("runs/31");            /* live, however old: stays */
	age("runs/31", 3600);
	make_dir("runs/32");            /* ended recently: stays */
	make_dir("runs/notarun");       /* not ours: stays */
	age("runs/notarun", 3600);
	path_of(lp, sizeof(lp), "runs/33"); /* a symlink named like a run: not followed */
	assert_int_equal(symlink(target, lp), 0);

	assert_int_equal(ag_logs_prune(dir, 60, live, 1), 1);
	assert_false(exists("runs/30"));
	assert_true(exists("runs/31"));
	assert_true(exists("runs/32"));
	assert_true(exists("runs/notarun"));
	assert_true(exists("runs/33"));
	assert_true(exists("keep/precious"));
	/* a missing runs/ is nothing to do */
	assert_int_equal(ag_logs_prune("/nonexistent-muster", 60, NULL, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(ranges, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(bad_requests, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(planted, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(reader_thread, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(retention, setup_dir, teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
