/* devdb.c - see devdb.h. */
#define _GNU_SOURCE
#include "devdb.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libpq-fe.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "db.h"
#include "log.h"

#define PG_USER "postgres"
/* State dirs are short (the socket path must fit in sun_path), so paths
 * derived from them fit in fixed buffers. */
#define DEVDB_PATH 256

struct devdb {
	char dir[DEVDB_PATH];
	char data[DEVDB_PATH + 16];
	char socket[DEVDB_PATH + 16];
	char log[DEVDB_PATH + 16];
	char bindir[PATH_MAX];
	uid_t uid; /* the server's user */
	gid_t gid;
	bool as_root; /* we are root: run server binaries through runuser */
	int lockfd;
};

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static int server_user(struct devdb *d, struct mu_error *err)
{
	d->as_root = geteuid() == 0;
	if (!d->as_root) {
		d->uid = geteuid();
		d->gid = getegid();
		return 0;
	}
	struct passwd *pw = getpwnam(PG_USER);
	if (!pw)
		return mu_error_set(err, MU_EINVAL, "", "running as root needs the '" PG_USER
				    "' user to run PostgreSQL (install the postgresql package)");
	d->uid = pw->pw_uid;
	d->gid = pw->pw_gid;
	return 0;
}

/* Fills d's paths from dir; creates dir when `create`. */
static int devdb_init(struct devdb *d, const char *dir, bool create, struct mu_error *err)
{
	char abs[PATH_MAX];
	int ret;

	memset(d, 0, sizeof(*d));
	d->lockfd = -1;
	ret = server_user(d, err);
	if (ret)
		return ret;
	if (!dir || !*dir)
		return mu_error_set(err, MU_EINVAL, "dir", "no state directory given");
	if (create && mkdir(dir, 0755) != 0 && errno != EEXIST)
		return mu_error_set(err, MU_EIO, "dir", "cannot create %s: %s", dir, strerror(errno));
	if (!realpath(dir, abs)) {
		if (errno == ENOENT && !create) {
			/* a dir that does not exist yet still has a URL */
			if (strlen(dir) >= sizeof(abs))
				return mu_error_set(err, MU_EINVAL, "dir", "path too long");
			if (dir[0] == '/') {
				snprintf(abs, sizeof(abs), "%s", dir);
			} else {
				char cwd[PATH_MAX];
				if (!getcwd(cwd, sizeof(cwd)) ||
				    snprintf(abs, sizeof(abs), "%s/%s", cwd, dir) >= (int)sizeof(abs))
					return mu_error_set(err, MU_EINVAL, "dir", "path too long");
			}
		} else {
			return mu_error_set(err, MU_EIO, "dir", "%s: %s", dir, strerror(errno));
		}
	}
	if (strlen(abs) + 16 >= sizeof(d->dir))
		return mu_error_set(err, MU_EINVAL, "dir",
				    "state directory path %s is too long for a Unix socket "
				    "(keep it under ~90 characters)",
				    abs);
	memcpy(d->dir, abs, strlen(abs) + 1);
	snprintf(d->data, sizeof(d->data), "%s/data", d->dir);
	snprintf(d->socket, sizeof(d->socket), "%s/socket", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/postgres.log", d->dir);
	/* ".s.PGSQL.5432" plus a slash must fit in sun_path. */
	if (strlen(d->socket) + 15 >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return mu_error_set(err, MU_EINVAL, "dir",
				    "state directory path %s is too long for a Unix socket "
				    "(keep it under ~90 characters)",
				    d->dir);
	return 0;
}

static void devdb_release(struct devdb *d)
{
	if (d->lockfd >= 0)
		close(d->lockfd);
	d->lockfd = -1;
}

static int lock_dir(struct devdb *d, struct mu_error *err)
{
	char path[DEVDB_PATH + 64];

	snprintf(path, sizeof(path), "%s/devdb.lock", d->dir);
	d->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (d->lockfd < 0)
		return mu_error_set(err, MU_EIO, "dir", "cannot open %s: %s", path, strerror(errno));
	if (flock(d->lockfd, LOCK_EX) != 0)
		return mu_error_set(err, MU_EIO, "dir", "cannot lock %s: %s", path, strerror(errno));
	return 0;
}

static int major_of(const char *data)
{
	char path[DEVDB_PATH + 64], buf[16] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/PG_VERSION", data);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return atoi(buf);
}

static int find_bindir(struct devdb *d, struct mu_error *err)
{
	const char *env = getenv("MUSTER_PG_BINDIR");
	char path[PATH_MAX + 64];
	int want = major_of(d->data), best = 0;
	DIR *dp;
	struct dirent *e;

	if (env && *env) {
		snprintf(d->bindir, sizeof(d->bindir), "%s", env);
		goto check;
	}
	dp = opendir(MU_PG_LIBDIR);
	if (dp) {
		while ((e = readdir(dp))) {
			int v = atoi(e->d_name);
			if (v <= 0)
				continue;
			snprintf(path, sizeof(path), MU_PG_LIBDIR "/%s/bin/pg_ctl", e->d_name);
			if (access(path, X_OK) != 0)
				continue;
			if (v == want) {
				best = v;
				break;
			}
			if (v > best)
				best = v;
		}
		closedir(dp);
	}
	if (!best)
		return mu_error_set(err, MU_EUNAVAIL, "",
				    "no PostgreSQL server in " MU_PG_LIBDIR "/N/bin: run scripts/bootstrap "
				    "(package postgresql) or set MUSTER_PG_BINDIR");
	if (want && best != want)
		return mu_error_set(err, MU_ESTATE, "",
				    "%s was created by PostgreSQL %d, which is not installed (newest: %d)",
				    d->data, want, best);
	snprintf(d->bindir, sizeof(d->bindir), MU_PG_LIBDIR "/%d/bin", best);
check:
	snprintf(path, sizeof(path), "%s/pg_ctl", d->bindir);
	if (access(path, X_OK) != 0)
		return mu_error_set(err, MU_EUNAVAIL, "", "%s is not executable", path);
	return 0;
}

/*
 * Runs bindir/prog with args (NULL-terminated) as the server's user and
 * waits. Its stdout and stderr go to `out` (appended) when given, else to
 * our stderr, so our stdout stays clean for the URL. Returns the exit
 * status (0 = success), or -1 when it could not run.
 */
static int run_pg(const struct devdb *d, const char *prog, const char *const *args, const char *out)
{
	const char *argv[40];
	char exe[PATH_MAX + 32];
	int n = 0, status;
	pid_t pid;

	snprintf(exe, sizeof(exe), "%s/%s", d->bindir, prog);
	if (d->as_root) {
		argv[n++] = "/usr/sbin/runuser";
		argv[n++] = "-u";
		argv[n++] = PG_USER;
		argv[n++] = "--";
	}
	argv[n++] = exe;
	for (int i = 0; args[i] && n < 39; i++)
		argv[n++] = args[i];
	argv[n] = NULL;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, 0);
		if (out) {
			fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
		} else {
			dup2(2, 1);
		}
		/* The server's user may not be able to enter our cwd. */
		if (chdir(d->dir) != 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int owned_dir(const struct devdb *d, const char *path, mode_t mode, struct mu_error *err)
{
	if (mkdir(path, mode) != 0 && errno != EEXIST)
		return mu_error_set(err, MU_EIO, "dir", "cannot create %s: %s", path, strerror(errno));
	if (d->as_root && chown(path, d->uid, d->gid) != 0)
		return mu_error_set(err, MU_EIO, "dir", "cannot chown %s: %s", path, strerror(errno));
	return 0;
}

/* The cluster must belong to the user we run the server as. */
static int check_owner(const struct devdb *d, struct mu_error *err)
{
	struct stat st;
	struct passwd *pw;

	if (stat(d->data, &st) != 0)
		return 0;
	if (st.st_uid == d->uid)
		return 0;
	pw = getpwuid(st.st_uid);
	return mu_error_set(err, MU_EFORBIDDEN, "dir",
			    "%s belongs to user %s (uid %u), but the server would run as uid %u%s: "
			    "run as that user, or use another --dir",
			    d->data, pw ? pw->pw_name : "?", (unsigned)st.st_uid, (unsigned)d->uid,
			    d->as_root ? " (" PG_USER ")" : "");
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

static int append_conf(const struct devdb *d, const char *data, struct mu_error *err)
{
	char path[DEVDB_PATH + 128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/postgresql.conf", data);
	f = fopen(path, "a");
	if (!f)
		return mu_error_set(err, MU_EIO, "", "cannot open %s: %s", path, strerror(errno));
	fprintf(f, "\n# muster dev database (store/devdb.c): Unix socket only, durable commits\n"
		   "listen_addresses = ''\nunix_socket_directories = '");
	for (const char *p = d->socket; *p; p++)
		fputs(*p == '\'' ? "''" : (char[]){ *p, 0 }, f);
	fprintf(f, "'\nport = %d\nmax_connections = 300\nfsync = on\nsynchronous_commit = on\n"
		   "lc_messages = 'C'\nlog_timezone = 'UTC'\ntimezone = 'UTC'\n",
		STORE_DEVDB_PORT);
	if (fclose(f) != 0)
		return mu_error_set(err, MU_EIO, "", "cannot write %s: %s", path, strerror(errno));
	return 0;
}

/*
 * Who may connect: only over the Unix socket, only by peer identity, and
 * only the owner (the user running muster-devdb, and the server's own
 * user; root when it runs the server as postgres), mapped to the database
 * superuser. Rewritten at every start, so clusters made when the dev
 * database trusted every local user are fixed too.
 */
static int write_auth(const struct devdb *d, struct mu_error *err)
{
	static const char *const names[] = { "pg_hba.conf", "pg_ident.conf" };
	char path[DEVDB_PATH + 64];
	struct passwd *pw;

	for (int i = 0; i < 2; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", d->data, names[i]);
		f = fopen(path, "w");
		if (!f)
			return mu_error_set(err, MU_EIO, "", "cannot write %s: %s", path, strerror(errno));
		fprintf(f, "# muster dev database (store/devdb.c): written at every start\n");
		if (i == 0) {
			fprintf(f, "local all all peer map=owner\n");
		} else {
			fprintf(f, "owner " PG_USER " " PG_USER "\n");
			if (d->as_root)
				fprintf(f, "owner root " PG_USER "\n");
			pw = getpwuid(geteuid());
			if (pw && strcmp(pw->pw_name, PG_USER) && strcmp(pw->pw_name, "root"))
				fprintf(f, "owner %s " PG_USER "\n", pw->pw_name);
		}
		if (fclose(f) != 0)
			return mu_error_set(err, MU_EIO, "", "cannot write %s: %s", path, strerror(errno));
		if (d->as_root && chown(path, d->uid, d->gid) != 0)
			return mu_error_set(err, MU_EIO, "", "cannot chown %s: %s", path, strerror(errno));
		chmod(path, 0600);
	}
	return 0;
}

static int initdb(struct devdb *d, struct mu_error *err)
{
	char tmp[DEVDB_PATH + 64], out[DEVDB_PATH + 64];
	int ret, rc;

	if (exists(d->data))
		return mu_error_set(err, MU_ESTATE, "dir",
				    "%s exists but holds no cluster (no PG_VERSION): remove it", d->data);
	snprintf(tmp, sizeof(tmp), "%s/data.init", d->dir);
	snprintf(out, sizeof(out), "%s/initdb.log", d->dir);
	/* A half-made cluster from an interrupted initdb is ours to remove. */
	if (exists(tmp) && nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		return mu_error_set(err, MU_EIO, "dir", "cannot remove %s: %s", tmp, strerror(errno));
	(void)unlink(out);
	ret = owned_dir(d, tmp, 0700, err);
	if (ret)
		return ret;
	{
		/* --no-sync + one syncfs below: as durable as initdb's own
		 * per-file fsyncs, and several times faster on a busy disk. */
		const char *args[] = { "-D", tmp, "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8",
				       "-U", PG_USER, "--no-instructions", "--no-sync", NULL };
		rc = run_pg(d, "initdb", args, out);
	}
	if (rc != 0)
		return mu_error_set(err, MU_EIO, "", "initdb failed (exit %d): see %s", rc, out);
	{
		int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || syncfs(fd) != 0) {
			ret = mu_error_set(err, MU_EIO, "", "cannot sync %s: %s", tmp, strerror(errno));
			if (fd >= 0)
				close(fd);
			return ret;
		}
		close(fd);
	}
	ret = append_conf(d, tmp, err);
	if (ret)
		return ret;
	if (rename(tmp, d->data) != 0)
		return mu_error_set(err, MU_EIO, "", "cannot rename %s: %s", tmp, strerror(errno));
	mu_info("devdb=%s created a cluster (%s)", d->dir, d->bindir);
	return 0;
}

static void make_url(const struct devdb *d, const char *db, char *url, size_t urlsz)
{
	snprintf(url, urlsz, "postgresql:///%s?host=%s&port=%d&user=" PG_USER, db, d->socket,
		 STORE_DEVDB_PORT);
}

static PGPing ping(const struct devdb *d)
{
	char url[DEVDB_PATH + 192];
	char conninfo[DEVDB_PATH + 224];

	make_url(d, "postgres", url, sizeof(url));
	snprintf(conninfo, sizeof(conninfo), "%s&connect_timeout=5", url);
	return PQping(conninfo);
}

/* The postmaster pid recorded in data/postmaster.pid, or 0. */
static pid_t recorded_pid(const struct devdb *d)
{
	char path[DEVDB_PATH + 64], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/postmaster.pid", d->data);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return (pid_t)atol(buf);
}

/* true when pid is a live postgres whose working directory is our data
 * dir (the postmaster chdirs there), i.e. not a stale, reused pid. */
static bool is_our_postmaster(const struct devdb *d, pid_t pid)
{
	char path[64], cwd[PATH_MAX], comm[64] = "";
	ssize_t n;
	FILE *f;

	if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
		return false;
	snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
	}
	if (strncmp(comm, "postgres", 8) != 0)
		return false;
	/* A killed postmaster whose parent is an init that does not reap (as
	 * in some containers) stays a zombie: dead all the same. */
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	f = fopen(path, "r");
	if (f) {
		char line[512] = "";
		size_t got = fread(line, 1, sizeof(line) - 1, f);
		const char *rp;
		fclose(f);
		line[got] = '\0';
		rp = strrchr(line, ')');
		if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'))
			return false;
	}
	snprintf(path, sizeof(path), "/proc/%ld/cwd", (long)pid);
	n = readlink(path, cwd, sizeof(cwd) - 1);
	if (n < 0)
		return true; /* cannot tell: assume it is, the safe side */
	cwd[n] = '\0';
	return strcmp(cwd, d->data) == 0;
}

static void remove_stale(const struct devdb *d, pid_t pid)
{
	char path[DEVDB_PATH + 64];

	mu_warn("devdb=%s removing stale postmaster.pid (pid %ld is not this cluster's server; "
		"it crashed or was killed)",
		d->dir, (long)pid);
	snprintf(path, sizeof(path), "%s/postmaster.pid", d->data);
	(void)unlink(path);
	snprintf(path, sizeof(path), "%s/.s.PGSQL.%d.lock", d->socket, STORE_DEVDB_PORT);
	(void)unlink(path);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static int create_database(const struct devdb *d, struct mu_error *err)
{
	char url[DEVDB_PATH + 192];
	PGconn *c;
	int64_t n = 0;
	int ret;

	make_url(d, "postgres", url, sizeof(url));
	c = store_db_connect(url, "muster-devdb", err);
	if (!c)
		return MU_EUNAVAIL;
	ret = store_db_query_int64(c, "SELECT count(*) FROM pg_database WHERE datname = 'muster'", 0,
				   NULL, &n, err);
	if (!ret && n == 0)
		ret = store_db_exec_simple(c, "CREATE DATABASE muster", err);
	store_db_close(c);
	return ret;
}

static int start_locked(struct devdb *d, struct mu_error *err)
{
	char path[DEVDB_PATH + 64];
	pid_t pid;
	int ret, rc;

	if (d->as_root && chown(d->dir, d->uid, d->gid) != 0)
		return mu_error_set(err, MU_EIO, "dir", "cannot chown %s: %s", d->dir, strerror(errno));
	if (d->as_root) {
		/* The server's user must reach the dir through its parents. */
		const char *args[] = { "-w", d->dir, NULL };
		struct devdb t = *d;
		snprintf(t.bindir, sizeof(t.bindir), "/usr/bin");
		if (run_pg(&t, "test", args, "/dev/null") != 0)
			return mu_error_set(err, MU_EFORBIDDEN, "dir",
					    "user " PG_USER " cannot write %s: make its parent "
					    "directories traversable (chmod o+x) or use another --dir",
					    d->dir);
	}
	ret = check_owner(d, err);
	if (ret)
		return ret;
	ret = find_bindir(d, err);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/PG_VERSION", d->data);
	if (!exists(path)) {
		ret = initdb(d, err);
		if (ret)
			return ret;
	}
	/* the socket's directory is the owner's alone */
	ret = owned_dir(d, d->socket, 0700, err);
	if (ret)
		return ret;
	if (chmod(d->socket, 0700) != 0)
		return mu_error_set(err, MU_EIO, "dir", "cannot chmod %s: %s", d->socket, strerror(errno));
	ret = write_auth(d, err);
	if (ret)
		return ret;

	if (ping(d) == PQPING_OK)
		return create_database(d, err);

	pid = recorded_pid(d);
	if (pid && is_our_postmaster(d, pid)) {
		/* Alive but not answering: starting up or recovering. */
		for (int i = 0; i < 1200 && ping(d) != PQPING_OK; i++)
			sleep_ms(100);
		if (ping(d) != PQPING_OK)
			return mu_error_set(err, MU_EUNAVAIL, "",
					    "server pid %ld runs in %s but does not accept "
					    "connections: see %s",
					    (long)pid, d->data, d->log);
		return create_database(d, err);
	}
	if (pid)
		remove_stale(d, pid);

	{
		int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0)
			close(fd);
		if (d->as_root && chown(d->log, d->uid, d->gid) != 0)
			return mu_error_set(err, MU_EIO, "", "cannot chown %s: %s", d->log,
					    strerror(errno));
	}
	{
		const char *args[] = { "-D", d->data, "-l", d->log, "-w", "-t", "120", "start", NULL };
		rc = run_pg(d, "pg_ctl", args, NULL);
	}
	if (rc != 0)
		return mu_error_set(err, MU_EUNAVAIL, "", "pg_ctl start failed (exit %d): see %s", rc,
				    d->log);
	return create_database(d, err);
}

int store_devdb_start(const char *dir, char *url, size_t urlsz, struct mu_error *err)
{
	struct devdb d;
	int ret = devdb_init(&d, dir, true, err);

	if (ret)
		goto out;
	ret = lock_dir(&d, err);
	if (ret)
		goto out;
	ret = start_locked(&d, err);
	if (!ret && url)
		make_url(&d, "muster", url, urlsz);
out:
	devdb_release(&d);
	return ret;
}

int store_devdb_stop(const char *dir, struct mu_error *err)
{
	struct devdb d;
	pid_t pid;
	int ret = devdb_init(&d, dir, false, err);

	if (ret)
		goto out;
	if (!exists(d.dir))
		goto out; /* nothing there, nothing running */
	ret = lock_dir(&d, err);
	if (ret)
		goto out;
	pid = recorded_pid(&d);
	if (!pid)
		goto out;
	if (!is_our_postmaster(&d, pid)) {
		remove_stale(&d, pid);
		goto out;
	}
	ret = find_bindir(&d, err);
	if (ret)
		goto out;
	{
		const char *args[] = { "-D", d.data, "-m", "fast", "-w", "-t", "120", "stop", NULL };
		int rc = run_pg(&d, "pg_ctl", args, NULL);
		if (rc != 0 && is_our_postmaster(&d, pid))
			ret = mu_error_set(err, MU_EUNAVAIL, "", "pg_ctl stop failed (exit %d): see %s",
					   rc, d.log);
	}
out:
	devdb_release(&d);
	return ret;
}

int store_devdb_url(const char *dir, char *url, size_t urlsz, struct mu_error *err)
{
	struct devdb d;
	int ret = devdb_init(&d, dir, false, err);

	if (!ret)
		make_url(&d, "muster", url, urlsz);
	devdb_release(&d);
	return ret;
}

int store_devdb_status(const char *dir, bool *initialised, bool *running, struct mu_error *err)
{
	struct devdb d;
	char path[DEVDB_PATH + 64];
	int ret = devdb_init(&d, dir, false, err);

	*initialised = *running = false;
	if (ret)
		goto out;
	snprintf(path, sizeof(path), "%s/PG_VERSION", d.data);
	*initialised = exists(path);
	*running = *initialised && ping(&d) == PQPING_OK;
out:
	devdb_release(&d);
	return ret;
}
