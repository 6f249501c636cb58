/*
 * Unit tests of the Fair Tree core (service/sched/fairtree.c) on trees built
 * by hand. Every expected value is derived from the rules in fairtree.h in
 * the comment above its assertions: S = shares/sibling shares, U = subtree
 * usage/sibling usage, LFS = S/U; sort by LFS desc, users first on equal LFS,
 * then name; counter from N down by one per user; a user tied with the
 * sibling before it keeps the last rank given; tied sibling tenants are
 * merged; the first child of a tied tenant counts as tied.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fairtree.h"

/* A tree under construction; index 0 is the root. */
struct tb {
	struct fairtree_assoc *a;
	size_t n, cap;
};

static void tb_init(struct tb *b, size_t cap)
{
	b->a = calloc(cap, sizeof(*b->a));
	assert_non_null(b->a);
	b->cap = cap;
	b->n = 1;
	b->a[0] = (struct fairtree_assoc){ .parent = -1, .shares = 1, .name = "root" };
}

static int add(struct tb *b, int parent, bool is_user, const char *name, double shares, double usage)
{
	assert_true(b->n < b->cap);
	b->a[b->n] = (struct fairtree_assoc){ .parent = parent, .is_user = is_user, .name = name,
					      .shares = shares, .usage = usage };
	return (int)b->n++;
}

static int T(struct tb *b, int parent, const char *name, double shares)
{
	return add(b, parent, false, name, shares, 0);
}

static int U(struct tb *b, int parent, const char *name, double shares, double usage)
{
	return add(b, parent, true, name, shares, usage);
}

static void tb_release(struct tb *b)
{
	free(b->a);
}

#define EPS 1e-12
#define assert_near(x, y) assert_true(fabs((double)(x) - (double)(y)) <= EPS)

/* A tenant that used less than its share ranks all its users above those of
 * a sibling that used more, even one with a far higher Level FS. */
static void under_user_tenant_ranks_first(void **state)
{
	struct tb b;
	int A, B, a1, a2, b1, b2;
	(void)state;

	tb_init(&b, 16);
	A = T(&b, 0, "A", 1);
	B = T(&b, 0, "B", 1);
	a1 = U(&b, A, "a1", 1, 30);
	a2 = U(&b, A, "a2", 1, 10);
	b1 = U(&b, B, "b1", 1, 5);
	b2 = U(&b, B, "b2", 1, 55);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	/* root: A subtree 40, B 60, total 100; shares 1+1.
	 *   A: S = .5, U = .4, LFS = 1.25;  B: S = .5, U = .6, LFS = 5/6.  A first.
	 * A: a1 S .5 U 30/40 = .75 LFS 2/3; a2 S .5 U .25 LFS 2  -> a2, a1
	 * B: b1 S .5 U 5/60 LFS 6;          b2 S .5 U 55/60 LFS 6/11 -> b1, b2
	 * N = 4: a2 4, a1 3, b1 2, b2 1 (b1's LFS 6 > a1's 2/3 does not matter). */
	assert_near(b.a[A].shares_norm, .5);
	assert_near(b.a[A].usage_norm, .4);
	assert_near(b.a[A].level_fs, 1.25);
	assert_near(b.a[B].level_fs, 5.0 / 6);
	assert_near(b.a[a1].level_fs, 2.0 / 3);
	assert_near(b.a[a2].level_fs, 2);
	assert_near(b.a[b1].level_fs, 6);
	assert_near(b.a[b2].level_fs, 6.0 / 11);
	assert_int_equal(b.a[a2].rank, 4);
	assert_int_equal(b.a[a1].rank, 3);
	assert_int_equal(b.a[b1].rank, 2);
	assert_int_equal(b.a[b2].rank, 1);
	assert_near(b.a[a2].fairshare, 1);
	assert_near(b.a[a1].fairshare, .75);
	assert_near(b.a[b1].fairshare, .5);
	assert_near(b.a[b2].fairshare, .25);
	/* Walk order: root, A, a2, a1, B, b1, b2. Tenants have no fairshare. */
	assert_int_equal(b.a[0].walk_pos, 0);
	assert_int_equal(b.a[A].walk_pos, 1);
	assert_int_equal(b.a[a2].walk_pos, 2);
	assert_int_equal(b.a[a1].walk_pos, 3);
	assert_int_equal(b.a[B].walk_pos, 4);
	assert_int_equal(b.a[b1].walk_pos, 5);
	assert_int_equal(b.a[b2].walk_pos, 6);
	assert_int_equal(b.a[A].rank, 0);
	assert_near(b.a[A].fairshare, 0);
	tb_release(&b);
}

