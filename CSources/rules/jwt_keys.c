/* jwt_keys.c - public keys for RS256 and ES256 tokens: parsing a JWKS
 * document, Google's map of kid to certificate, or PEM blocks, and checking
 * a token's signature with the key it names (see jwt.h). OpenSSL 3 EVP
 * interfaces only. */
#include "rules/jwt.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <string.h>

enum {
    MIN_RSA_BITS = 2048,   /* shorter moduli are forgeable in practice */
    MAX_RSA_BITS = 16384,
    MAX_TEXT = 1 << 20,    /* real key sets are a few kilobytes */
    P256_BYTES = 32,       /* a coordinate, r or s */
};

typedef enum { KEY_RSA, KEY_P256 } key_type;

typedef struct jwt_key {
    EVP_PKEY *pkey;
    key_type type;
    char *kid; /* NULL: none */
} jwt_key;

struct hearth__jwt_keyset {
    jwt_key *keys;
    size_t count, cap;
    bool has_kids; /* then a token's kid selects its key */
};

static const char *type_name(key_type t) { return t == KEY_RSA ? "RS256" : "ES256"; }

void hearth__jwt_keyset_free(hearth__jwt_keyset *set) {
    if (!set)
        return;
    for (size_t i = 0; i < set->count; i++) {
        EVP_PKEY_free(set->keys[i].pkey);
        hearth__free(set->keys[i].kid);
    }
    hearth__free(set->keys);
    hearth__free(set);
}

size_t hearth__jwt_keyset_count(const hearth__jwt_keyset *set) {
    return set ? set->count : 0;
}

const char *hearth__jwt_keyset_kid(const hearth__jwt_keyset *set, size_t i) {
    return set && i < set->count ? set->keys[i].kid : NULL;
}

/* ---- adding keys ---- */

/* Which algorithm pkey serves: RSA of a sane size, or EC on P-256. */
static int classify(EVP_PKEY *pkey, const char *name, key_type *type,
                    hearth_error_t *err) {
    if (EVP_PKEY_is_a(pkey, "RSA")) {
        int bits = EVP_PKEY_get_bits(pkey);
        if (bits < MIN_RSA_BITS || bits > MAX_RSA_BITS)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "%s: an RSA modulus of %d bits (must be %d to %d)",
                                 name, bits, MIN_RSA_BITS, MAX_RSA_BITS);
        *type = KEY_RSA;
        return 0;
    }
    if (EVP_PKEY_is_a(pkey, "EC")) {
        char group[64];
        size_t group_len;
        if (!EVP_PKEY_get_group_name(pkey, group, sizeof group, &group_len) ||
            (strcmp(group, SN_X9_62_prime256v1) && strcmp(group, "P-256"))) {
            ERR_clear_error();
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "%s: curve must be P-256", name);
        }
        *type = KEY_P256;
        return 0;
    }
    return hearth__error(err, HEARTH_EINVAL, NULL,
                         "%s: %s keys are not supported (RSA or EC P-256)", name,
                         EVP_PKEY_get0_type_name(pkey));
}

/* Checks what the key's parameters promise (an odd composite modulus, a
 * point on the curve), since they come from a text anyone may have made. */
static int check_public(EVP_PKEY *pkey, const char *name, hearth_error_t *err) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    bool ok = ctx && EVP_PKEY_public_check(ctx) == 1;
    EVP_PKEY_CTX_free(ctx);
    ERR_clear_error();
    return ok ? 0 : hearth__error(err, HEARTH_EINVAL, NULL,
                                  "%s: not a valid public key", name);
}

static bool kid_taken(const hearth__jwt_keyset *set, const char *kid) {
    for (size_t i = 0; i < set->count; i++)
        if (set->keys[i].kid && !strcmp(set->keys[i].kid, kid))
            return true;
    return false;
}

/* Appends pkey (taken over, freed on error) with its kid (NULL: none). */
static int add_key(hearth__jwt_keyset *set, EVP_PKEY *pkey, const char *kid,
                   const char *name, hearth_error_t *err) {
    key_type type;
    int rc = classify(pkey, name, &type, err);
    if (!rc)
        rc = check_public(pkey, name, err);
    if (!rc && kid && kid_taken(set, kid))
        rc = hearth__error(err, HEARTH_EINVAL, NULL,
                           "%s: kid \"%.64s\" is used twice", name, kid);
    char *kid_copy = NULL;
    if (!rc && kid && !(kid_copy = hearth__strndup(kid, strlen(kid))))
        rc = hearth__error_code(err, HEARTH_ENOMEM);
    if (!rc) {
        jwt_key *keys = hearth__grow(set->keys, &set->cap, set->count + 1,
                                     sizeof *keys);
        if (keys)
            set->keys = keys;
        else
            rc = hearth__error_code(err, HEARTH_ENOMEM);
    }
    if (rc) {
        hearth__free(kid_copy);
        EVP_PKEY_free(pkey);
        return rc;
    }
    set->keys[set->count++] = (jwt_key){pkey, type, kid_copy};
    set->has_kids |= kid != NULL;
    return 0;
}

