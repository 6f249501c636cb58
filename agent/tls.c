/*
 * tls.c - the agent's TLS credentials (see tls.h). The private key stays in
 * this process only: jobs are exec'd, so no child keeps a copy.
 */
#include "tls.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <grpc/grpc.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "alloc.h"
#include "log.h"

#define PEM_MAX (1 << 20)

static char *ca_pem, *cert_pem, *key_pem;

static int read_pem(const char *flag, const char *path, char **out, struct mu_error *err)
{
	FILE *f = fopen(path, "re");
	char *p;
	size_t n;
	int ret = 0;

	if (!f)
		return mu_error_set(err, MU_EINVAL, flag, "--%s %s: %s", flag, path, strerror(errno));
	p = mu_malloc(PEM_MAX + 1);
	n = fread(p, 1, PEM_MAX + 1, f);
	if (ferror(f) || !n || n > PEM_MAX || !strstr(p, "-----BEGIN ")) {
		p[n > PEM_MAX ? PEM_MAX : n] = '\0';
		ret = mu_error_set(err, MU_EINVAL, flag, "--%s %s: %s", flag, path,
				   ferror(f) ? strerror(errno) : n > PEM_MAX ? "over 1 MiB" : "not a PEM file");
		mu_free(p);
		goto out;
	}
	p[n] = '\0';
	*out = p;
out:
	fclose(f);
	return ret;
}

/* Says at start what the handshake would only show as "Socket closed":
 * an expired or not yet valid certificate, or a key of another one. */
static int check_pair(const char *cert_file, const char *key_file, struct mu_error *err)
{
	BIO *b = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	EVP_PKEY *k = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
	int ret = 0;

	if (!x)
		ret = mu_error_set(err, MU_EINVAL, "tls-cert", "--tls-cert %s: no PEM certificate in it", cert_file);
	else if (!k)
		ret = mu_error_set(err, MU_EINVAL, "tls-key", "--tls-key %s: not a PEM private key", key_file);
	else if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0)
		ret = mu_error_set(err, MU_EINVAL, "tls-cert", "--tls-cert %s: the certificate has expired",
				   cert_file);
	else if (X509_cmp_current_time(X509_get0_notBefore(x)) >= 0)
		ret = mu_error_set(err, MU_EINVAL, "tls-cert", "--tls-cert %s: the certificate is not valid yet",
				   cert_file);
	else if (X509_check_private_key(x, k) != 1)
		ret = mu_error_set(err, MU_EINVAL, "tls-key", "--tls-key %s does not belong to --tls-cert %s",
				   key_file, cert_file);
	ERR_clear_error();
	EVP_PKEY_free(k);
	X509_free(x);
	BIO_free(kb);
	BIO_free(b);
	return ret;
}

int ag_tls_load(const char *ca_file, const char *cert_file, const char *key_file,
		struct mu_error *err)
{
	bool ca = ca_file && *ca_file, cert = cert_file && *cert_file, key = key_file && *key_file;
	struct stat st;
	int ret;

	if (!ca && !cert && !key)
		return 0;
	if (!ca)
		return mu_error_set(err, MU_EINVAL, "tls-ca",
				    "--tls-cert/--tls-key need --tls-ca (the CA of muster-api's certificate)");
	if (cert != key)
		return mu_error_set(err, MU_EINVAL, cert ? "tls-key" : "tls-cert",
				    "--tls-cert and --tls-key go together");
	ret = read_pem("tls-ca", ca_file, &ca_pem, err);
	if (!ret && cert)
		ret = read_pem("tls-cert", cert_file, &cert_pem, err);
	if (!ret && key)
		ret = read_pem("tls-key", key_file, &key_pem, err);
	if (!ret && cert)
		ret = check_pair(cert_file, key_file, err);
	if (!ret && key && !stat(key_file, &st) && (st.st_mode & 077))
		mu_warn("tls key=%s is readable by group or others (mode %03o): chmod 0600 it", key_file,
			(unsigned)(st.st_mode & 0777));
	return ret;
}

grpc_channel_credentials *ag_tls_credentials(void)
{
	grpc_ssl_pem_key_cert_pair pair = { key_pem, cert_pem };

	if (!ca_pem)
		return grpc_insecure_credentials_create();
	return grpc_ssl_credentials_create(ca_pem, cert_pem ? &pair : NULL, NULL, NULL);
}