/* Rule 1: a user tied with the sibling just before it keeps its rank. */
static void user_tied_with_previous_user(void **state)
{
	struct tb b;
	int u1, u2, u3;
	(void)state;

	tb_init(&b, 8);
	u2 = U(&b, 0, "u2", 1, 10);
	u1 = U(&b, 0, "u1", 1, 10);
	u3 = U(&b, 0, "u3", 2, 10);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	/* shares 4, usage 30. u1, u2: S .25 U 1/3 LFS .75; u3: S .5 U 1/3 LFS 1.5.
	 * Order u3, u1, u2 (u1 before u2 by name). N = 3:
	 * u3 rank 3; u1 rank 2; u2 ties u1 -> keeps 2 (counter reaches 1 unused). */
	assert_near(b.a[u3].level_fs, 1.5);
	assert_near(b.a[u1].level_fs, .75);
	assert_int_equal(b.a[u3].rank, 3);
	assert_int_equal(b.a[u1].rank, 2);
	assert_int_equal(b.a[u2].rank, 2);
	assert_near(b.a[u2].fairshare, 2.0 / 3);
	assert_true(b.a[u1].walk_pos < b.a[u2].walk_pos);
	tb_release(&b);
}

/* Rule 2: a user tied with a sibling tenant; the tenant's best user, its
 * first child, counts as tied and shares the user's rank. */
static void user_tied_with_sibling_tenant(void **state)
{
	struct tb b;
	int u, t, v, t1, t2;
	(void)state;

	tb_init(&b, 8);
	t = T(&b, 0, "T", 1);
	u = U(&b, 0, "u", 1, 10);
	v = U(&b, 0, "v", 2, 40);
	t1 = U(&b, t, "t1", 1, 10);
	t2 = U(&b, t, "t2", 1, 0);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	/* root: shares 4, usage 10 + 10 + 40 = 60.
	 *   u: S .25 U 1/6 LFS 1.5;  T: S .25 U 1/6 LFS 1.5;  v: S .5 U 2/3 LFS .75
	 *   order u (users before tenants on equal LFS), T, v.
	 * T: t1 S .5 U 1 LFS .5; t2 S .5 U 0 LFS inf -> t2, t1.
	 * N = 4: u rank 4 (counter -> 3); T ties u, so t2 (first child) is tied:
	 * keeps 4 (counter -> 2); t1 not tied (inf vs .5): 2 (-> 1);
	 * v: previous sibling is T (1.5 vs .75), not tied: 1. */
	assert_near(b.a[u].level_fs, 1.5);
	assert_near(b.a[t].level_fs, 1.5);
	assert_true(isinf(b.a[t2].level_fs));
	assert_near(b.a[t2].usage_norm, 0);
	assert_int_equal(b.a[u].rank, 4);
	assert_int_equal(b.a[t2].rank, 4);
	assert_int_equal(b.a[t1].rank, 2);
	assert_int_equal(b.a[v].rank, 1);
	assert_near(b.a[t1].fairshare, .5);
	assert_near(b.a[v].fairshare, .25);
	tb_release(&b);
}

