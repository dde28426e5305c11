/* fuzz_jwt.c - libFuzzer target for tokens and keys (rules/jwt.c,
 * rules/jwt_keys.c): any text as a token is refused with a message or
 * yields an auth value with a uid (an unsigned token only where unsigned
 * tokens are allowed); the same text as a key file (JWKS, key id map,
 * PEM) is refused with a message or parsed into keys that a token is then
 * checked against. */
#include "rules/jwt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void verify(const char *token, size_t size,
                   const hearth__jwt_keyset *set, bool allow) {
    hearth__jwt_keys keys = {"fuzz-secret", 11, allow, NULL, NULL, set};
    hearth_node_t *auth = NULL;
    hearth_error_t err = {0};
    if (hearth__jwt_verify(token, size, &keys, 1.7e12, &auth, &err)) {
        if (!err.message[0])
            abort(); /* a refusal always says why */
        return;
    }
    if (hearth_node_is_null(hearth_node_child(auth, "uid")))
        abort();
    hearth_node_decref(auth);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    verify(text, size, NULL, false);
    verify(text, size, NULL, true);
    hearth__jwt_keyset *set = NULL;
    hearth_error_t err = {0};
    if (hearth__jwt_keyset_parse(text, size, &set, &err)) {
        if (!err.message[0] || set)
            abort();
        return 0;
    }
    /* An RS256 token (not signed by these keys) against the parsed set. */
    static const char rs256[] =
        "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJhZGEifQ.c2ln";
    verify(rs256, sizeof rs256 - 1, set, false);
    hearth__jwt_keyset_free(set);
    return 0;
}
