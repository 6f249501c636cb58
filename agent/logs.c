/*
 * logs.c - the agent's side of `muster logs`: bounded byte ranges of the
 * per-process output files, read on a thread of their own, and the
 * retention that removes ended runs' directories.
 *
 * The run directory is the job's playground (it is the default workdir):
 * whatever the job left there is untrusted. Hence O_NOFOLLOW at each step,
 * openat relative to the run directory, regular files with one link only,
 * O_NONBLOCK (a FIFO named proc0.out must not hang the reader), and
 * nftw(FTW_PHYS) for removal.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "alloc.h"
#include "log.h"

#define LOGS_QUEUE_MAX 64

static int fail(struct ag_log_chunk *out, int code, const char *kind, const char *why)
{
	snprintf(out->error, sizeof(out->error), "%s: %s", kind, why);
	return code;
}

int ag_log_read(const char *state_dir, int64_t run_id, int local_rank, bool err_stream,
		int64_t offset, size_t limit, bool run_done, struct ag_log_chunk *out)
{
	char path[4200], name[64], exitf[32];
	struct stat st;
	int dfd = -1, fd = -1, ret = 0;
	ssize_t n;

	memset(out, 0, sizeof(*out));
	if (run_id < 1 || local_rank < 0 || local_rank >= AG_MAX_PROCS || offset < 0 || limit < 1 ||
	    limit > AG_LOG_MAX_CHUNK)
		return fail(out, MU_EINVAL, "invalid", "run_id, local_rank, offset or limit out of range");
	snprintf(path, sizeof(path), "%s/runs/%" PRId64, state_dir, run_id);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		ret = fail(out, MU_ENOTFOUND, "unknown_run", "this node has no such run (or its logs were removed)");
		goto out;
	}
	snprintf(name, sizeof(name), "proc%d.%s", local_rank, err_stream ? "err" : "out");
	snprintf(exitf, sizeof(exitf), "exit.%d", local_rank);
	/* the exit file first: bytes read after it are all there will be */
	out->ended = run_done || faccessat(dfd, exitf, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = fail(out, MU_EIO, "gone",
			   errno == ELOOP ? "the log is a symlink: refused" : "no such log file");
		goto out;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
		ret = fail(out, MU_EIO, "gone", "the log is not a plain file: refused");
		goto out;
	}
	out->size = st.st_size;
	if (offset >= st.st_size)
		goto out;
	if ((int64_t)limit > st.st_size - offset)
		limit = (size_t)(st.st_size - offset);
	out->data = mu_malloc(limit);
	do
		n = pread(fd, out->data, limit, offset);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		mu_free(out->data);
		out->data = NULL;
		ret = fail(out, MU_EIO, "gone", strerror(errno));
		goto out;
	}
	out->len = (size_t)n;
	if (offset + n > out->size)
		out->size = offset + n;
out:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	return ret;
}

void ag_log_chunk_release(struct ag_log_chunk *c)
{
	mu_free(c->data);
	c->data = NULL;
	c->len = 0;
}

/* ---- retention ---------------------------------------------------------- */

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP ? rmdir(path) : unlink(path))
		mu_debug("logs cannot remove %s: %s", path, strerror(errno));
	return 0;
}

static bool parse_run_id(const char *s, int64_t *id)
{
	char *end = NULL;
	long long v;

	if (*s < '1' || *s > '9')
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end || errno || v < 1)
		return false;
	*id = v;
	return true;
}

int ag_logs_prune(const char *state_dir, int64_t retention_s, const int64_t *live, int nlive)
{
	char runs[4200], path[4500];
	time_t now = time(NULL);
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(runs, sizeof(runs), "%s/runs", state_dir);
	d = opendir(runs);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct stat st;
		bool is_live = false;
		int64_t id;

		if (!parse_run_id(de->d_name, &id))
			continue;
		for (int i = 0; i < nlive && !is_live; i++)
			is_live = live[i] == id;
		if (is_live || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISDIR(st.st_mode) || now - st.st_mtime < retention_s)
			continue;
		snprintf(path, sizeof(path), "%s/%s", runs, de->d_name);
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
		mu_info("run=%" PRId64 " logs removed: ended over %" PRId64 "s ago (--log-retention)", id,
			retention_s);
		n++;
	}
	closedir(d);
	return n;
}

/* ---- the reader thread -------------------------------------------------- */

struct ag_logs {
	char *state_dir;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool quit;
	struct ag_log_job *todo, *done;
	size_t ntodo, captodo, ndone, capdone;
};

static void *reader_main(void *arg)
{
	struct ag_logs *l = arg;

	pthread_mutex_lock(&l->mu);
	while (!l->quit) {
		struct ag_log_job j;

		if (!l->ntodo) {
			pthread_cond_wait(&l->cv, &l->mu);
			continue;
		}
		j = l->todo[0];
		memmove(l->todo, l->todo + 1, (l->ntodo - 1) * sizeof(*l->todo));
		l->ntodo--;
		pthread_mutex_unlock(&l->mu);
		j.rc = ag_log_read(l->state_dir, j.run_id, j.local_rank, j.err_stream, j.offset, j.limit,
				   j.run_done, &j.out);
		pthread_mutex_lock(&l->mu);
		l->done = mu_grow(l->done, &l->capdone, l->ndone + 1, sizeof(*l->done));
		l->done[l->ndone++] = j;
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

struct ag_logs *ag_logs_new(const char *state_dir)
{
	struct ag_logs *l = mu_calloc(1, sizeof(*l));

	l->state_dir = mu_strdup(state_dir);
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	pthread_create(&l->thread, NULL, reader_main, l);
	return l;
}

void ag_logs_free(struct ag_logs *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->quit = true;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	for (size_t i = 0; i < l->ndone; i++)
		ag_log_chunk_release(&l->done[i].out);
	mu_free(l->todo);
	mu_free(l->done);
	mu_free(l->state_dir);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	mu_free(l);
}

bool ag_logs_submit(struct ag_logs *l, const struct ag_log_job *job)
{
	bool ok = false;

	pthread_mutex_lock(&l->mu);
	if (l->ntodo + l->ndone < LOGS_QUEUE_MAX) {
		l->todo = mu_grow(l->todo, &l->captodo, l->ntodo + 1, sizeof(*l->todo));
		l->todo[l->ntodo] = *job;
		memset(&l->todo[l->ntodo].out, 0, sizeof(l->todo[l->ntodo].out));
		l->ntodo++;
		pthread_cond_signal(&l->cv);
		ok = true;
	}
	pthread_mutex_unlock(&l->mu);
	return ok;
}

void ag_logs_take(struct ag_logs *l, void (*fn)(void *ctx, struct ag_log_job *job), void *ctx)
{
	struct ag_log_job *done;
	size_t n, cap;

	pthread_mutex_lock(&l->mu);
	done = l->done;
	n = l->ndone;
	cap = l->capdone;
	l->done = NULL;
	l->ndone = l->capdone = 0;
	pthread_mutex_unlock(&l->mu);
	(void)cap;
	for (size_t i = 0; i < n; i++) {
		fn(ctx, &done[i]);
		ag_log_chunk_release(&done[i].out);
	}
	mu_free(done);
}