/* Rule 3: sibling tenants with equal LFS are walked as one merged list. */
static void tied_tenants_merged(void **state)
{
	struct tb b;
	int A, B, a1, a2, b1, b2;
	(void)state;

	tb_init(&b, 8);
	A = T(&b, 0, "A", 1);
	B = T(&b, 0, "B", 1);
	a1 = U(&b, A, "a1", 1, 5);
	a2 = U(&b, A, "a2", 1, 15);
	b1 = U(&b, B, "b1", 3, 10);
	b2 = U(&b, B, "b2", 1, 10);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	/* root: A 20, B 20 -> both S .5 U .5 LFS 1: tied, merged.
	 * a1 S .5 U .25 LFS 2; a2 S .5 U .75 LFS 2/3; b1 S .75 U .5 LFS 1.5;
	 * b2 S .25 U .5 LFS .5. Merged order a1, b1, a2, b2; no equal LFS.
	 * N = 4: a1 4, b1 3, a2 2, b2 1 (separately, a2 would have beaten b1). */
	assert_int_equal(b.a[a1].rank, 4);
	assert_int_equal(b.a[b1].rank, 3);
	assert_int_equal(b.a[a2].rank, 2);
	assert_int_equal(b.a[b2].rank, 1);
	/* Walk: root, A, B (visited together), then the merged children. */
	assert_int_equal(b.a[A].walk_pos, 1);
	assert_int_equal(b.a[B].walk_pos, 2);
	assert_int_equal(b.a[a1].walk_pos, 3);
	assert_int_equal(b.a[b1].walk_pos, 4);
	assert_int_equal(b.a[a2].walk_pos, 5);
	assert_int_equal(b.a[b2].walk_pos, 6);
	tb_release(&b);
}

/* Rule 3 with ties inside the merged list across the two tenants. */
static void tied_tenants_merged_with_ties(void **state)
{
	struct tb b;
	int A, B, a1, a2, b1, b2;
	(void)state;

	tb_init(&b, 8);
	B = T(&b, 0, "B", 1);
	A = T(&b, 0, "A", 1);
	b1 = U(&b, B, "b1", 1, 5);
	b2 = U(&b, B, "b2", 1, 15);
	a1 = U(&b, A, "a1", 1, 5);
	a2 = U(&b, A, "a2", 1, 15);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	/* A, B: LFS 1 each, merged (A first by name). a1, b1: LFS 2; a2, b2: 2/3.
	 * Merged order a1, b1, a2, b2. N = 4: a1 4; b1 ties a1 -> 4;
	 * a2 (counter now 2) 2; b2 ties a2 -> 2. */
	assert_int_equal(b.a[a1].rank, 4);
	assert_int_equal(b.a[b1].rank, 4);
	assert_int_equal(b.a[a2].rank, 2);
	assert_int_equal(b.a[b2].rank, 2);
	assert_near(b.a[b2].fairshare, .5);
	assert_int_equal(b.a[A].walk_pos, 1);
	assert_int_equal(b.a[B].walk_pos, 2);
	tb_release(&b);
}

/* Rule 4 through two levels: the first child of a tied tenant is itself a
 * tenant; it counts as tied and passes the tie to its own first child. */
static void first_child_of_tied_tenant_is_tied(void **state)
{
	struct tb b;
	int u, t, t2, z, x, y;
	(void)state;

	tb_init(&b, 8);
	u = U(&b, 0, "u", 1, 20);
	t = T(&b, 0, "T", 1);
	t2 = T(&b, t, "T2", 3);
	z = U(&b, t, "z", 1, 10);
	x = U(&b, t2, "x", 1, 10);
	y = U(&b, t2, "y", 1, 0);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	/* root: u 20, T 20, shares 1 + 1: both LFS 1 -> u, then T tied.
	 * T: T2 S .75 U .5 LFS 1.5; z S .25 U .5 LFS .5 -> T2, z.
	 * T2: y S .5 U 0 LFS inf; x S .5 U 1 LFS .5 -> y, x.
	 * N = 4: u 4 (-> 3). T2 is T's first child and T tied: tied, so y (its
	 * first child) is tied too: keeps 4 (-> 2). x: 2 (-> 1). z: previous
	 * sibling T2 has 1.5, not tied: 1. */
	assert_near(b.a[t].level_fs, 1);
	assert_near(b.a[t2].level_fs, 1.5);
	assert_int_equal(b.a[u].rank, 4);
	assert_int_equal(b.a[y].rank, 4);
	assert_int_equal(b.a[x].rank, 2);
	assert_int_equal(b.a[z].rank, 1);
	tb_release(&b);
}

