/* store_agent.c - node agents' writes and desired runs; see store_agent.h. */
#include "store_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "store_int.h"
#include "store_node.h"

static void add_i64(struct mu_buf *b, int64_t v)
{
	if (b->len > 1)
		mu_buf_addc(b, ',');
	mu_buf_add_int(b, v);
}

int store_agent_heartbeats(PGconn *c, const char *replica, const int64_t *node_ids, size_t nn,
			   const struct store_agent_gpu_hb *hb, size_t nh, struct mu_error *err)
{
	static const char sql[] =
		"WITH o AS (SELECT id, up AS was_up FROM nodes WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE),"
		" hb AS (UPDATE nodes n SET last_heartbeat = now(), up = true, stream_replica = $9"
		"        FROM o WHERE n.id = o.id"
		"        RETURNING n.id, n.name, o.was_up),"
		" back AS (SELECT id, name FROM hb WHERE NOT was_up),"
		" ev AS (INSERT INTO events (kind, node_id, reason) SELECT 'node.up', id, 'heartbeat' FROM back),"
		" g AS (UPDATE gpus g SET memory_used_mb = u.m, utilization = u.ut, temperature = u.t,"
		"        ecc_errors = u.e, last_xid = coalesce(nullif(u.x, 0), g.last_xid), updated_at = now()"
		"        FROM unnest($2::bigint[], $3::int[], $4::bigint[], $5::int[], $6::int[], $7::bigint[], $8::int[])"
		"             AS u(node_id, idx, m, ut, t, e, x)"
		"        WHERE g.node_id = u.node_id AND g.idx = u.idx)"
		" SELECT pg_notify('muster_sched', 'node:' || name) FROM back";
	struct mu_buf b[8];
	const char *params[9];
	int ret = 0;

	if (!nn)
		return 0;
	for (int i = 0; i < 8; i++) {
		mu_buf_init(&b[i]);
		mu_buf_addc(&b[i], '{');
	}
	for (size_t i = 0; i < nn; i++)
		add_i64(&b[0], node_ids[i]);
	for (size_t i = 0; i < nh; i++) {
		add_i64(&b[1], hb[i].node_id);
		add_i64(&b[2], hb[i].idx);
		add_i64(&b[3], hb[i].mem_used_mb);
		add_i64(&b[4], hb[i].utilization);
		add_i64(&b[5], hb[i].temperature);
		add_i64(&b[6], hb[i].ecc_errors);
		add_i64(&b[7], hb[i].xid);
	}
	for (int i = 0; i < 8; i++) {
		mu_buf_addc(&b[i], '}');
		params[i] = b[i].p;
	}
	params[8] = replica;
	/* a deadlock with a scheduler cycle or a serialization failure: try again */
	for (int attempt = 0;; attempt++) {
		ret = store_db_exec(c, sql, 9, params, NULL, err);
		if (ret == 0 || attempt == 2 || !store_db_ok(c))
			break;
		usleep(10000 * (attempt + 1));
	}
	for (int i = 0; i < 8; i++)
		mu_buf_release(&b[i]);
	return ret;
}

int store_agent_fault(PGconn *c, int64_t node_id, const char *node, int gpu, int xid,
		      const char *reason, struct mu_error *err)
{
	char id[24], g[16], x[16], drained[8] = "";
	const char *p[4] = { id, g, reason, x };
	int ret;

	snprintf(id, sizeof(id), "%lld", (long long)node_id);
	snprintf(g, sizeof(g), "%d", gpu);
	snprintf(x, sizeof(x), "%d", xid);
	if (gpu >= 0)
		ret = store_db_exec(c,
				    "WITH g AS (UPDATE gpus SET healthy = false, health_reason = $3::text, last_xid = $4::int,"
				    "  updated_at = now() WHERE node_id = $1::bigint AND idx = $2::int RETURNING idx)"
				    " INSERT INTO events (kind, node_id, reason, data)"
				    " SELECT 'gpu.unhealthy', $1::bigint, $3::text,"
				    "  jsonb_build_object('gpu', $2::int, 'xid', $4::int) FROM g",
				    4, p, NULL, err);
	else
		ret = store_db_exec(c,
				    "WITH n AS (UPDATE nodes SET fabric_fault = $2::text, updated_at = now()"
				    "  WHERE id = $1::bigint RETURNING id)"
				    " INSERT INTO events (kind, node_id, reason)"
				    " SELECT 'node.link_down', id, $2::text FROM n",
				    2, (const char *[]){ id, reason }, NULL, err);
	if (ret < 0)
		goto out;
	ret = store_db_query_text(c, "SELECT drain::text FROM nodes WHERE id = $1::bigint", 1, p, drained,
				  sizeof(drained), err);
	if (ret < 0)
		goto out;
	if (strcmp(drained, "true"))
		ret = store_node_drain(c, node, true, reason, err);
	else
		ret = store_db_exec(c, "SELECT pg_notify('muster_sched', 'node:' || name) FROM nodes"
				    " WHERE id = $1::bigint", 1, p, NULL, err);
out:
	return ret;
}

