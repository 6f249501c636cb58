#include "log.h"

#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static enum mu_log_level threshold = MU_LOG_INFO;
static const char *progname = "muster";
static const char *const names[] = { "debug", "info", "warn", "error" };

int mu_log_set_level_name(const char *name)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(name, names[i]) == 0) {
			threshold = (enum mu_log_level)i;
			return 0;
		}
	}
	return MU_EINVAL;
}

void mu_log_set_level(enum mu_log_level level)
{
	threshold = level;
}

void mu_log_set_prog(const char *prog)
{
	progname = prog;
}

void mu_log(enum mu_log_level level, const char *fmt, ...)
{
	char line[2048];
	struct timeval tv;
	struct tm tm;
	size_t n;
	va_list ap;

	if (level < threshold)
		return;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03dZ %s[%d] %s: ", (int)(tv.tv_usec / 1000),
			      progname, (int)getpid(), names[level]);
	va_start(ap, fmt);
	if (n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	n = strlen(line);
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line keeps lines whole across threads and processes. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
