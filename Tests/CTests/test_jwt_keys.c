/* test_jwt_keys.c - tokens signed with public keys (RS256, ES256): key sets
 * from JWKS, PEM and Google's map of kid to certificate, key selection by
 * kid, algorithm confusion, and the signing helpers. The keys are made here
 * and the tokens signed here, with OpenSSL, not with the code under test. */
#include "test.h"

#include "rules/jwt.h"
#include "test_keys.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

static const char good_claims[] =
    "{\"sub\":\"ada\",\"aud\":\"my-project\",\"iss\":\"https://issuer.example\","
    "\"iat\":1600000000,\"exp\":1900000000}";
static const char audience[] = "my-project", issuer[] = "https://issuer.example";

/* ---- keys, made and exported with OpenSSL ---- */

EVP_PKEY *test_new_key(const char *type) {
    EVP_PKEY *k = !strcmp(type, "RSA") ? EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048)
                  : !strcmp(type, "EC") ? EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")
                                        : EVP_PKEY_Q_keygen(NULL, NULL, type);
    if (!k) {
        fprintf(stderr, "cannot generate a %s key\n", type);
        abort();
    }
    return k;
}

static char *bio_text(BIO *bio) {
    char *data;
    long n = BIO_get_mem_data(bio, &data);
    char *s = malloc((size_t)n + 1);
    memcpy(s, data, (size_t)n);
    s[n] = '\0';
    BIO_free(bio);
    return s;
}

/* The public key as PEM (free() it). */
char *test_pem_of(EVP_PKEY *k) {
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(bio, k);
    return bio_text(bio);
}

/* A self-signed certificate of k as PEM (free() it). */
char *test_cert_of(EVP_PKEY *k) {
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               (const unsigned char *)"hearth test", -1, -1, 0);
    X509_set_issuer_name(x, name);
    CHECK(X509_set_pubkey(x, k) == 1);
    CHECK(X509_sign(x, k, EVP_sha256()) > 0);
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, x);
    X509_free(x);
    return bio_text(bio);
}

/* The base64url big-endian bytes of a BIGNUM parameter of k, padded to
 * pad bytes (0: as short as possible). */
static void b64_param(EVP_PKEY *k, const char *param, int pad, char *out) {
    BIGNUM *bn = NULL;
    unsigned char bytes[1024];
    CHECK(EVP_PKEY_get_bn_param(k, param, &bn) == 1);
    int n = pad ? BN_bn2binpad(bn, bytes, pad) : BN_bn2bin(bn, bytes);
    b64url(bytes, (size_t)n, out);
    BN_free(bn);
}

/* The public JWK of k, with kid unless NULL. */
void test_jwk_of(EVP_PKEY *k, const char *kid, char *out) {
    char a[512], b[512], kid_member[64] = "";
    if (kid)
        snprintf(kid_member, sizeof kid_member, "\"kid\":\"%s\",", kid);
    if (EVP_PKEY_is_a(k, "RSA")) {
        b64_param(k, OSSL_PKEY_PARAM_RSA_N, 0, a);
        b64_param(k, OSSL_PKEY_PARAM_RSA_E, 0, b);
        sprintf(out, "{\"kty\":\"RSA\",%s\"alg\":\"RS256\",\"use\":\"sig\","
                     "\"n\":\"%s\",\"e\":\"%s\"}", kid_member, a, b);
    } else {
        b64_param(k, OSSL_PKEY_PARAM_EC_PUB_X, 32, a);
        b64_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, 32, b);
        sprintf(out, "{\"kty\":\"EC\",%s\"crv\":\"P-256\",\"x\":\"%s\",\"y\":\"%s\"}",
                kid_member, a, b);
    }
}

/* ---- tokens, signed with OpenSSL ---- */


/* "header.payload." of alg (and kid unless NULL) into out; returns the
 * length of what is signed. */
static size_t token_start(const char *alg, const char *kid, const char *payload,
                          char *out) {
    char header[128];
    if (kid)
        snprintf(header, sizeof header, "{\"alg\":\"%s\",\"typ\":\"JWT\",\"kid\":\"%s\"}",
                 alg, kid);
    else
        snprintf(header, sizeof header, "{\"alg\":\"%s\",\"typ\":\"JWT\"}", alg);
    b64url((const unsigned char *)header, strlen(header), out);
    strcat(out, ".");
    b64url((const unsigned char *)payload, strlen(payload), out + strlen(out));
    size_t signed_len = strlen(out);
    strcat(out, ".");
    return signed_len;
}

