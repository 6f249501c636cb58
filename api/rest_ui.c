/* rest_ui.c - the portal's static files; see rest_ui.h. */
#include "rest_ui.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "log.h"
#include "rest_server.h"

#define MAX_FILES 64
#define MAX_FILE_BYTES (8 << 20)

static const char csp[] =
	"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
	"form-action 'self'; frame-ancestors 'none'";

struct ui_file {
	char *name;
	const char *ctype;
	char *data;
	size_t len;
};

static struct ui_file files[MAX_FILES];
static size_t nfiles;
static char *ui_dir;

static const char *ctype_of(const char *name)
{
	static const struct { const char *ext, *ctype; } types[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },
		{ ".svg", "image/svg+xml" },
		{ ".png", "image/png" },
		{ ".json", "application/json" },
		{ ".txt", "text/plain; charset=utf-8" },
	};
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(dot, types[i].ext))
			return types[i].ctype;
	return NULL;
}

static bool read_file(const char *path, char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct mu_buf b = MU_BUF_INIT;
	char chunk[65536];
	size_t n;
	bool ok = true;

	if (!f)
		return false;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		mu_buf_add(&b, chunk, n);
		if (b.len > MAX_FILE_BYTES) {
			ok = false;
			break;
		}
	}
	if (ferror(f))
		ok = false;
	fclose(f);
	if (!ok) {
		mu_buf_release(&b);
		return false;
	}
	*len = b.len;
	*data = b.len ? mu_buf_detach(&b) : mu_strdup("");
	return true;
}

void rest_ui_load(const char *dir)
{
	DIR *d;
	struct dirent *de;

	ui_dir = mu_strdup(dir ? dir : "");
	if (!dir || !*dir || !(d = opendir(dir))) {
		mu_warn("ui: no portal files in '%s' (set MUSTER_UI_DIR): /ui/ answers 404",
			dir ? dir : "");
		return;
	}
	while ((de = readdir(d)) && nfiles < MAX_FILES) {
		char path[4096];
		struct stat sb;
		struct ui_file *f = &files[nfiles];

		if (de->d_name[0] == '.' || !ctype_of(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &sb) || !S_ISREG(sb.st_mode))
			continue;
		if (!read_file(path, &f->data, &f->len)) {
			mu_warn("ui: cannot read %s", path);
			continue;
		}
		f->name = mu_strdup(de->d_name);
		f->ctype = ctype_of(de->d_name);
		nfiles++;
	}
	closedir(d);
	mu_info("ui: %zu portal file(s) from %s", nfiles, dir);
}

bool rest_ui_path(const char *path)
{
	return !strcmp(path, "/ui") || !strncmp(path, "/ui/", 4);
}

/* A problem answer that still carries the headers (errors skip them). */
static int problem(struct rest_req *rq, int code)
{
	struct mu_buf b = MU_BUF_INIT;

	rest_problem_render(&rq->err, code, &b);
	rest_result_buf(rq, mu_err_http_status(code), "application/problem+json", &b);
	return 0;
}

int rest_ui_serve(struct rest_req *rq)
{
	const char *name = rq->path[3] == '/' && rq->path[4] ? rq->path + 4 : "index.html";

	rest_add_header(rq, "content-security-policy", csp);
	rest_add_header(rq, "x-content-type-options", "nosniff");
	rest_add_header(rq, "referrer-policy", "no-referrer");
	rest_add_header(rq, "x-frame-options", "DENY");
	rest_add_header(rq, "cache-control", "no-cache");
	if (strcmp(rq->method, "GET") && strcmp(rq->method, "HEAD")) {
		mu_error_set(&rq->err, MU_EMETHOD, "", "the portal's files are read-only");
		return problem(rq, MU_EMETHOD);
	}
	for (size_t i = 0; i < nfiles; i++) {
		if (!strcmp(files[i].name, name)) {
			rest_result_text(rq, 200, files[i].ctype, files[i].data, files[i].len);
			return 0;
		}
	}
	if (!nfiles)
		mu_error_set(&rq->err, MU_ENOTFOUND, "",
			     "the portal is not installed here (MUSTER_UI_DIR=%s)", ui_dir);
	else
		mu_error_set(&rq->err, MU_ENOTFOUND, "", "no such portal file");
	return problem(rq, MU_ENOTFOUND);
}
