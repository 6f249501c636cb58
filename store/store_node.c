#include "store_node.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "store_tenant.h"

#define NODE_SELECT                                                                          \
	"SELECT n.id, n.name, n.address, n.topology, n.gpu_model, n.gpu_count, "             \
	" CASE WHEN NOT n.up THEN 'DOWN' "                                                   \
	"      WHEN n.drain AND a.cnt > 0 THEN 'DRAINING' "                                  \
	"      WHEN n.drain THEN 'DRAINED' "                                                 \
	"      WHEN a.cnt = 0 THEN 'IDLE' "                                                  \
	"      WHEN a.gpus >= n.gpu_count THEN 'ALLOCATED' "                                 \
	"      ELSE 'MIXED' END, "                                                           \
	" n.drain_reason, n.labels::text, " STORE__TS("n.last_heartbeat") ", n.agent_version " \
	"FROM nodes n CROSS JOIN LATERAL ("                                                  \
	" SELECT count(*) AS cnt, "                                                          \
	"        count(DISTINCT ra.gpu_index) FILTER (WHERE ra.gpu_index >= 0) AS gpus "     \
	" FROM run_allocations ra WHERE ra.node_id = n.id AND ra.live) a "

static void node_row(struct mu_arena *a, const PGresult *r, int row, struct store_node *n)
{
	memset(n, 0, sizeof(*n));
	n->id = store_db_get_int64(r, row, 0);
	n->name = store__admin_str(a, r, row, 1);
	n->address = store__admin_str(a, r, row, 2);
	n->topology = store__admin_str(a, r, row, 3);
	n->gpu_model = store__admin_str(a, r, row, 4);
	n->gpu_count = store_db_get_int64(r, row, 5);
	n->state = store__admin_str(a, r, row, 6);
	n->drain_reason = store__admin_str(a, r, row, 7);
	n->labels_json = store__admin_str(a, r, row, 8);
	n->last_heartbeat = store__admin_str(a, r, row, 9);
	n->agent_version = store__admin_str(a, r, row, 10);
}

/* Fills the gpus of nodes[0..n) in one query. */
static int load_gpus(PGconn *c, struct mu_arena *a, struct store_node *nodes, size_t n,
		     struct mu_error *err)
{
	size_t cap = 3 + n * 21, len = 0;
	char *ids = mu_arena_alloc(a, cap);
	const char *params[1] = { ids };
	PGresult *r = NULL;
	size_t k = 0;
	int ret, rows;

	if (n == 0)
		return 0;
	ids[len++] = '{';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(ids + len, cap - len, "%s%" PRId64, i ? "," : "", nodes[i].id);
	ids[len++] = '}';
	ids[len] = '\0';
	ret = store_db_exec(c,
			    "SELECT g.node_id, g.idx, g.uuid, g.model, g.memory_mb, g.healthy, "
			    " g.health_reason, EXISTS (SELECT 1 FROM run_allocations ra "
			    "  WHERE ra.node_id = g.node_id AND ra.gpu_index = g.idx AND ra.live), "
			    " g.utilization, g.temperature, g.memory_used_mb "
			    "FROM gpus g WHERE g.node_id = ANY ($1::bigint[]) ORDER BY g.node_id, g.idx",
			    1, params, &r, err);
	if (ret < 0)
		return ret;
	rows = store_db_nrows(r);
	/* Both sides are in node id order only if the nodes are; match by id. */
	for (size_t i = 0; i < n; i++) {
		size_t cnt = 0, first = 0;
		bool found = false;
		for (int j = 0; j < rows; j++)
			if (store_db_get_int64(r, j, 0) == nodes[i].id) {
				if (!found)
					first = (size_t)j;
				found = true;
				cnt++;
			}
		nodes[i].gpus = mu_arena_alloc(a, sizeof(struct store_gpu) * (cnt ? cnt : 1));
		nodes[i].n_gpus = cnt;
		for (k = 0; k < cnt; k++) {
			struct store_gpu *g = &nodes[i].gpus[k];
			int j = (int)(first + k);
			g->index = store_db_get_int64(r, j, 1);
			g->uuid = store__admin_str(a, r, j, 2);
			g->model = store__admin_str(a, r, j, 3);
			g->memory_mb = store_db_get_int64(r, j, 4);
			g->healthy = store_db_get_bool(r, j, 5);
			g->health_reason = store__admin_str(a, r, j, 6);
			g->allocated = store_db_get_bool(r, j, 7);
			g->utilization = store_db_get_int64(r, j, 8);
			g->temperature = store_db_get_int64(r, j, 9);
			g->memory_used_mb = store_db_get_int64(r, j, 10);
		}
	}
	store_db_clear(r);
	return 0;
}

