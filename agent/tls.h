/*
 * tls.h - the agent's side of TLS to muster-api's gRPC port: the CA that
 * signed the API's certificate and, when the API requires one
 * (--tls-client-ca), this node's client certificate, whose common name or
 * DNS subject alternative name must be the node name.
 */
#ifndef MU_AG_TLS_H
#define MU_AG_TLS_H

#include <grpc/grpc_security.h>

#include "error.h"

/*
 * Reads the PEM files once, at start (a renewed client certificate takes an
 * agent restart, which keeps running jobs). ca_file "" = plaintext (then
 * cert and key must be "" too). cert_file and key_file go together.
 * Returns 0 or MU_EINVAL with err naming the file and the flag.
 */
int ag_tls_load(const char *ca_file, const char *cert_file, const char *key_file,
		struct mu_error *err) __attribute__((warn_unused_result));

/* Channel credentials for the stream (new): TLS after ag_tls_load with a
 * CA, else insecure. Call after grpc_init. */
grpc_channel_credentials *ag_tls_credentials(void);

#endif
