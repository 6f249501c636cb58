/*
 * api_tls.h - muster-api's TLS: one certificate and key for REST (h2o) and
 * gRPC, re-read on SIGHUP, and optionally a CA for agents' client
 * certificates (the certificate's name must be the node's). See
 * docs/operations.md, "TLS".
 *
 * Threading: api_tls_init, api_tls_reload and api_tls_rest_ctx run on the
 * REST loop thread (main); the gRPC credentials' fetcher and
 * api_tls_check_node run on gRPC/pool threads. The module's state is
 * guarded by its own mutex.
 */
#ifndef MU_API_TLS_H
#define MU_API_TLS_H

#include <stdbool.h>

#include <openssl/ssl.h> /* before gRPC's headers, which define _GNU_SOURCE late */
#include <grpc/grpc_security.h>

#include "error.h"

struct api_tls_config {
	const char *cert_file;      /* PEM chain (leaf first); "" = no TLS */
	const char *key_file;       /* PEM private key of the leaf */
	const char *client_ca_file; /* "" = no client certificates; else agents must present one */
};

/*
 * Reads and checks the files (the key matches the certificate, the
 * certificate is not expired). A no-op returning 0 when cert_file is empty.
 * MU_EINVAL with err saying which file and why; nothing changes then.
 */
int api_tls_init(const struct api_tls_config *cfg, struct mu_error *err)
	__attribute__((warn_unused_result));

/* True once api_tls_init loaded a certificate. */
bool api_tls_enabled(void);

/*
 * Re-reads the same files. On success REST's next connections and gRPC's
 * next handshakes use the new certificate (open connections keep theirs);
 * on failure the old one stays and err says why.
 */
int api_tls_reload(struct mu_error *err) __attribute__((warn_unused_result));

/* REST's current context (borrowed; valid until the next reload or release),
 * NULL without TLS. */
SSL_CTX *api_tls_rest_ctx(void);

/* gRPC server credentials (new): TLS when enabled (client certificates
 * requested and verified when a client CA is set), else insecure. Call
 * after grpc_init. */
grpc_server_credentials *api_tls_grpc_credentials(void);

/*
 * For AgentService: when a client CA is configured, the call's peer must
 * have presented a certificate (verified by the handshake) whose common
 * name or a DNS subject alternative name is `node`. 0 when it has or no CA
 * is configured; else MU_EFORBIDDEN with err saying what was presented.
 */
int api_tls_check_node(grpc_call *call, const char *node, struct mu_error *err)
	__attribute__((warn_unused_result));

/*
 * REST's accept (loop thread): with TLS, waits for the first bytes and
 * answers a plaintext request with a 400 problem saying the port speaks TLS,
 * rather than dropping it in the handshake ("empty reply"); the first bytes
 * and the handshake together get 10 s. Then (and at once without TLS) the
 * connection goes to the gate, rest_gate_accept(). REST over TLS speaks
 * HTTP/1.1 only (ALPN), so the gate reads every connection's first request.
 */
struct st_h2o_accept_ctx_t;
struct st_h2o_socket_t;
void api_tls_accept(struct st_h2o_accept_ctx_t *ctx, struct st_h2o_socket_t *sock);

void api_tls_release(void);

#endif
