/*
 * muster-devdb - the embedded dev database from the command line.
 *
 *   muster-devdb start   --dir D   create when needed, start, print the URL
 *   muster-devdb stop    --dir D
 *   muster-devdb url     --dir D   print the URL (running or not)
 *   muster-devdb status  --dir D   exit 0 running, 3 stopped, 4 no cluster
 *   muster-devdb migrate --dir D | --db URL
 *
 * Only the URL goes to stdout, so `url=$(muster-devdb start --dir D)` works.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "devdb.h"
#include "error.h"
#include "log.h"
#include "migrate.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: muster-devdb COMMAND [--dir DIR] [--db URL]\n"
		"\n"
		"The embedded dev database: a private PostgreSQL cluster in DIR, on a Unix socket.\n"
		"\n"
		"commands:\n"
		"  start     create the cluster when DIR has none, start it, create database\n"
		"            'muster'; prints the connection URL (idempotent)\n"
		"  stop      stop the server (fast shutdown); not running is fine\n"
		"  url       print the connection URL\n"
		"  status    print running/stopped; exit 0 running, 3 stopped, 4 no cluster\n"
		"  migrate   apply pending schema migrations: to --db URL, else DIR's database\n"
		"            (without --dir, MUSTER_DATABASE_URL when set)\n"
		"\n"
		"options:\n"
		"  --dir DIR   state directory (env MUSTER_STATE_DIR, default .muster)\n"
		"  --db URL    database URL for migrate (env MUSTER_DATABASE_URL)\n"
		"  -h, --help  this text\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "db", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = getenv("MUSTER_STATE_DIR");
	const char *db = NULL, *cmd;
	bool dir_flag = false;
	char url[PATH_MAX + 128];
	struct mu_error err = { 0 };
	int opt, ret = 0;

	mu_log_set_prog("muster-devdb");
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			dir = optarg;
			dir_flag = true;
			break;
		case 'b':
			db = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	if (!dir || !*dir)
		dir = ".muster";

	if (!strcmp(cmd, "start")) {
		ret = store_devdb_start(dir, url, sizeof(url), &err);
		if (!ret)
			printf("%s\n", url);
	} else if (!strcmp(cmd, "stop")) {
		ret = store_devdb_stop(dir, &err);
	} else if (!strcmp(cmd, "url")) {
		ret = store_devdb_url(dir, url, sizeof(url), &err);
		if (!ret)
			printf("%s\n", url);
	} else if (!strcmp(cmd, "status")) {
		bool init, running;
		ret = store_devdb_status(dir, &init, &running, &err);
		if (!ret) {
			printf("%s\n", running ? "running" : init ? "stopped" : "no cluster");
			return running ? 0 : init ? 3 : 4;
		}
	} else if (!strcmp(cmd, "migrate")) {
		PGconn *c;
		int applied = 0;
		/* --db, then an explicit --dir, then MUSTER_DATABASE_URL, then
		 * the default dir */
		if (!db && !dir_flag)
			db = getenv("MUSTER_DATABASE_URL");
		if (!db || !*db) {
			ret = store_devdb_url(dir, url, sizeof(url), &err);
			db = url;
		}
		if (!ret) {
			c = store_db_connect(db, "muster-devdb", &err);
			ret = c ? store_migrate_n(c, &applied, &err) : MU_EUNAVAIL;
			store_db_close(c);
		}
		if (!ret)
			fprintf(stderr, "muster-devdb: %d migration(s) applied; schema at %03d\n", applied,
				store_migrations_latest());
	} else {
		fprintf(stderr, "muster-devdb: unknown command '%s'\n", cmd);
		usage(stderr);
		return 2;
	}
	if (ret) {
		fprintf(stderr, "muster-devdb %s: %s\n", cmd, err.msg);
		return 1;
	}
	return 0;
}