int store_node_get(PGconn *c, struct mu_arena *a, const char *name, struct store_node *out,
		   struct mu_error *err)
{
	const char *params[1] = { name };
	PGresult *r = NULL;
	int ret;

	ret = store_db_exec(c, NODE_SELECT "WHERE n.name = $1", 1, params, &r, err);
	if (ret < 0)
		return ret;
	if (store_db_nrows(r) != 1) {
		store_db_clear(r);
		return mu_error_set(err, MU_ENOTFOUND, "", "no node \"%.64s\"", name);
	}
	node_row(a, r, 0, out);
	store_db_clear(r);
	return load_gpus(c, a, out, 1, err);
}

int store_node_list(PGconn *c, struct mu_arena *a, const char *cursor, int limit,
		    struct store_node_page *out, struct mu_error *err)
{
	char lb[24];
	const char *params[2] = { cursor, store__admin_fmt(lb, limit + 1) };
	PGresult *r = NULL;
	int ret, n;

	memset(out, 0, sizeof(*out));
	ret = store_db_exec(c,
			    NODE_SELECT "WHERE $1::text IS NULL OR n.name > $1 ORDER BY n.name LIMIT $2::int",
			    2, params, &r, err);
	if (ret < 0)
		return ret;
	n = store_db_nrows(r);
	if (n > limit) {
		n = limit;
		out->next_cursor = store__admin_str(a, r, limit - 1, 1);
	}
	out->items = mu_arena_alloc(a, sizeof(*out->items) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		node_row(a, r, i, &out->items[i]);
	out->n = (size_t)n;
	store_db_clear(r);
	return load_gpus(c, a, out->items, out->n, err);
}

static int notify_node(PGconn *c, const char *name, struct mu_error *err)
{
	const char *params[1] = { name };
	return store_db_exec(c, "SELECT pg_notify('muster_sched', 'node:' || $1)", 1, params, NULL,
			     err);
}

struct node_drain {
	const char *name;
	bool drain;
	const char *reason;
};

static int node_drain_tx(PGconn *c, void *arg, struct mu_error *err)
{
	struct node_drain *nd = arg;
	const char *params[3] = { nd->name, nd->drain ? "true" : "false", nd->reason ? nd->reason : "" };
	PGresult *r = NULL;
	int64_t id;
	int ret;

	ret = store_db_exec(c,
			    "UPDATE nodes SET drain = $2::bool, drain_reason = $3, updated_at = now(), "
			    " fabric_fault = CASE WHEN $2::bool THEN fabric_fault ELSE '' END "
			    "WHERE name = $1 RETURNING id",
			    3, params, &r, err);
	if (ret < 0)
		return ret;
	if (store_db_nrows(r) != 1) {
		store_db_clear(r);
		return mu_error_set(err, MU_ENOTFOUND, "", "no node \"%.64s\"", nd->name);
	}
	id = store_db_get_int64(r, 0, 0);
	store_db_clear(r);
	{
		const char *kv[] = { "name", nd->name };
		ret = store__admin_event(c, nd->drain ? "node.drain" : "node.resume", 0, id, params[2],
					 kv, 1, err);
	}
	if (ret < 0)
		return ret;
	return notify_node(c, nd->name, err);
}

int store_node_drain(PGconn *c, const char *name, bool drain, const char *reason,
		     struct mu_error *err)
{
	struct node_drain nd = { name, drain, drain ? reason : "" };
	return store_db_tx(c, NULL, 0, node_drain_tx, &nd, err);
}

struct node_register {
	const struct store_node_reg *reg;
	int64_t id;
};

static int node_register_tx(PGconn *c, void *arg, struct mu_error *err)
{
	struct node_register *nr = arg;
	const struct store_node_reg *g = nr->reg;
	char cb[24], ib[24], xb[24], mb[24];
	const char *params[7] = {
		g->name,
		g->address ? g->address : "",
		g->topology ? g->topology : "",
		g->gpu_model ? g->gpu_model : "",
		store__admin_fmt(cb, (int64_t)g->n_gpus),
		g->labels_json ? g->labels_json : "{}",
		g->agent_version ? g->agent_version : "",
	};
	PGresult *r = NULL;
	int ret;

	ret = store_db_exec(c,
			    "INSERT INTO nodes (name, address, topology, gpu_model, gpu_count, labels, "
			    " agent_version, up, last_heartbeat) "
			    "VALUES ($1, $2, $3, $4, $5::int, $6::jsonb, $7, true, now()) "
			    "ON CONFLICT (name) DO UPDATE SET address = EXCLUDED.address, "
			    " topology = EXCLUDED.topology, gpu_model = EXCLUDED.gpu_model, "
			    " gpu_count = EXCLUDED.gpu_count, labels = EXCLUDED.labels, "
			    " agent_version = EXCLUDED.agent_version, up = true, "
			    " last_heartbeat = now(), updated_at = now() "
			    "RETURNING id",
			    7, params, &r, err);
	if (ret < 0)
		return ret;
	nr->id = store_db_get_int64(r, 0, 0);
	store_db_clear(r);
	for (size_t i = 0; i < g->n_gpus; i++) {
		const struct store_gpu_reg *u = &g->gpus[i];
		const char *gp[7] = {
			store__admin_fmt(ib, nr->id),
			store__admin_fmt(xb, u->index),
			u->uuid ? u->uuid : "",
			u->model ? u->model : "",
			store__admin_fmt(mb, u->memory_mb),
			u->healthy ? "true" : "false",
			u->health_reason ? u->health_reason : "",
		};
		ret = store_db_exec(c,
				    "INSERT INTO gpus (node_id, idx, uuid, model, memory_mb, healthy, "
				    " health_reason) VALUES ($1::bigint, $2::int, $3, $4, $5::bigint, "
				    " $6::bool, $7) "
				    "ON CONFLICT (node_id, idx) DO UPDATE SET uuid = EXCLUDED.uuid, "
				    " model = EXCLUDED.model, memory_mb = EXCLUDED.memory_mb, "
				    " healthy = EXCLUDED.healthy, health_reason = EXCLUDED.health_reason, "
				    " updated_at = now()",
				    7, gp, NULL, err);
		if (ret < 0)
			return ret;
	}
	{
		/* GPUs the agent no longer reports go. */
		size_t cap = 3 + g->n_gpus * 21, len = 0;
		char *idx = mu_malloc(cap);
		const char *dp[2] = { store__admin_fmt(ib, nr->id), idx };
		idx[len++] = '{';
		for (size_t i = 0; i < g->n_gpus; i++)
			len += (size_t)snprintf(idx + len, cap - len, "%s%" PRId64, i ? "," : "",
						g->gpus[i].index);
		idx[len++] = '}';
		idx[len] = '\0';
		ret = store_db_exec(c,
				    "DELETE FROM gpus WHERE node_id = $1::bigint AND NOT (idx = ANY ($2::int[]))",
				    2, dp, NULL, err);
		mu_free(idx);
		if (ret < 0)
			return ret;
	}
	{
		const char *kv[] = { "name", g->name, "address", params[1], "gpu_count#", params[4] };
		ret = store__admin_event(c, "node.registered", 0, nr->id, "", kv, 3, err);
	}
	if (ret < 0)
		return ret;
	return notify_node(c, g->name, err);
}

int store_node_register(PGconn *c, const struct store_node_reg *reg, int64_t *node_id,
			struct mu_error *err)
{
	struct node_register nr = { .reg = reg };
	int ret = store_db_tx(c, NULL, 0, node_register_tx, &nr, err);
	if (ret == 0 && node_id)
		*node_id = nr.id;
	return ret;
}
