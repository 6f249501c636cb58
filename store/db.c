/* db.c - see db.h. */
#include "db.h"

#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "log.h"

PGconn *store_db_connect(const char *url, const char *application_name, struct mu_error *err)
{
	/* Keywords are processed in order and the last one wins, so the
	 * expanded URL ("dbname") comes last: whatever it says overrides
	 * these defaults. */
	const char *keys[] = { "application_name", "client_encoding", "connect_timeout",
			       "keepalives", "keepalives_idle", "keepalives_interval",
			       "keepalives_count", "tcp_user_timeout", "dbname", NULL };
	const char *vals[] = { application_name ? application_name : "muster", "UTF8", "10",
			       "1", "30", "10", "3", "60000", url && *url ? url : NULL, NULL };
	PGconn *c = PQconnectdbParams(keys, vals, 1);

	if (PQstatus(c) != CONNECTION_OK) {
		const char *m = PQerrorMessage(c);
		size_t n = strlen(m);
		while (n && (m[n - 1] == '\n' || m[n - 1] == ' '))
			n--;
		mu_error_set(err, MU_EUNAVAIL, "", "database connection failed: %.*s", (int)n, m);
		PQfinish(c);
		return NULL;
	}
	return c;
}

void store_db_close(PGconn *c)
{
	if (c)
		PQfinish(c);
}

bool store_db_ok(const PGconn *c)
{
	return c && PQstatus(c) == CONNECTION_OK;
}

bool store_db_sqlstate_retryable(const char *s)
{
	return s && (!strcmp(s, "40001") || !strcmp(s, "40P01"));
}

int store_db_sqlstate_code(const char *s)
{
	if (!s || strlen(s) != 5)
		return MU_EUNAVAIL;
	if (!strcmp(s, "23505"))
		return MU_ECONFLICT;
	if (!strcmp(s, "23503"))
		return MU_ENOTFOUND;
	if (!strcmp(s, "22001"))
		return MU_ETOOLONG;
	if (!strcmp(s, "22003") || !strcmp(s, "22008"))
		return MU_ERANGE;
	if (!strcmp(s, "22021"))
		return MU_EUTF8;
	if (!strncmp(s, "23", 2) || !strncmp(s, "22", 2) || !strcmp(s, "P0001"))
		return MU_EINVAL;
	if (!strncmp(s, "40", 2) || !strncmp(s, "08", 2) || !strncmp(s, "53", 2) ||
	    !strncmp(s, "57P0", 4) || !strcmp(s, "55P03") || !strcmp(s, "57014"))
		return MU_EUNAVAIL;
	return MU_EINTERNAL;
}

int store_db_check(PGconn *c, const PGresult *res, struct mu_error *err)
{
	const char *state, *msg, *constraint;
	int code;

	if (!res) {
		const char *m = c ? PQerrorMessage(c) : "no connection";
		size_t n = strlen(m);
		while (n && m[n - 1] == '\n')
			n--;
		return mu_error_set(err, MU_EUNAVAIL, "", "database: %.*s", (int)n, m);
	}
	switch (PQresultStatus(res)) {
	case PGRES_COMMAND_OK:
	case PGRES_TUPLES_OK:
	case PGRES_SINGLE_TUPLE:
	case PGRES_COPY_IN:
	case PGRES_COPY_OUT:
	case PGRES_COPY_BOTH:
	case PGRES_EMPTY_QUERY:
		return 0;
	default:
		break;
	}
	state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	constraint = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);
	code = store_db_sqlstate_code(state);
	/* A delete (or key update) of a row still referenced is a conflict,
	 * not a missing row. The dev database and the server run with English
	 * messages (lc_messages C); SQLSTATE alone cannot tell the two apart. */
	if (state && !strcmp(state, "23503") && msg && !strncmp(msg, "update or delete on", 19))
		code = MU_ECONFLICT;
	if (!state && c && PQstatus(c) != CONNECTION_OK)
		code = MU_EUNAVAIL;
	if (!msg) {
		msg = PQresultErrorMessage(res);
		if (!*msg && c)
			msg = PQerrorMessage(c);
	}
	mu_error_set(err, code, constraint ? constraint : "", "%s%s%s", msg,
		     state ? " (SQLSTATE " : "", state ? state : "");
	if (err && state) {
		size_t n = strlen(err->msg);
		if (n + 1 < sizeof(err->msg)) {
			err->msg[n] = ')';
			err->msg[n + 1] = '\0';
		}
	}
	return code;
}

