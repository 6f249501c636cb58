/*
 * api_tls.c - certificate, key and client CA for REST and gRPC; reload.
 *
 * REST gets an SSL_CTX per load: rest.c points its accept context at the
 * newest after a reload, and connections already open keep a reference to
 * theirs (SSL_new holds one), so freeing the old context is safe. gRPC gets
 * a certificate-config fetcher: the C core asks it before each handshake
 * and takes a new config only when the version moved.
 */
#include "api_tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <h2o.h>
#include <grpc/grpc.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "alloc.h"
#include "log.h"
#include "rest_gate.h"

#define PEM_MAX (1 << 20)


static const h2o_iovec_t http1_alpn[] = { { H2O_STRLIT("http/1.1") }, { NULL, 0 } };
static struct {
	pthread_mutex_t mu;
	char *cert_file, *key_file, *ca_file; /* configuration (ca_file NULL = none) */
	char *cert_pem, *key_pem, *ca_pem;    /* current contents */
	unsigned version, grpc_version;       /* loads; the one gRPC last took */
	SSL_CTX *rest;
	bool enabled;
} t = { .mu = PTHREAD_MUTEX_INITIALIZER };

static const char *ssl_reason(void)
{
	static __thread char buf[256];
	unsigned long e = ERR_peek_last_error();

	if (!e)
		return "unknown OpenSSL error";
	ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return buf;
}

static int read_pem(const char *what, const char *path, char **out, struct mu_error *err)
{
	FILE *f = fopen(path, "re");
	char *p = NULL;
	size_t n;
	int ret = 0;

	*out = NULL;
	if (!f)
		return mu_error_set(err, MU_EINVAL, what, "cannot open %s: %s", path, strerror(errno));
	p = mu_malloc(PEM_MAX + 1);
	n = fread(p, 1, PEM_MAX + 1, f);
	if (ferror(f)) {
		ret = mu_error_set(err, MU_EINVAL, what, "cannot read %s: %s", path, strerror(errno));
		goto out;
	}
	if (n > PEM_MAX || !n) {
		ret = mu_error_set(err, MU_EINVAL, what, "%s: %s", path, n ? "over 1 MiB" : "empty");
		goto out;
	}
	p[n] = '\0';
	*out = p;
	p = NULL;
out:
	if (p)
		mu_free(p);
	fclose(f);
	return ret;
}

/* Refuses a certificate outside its validity period: a server that starts
 * with an expired certificate would only fail later, in every client. */
static int check_validity(const char *what, const char *path, X509 *x, struct mu_error *err)
{
	if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0)
		return mu_error_set(err, MU_EINVAL, what, "%s: the certificate has expired", path);
	if (X509_cmp_current_time(X509_get0_notBefore(x)) >= 0)
		return mu_error_set(err, MU_EINVAL, what, "%s: the certificate is not valid yet", path);
	return 0;
}

static int check_ca(const char *path, const char *pem, struct mu_error *err)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	X509 *x;
	int n = 0;

	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
		n++;
		X509_free(x);
	}
	ERR_clear_error();
	BIO_free(bio);
	if (!n)
		return mu_error_set(err, MU_EINVAL, "tls-client-ca", "%s: no PEM certificate in it", path);
	return 0;
}

