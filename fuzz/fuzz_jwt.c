/* fuzz_jwt.c - libFuzzer target for token verification (rules/jwt.c): any
 * text is refused with a message or yields an auth value with a uid; an
 * unsigned token is accepted only where unsigned tokens are allowed. */
#include "rules/jwt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *token = (const char *)data;
    for (int allow = 0; allow < 2; allow++) {
        hearth__jwt_keys keys = {"fuzz-secret", 11, allow == 1, NULL, NULL};
        hearth_node_t *auth = NULL;
        hearth_error_t err = {0};
        if (hearth__jwt_verify(token, size, &keys, 1.7e12, &auth, &err)) {
            if (!err.message[0])
                abort(); /* a refusal always says why */
            continue;
        }
        if (hearth_node_is_null(hearth_node_child(auth, "uid")))
            abort();
        hearth_node_decref(auth);
    }
    return 0;
}
