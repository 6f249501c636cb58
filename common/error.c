#include "error.h"

#include <stdio.h>
#include <string.h>

struct errinfo {
	int code;
	int http;
	int grpc;
	const char *slug;
	const char *title;
};

static const struct errinfo errtab[] = {
#define MU__ERR_ROW(name, code, http, grpc, slug, title) { code, http, grpc, slug, title },
	MU_ERRORS(MU__ERR_ROW)
#undef MU__ERR_ROW
};

static const struct errinfo *lookup(int code)
{
	for (size_t i = 0; i < sizeof(errtab) / sizeof(errtab[0]); i++)
		if (errtab[i].code == code)
			return &errtab[i];
	return NULL;
}

int mu_error_vset(struct mu_error *err, int code, const char *field, const char *fmt, va_list ap)
{
	if (!err)
		return code;
	err->code = code;
	snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return code;
}

int mu_error_set(struct mu_error *err, int code, const char *field, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mu_error_vset(err, code, field, fmt, ap);
	va_end(ap);
	return code;
}

void mu_error_clear(struct mu_error *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}

const char *mu_strerror(int code)
{
	const struct errinfo *e = lookup(code);
	return e ? e->title : "Unknown error";
}

const char *mu_err_slug(int code)
{
	const struct errinfo *e = lookup(code);
	return e ? e->slug : "internal";
}

int mu_err_http_status(int code)
{
	const struct errinfo *e = lookup(code);
	return e ? e->http : 500;
}

int mu_err_grpc_status(int code)
{
	const struct errinfo *e = lookup(code);
	return e ? e->grpc : 2;
}