/* A token whose header says alg, signed with k's private key (free()). */
char *test_sign_token(EVP_PKEY *k, const char *alg, const char *kid,
                        const char *payload, enum sig_form form) {
    char *out = malloc(4096);
    size_t signed_len = token_start(alg, kid, payload, out);
    unsigned char sig[1024], raw[72];
    size_t sig_len = sizeof sig;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    CHECK(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k) == 1);
    CHECK(EVP_DigestSign(md, sig, &sig_len, (unsigned char *)out, signed_len) == 1);
    EVP_MD_CTX_free(md);
    const unsigned char *use = sig;
    size_t use_len = sig_len;
    if (EVP_PKEY_is_a(k, "EC") && form != SIG_DER) {
        const unsigned char *p = sig;
        ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)sig_len);
        const BIGNUM *r, *s;
        ECDSA_SIG_get0(es, &r, &s);
        raw[0] = 0;
        BN_bn2binpad(r, raw + 1, 32);
        BN_bn2binpad(s, raw + 33, 32);
        ECDSA_SIG_free(es);
        use = form == SIG_LONG ? raw : form == SIG_SHORT ? raw + 2 : raw + 1;
        use_len = form == SIG_LONG ? 65 : form == SIG_SHORT ? 63 : 64;
    }
    b64url(use, use_len, out + strlen(out));
    return out;
}

/* An HS256 token signed with secret (free()). */
static char *hs256_token(const char *secret, const char *payload) {
    char *out = malloc(4096);
    size_t signed_len = token_start("HS256", NULL, payload, out);
    unsigned char mac[32];
    unsigned int len = 0;
    HMAC(EVP_sha256(), secret, (int)strlen(secret), (unsigned char *)out,
         signed_len, mac, &len);
    b64url(mac, len, out + strlen(out));
    return out;
}

/* token with its payload replaced and its signature kept (free()). */
static char *tampered(const char *token, const char *payload) {
    const char *dot1 = strchr(token, '.'), *dot2 = strchr(dot1 + 1, '.');
    char *out = malloc(4096), p[1024];
    b64url((const unsigned char *)payload, strlen(payload), p);
    sprintf(out, "%.*s.%s%s", (int)(dot1 - token), token, p, dot2);
    return out;
}

/* ---- verifying ---- */

static int verify_keys(const hearth__jwt_keys *keys, const char *token,
                       char *why) {
    hearth_node_t *auth = NULL;
    hearth_error_t err = {0};
    int rc = hearth__jwt_verify(token, strlen(token), keys, 1.7e12, &auth, &err);
    strcpy(why, rc ? err.message : "");
    if (!rc)
        CHECK_STR(hearth_node_string_value(hearth_node_child(auth, "uid"), NULL), "ada");
    hearth_node_decref(auth);
    return rc;
}

/* With only public keys, as a server configured with a key set is. */
static int verify(const hearth__jwt_keyset *set, const char *token, char *why) {
    hearth__jwt_keys keys = {NULL, 0, false, audience, issuer, set};
    return verify_keys(&keys, token, why);
}

#define EXPECT_ACCEPTED(set, token)                                            \
    do {                                                                       \
        char why_[256];                                                        \
        if (verify(set, token, why_)) {                                        \
            fprintf(stderr, "  %s:%d: refused: %s\n", __FILE__, __LINE__, why_); \
            test_failures++;                                                   \
        }                                                                      \
    } while (0)

/* Refused, with a message holding `expected`. Frees nothing. */
#define EXPECT_REFUSED(set, token, expected)                                   \
    do {                                                                       \
        char why_[256];                                                        \
        int rc_ = verify(set, token, why_);                                    \
        if (rc_ != HEARTH_EDENIED || !strstr(why_, expected)) {                \
            fprintf(stderr, "  %s:%d: got %d \"%s\", expected a refusal "      \
                    "with \"%s\"\n", __FILE__, __LINE__, rc_, why_, expected); \
            test_failures++;                                                   \
        }                                                                      \
    } while (0)

/* EXPECT_ACCEPTED and EXPECT_REFUSED of a token made for the check, which
 * they free. */
#define EXPECT_MADE_ACCEPTED(set, made)                                        \
    do {                                                                       \
        char *made_ = (made);                                                  \
        EXPECT_ACCEPTED(set, made_);                                           \
        free(made_);                                                           \
    } while (0)
#define EXPECT_MADE_REFUSED(set, made, expected)                               \
    do {                                                                       \
        char *made_ = (made);                                                  \
        EXPECT_REFUSED(set, made_, expected);                                  \
        free(made_);                                                           \
    } while (0)

/* A token of the good claims signed by k as alg says, naming kid. */
static char *jws(EVP_PKEY *k, const char *alg, const char *kid) {
    return test_sign_token(k, alg, kid, good_claims, SIG_JWS);
}