/* ---- PEM ---- */

/* Public keys and certificates are never encrypted; without this, OpenSSL
 * would prompt on the terminal for a block that claims to be. */
static int no_passphrase(char *buf, int size, int rwflag, void *u) {
    HEARTH__UNUSED(buf);
    HEARTH__UNUSED(size);
    HEARTH__UNUSED(rwflag);
    HEARTH__UNUSED(u);
    return -1;
}

/* The key of one PEM block, from -----BEGIN to the end of its END line. */
static int read_block(const char *text, size_t len, const char *label,
                      size_t label_len, const char *name, EVP_PKEY **out,
                      hearth_error_t *err) {
    bool cert = label_len == 11 && !memcmp(label, "CERTIFICATE", 11);
    bool pubkey = label_len == 10 && !memcmp(label, "PUBLIC KEY", 10);
    if (!cert && !pubkey)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "%s: a \"%.*s\" block (must be PUBLIC KEY or CERTIFICATE)",
                             name, (int)label_len, label);
    BIO *bio = BIO_new_mem_buf(text, (int)len);
    if (!bio)
        return hearth__error_code(err, HEARTH_ENOMEM);
    *out = NULL;
    if (pubkey) {
        *out = PEM_read_bio_PUBKEY(bio, NULL, no_passphrase, NULL);
    } else {
        X509 *x509 = PEM_read_bio_X509(bio, NULL, no_passphrase, NULL);
        *out = x509 ? X509_get_pubkey(x509) : NULL;
        X509_free(x509);
    }
    BIO_free(bio);
    ERR_clear_error();
    return *out ? 0 : hearth__error(err, HEARTH_EINVAL, NULL,
                                    "%s: not a valid %s", name,
                                    cert ? "certificate" : "public key");
}

/* Adds the key of every PEM block in text; text outside blocks (such as
 * `openssl x509 -text` output) is ignored. With a kid, text must hold
 * exactly one block. `what` names the text in errors. */
static int add_pem(hearth__jwt_keyset *set, const char *text, size_t len,
                   const char *kid, const char *what, hearth_error_t *err) {
    static const char begin[] = "-----BEGIN ", dashes[] = "-----";
    const char *p = text, *end = text + len;
    size_t blocks = 0;
    const char *start;
    while ((start = memmem(p, (size_t)(end - p), begin, sizeof begin - 1))) {
        char name[160];
        blocks++;
        if (kid)
            snprintf(name, sizeof name, "%s", what);
        else
            snprintf(name, sizeof name, "%s %zu", what, blocks);
        if (kid && blocks > 1)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "%s: more than one PEM block", name);
        const char *label = start + sizeof begin - 1;
        const char *label_end = memmem(label, (size_t)(end - label), dashes, 5);
        size_t label_len = label_end ? (size_t)(label_end - label) : 0;
        if (!label_end || label_len > 64 || memchr(label, '\n', label_len))
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "%s: a malformed -----BEGIN line", name);
        char end_line[96];
        int end_len = snprintf(end_line, sizeof end_line, "-----END %.*s-----",
                               (int)label_len, label);
        const char *stop = memmem(label_end, (size_t)(end - label_end),
                                  end_line, (size_t)end_len);
        if (!stop)
            return hearth__error(err, HEARTH_EINVAL, NULL, "%s: no %s line",
                                 name, end_line);
        p = stop + end_len;
        EVP_PKEY *pkey;
        int rc = read_block(start, (size_t)(p - start), label, label_len, name,
                            &pkey, err);
        if (!rc)
            rc = add_key(set, pkey, kid, name, err);
        if (rc)
            return rc;
    }
    if (!blocks && kid)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "%s: not a PEM certificate", what);
    return 0;
}

/* ---- JWK ---- */

/* A JWK member that must be a string when present; *out NULL if absent. */
static int opt_string(json_t *jwk, const char *field, const char *name,
                      const char **out, hearth_error_t *err) {
    json_t *v = json_object_get(jwk, field);
    *out = json_string_value(v);
    if (v && !*out)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "%s: \"%s\" is not a string", name, field);
    return 0;
}

/* The base64url member `field`, decoded into a new buffer of at most max
 * bytes. */
