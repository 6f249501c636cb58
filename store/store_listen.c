/* store_listen.c - LISTEN/NOTIFY helpers; see store_listen.h. */
#include "store_listen.h"

#include <libpq-fe.h>
#include <stdio.h>

int store_listen(PGconn *c, const char *const *channels, size_t n, struct mu_error *err)
{
	int ret = 0;

	for (size_t i = 0; i < n && ret == 0; i++) {
		char sql[128];

		snprintf(sql, sizeof(sql), "LISTEN %s", channels[i]);
		ret = store_db_exec_simple(c, sql, err);
	}
	return ret;
}

int store_listen_fd(const PGconn *c)
{
	return c && PQstatus(c) == CONNECTION_OK ? PQsocket(c) : -1;
}

int store_listen_drain(PGconn *c, void (*fn)(void *arg, const char *channel, const char *payload),
		       void *arg)
{
	PGnotify *nt;

	if (!PQconsumeInput(c))
		return MU_EUNAVAIL;
	while ((nt = PQnotifies(c))) {
		if (fn)
			fn(arg, nt->relname, nt->extra ? nt->extra : "");
		PQfreemem(nt);
	}
	return PQstatus(c) == CONNECTION_OK ? 0 : MU_EUNAVAIL;
}