/* A tie is not inherited when the tenant did not tie: the first child of an
 * untied tenant gets the counter even if its LFS equals the last user's. */
static void untied_tenant_first_child_not_tied(void **state)
{
	struct tb b;
	int u, t, t1;
	(void)state;

	tb_init(&b, 8);
	u = U(&b, 0, "u", 1, 10);
	t = T(&b, 0, "T", 1);
	t1 = U(&b, t, "t1", 1, 30);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	/* root: usage 40. u: S .5 U .25 LFS 2; T: S .5 U .75 LFS 2/3. t1: S 1
	 * U 1 LFS 1. N = 2: u 2, t1 1 (T did not tie u). */
	assert_int_equal(b.a[u].rank, 2);
	assert_int_equal(b.a[t1].rank, 1);
	assert_near(b.a[t1].fairshare, .5);
	tb_release(&b);
}

/* No usage anywhere: every LFS is inf, everything ties, all rank N. */
static void zero_usage_everyone_tied(void **state)
{
	struct tb b;
	int A, B;
	(void)state;

	tb_init(&b, 8);
	A = T(&b, 0, "A", 1);
	B = T(&b, 0, "B", 2);
	U(&b, A, "a1", 1, 0);
	U(&b, A, "a2", 3, 0);
	U(&b, B, "b1", 1, 0);
	U(&b, 0, "u", 1, 0);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	/* Root list: u, A, B, all inf (u first: users before tenants on a tie,
	 * then walk 1 = u, 2 = A, 3 = B). u rank 4; A and B tie each other and u:
	 * merged, first child tied, the rest tie their predecessor: all 4. */
	for (size_t i = 1; i < b.n; i++) {
		assert_true(isinf(b.a[i].level_fs));
		assert_near(b.a[i].usage_norm, 0);
		if (b.a[i].is_user) {
			assert_int_equal(b.a[i].rank, 4);
			assert_near(b.a[i].fairshare, 1);
		}
	}
	assert_near(b.a[B].shares_norm, .5); /* 2 of 1 + 2 + 1 */
	assert_int_equal(b.a[A].walk_pos, 2);
	assert_int_equal(b.a[B].walk_pos, 3);
	tb_release(&b);
}

/* Zero shares: LFS 0 even with zero usage (S == 0 wins over U == 0, as in
 * Slurm); a tenant whose children all have 0 shares gives them all S = 0. */
static void zero_shares(void **state)
{
	struct tb b;
	int u0, u1, u2, Z, z1, z2;
	(void)state;

	tb_init(&b, 8);
	u0 = U(&b, 0, "u0", 0, 0);
	u1 = U(&b, 0, "u1", 1, 10);
	u2 = U(&b, 0, "u2", 1, 0);
	Z = T(&b, 0, "Z", 0);
	z1 = U(&b, Z, "z1", 0, 5);
	z2 = U(&b, Z, "z2", 0, 0);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	/* root: shares 2, usage 15. u2: S .5 U 0 LFS inf; u1: S .5 U 2/3 LFS .75;
	 * u0: S 0 LFS 0; Z: S 0 LFS 0. Order u2, u1, u0, Z (user first at 0).
	 * Z: shares sum 0 -> z1, z2 S 0 LFS 0; z1 U 1, z2 U 0.
	 * N = 5: u2 5, u1 4, u0 3; Z ties u0 -> z1 tied: 3; z2 ties z1: 3. */
	assert_true(isinf(b.a[u2].level_fs));
	assert_near(b.a[u0].level_fs, 0);
	assert_near(b.a[Z].level_fs, 0);
	assert_near(b.a[z1].shares_norm, 0);
	assert_near(b.a[z1].usage_norm, 1);
	assert_near(b.a[z2].level_fs, 0);
	assert_int_equal(b.a[u2].rank, 5);
	assert_int_equal(b.a[u1].rank, 4);
	assert_int_equal(b.a[u0].rank, 3);
	assert_int_equal(b.a[z1].rank, 3);
	assert_int_equal(b.a[z2].rank, 3);
	assert_near(b.a[z2].fairshare, .6);
	tb_release(&b);
}

