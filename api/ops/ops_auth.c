/*
 * ops_auth.c - the shared token cache (ops_auth.h): a direct-mapped table
 * of valid tokens and one of refused hashes, under one mutex.
 */
#include "ops_auth.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "store_auth.h"

#define AUTH_CACHE_SIZE 1024
#define AUTH_NEG_SIZE 4096

struct auth_entry {
	char sha[65];
	double expires;
	int role;
	int64_t token_id, tenant_id;
	char *tenant, *tenant_path, *user, *node;
};

struct auth_neg {
	char sha[65];
	double expires;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct auth_entry cache[AUTH_CACHE_SIZE];
static struct auth_neg neg[AUTH_NEG_SIZE];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The first 12 hex digits of the hash (not attacker-chosen: a SHA-256). */
static size_t slot_of(const char *sha)
{
	size_t h = 0;

	for (int i = 0; i < 12 && sha[i]; i++)
		h = h * 16 + (size_t)(sha[i] <= '9' ? sha[i] - '0' : sha[i] - 'a' + 10);
	return h;
}

static void entry_clear(struct auth_entry *e)
{
	mu_free(e->tenant);
	mu_free(e->tenant_path);
	mu_free(e->user);
	mu_free(e->node);
	memset(e, 0, sizeof(*e));
}

static const char *adup(struct mu_arena *a, const char *s)
{
	return s ? mu_arena_strdup(a, s) : NULL;
}

int ops_auth_cached(const char *sha, struct mu_arena *a, struct ops_principal *out)
{
	size_t h = slot_of(sha);
	struct auth_entry *e = &cache[h % AUTH_CACHE_SIZE];
	struct auth_neg *n = &neg[h % AUTH_NEG_SIZE];
	double now = now_s();
	int known = 0;

	pthread_mutex_lock(&mu);
	if (!strcmp(e->sha, sha) && e->expires > now) {
		known = 1;
		if (out) {
			out->role = e->role;
			out->token_id = e->token_id;
			out->tenant_id = e->tenant_id;
			out->tenant = adup(a, e->tenant);
			out->tenant_path = adup(a, e->tenant_path);
			out->user = adup(a, e->user);
			out->node = adup(a, e->node);
		}
	} else if (!strcmp(n->sha, sha) && n->expires > now) {
		known = -1;
	}
	pthread_mutex_unlock(&mu);
	return known;
}

bool ops_auth_known_good(const char *sha)
{
	bool good;

	pthread_mutex_lock(&mu);
	good = !strcmp(cache[slot_of(sha) % AUTH_CACHE_SIZE].sha, sha);
	pthread_mutex_unlock(&mu);
	return good;
}

void ops_auth_remember(const char *sha, const struct ops_principal *p)
{
	struct auth_entry *e = &cache[slot_of(sha) % AUTH_CACHE_SIZE];

	pthread_mutex_lock(&mu);
	entry_clear(e);
	memcpy(e->sha, sha, sizeof(e->sha));
	e->expires = now_s() + OPS_AUTH_TTL_S;
	e->role = p->role;
	e->token_id = p->token_id;
	e->tenant_id = p->tenant_id;
	e->tenant = p->tenant ? mu_strdup(p->tenant) : NULL;
	e->tenant_path = p->tenant_path ? mu_strdup(p->tenant_path) : NULL;
	e->user = mu_strdup(p->user ? p->user : "");
	e->node = p->node ? mu_strdup(p->node) : NULL;
	pthread_mutex_unlock(&mu);
}

void ops_auth_remember_bad(const char *sha)
{
	size_t h = slot_of(sha);
	struct auth_neg *n = &neg[h % AUTH_NEG_SIZE];
	struct auth_entry *e = &cache[h % AUTH_CACHE_SIZE];

	pthread_mutex_lock(&mu);
	if (!strcmp(e->sha, sha))
		entry_clear(e); /* revoked: no longer "known good" */
	memcpy(n->sha, sha, sizeof(n->sha));
	n->expires = now_s() + OPS_AUTH_NEG_TTL_S;
	pthread_mutex_unlock(&mu);
}

void ops_auth_flush(void)
{
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < AUTH_CACHE_SIZE; i++)
		entry_clear(&cache[i]);
	pthread_mutex_unlock(&mu);
}

int ops_auth_check(PGconn *db, struct mu_arena *a, const char *secret, const char *sha,
		   struct ops_principal *out, struct mu_error *err, bool *asked_db)
{
	struct store_principal p;
	int ret;

	*asked_db = false;
	switch (ops_auth_cached(sha, a, out)) {
	case 1:
		return 0;
	case -1:
		return mu_error_set(err, MU_EUNAUTH, "", "invalid, expired or revoked token");
	default:
		break;
	}
	*asked_db = true;
	ret = store_auth_lookup(db, a, secret ? secret : "", &p, err);
	if (ret == MU_EUNAUTH)
		ops_auth_remember_bad(sha);
	if (ret < 0)
		return ret;
	ops_principal_from_store(out, &p);
	ops_auth_remember(sha, out);
	return 0;
}
