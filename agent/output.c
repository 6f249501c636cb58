/*
 * output.c - sbatch's -o/-e in the agent: every process's stdout/stderr is
 * also appended to files named by the job's patterns (common/sbatch.c
 * expands them), relative to the workdir, opened by the job's own process
 * after it dropped to the account, so the agent never writes a file the
 * user names. The run directory's logs (what `muster logs` and the logs
 * route read) get every byte as before: a tee process sits between the
 * program and both.
 *
 * Runs in the forked child before exec: system calls and snprintf only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "sbatch.h"

static int open_pattern(const struct ag_spec *s, const char *pattern, const char *node,
			int local_rank, const struct ag_ident *id, char *path, size_t pathn)
{
	struct mu_sbatch_subst v = {
		.job_id = s->job_id,
		.array_job_id = s->array_job_id,
		.array_task_id = s->array_task_id,
		.job_name = s->job_name,
		.node = node,
		.node_rank = s->node_rank,
		.task_rank = s->node_rank * (s->procs_per_node > 0 ? s->procs_per_node : 1) + local_rank,
		.user = id->name,
	};
	int fd;

	if (mu_sbatch_expand(pattern, &v, path, pathn) != 0)
		return -ENAMETOOLONG;
	/* append: every process of the gang may share one file (no %t) */
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
	return fd < 0 ? -errno : fd;
}

static void put(int fd, const char *p, ssize_t n)
{
	while (fd >= 0 && n > 0) {
		ssize_t w = write(fd, p, (size_t)n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* a full disk loses the copy, never the job */
		p += w;
		n -= w;
	}
}

/* Copies what is readable on `in` to both fds; false at EOF (or error). */
static bool pump(int in, int log_fd, int user_fd)
{
	char buf[16384];
	ssize_t n = read(in, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	put(log_fd, buf, n);
	put(user_fd, buf, n);
	return true;
}

/* The tee: the parent of the program, so the keeper's wait ends only
 * after the last bytes are copied. Ends with the program's status. */
static pid_t tee_child;

static void forward(int sig)
{
	kill(tee_child, sig);
}

static void __attribute__((noreturn)) copy_until_exit(pid_t child, int out_r, int err_r, int uo, int ue,
						       int pre_timeout_sig, bool batch_only)
{
	struct pollfd p[2] = { { .fd = out_r, .events = POLLIN }, { .fd = err_r, .events = POLLIN } };
	int st = 0, sig;
	bool exited = false;

	/* a TERM to the group is for the program; the tee copies until it ends */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	/* the pre-timeout signal (USR1...) is for the program, and at its
	 * default it would end the tee: sent to the group the program has it
	 * already; sent to the started process only (batch_only), that is the
	 * tee, which hands it on */
	tee_child = child;
	if (pre_timeout_sig > 0 && pre_timeout_sig != SIGKILL && pre_timeout_sig != SIGSTOP)
		signal(pre_timeout_sig, batch_only ? forward : SIG_IGN);
	while (p[0].fd >= 0 || p[1].fd >= 0) {
		int k = poll(p, 2, 200);

		for (int i = 0; i < 2 && k > 0; i++)
			if (p[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    !pump(p[i].fd, i ? 2 : 1, i ? ue : uo)) {
				close(p[i].fd);
				p[i].fd = -1;
			}
		if (!exited && waitpid(child, &st, WNOHANG) == child) {
			/* what is already in the pipes, then go: a daemon the program
			 * left behind may hold them open forever */
			exited = true;
			for (int i = 0; i < 2; i++)
				if (p[i].fd >= 0)
					fcntl(p[i].fd, F_SETFL, O_NONBLOCK);
		} else if (exited) {
			for (int i = 0; i < 2; i++)
				if (p[i].fd >= 0) {
					for (;;) {
						errno = 0;
						if (!pump(p[i].fd, i ? 2 : 1, i ? ue : uo) || errno == EAGAIN)
							break;
					}
					close(p[i].fd);
					p[i].fd = -1;
				}
		}
	}
	if (!exited)
		while (waitpid(child, &st, 0) < 0 && errno == EINTR)
			;
	if (WIFSIGNALED(st)) {
		sig = WTERMSIG(st);
		signal(sig, SIG_DFL);
		kill(getpid(), sig);
		_exit(128 + sig);
	}
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

int ag_output_tee(const struct ag_spec *s, const char *node, int local_rank,
		  const struct ag_ident *id, int start_fd, char *why, size_t whyn)
{
	char path[4200];
	int uo = -1, ue = -1, po[2] = { -1, -1 }, pe[2] = { -1, -1 };
	pid_t pid;

	if ((!s->stdout_pattern || !*s->stdout_pattern) && (!s->stderr_pattern || !*s->stderr_pattern))
		return 0;
	if (s->stdout_pattern && *s->stdout_pattern) {
		uo = open_pattern(s, s->stdout_pattern, node, local_rank, id, path, sizeof(path));
		if (uo < 0)
			goto fail;
	}
	if (s->stderr_pattern && *s->stderr_pattern) {
		ue = open_pattern(s, s->stderr_pattern, node, local_rank, id, path, sizeof(path));
		if (ue < 0)
			goto fail;
	} else {
		ue = uo; /* sbatch: without -e, stderr goes to the -o file */
	}
	if ((uo >= 0 && pipe2(po, O_CLOEXEC) != 0) || (ue >= 0 && pipe2(pe, O_CLOEXEC) != 0)) {
		snprintf(why, whyn, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(why, whyn, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		/* the program: its stdout/stderr into the pipes (no CLOEXEC on 1, 2) */
		if (po[1] >= 0)
			dup2(po[1], 1);
		if (pe[1] >= 0)
			dup2(pe[1], 2);
		return 0;
	}
	close(start_fd); /* the agent reads it to EOF: only the program's exec may end it */
	if (po[1] >= 0)
		close(po[1]);
	if (pe[1] >= 0)
		close(pe[1]);
	copy_until_exit(pid, po[0], pe[0], uo, ue, s->signal, s->signal_batch_only);
fail:
	snprintf(why, whyn, "%s", path);
	return uo < 0 ? uo : ue;
}