int store_agent_broken_gpus(PGconn *c, struct mu_arena *a, const char *node,
			    struct store_agent_broken_gpu **out, size_t *n, struct mu_error *err)
{
	PGresult *res = NULL;
	int ret, rows;

	*out = NULL;
	*n = 0;
	ret = store_db_exec(c,
			    "SELECT g.idx, g.uuid, g.health_reason FROM gpus g JOIN nodes n ON n.id = g.node_id"
			    " WHERE n.name = $1 AND n.drain AND NOT g.healthy",
			    1, &node, &res, err);
	if (ret < 0)
		return ret;
	rows = store_db_nrows(res);
	*out = mu_arena_alloc(a, sizeof(**out) * (size_t)(rows + 1));
	for (int i = 0; i < rows; i++) {
		(*out)[i].idx = store_db_get_int64(res, i, 0);
		(*out)[i].uuid = mu_arena_strdup(a, store_db_get(res, i, 1));
		(*out)[i].reason = mu_arena_strdup(a, store_db_get(res, i, 2));
	}
	*n = (size_t)rows;
	store_db_clear(res);
	return 0;
}

int store_agent_heartbeat_timeout(PGconn *c)
{
	char v[32] = "";

	if (store_db_query_text(c, "SELECT value::text FROM settings WHERE key = 'heartbeat_timeout'", 0, NULL,
				v, sizeof(v), NULL) == 0 && atoi(v) > 0)
		return atoi(v);
	return 30;
}

struct rs_tx {
	const struct store_agent_status *s;
	bool changed;
};

