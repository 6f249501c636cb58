/*
 * runas.c - which Unix account a job runs as, and the irreversible drop
 * to it in the job's process.
 *
 * Everything NSS does (getpwnam_r, getgrouplist) happens in the agent
 * before it forks: the agent has gRPC threads, and after fork() only
 * async-signal-safe calls are sound, so the child only makes the
 * setgroups/setgid/setuid system calls with what was resolved here.
 */
#define _GNU_SOURCE /* getgrouplist, setgroups */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "alloc.h"
#include "log.h"

int ag_runas_policy_init(struct ag_runas_policy *p, long min_uid, bool allow_root, bool single_user)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	memset(p, 0, sizeof(*p));
	p->min_uid = min_uid;
	p->allow_root = allow_root;
	p->single_user = single_user;
	p->agent_uid = geteuid();
	if (getpwuid_r(p->agent_uid, &pw, buf, sizeof(buf), &res) != 0 || !res)
		return MU_EINVAL;
	snprintf(p->agent_user, sizeof(p->agent_user), "%s", pw.pw_name);
	return 0;
}

int ag_runas_resolve(const struct ag_runas_policy *p, const char *user, struct ag_ident *id,
		     char *why, size_t whyn)
{
	struct passwd pw, *res = NULL;
	char buf[8192];
	int rc;

	memset(id, 0, sizeof(*id));
	if (p->single_user) {
		rc = getpwuid_r(p->agent_uid, &pw, buf, sizeof(buf), &res);
	} else {
		if (!user || !*user) {
			snprintf(why, whyn, "the job names no user");
			return MU_EFORBIDDEN;
		}
		if (p->agent_uid != 0 && strcmp(user, p->agent_user) != 0) {
			snprintf(why, whyn, "this agent is not root: it runs jobs of its own user %.64s"
				 " only, not %.64s (--single-user runs every job as the agent's user)",
				 p->agent_user, user);
			return MU_EFORBIDDEN;
		}
		rc = getpwnam_r(user, &pw, buf, sizeof(buf), &res);
	}
	if (rc != 0 || !res) {
		snprintf(why, whyn, "no Unix account %.64s on this node",
			 p->single_user ? p->agent_user : user);
		return MU_EFORBIDDEN;
	}
	if (pw.pw_uid == 0 && !p->allow_root) {
		snprintf(why, whyn, "account %.64s is root (uid 0): refused without --allow-root-jobs",
			 pw.pw_name);
		return MU_EFORBIDDEN;
	}
	if (pw.pw_uid != 0 && (long)pw.pw_uid < p->min_uid && pw.pw_uid != p->agent_uid) {
		snprintf(why, whyn, "account %.64s has uid %ld, below --min-uid %ld", pw.pw_name,
			 (long)pw.pw_uid, p->min_uid);
		return MU_EFORBIDDEN;
	}
	id->uid = pw.pw_uid;
	id->gid = pw.pw_gid;
	snprintf(id->name, sizeof(id->name), "%s", pw.pw_name);
	snprintf(id->home, sizeof(id->home), "%s", pw.pw_dir && *pw.pw_dir ? pw.pw_dir : "/");
	snprintf(id->shell, sizeof(id->shell), "%s",
		 pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh");
	/* the agent changes identity only when it can and must */
	id->drop = p->agent_uid == 0 && (pw.pw_uid != 0 || pw.pw_gid != 0);
	id->ngroups = AG_MAX_GROUPS;
	if (getgrouplist(pw.pw_name, pw.pw_gid, id->groups, &id->ngroups) < 0) {
		snprintf(why, whyn, "account %.64s is in more than %d groups", pw.pw_name,
			 AG_MAX_GROUPS);
		return MU_EFORBIDDEN;
	}
	return 0;
}

int ag_runas_drop(const struct ag_ident *id)
{
	if (!id || !id->drop)
		return 0;
	if (setgroups((size_t)id->ngroups, id->groups) != 0)
		return -errno;
	if (setresgid(id->gid, id->gid, id->gid) != 0)
		return -errno;
	if (setresuid(id->uid, id->uid, id->uid) != 0)
		return -errno;
	/* irreversible: neither the real, effective nor saved uid is 0 now */
	if (id->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0))
		return -EPERM;
	return 0;
}
