/*
 * rest_history.c - GET /v1/history: the jobs that ended in a time window
 * (sacct's question), oldest first, with the caller's tenant scope. The
 * cursor is "<ended_at in microseconds>.<id>" (store_job_history's keyset).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "codec_admin.h"
#include "codec_job.h"
#include "rest_server.h"
#include "slurmtime.h"
#include "store_job.h"

#define MAX_IDS 1000

struct history_arg {
	struct store_job_history_filter f;
	struct store_job_history_page page;
};

static const char *const ended_states[] = { "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", NULL };

static int history_run(PGconn *db, struct rest_req *rq, void *arg)
{
	struct history_arg *ha = arg;
	struct mu_buf b = MU_BUF_INIT;
	int ret;

	ret = store_job_history(db, rq->arena, rest_scope_path(rq), &ha->f, &ha->page, &rq->err);
	if (ret < 0)
		return ret;
	mu_buf_reserve(&b, ha->page.n * 800 + 64);
	mu_buf_adds(&b, "{\"items\":[");
	for (size_t i = 0; i < ha->page.n; i++) {
		if (i)
			mu_buf_addc(&b, ',');
		codec_job_encode(&ha->page.items[i], &b);
	}
	mu_buf_adds(&b, "],\"next_cursor\":");
	if (ha->page.more)
		mu_buf_addf(&b, "\"%lld.%lld\"", (long long)ha->page.next_us,
			    (long long)ha->page.next_id);
	else
		mu_buf_adds(&b, "null");
	mu_buf_addc(&b, '}');
	rest_result_buf(rq, 200, "application/json", &b);
	return 0;
}

/* An RFC 3339 bound into microseconds. */
static int time_param(struct rest_req *rq, const char *name, int64_t *us)
{
	const char *s = rest_query(rq, name);
	int64_t t;

	if (!s)
		return 0;
	if (mu_slurmtime_parse_rfc3339(s, &t) != 0)
		return mu_error_set(&rq->err, MU_EINVAL, name,
				    "must be an RFC 3339 time with a zone (2027-01-31T08:00:00Z)");
	if (t < 0 || t > 253402300799LL)
		return mu_error_set(&rq->err, MU_ERANGE, name, "must be between 1970 and 9999");
	*us = t * 1000000;
	return 0;
}

int rest_history_list(struct rest_req *rq)
{
	static const char *const allowed[] = { "start", "end", "state", "tenant", "user", "job",
					       "limit", "cursor", NULL };
	struct history_arg *ha = mu_arena_alloc(rq->arena, sizeof(*ha));
	const char **vals;
	const char *s;
	size_t nv;
	int64_t v;
	int ret;

	if ((ret = rest_query_check(rq, allowed)) < 0)
		return ret;
	if ((ret = codec_limit_decode(rest_query(rq, "limit"), &ha->f.limit, &rq->err)) < 0)
		return ret;
	if ((s = rest_query(rq, "cursor")) && *s) {
		const char *dot = strchr(s, '.');
		char us[24];

		if (!dot || (size_t)(dot - s) >= sizeof(us))
			return mu_error_set(&rq->err, MU_EINVAL, "cursor", "not a cursor from this API");
		memcpy(us, s, (size_t)(dot - s));
		us[dot - s] = '\0';
		if (!rest_parse_int(us, 0, INT64_MAX, &ha->f.after_us) ||
		    !rest_parse_int(dot + 1, 0, INT64_MAX, &ha->f.after_id))
			return mu_error_set(&rq->err, MU_EINVAL, "cursor", "not a cursor from this API");
	}
	if ((ret = time_param(rq, "start", &ha->f.start_us)) < 0)
		return ret;
	if ((ret = time_param(rq, "end", &ha->f.end_us)) < 0)
		return ret;
	if (ha->f.end_us && ha->f.end_us <= ha->f.start_us)
		return mu_error_set(&rq->err, MU_EINVAL, "end", "must be after start");
	nv = rest_query_all(rq, "state", &vals);
	if (nv) {
		const char **st = mu_arena_alloc(rq->arena, sizeof(*st) * 64);
		size_t n = 0;

		for (size_t i = 0; i < nv; i++) {
			for (const char *tok = vals[i]; tok;) {
				const char *comma = strchr(tok, ',');
				size_t len = comma ? (size_t)(comma - tok) : strlen(tok);
				const char *const *k = ended_states;

				while (*k && (strlen(*k) != len || strncmp(*k, tok, len)))
					k++;
				if (!*k)
					return mu_error_set(&rq->err, MU_EINVAL, "state",
							    "not an end state: %.*s (COMPLETED, FAILED, "
							    "CANCELLED, TIMEOUT)",
							    (int)(len > 32 ? 32 : len), tok);
				if (n < 64)
					st[n++] = *k;
				tok = comma ? comma + 1 : NULL;
			}
		}
		ha->f.states = st;
		ha->f.nstates = n;
	}
	nv = rest_query_all(rq, "job", &vals);
	if (nv) {
		int64_t *ids = mu_arena_alloc(rq->arena, sizeof(*ids) * MAX_IDS);
		size_t n = 0;

		for (size_t i = 0; i < nv; i++) {
			char *copy = mu_arena_strdup(rq->arena, vals[i]);
			for (char *tok = copy; tok;) {
				char *comma = strchr(tok, ',');
				if (comma)
					*comma = '\0';
				if (!rest_parse_int(tok, 1, INT64_MAX, &v))
					return mu_error_set(&rq->err, MU_EINVAL, "job",
							    "must be job ids (12 or 12,13)");
				if (n == MAX_IDS)
					return mu_error_set(&rq->err, MU_ERANGE, "job",
							    "at most %d job ids", MAX_IDS);
				ids[n++] = v;
				tok = comma ? comma + 1 : NULL;
			}
		}
		ha->f.ids = ids;
		ha->f.nids = n;
	}
	ha->f.tenant = rest_query(rq, "tenant");
	ha->f.user = rest_query(rq, "user");
	return rest_defer(rq, history_run, NULL, ha);
}
