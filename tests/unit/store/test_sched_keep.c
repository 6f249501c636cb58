/* test_sched_keep.c - the leader's kept snapshot (store_sched_keep_refresh)
 * against a whole load, after random changes, on a real PostgreSQL started
 * with store/devdb.c in a temp dir.
 *
 * Each round makes a few random changes (submits with dependencies,
 * singleton names and arrays, cancels, starts, ends, holds, reasons, begin
 * times, node down/up and GPU health, nodes added and deleted, settings,
 * VACUUM FREEZE, a write committed by another session after the refresh
 * read, the leader's own reason writes noted in the kept snapshot), then refreshes the kept snapshot and loads it whole in the same
 * transaction and compares them field by field: every row, every run's
 * allocations, every job's dependencies and the state each names.
 *
 *   test_sched_keep [rounds] [seed]
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "db.h"
#include "devdb.h"
#include "error.h"
#include "migrate.h"
#include "store_sched.h"

static char dir[PATH_MAX];
static char url[PATH_MAX + 128];
static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
			return;                                                                    \
		}                                                                                  \
	} while (0)

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "%s: %s\n", what, msg);
	exit(1);
}

/* Runs SQL; fails the test unless `may_fail`. */
static int sqlf(PGconn *c, int may_fail, const char *fmt, ...)
{
	char q[4096];
	struct mu_error err = { 0 };
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	int ret = store_db_exec_simple(c, q, &err);
	if (ret < 0 && !may_fail)
		die(q, err.msg);
	return ret;
}

static int64_t sql_int(PGconn *c, const char *q)
{
	struct mu_error err = { 0 };
	int64_t v = 0;
	int ret = store_db_query_int64(c, q, 0, NULL, &v, &err);
	if (ret == MU_ENOTFOUND)
		return 0;
	if (ret < 0)
		die(q, err.msg);
	return v;
}

