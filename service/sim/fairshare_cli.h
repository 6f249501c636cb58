/*
 * fairshare_cli.h - `muster-sim --fairshare TREE.json`: the Fair Tree
 * calculator, an offline `sshare` over the very code the scheduler uses
 * (service/sched/fairtree.h). Input and output are documented in
 * docs/fairshare.md.
 *
 * Input: {"tenants":[{"name":"a","parent":null,"shares":40,"usage":0},...],
 *         "users":[{"tenant":"a","name":"u1","shares":1,"usage":20},...]}
 * Both keys are required (arrays, possibly empty); "shares" defaults to 1 and
 * "usage" to 0; "parent": null (or absent) = child of the root; a user's
 * tenant may be "root". Unknown fields, duplicate keys or names, unknown
 * parents or tenants, cycles, wrong types, negative or non-finite numbers are
 * errors.
 *
 * Output: {"associations":[...]} in depth-first ranking order, one
 * association per line: "tenant", "user" (users only), "shares_norm",
 * "usage_norm", "level_fs" (a number or the string "inf"), "fairshare"
 * (users only). Numbers carry 15 significant digits.
 *
 * Threading: reentrant; nothing global.
 */
#ifndef MU_SIM_FAIRSHARE_CLI_H
#define MU_SIM_FAIRSHARE_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "error.h"

/*
 * Reads the tree at `path` ("-" = standard input), prints the result to
 * `out` (borrowed). On bad input prints one line naming the problem on
 * stderr ("muster-sim: PATH: FIELD: MESSAGE") and writes nothing to `out`.
 * Returns an exit status: 0 on success, 1 on any error.
 */
int sim_fairshare_main(const char *path, FILE *out);

/*
 * The same over an in-memory document `buf` of `len` bytes (borrowed; need
 * not be NUL-terminated). Prints nothing but the result to `out` (borrowed;
 * nothing on error). Returns 0 or a negative MU_E* code with `err` (optional)
 * filled: MU_EJSON malformed JSON, MU_EUNKNOWNFIELD, MU_ETYPE, MU_ERANGE,
 * MU_EMISSING, MU_ECONFLICT (duplicate name), MU_ENOTFOUND (unknown parent
 * or tenant), MU_EINVAL (cycle), MU_EIO (writing `out` failed).
 */
int sim_fairshare_eval(const char *buf, size_t len, FILE *out, struct mu_error *err)
	__attribute__((warn_unused_result));

#endif
