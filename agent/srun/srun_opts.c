/* srun_opts.c - see srun_opts.h. */
#include "srun_opts.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "hostlist.h"

enum arg { NONE, REQ, OPT }; /* takes no value, a value, an optional one (=value only) */

enum act {
	IGNORE,   /* no meaning here: accepted silently */
	WARN,     /* accepted, one warning line (its meaning changes here) */
	REFUSE,   /* its meaning cannot be kept: an error */
	NODES,
	NTASKS,
	PER_NODE,
	EXPORT,
	CHDIR,
	LABEL,
	HELP,
	VERSION,
};

struct opt {
	const char *name; /* long name, NULL for a short-only option */
	char short_name;  /* 0 for a long-only option */
	enum arg arg;
	enum act act;
	const char *why;  /* WARN and REFUSE: the reason */
};

static const char out_files[] = "output goes to the job's output files (sbatch -o/-e)";

/* srun's options (srun(1), Slurm 23.x), the ones with a meaning first. */
static const struct opt opts[] = {
	{ "nodes", 'N', REQ, NODES, NULL },
	{ "ntasks", 'n', REQ, NTASKS, NULL },
	{ "ntasks-per-node", 0, REQ, PER_NODE, NULL },
	{ "export", 0, REQ, EXPORT, NULL },
	{ "chdir", 'D', REQ, CHDIR, NULL },
	{ "label", 'l', NONE, LABEL, NULL },
	{ "help", 'h', NONE, HELP, NULL },
	{ "usage", 0, NONE, HELP, NULL },
	{ "version", 'V', NONE, VERSION, NULL },
	{ "output", 'o', REQ, WARN, out_files },
	{ "error", 'e', REQ, WARN, out_files },
	{ "input", 'i', REQ, WARN, "a task's stdin is /dev/null" },
	{ "open-mode", 0, REQ, WARN, out_files },
	{ "pty", 0, NONE, WARN, "no pseudo-terminal in a batch job" },
	{ "x11", 0, OPT, WARN, "no X11 forwarding" },
	{ "multi-prog", 0, NONE, REFUSE, "--multi-prog is not supported: run the program of "
					 "each task from the script ($SLURM_PROCID)" },
	{ "het-group", 0, REQ, REFUSE, "heterogeneous jobs are not supported" },
	{ "jobid", 0, REQ, REFUSE, "a step of another job cannot be started from a script" },
	/* resources, binding, placement: the job's allocation already holds them */
	{ "mpi", 0, REQ, IGNORE, NULL },
	{ "cpu-bind", 0, REQ, IGNORE, NULL },
	{ "gpu-bind", 0, REQ, IGNORE, NULL },
	{ "mem-bind", 0, REQ, IGNORE, NULL },
	{ "accel-bind", 0, REQ, IGNORE, NULL },
	{ "hint", 0, REQ, IGNORE, NULL },
	{ "distribution", 'm', REQ, IGNORE, NULL },
	{ "kill-on-bad-exit", 'K', OPT, IGNORE, NULL },
	{ "unbuffered", 'u', NONE, IGNORE, NULL },
	{ "overlap", 0, NONE, IGNORE, NULL },
	{ "exclusive", 0, OPT, IGNORE, NULL },
	{ "exact", 0, NONE, IGNORE, NULL },
	{ "whole", 0, NONE, IGNORE, NULL },
	{ "oversubscribe", 's', NONE, IGNORE, NULL },
	{ "overcommit", 'O', NONE, IGNORE, NULL },
	{ "mem", 0, REQ, IGNORE, NULL },
	{ "mem-per-cpu", 0, REQ, IGNORE, NULL },
	{ "mem-per-gpu", 0, REQ, IGNORE, NULL },
	{ "cpus-per-task", 'c', REQ, IGNORE, NULL },
	{ "cpus-per-gpu", 0, REQ, IGNORE, NULL },
	{ "gpus", 'G', REQ, IGNORE, NULL },
	{ "gpus-per-node", 0, REQ, IGNORE, NULL },
	{ "gpus-per-task", 0, REQ, IGNORE, NULL },
	{ "gpus-per-socket", 0, REQ, IGNORE, NULL },
	{ "gres", 0, REQ, IGNORE, NULL },
	{ "gres-flags", 0, REQ, IGNORE, NULL },
	{ "ntasks-per-core", 0, REQ, IGNORE, NULL },
	{ "ntasks-per-socket", 0, REQ, IGNORE, NULL },
	{ "ntasks-per-gpu", 0, REQ, IGNORE, NULL },
	{ "sockets-per-node", 0, REQ, IGNORE, NULL },
	{ "cores-per-socket", 0, REQ, IGNORE, NULL },
	{ "threads-per-core", 0, REQ, IGNORE, NULL },
	{ "extra-node-info", 'B', REQ, IGNORE, NULL },
	{ "core-spec", 'S', REQ, IGNORE, NULL },
	{ "thread-spec", 0, REQ, IGNORE, NULL },
	{ "cpu-freq", 0, REQ, IGNORE, NULL },
	{ "tmp", 0, REQ, IGNORE, NULL },
	{ "constraint", 'C', REQ, IGNORE, NULL },
	{ "nodelist", 'w', REQ, IGNORE, NULL },
	{ "exclude", 'x', REQ, IGNORE, NULL },
	{ "relative", 'r', REQ, IGNORE, NULL },
	{ "contiguous", 0, NONE, IGNORE, NULL },
	{ "switches", 0, REQ, IGNORE, NULL },
	{ "network", 0, REQ, IGNORE, NULL },
	{ "spread-job", 0, NONE, IGNORE, NULL },
	{ "resv-ports", 0, OPT, IGNORE, NULL },
	/* the job's, not the step's */
	{ "time", 't', REQ, IGNORE, NULL },
	{ "time-min", 0, REQ, IGNORE, NULL },
	{ "job-name", 'J', REQ, IGNORE, NULL },
	{ "partition", 'p', REQ, IGNORE, NULL },
	{ "account", 'A', REQ, IGNORE, NULL },
	{ "qos", 'q', REQ, IGNORE, NULL },
	{ "reservation", 0, REQ, IGNORE, NULL },
	{ "comment", 0, REQ, IGNORE, NULL },
	{ "licenses", 'L', REQ, IGNORE, NULL },
	{ "dependency", 'd', REQ, IGNORE, NULL },
	{ "begin", 0, REQ, IGNORE, NULL },
	{ "nice", 0, OPT, IGNORE, NULL },
	{ "priority", 0, REQ, IGNORE, NULL },
	{ "mcs-label", 0, REQ, IGNORE, NULL },
	{ "profile", 0, REQ, IGNORE, NULL },
	{ "power", 0, REQ, IGNORE, NULL },
	{ "container", 0, REQ, IGNORE, NULL },
	{ "signal", 0, REQ, IGNORE, NULL },
	{ "mail-type", 0, REQ, IGNORE, NULL },
	{ "mail-user", 0, REQ, IGNORE, NULL },
	/* srun's own behaviour */
	{ "wait", 'W', REQ, IGNORE, NULL },
	{ "quit-on-interrupt", 0, NONE, IGNORE, NULL },
	{ "immediate", 'I', OPT, IGNORE, NULL },
	{ "no-kill", 'k', OPT, IGNORE, NULL },
	{ "no-allocate", 'Z', NONE, IGNORE, NULL },
	{ "disable-status", 'X', NONE, IGNORE, NULL },
	{ "verbose", 'v', NONE, IGNORE, NULL },
	{ "quiet", 'Q', NONE, IGNORE, NULL },
	{ "propagate", 0, OPT, IGNORE, NULL },
	{ "prolog", 0, REQ, IGNORE, NULL },
	{ "epilog", 0, REQ, IGNORE, NULL },
	{ "task-prolog", 0, REQ, IGNORE, NULL },
	{ "task-epilog", 0, REQ, IGNORE, NULL },
	{ "send-libs", 0, OPT, IGNORE, NULL },
	{ "slurmd-debug", 0, REQ, IGNORE, NULL },
	{ "test-only", 0, NONE, IGNORE, NULL },
	{ "hold", 'H', NONE, IGNORE, NULL },
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return MU_EINVAL;
}