static int jwk_bytes(json_t *jwk, const char *field, size_t max,
                     const char *name, unsigned char **out, size_t *len,
                     hearth_error_t *err) {
    json_t *v = json_object_get(jwk, field);
    const char *s = json_string_value(v);
    size_t s_len = json_string_length(v);
    *out = NULL;
    if (!s)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "%s: \"%s\" is missing", name, field);
    if (s_len / 4 * 3 > max)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "%s: \"%s\" is too long", name, field);
    if (!(*out = hearth__malloc(s_len / 4 * 3 + 3)))
        return hearth__error_code(err, HEARTH_ENOMEM);
    if (!hearth__jwt_b64url_decode(s, s_len, *out, len) || !*len) {
        hearth__free(*out);
        *out = NULL;
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "%s: \"%s\" is not base64url", name, field);
    }
    return 0;
}

/* The public key that params describe. */
static int from_params(const char *type, OSSL_PARAM_BLD *bld, const char *name,
                       EVP_PKEY **out, hearth_error_t *err) {
    *out = NULL;
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = params ? EVP_PKEY_CTX_new_from_name(NULL, type, NULL) : NULL;
    bool ok = ctx && EVP_PKEY_fromdata_init(ctx) == 1 &&
              EVP_PKEY_fromdata(ctx, out, EVP_PKEY_PUBLIC_KEY, params) == 1;
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    ERR_clear_error();
    if (!params)
        return hearth__error_code(err, HEARTH_ENOMEM);
    return ok ? 0 : hearth__error(err, HEARTH_EINVAL, NULL,
                                  "%s: not a valid public key", name);
}

static int rsa_from_jwk(json_t *jwk, const char *name, EVP_PKEY **out,
                        hearth_error_t *err) {
    unsigned char *n = NULL, *e = NULL;
    size_t n_len, e_len;
    int rc = jwk_bytes(jwk, "n", MAX_RSA_BITS / 8 + 1, name, &n, &n_len, err);
    if (!rc)
        rc = jwk_bytes(jwk, "e", 64, name, &e, &e_len, err);
    BIGNUM *bn_n = NULL, *bn_e = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    if (!rc) {
        bn_n = BN_bin2bn(n, (int)n_len, NULL);
        bn_e = BN_bin2bn(e, (int)e_len, NULL);
        bld = OSSL_PARAM_BLD_new();
        if (bn_n && bn_e && bld &&
            OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) &&
            OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e))
            rc = from_params("RSA", bld, name, out, err);
        else
            rc = hearth__error_code(err, HEARTH_ENOMEM);
    }
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn_n);
    BN_free(bn_e);
    hearth__free(n);
    hearth__free(e);
    return rc;
}

static int ec_from_jwk(json_t *jwk, const char *name, EVP_PKEY **out,
                       hearth_error_t *err) {
    const char *crv = json_string_value(json_object_get(jwk, "crv"));
    if (!crv || strcmp(crv, "P-256"))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "%s: curve must be P-256", name);
    unsigned char *x = NULL, *y = NULL;
    size_t x_len = 0, y_len = 0;
    int rc = jwk_bytes(jwk, "x", P256_BYTES, name, &x, &x_len, err);
    if (!rc)
        rc = jwk_bytes(jwk, "y", P256_BYTES, name, &y, &y_len, err);
    if (!rc && (x_len != P256_BYTES || y_len != P256_BYTES))
        rc = hearth__error(err, HEARTH_EINVAL, NULL,
                           "%s: \"x\" and \"y\" must be %d bytes each", name,
                           P256_BYTES);
    if (!rc) {
        /* The uncompressed point encoding: 04 || x || y. */
        unsigned char point[1 + 2 * P256_BYTES] = {4};
        memcpy(point + 1, x, P256_BYTES);
        memcpy(point + 1 + P256_BYTES, y, P256_BYTES);
        OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
        if (bld &&
            OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
                                            SN_X9_62_prime256v1, 0) &&
            OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY,
                                             point, sizeof point))
            rc = from_params("EC", bld, name, out, err);
        else
            rc = hearth__error_code(err, HEARTH_ENOMEM);
        OSSL_PARAM_BLD_free(bld);
    }
    hearth__free(x);
    hearth__free(y);
    return rc;
}