int store_db_exec(PGconn *c, const char *sql, int nparams, const char *const *params,
		  PGresult **res, struct mu_error *err)
{
	PGresult *r = PQexecParams(c, sql, nparams, NULL, params, NULL, NULL, 0);
	int ret = store_db_check(c, r, err);

	if (ret || !res) {
		PQclear(r);
		r = NULL;
	}
	if (res)
		*res = r;
	return ret;
}

int store_db_exec_simple(PGconn *c, const char *sql, struct mu_error *err)
{
	PGresult *r = PQexec(c, sql);
	int ret = store_db_check(c, r, err);

	PQclear(r);
	return ret;
}

void store_db_clear(PGresult *res)
{
	if (res)
		PQclear(res);
}

int store_db_nrows(const PGresult *res)
{
	return res ? PQntuples(res) : 0;
}

bool store_db_is_null(const PGresult *res, int row, int col)
{
	return !res || row >= PQntuples(res) || col >= PQnfields(res) || PQgetisnull(res, row, col);
}

const char *store_db_get(const PGresult *res, int row, int col)
{
	if (store_db_is_null(res, row, col))
		return "";
	return PQgetvalue(res, row, col);
}

int64_t store_db_get_int64(const PGresult *res, int row, int col)
{
	return strtoll(store_db_get(res, row, col), NULL, 10);
}

bool store_db_get_bool(const PGresult *res, int row, int col)
{
	return store_db_get(res, row, col)[0] == 't';
}

int store_db_query_text(PGconn *c, const char *sql, int nparams, const char *const *params,
			char *out, size_t outsz, struct mu_error *err)
{
	PGresult *r = NULL;
	int ret;

	if (outsz)
		out[0] = '\0';
	ret = store_db_exec(c, sql, nparams, params, &r, err);
	if (ret)
		goto out;
	if (PQntuples(r) < 1 || PQnfields(r) < 1) {
		ret = mu_error_set(err, MU_ENOTFOUND, "", "query returned no row");
		goto out;
	}
	if (outsz) {
		const char *v = store_db_get(r, 0, 0);
		size_t n = strlen(v);
		if (n >= outsz)
			n = outsz - 1;
		memcpy(out, v, n);
		out[n] = '\0';
	}
out:
	store_db_clear(r);
	return ret;
}

int store_db_query_int64(PGconn *c, const char *sql, int nparams, const char *const *params,
			 int64_t *out, struct mu_error *err)
{
	char buf[32];
	int ret = store_db_query_text(c, sql, nparams, params, buf, sizeof(buf), err);

	*out = ret ? 0 : strtoll(buf, NULL, 10);
	return ret;
}

static void backoff(int attempt)
{
	/* 2, 4, 8, ... ms plus jitter, so two retrying writers drift apart. */
	long ms = (2L << (attempt < 8 ? attempt : 8)) + rand() % 5;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* COMMIT of a transaction that already failed answers "ROLLBACK" without
 * an error: treat that as the failure it is. */
static int commit(PGconn *c, struct mu_error *err)
{
	PGresult *r = PQexec(c, "COMMIT");
	int ret = store_db_check(c, r, err);

	if (!ret && strcmp(PQcmdStatus(r), "COMMIT") != 0)
		ret = mu_error_set(err, MU_EINTERNAL, "", "transaction was rolled back at COMMIT");
	PQclear(r);
	return ret;
}

int store_db_tx(PGconn *c, const char *begin_sql, int attempts, store_db_tx_fn fn, void *arg,
		struct mu_error *err)
{
	int ret = 0;

	if (attempts <= 0)
		attempts = 5;
	for (int i = 0; i < attempts; i++) {
		ret = store_db_exec_simple(c, begin_sql ? begin_sql : "BEGIN", err);
		if (ret)
			break;
		ret = fn(c, arg, err);
		if (!ret)
			ret = commit(c, err);
		else
			store_db_rollback(c);
		if (ret != MU_EUNAVAIL || !store_db_ok(c))
			break;
		/* COMMIT of a failed transaction reports success as ROLLBACK
		 * in libpq; a serialization failure at COMMIT comes here. */
		store_db_rollback(c);
		if (i + 1 < attempts) {
			mu_debug("db tx retry %d: %s", i + 1, err ? err->msg : "");
			backoff(i);
		}
	}
	return ret;
}

void store_db_rollback(PGconn *c)
{
	if (store_db_ok(c) && PQtransactionStatus(c) != PQTRANS_IDLE)
		PQclear(PQexec(c, "ROLLBACK"));
}

char *store_db_quote_ident(const char *s)
{
	size_t n = strlen(s), j = 0;
	char *q = mu_malloc(2 * n + 3);

	q[j++] = '"';
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"')
			q[j++] = '"';
		q[j++] = s[i];
	}
	q[j++] = '"';
	q[j] = '\0';
	return q;
}
