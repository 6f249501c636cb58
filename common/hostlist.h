/*
 * hostlist.h - Slurm's text forms of a node list and a task layout, as
 * the launch contract hands them to jobs (SLURM_JOB_NODELIST,
 * SLURM_TASKS_PER_NODE). Pure: libc and buf.h only.
 *
 * Compression follows Slurm's hostlist syntax: names that share a prefix
 * and end in a number are written "prefix[a-b,c]", numbers keep their
 * zero padding ("gpu-[01-04]"), a group of one is written plainly
 * ("gpu-7"), names without a trailing number stand alone. The order of
 * the input is kept (only neighbours are merged), so the i-th name that
 * Slurm's own expansion (`scontrol show hostnames`) yields is still the
 * node of rank i; for names given in sorted order the text is the one
 * slurmctld prints.
 */
#ifndef MU_HOSTLIST_H
#define MU_HOSTLIST_H

#include <stddef.h>

#include "buf.h"

/* Appends the compressed form of names[0..n) to out ("" when n == 0). */
void mu_hostlist_compress(const char *const *names, size_t n, struct mu_buf *out);

/* Appends the expansion of a hostlist text ("a-[1-3,7],b") to out, one name
 * per element separated by ','. Returns 0, or MU_EINVAL for a malformed
 * text (unbalanced brackets, a bad range, a range of over 100000 names). */
int mu_hostlist_expand(const char *text, struct mu_buf *out) __attribute__((warn_unused_result));

/* Appends Slurm's SLURM_TASKS_PER_NODE form of counts[0..n): runs of equal
 * counts as "c(xk)", a run of one as "c", joined by ',' ("2(x3),1"). */
void mu_hostlist_tasks_per_node(const int *counts, size_t n, struct mu_buf *out);

#endif