/* Adds the index-th (1-based) key of a JWKS document. */
static int add_jwk(hearth__jwt_keyset *set, json_t *jwk, size_t index,
                   hearth_error_t *err) {
    char name[64];
    snprintf(name, sizeof name, "key %zu", index);
    if (!json_is_object(jwk))
        return hearth__error(err, HEARTH_EINVAL, NULL, "%s: not an object", name);
    const char *kty, *kid, *use, *alg;
    int rc = opt_string(jwk, "kty", name, &kty, err);
    if (!rc)
        rc = opt_string(jwk, "kid", name, &kid, err);
    if (!rc)
        rc = opt_string(jwk, "use", name, &use, err);
    if (!rc)
        rc = opt_string(jwk, "alg", name, &alg, err);
    if (rc)
        return rc;
    if (!kty)
        return hearth__error(err, HEARTH_EINVAL, NULL, "%s: no kty", name);
    bool rsa = !strcmp(kty, "RSA");
    if (!rsa && strcmp(kty, "EC"))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "%s: kty \"%.32s\" is not supported (RSA or EC)",
                             name, kty);
    snprintf(name, sizeof name, "%s key %zu", kty, index);
    /* A key meant for encryption, or for another algorithm, must not
     * verify signatures. */
    if (use && strcmp(use, "sig"))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "%s: use \"%.32s\" is not \"sig\"", name, use);
    const char *expected = rsa ? "RS256" : "ES256";
    if (alg && strcmp(alg, expected))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "%s: alg \"%.32s\" is not supported (%s)", name,
                             alg, expected);
    EVP_PKEY *pkey;
    rc = rsa ? rsa_from_jwk(jwk, name, &pkey, err)
             : ec_from_jwk(jwk, name, &pkey, err);
    return rc ? rc : add_key(set, pkey, kid, name, err);
}

/* A JWKS document, or Google's map of kid to PEM certificate. */
static int add_json(hearth__jwt_keyset *set, const char *text, size_t len,
                    hearth_error_t *err) {
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        int rc = hearth__error(err, HEARTH_EINVAL, NULL,
                               "key set: invalid JSON at line %d, column %d: %s",
                               jerr.line, jerr.column, jerr.text);
        if (err) {
            err->line = jerr.line;
            err->column = jerr.column;
        }
        return rc;
    }
    int rc = 0;
    json_t *keys = json_object_get(doc, "keys");
    if (json_is_array(keys)) {
        for (size_t i = 0; !rc && i < json_array_size(keys); i++)
            rc = add_jwk(set, json_array_get(keys, i), i + 1, err);
    } else if (json_is_object(doc)) {
        const char *kid;
        json_t *pem;
        json_object_foreach(doc, kid, pem) {
            char name[96];
            snprintf(name, sizeof name, "certificate \"%.64s\"", kid);
            rc = json_is_string(pem)
                     ? add_pem(set, json_string_value(pem), json_string_length(pem),
                               kid, name, err)
                     : hearth__error(err, HEARTH_EINVAL, NULL,
                                     "%s: not a PEM string (nor is there a "
                                     "JWKS \"keys\" array)", name);
            if (rc)
                break;
        }
    } else {
        rc = hearth__error(err, HEARTH_EINVAL, NULL,
                           "key set: not a JSON object");
    }
    json_decref(doc);
    return rc;
}

/* ---- parsing ---- */

int hearth__jwt_keyset_parse(const char *text, size_t len,
                             hearth__jwt_keyset **out, hearth_error_t *err) {
    *out = NULL;
    if (!text)
        return hearth__error(err, HEARTH_EINVAL, NULL, "no key set text");
    if (len > MAX_TEXT)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "key set of %zu bytes (at most %d)", len, MAX_TEXT);
    hearth__jwt_keyset *set = hearth__calloc(1, sizeof *set);
    if (!set)
        return hearth__error_code(err, HEARTH_ENOMEM);
    size_t skip = 0; /* text need not end with a NUL */
    while (skip < len && strchr(" \t\r\n", text[skip]) && text[skip])
        skip++;
    /* JSON starts with a brace (or a bracket, to say it is not an object);
     * PEM with a -----BEGIN line, perhaps after some explanatory text. */
    int rc = skip < len && (text[skip] == '{' || text[skip] == '[')
                 ? add_json(set, text, len, err)
                 : add_pem(set, text, len, NULL, "PEM block", err);
    if (!rc && !set->count)
        rc = hearth__error(err, HEARTH_EINVAL, NULL, "no keys found");
    if (rc) {
        hearth__jwt_keyset_free(set);
        return rc;
    }
    *out = set;
    return 0;
}