static int run_status_tx(PGconn *db, void *arg, struct mu_error *err)
{
	struct rs_tx *t = arg;
	const struct store_agent_status *s = t->s;
	char run[24], node[24], ec[16], sig[16];
	const char *p[8] = { run, node, s->phase, ec, sig, s->log_path ? s->log_path : "",
			     s->message ? s->message : "", s->end_reason ? s->end_reason : "" };
	PGresult *res = NULL;
	bool live, ended, stopping, member, node_fault, failed, all_exited;
	int ret;

	snprintf(run, sizeof(run), "%lld", (long long)s->run_id);
	snprintf(node, sizeof(node), "%lld", (long long)s->node_id);
	snprintf(ec, sizeof(ec), "%d", s->exit_code);
	snprintf(sig, sizeof(sig), "%d", s->exit_signal);
	ret = store_db_exec(db,
			    "SELECT r.live, r.ended_at IS NOT NULL, r.state = 'STOPPING' OR r.stop_requested_at IS NOT NULL,"
			    " EXISTS (SELECT 1 FROM run_allocations a WHERE a.run_id = r.id AND a.node_id = $2::bigint"
			    "   AND a.live),"
			    " (SELECT j.min_nodes < r.nodes FROM jobs j WHERE j.id = r.job_id) IS TRUE"
			    "   AND EXISTS (SELECT 1 FROM run_allocations a JOIN gpus g ON g.node_id = a.node_id"
			    "     AND g.idx = a.gpu_index WHERE a.run_id = r.id AND a.node_id = $2::bigint AND a.live"
			    "     AND NOT g.healthy)"
			    " FROM runs r WHERE r.id = $1::bigint"
			    " AND EXISTS (SELECT 1 FROM run_allocations a WHERE a.run_id = r.id AND a.node_id = $2::bigint)"
			    " FOR UPDATE OF r",
			    2, p, &res, err);
	if (ret < 0)
		return ret;
	if (store_db_nrows(res) != 1) {
		store_db_clear(res);
				return 0;
	}
	live = store_db_get_bool(res, 0, 0);
	ended = store_db_get_bool(res, 0, 1);
	stopping = store_db_get_bool(res, 0, 2);
	member = store_db_get_bool(res, 0, 3);
	node_fault = store_db_get_bool(res, 0, 4);
	store_db_clear(res);
	/* never downgrade a part that has exited */
	ret = store_db_exec(db,
			    "INSERT INTO run_node_status AS s (run_id, node_id, phase, exit_code, exit_signal, log_path, message,"
			    "   end_reason)"
			    " VALUES ($1::bigint, $2::bigint, $3::text, CASE WHEN $3::text = 'RUNNING' THEN NULL ELSE $4::int END,"
			    "         nullif($5::int, 0), $6::text, $7::text, $8::text)"
			    " ON CONFLICT (run_id, node_id) DO UPDATE SET phase = EXCLUDED.phase, exit_code = EXCLUDED.exit_code,"
			    "   exit_signal = EXCLUDED.exit_signal, log_path = EXCLUDED.log_path, message = EXCLUDED.message,"
			    "   end_reason = EXCLUDED.end_reason, updated_at = now()"
			    " WHERE s.phase = 'RUNNING'",
			    8, p, NULL, err);
	if (ret < 0)
		return ret;
	ret = store_db_exec(db,
			    "INSERT INTO events (kind, tenant_id, job_id, run_id, node_id, reason, data)"
			    " SELECT 'run.node_' || lower($3::text), j.tenant_id, j.id, r.id, $2::bigint, $7::text,"
			    "   jsonb_build_object('node', (SELECT name FROM nodes WHERE id = $2::bigint), 'exit_code',"
			    "     CASE WHEN $3::text = 'RUNNING' THEN NULL ELSE $4::int END, 'exit_signal', nullif($5::int, 0),"
			    "     'log_path', $6::text, 'end_reason', nullif($8::text, ''))"
			    " FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.id = $1::bigint",
			    8, p, NULL, err);
	if (ret < 0)
		return ret;
	/* A node an elastic run was shrunk off reports the end of its part:
	 * recorded above, and nothing more (the run goes on elsewhere). */
	if (!live || ended || !member)
		return 0;
	if (!strcmp(s->phase, "RUNNING")) {
		ret = store_db_exec(db,
				    "WITH u AS (UPDATE runs SET state = 'RUNNING', started_at = coalesce(started_at, now())"
				    "  WHERE id = $1::bigint AND state = 'STARTING' RETURNING id, job_id)"
				    " INSERT INTO events (kind, tenant_id, job_id, run_id, reason)"
				    " SELECT 'run.running', j.tenant_id, j.id, u.id, '' FROM u JOIN jobs j ON j.id = u.job_id",
				    1, p, NULL, err);
		goto notify;
	}
	failed = !strcmp(s->phase, "FAILED_TO_START") || s->exit_code != 0 || s->exit_signal != 0 ||
		 (s->end_reason && *s->end_reason);
	ret = store_db_exec(db,
			    "SELECT (SELECT count(*) FROM run_node_status s WHERE s.run_id = $1::bigint"
			    "        AND s.phase IN ('EXITED', 'FAILED_TO_START') AND EXISTS (SELECT 1"
			    "        FROM run_allocations a WHERE a.run_id = s.run_id AND a.node_id = s.node_id AND a.live))"
			    "    >= (SELECT count(DISTINCT node_id) FROM run_allocations WHERE run_id = $1::bigint AND live)",
			    1, p, &res, err);
	if (ret < 0)
		return ret;
	all_exited = store_db_get_bool(res, 0, 0);
	store_db_clear(res);
	if (stopping) {
		/* every part confirmed the stop: the scheduler finishes the run */
		if (all_exited)
			ret = store_db_exec(db,
					    "UPDATE runs SET ended_at = now(), exit_code = coalesce(exit_code, $4::int),"
					    " exit_signal = coalesce(exit_signal, nullif($5::int, 0))"
					    " WHERE id = $1::bigint AND $2::bigint > 0 AND $3::text <> ''",
					    5, p, NULL, err);
	} else if (failed && node_fault) {
		/* the part died with its GPU (fatal XID) and the run is elastic
		 * with nodes to spare: a node failure, not the job's. The
		 * scheduler shrinks the run off this node. */
	} else if (failed) {
		/* one part failed: the run failed; the other parts leave their desired state */
		ret = store_db_exec(db,
				    "UPDATE runs SET ended_at = now(),"
				    " state = CASE WHEN $8::text = 'timeout' THEN 'TIMEOUT' ELSE 'FAILED' END, exit_code = $4::int,"
				    " exit_signal = nullif($5::int, 0), started_at = coalesce(started_at, now()),"
				    " end_reason = $8::text"
				    " WHERE id = $1::bigint AND $2::bigint > 0 AND $3::text <> '' AND $6::text = $6::text"
				    "   AND $7::text = $7::text",
				    8, p, NULL, err);
		t->changed = true;
	} else if (all_exited) {
		ret = store_db_exec(db,
				    "UPDATE runs SET ended_at = now(), state = 'COMPLETED', exit_code = 0,"
				    " started_at = coalesce(started_at, now()) WHERE id = $1::bigint",
				    1, p, NULL, err);
	}
	if (ret < 0)
		return ret;
notify:
	if (ret < 0)
		return ret;
	if (t->changed)
		ret = store_db_exec(db,
				    "SELECT pg_notify('muster_agents', n.name) FROM nodes n WHERE n.id IN"
				    " (SELECT node_id FROM run_allocations WHERE run_id = $1::bigint)",
				    1, p, NULL, err);
	if (ret == 0)
		ret = store_db_exec(db, "SELECT pg_notify('muster_sched', 'run:' || $1::text)", 1, p, NULL, err);
	return ret;
}