static SSL_CTX *rest_ctx_new(struct mu_error *err)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	X509 *leaf;
	char subject[256] = "", until[64] = "";
	BIO *b;

	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
	if (SSL_CTX_use_certificate_chain_file(ctx, t.cert_file) != 1) {
		mu_error_set(err, MU_EINVAL, "tls-cert", "%s: not a PEM certificate chain (%s)", t.cert_file,
			     ssl_reason());
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, t.key_file, SSL_FILETYPE_PEM) != 1) {
		if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
			ERR_clear_error();
			mu_error_set(err, MU_EINVAL, "tls-key", "%s does not belong to the certificate in %s",
				     t.key_file, t.cert_file);
		} else {
			mu_error_set(err, MU_EINVAL, "tls-key", "%s: not a PEM private key (%s)", t.key_file,
				     ssl_reason());
		}
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		mu_error_set(err, MU_EINVAL, "tls-key", "%s does not belong to the certificate in %s",
			     t.key_file, t.cert_file);
		goto fail;
	}
	leaf = SSL_CTX_get0_certificate(ctx);
	if (check_validity("tls-cert", t.cert_file, leaf, err) < 0)
		goto fail;
	/* HTTP/1.1 only: every connection passes the gate (rest_gate.c), which
	 * reads an HTTP/1 request's headers before h2o sees its body. */
	h2o_ssl_register_alpn_protocols(ctx, http1_alpn);
	X509_NAME_oneline(X509_get_subject_name(leaf), subject, sizeof(subject));
	b = BIO_new(BIO_s_mem());
	ASN1_TIME_print(b, X509_get0_notAfter(leaf));
	BIO_read(b, until, sizeof(until) - 1);
	BIO_free(b);
	mu_info("tls cert=%s subject=%s expires=\"%s\"%s", t.cert_file, subject, until,
		t.ca_file ? " client-ca=on" : "");
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

/* Loads the configured files; swaps them in only when all are good. */
static int load(struct mu_error *err)
{
	char *cert = NULL, *key = NULL, *ca = NULL;
	struct stat st;
	SSL_CTX *ctx, *old;
	int ret;

	ret = read_pem("tls-cert", t.cert_file, &cert, err);
	if (!ret)
		ret = read_pem("tls-key", t.key_file, &key, err);
	if (!ret && t.ca_file)
		ret = read_pem("tls-client-ca", t.ca_file, &ca, err);
	if (!ret && t.ca_file)
		ret = check_ca(t.ca_file, ca, err);
	if (ret < 0)
		goto out;
	ctx = rest_ctx_new(err);
	if (!ctx) {
		ret = MU_EINVAL;
		goto out;
	}
	if (!stat(t.key_file, &st) && (st.st_mode & 077))
		mu_warn("tls key=%s is readable by group or others (mode %03o): chmod 0600 it",
			t.key_file, (unsigned)(st.st_mode & 0777));
	pthread_mutex_lock(&t.mu);
	old = t.rest;
	t.rest = ctx;
	mu_free(t.cert_pem);
	mu_free(t.key_pem);
	mu_free(t.ca_pem);
	t.cert_pem = cert;
	t.key_pem = key;
	t.ca_pem = ca;
	cert = key = ca = NULL;
	t.version++;
	t.enabled = true;
	pthread_mutex_unlock(&t.mu);
	SSL_CTX_free(old);
out:
	if (key)
		OPENSSL_cleanse(key, strlen(key));
	mu_free(cert);
	mu_free(key);
	mu_free(ca);
	return ret;
}

int api_tls_init(const struct api_tls_config *cfg, struct mu_error *err)
{
	bool cert = cfg->cert_file && cfg->cert_file[0], key = cfg->key_file && cfg->key_file[0];
	bool ca = cfg->client_ca_file && cfg->client_ca_file[0];

	if (!cert && !key && !ca)
		return 0;
	if (!cert || !key)
		return mu_error_set(err, MU_EINVAL, cert ? "tls-key" : "tls-cert",
				    "--tls-cert and --tls-key go together");
	if (ca && !cert)
		return mu_error_set(err, MU_EINVAL, "tls-client-ca", "--tls-client-ca needs --tls-cert");
	t.cert_file = mu_strdup(cfg->cert_file);
	t.key_file = mu_strdup(cfg->key_file);
	t.ca_file = ca ? mu_strdup(cfg->client_ca_file) : NULL;
	return load(err);
}

bool api_tls_enabled(void)
{
	return t.enabled;
}

int api_tls_reload(struct mu_error *err)
{
	if (!t.enabled)
		return 0;
	return load(err);
}

