/* jwt_sign_key.c - signing tokens with a private key (RS256, ES256), as an
 * OpenID provider signs its ID tokens: test tokens for servers that verify
 * with public keys (hearth_token_create_with_key, `hearth token --key`). */
#include "rules/jwt.h"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>

enum { P256_BYTES = 32, MIN_RSA_BITS = 2048 };

/* The algorithm key signs with: "RS256", "ES256", or NULL (unsupported). */
static const char *alg_of(EVP_PKEY *key) {
    if (EVP_PKEY_is_a(key, "RSA"))
        return EVP_PKEY_get_bits(key) >= MIN_RSA_BITS ? "RS256" : NULL;
    char group[64];
    size_t len;
    if (EVP_PKEY_is_a(key, "EC") &&
        EVP_PKEY_get_group_name(key, group, sizeof group, &len) &&
        (!strcmp(group, SN_X9_62_prime256v1) || !strcmp(group, "P-256")))
        return "ES256";
    return NULL;
}

/* JWS wants ES256 as r || s, not OpenSSL's DER. */
static bool der_to_raw(const unsigned char *der, size_t len, unsigned char *raw) {
    const unsigned char *p = der;
    ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)len);
    const BIGNUM *r, *s;
    if (!sig)
        return false;
    ECDSA_SIG_get0(sig, &r, &s);
    bool ok = BN_bn2binpad(r, raw, P256_BYTES) == P256_BYTES &&
              BN_bn2binpad(s, raw + P256_BYTES, P256_BYTES) == P256_BYTES;
    ECDSA_SIG_free(sig);
    return ok;
}

/* Appends "." and the signature of b's text so far. */
static int append_signature(hearth__buf *b, EVP_PKEY *key, bool es256) {
    unsigned char sig[2048], raw[2 * P256_BYTES];
    size_t sig_len = sizeof sig;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok = md && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
              EVP_DigestSign(md, sig, &sig_len, (const unsigned char *)b->data,
                             b->len) == 1;
    EVP_MD_CTX_free(md);
    if (ok && es256)
        ok = der_to_raw(sig, sig_len, raw);
    ERR_clear_error();
    if (!ok)
        return HEARTH_ENOMEM; /* a key OpenSSL loaded signs unless memory fails */
    hearth__buf_addc(b, '.');
    hearth__jwt_b64url_encode(b, es256 ? raw : sig, es256 ? sizeof raw : sig_len);
    return 0;
}

int hearth__jwt_sign_key(const char *key_pem, const char *kid,
                         const json_t *claims, char **out, hearth_error_t *err) {
    *out = NULL;
    if (!json_is_object(claims))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "token claims must be a JSON object");
    BIO *bio = BIO_new_mem_buf(key_pem, -1);
    /* "" as the passphrase: an encrypted key fails rather than prompting. */
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"") : NULL;
    BIO_free(bio);
    ERR_clear_error();
    if (!key)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "not a PEM private key (unencrypted RSA or EC)");
    const char *alg = alg_of(key);
    if (!alg) {
        EVP_PKEY_free(key);
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "the key must be RSA of 2048 bits or more (RS256) "
                             "or EC P-256 (ES256)");
    }
    json_t *header = kid ? json_pack("{s:s,s:s,s:s}", "alg", alg, "kid", kid, "typ", "JWT")
                         : json_pack("{s:s,s:s}", "alg", alg, "typ", "JWT");
    char *h = header ? json_dumps(header, JSON_COMPACT) : NULL;
    char *p = json_dumps(claims, JSON_COMPACT);
    json_decref(header);
    hearth__buf b;
    hearth__buf_init(&b);
    int rc = h && p ? 0 : HEARTH_ENOMEM;
    if (!rc) {
        hearth__jwt_b64url_encode(&b, (const unsigned char *)h, strlen(h));
        hearth__buf_addc(&b, '.');
        hearth__jwt_b64url_encode(&b, (const unsigned char *)p, strlen(p));
        rc = b.failed ? HEARTH_ENOMEM : append_signature(&b, key, alg[0] == 'E');
    }
    free(h); /* jansson's allocations */
    free(p);
    EVP_PKEY_free(key);
    *out = rc ? NULL : hearth__buf_detach(&b, NULL);
    hearth__buf_free(&b);
    return *out ? 0 : hearth__error_code(err, HEARTH_ENOMEM);
}
