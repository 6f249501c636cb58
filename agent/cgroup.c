/*
 * cgroup.c - one cgroup per run per node: every process of the run (and
 * whatever it forks, setsid or not) is inside, so a stop kills them all,
 * limits apply to the run as a whole and an OOM kill is seen.
 *
 * Layouts (docs/agent.md):
 *   v2      <mount>/<root>/<node>/run-<id>            (memory, cpu, pids when
 *                                                      the parent offers them)
 *   hybrid  <mount>/unified/<root>/<node>/run-<id>    (tracking, cgroup.kill)
 *           + <mount>/<ctrl>/<root>/<node>/run-<id>   for v1 memory, pids,
 *                                                      devices, freezer, cpu
 *   v1      the v1 controllers only (kill through the freezer)
 * The run's `name` below is "<root>/<node>/run-<id>", relative to each
 * hierarchy's mount point; the agent records it in its state file.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif

static const char *const v1_names[AG_CG_NV1] = { "memory", "pids", "devices", "freezer", "cpu" };

static bool fs_is(const char *path, long magic)
{
	struct statfs st;
	return statfs(path, &st) == 0 && (long)st.f_type == magic;
}

/* Writes `text` to the file (no O_CREAT: cgroup files exist or not).
 * Only open/write/close: used in the keeper after fork. */
static int put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, text, strlen(text));
	int e = w < 0 ? -errno : 0;
	close(fd);
	return e;
}

static int get(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t r = read(fd, buf, n - 1);
	close(fd);
	if (r < 0)
		return -errno;
	buf[r] = '\0';
	return (int)r;
}

