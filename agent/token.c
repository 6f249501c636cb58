/*
 * token.c - the node credential (see agent.h, "Node credential").
 *
 * The token lives in one static buffer, next to the "Bearer <token>"
 * header value the stream sends, so that a fork of the agent (a run's
 * keeper) can wipe both before it does anything else. It comes from a
 * file the operator protected (--token-file), or from the environment:
 * then the agent hands it to a fresh image of itself through an
 * anonymous memory file and re-execs without it, because a process's
 * initial environment stays readable in /proc/<pid>/environ for its
 * whole life and is inherited by every fork.
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

#define BEARER "Bearer "

static char tok[AG_TOKEN_MAX + 1];
static char header[sizeof(BEARER) + AG_TOKEN_MAX];

static void wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;

	while (n--)
		*v++ = 0;
}

/* Takes the first line of buf[0..n) as the token. */
static int take(const char *buf, size_t n, const char *what, struct mu_error *err)
{
	size_t len = 0;

	while (len < n && buf[len] != '\n' && buf[len] != '\r')
		len++;
	if (len == 0)
		return mu_error_set(err, MU_EINVAL, "token", "%s holds no token", what);
	if (len > AG_TOKEN_MAX)
		return mu_error_set(err, MU_EINVAL, "token", "%s: token longer than %d bytes", what,
				    AG_TOKEN_MAX);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)buf[i] <= ' ' || buf[i] == 0x7f)
			return mu_error_set(err, MU_EINVAL, "token",
					    "%s: the token has a space or control character", what);
	ag_token_wipe();
	memcpy(tok, buf, len);
	tok[len] = '\0';
	memcpy(header, BEARER, sizeof(BEARER) - 1);
	memcpy(header + sizeof(BEARER) - 1, tok, len + 1);
	return 0;
}

/* Reads at most AG_TOKEN_MAX + 2 bytes of fd into buf. */
static ssize_t read_some(int fd, char *buf, size_t cap)
{
	size_t n = 0;

	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	return (ssize_t)n;
}

int ag_token_load_file(const char *path, struct mu_error *err)
{
	char buf[AG_TOKEN_MAX + 2];
	struct stat st;
	ssize_t n;
	int fd, ret;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return mu_error_set(err, MU_EINVAL, "token-file", "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		ret = mu_error_set(err, MU_EIO, "token-file", "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = mu_error_set(err, MU_EINVAL, "token-file", "%s is not a regular file", path);
		goto out;
	}
	if (st.st_uid != geteuid()) {
		ret = mu_error_set(err, MU_EINVAL, "token-file",
				   "%s is owned by uid %u, not by the agent's uid %u (chown it)", path,
				   (unsigned)st.st_uid, (unsigned)geteuid());
		goto out;
	}
	if (st.st_mode & 07177) {
		ret = mu_error_set(err, MU_EINVAL, "token-file",
				   "%s has mode %04o: it must be 0600 or stricter, since whoever reads"
				   " it speaks for this node (chmod 600 %s)",
				   path, (unsigned)(st.st_mode & 07777), path);
		goto out;
	}
	n = read_some(fd, buf, sizeof(buf));
	if (n < 0) {
		ret = mu_error_set(err, MU_EIO, "token-file", "%s: %s", path, strerror(errno));
		goto out;
	}
	ret = take(buf, (size_t)n, path, err);
	wipe(buf, sizeof(buf));
out:
	close(fd);
	return ret;
}

int ag_token_load_fd(int fd, struct mu_error *err)
{
	char buf[AG_TOKEN_MAX + 2];
	ssize_t n;
	int ret;

	if (lseek(fd, 0, SEEK_SET) != 0 || (n = read_some(fd, buf, sizeof(buf))) < 0) {
		ret = mu_error_set(err, MU_EIO, "token", "inherited token fd %d: %s", fd, strerror(errno));
		goto out;
	}
	ret = take(buf, (size_t)n, "the inherited token fd", err);
	wipe(buf, sizeof(buf));
out:
	close(fd);
	return ret;
}

int ag_token_reexec(char *const argv[], struct mu_error *err)
{
	const char *v = getenv(AG_TOKEN_ENV);
	char fdtxt[16];
	size_t len, off = 0;
	int fd;

	if (!v || !*v)
		return 0;
	len = strlen(v);
	if (len > AG_TOKEN_MAX)
		return mu_error_set(err, MU_EINVAL, "token", AG_TOKEN_ENV " longer than %d bytes",
				    AG_TOKEN_MAX);
	/* no MFD_CLOEXEC: the new image inherits it (and closes it at once) */
	fd = memfd_create("muster-agent-token", 0);
	if (fd < 0)
		return mu_error_set(err, MU_EIO, "token", "memfd_create: %s", strerror(errno));
	while (off < len) {
		ssize_t w = write(fd, v + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			return mu_error_set(err, MU_EIO, "token", "memfd write: %s", strerror(errno));
		}
		off += (size_t)w;
	}
	snprintf(fdtxt, sizeof(fdtxt), "%d", fd);
	unsetenv(AG_TOKEN_ENV);
	setenv(AG_TOKEN_FD_ENV, fdtxt, 1);
	execv("/proc/self/exe", argv);
	close(fd);
	return mu_error_set(err, MU_EIO, "token", "re-exec without " AG_TOKEN_ENV ": %s",
			    strerror(errno));
}

const char *ag_token_header(void)
{
	return header;
}

bool ag_token_loaded(void)
{
	return tok[0] != '\0';
}

void ag_token_wipe(void)
{
	wipe(tok, sizeof(tok));
	wipe(header, sizeof(header));
}
