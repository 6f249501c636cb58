#include "cli_conf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

static void replace(char **dst, const char *val)
{
	mu_free(*dst);
	*dst = mu_strdup(val);
}

int cli_conf_read_file(const char *path, int must_exist, struct cli_conf *conf,
		       struct mu_error *err)
{
	FILE *f = fopen(path, "r");
	char line[8192];
	int lineno = 0;
	int ret = 0;

	if (!f) {
		if (errno == ENOENT && !must_exist)
			return 0;
		return mu_error_set(err, MU_EIO, "", "cannot read config %s: %s", path,
				    strerror(errno));
	}
	while (fgets(line, sizeof(line), f)) {
		char *key, *val, *eq;
		size_t n;

		lineno++;
		key = trim(line);
		if (!*key || *key == '#')
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			ret = mu_error_set(err, MU_EPARSE, "", "%s:%d: expected 'key = value'", path,
					   lineno);
			goto out;
		}
		*eq = '\0';
		key = trim(key);
		val = trim(eq + 1);
		n = strlen(val);
		if (n >= 2 && val[0] == '"' && val[n - 1] == '"') {
			val[n - 1] = '\0';
			val++;
		}
		if (!strcmp(key, "url"))
			replace(&conf->url, val);
		else if (!strcmp(key, "token"))
			replace(&conf->token, val);
		else {
			ret = mu_error_set(err, MU_EPARSE, "", "%s:%d: unknown key '%s' (url, token)",
					   path, lineno, key);
			goto out;
		}
	}
	if (ferror(f))
		ret = mu_error_set(err, MU_EIO, "", "cannot read config %s", path);
out:
	memset(line, 0, sizeof(line)); /* may have held the token */
	fclose(f);
	return ret;
}

int cli_conf_resolve(const char *flag_url, const char *flag_token, struct cli_conf *conf,
		     struct mu_error *err)
{
	const char *explicit_path = getenv("MUSTER_CONFIG");
	const char *home = getenv("HOME");
	const char *env_url = getenv("MUSTER_URL");
	const char *env_token = getenv("MUSTER_TOKEN");
	int ret = 0;

	conf->url = NULL;
	conf->token = NULL;
	/* The file is read only when something is still missing after flags and env. */
	if (!(flag_url || (env_url && *env_url)) || !(flag_token || (env_token && *env_token))) {
		if (explicit_path && *explicit_path) {
			ret = cli_conf_read_file(explicit_path, 1, conf, err);
		} else if (home && *home) {
			char *p = mu_asprintf("%s/.config/muster/config", home);
			ret = cli_conf_read_file(p, 0, conf, err);
			mu_free(p);
		}
		if (ret < 0)
			return ret;
	}
	if (flag_url)
		replace(&conf->url, flag_url);
	else if (env_url && *env_url)
		replace(&conf->url, env_url);
	else if (!conf->url || !*conf->url)
		replace(&conf->url, CLI_DEFAULT_URL);
	if (flag_token)
		replace(&conf->token, flag_token);
	else if (env_token && *env_token)
		replace(&conf->token, env_token);
	return 0;
}

void cli_conf_release(struct cli_conf *conf)
{
	if (conf->token)
		memset(conf->token, 0, strlen(conf->token));
	mu_free(conf->token);
	mu_free(conf->url);
	conf->token = conf->url = NULL;
}