static hearth__jwt_keyset *parse_ok(const char *text) {
    hearth__jwt_keyset *set = NULL;
    hearth_error_t err = {0};
    if (hearth__jwt_keyset_parse(text, strlen(text), &set, &err)) {
        fprintf(stderr, "  key set refused: %s\n", err.message);
        test_failures++;
    }
    return set;
}

#define EXPECT_PARSE_ERROR(text, expected)                                     \
    do {                                                                       \
        hearth__jwt_keyset *set_ = (hearth__jwt_keyset *)1;                    \
        hearth_error_t err_ = {0};                                             \
        int rc_ = hearth__jwt_keyset_parse(text, strlen(text), &set_, &err_);  \
        if (rc_ != HEARTH_EINVAL || set_ || !strstr(err_.message, expected)) { \
            fprintf(stderr, "  %s:%d: got %d \"%s\", expected \"%s\"\n",       \
                    __FILE__, __LINE__, rc_, err_.message, expected);          \
            test_failures++;                                                   \
        }                                                                      \
        if (!rc_)                                                              \
            hearth__jwt_keyset_free(set_);                                     \
    } while (0)

/* ---- tests ---- */

static void test_rs256_and_es256(void) {
    EVP_PKEY *rsa = test_new_key("RSA"), *ec = test_new_key("EC");
    char jwk_rsa[1024], jwk_ec[1024], text[4096];
    test_jwk_of(rsa, "r1", jwk_rsa);
    test_jwk_of(ec, "e1", jwk_ec);
    snprintf(text, sizeof text, "{\"keys\": [%s, %s]}", jwk_rsa, jwk_ec);
    hearth__jwt_keyset *jwks = parse_ok(text);
    char *pem_rsa = test_pem_of(rsa), *pem_ec = test_pem_of(ec);
    snprintf(text, sizeof text, "%s%s", pem_rsa, pem_ec);
    hearth__jwt_keyset *pems = parse_ok(text);

    char *tokens[] = {
        jws(rsa, "RS256", "r1"),
        jws(ec, "ES256", "e1"),
        jws(rsa, "RS256", NULL),
        jws(ec, "ES256", NULL),
    };
    for (size_t i = 0; i < 4; i++) {
        EXPECT_ACCEPTED(jwks, tokens[i]);
        /* PEM keys have no kid: every key of the type is tried. */
        EXPECT_ACCEPTED(pems, tokens[i]);
        free(tokens[i]);
    }
    /* The auth value is the claims', as for HS256. */
    char *token = jws(ec, "ES256", "e1");
    hearth__jwt_keys keys = {NULL, 0, false, NULL, NULL, jwks};
    hearth_node_t *auth = NULL;
    CHECK_INT(hearth__jwt_verify(token, strlen(token), &keys, 1.7e12, &auth, NULL), 0);
    CHECK_JSON(auth, "{\"provider\":\"custom\",\"token\":{\"aud\":\"my-project\","
                     "\"exp\":1900000000,\"iat\":1600000000,"
                     "\"iss\":\"https://issuer.example\",\"sub\":\"ada\"},"
                     "\"uid\":\"ada\"}");
    hearth_node_decref(auth);
    free(token);
    hearth__jwt_keyset_free(jwks);
    hearth__jwt_keyset_free(pems);
    free(pem_rsa);
    free(pem_ec);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
}

static void test_kid_selects_the_key(void) {
    EVP_PKEY *a = test_new_key("RSA"), *b = test_new_key("RSA"), *ec = test_new_key("EC");
    char jwk_a[1024], jwk_b[1024], text[4096];
    test_jwk_of(a, "a", jwk_a);
    test_jwk_of(b, "b", jwk_b);
    snprintf(text, sizeof text, "{\"keys\": [%s, %s]}", jwk_a, jwk_b);
    hearth__jwt_keyset *set = parse_ok(text);
    EXPECT_MADE_ACCEPTED(set, jws(b, "RS256", "b"));
    EXPECT_MADE_ACCEPTED(set, jws(a, "RS256", "a"));
    /* Key a alone is tried, though b would verify it. */
    EXPECT_MADE_REFUSED(set, jws(b, "RS256", "a"),
                   "signature does not match");
    EXPECT_MADE_REFUSED(set, jws(b, "RS256", "c"),
                   "unknown key id");
    EXPECT_MADE_ACCEPTED(set, jws(b, "RS256", NULL));
    /* The key a kid names must be of the token's type. */
    EXPECT_MADE_REFUSED(set, jws(ec, "ES256", "a"),
                   "key \"a\" is not an ES256 key");
    hearth__jwt_keyset_free(set);
    EVP_PKEY_free(a);
    EVP_PKEY_free(b);
    EVP_PKEY_free(ec);
}