static void warn(struct srun_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct srun_opts *o, const char *fmt, ...)
{
	size_t n = strlen(o->warn);
	va_list ap;

	if (n + 1 >= sizeof(o->warn))
		return;
	n += (size_t)snprintf(o->warn + n, sizeof(o->warn) - n, "muster: srun: warning: ");
	if (n >= sizeof(o->warn))
		return;
	va_start(ap, fmt);
	n += (size_t)vsnprintf(o->warn + n, sizeof(o->warn) - n, fmt, ap);
	va_end(ap);
	if (n + 1 < sizeof(o->warn))
		strcat(o->warn, "\n");
}

/* A count >= 1 (srun accepts nothing else for -N and -n). */
static int count(const char *s, int *out)
{
	char *end;
	long v;

	if (!s || *s < '0' || *s > '9')
		return MU_EINVAL;
	v = strtol(s, &end, 10);
	if (*end || v < 1 || v > INT_MAX)
		return MU_EINVAL;
	*out = (int)v;
	return 0;
}

static int apply(struct srun_opts *o, const struct opt *p, const char *spelled, const char *v,
		 char *err, size_t errlen)
{
	switch (p->act) {
	case IGNORE:
		return 0;
	case WARN:
		warn(o, "%s: %s; ignored", spelled, p->why);
		return 0;
	case REFUSE:
		return fail(err, errlen, "%s", p->why);
	case NODES: {
		char lo[32];
		const char *dash = strchr(v, '-');
		size_t n = dash ? (size_t)(dash - v) : strlen(v);

		if (n >= sizeof(lo))
			n = sizeof(lo) - 1;
		memcpy(lo, v, n);
		lo[n] = '\0';
		if (count(lo, &o->nodes) != 0 || (dash && count(dash + 1, &o->nodes_max) != 0) ||
		    (dash && o->nodes_max < o->nodes))
			return fail(err, errlen, "invalid node count '%s' (%s)", v, spelled);
		if (!dash)
			o->nodes_max = o->nodes;
		return 0;
	}
	case NTASKS:
		if (count(v, &o->ntasks) != 0)
			return fail(err, errlen, "invalid number of tasks '%s' (%s)", v, spelled);
		return 0;
	case PER_NODE:
		if (count(v, &o->ntasks_per_node) != 0)
			return fail(err, errlen, "invalid number of tasks per node '%s' (%s)", v, spelled);
		return 0;
	case EXPORT:
		o->export = v;
		return 0;
	case CHDIR:
		o->chdir = v;
		return 0;
	case LABEL:
		o->label = true;
		return 0;
	case HELP:
		o->help = true;
		return 0;
	case VERSION:
		o->version = true;
		return 0;
	}
	return 0;
}