SSL_CTX *api_tls_rest_ctx(void)
{
	SSL_CTX *c;

	pthread_mutex_lock(&t.mu);
	c = t.rest;
	pthread_mutex_unlock(&t.mu);
	return c;
}

static grpc_ssl_certificate_config_reload_status fetch(void *ud, grpc_ssl_server_certificate_config **config)
{
	grpc_ssl_pem_key_cert_pair pair;
	grpc_ssl_certificate_config_reload_status st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;

	(void)ud;
	pthread_mutex_lock(&t.mu);
	if (t.grpc_version != t.version) {
		pair.private_key = t.key_pem;
		pair.cert_chain = t.cert_pem;
		/* gRPC 1.51 asserts that a fetched config has roots, even when
		 * it never asks for client certificates: then give it the
		 * server's own chain, which nothing verifies against */
		*config = grpc_ssl_server_certificate_config_create(t.ca_pem ? t.ca_pem : t.cert_pem,
								    &pair, 1); /* copies */
		t.grpc_version = t.version;
		st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
	}
	pthread_mutex_unlock(&t.mu);
	return st;
}

grpc_server_credentials *api_tls_grpc_credentials(void)
{
	grpc_ssl_server_credentials_options *o;

	if (!t.enabled)
		return grpc_insecure_server_credentials_create();
	/* Clients of JobService/AdminService (CLI, SDKs) have no certificate;
	 * one that presents a certificate must chain to the CA, and
	 * AgentService then requires it (api_tls_check_node). */
	o = grpc_ssl_server_credentials_create_options_using_config_fetcher(
		t.ca_file ? GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY
			  : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
		fetch, NULL);
	return grpc_ssl_server_credentials_create_with_options(o);
}

static bool has_value(const grpc_auth_context *ctx, const char *prop, const char *want, char *seen,
		      size_t seen_len)
{
	grpc_auth_property_iterator it = grpc_auth_context_find_properties_by_name(ctx, prop);
	const grpc_auth_property *p;
	size_t wl = strlen(want);

	while ((p = grpc_auth_property_iterator_next(&it))) {
		if (!seen[0])
			snprintf(seen, seen_len, "%.*s", (int)(p->value_length > 100 ? 100 : p->value_length),
				 p->value);
		if (p->value_length == wl && !memcmp(p->value, want, wl))
			return true;
	}
	return false;
}

int api_tls_check_node(grpc_call *call, const char *node, struct mu_error *err)
{
	grpc_auth_context *ctx;
	char seen[128] = "";
	bool ok;

	if (!t.enabled || !t.ca_file)
		return 0;
	ctx = grpc_call_auth_context(call);
	if (!ctx)
		return mu_error_set(err, MU_EFORBIDDEN, "tls", "agents must present a client certificate");
	/* the handshake verified the chain (REQUEST_..._AND_VERIFY): only the
	 * name is left to check. A SAN match wins over the CN, as in RFC 6125. */
	ok = has_value(ctx, GRPC_X509_SAN_PROPERTY_NAME, node, seen, sizeof(seen)) ||
	     has_value(ctx, GRPC_X509_CN_PROPERTY_NAME, node, seen, sizeof(seen));
	grpc_auth_context_release(ctx);
	if (ok)
		return 0;
	if (!seen[0])
		return mu_error_set(err, MU_EFORBIDDEN, "tls",
				    "agents must present a client certificate (--tls-cert/--tls-key) for node %.100s",
				    node);
	return mu_error_set(err, MU_EFORBIDDEN, "tls",
			    "the client certificate names %s, not node %.100s", seen, node);
}

/* ---- plaintext on the TLS port ------------------------------------------ */

#define PEEK_TIMEOUT_MS 10000

struct peek {
	h2o_timeout_entry_t te;
	h2o_socket_t *sock;
	h2o_accept_ctx_t *ctx;
};

static h2o_timeout_t peek_timeout;
static h2o_loop_t *peek_loop;

