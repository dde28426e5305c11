/*
 * test_keys.h - keys made and tokens signed with OpenSSL itself, never with
 * the code under test (defined in test_jwt_keys.c, shared with
 * test_auth_keys.c).
 */
#ifndef HEARTH_TEST_KEYS_H
#define HEARTH_TEST_KEYS_H

#include <openssl/evp.h>

enum sig_form {
    SIG_JWS,   /* RS256 as is, ES256 as r || s */
    SIG_SHORT, /* ES256 r || s without its first byte (63 bytes) */
    SIG_LONG,  /* ES256 r || s after a zero byte (65 bytes) */
    SIG_DER,   /* ES256 left in DER */
};

/* A new key: "RSA" (2048 bits), "EC" (P-256) or another type's name. */
EVP_PKEY *test_new_key(const char *type);
/* The public key as PEM; a self-signed certificate of it as PEM (free()
 * both). */
char *test_pem_of(EVP_PKEY *k);
char *test_cert_of(EVP_PKEY *k);
/* The public JWK of k, with kid unless NULL, into out (2 kB is room). */
void test_jwk_of(EVP_PKEY *k, const char *kid, char *out);
/* A token whose header says alg (and kid unless NULL), signed with k's
 * private key (free()). */
char *test_sign_token(EVP_PKEY *k, const char *alg, const char *kid,
                      const char *payload, enum sig_form form);

#endif
