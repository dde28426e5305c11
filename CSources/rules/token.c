/* token.c - making user tokens for tests and tools (hearth_token_create):
 * claims from the caller, uid as "sub", iat/exp from the clock, signed by
 * jwt.c. */
#include "rules/jwt.h"

#include <jansson.h>
#include <string.h>

/* Adds key = value unless claims has key already. */
static int set_default(json_t *claims, const char *key, json_t *value) {
    if (!value)
        return HEARTH_ENOMEM;
    if (json_object_get(claims, key)) {
        json_decref(value);
        return 0;
    }
    return json_object_set_new(claims, key, value) ? HEARTH_ENOMEM : 0;
}

/* The claims of a token: claims_json (NULL: {}) with uid as "sub", and
 * "iat" and "exp" unless given. */
static int build_claims(const char *uid, const char *claims_json, int64_t ttl_s,
                        json_t **out, hearth_error_t *err) {
    *out = NULL;
    if (ttl_s <= 0)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "the lifetime must be positive (got %lld s)",
                             (long long)ttl_s);
    json_t *claims;
    if (claims_json) {
        json_error_t jerr;
        claims = json_loads(claims_json, JSON_REJECT_DUPLICATES, &jerr);
        if (!claims)
            return hearth__error(err, HEARTH_EJSON, NULL,
                                 "claims: %s (line %d, column %d)", jerr.text,
                                 jerr.line, jerr.column);
        if (!json_is_object(claims)) {
            json_decref(claims);
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "claims must be a JSON object");
        }
    } else if (!(claims = json_object())) {
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    int64_t now_s = hearth_now_ms() / 1000;
    int rc = 0;
    if (uid && (!*uid || json_object_set_new(claims, "sub", json_string(uid))))
        rc = *uid ? HEARTH_ENOMEM : HEARTH_EINVAL;
    if (!rc)
        rc = set_default(claims, "iat", json_integer(now_s));
    if (!rc)
        rc = set_default(claims, "exp", json_integer(now_s + ttl_s));
    if (rc) {
        json_decref(claims);
        return rc == HEARTH_EINVAL
                   ? hearth__error(err, rc, NULL, "the uid must not be empty")
                   : hearth__error_code(err, rc);
    }
    *out = claims;
    return 0;
}

int hearth_token_create(const char *uid, const char *claims_json,
                        const char *secret, int64_t ttl_s, char **out,
                        hearth_error_t *err) {
    if (!out)
        return hearth__error(err, HEARTH_EINVAL, NULL, "out is NULL");
    *out = NULL;
    json_t *claims;
    int rc = build_claims(uid, claims_json, ttl_s, &claims, err);
    if (rc)
        return rc;
    char *token = NULL;
    rc = secret ? hearth__jwt_sign_hs256(secret, strlen(secret), claims, &token,
                                         err)
                : hearth__jwt_sign_unsigned(claims, &token, err);
    json_decref(claims);
    if (!rc)
        *out = token;
    return rc;
}

int hearth_token_create_with_key(const char *uid, const char *claims_json,
                                 const char *key_pem, const char *kid,
                                 int64_t ttl_s, char **out, hearth_error_t *err) {
    if (!out || !key_pem)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             out ? "no private key" : "out is NULL");
    *out = NULL;
    json_t *claims;
    int rc = build_claims(uid, claims_json, ttl_s, &claims, err);
    if (rc)
        return rc;
    char *token = NULL;
    rc = hearth__jwt_sign_key(key_pem, kid, claims, &token, err);
    json_decref(claims);
    if (!rc)
        *out = token;
    return rc;
}