int store_agent_run_status(PGconn *c, const struct store_agent_status *s, bool *peers_changed,
			   struct mu_error *err)
{
	struct rs_tx t = { .s = s };
	int ret = store_db_tx(c, NULL, 0, run_status_tx, &t, err);

	if (peers_changed)
		*peers_changed = ret == 0 && t.changed;
	return ret;
}

static void gpu_list(struct mu_arena *a, struct store_desired_run *r, const char *arr)
{
	size_t n = 1;

	for (const char *p = arr; *p; p++)
		n += *p == ',';
	r->gpus = mu_arena_alloc(a, n * sizeof(*r->gpus));
	for (const char *p = arr; *p;) {
		char *end;

		if (*p < '0' || *p > '9') {
			p++;
			continue;
		}
		r->gpus[r->n_gpus++] = (int32_t)strtol(p, &end, 10);
		p = end;
	}
}

/* The launch fields of a desired run (columns 24..30, migration 110). */
#define DESIRED_LAUNCH_COLS                                                                        \
	" coalesce(j.launch->>'launcher', ''), coalesce(j.min_nodes, 0),"                            \
	" coalesce(j.launch->>'on_shrink', 'restart'), r.restart_count,"                              \
	" coalesce(j.launch#>>'{signal,name}', ''),"                                                 \
	" coalesce((j.launch#>>'{signal,before}')::int, 0),"                                         \
	" coalesce((j.launch#>>'{signal,batch_only}')::boolean, false)"

static void desired_launch(struct mu_arena *a, const PGresult *res, int i, struct store_desired_run *r)
{
	r->launcher = mu_arena_strdup(a, store_db_get(res, i, 24));
	r->min_nodes = (int32_t)store_db_get_int64(res, i, 25);
	r->on_shrink = mu_arena_strdup(a, store_db_get(res, i, 26));
	r->restart_count = (int32_t)store_db_get_int64(res, i, 27);
	r->signal_name = mu_arena_strdup(a, store_db_get(res, i, 28));
	r->signal_before = (int32_t)store_db_get_int64(res, i, 29);
	r->signal_batch_only = store_db_get_bool(res, i, 30);
}

