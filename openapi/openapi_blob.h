/*
 * openapi_blob.h - the OpenAPI document, embedded at build time.
 *
 * openapi/muster.yaml converted to compact JSON by openapi/gen_blob.py.
 * GET /openapi.json serves exactly these mu_openapi_json_len bytes (the
 * array has one extra NUL after them, so it is also a C string).
 * Static storage, read-only, safe from any thread.
 */
#ifndef MU_OPENAPI_BLOB_H
#define MU_OPENAPI_BLOB_H

#include <stddef.h>

extern const char mu_openapi_json[];
extern const size_t mu_openapi_json_len;

#endif