/* "--name[=value]": exact name first, then a unique prefix (getopt_long's rule). */
static const struct opt *find_long(const char *name, size_t n, bool *ambiguous)
{
	const struct opt *hit = NULL;

	*ambiguous = false;
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].name && strlen(opts[i].name) == n && !strncmp(opts[i].name, name, n))
			return &opts[i];
	for (size_t i = 0; i < NOPTS; i++) {
		if (!opts[i].name || strncmp(opts[i].name, name, n) != 0)
			continue;
		if (hit)
			*ambiguous = true;
		hit = &opts[i];
	}
	return *ambiguous ? NULL : hit;
}

static const struct opt *find_short(char c)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].short_name == c)
			return &opts[i];
	return NULL;
}

int srun_opts_parse(struct srun_opts *o, int argc, char *const *argv, char *err, size_t errlen)
{
	int i = 1;

	memset(o, 0, sizeof(*o));
	while (i < argc) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break; /* CMD: srun stops at the first word that is not an option */
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t n = eq ? (size_t)(eq - name) : strlen(name);
			bool amb;
			const struct opt *p = find_long(name, n, &amb);
			const char *v = eq ? eq + 1 : NULL;
			char spelled[64];

			if (!p)
				return fail(err, errlen, "%s option '--%.*s'",
					    amb ? "ambiguous" : "unrecognized", (int)(n > 40 ? 40 : n), name);
			snprintf(spelled, sizeof(spelled), "--%s", p->name);
			if (p->arg == NONE && eq)
				return fail(err, errlen, "option '%s' doesn't allow an argument", spelled);
			if (p->arg == REQ && !eq) {
				if (i + 1 >= argc)
					return fail(err, errlen, "option '%s' requires an argument", spelled);
				v = argv[++i];
			}
			int rc = apply(o, p, spelled, v ? v : "", err, errlen);
			if (rc)
				return rc;
			i++;
			continue;
		}
		/* short options, bundled: -lu, -N2, -n 4, -K (optional value: -K1 only) */
		for (const char *c = a + 1; *c; c++) {
			const struct opt *p = find_short(*c);
			char spelled[64];
			const char *v = NULL;

			if (!p)
				return fail(err, errlen, "invalid option -- '%c'", *c);
			if (p->name)
				snprintf(spelled, sizeof(spelled), "-%c/--%s", *c, p->name);
			else
				snprintf(spelled, sizeof(spelled), "-%c", *c);
			if (p->arg != NONE && c[1]) {
				v = c + 1;
			} else if (p->arg == REQ) {
				if (i + 1 >= argc)
					return fail(err, errlen, "option requires an argument -- '%c'", *c);
				v = argv[++i];
			}
			int rc = apply(o, p, spelled, v ? v : "", err, errlen);
			if (rc)
				return rc;
			if (v && p->arg != NONE && c[1])
				break; /* the rest of the word was the value */
		}
		i++;
	}
	o->argi = i;
	return 0;
}