/* Empty tenants rank nothing and do not disturb the counter. */
static void empty_tenants(void **state)
{
	struct tb b;
	int u, E;
	(void)state;

	tb_init(&b, 8);
	E = T(&b, 0, "E", 1);
	T(&b, E, "E2", 1);
	u = U(&b, 0, "u", 1, 10);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	/* E: S .5 U 0 LFS inf, first; its subtree has no user. u: S .5 U 1
	 * LFS .5, not tied with E: rank = counter = N = 1. */
	assert_true(isinf(b.a[E].level_fs));
	assert_int_equal(b.a[u].rank, 1);
	assert_near(b.a[u].fairshare, 1);

	/* A root with no users at all is fine too. */
	b.n = 3;
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	tb_release(&b);
}

/* Equality is exact, on LFS computed as one division of products: these two
 * have the same rational LFS 14/12 but S/U of rounded quotients differs by
 * one ulp (1.1666666666666667 vs 1.1666666666666665). */
static void equal_rationals_tie_exactly(void **state)
{
	struct tb b;
	int x, y, z;
	volatile double naive_x = (1.0 / 4) / (3.0 / 14), naive_y = (3.0 / 4) / (9.0 / 14);
	(void)state;

	assert_true(naive_x != naive_y); /* the trap this test is about */
	tb_init(&b, 8);
	x = U(&b, 0, "x", 1, 3);
	y = U(&b, 0, "y", 3, 9);
	z = U(&b, 0, "z", 0, 2);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	/* shares 4, usage 14. x: 1*14/(3*4) = 7/6; y: 3*14/(9*4) = 7/6; z: S 0.
	 * N = 3: x 3, y ties x: 3, z 1. */
	assert_true(b.a[x].level_fs == b.a[y].level_fs);
	assert_int_equal(b.a[x].rank, 3);
	assert_int_equal(b.a[y].rank, 3);
	assert_int_equal(b.a[z].rank, 1);
	tb_release(&b);
}

/* A 20,000-deep chain: tenant k holds user u_k (usage 1) and tenant k+1.
 * At level k with R = D - k users below, u_k has LFS (1/2)/(1/R) = R/2 and
 * the next tenant (R/2)/(R-1): the user wins while R >= 3. At R = 2 both are
 * 1: the user goes first and the last tenant ties it, so the deepest user
 * u_{D-1} (its tenant's first child) shares u_{D-2}'s rank 2. */
static void deep_chain(void **state)
{
	enum { D = 20000 };
	struct tb b;
	int *user = calloc(D, sizeof(*user));
	int parent = 0;
	(void)state;

	assert_non_null(user);
	tb_init(&b, 2 * D + 1);
	for (int k = 0; k < D; k++) {
		int t = T(&b, parent, "t", 1);
		user[k] = U(&b, t, "u", 1, 1);
		parent = t;
	}
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	for (int k = 0; k < D - 1; k++)
		assert_int_equal(b.a[user[k]].rank, D - k);
	assert_int_equal(b.a[user[D - 1]].rank, 2);
	free(user);
	tb_release(&b);
}

