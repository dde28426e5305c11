/* fuzz_codec.c - libFuzzer target for the compact binary form of nodes
 * (tree/codec.c), which a client reads back from its cache file: any bytes
 * are refused or decoded; what decodes encodes back to the same bytes. */
#include "tree/codec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hearth_node_t *n = NULL;
    if (hearth__node_decode(data, size, &n))
        return 0;
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__node_encode(n, &b);
    if (b.failed || b.len != size || memcmp(b.data, data, size) != 0)
        abort(); /* one encoding per node */
    hearth__buf_free(&b);
    hearth_node_decref(n);
    return 0;
}