int srun_step_plan(const struct srun_opts *o, const struct srun_job *j, struct srun_step *st,
		   char *err, size_t errlen)
{
	int nn = j->nnodes > 0 ? j->nnodes : 1, ppn = j->ppn > 0 ? j->ppn : 1;
	int counts[256];
	int sn, total = 0;
	struct mu_buf tpn = MU_BUF_INIT;

	memset(st, 0, sizeof(*st));
	if (o->nodes > nn)
		return fail(err, errlen,
			    "-N %d asks for more nodes than the job has (%d); a step runs inside the "
			    "job's allocation", o->nodes, nn);
	if (o->ntasks_per_node > ppn)
		return fail(err, errlen,
			    "--ntasks-per-node=%d asks for more tasks per node than the job runs (%d); "
			    "submit with --ntasks-per-node=%d", o->ntasks_per_node, ppn,
			    o->ntasks_per_node);
	/* nodes: -N (its MAX as far as the job reaches), else as many as
	 * -n fills at one task each, else all of the job's */
	if (o->nodes)
		sn = o->nodes_max < nn ? o->nodes_max : nn;
	else if (o->ntasks)
		sn = o->ntasks < nn ? o->ntasks : nn;
	else
		sn = nn;
	if (o->ntasks && o->ntasks < sn)
		sn = o->ntasks; /* Slurm too: "can't run 1 processes on 2 nodes, setting nnodes to 1" */
	if (sn > (int)(sizeof(counts) / sizeof(counts[0])))
		sn = (int)(sizeof(counts) / sizeof(counts[0]));
	int cap = o->ntasks_per_node ? o->ntasks_per_node : ppn;
	if (o->ntasks && o->ntasks > (long long)sn * cap)
		return fail(err, errlen,
			    "-n %d asks for more tasks than the job has (%d node%s x %d task%s per node "
			    "= %lld)", o->ntasks, sn, sn == 1 ? "" : "s", cap, cap == 1 ? "" : "s",
			    (long long)sn * cap);
	for (int k = 0; k < sn; k++) {
		counts[k] = o->ntasks ? o->ntasks / sn + (k < o->ntasks % sn) : cap;
		total += counts[k];
	}
	mu_hostlist_tasks_per_node(counts, (size_t)sn, &tpn);
	snprintf(st->tasks_per_node, sizeof(st->tasks_per_node), "%s", tpn.p ? tpn.p : "");
	mu_buf_release(&tpn);
	st->nnodes = sn;
	st->ntasks = total;
	if (j->node_id < 0 || j->node_id >= sn)
		return 0;
	st->tasks_on_node = counts[j->node_id];
	if (j->local_id < 0 || j->local_id >= counts[j->node_id])
		return 0;
	st->runs = true;
	st->procid = j->local_id;
	for (int k = 0; k < j->node_id; k++)
		st->procid += counts[k];
	return 0;
}