static int streq(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

static const struct store_sched_depstate *dep_of(const struct store_sched_snap *s, int64_t id)
{
	for (size_t i = 0; i < s->ndeps; i++)
		if (s->deps[i].job_id == id)
			return &s->deps[i];
	return NULL;
}

/* Everything the policy core reads, field by field. */
static void compare(const struct store_sched_snap *a, const struct store_sched_snap *b, int round)
{
	CHECK(a->nnodes == b->nnodes, "round %d: nodes %zu vs %zu", round, a->nnodes, b->nnodes);
	for (size_t i = 0; i < a->nnodes; i++) {
		const struct store_sched_node *x = &a->nodes[i], *y = &b->nodes[i];
		CHECK(x->id == y->id && streq(x->name, y->name) && streq(x->address, y->address) &&
			      streq(x->topology, y->topology) && streq(x->gpu_model, y->gpu_model) &&
			      x->gpu_count == y->gpu_count && x->up == y->up && x->drain == y->drain &&
			      x->fabric_fault == y->fabric_fault && x->healthy_mask == y->healthy_mask,
		      "round %d: node %" PRId64 "/%" PRId64 " differs (up %d/%d mask %" PRIx64 "/%" PRIx64 ")", round,
		      x->id, y->id, x->up, y->up, x->healthy_mask, y->healthy_mask);
	}
	CHECK(a->nruns == b->nruns, "round %d: runs %zu vs %zu", round, a->nruns, b->nruns);
	for (size_t i = 0; i < a->nruns; i++) {
		const struct store_sched_run *x = &a->runs[i], *y = &b->runs[i];
		CHECK(x->id == y->id && x->job_id == y->job_id && x->tenant_id == y->tenant_id &&
			      streq(x->user, y->user) && x->priority_class_id == y->priority_class_id &&
			      x->nodes == y->nodes && x->gpus_per_node == y->gpus_per_node &&
			      x->time_limit == y->time_limit && x->min_nodes == y->min_nodes && x->start == y->start &&
			      x->predicted_runtime == y->predicted_runtime && x->stopping == y->stopping &&
			      x->array_job_id == y->array_job_id && x->alloc_count == y->alloc_count,
		      "round %d: run %" PRId64 "/%" PRId64 " differs", round, x->id, y->id);
		for (size_t k = 0; k < x->alloc_count; k++) {
			const struct store_sched_alloc *p = &a->allocs[x->alloc_first + k],
						       *q = &b->allocs[y->alloc_first + k];
			CHECK(p->run_id == q->run_id && p->node_id == q->node_id && p->node_rank == q->node_rank &&
				      p->gpu_index == q->gpu_index,
			      "round %d: run %" PRId64 " allocation %zu differs", round, x->id, k);
		}
	}
	CHECK(a->njobs == b->njobs, "round %d: jobs %zu vs %zu", round, a->njobs, b->njobs);
	for (size_t i = 0; i < a->njobs; i++) {
		const struct store_sched_job *x = &a->jobs[i], *y = &b->jobs[i];
		CHECK(x->id == y->id && x->tenant_id == y->tenant_id && streq(x->user, y->user) &&
			      streq(x->gpu_model, y->gpu_model) && streq(x->topology_required, y->topology_required) &&
			      streq(x->topology_preferred, y->topology_preferred) &&
			      streq(x->dependencies, y->dependencies) && streq(x->pending_reason, y->pending_reason) &&
			      streq(x->pending_message, y->pending_message) &&
			      x->priority_class_id == y->priority_class_id && x->nodes == y->nodes &&
			      x->min_nodes == y->min_nodes && x->gpus_per_node == y->gpus_per_node &&
			      x->time_limit == y->time_limit && x->retries == y->retries &&
			      x->created_at == y->created_at && x->planned_start == y->planned_start &&
			      x->array_job_id == y->array_job_id && x->array_throttle == y->array_throttle &&
			      x->names_singleton == y->names_singleton &&
			      x->dep_count == y->dep_count,
		      "round %d: job %" PRId64 "/%" PRId64 " differs (reason %s/%s message %s/%s planned %" PRId64
		      "/%" PRId64 " deps %zu/%zu)", round, x->id, y->id, x->pending_reason, y->pending_reason,
		      x->pending_message, y->pending_message, x->planned_start, y->planned_start, x->dep_count,
		      y->dep_count);
		CHECK(x->singleton_blocker == y->singleton_blocker,
		      "round %d: job %" PRId64 " singleton blocker %" PRId64 " vs %" PRId64, round, x->id,
		      x->singleton_blocker, y->singleton_blocker);
		for (size_t k = 0; k < x->dep_count; k++) {
			const struct store_sched_edge *p = &a->edges[x->dep_first + k], *q = &b->edges[y->dep_first + k];
			CHECK(p->job_id == q->job_id && p->target == q->target && p->type == q->type,
			      "round %d: job %" PRId64 " dependency %zu differs", round, x->id, k);
			const struct store_sched_depstate *s = dep_of(a, p->target), *t = dep_of(b, q->target);
			CHECK(!s == !t && (!s || (streq(s->state, t->state) && s->exit_code == t->exit_code)),
			      "round %d: job %" PRId64 " dependency on %" PRId64 ": state %s/%s", round, x->id,
			      p->target, s ? s->state : "(none)", t ? t->state : "(none)");
		}
	}
	CHECK(a->ntenants == b->ntenants && a->nquotas == b->nquotas && a->nclasses == b->nclasses &&
		      a->nusage == b->nusage && a->nruntimes == b->nruntimes,
	      "round %d: small tables differ", round);
	for (size_t i = 0; i < a->ntenants; i++)
		CHECK(a->tenants[i].id == b->tenants[i].id && a->tenants[i].shares == b->tenants[i].shares &&
			      streq(a->tenants[i].name, b->tenants[i].name),
		      "round %d: tenant differs", round);
	for (size_t i = 0; i < a->nusage; i++)
		CHECK(a->usage[i].value == b->usage[i].value && streq(a->usage[i].user, b->usage[i].user),
		      "round %d: usage differs", round);
}

/* One random change. */
static void change(PGconn *c, PGconn *other, int round)
{
	int op = rand() % 16;
	switch (op) {
	case 0:
	case 1: { /* submit, maybe with dependencies or a singleton name */
		int64_t dep = sql_int(c, "SELECT id FROM jobs ORDER BY random() LIMIT 1");
		const char *deps[] = { "[]", "[]", "[{\"type\": \"afterok\", \"job_id\": %" PRId64 "}]",
				       "[{\"type\": \"afterany\", \"job_id\": %" PRId64 "}, {\"type\": \"afternotok\","
				       " \"job_id\": 1}]",
				       "[{\"type\": \"singleton\"}]" };
		char d[256];
		snprintf(d, sizeof(d), deps[rand() % 5], dep);
		sqlf(c, 0,
		     "INSERT INTO jobs (tenant_id, user_name, name, priority_class_id, nodes, gpus_per_node, gpu_model,"
		     " time_limit, command, dependencies) VALUES (1, 'u%d', 'n%d', 2, 1 + %d, %d, 'h100', 3600,"
		     " '[\"x\"]', '%s')",
		     rand() % 3, rand() % 3, rand() % 2, 1 + rand() % 8, d);
		break;
	}
	case 2: /* an array of three tasks */
		sqlf(c, 0,
		     "WITH f AS (INSERT INTO jobs (tenant_id, user_name, priority_class_id, nodes, gpus_per_node,"
		     " gpu_model, time_limit, command) VALUES (1, 'u1', 2, 1, 1, 'h100', 600, '[\"x\"]') RETURNING id)"
		     " UPDATE jobs SET array_job_id = f.id FROM f WHERE jobs.id = f.id;"
		     " INSERT INTO jobs (tenant_id, user_name, priority_class_id, nodes, gpus_per_node, gpu_model,"
		     " time_limit, command, array_job_id) SELECT 1, 'u1', 2, 1, 1, 'h100', 600, '[\"x\"]', max(id)"
		     " FROM jobs, generate_series(1, 2) WHERE array_job_id = id;"
		     " INSERT INTO jobs (tenant_id, priority_class_id, nodes, gpus_per_node, gpu_model, time_limit,"
		     " command, dependencies) SELECT 1, 2, 1, 1, 'h100', 600, '[\"x\"]',"
		     " jsonb_build_array(jsonb_build_object('type', 'afterok', 'job_id', max(id)))"
		     " FROM jobs WHERE array_job_id = id");
		break;
	case 3: /* cancel */
		sqlf(c, 0,
		     "UPDATE jobs SET state = 'CANCELLED', ended_at = now() WHERE id = (SELECT id FROM jobs"
		     " WHERE state = 'PENDING' ORDER BY random() LIMIT 1)");
		break;
	case 4: { /* start a pending job on a free GPU */
		int64_t job = sql_int(c, "SELECT id FROM jobs WHERE state = 'PENDING' AND NOT held ORDER BY random() LIMIT 1");
		if (!job)
			break;
		sqlf(c, 0,
		     "BEGIN; UPDATE jobs SET state = 'RUNNING', started_at = now() WHERE id = %" PRId64 ";"
		     " INSERT INTO runs (job_id, attempt, epoch, state, nodes, gpus_per_node, time_limit, started_at)"
		     " VALUES (%" PRId64 ", 1 + (SELECT count(*) FROM runs WHERE job_id = %" PRId64 "), 0, 'RUNNING',"
		     " 1, 1, 3600, now());"
		     " INSERT INTO run_allocations (run_id, node_id, node_rank, gpu_index)"
		     " SELECT (SELECT max(id) FROM runs), g.node_id, 0, g.idx FROM gpus g WHERE NOT EXISTS"
		     " (SELECT 1 FROM run_allocations a WHERE a.live AND a.node_id = g.node_id AND a.gpu_index = g.idx)"
		     " ORDER BY random() LIMIT 1; COMMIT",
		     job, job, job);
		break;
	}
	case 5: /* end a run */
		sqlf(c, 0,
		     "WITH r AS (UPDATE runs SET live = false, state = 'COMPLETED', exit_code = %d, ended_at = now()"
		     " WHERE id = (SELECT id FROM runs WHERE live ORDER BY random() LIMIT 1) RETURNING id, job_id),"
		     " a AS (UPDATE run_allocations SET live = false FROM r WHERE run_id = r.id)"
		     " UPDATE jobs SET state = CASE WHEN %d = 0 THEN 'COMPLETED' ELSE 'FAILED' END, exit_code = %d,"
		     " ended_at = now() FROM r WHERE jobs.id = r.job_id",
		     rand() % 2, rand() % 2, rand() % 2);
		break;
	case 6: /* node down / up, drained */
		sqlf(c, 0, "UPDATE nodes SET up = NOT up, drain = random() < 0.3 WHERE id = (SELECT id FROM nodes ORDER BY"
			   " random() LIMIT 1)");
		break;
	case 7: /* a GPU's health */
		sqlf(c, 0, "UPDATE gpus SET healthy = NOT healthy WHERE (node_id, idx) = (SELECT node_id, idx FROM gpus"
			   " ORDER BY random() LIMIT 1)");
		break;
	case 8: /* hold / release */
		sqlf(c, 0, "UPDATE jobs SET held = NOT held WHERE id = (SELECT id FROM jobs WHERE state = 'PENDING'"
			   " ORDER BY random() LIMIT 1)");
		break;
	case 9: /* a reason, as the leader writes it */
		sqlf(c, 0, "UPDATE jobs SET pending_reason = 'Resources', planned_start = now() + interval '1 hour'"
			   " WHERE id = (SELECT id FROM jobs WHERE state = 'PENDING' ORDER BY random() LIMIT 1)");
		break;
	case 10: /* a begin time a second away: due later with no write */
		sqlf(c, 0, "UPDATE jobs SET begin_at = now() + interval '1 second' WHERE id = (SELECT id FROM jobs"
			   " WHERE state = 'PENDING' ORDER BY random() LIMIT 1)");
		break;
	case 11: /* a node added, or one without runs deleted */
		if (rand() % 2)
			sqlf(c, 0, "INSERT INTO nodes (name, topology, gpu_model, gpu_count) VALUES ('x%d-%d',"
				   " 'block-9/rack-9', 'h100', 4)", round, rand());
		else
			sqlf(c, 0, "DELETE FROM nodes WHERE id = (SELECT id FROM nodes n WHERE NOT EXISTS (SELECT 1"
				   " FROM gpus g WHERE g.node_id = n.id) AND NOT EXISTS (SELECT 1 FROM run_allocations a"
				   " WHERE a.node_id = n.id) LIMIT 1)");
		break;
	case 12: /* the settings */
		sqlf(c, 0, "UPDATE settings SET value = to_jsonb(1 + (random() * 3)::int) WHERE key = 'reservation_depth'");
		break;
	case 13: /* freezing keeps what was read */
		sqlf(c, 0, "VACUUM (FREEZE) jobs, runs, nodes, gpus, run_allocations");
		break;
	case 14: /* another session writes now and commits after the next refresh read */
		sqlf(other, 0, "BEGIN; UPDATE jobs SET time_limit = time_limit + 1 WHERE id = (SELECT id FROM jobs"
			       " WHERE state = 'PENDING' ORDER BY random() LIMIT 1);"
			       " UPDATE nodes SET address = 'a%d' WHERE id = (SELECT min(id) FROM nodes)", round);
		break;
	case 15: /* a run stopping, and its job's class changed */
		sqlf(c, 0, "WITH r AS (UPDATE runs SET state = 'STOPPING' WHERE id = (SELECT id FROM runs WHERE live"
			   " AND state = 'RUNNING' ORDER BY random() LIMIT 1) RETURNING job_id)"
			   " UPDATE jobs SET priority_class_id = 1 FROM r WHERE jobs.id = r.job_id");
		break;
	}
}

int main(int argc, char **argv)
{
	struct mu_error err = { 0 };
	char tmpl[] = "/tmp/muster-unit.XXXXXX";
	int rounds = argc > 1 ? atoi(argv[1]) : 300;
	unsigned seed = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
	int merged = 0, whole = 0, noted = 0;

	srand(seed);
	if (!mkdtemp(tmpl))
		die("mkdtemp", tmpl);
	chmod(tmpl, 0755);
	snprintf(dir, sizeof(dir), "%s/db", tmpl);
	if (store_devdb_start(dir, url, sizeof(url), &err) != 0)
		die("devdb start", err.msg);
	PGconn *c = store_db_connect(url, "test_sched_keep", &err);
	PGconn *other = c ? store_db_connect(url, "test_sched_keep other", &err) : NULL;
	if (!c || !other)
		die("connect", err.msg);
	if (store_migrate(c, &err) < 0)
		die("migrate", err.msg);
	sqlf(c, 0,
	     "INSERT INTO nodes (name, address, topology, gpu_model, gpu_count) SELECT 'n' || i, '10.0.0.' || i,"
	     " 'block-' || (i / 8) || '/rack-' || (i / 4), 'h100', 8 FROM generate_series(0, 19) i;"
	     " INSERT INTO gpus (node_id, idx, model) SELECT n.id, g, 'h100' FROM nodes n, generate_series(0, 7) g;"
	     " INSERT INTO nodes (name, topology, gpu_model, gpu_count) VALUES ('bare', 'block-9/rack-9', 'h100', 4);"
	     " INSERT INTO usage_decayed (tenant_id, user_name, value) VALUES (1, 'u1', 1000)");
	for (int i = 0; i < 40; i++) {
		change(c, other, 0);
		if (PQtransactionStatus(other) != PQTRANS_IDLE)
			sqlf(other, 0, "COMMIT");
	}

	struct store_sched_keep *k = store_sched_keep_new();
	bool other_open = false;
	for (int round = 1; round <= rounds && !failures; round++) {
		int n = 1 + rand() % 6;
		for (int i = 0; i < n; i++) {
			if (other_open) {
				sqlf(other, 0, "COMMIT");
				other_open = false;
			}
			int before = PQtransactionStatus(other) != PQTRANS_IDLE;
			change(c, other, round);
			other_open = !before && PQtransactionStatus(other) != PQTRANS_IDLE;
		}
		if (round % 97 == 0)
			sleep(2); /* begin times come due */

		struct store_sched_settings set;
		struct store_sched_snap full = { 0 };
		const struct store_sched_snap *kept = NULL;
		struct store_sched_keep_stats st;
		sqlf(c, 0, "BEGIN");
		if (store_sched_settings_load(c, &set, &err) < 0)
			die("settings", err.msg);
		if (store_sched_keep_refresh(c, &set, k, &kept, &st, &err) < 0)
			die("refresh", err.msg);
		if (store_sched_snap_load_settings(c, &set, &full, &err) < 0)
			die("load", err.msg);
		compare(kept, &full, round);
		store_sched_snap_release(&full);
		if (st.whole)
			whole++;
		else
			merged++;
		/* the leader writes reasons, as a cycle does, and notes them; the
		 * other session's write commits between the read and that write
		 * (the write must not hide it) */
		bool note = rand() % 2 && kept->njobs, raced = other_open;
		if (other_open) { /* committed after the refresh read: the next one reads it */
			sqlf(other, 0, "COMMIT");
			other_open = false;
		}
		if (note) {
			struct store_sched_pending pd[8];
			char msg[8][32];
			size_t np = 1 + (size_t)rand() % 8;
			size_t at = (size_t)rand() % kept->njobs; /* distinct jobs, as a cycle writes */
			if (np > kept->njobs)
				np = kept->njobs;
			for (size_t i = 0; i < np; i++) {
				snprintf(msg[i], sizeof(msg[i]), "m%d.%zu", round, i);
				pd[i] = (struct store_sched_pending){ kept->jobs[(at + i) % kept->njobs].id,
								      rand() % 2 ? "Priority" : "Resources", msg[i],
								      rand() % 2 ? set.now + rand() % 7200 : 0 };
			}
			struct store_sched_decisions d = { .pending = pd, .npending = np };
			int started = 0;
			if (store_sched_keep_lock_pending(c, k, &d, &err) < 0 ||
			    store_sched_apply(c, 0, &d, &started, &err) < 0 ||
			    store_sched_keep_note_pending(c, k, &d, &err) < 0)
				die("apply", err.msg);
			if (!raced) { /* (else the whole load sees the other write, the kept one next time) */
				if (store_sched_snap_load_settings(c, &set, &full, &err) < 0)
					die("load", err.msg);
				compare(kept, &full, round);
				store_sched_snap_release(&full);
			}
			noted++;
		}
		/* a write after the read (and after no noted write of its own: the
		 * leader's last write to a pending row is its reason): the next
		 * refresh reads it */
		if (!note && rand() % 2)
			sqlf(c, 0, "UPDATE jobs SET pending_message = 'm%d' WHERE id = (SELECT id FROM jobs WHERE"
				   " state = 'PENDING' ORDER BY random() LIMIT 1)", round);
		if (rand() % 10 == 0) {
			sqlf(c, 0, "ROLLBACK"); /* as a failed cycle: the leader starts over */
			store_sched_keep_reset(k);
		} else {
			sqlf(c, 0, "COMMIT");
		}
	}
	printf("%d rounds: %d refreshed from changes, %d whole, %d with reasons noted (seed %u)\n", rounds, merged,
	       whole, noted, seed);
	if (!failures && merged < rounds / 2) {
		fprintf(stderr, "FAIL: only %d of %d refreshes read changes alone\n", merged, rounds);
		failures++;
	}
	store_sched_keep_free(k);
	store_db_close(other);
	store_db_close(c);
	if (store_devdb_stop(dir, &err) != 0)
		fprintf(stderr, "devdb stop: %s\n", err.msg);
	nftw(tmpl, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return failures ? 1 : 0;
}