int store_agent_desired(PGconn *c, struct mu_arena *a, const int64_t *node_ids, size_t n,
			struct store_desired_run **runs, size_t *nruns,
			struct store_desired_node **nodes, size_t *nnodes, struct mu_error *err)
{
	static const char runs_sql[] =
		"SELECT a.node_id, r.id, r.job_id, r.attempt, j.name, t.name, j.user_name, j.command::text,"
		" j.env::text, j.workdir, j.procs_per_node, min(a.node_rank),"
		" coalesce(array_agg(a.gpu_index ORDER BY a.gpu_index) FILTER (WHERE a.gpu_index >= 0), '{}')::text,"
		" r.master_addr, r.master_port, r.time_limit,"
		" r.state = 'STOPPING' OR r.stop_requested_at IS NOT NULL OR NOT bool_or(a.live),"
		" CASE WHEN bool_or(a.live) THEN r.stop_reason ELSE 'shrink' END, r.grace_period,"
		" r.gpus_per_node,"
		" (SELECT coalesce(json_agg(json_build_object('rank', x.rk, 'name', nd.name, 'address', nd.address,"
		"     'gpus', x.g) ORDER BY x.rk), '[]')"
		"    FROM (SELECT node_id, min(node_rank) AS rk, count(*) FILTER (WHERE gpu_index >= 0) AS g"
		"          FROM run_allocations WHERE run_id = r.id AND live GROUP BY node_id) x"
		"    JOIN nodes nd ON nd.id = x.node_id)::text,"
		" j.mem_per_node, j.cpus_per_node,"
		" coalesce((SELECT u.unix_account FROM tenants u WHERE u.unix_account <> ''"
		"   AND (t.path = u.path OR starts_with(t.path, u.path || '/'))"
		"   ORDER BY length(u.path) DESC LIMIT 1), '')"
		"," DESIRED_LAUNCH_COLS
		", j.stdout_pattern, j.stderr_pattern"
		", coalesce(j.array_job_id, 0), coalesce(j.array_task_id, 0), coalesce(j.array_spec, '')"
		/* live allocations by the partial node index, plus the parts of
		 * shrunk runs dropped from these nodes (a tiny partial index) */
		" FROM (SELECT run_id, node_id, node_rank, gpu_index, live FROM run_allocations"
		"       WHERE live AND node_id = ANY($1::bigint[])"
		"       UNION ALL SELECT x.run_id, x.node_id, x.node_rank, x.gpu_index, x.live"
		"       FROM runs sr JOIN run_allocations x ON x.run_id = sr.id"
		"       WHERE sr.live AND sr.shrunk_at IS NOT NULL AND NOT x.live"
		"         AND x.node_id = ANY($1::bigint[])) a"
		" JOIN runs r ON r.id = a.run_id JOIN jobs j ON j.id = r.job_id"
		" JOIN tenants t ON t.id = j.tenant_id"
		" WHERE r.live AND r.ended_at IS NULL"
		"   AND NOT EXISTS (SELECT 1 FROM run_node_status s WHERE s.run_id = r.id AND s.node_id = a.node_id"
		"                   AND s.phase <> 'RUNNING')"
		" GROUP BY a.node_id, r.id, j.id, t.name, t.path ORDER BY a.node_id, r.id";
	struct mu_buf ids = MU_BUF_INIT;
	PGresult *res = NULL, *nres = NULL;
	const char *params[1];
	int ret, rows;

