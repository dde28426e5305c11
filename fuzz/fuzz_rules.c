/* fuzz_rules.c - libFuzzer target for the rules expression language
 * (rules/expr.c): any text is refused with a message or parsed, and what
 * parses evaluates (to true or false) against sample data without a
 * crash, a leak or a hang, and traced (each sub-expression's text and
 * value) comes to the same result. */
#include "rules/expr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static hearth_node_t *root, *auth;

static void setup(void) {
    if (root)
        return;
    const char *data = "{\"users\":{\"ada\":{\"name\":\"Ada\",\"age\":36,"
                       "\".priority\":1}},\"n\":3}";
    const char *who = "{\"uid\":\"ada\",\"token\":{\"admin\":true}}";
    if (hearth_node_from_json(data, (size_t)-1, 0, &root, NULL) ||
        hearth_node_from_json(who, (size_t)-1, 0, &auth, NULL))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    hearth__expr *e = NULL;
    hearth_error_t err;
    if (hearth__expr_parse(text, &e, &err) == 0) {
        const char *names[] = {"$user"}, *keys[] = {"ada"};
        hearth__expr_env env = {.auth = auth, .now = 1e12, .root = root,
                                .new_root = root, .path = "/users/ada",
                                .wild_names = names, .wild_keys = keys,
                                .nwild = 1};
        hearth__expr_result res = hearth__expr_result_of(e, &env);
        /* Traced (a denial's trace), the same result, and each value's
         * text within the source. */
        hearth__buf trace;
        hearth__buf_init(&trace);
        if (hearth__expr_trace(e, &env, text, &trace) != res)
            abort();
        hearth__buf_free(&trace);
        hearth__expr_free(e);
    } else if (!err.message[0]) {
        abort(); /* a refusal always says why */
    }
    free(text);
    return 0;
}