static void test_wrong_key_and_tampering(void) {
    EVP_PKEY *rsa = test_new_key("RSA"), *ec = test_new_key("EC");
    EVP_PKEY *other_rsa = test_new_key("RSA"), *other_ec = test_new_key("EC");
    char *pem_rsa = test_pem_of(rsa), *pem_ec = test_pem_of(ec), text[4096];
    snprintf(text, sizeof text, "%s%s", pem_rsa, pem_ec);
    hearth__jwt_keyset *set = parse_ok(text);
    char *t, *forged;
    EXPECT_MADE_REFUSED(set, jws(other_rsa, "RS256", NULL),
                   "signature does not match");
    EXPECT_MADE_REFUSED(set, jws(other_ec, "ES256", NULL),
                   "signature does not match");
    static const char eve[] = "{\"sub\":\"eve\",\"aud\":\"my-project\","
                              "\"iss\":\"https://issuer.example\"}";
    EVP_PKEY *keys[] = {rsa, ec};
    const char *algs[] = {"RS256", "ES256"};
    for (int i = 0; i < 2; i++) {
        t = jws(keys[i], algs[i], NULL);
        EXPECT_ACCEPTED(set, t);
        EXPECT_REFUSED(set, forged = tampered(t, eve), "signature does not match");
        free(forged);
        /* One bit of the signature flipped (the last character also
         * holds unused bits). */
        char *c = t + strlen(t) - 3, was = *c;
        *c = was == 'A' ? 'B' : 'A';
        EXPECT_REFUSED(set, t, "signature does not match");
        *c = was;
        EXPECT_ACCEPTED(set, t);
        /* The unused bits set: the same signature, another text. */
        c = t + strlen(t) - 1;
        *c = *c == 'A' ? 'B' : *c == 'Q' ? 'R' : *c == 'g' ? 'h' : 'x';
        EXPECT_REFUSED(set, t, "the signature is not base64url");
        free(t);
    }
    hearth__jwt_keyset_free(set);
    free(pem_rsa);
    free(pem_ec);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
    EVP_PKEY_free(other_rsa);
    EVP_PKEY_free(other_ec);
}

static void test_es256_signature_must_be_64_bytes(void) {
    EVP_PKEY *ec = test_new_key("EC");
    char jwk[1024], text[2048];
    test_jwk_of(ec, NULL, jwk);
    snprintf(text, sizeof text, "{\"keys\":[%s]}", jwk);
    hearth__jwt_keyset *set = parse_ok(text);
    EXPECT_MADE_ACCEPTED(set, jws(ec, "ES256", NULL));
    EXPECT_MADE_REFUSED(set, test_sign_token(ec, "ES256", NULL, good_claims, SIG_SHORT),
                   "ES256 signature of 63 bytes");
    /* A leading zero does not change r's value, yet is not JWS. */
    EXPECT_MADE_REFUSED(set, test_sign_token(ec, "ES256", NULL, good_claims, SIG_LONG),
                   "ES256 signature of 65 bytes");
    EXPECT_MADE_REFUSED(set, test_sign_token(ec, "ES256", NULL, good_claims, SIG_DER),
                   "must be 64");
    hearth__jwt_keyset_free(set);
    EVP_PKEY_free(ec);
}

/* The classic attack: an "HS256" token whose HMAC key is the server's
 * public key, which anyone can fetch. */
static void test_algorithm_confusion(void) {
    EVP_PKEY *rsa = test_new_key("RSA");
    char *pem = test_pem_of(rsa), jwk[1024], text[2048], why[256];
    test_jwk_of(rsa, "k", jwk);
    snprintf(text, sizeof text, "{\"keys\":[%s]}", jwk);
    hearth__jwt_keyset *from_pem = parse_ok(pem), *from_jwks = parse_ok(text);
    char *t = hs256_token(pem, good_claims), *t2 = hs256_token(jwk, good_claims);
    EXPECT_REFUSED(from_pem, t, "no HS256 key is configured");
    EXPECT_REFUSED(from_jwks, t2, "no HS256 key is configured");
    /* With a secret as well, the secret alone checks HS256 tokens... */
    hearth__jwt_keys keys = {"s3cret", 6, false, audience, issuer, from_pem};
    CHECK(verify_keys(&keys, t, why) == HEARTH_EDENIED &&
          strstr(why, "signature does not match"));
    free(t);
    free(t2);
    /* ...and public keys alone RS256 ones: the secret is no RSA key. */
    hearth__jwt_keys secret_only = {pem, strlen(pem), false, audience, issuer, NULL};
    t = jws(rsa, "RS256", NULL);
    CHECK(verify_keys(&secret_only, t, why) == HEARTH_EDENIED &&
          strstr(why, "no RS256 key is configured"));
    free(t);
    /* Unsigned tokens stay refused when keys are configured. */
    t = malloc(4096);
    token_start("none", NULL, good_claims, t);
    EXPECT_REFUSED(from_pem, t, "unsigned tokens are not accepted");
    free(t);
    hearth__jwt_keyset_free(from_pem);
    hearth__jwt_keyset_free(from_jwks);
    free(pem);
    EVP_PKEY_free(rsa);
}

