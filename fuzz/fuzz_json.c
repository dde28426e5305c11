/* fuzz_json.c - libFuzzer target for the JSON-to-node parser and its
 * validation. Whatever the input, it must either give a node that survives
 * a serialize/parse round trip unchanged, or an error code with a message;
 * never a crash, a leak or undefined behaviour. And the direct parser of
 * the usual text (json_parse.c) must agree with the full path through
 * jansson whenever it takes the text. */
#include "hearth.h"
#include "tree/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What the direct parser takes, the jansson path reads the same. */
static void check_direct_agrees(const char *text, size_t size) {
    hearth_node_t *direct = NULL, *full = NULL;
    if (hearth__json_parse_plain(text, size, HEARTH_MAX_DEPTH, &direct))
        return;
    json_t *json;
    if (hearth__json_load(text, size, &json, NULL) ||
        hearth__node_from_jansson_at(json, 0, "", 0, &full, NULL))
        abort(); /* the direct parser took what jansson refuses */
    json_decref(json);
    if (!hearth_node_equal(direct, full))
        abort();
    hearth_node_decref(direct);
    hearth_node_decref(full);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_direct_agrees((const char *)data, size);
    hearth_node_t *node = NULL;
    hearth_error_t err;
    int rc = hearth_node_from_json((const char *)data, size,
                                   HEARTH_JSON_ALLOW_SERVER_VALUES, &node,
                                   &err);
    if (rc) {
        if (rc >= 0 || err.code != rc || !err.message[0])
            abort();
        return 0;
    }
    char hash[HEARTH_HASH_SIZE];
    if (hearth_node_hash(node, hash))
        abort();
    size_t len;
    char *text = hearth_node_to_json(node, HEARTH_JSON_EXPORT, &len);
    if (!text)
        abort();
    hearth_node_t *again = NULL;
    if (hearth_node_from_json(text, len, HEARTH_JSON_ALLOW_SERVER_VALUES,
                              &again, &err) ||
        !hearth_node_equal(node, again))
        abort();
    hearth_free(text);
    hearth_node_decref(again);
    hearth_node_decref(node);
    return 0;
}
