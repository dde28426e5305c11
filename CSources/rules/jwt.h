/*
 * jwt.h - authentication tokens (internal): JSON Web Tokens verified with
 * a shared secret (HS256) or with public keys (RS256, ES256 on P-256), or,
 * when a server is configured with no keys, unsigned tokens (alg "none")
 * as the emulator accepts them. A verified token becomes the rules' `auth`
 * variable: {uid, provider, token}.
 */
#ifndef HEARTH_RULES_JWT_H
#define HEARTH_RULES_JWT_H

#include "tree/node.h"

struct json_t;

/* Public keys for RS256 (RSA) and ES256 (P-256), each with its kid if it
 * had one. Immutable once parsed, so threads may share it. */
typedef struct hearth__jwt_keyset hearth__jwt_keyset;

typedef struct hearth__jwt_keys {
    const char *hs256_secret; /* NULL: no HS256 key */
    size_t hs256_len;
    bool allow_unsigned;      /* accept alg "none" (no keys configured) */
    const char *audience;     /* NULL: any aud */
    const char *issuer;       /* NULL: any iss */
    const hearth__jwt_keyset *public_keys; /* NULL: no RS256/ES256 keys */
} hearth__jwt_keys;

/* What a server adds to hearth__jwt_keys: a second key set and the
 * Firebase ID token rules. */
typedef struct hearth__jwt_checks {
    /* Keys fetched from a URL (server/auth_keys.c), tried beside
     * keys->public_keys; NULL: none (yet). */
    const hearth__jwt_keyset *fetched_keys;
    /* Firebase Auth's ID token rules: RS256 with a kid, "sub" a string of
     * 1 to 128 characters (it is auth.uid; a "uid" claim is not), "iat"
     * and "auth_time" numbers not in the future. */
    bool firebase;
    /* Set (out) when the token names a kid that no key set knows: the
     * caller may fetch the keys again. */
    bool unknown_kid;
} hearth__jwt_checks;

/* Verifies token at now_ms (signature, exp, nbf, iat, aud, iss) and builds
 * the auth value (new reference). An error says what was wrong. The
 * algorithm picks the key: HS256 only ever uses hs256_secret, RS256 only
 * RSA keys and ES256 only P-256 keys of public_keys. */
int hearth__jwt_verify(const char *token, size_t len,
                       const hearth__jwt_keys *keys, double now_ms,
                       hearth_node_t **auth, hearth_error_t *err);
/* The same with checks (NULL: none beyond keys). */
int hearth__jwt_verify_checked(const char *token, size_t len,
                               const hearth__jwt_keys *keys,
                               hearth__jwt_checks *checks, double now_ms,
                               hearth_node_t **auth, hearth_error_t *err);

/* Parses public keys from text: a JWKS document ({"keys": [JWK...]}, RSA
 * and EC P-256 keys), a map of kid to PEM certificate (Google's x509 form),
 * or one or more PEM blocks (PUBLIC KEY or CERTIFICATE, no kids). An error
 * (HEARTH_EINVAL) names the key and what was wrong with it. */
int hearth__jwt_keyset_parse(const char *text, size_t len,
                             hearth__jwt_keyset **out, hearth_error_t *err);
/* hearth__jwt_keyset_parse on a file's contents; HEARTH_EIO when it cannot
 * be read. Errors name the file. */
int hearth__jwt_keyset_load(const char *file_path, hearth__jwt_keyset **out,
                            hearth_error_t *err);
void hearth__jwt_keyset_free(hearth__jwt_keyset *set);
/* How many keys set holds, and the i-th one's kid (NULL: none). */
size_t hearth__jwt_keyset_count(const hearth__jwt_keyset *set);
const char *hearth__jwt_keyset_kid(const hearth__jwt_keyset *set, size_t i);
/* Whether a token naming kid can be checked with set: set has that kid,
 * or has no kids at all (then every key of the type is tried). */
bool hearth__jwt_keyset_knows(const hearth__jwt_keyset *set, const char *kid);

/* Signs claims (a JSON object) into a compact token, header
 * {"alg":"HS256","typ":"JWT"}; *out is NUL-terminated, hearth__free it. */
int hearth__jwt_sign_hs256(const char *secret, size_t secret_len,
                           const struct json_t *claims, char **out,
                           hearth_error_t *err);
/* Signs claims with a PEM private key: RS256 for RSA (2048 bits or more),
 * ES256 for EC P-256; the header names kid (NULL: none). jwt_sign_key.c. */
int hearth__jwt_sign_key(const char *key_pem, const char *kid,
                         const struct json_t *claims, char **out,
                         hearth_error_t *err);
/* The same with alg "none" and an empty signature: "header.payload.". */
int hearth__jwt_sign_unsigned(const struct json_t *claims, char **out,
                              hearth_error_t *err);

/* ---- shared by jwt.c and jwt_keys.c ---- */

/* Appends base64url without padding of len bytes to b (the test helpers
 * use it to build tokens by hand). */
void hearth__jwt_b64url_encode(hearth__buf *b, const unsigned char *in,
                               size_t len);
/* Decodes base64url without padding into out (room for len / 4 * 3 + 2
 * bytes); false for bad input. */
bool hearth__jwt_b64url_decode(const char *s, size_t len, unsigned char *out,
                               size_t *out_len);
/* Checks the signature sig over data with the key the token's alg and kid
 * (NULL: none) select. alg is "RS256" or "ES256". */
int hearth__jwt_keyset_verify(const hearth__jwt_keyset *set, const char *alg,
                              const char *kid, const char *data, size_t len,
                              const unsigned char *sig, size_t sig_len,
                              hearth_error_t *err);

#endif