int hearth__jwt_keyset_load(const char *file_path, hearth__jwt_keyset **out,
                            hearth_error_t *err) {
    *out = NULL;
    size_t len;
    char *text = hearth__read_file(file_path, MAX_TEXT, &len);
    if (!text)
        return hearth__error(err, HEARTH_EIO, file_path,
                             "cannot read key file %s: %s", file_path,
                             strerror(errno));
    int rc = hearth__jwt_keyset_parse(text, len, out, err);
    hearth__free(text);
    if (rc && err) {
        /* Says which file, keeping the position in it. */
        char why[sizeof err->message];
        memcpy(why, err->message, sizeof why);
        int line = err->line, column = err->column;
        hearth__error(err, rc, file_path, "key file %s: %s", file_path, why);
        err->line = line;
        err->column = column;
    }
    return rc;
}

/* ---- verifying ---- */

/* JWS carries an ES256 signature as r || s; EVP_DigestVerify wants the DER
 * ECDSA-Sig-Value. NULL when out of memory (OPENSSL_free the result). */
static unsigned char *es256_der(const unsigned char *raw, size_t *der_len) {
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, P256_BYTES, NULL);
    BIGNUM *s = BN_bin2bn(raw + P256_BYTES, P256_BYTES, NULL);
    unsigned char *der = NULL;
    if (sig && r && s && ECDSA_SIG_set0(sig, r, s)) {
        r = s = NULL; /* now the signature's */
        int n = i2d_ECDSA_SIG(sig, &der);
        *der_len = n > 0 ? (size_t)n : 0;
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return der;
}

static bool verify_with(const jwt_key *key, const char *data, size_t len,
                        const unsigned char *sig, size_t sig_len) {
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    bool ok = md &&
              EVP_DigestVerifyInit(md, &pctx, EVP_sha256(), NULL, key->pkey) == 1 &&
              (key->type != KEY_RSA ||
               EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1) &&
              EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)data,
                               len) == 1;
    EVP_MD_CTX_free(md);
    ERR_clear_error();
    return ok;
}

static const jwt_key *find_kid(const hearth__jwt_keyset *set, const char *kid) {
    for (size_t i = 0; i < set->count; i++)
        if (set->keys[i].kid && !strcmp(set->keys[i].kid, kid))
            return &set->keys[i];
    return NULL;
}

bool hearth__jwt_keyset_knows(const hearth__jwt_keyset *set, const char *kid) {
    return set && (!kid || !set->has_kids || find_kid(set, kid));
}

/* With a kid the set knows, that key alone; else each key of the type. */
static int verify_der(const hearth__jwt_keyset *set, key_type type,
                      const char *kid, const char *data, size_t len,
                      const unsigned char *sig, size_t sig_len,
                      hearth_error_t *err) {
    static const char mismatch[] = "invalid token: the signature does not match";
    if (kid && set->has_kids) {
        const jwt_key *key = find_kid(set, kid);
        if (!key)
            return hearth__error(err, HEARTH_EDENIED, NULL,
                                 "invalid token: unknown key id");
        if (key->type != type)
            return hearth__error(err, HEARTH_EDENIED, NULL,
                                 "invalid token: key \"%.64s\" is not an %s key",
                                 kid, type_name(type));
        return verify_with(key, data, len, sig, sig_len)
                   ? 0 : hearth__error(err, HEARTH_EDENIED, NULL, mismatch);
    }
    bool any = false;
    for (size_t i = 0; i < set->count; i++) {
        if (set->keys[i].type != type)
            continue;
        any = true;
        if (verify_with(&set->keys[i], data, len, sig, sig_len))
            return 0;
    }
    return any ? hearth__error(err, HEARTH_EDENIED, NULL, mismatch)
               : hearth__error(err, HEARTH_EDENIED, NULL,
                               "invalid token: no %s key is configured",
                               type_name(type));
}

int hearth__jwt_keyset_verify(const hearth__jwt_keyset *set, const char *alg,
                              const char *kid, const char *data, size_t len,
                              const unsigned char *sig, size_t sig_len,
                              hearth_error_t *err) {
    if (!strcmp(alg, "RS256"))
        return verify_der(set, KEY_RSA, kid, data, len, sig, sig_len, err);
    if (strcmp(alg, "ES256"))
        return hearth__error(err, HEARTH_EDENIED, NULL,
                             "invalid token: unsupported algorithm");
    /* Exactly r || s: a DER signature or a padded one is not JWS. */
    if (sig_len != 2 * P256_BYTES)
        return hearth__error(err, HEARTH_EDENIED, NULL,
                             "invalid token: an ES256 signature of %zu bytes "
                             "(must be %d)", sig_len, 2 * P256_BYTES);
    size_t der_len = 0;
    unsigned char *der = es256_der(sig, &der_len);
    if (!der)
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = verify_der(set, KEY_P256, kid, data, len, der, der_len, err);
    OPENSSL_free(der);
    return rc;
}
