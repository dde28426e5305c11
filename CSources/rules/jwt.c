/* jwt.c - verifying JSON Web Tokens and turning their claims into `auth`,
 * and signing test tokens (see jwt.h; public keys are in jwt_keys.c). */
#include "rules/jwt.h"

#include "tree/json.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

enum { CLOCK_SKEW_S = 300 }; /* iat may be this far in the future */

bool hearth__jwt_b64url_decode(const char *s, size_t len, unsigned char *out,
                               size_t *out_len) {
    if (len % 4 == 1)
        return false;
    uint32_t acc = 0;
    int bits = 0;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        int v = c >= 'A' && c <= 'Z'   ? c - 'A'
                : c >= 'a' && c <= 'z' ? c - 'a' + 26
                : c >= '0' && c <= '9' ? c - '0' + 52
                : c == '-'             ? 62
                : c == '_'             ? 63
                                       : -1;
        if (v < 0)
            return false;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    /* Leftover bits must be zero, so that each byte string has exactly one
     * encoding (a signature cannot be varied into another valid token). */
    if (acc & ((1u << bits) - 1))
        return false;
    *out_len = n;
    return true;
}

/* hearth__jwt_b64url_decode into a new buffer; NULL for bad input (or when
 * out of memory, which then denies the token too). */
static unsigned char *b64url_decode(const char *s, size_t len, size_t *out_len) {
    unsigned char *out = hearth__malloc(len / 4 * 3 + 3);
    if (out && !hearth__jwt_b64url_decode(s, len, out, out_len)) {
        hearth__free(out);
        return NULL;
    }
    return out;
}

