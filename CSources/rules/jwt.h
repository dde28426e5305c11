/*
 * jwt.h - authentication tokens (internal): JSON Web Tokens verified with
 * a shared secret (HS256), or, when a server is configured with no keys,
 * unsigned tokens (alg "none") as the emulator accepts them. A verified
 * token becomes the rules' `auth` variable: {uid, provider, token}.
 */
#ifndef HEARTH_RULES_JWT_H
#define HEARTH_RULES_JWT_H

#include "tree/node.h"

typedef struct hearth__jwt_keys {
    const char *hs256_secret; /* NULL: no HS256 key */
    size_t hs256_len;
    bool allow_unsigned;      /* accept alg "none" (no keys configured) */
    const char *audience;     /* NULL: any aud */
    const char *issuer;       /* NULL: any iss */
} hearth__jwt_keys;

/* Verifies token at now_ms (signature, exp, nbf, iat, aud, iss) and builds
 * the auth value (new reference). An error says what was wrong. */
int hearth__jwt_verify(const char *token, size_t len,
                       const hearth__jwt_keys *keys, double now_ms,
                       hearth_node_t **auth, hearth_error_t *err);

#endif