static void test_algorithm_must_match_the_key(void) {
    EVP_PKEY *rsa = test_new_key("RSA"), *ec = test_new_key("EC");
    char jwk[1024], text[2048];
    test_jwk_of(ec, NULL, jwk);
    snprintf(text, sizeof text, "{\"keys\":[%s]}", jwk);
    hearth__jwt_keyset *ec_only = parse_ok(text);
    char *pem = test_pem_of(rsa);
    hearth__jwt_keyset *rsa_only = parse_ok(pem);
    EXPECT_MADE_REFUSED(ec_only, jws(rsa, "RS256", NULL),
                   "no RS256 key is configured");
    EXPECT_MADE_REFUSED(rsa_only, jws(ec, "ES256", NULL),
                   "no ES256 key is configured");
    /* An RSA signature under an ES256 header. */
    EXPECT_MADE_REFUSED(rsa_only, jws(rsa, "ES256", NULL),
                   "ES256 signature of 256 bytes");
    /* Same key and padding, other hash: not RS256. */
    EXPECT_MADE_REFUSED(rsa_only, jws(rsa, "RS512", NULL),
                   "unsupported algorithm \"RS512\"");
    EXPECT_MADE_REFUSED(NULL, jws(rsa, "RS256", NULL),
                   "no RS256 key is configured");
    /* Header parameters the token says must be understood. */
    EXPECT_MADE_ACCEPTED(rsa_only, test_sign_token(rsa, "RS256", "k\",\"x\":\"",
                                             good_claims, SIG_JWS));
    EXPECT_MADE_REFUSED(rsa_only, test_sign_token(rsa, "RS256", "k\",\"crit\":[\"b64\"],\"x\":\"",
                                            good_claims, SIG_JWS),
                   "unsupported critical header parameters (crit)");
    EXPECT_MADE_REFUSED(rsa_only, test_sign_token(rsa, "RS256", "k\",\"kid\":7,\"x\":\"",
                                            good_claims, SIG_JWS),
                   "kid is not a string");
    hearth__jwt_keyset_free(ec_only);
    hearth__jwt_keyset_free(rsa_only);
    free(pem);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
}

static void test_claims_checked_for_rs256(void) {
    EVP_PKEY *rsa = test_new_key("RSA");
    char *pem = test_pem_of(rsa);
    hearth__jwt_keyset *set = parse_ok(pem);
    for (size_t i = 0; refused_claims[i].payload; i++) {
        EXPECT_MADE_REFUSED(set, test_sign_token(rsa, "RS256", NULL, refused_claims[i].payload, SIG_JWS),
                       refused_claims[i].why);
    }
    EXPECT_MADE_ACCEPTED(set, jws(rsa, "RS256", NULL));
    hearth__jwt_keyset_free(set);
    free(pem);
    EVP_PKEY_free(rsa);
}