static json_t *decode_json(const char *s, size_t len) {
    size_t n;
    unsigned char *raw = b64url_decode(s, len, &n);
    if (!raw)
        return NULL;
    json_t *j = json_loadb((const char *)raw, n, 0, NULL);
    hearth__free(raw);
    if (!json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static int bad(hearth_error_t *err, const char *why) {
    return hearth__error(err, HEARTH_EDENIED, NULL, "invalid token: %s", why);
}

static int check_hs256(const char *token, size_t signed_len,
                       const unsigned char *sig, size_t sig_len,
                       const hearth__jwt_keys *keys, hearth_error_t *err) {
    /* Only the configured secret: never a public key's text, which anyone
     * could use to forge an "HS256" token (algorithm confusion). */
    if (!keys->hs256_secret)
        return bad(err, "no HS256 key is configured");
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    bool ok = HMAC(EVP_sha256(), keys->hs256_secret, (int)keys->hs256_len,
                   (const unsigned char *)token, signed_len, mac, &mac_len) &&
              sig_len == mac_len && CRYPTO_memcmp(sig, mac, sig_len) == 0;
    return ok ? 0 : bad(err, "the signature does not match");
}

/* An RS256 / ES256 signature: checked with the set that knows the
 * token's kid, of the configured file's and the fetched ones. */
static int check_public(const char *token, size_t signed_len,
                        const unsigned char *sig, size_t sig_len,
                        const char *alg, const char *kid,
                        const hearth__jwt_keys *keys,
                        hearth__jwt_checks *checks, hearth_error_t *err) {
    const hearth__jwt_keyset *sets[2] = {keys->public_keys,
                                         checks ? checks->fetched_keys : NULL};
    bool any_set = false, tried = false;
    int rc = 0;
    for (size_t i = 0; i < 2; i++) {
        if (!sets[i])
            continue;
        any_set = true;
        if (!hearth__jwt_keyset_knows(sets[i], kid))
            continue;
        tried = true;
        rc = hearth__jwt_keyset_verify(sets[i], alg, kid, token, signed_len,
                                       sig, sig_len, err);
        if (!rc)
            return 0;
    }
    if (!any_set)
        return hearth__error(err, HEARTH_EDENIED, NULL,
                             "invalid token: no %s key is configured%s", alg,
                             checks && checks->firebase ? " (none fetched yet)"
                                                        : "");
    if (!tried) {
        if (checks)
            checks->unknown_kid = true;
        return bad(err, "unknown key id");
    }
    return rc;
}

static int check_signature(const char *token, size_t signed_len,
                           const char *sig, size_t sig_len,
                           const hearth__jwt_keys *keys,
                           hearth__jwt_checks *checks, json_t *header,
                           hearth_error_t *err) {
    const char *alg = json_string_value(json_object_get(header, "alg"));
    /* Extensions the token says must be understood: none are. */
    if (json_object_get(header, "crit"))
        return bad(err, "unsupported critical header parameters (crit)");
    if (!strcmp(alg, "none")) {
        if (!keys->allow_unsigned)
            return bad(err, "unsigned tokens are not accepted");
        return sig_len == 0 ? 0 : bad(err, "an unsigned token has a signature");
    }
    bool hs256 = !strcmp(alg, "HS256");
    if (!hs256 && strcmp(alg, "RS256") && strcmp(alg, "ES256"))
        return hearth__error(err, HEARTH_EDENIED, NULL,
                             "invalid token: unsupported algorithm \"%.16s\"", alg);
    json_t *kid = json_object_get(header, "kid");
    if (kid && !json_is_string(kid))
        return bad(err, "kid is not a string");
    /* Firebase signs its ID tokens with RS256 and names the key. */
    if (!hs256 && checks && checks->firebase && strcmp(alg, "RS256"))
        return bad(err, "an ID token must be RS256");
    if (!hs256 && checks && checks->firebase && !kid)
        return bad(err, "an ID token must name its key (kid)");
    size_t n;
    unsigned char *given = b64url_decode(sig, sig_len, &n);
    if (!given)
        return bad(err, "the signature is not base64url");
    int rc = hs256 ? check_hs256(token, signed_len, given, n, keys, err)
                   : check_public(token, signed_len, given, n, alg,
                                  json_string_value(kid), keys, checks, err);
    hearth__free(given);
    return rc;
}

/* Whether the token's aud names audience: a string, or an array of them
 * (both are valid JWT). */
static bool names_audience(json_t *aud, const char *audience) {
    if (json_is_string(aud))
        return strcmp(json_string_value(aud), audience) == 0;
    size_t i;
    json_t *one;
    json_array_foreach(aud, i, one) {
        if (json_is_string(one) && strcmp(json_string_value(one), audience) == 0)
            return true;
    }
    return false;
}

/* Whether the claim `name` is a number no later than now + CLOCK_SKEW_S
 * (absent: `absent_ok`). */
static bool past(json_t *claims, const char *name, double now, bool absent_ok) {
    json_t *v = json_object_get(claims, name);
    if (!v)
        return absent_ok;
    return json_is_number(v) && json_number_value(v) <= now + CLOCK_SKEW_S;
}

/* signed_token: a signed token must expire (the service's ID tokens always
 * carry exp); an unsigned emulator token need not. */
static int check_claims(json_t *claims, const hearth__jwt_keys *keys,
                        const hearth__jwt_checks *checks, bool signed_token,
                        double now_ms, hearth_error_t *err) {
    double now = now_ms / 1000;
    bool firebase = checks && checks->firebase;
    json_t *exp = json_object_get(claims, "exp"), *nbf = json_object_get(claims, "nbf");
    if (!exp && signed_token)
        return bad(err, "no expiry (exp)");
    if (exp && (!json_is_number(exp) || json_number_value(exp) <= now))
        return hearth__error(err, HEARTH_EDENIED, NULL, "the token has expired");
    if (nbf && (!json_is_number(nbf) || json_number_value(nbf) > now))
        return bad(err, "not valid yet (nbf)");
    if (!past(claims, "iat", now, !firebase))
        return bad(err, "issued in the future (iat)");
    if (firebase && !past(claims, "auth_time", now, false))
        return bad(err, "signed in in the future (auth_time)");
    if (keys->audience && !names_audience(json_object_get(claims, "aud"), keys->audience))
        return bad(err, "wrong audience");
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    if (keys->issuer && (!iss || strcmp(iss, keys->issuer)))
        return bad(err, "wrong issuer");
    return 0;
}

/* auth.provider as the service names it from firebase.sign_in_provider:
 * "google.com" is "google" (its rules reference's auth.provider ==
 * 'twitter'); "password", "anonymous", "phone", "custom" stay; a token
 * without it is "custom". */
static void provider_name(const char *sign_in_provider, char *out, size_t size) {
    const char *p = sign_in_provider ? sign_in_provider : "custom";
    size_t len = strlen(p);
    if (len > 4 && !strcmp(p + len - 4, ".com"))
        len -= 4; /* google.com, facebook.com, github.com, twitter.com */
    snprintf(out, size, "%.*s", (int)len, p);
}

/* auth = {uid, provider, token: the claims}. An ID token's uid is its sub
 * alone; other tokens may say uid (the legacy tokens' claim) instead. */
static int make_auth(json_t *claims, bool firebase, hearth_node_t **out,
                     hearth_error_t *err) {
    const char *uid = firebase ? NULL : json_string_value(json_object_get(claims, "uid"));
    if (!uid)
        uid = json_string_value(json_object_get(claims, "sub"));
    if (!uid || !uid[0] || strlen(uid) > 128)
        return bad(err, "no uid (sub) of 1 to 128 characters");
    char provider[64];
    provider_name(json_string_value(json_object_get(json_object_get(claims, "firebase"),
                                                    "sign_in_provider")),
                  provider, sizeof provider);
    json_t *auth = json_pack("{s:s,s:s,s:O}", "uid", uid, "provider", provider,
                             "token", claims);
    if (!auth)
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = hearth_node_from_jansson(auth, HEARTH__JSON_CLAIM_KEYS, out, NULL);
    json_decref(auth);
    return rc ? bad(err, "claims that are not storable data") : 0;
}

int hearth__jwt_verify_checked(const char *token, size_t len,
                               const hearth__jwt_keys *keys,
                               hearth__jwt_checks *checks, double now_ms,
                               hearth_node_t **auth, hearth_error_t *err) {
    const char *dot1 = memchr(token, '.', len);
    const char *dot2 = dot1 ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token)) : NULL;
    if (!dot2 || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - token)))
        return bad(err, "not three parts");
    json_t *header = decode_json(token, (size_t)(dot1 - token));
    json_t *claims = decode_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    int rc;
    const char *alg = json_string_value(json_object_get(header, "alg"));
    if (!header || !claims || !alg)
        rc = bad(err, "a part is not base64url JSON");
    else
        rc = check_signature(token, (size_t)(dot2 - token), dot2 + 1,
                             len - (size_t)(dot2 + 1 - token), keys, checks,
                             header, err);
    bool firebase = checks && checks->firebase;
    if (!rc)
        rc = check_claims(claims, keys, checks, strcmp(alg, "none") != 0,
                          now_ms, err);
    if (!rc)
        rc = make_auth(claims, firebase, auth, err);
    json_decref(header);
    json_decref(claims);
    return rc;
}