	*runs = NULL;
	*nodes = NULL;
	*nruns = *nnodes = 0;
	mu_buf_addc(&ids, '{');
	for (size_t i = 0; i < n; i++)
		add_i64(&ids, node_ids[i]);
	mu_buf_addc(&ids, '}');
	params[0] = ids.p;
	ret = store_db_exec(c, runs_sql, 1, params, &res, err);
	if (ret == 0)
		ret = store_db_exec(c, "SELECT id, drain, drain_reason FROM nodes WHERE id = ANY($1::bigint[])", 1,
				    params, &nres, err);
	if (ret < 0)
		goto out;
	rows = store_db_nrows(res);
	*runs = mu_arena_alloc(a, sizeof(**runs) * (size_t)(rows + 1));
	for (int i = 0; i < rows; i++) {
		struct store_desired_run *r = &(*runs)[i];

		r->node_id = store_db_get_int64(res, i, 0);
		r->run_id = store_db_get_int64(res, i, 1);
		r->job_id = store_db_get_int64(res, i, 2);
		r->attempt = (int32_t)store_db_get_int64(res, i, 3);
		r->job_name = mu_arena_strdup(a, store_db_get(res, i, 4));
		r->tenant = mu_arena_strdup(a, store_db_get(res, i, 5));
		r->user = mu_arena_strdup(a, store_db_get(res, i, 6));
		r->command_json = mu_arena_strdup(a, store_db_get(res, i, 7));
		r->env_json = mu_arena_strdup(a, store_db_get(res, i, 8));
		r->workdir = mu_arena_strdup(a, store_db_get(res, i, 9));
		r->procs_per_node = (int32_t)store_db_get_int64(res, i, 10);
		r->node_rank = (int32_t)store_db_get_int64(res, i, 11);
		gpu_list(a, r, store_db_get(res, i, 12));
		r->master_addr = mu_arena_strdup(a, store_db_get(res, i, 13));
		r->master_port = (int32_t)store_db_get_int64(res, i, 14);
		r->time_limit = store_db_get_int64(res, i, 15);
		r->stop = store_db_get_bool(res, i, 16);
		r->stop_reason = mu_arena_strdup(a, store_db_get(res, i, 17));
		r->grace_period = (int32_t)store_db_get_int64(res, i, 18);
		r->gpus_per_node = (int32_t)store_db_get_int64(res, i, 19);
		r->gang_json = mu_arena_strdup(a, store_db_get(res, i, 20));
		r->mem_per_node = store_db_get_int64(res, i, 21);
		r->cpus_per_node = (int32_t)store_db_get_int64(res, i, 22);
		r->unix_account = mu_arena_strdup(a, store_db_get(res, i, 23));
		desired_launch(a, res, i, r);
		r->stdout_pattern = mu_arena_strdup(a, store_db_get(res, i, 31));
		r->stderr_pattern = mu_arena_strdup(a, store_db_get(res, i, 32));
		r->array_job_id = store_db_get_int64(res, i, 33);
		r->array_task_id = store_db_get_int64(res, i, 34);
		r->array_spec = mu_arena_strdup(a, store_db_get(res, i, 35));
	}
	*nruns = (size_t)rows;
	rows = store_db_nrows(nres);
	*nodes = mu_arena_alloc(a, sizeof(**nodes) * (size_t)(rows + 1));
	for (int i = 0; i < rows; i++) {
		(*nodes)[i].node_id = store_db_get_int64(nres, i, 0);
		(*nodes)[i].drain = store_db_get_bool(nres, i, 1);
		(*nodes)[i].drain_reason = mu_arena_strdup(a, store_db_get(nres, i, 2));
	}
	*nnodes = (size_t)rows;
out:
	store_db_clear(res);
	store_db_clear(nres);
	mu_buf_release(&ids);
	return ret;
}

int store_agent_cp_tick(PGconn *c, const char *replica, struct mu_error *err)
{
	static const char sql[] =
		"WITH r AS (INSERT INTO api_replicas (id, heard_at) VALUES ($2, now())"
		"           ON CONFLICT (id) DO UPDATE SET heard_at = now())"
		" INSERT INTO control_plane AS p (id, heard_at, heard_since) VALUES (1, now(), now())"
		" ON CONFLICT (id) DO UPDATE SET heard_at = now(),"
		"   heard_since = CASE WHEN p.heard_at < now() - make_interval(secs => $1::int) THEN now()"
		"                 ELSE p.heard_since END";
	char gap[16];
	const char *p[2] = { gap, replica };

	snprintf(gap, sizeof(gap), "%d", STORE_AGENT_CP_GAP_S);
	return store_db_exec(c, sql, 2, p, NULL, err);
}

