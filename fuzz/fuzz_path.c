/* fuzz_path.c - libFuzzer target for key and path validation, and for
 * writing and reading through a parsed path: a valid path must be usable
 * for a set and a get that agree, an invalid one must be rejected by both
 * with the same code. */
#include "hearth.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *path = malloc(size + 1);
    if (!path)
        return 0;
    memcpy(path, data, size);
    path[size] = '\0';
    hearth_error_t err;
    int valid = hearth_validate_path(path, &err);
    hearth_validate_key(path, &err);
    hearth_node_t *root = hearth_node_null();
    hearth_node_t *leaf = hearth_node_number(7);
    int rc = hearth_node_set(&root, path, leaf, &err);
    const hearth_node_t *read = NULL;
    int rc_get = hearth_node_get(root, path, &read, &err);
    if (rc == 0 && (rc_get != 0 || valid != 0))
        abort();
    if (rc == 0 && strstr(path, ".priority") == NULL &&
        hearth_node_number_value(read) != 7)
        abort();
    hearth_node_decref(leaf);
    hearth_node_decref(root);
    free(path);
    return 0;
}