int hearth__jwt_verify(const char *token, size_t len,
                       const hearth__jwt_keys *keys, double now_ms,
                       hearth_node_t **auth, hearth_error_t *err) {
    return hearth__jwt_verify_checked(token, len, keys, NULL, now_ms, auth, err);
}

/* ---- signing ---- */

void hearth__jwt_b64url_encode(hearth__buf *b, const unsigned char *in,
                                size_t len) {
    static const char abc[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        acc = (acc << 8) | in[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            hearth__buf_addc(b, abc[(acc >> bits) & 63]);
        }
    }
    if (bits)
        hearth__buf_addc(b, abc[(acc << (6 - bits)) & 63]);
}

/* header.payload. with the signature of header.payload appended (HS256
 * with secret; none when secret is NULL). */
static int sign(const char *secret, size_t secret_len, const json_t *claims,
                char **out, hearth_error_t *err) {
    *out = NULL;
    if (!json_is_object(claims))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "token claims must be a JSON object");
    if (secret && (!secret_len || secret_len > INT_MAX))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "an HS256 secret of %zu bytes", secret_len);
    const char *header = secret ? "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"
                                : "{\"alg\":\"none\",\"typ\":\"JWT\"}";
    char *payload = json_dumps(claims, JSON_COMPACT);
    if (!payload)
        return hearth__error_code(err, HEARTH_ENOMEM);
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__jwt_b64url_encode(&b, (const unsigned char *)header,
                              strlen(header));
    hearth__buf_addc(&b, '.');
    hearth__jwt_b64url_encode(&b, (const unsigned char *)payload,
                              strlen(payload));
    free(payload); /* jansson's allocation */
    hearth__buf_addc(&b, '.');
    if (secret && !b.failed) {
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned int mac_len = 0;
        if (!HMAC(EVP_sha256(), secret, (int)secret_len,
                  (const unsigned char *)b.data, b.len - 1, mac, &mac_len))
            b.failed = true; /* only when OpenSSL cannot allocate */
        hearth__jwt_b64url_encode(&b, mac, mac_len);
    }
    *out = hearth__buf_detach(&b, NULL);
    return *out ? 0 : hearth__error_code(err, HEARTH_ENOMEM);
}

int hearth__jwt_sign_hs256(const char *secret, size_t secret_len,
                           const json_t *claims, char **out,
                           hearth_error_t *err) {
    if (!secret)
        return hearth__error(err, HEARTH_EINVAL, NULL, "no HS256 secret");
    return sign(secret, secret_len, claims, out, err);
}

int hearth__jwt_sign_unsigned(const json_t *claims, char **out,
                              hearth_error_t *err) {
    return sign(NULL, 0, claims, out, err);
}