int store_agent_stream_claim(PGconn *c, const char *name, const char *replica, int hb_timeout_s,
			     bool *ok, bool *fresh, struct mu_error *err)
{
	/* one statement: the check and the claim cannot interleave with
	 * another replica's (the UPDATE locks the row; the second one then
	 * sees the first's owner) */
	static const char sql[] =
		"WITH u AS (UPDATE nodes n SET stream_replica = $2 WHERE n.name = $1"
		"   AND (n.stream_replica IS NULL OR n.stream_replica = $2"
		"        OR n.last_heartbeat IS NULL"
		"        OR n.last_heartbeat < now() - make_interval(secs => $3::int)"
		"        OR NOT EXISTS (SELECT 1 FROM api_replicas r WHERE r.id = n.stream_replica"
		"                       AND r.heard_at > now() - make_interval(secs => $4::int)))"
		"   RETURNING 1)"
		" SELECT EXISTS (SELECT 1 FROM u), NOT EXISTS (SELECT 1 FROM nodes WHERE name = $1)";
	char hb[16], live[16];
	const char *p[4] = { name, replica, hb, live };
	PGresult *r = NULL;
	int ret;

	snprintf(hb, sizeof(hb), "%d", hb_timeout_s);
	snprintf(live, sizeof(live), "%d", STORE_AGENT_REPLICA_LIVE_S);
	ret = store_db_exec(c, sql, 4, p, &r, err);
	if (ret == 0) {
		*fresh = store_db_get_bool(r, 0, 1);
		*ok = store_db_get_bool(r, 0, 0) || *fresh;
	}
	store_db_clear(r);
	return ret;
}

int store_agent_stream_release(PGconn *c, const char *replica, const char *const *names, size_t n,
			       struct mu_error *err)
{
	static const char sql[] = "UPDATE nodes SET stream_replica = NULL"
				  " WHERE name = ANY($1::text[]) AND stream_replica = $2";
	struct mu_buf v = MU_BUF_INIT;
	const char *p[2];
	int ret;

	if (!n)
		return 0;
	store__text_array(&v, names, n);
	p[0] = v.p;
	p[1] = replica;
	ret = store_db_exec(c, sql, 2, p, NULL, err);
	mu_buf_release(&v);
	return ret;
}

int store_agent_replica_gone(PGconn *c, const char *replica, struct mu_error *err)
{
	static const char sql[] =
		"WITH n AS (UPDATE nodes SET stream_replica = NULL WHERE stream_replica = $1)"
		" DELETE FROM api_replicas WHERE id = $1";
	const char *p[1] = { replica };

	return store_db_exec(c, sql, 1, p, NULL, err);
}

int store_agent_dead_tokens(PGconn *c, const int64_t *token_ids, size_t n, int64_t **dead,
			    size_t *ndead, struct mu_error *err)
{
	struct mu_buf ids = MU_BUF_INIT;
	PGresult *res = NULL;
	const char *p[1];
	int ret, rows;

	*dead = NULL;
	*ndead = 0;
	if (!n)
		return 0;
	mu_buf_addc(&ids, '{');
	for (size_t i = 0; i < n; i++)
		add_i64(&ids, token_ids[i]);
	mu_buf_addc(&ids, '}');
	p[0] = ids.p;
	ret = store_db_exec(c,
			    "SELECT u.id FROM unnest($1::bigint[]) AS u(id) WHERE NOT EXISTS"
			    " (SELECT 1 FROM api_tokens k WHERE k.id = u.id AND k.revoked_at IS NULL"
			    "  AND (k.expires_at IS NULL OR k.expires_at > now()))",
			    1, p, &res, err);
	if (ret < 0)
		goto out;
	rows = store_db_nrows(res);
	*dead = mu_calloc((size_t)rows + 1, sizeof(**dead));
	for (int i = 0; i < rows; i++)
		(*dead)[i] = store_db_get_int64(res, i, 0);
	*ndead = (size_t)rows;
out:
	store_db_clear(res);
	mu_buf_release(&ids);
	return ret;
}