static void test_jwks_errors(void) {
    /* 32 zero bytes: a point that is not on the curve. */
    static const char zero32[] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    static const struct {
        const char *text, *why;
    } cases[] = {
        {"{\"keys\": [", "key set: invalid JSON at line 1"},
        {"{\"keys\": [{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}]}", "key 1: kty \"oct\" is not supported"},
        {"{\"keys\": [{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"AA\",\"y\":\"AA\"}]}",
         "EC key 1: curve must be P-256"},
        {"{\"keys\": [{\"kty\":\"RSA\",\"e\":\"AQAB\"}]}", "RSA key 1: \"n\" is missing"},
        {"{\"keys\": [{\"kty\":\"RSA\",\"n\":\"a+b/\",\"e\":\"AQAB\"}]}",
         "RSA key 1: \"n\" is not base64url"},
        {"{\"keys\": [{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}]}",
         "RSA key 1: an RSA modulus of 17 bits"},
        {"{\"keys\": [{\"kty\":\"RSA\",\"use\":\"enc\",\"n\":\"AQAB\",\"e\":\"AQAB\"}]}",
         "RSA key 1: use \"enc\" is not \"sig\""},
        {"{\"keys\": [{\"kty\":\"RSA\",\"alg\":\"RS512\",\"n\":\"AQAB\",\"e\":\"AQAB\"}]}",
         "RSA key 1: alg \"RS512\" is not supported (RS256)"},
        {"{\"keys\": [{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AAAA\",\"y\":\"AAAA\"}]}",
         "EC key 1: \"x\" and \"y\" must be 32 bytes each"},
        {"{\"keys\": [{\"kid\":\"a\"}]}", "key 1: no kty"},
        {"{\"keys\": [{\"kty\":7}]}", "key 1: \"kty\" is not a string"},
        {"{\"keys\": [1]}", "key 1: not an object"},
        {"{\"keys\": []}", "no keys found"},
        {"{}", "no keys found"},
        {"[]", "key set: not a JSON object"},
        {"{\"k1\": 5}", "certificate \"k1\": not a PEM string"},
        {"{\"k1\": \"hello\"}", "certificate \"k1\": not a PEM certificate"},
        {"{\"k1\": \"-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----\\n\"}",
         "certificate \"k1\": not a valid certificate"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        EXPECT_PARSE_ERROR(cases[i].text, cases[i].why);
    char text[4096];
    snprintf(text, sizeof text, "{\"keys\": [{\"kty\":\"EC\",\"crv\":\"P-256\","
                                "\"x\":\"%s\",\"y\":\"%s\"}]}", zero32, zero32);
    EXPECT_PARSE_ERROR(text, "EC key 1: not a valid public key");
    /* An even modulus: no RSA key, though of the right size. */
    unsigned char even[256] = {0x80};
    char n[400];
    b64url(even, sizeof even, n);
    snprintf(text, sizeof text, "{\"keys\": [{\"kty\":\"RSA\",\"n\":\"%s\","
                                "\"e\":\"AQAB\"}]}", n);
    EXPECT_PARSE_ERROR(text, "RSA key 1: not a valid public key");
    /* The failing key is named by its place, after good ones. */
    EVP_PKEY *rsa = test_new_key("RSA");
    char jwk[1024];
    test_jwk_of(rsa, "a", jwk);
    snprintf(text, sizeof text, "{\"keys\": [%s, {\"kty\":\"oct\"}]}", jwk);
    EXPECT_PARSE_ERROR(text, "key 2: kty \"oct\" is not supported");
    snprintf(text, sizeof text, "{\"keys\": [%s, %s]}", jwk, jwk);
    EXPECT_PARSE_ERROR(text, "RSA key 2: kid \"a\" is used twice");
    EVP_PKEY_free(rsa);
}

/* A private key, PEM-encoded (free()). */
static char *private_pem_of(EVP_PKEY *k) {
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL);
    return bio_text(bio);
}

static void test_pem_errors(void) {
    EXPECT_PARSE_ERROR("", "no keys found");
    EXPECT_PARSE_ERROR("  \n", "no keys found");
    EXPECT_PARSE_ERROR("garbage", "no keys found");
    EXPECT_PARSE_ERROR("-----BEGIN PUBLIC KEY-----\nnot base64!\n-----END PUBLIC KEY-----\n",
                       "PEM block 1: not a valid public key");
    EXPECT_PARSE_ERROR("-----BEGIN PUBLIC KEY-----\nMIIB\n",
                       "PEM block 1: no -----END PUBLIC KEY----- line");
    EXPECT_PARSE_ERROR("-----BEGIN PUBLIC KEY\nMIIB\n", "PEM block 1: a malformed -----BEGIN line");
    EVP_PKEY *ec = test_new_key("EC"), *ed = test_new_key("ED25519"), *p384, *rsa1024;
    p384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
    rsa1024 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
    char *good = test_pem_of(ec), *priv = private_pem_of(ec), *ed_pem = test_pem_of(ed);
    char *p384_pem = test_pem_of(p384), *rsa1024_pem = test_pem_of(rsa1024), text[8192];
    snprintf(text, sizeof text, "%s-----BEGIN CERTIFICATE-----\nAAAA\n"
                                "-----END CERTIFICATE-----\n", good);
    EXPECT_PARSE_ERROR(text, "PEM block 2: not a valid certificate");
    EXPECT_PARSE_ERROR(priv, "PEM block 1: a \"PRIVATE KEY\" block (must be PUBLIC KEY or CERTIFICATE)");
    EXPECT_PARSE_ERROR(ed_pem, "PEM block 1: ED25519 keys are not supported");
    EXPECT_PARSE_ERROR(p384_pem, "PEM block 1: curve must be P-256");
    EXPECT_PARSE_ERROR(rsa1024_pem, "PEM block 1: an RSA modulus of 1024 bits");
    /* Text around the blocks is ignored. */
    snprintf(text, sizeof text, "Key of 2024:\n%s\nThe end.\n", good);
    hearth__jwt_keyset *set = parse_ok(text);
    hearth__jwt_keyset_free(set);
    free(good);
    free(priv);
    free(ed_pem);
    free(p384_pem);
    free(rsa1024_pem);
    EVP_PKEY_free(ec);
    EVP_PKEY_free(ed);
    EVP_PKEY_free(p384);
    EVP_PKEY_free(rsa1024);
}

static void test_x509_map(void) {
    EVP_PKEY *rsa = test_new_key("RSA"), *ec = test_new_key("EC");
    char *cert_rsa = test_cert_of(rsa), *cert_ec = test_cert_of(ec);
    json_t *map = json_pack("{s:s,s:s}", "k1", cert_rsa, "k2", cert_ec);
    char *text = json_dumps(map, 0);
    json_decref(map);
    hearth__jwt_keyset *set = parse_ok(text);
    EXPECT_MADE_ACCEPTED(set, jws(rsa, "RS256", "k1"));
    EXPECT_MADE_ACCEPTED(set, jws(ec, "ES256", "k2"));
    EXPECT_MADE_REFUSED(set, jws(rsa, "RS256", "k3"),
                   "unknown key id");
    EXPECT_MADE_REFUSED(set, jws(rsa, "RS256", "k2"),
                   "key \"k2\" is not an RS256 key");
    hearth__jwt_keyset_free(set);
    free(text);
    /* Certificates as PEM blocks too, beside a public key. */
    char *pem_rsa = test_pem_of(rsa), both[8192];
    snprintf(both, sizeof both, "%s%s", cert_ec, pem_rsa);
    set = parse_ok(both);
    EXPECT_MADE_ACCEPTED(set, jws(ec, "ES256", NULL));
    EXPECT_MADE_ACCEPTED(set, jws(rsa, "RS256", NULL));
    hearth__jwt_keyset_free(set);
    /* One certificate per kid. */
    map = json_pack("{s:s++}", "k1", cert_ec, "", cert_rsa);
    text = json_dumps(map, 0);
    EXPECT_PARSE_ERROR(text, "certificate \"k1\": more than one PEM block");
    free(text);
    json_decref(map);
    free(pem_rsa);
    free(cert_rsa);
    free(cert_ec);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
}

static void test_keyset_load(void) {
    EVP_PKEY *ec = test_new_key("EC");
    char *pem = test_pem_of(ec), path[] = "/tmp/hearth-jwt-keys-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, pem, strlen(pem)) == (ssize_t)strlen(pem));
    close(fd);
    hearth__jwt_keyset *set = NULL;
    hearth_error_t err = {0};
    CHECK_INT(hearth__jwt_keyset_load(path, &set, &err), 0);
    char *t = jws(ec, "ES256", NULL);
    EXPECT_ACCEPTED(set, t);
    free(t);
    hearth__jwt_keyset_free(set);
    /* Errors name the file. */
    write_text(path, "{\"keys\": [}");
    set = (hearth__jwt_keyset *)1;
    CHECK_INT(hearth__jwt_keyset_load(path, &set, &err), HEARTH_EINVAL);
    CHECK(set == NULL);
    char expected[256];
    snprintf(expected, sizeof expected, "key file %s: key set: invalid JSON", path);
    CHECK(strstr(err.message, expected) == err.message);
    CHECK_INT(err.line, 1);
    unlink(path);
    CHECK_INT(hearth__jwt_keyset_load(path, &set, &err), HEARTH_EIO);
    snprintf(expected, sizeof expected, "cannot read key file %s: %s", path,
             strerror(ENOENT));
    CHECK_STR(err.message, expected);
    CHECK_STR(err.path, path);
    free(pem);
    EVP_PKEY_free(ec);
}

/* Each allocation of parsing may fail: the error says so, nothing leaks. */
static void test_keyset_parse_out_of_memory(void) {
    EVP_PKEY *rsa = test_new_key("RSA"), *ec = test_new_key("EC");
    char a[1024], b[1024], text[4096];
    test_jwk_of(rsa, "a", a);
    test_jwk_of(ec, "b", b);
    snprintf(text, sizeof text, "{\"keys\": [%s, %s]}", a, b);
    int rc = -1;
    long n;
    for (n = 0; n < 200 && rc; n++) {
        hearth__jwt_keyset *set = (hearth__jwt_keyset *)1;
        hearth_error_t err = {0};
        hearth__alloc_fail_after(n);
        rc = hearth__jwt_keyset_parse(text, strlen(text), &set, &err);
        hearth__alloc_fail_after(-1);
        if (rc) {
            CHECK_INT(rc, HEARTH_ENOMEM);
            CHECK(set == NULL);
        }
        hearth__jwt_keyset_free(rc ? NULL : set);
    }
    CHECK_INT(rc, 0);
    CHECK(n > 4); /* the set, two kids, four coordinates at least */
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
}

static void test_signing_round_trip(void) {
    json_t *claims = json_loads(good_claims, 0, NULL);
    char *token = NULL, why[256];
    hearth_error_t err = {0};
    CHECK_INT(hearth__jwt_sign_hs256("s3cret", 6, claims, &token, &err), 0);
    /* The very token OpenSSL's HMAC makes of the same text. */
    char *expected = hs256_token("s3cret", good_claims);
    CHECK_STR(token, expected);
    free(expected);
    hearth__jwt_keys keys = {"s3cret", 6, false, audience, issuer, NULL};
    CHECK_INT(verify_keys(&keys, token, why), 0);
    keys.hs256_secret = "s3creT";
    CHECK(verify_keys(&keys, token, why) && strstr(why, "signature does not match"));
    hearth__free(token);

    token = NULL;
    CHECK_INT(hearth__jwt_sign_unsigned(claims, &token, &err), 0);
    char start[1024];
    token_start("none", NULL, good_claims, start);
    CHECK_STR(token, start);
    keys.allow_unsigned = true;
    CHECK_INT(verify_keys(&keys, token, why), 0);
    keys.allow_unsigned = false;
    CHECK(verify_keys(&keys, token, why) && strstr(why, "unsigned"));
    hearth__free(token);

    /* Text beyond ASCII and the characters base64url adds ('-' and '_'). */
    json_t *odd = json_pack("{s:s,s:s,s:I}", "sub", "ada", "name", "Ådå ~~~ ???",
                           "exp", (json_int_t)4102444800);
    token = NULL;
    CHECK_INT(hearth__jwt_sign_hs256("k", 1, odd, &token, &err), 0);
    CHECK(token && strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                 "0123456789-_.") == strlen(token));
    hearth__jwt_keys k = {"k", 1, false, NULL, NULL, NULL};
    hearth_node_t *auth = NULL;
    CHECK_INT(hearth__jwt_verify(token, strlen(token), &k, 1.7e12, &auth, &err), 0);
    const hearth_node_t *name = NULL;
    hearth_node_get(auth, "token/name", &name, NULL);
    CHECK_STR(hearth_node_string_value(name, NULL), "Ådå ~~~ ???");
    hearth_node_decref(auth);
    hearth__free(token);
    json_decref(odd);

    json_t *array = json_array();
    token = (char *)1;
    CHECK_INT(hearth__jwt_sign_hs256("s3cret", 6, array, &token, &err), HEARTH_EINVAL);
    CHECK(token == NULL && strstr(err.message, "JSON object"));
    CHECK_INT(hearth__jwt_sign_unsigned(array, &token, &err), HEARTH_EINVAL);
    CHECK_INT(hearth__jwt_sign_hs256(NULL, 0, claims, &token, &err), HEARTH_EINVAL);
    CHECK_INT(hearth__jwt_sign_hs256("", 0, claims, &token, &err), HEARTH_EINVAL);
    json_decref(array);
    json_decref(claims);
}

const test_case jwt_key_tests[] = {
    {"jwt_keys_rs256_and_es256", test_rs256_and_es256},
    {"jwt_keys_kid_selects_the_key", test_kid_selects_the_key},
    {"jwt_keys_wrong_key_and_tampering", test_wrong_key_and_tampering},
    {"jwt_keys_es256_signature_must_be_64_bytes", test_es256_signature_must_be_64_bytes},
    {"jwt_keys_algorithm_confusion", test_algorithm_confusion},
    {"jwt_keys_algorithm_must_match_the_key", test_algorithm_must_match_the_key},
    {"jwt_keys_claims_checked_for_rs256", test_claims_checked_for_rs256},
    {"jwt_keys_jwks_errors", test_jwks_errors},
    {"jwt_keys_pem_errors", test_pem_errors},
    {"jwt_keys_x509_map", test_x509_map},
    {"jwt_keys_load", test_keyset_load},
    {"jwt_keys_parse_out_of_memory", test_keyset_parse_out_of_memory},
    {"jwt_keys_signing_round_trip", test_signing_round_trip},
    {NULL, NULL},
};
