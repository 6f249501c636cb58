/* store_job.c - the job row decoder every job read shares (store_job_int.h);
 * the roles: store_job_submit.c, store_job_list.c, store_job_life.c. */
#include "store_job.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "log.h"
#include "store_int.h"
#include "store_job_int.h"

void store__job_row(struct mu_arena *a, const PGresult *r, int row, int b, struct store_job *j)
{
	memset(j, 0, sizeof(*j));
	j->id = store_db_get_int64(r, row, b + 0);
	j->state = store__dup(a, r, row, b + 1);
	j->tenant = store__dup(a, r, row, b + 2);
	j->user = store__dup(a, r, row, b + 3);
	j->name = store__dup(a, r, row, b + 4);
	j->priority_class = store__dup(a, r, row, b + 5);
	j->nodes = store_db_get_int64(r, row, b + 6);
	j->min_nodes = store_db_get_int64(r, row, b + 7);
	j->gpus_per_node = store_db_get_int64(r, row, b + 8);
	j->gpu_model = store__dup(a, r, row, b + 9);
	j->procs_per_node = store_db_get_int64(r, row, b + 10);
	j->topo_required = store__dup(a, r, row, b + 11);
	j->topo_preferred = store__dup(a, r, row, b + 12);
	j->time_limit = store_db_get_int64(r, row, b + 13);
	j->command = store__dup(a, r, row, b + 14);
	j->env = store__dup(a, r, row, b + 15);
	j->labels = store__dup(a, r, row, b + 16);
	j->dependencies = store__dup(a, r, row, b + 17);
	j->workdir = store__dup(a, r, row, b + 18);
	j->max_retries = store_db_get_int64(r, row, b + 19);
	j->retries = store_db_get_int64(r, row, b + 20);
	j->pending_reason = store__dup(a, r, row, b + 21);
	j->pending_message = store__dup(a, r, row, b + 22);
	j->planned_start = store__dup_null(a, r, row, b + 23);
	j->has_exit_code = !store_db_is_null(r, row, b + 24);
	j->exit_code = store_db_get_int64(r, row, b + 24);
	j->end_reason = store__dup(a, r, row, b + 25);
	j->created_at = store__dup(a, r, row, b + 26);
	j->started_at = store__dup_null(a, r, row, b + 27);
	j->ended_at = store__dup_null(a, r, row, b + 28);
	j->tenant_path = store__dup(a, r, row, b + 29);
	j->mem_per_node = store_db_get_int64(r, row, b + 30);
	j->cpus_per_node = store_db_get_int64(r, row, b + 31);
	j->launcher = store__dup(a, r, row, b + 32);
	j->on_shrink = store__dup(a, r, row, b + 33);
	j->signal_name = store__dup(a, r, row, b + 34);
	j->signal_before = store_db_get_int64(r, row, b + 35);
	j->signal_batch_only = store_db_get_bool(r, row, b + 36);
	j->stdout_pattern = store__dup(a, r, row, b + 37);
	j->stderr_pattern = store__dup(a, r, row, b + 38);
	j->held = store_db_get_bool(r, row, b + 39);
	j->begin_at = store__dup_null(a, r, row, b + 40);
	j->etag = store_db_get_int64(r, row, b + 41);
	j->array_job_id = store_db_get_int64(r, row, b + 42);
	j->array_task_id = store_db_get_int64(r, row, b + 43);
	j->array_spec = store__dup_null(a, r, row, b + 44);
	j->array_throttle = store_db_get_int64(r, row, b + 45);
}
