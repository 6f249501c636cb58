/*
 * fairtree.h - Fair Tree fair share (Slurm's fair_tree algorithm), pure.
 *
 * The caller describes the association tree as a flat array: index 0 is the
 * root (a tenant, parent -1); every other entry names its parent by index.
 * Users are leaves; tenants may hold tenants and users. fairtree_compute()
 * fills the output fields. See docs/fairshare.md for the algorithm, a worked
 * example and the tie rules.
 *
 * Definitions, per association x among its siblings (the children of x's
 * parent, x included):
 *   S = shares(x) / sum of sibling shares          (0 when that sum is 0)
 *   U = usage(x)  / sum of sibling usage           (0 when that sum is 0)
 *       where a tenant's usage is its own `usage` plus its whole subtree's
 *   level_fs = 0 when S == 0 (even if U == 0, as Slurm), else INFINITY when
 *       U == 0, else S / U.
 * Children are sorted by level_fs descending, users before tenants on equal
 * level_fs, then by name (strcmp, NULL as ""), then by index. The walk is
 * depth first with a counter starting at N (number of users), dropping by one
 * at every user; a user's rank is the counter, unless its level_fs equals
 * that of the sibling just before it (then it keeps the rank given last).
 * Sibling tenants with equal level_fs are visited together (their children
 * merged into one sorted list); the first of those children counts as tied
 * when the tenant itself tied with the sibling before it.
 * fairshare = rank / N, in (0, 1].
 *
 * Equality: level_fs values are compared exactly (==). To make that
 * meaningful, level_fs is not computed as S/U of two rounded quotients but as
 * one correctly rounded division, (shares * sibling_usage) / (usage *
 * sibling_shares). When shares and usage are integers and those products stay
 * below 2^53, two associations with the same rational S/U get bit-identical
 * level_fs, so they tie exactly when the mathematics says they do. With
 * non-integer (e.g. decayed) usage, a tie needs identical inputs, as in Slurm.
 *
 * Cost: O(n log n) time, O(n) scratch memory (malloc; aborts on allocation
 * failure, as the rest of muster does). No globals, no I/O: reentrant.
 */
#ifndef MU_FAIRTREE_H
#define MU_FAIRTREE_H

#include <stdbool.h>
#include <stddef.h>

struct fairtree_assoc {
	int parent;        /* index of the parent tenant association; -1 only for index 0 = root */
	bool is_user;      /* users are leaves; tenants may have tenant and user children */
	double shares;     /* raw shares (>= 0) */
	double usage;      /* usage charged to this association itself (users: their usage;
	                      tenants: normally 0 — a tenant's usage is the sum of its subtree) */
	const char *name;  /* borrowed; used only to break exact ties deterministically */
	/* outputs */
	double shares_norm, usage_norm, level_fs;  /* level_fs = INFINITY when U == 0, 0 when S == 0 */
	double fairshare;  /* users only: rank / N in (0, 1] */
	/* further outputs (additions to the interface) */
	size_t rank;       /* users only: the rank in [1, N]; 0 for tenants */
	size_t walk_pos;   /* position in the depth-first ranking walk: root 0, then 1..n-1 */
};

/*
 * Computes every association's shares_norm, usage_norm, level_fs, and for
 * users fairshare and rank; walk_pos for all. The root (index 0) gets
 * shares_norm = usage_norm = level_fs = 1. Tenants get fairshare = 0,
 * rank = 0.
 *
 * Returns 0, or -1 for a malformed tree, leaving outputs unspecified:
 * n == 0, a[0].parent != -1 or a[0].is_user, another parent out of [0, n),
 * a parent that is a user, a cycle (an entry that cannot reach the root),
 * or shares/usage negative, NaN or infinite.
 */
int fairtree_compute(struct fairtree_assoc *a, size_t n);

/*
 * Usage decayed over elapsed_s seconds with the given half-life:
 * usage * 2^(-elapsed_s / half_life_s). A half-life <= 0 means no decay
 * (usage is returned unchanged), as does elapsed_s <= 0.
 */
double fairtree_decay(double usage, double elapsed_s, double half_life_s);

#endif