static void malformed_trees(void **state)
{
	struct tb b;
	int t, u;
	(void)state;

	tb_init(&b, 8);
	assert_int_equal(fairtree_compute(b.a, 0), -1);
	t = T(&b, 0, "t", 1);
	u = U(&b, t, "u", 1, 1);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);

	b.a[0].parent = 0; /* root with a parent */
	assert_int_equal(fairtree_compute(b.a, b.n), -1);
	b.a[0].parent = -1;
	b.a[0].is_user = true; /* root as a user */
	assert_int_equal(fairtree_compute(b.a, b.n), -1);
	b.a[0].is_user = false;
	b.a[u].parent = 7; /* parent out of range */
	assert_int_equal(fairtree_compute(b.a, b.n), -1);
	b.a[u].parent = -1; /* a second root */
	assert_int_equal(fairtree_compute(b.a, b.n), -1);
	b.a[u].parent = t;
	b.a[t].parent = t; /* self cycle */
	assert_int_equal(fairtree_compute(b.a, b.n), -1);
	b.a[t].parent = 0;
	b.a[t].is_user = true; /* user with a child */
	assert_int_equal(fairtree_compute(b.a, b.n), -1);
	b.a[t].is_user = false;
	b.a[u].usage = -1;
	assert_int_equal(fairtree_compute(b.a, b.n), -1);
	b.a[u].usage = NAN;
	assert_int_equal(fairtree_compute(b.a, b.n), -1);
	b.a[u].usage = INFINITY;
	assert_int_equal(fairtree_compute(b.a, b.n), -1);
	b.a[u].usage = 1;
	b.a[t].shares = -0.5;
	assert_int_equal(fairtree_compute(b.a, b.n), -1);
	b.a[t].shares = 1;

	/* A two-tenant cycle hanging off nothing. */
	int c1 = T(&b, 0, "c1", 1), c2 = T(&b, c1, "c2", 1);
	b.a[c1].parent = c2;
	assert_int_equal(fairtree_compute(b.a, b.n), -1);
	b.a[c1].parent = 0;
	assert_int_equal(fairtree_compute(b.a, b.n), 0);

	/* Sums that overflow a double. */
	b.a[c1].shares = 1e308;
	b.a[c2].shares = 1e308;
	b.a[t].shares = 1e308;
	assert_int_equal(fairtree_compute(b.a, b.n), -1);
	tb_release(&b);
}