static bool has_word(const char *list, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = list; (p = strstr(p, w)); p += n)
		if ((p == list || p[-1] == ' ' || p[-1] == '\n') &&
		    (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return true;
	return false;
}

/* mkdir -p of `rel` under `base`; in v2 each new level's parent offers
 * `ctrl` ("+memory +cpu +pids", those available) to its children. */
static int mkpath(const char *base, const char *rel, const char *ctrl)
{
	char path[4096], f[4200];
	size_t bl = (size_t)snprintf(path, sizeof(path), "%s/%s", base, rel);
	if (bl >= sizeof(path))
		return -ENAMETOOLONG;
	for (char *p = path + strlen(base) + 1;; p++) {
		char c = *p;
		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return -errno;
		if (c == '\0') {
			/* one made earlier by a root agent is there but not ours */
			if (access(path, W_OK) != 0)
				return -errno;
			break;
		}
		if (ctrl && *ctrl) {
			snprintf(f, sizeof(f), "%s/cgroup.subtree_control", path);
			put(f, ctrl); /* best effort: what cannot be enabled is not limited */
		}
		*p = c;
	}
	return 0;
}

int ag_cg_detect(struct ag_cg *c, const char *mode, const char *mount, const char *root,
		 struct mu_error *err)
{
	char path[4200], buf[512];

	memset(c, 0, sizeof(*c));
	snprintf(c->mount, sizeof(c->mount), "%s", mount);
	snprintf(c->root, sizeof(c->root), "%s", root);
	if (!strcmp(mode, "off"))
		return 0;
	if (strcmp(mode, "auto") && strcmp(mode, "on") && strcmp(mode, "v1"))
		return mu_error_set(err, MU_EINVAL, "cgroups", "must be auto, on, v1 or off, not %s",
				    mode);
	if (!*root || root[0] == '/' || strstr(root, ".."))
		return mu_error_set(err, MU_EINVAL, "cgroup-root",
				    "must be a relative path under each hierarchy (like muster), not %s",
				    root);
	if (fs_is(mount, CGROUP2_SUPER_MAGIC)) {
		c->mode = AG_CG_V2;
		snprintf(c->v2, sizeof(c->v2), "%s", mount);
	} else {
		snprintf(path, sizeof(path), "%s/unified", mount);
		if (strcmp(mode, "v1") && fs_is(path, CGROUP2_SUPER_MAGIC))
			snprintf(c->v2, sizeof(c->v2), "%.290s", path);
		for (int i = 0; i < AG_CG_NV1; i++) {
			snprintf(path, sizeof(path), "%s/%s", mount, v1_names[i]);
			c->v1[i] = fs_is(path, CGROUP_SUPER_MAGIC);
		}
		c->mode = c->v2[0] ? AG_CG_HYBRID : AG_CG_V1;
		if (c->mode == AG_CG_V1 && !c->v1[AG_CG_FREEZER]) {
			c->mode = AG_CG_OFF;
			return strcmp(mode, "auto") ? mu_error_set(err, MU_EUNAVAIL, "cgroups",
							      "no cgroup v2 and no v1 freezer under %s",
							      mount)
					      : 0;
		}
	}
	if (c->v2[0]) {
		/* the controllers the v2 root offers; ours enables them below it */
		snprintf(path, sizeof(path), "%s/cgroup.controllers", c->v2);
		if (get(path, buf, sizeof(buf)) >= 0) {
			c->v2_memory = has_word(buf, "memory");
			c->v2_cpu = has_word(buf, "cpu");
			c->v2_pids = has_word(buf, "pids");
		}
		snprintf(c->v2_ctrl, sizeof(c->v2_ctrl), "%s%s%s", c->v2_memory ? "+memory " : "",
			 c->v2_cpu ? "+cpu " : "", c->v2_pids ? "+pids" : "");
		if (c->mode == AG_CG_V2)
			c->devices_bpf = true;
	}
	/* the root must be ours to create in: a non-root agent usually cannot */
	int rc = 0;
	if (c->v2[0])
		rc = mkpath(c->v2, root, c->v2_ctrl);
	for (int i = 0; i < AG_CG_NV1 && rc == 0; i++) {
		if (!c->v1[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s", mount, v1_names[i]);
		rc = mkpath(path, root, NULL);
	}
	if (rc != 0) {
		enum ag_cg_mode m = c->mode;
		c->mode = AG_CG_OFF;
		if (strcmp(mode, "auto"))
			return mu_error_set(err, MU_EUNAVAIL, "cgroup-root", "cannot create %s under %s: %s",
					    root, m == AG_CG_V2 ? c->v2 : mount, strerror(-rc));
		mu_warn("cgroups: cannot create %s under %s (%s): runs are tracked by process group"
			" only, without limits", root, mount, strerror(-rc));
	}
	return 0;
}

const char *ag_cg_mode_name(const struct ag_cg *c)
{
	static const char *const names[] = { "off", "v2", "hybrid", "v1" };
	return names[c->mode];
}

static void v1_path(const struct ag_cg *c, int i, const char *name, const char *file, char *out,
		    size_t n)
{
	snprintf(out, n, "%s/%s/%s%s%s", c->mount, v1_names[i], name, file ? "/" : "", file ? file : "");
}

static void v2_path(const struct ag_cg *c, const char *name, const char *file, char *out, size_t n)
{
	snprintf(out, n, "%s/%s%s%s", c->v2, name, file ? "/" : "", file ? file : "");
}

/* v2 device program: deny char 195:<minor> for the minors listed, allow
 * everything else. Loaded with the raw bpf(2) system call (no libbpf). */
static int bpf_devices(const struct ag_cg *c, const char *name, const int *deny, int ndeny,
		       char *why, size_t whyn)
{
	struct bpf_insn prog[8 + 2 * AG_MAX_GPUS], *p = prog;
	char path[4200], log[1024] = "";
	union bpf_attr attr;
	int pfd = -1, cfd = -1, rc = -1;

	if (ndeny <= 0)
		return 0;
#define INSN(c_, d_, s_, o_, i_) (*p++ = (struct bpf_insn){ .code = (c_), .dst_reg = (d_), \
	.src_reg = (s_), .off = (o_), .imm = (i_) })
	INSN(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_2, BPF_REG_1, 0, 0); /* access_type */
	INSN(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);    /* device type */
	INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, (short)(ndeny + 3), BPF_DEVCG_DEV_CHAR);
	INSN(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_3, BPF_REG_1, 4, 0); /* major */
	INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, (short)(ndeny + 1), 195);
	INSN(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_4, BPF_REG_1, 8, 0); /* minor */
	for (int i = 0; i < ndeny; i++) /* to the deny exit, past the rest and allow */
		INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_4, 0, (short)(ndeny - 1 - i + 2), deny[i]);
	INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1); /* allow */
	INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0); /* deny */
	INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