#define PLAIN_BODY                                                                            \
	"{\"type\":\"https://muster.dev/problems/invalid-request\",\"title\":\"Invalid request\","   \
	"\"status\":400,\"detail\":\"this port speaks TLS only: use https://\"}"
_Static_assert(sizeof(PLAIN_BODY) - 1 == 144, "fix Content-Length below");
static const char plain_reply[] = "HTTP/1.1 400 Bad Request\r\n"
				  "Content-Type: application/problem+json\r\n"
				  "Connection: close\r\n"
				  "Content-Length: 144\r\n\r\n" PLAIN_BODY;

static void peek_end(struct peek *p)
{
	h2o_timeout_unlink(&p->te);
	p->sock->data = NULL;
	mu_free(p);
}

static void on_plain_written(h2o_socket_t *sock, const char *err)
{
	(void)err;
	h2o_socket_close(sock);
}

static void on_handshake(h2o_socket_t *sock, const char *err)
{
	if (sock->data) /* NULL when the timer closed it mid-handshake */
		peek_end(sock->data);
	if (err) {
		h2o_socket_close(sock);
		return;
	}
	rest_gate_accept(sock);
}

static void on_peek(h2o_socket_t *sock, const char *err)
{
	struct peek *p = sock->data;
	h2o_accept_ctx_t *ctx = p->ctx;
	h2o_iovec_t reply = h2o_iovec_init(plain_reply, sizeof(plain_reply) - 1);

	if (err) {
		peek_end(p);
		h2o_socket_close(sock);
		return;
	}
	if (!sock->input->size)
		return;
	h2o_socket_read_stop(sock);
	/* 0x16: a TLS handshake record. The handshake takes the bytes already
	 * read (as h2o's own accept does after a PROXY line); the peek's timer,
	 * restarted, bounds it, then the gate has the connection. */
	if ((unsigned char)sock->input->bytes[0] == 0x16) {
		h2o_timeout_unlink(&p->te);
		h2o_timeout_link(peek_loop, &peek_timeout, &p->te);
		h2o_socket_ssl_handshake(sock, ctx->ssl_ctx, NULL, on_handshake);
		return;
	}
	peek_end(p);
	h2o_socket_write(sock, &reply, 1, on_plain_written);
}

static void on_peek_timeout(h2o_timeout_entry_t *te)
{
	struct peek *p = H2O_STRUCT_FROM_MEMBER(struct peek, te, te);
	h2o_socket_t *sock = p->sock;

	h2o_socket_read_stop(sock);
	peek_end(p);
	h2o_socket_close(sock);
}

void api_tls_accept(h2o_accept_ctx_t *ctx, h2o_socket_t *sock)
{
	struct peek *p;

	if (!ctx->ssl_ctx) {
		rest_gate_accept(sock);
		return;
	}
	if (peek_loop != ctx->ctx->loop) {
		peek_loop = ctx->ctx->loop;
		h2o_timeout_init(peek_loop, &peek_timeout, PEEK_TIMEOUT_MS);
	}
	p = mu_calloc(1, sizeof(*p));
	p->sock = sock;
	p->ctx = ctx;
	p->te.cb = on_peek_timeout;
	sock->data = p;
	h2o_timeout_link(peek_loop, &peek_timeout, &p->te);
	h2o_socket_read_start(sock, on_peek);
}

void api_tls_release(void)
{
	pthread_mutex_lock(&t.mu);
	SSL_CTX_free(t.rest);
	t.rest = NULL;
	if (t.key_pem)
		OPENSSL_cleanse(t.key_pem, strlen(t.key_pem));
	mu_free(t.cert_pem);
	mu_free(t.key_pem);
	mu_free(t.ca_pem);
	mu_free(t.cert_file);
	mu_free(t.key_file);
	mu_free(t.ca_file);
	t.cert_pem = t.key_pem = t.ca_pem = t.cert_file = t.key_file = t.ca_file = NULL;
	t.enabled = false;
	pthread_mutex_unlock(&t.mu);
}
