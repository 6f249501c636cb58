/*
 * trace.h - workload traces for muster-sim: Parallel Workloads Archive SWF
 * and muster's CSV of GPU jobs (format in docs/scheduling.md, "muster-sim").
 *
 * Parsers work on a memory buffer (so the fuzz drivers can call them) and
 * report the first bad line as "line N: ..." in `err`, or, with `lenient`,
 * skip bad lines and count them in trace->skipped.
 *
 * Ownership: struct trace owns everything it points to; trace_init() then
 * trace_release(). Threading: reentrant.
 */
#ifndef MU_SIM_TRACE_H
#define MU_SIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

enum trace_dep_type { TRACE_DEP_AFTEROK = 0, TRACE_DEP_AFTERANY, TRACE_DEP_AFTERNOTOK };

struct trace_dep {
	enum trace_dep_type type;
	int64_t job_id;
};

struct trace_job {
	int64_t id;
	int64_t submit;
	int64_t runtime;       /* actual run time, s (<= limit) */
	int64_t limit;         /* time limit / user estimate, s */
	int procs;             /* SWF processors / CSV "gpus"; 0 when nodes is given */
	int nodes;             /* CSV nodes x gpus_per_node; 0 = from procs */
	int gpus_per_node;
	int min_nodes;         /* 0 = rigid */
	int tenant;            /* index into trace names (CSV "tenant"), -1 = root */
	int user;              /* index into trace names, -1 = none */
	int cls;               /* index into trace names (CSV "class"), -1 = default */
	int gpu_model;         /* index into trace names, -1 = any */
	int topo_required;     /* index into trace names (level name), -1 = none */
	int topo_preferred;
	int exit_code;         /* CSV "exit": what the run ends with (dependencies) */
	size_t ndeps;
	struct trace_dep *deps;
	size_t line;           /* 1-based line in the input */
	size_t text;           /* SWF: offset of the original line in trace->text */
	bool truncated;        /* SWF run time was above the estimate: cut to it */
};

struct trace {
	struct trace_job *jobs;
	size_t njobs, cap;
	int64_t max_procs;     /* SWF "; MaxProcs:" header, 0 if none */
	size_t skipped;        /* lines skipped with lenient */
	size_t truncated;      /* SWF jobs whose run time exceeded the estimate */
	bool is_swf;
	char *text;            /* SWF original lines, NUL-separated */
	size_t ntext, cap_text;
	char **names;          /* interned strings */
	size_t nnames, cap_names;
	size_t *hash;          /* name index + 1, open addressing */
	size_t cap_hash;
};

void trace_init(struct trace *t);
void trace_release(struct trace *t);

/* Interns s (copied); returns its index. */
int trace_intern(struct trace *t, const char *s, size_t len);

__attribute__((warn_unused_result))
int trace_parse_swf(const char *buf, size_t len, bool lenient, struct trace *t, struct mu_error *err);
__attribute__((warn_unused_result))
int trace_parse_csv(const char *buf, size_t len, bool lenient, struct trace *t, struct mu_error *err);

/* Reads a whole file, gzip or plain (zlib), into *buf (new, NUL-terminated). */
__attribute__((warn_unused_result))
int trace_read_file(const char *path, char **buf, size_t *len, struct mu_error *err);

#endif