static void decay(void **state)
{
	(void)state;
	assert_near(fairtree_decay(100, 3600, 3600), 50);
	assert_near(fairtree_decay(100, 7200, 3600), 25);
	assert_near(fairtree_decay(100, 0, 3600), 100);
	assert_near(fairtree_decay(100, -5, 3600), 100);
	assert_near(fairtree_decay(100, 3600, 0), 100); /* half-life 0: no decay */
	assert_near(fairtree_decay(0, 3600, 60), 0);
	/* decaying in steps equals decaying at once (up to rounding) */
	double u = 1000;
	for (int i = 0; i < 24; i++)
		u = fairtree_decay(u, 3600, 7 * 86400);
	assert_true(fabs(u - fairtree_decay(1000, 86400, 7 * 86400)) < 1e-9);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, so a failure reproduces. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* Builds a random tree: `tenants` tenants whose parents come earlier, then
 * `users` users in random tenants; shares 0..4, usage often 0 or repeated
 * so that ties happen. Returns the number of associations. */
static size_t random_tree(struct tb *b, size_t tenants, size_t users)
{
	static const char *names[] = { "a", "b", "c", "d", "e", "f", "g", "h" };

	tb_init(b, 1 + tenants + users);
	for (size_t i = 0; i < tenants; i++)
		T(b, (int)(rnd() % b->n), names[rnd() % 8], (double)(rnd() % 5));
	for (size_t i = 0; i < users; i++) {
		uint64_t r = rnd();
		int p = (int)(r % (tenants + 1));
		double usage = (r >> 20) % 3 == 0 ? 0 : (double)((r >> 24) % 50);
		U(b, p, names[(r >> 40) % 8], (double)((r >> 32) % 5), usage);
	}
	return b->n;
}

/* Checks what must hold for any tree: each user ranked in [1, N], fairshare
 * = rank/N in (0, 1]; in walk order, the k-th user (from 0) has rank N - k
 * or the rank of the user before it; walk_pos is a permutation. */
static void check_ranking(const struct tb *b)
{
	size_t n = b->n, users = 0, k = 0, prev = 0;
	size_t *order = calloc(n, sizeof(*order));
	char *seen = calloc(n, 1);

	assert_non_null(order);
	assert_non_null(seen);
	for (size_t i = 0; i < n; i++) {
		assert_true(b->a[i].walk_pos < n);
		assert_false(seen[b->a[i].walk_pos]);
		seen[b->a[i].walk_pos] = 1;
		order[b->a[i].walk_pos] = i;
		users += b->a[i].is_user;
	}
	for (size_t w = 0; w < n; w++) {
		const struct fairtree_assoc *x = &b->a[order[w]];
		if (!x->is_user)
			continue;
		assert_true(x->fairshare > 0 && x->fairshare <= 1);
		assert_true(x->rank >= 1 && x->rank <= users);
		assert_true(x->rank == users - k || (k > 0 && x->rank == prev));
		assert_true(x->fairshare == (double)x->rank / (double)users);
		prev = x->rank;
		k++;
	}
	assert_int_equal(k, users);
	free(seen);
	free(order);
}

/* Fair Tree's promise: when sibling tenants A and B have LFS(A) > LFS(B),
 * every user under A ranks strictly above every user under B. Checked by
 * comparing the lowest rank in A's subtree with the highest in B's. */
static void check_subtree_order(const struct tb *b)
{
	size_t n = b->n;
	size_t *lo = calloc(n, sizeof(*lo)), *hi = calloc(n, sizeof(*hi));

	assert_non_null(lo);
	assert_non_null(hi);
	for (size_t i = 0; i < n; i++)
		lo[i] = SIZE_MAX;
	/* Parents come before children in random_tree: sweep backwards. */
	for (size_t i = n; i-- > 1;) {
		size_t p = (size_t)b->a[i].parent;
		size_t l = b->a[i].is_user ? b->a[i].rank : lo[i];
		size_t h = b->a[i].is_user ? b->a[i].rank : hi[i];
		if (l < lo[p])
			lo[p] = l;
		if (h > hi[p])
			hi[p] = h;
		if (b->a[i].is_user)
			lo[i] = hi[i] = b->a[i].rank;
	}
	for (size_t i = 1; i < n; i++) {
		if (b->a[i].is_user || hi[i] == 0)
			continue;
		for (size_t j = 1; j < n; j++) {
			if (j == i || b->a[j].parent != b->a[i].parent || hi[j] == 0)
				continue;
			if (b->a[i].level_fs > b->a[j].level_fs)
				assert_true(lo[i] > hi[j]);
		}
	}
	free(hi);
	free(lo);
}

static void random_trees_keep_invariants(void **state)
{
	(void)state;
	for (int round = 0; round < 50; round++) {
		struct tb b;
		random_tree(&b, 1 + rnd() % 40, rnd() % 300);
		assert_int_equal(fairtree_compute(b.a, b.n), 0);
		check_ranking(&b);
		check_subtree_order(&b);
		tb_release(&b);
	}
}

/* 100,000 users under 3,000 tenants: completes quickly, ranks are a
 * permutation with ties. The time is printed, not asserted: sanitizer
 * builds are several times slower. */
static void hundred_thousand_users(void **state)
{
	struct tb b;
	struct timespec t0, t1;
	(void)state;

	random_tree(&b, 3000, 100000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("fairtree_compute: %zu associations in %.1f ms\n", b.n,
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	check_ranking(&b);
	/* Same input, same output: compute again and compare. */
	struct fairtree_assoc *copy = malloc(b.n * sizeof(*copy));
	assert_non_null(copy);
	memcpy(copy, b.a, b.n * sizeof(*copy));
	assert_int_equal(fairtree_compute(b.a, b.n), 0);
	for (size_t i = 0; i < b.n; i++) {
		assert_int_equal(copy[i].rank, b.a[i].rank);
		assert_int_equal(copy[i].walk_pos, b.a[i].walk_pos);
	}
	free(copy);
	tb_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(under_user_tenant_ranks_first),
		cmocka_unit_test(user_tied_with_previous_user),
		cmocka_unit_test(user_tied_with_sibling_tenant),
		cmocka_unit_test(tied_tenants_merged),
		cmocka_unit_test(tied_tenants_merged_with_ties),
		cmocka_unit_test(first_child_of_tied_tenant_is_tied),
		cmocka_unit_test(untied_tenant_first_child_not_tied),
		cmocka_unit_test(zero_usage_everyone_tied),
		cmocka_unit_test(zero_shares),
		cmocka_unit_test(empty_tenants),
		cmocka_unit_test(equal_rationals_tie_exactly),
		cmocka_unit_test(deep_chain),
		cmocka_unit_test(malformed_trees),
		cmocka_unit_test(decay),
		cmocka_unit_test(random_trees_keep_invariants),
		cmocka_unit_test(hundred_thousand_users),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