#undef INSN
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.insns = (uint64_t)(uintptr_t)prog;
	attr.insn_cnt = (uint32_t)(p - prog);
	attr.license = (uint64_t)(uintptr_t) "GPL";
	attr.log_buf = (uint64_t)(uintptr_t)log;
	attr.log_size = sizeof(log);
	attr.log_level = 1;
	pfd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (pfd < 0) {
		snprintf(why, whyn, "bpf device program: load: %s %.200s", strerror(errno), log);
		goto out;
	}
	v2_path(c, name, NULL, path, sizeof(path));
	cfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cfd < 0) {
		snprintf(why, whyn, "bpf device program: %s: %s", path, strerror(errno));
		goto out;
	}
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = (uint32_t)cfd;
	attr.attach_bpf_fd = (uint32_t)pfd;
	attr.attach_type = BPF_CGROUP_DEVICE;
	attr.attach_flags = BPF_F_ALLOW_MULTI; /* with systemd's own device policy, if any */
	if (syscall(SYS_bpf, BPF_PROG_ATTACH, &attr, sizeof(attr)) != 0) {
		snprintf(why, whyn, "bpf device program: attach to %s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0; /* the attachment holds the program for the cgroup's life */
out:
	if (pfd >= 0)
		close(pfd);
	if (cfd >= 0)
		close(cfd);
	return rc;
}

int ag_cg_create(const struct ag_cg *c, const char *name, const struct ag_cg_limits *lim, char *why,
		 size_t whyn)
{
	char path[4200], v[64];
	int rc;

	if (c->mode == AG_CG_OFF)
		return 0;
	if (c->v2[0] && (rc = mkpath(c->v2, name, c->v2_ctrl)) != 0) {
		snprintf(why, whyn, "cgroup %s/%s: %s", c->v2, name, strerror(-rc));
		return MU_EIO;
	}
	for (int i = 0; i < AG_CG_NV1; i++) {
		if (!c->v1[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s", c->mount, v1_names[i]);
		if ((rc = mkpath(path, name, NULL)) != 0) {
			snprintf(why, whyn, "cgroup %s/%s: %s", path, name, strerror(-rc));
			return MU_EIO;
		}
	}
	if (lim->mem_bytes > 0) {
		snprintf(v, sizeof(v), "%lld", (long long)lim->mem_bytes);
		rc = -ENOTSUP;
		if (c->v1[AG_CG_MEMORY]) {
			v1_path(c, AG_CG_MEMORY, name, "memory.limit_in_bytes", path, sizeof(path));
			rc = put(path, v);
			/* no swapping past the limit either, where swap is accounted */
			v1_path(c, AG_CG_MEMORY, name, "memory.memsw.limit_in_bytes", path, sizeof(path));
			put(path, v);
		} else if (c->v2_memory) {
			v2_path(c, name, "memory.max", path, sizeof(path));
			rc = put(path, v);
			v2_path(c, name, "memory.swap.max", path, sizeof(path));
			put(path, "0");
		}
		if (rc != 0) {
			snprintf(why, whyn, "memory limit %lld bytes: %s", (long long)lim->mem_bytes,
				 rc == -ENOTSUP ? "no memory controller on this node" : strerror(-rc));
			return MU_EUNAVAIL;
		}
	}
	if (lim->cpus > 0) {
		rc = -ENOTSUP;
		if (c->v2_cpu) {
			snprintf(v, sizeof(v), "%d 100000", lim->cpus * 100000);
			v2_path(c, name, "cpu.max", path, sizeof(path));
			rc = put(path, v);
		} else if (c->v1[AG_CG_CPU]) {
			v1_path(c, AG_CG_CPU, name, "cpu.cfs_period_us", path, sizeof(path));
			put(path, "100000");
			snprintf(v, sizeof(v), "%d", lim->cpus * 100000);
			v1_path(c, AG_CG_CPU, name, "cpu.cfs_quota_us", path, sizeof(path));
			rc = put(path, v);
		}
		if (rc != 0)
			mu_warn("cgroup=%s cpus_per_node %d not enforced: %s", name, lim->cpus,
				rc == -ENOTSUP ? "no cpu controller" : strerror(-rc));
	}
	if (lim->pids_max > 0) {
		snprintf(v, sizeof(v), "%d", lim->pids_max);
		rc = -ENOTSUP;
		if (c->v1[AG_CG_PIDS]) {
			v1_path(c, AG_CG_PIDS, name, "pids.max", path, sizeof(path));
			rc = put(path, v);
		} else if (c->v2_pids) {
			v2_path(c, name, "pids.max", path, sizeof(path));
			rc = put(path, v);
		}
		if (rc != 0)
			mu_warn("cgroup=%s --pids-max %d not enforced: %s", name, lim->pids_max,
				rc == -ENOTSUP ? "no pids controller" : strerror(-rc));
	}
	if (lim->ndeny > 0) {
		if (c->v1[AG_CG_DEVICES] && !c->devices_bpf) {
			for (int i = 0; i < lim->ndeny; i++) {
				snprintf(v, sizeof(v), "c %d:%d rwm", lim->deny_major[i], lim->deny_minor[i]);
				v1_path(c, AG_CG_DEVICES, name, "devices.deny", path, sizeof(path));
				if ((rc = put(path, v)) != 0) {
					snprintf(why, whyn, "devices.deny %s: %s", v, strerror(-rc));
					return MU_EIO;
				}
			}
		} else if (c->v2[0]) {
			if (bpf_devices(c, name, lim->deny_minor, lim->ndeny, why, whyn) != 0)
				return MU_EIO;
		} else {
			snprintf(why, whyn, "no device controller to deny the GPUs not granted");
			return MU_EUNAVAIL;
		}
	}
	return 0;
}

int ag_cg_enter(const struct ag_cg *c, const char *name, pid_t pid)
{
	char path[4200], v[24];
	int rc = 0;

	if (c->mode == AG_CG_OFF || !name || !*name)
		return 0;
	snprintf(v, sizeof(v), "%d", (int)pid);
	if (c->v2[0]) {
		v2_path(c, name, "cgroup.procs", path, sizeof(path));
		rc = put(path, v);
	}
	for (int i = 0; i < AG_CG_NV1 && rc == 0; i++) {
		if (!c->v1[i])
			continue;
		v1_path(c, i, name, "cgroup.procs", path, sizeof(path));
		rc = put(path, v);
	}
	return rc;
}

/* The pids listed in the tracking hierarchy's cgroup.procs (v2 when there
 * is one, else the freezer's). Returns the count (-1: no such cgroup). */
static int procs(const struct ag_cg *c, const char *name, pid_t *out, int max)
{
	char path[4200], line[32];
	int n = 0;

	if (c->v2[0])
		v2_path(c, name, "cgroup.procs", path, sizeof(path));
	else
		v1_path(c, AG_CG_FREEZER, name, "cgroup.procs", path, sizeof(path));
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (n < max && out)
			out[n] = (pid_t)atoi(line);
		n++;
	}
	fclose(f);
	return n;
}

int ag_cg_nprocs(const struct ag_cg *c, const char *name)
{
	if (c->mode == AG_CG_OFF || !name || !*name)
		return -1;
	return procs(c, name, NULL, 0);
}

void ag_cg_signal(const struct ag_cg *c, const char *name, int sig)
{
	pid_t pids[1024];
	if (c->mode == AG_CG_OFF || !name || !*name)
		return;
	int n = procs(c, name, pids, 1024);
	for (int i = 0; i < n && i < 1024; i++)
		if (pids[i] > 0)
			kill(pids[i], sig);
}

void ag_cg_kill(const struct ag_cg *c, const char *name)
{
	char path[4200], st[32];

	if (c->mode == AG_CG_OFF || !name || !*name)
		return;
	if (c->v2[0]) {
		v2_path(c, name, "cgroup.kill", path, sizeof(path));
		if (put(path, "1") == 0)
			return; /* the kernel kills every process, forks in flight included */
	}
	if (!c->v1[AG_CG_FREEZER]) {
		ag_cg_signal(c, name, SIGKILL);
		return;
	}
	/* v1: freeze (nothing can fork), kill all, thaw (the kills land) */
	v1_path(c, AG_CG_FREEZER, name, "freezer.state", path, sizeof(path));
	put(path, "FROZEN");
	for (int i = 0; i < 100; i++) {
		if (get(path, st, sizeof(st)) < 0 || !strncmp(st, "FROZEN", 6))
			break;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	ag_cg_signal(c, name, SIGKILL);
	put(path, "THAWED");
}

bool ag_cg_oom(const struct ag_cg *c, const char *name)
{
	char path[4200], buf[1024];
	const char *p;

	if (c->mode == AG_CG_OFF || !name || !*name)
		return false;
	if (c->v1[AG_CG_MEMORY])
		v1_path(c, AG_CG_MEMORY, name, "memory.oom_control", path, sizeof(path));
	else if (c->v2_memory)
		v2_path(c, name, "memory.events", path, sizeof(path));
	else
		return false;
	if (get(path, buf, sizeof(buf)) < 0)
		return false;
	for (p = buf; (p = strstr(p, "oom_kill ")); p += 9)
		if ((p == buf || p[-1] == '\n') && atol(p + 9) > 0)
			return true;
	return false;
}

bool ag_cg_exists(const struct ag_cg *c, const char *name)
{
	char path[4200];
	struct stat st;

	if (c->mode == AG_CG_OFF || !name || !*name)
		return false;
	if (c->v2[0])
		v2_path(c, name, NULL, path, sizeof(path));
	else
		v1_path(c, AG_CG_FREEZER, name, NULL, path, sizeof(path));
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void ag_cg_remove(const struct ag_cg *c, const char *name)
{
	char path[4200];

	if (c->mode == AG_CG_OFF || !name || !*name)
		return;
	if (c->v2[0]) {
		v2_path(c, name, NULL, path, sizeof(path));
		if (rmdir(path) != 0 && errno != ENOENT)
			mu_warn("cgroup=%s cannot remove: %s", path, strerror(errno));
	}
	for (int i = 0; i < AG_CG_NV1; i++) {
		if (!c->v1[i])
			continue;
		v1_path(c, i, name, NULL, path, sizeof(path));
		if (rmdir(path) != 0 && errno != ENOENT)
			mu_warn("cgroup=%s cannot remove: %s", path, strerror(errno));
	}
}
