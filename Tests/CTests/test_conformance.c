/* test_conformance.c - data shared with other implementations
 * (../shared/conformance): every node-hash vector is built from its export
 * JSON and must hash, with each listed child, to the service's values. The
 * file is read at test time; a missing or malformed file is a failure. */
#include "test.h"

#include <jansson.h>

/* Hashes n (and, for each entry of `children`, that child) against the
 * expected values; returns how many hashes were compared. */
static size_t check_vector(const hearth_node_t *n, const json_t *vec,
                           size_t index, const char *how) {
    const json_t *hash = json_object_get(vec, "hash");
    const json_t *children = json_object_get(vec, "children");
    size_t checked = 0;
    char got[HEARTH_HASH_SIZE];
    CHECK_INT(hearth_node_hash(n, got), 0);
    if (strcmp(got, json_string_value(hash)) != 0) {
        fprintf(stderr, "  vector %zu (%s): hash %s, expected %s\n", index, how,
                got, json_string_value(hash));
        test_failures++;
    }
    checked++;
    const char *key;
    const json_t *want;
    json_object_foreach((json_t *)children, key, want) {
        const hearth_node_t *child = hearth_node_child(n, key);
        CHECK(!hearth_node_is_null(child));
        CHECK_INT(hearth_node_hash(child, got), 0);
        if (!json_is_string(want) || strcmp(got, json_string_value(want)) != 0) {
            fprintf(stderr, "  vector %zu (%s) child \"%s\": hash %s, expected "
                            "%s\n",
                    index, how, key, got,
                    json_is_string(want) ? json_string_value(want) : "?");
            test_failures++;
        }
        checked++;
    }
    return checked;
}

static void test_node_hash_vectors(void) {
    json_t *root = shared_json_array("conformance/node-hash-vectors.json");
    if (!root)
        return;
    size_t vectors = 0, hashes = 0, index;
    json_t *vec;
    json_array_foreach(root, index, vec) {
        const json_t *data = json_object_get(vec, "data");
        const json_t *hash = json_object_get(vec, "hash");
        const json_t *children = json_object_get(vec, "children");
        if (!data || !json_is_string(hash) || !json_is_object(children)) {
            fprintf(stderr, "  vector %zu is malformed\n", index);
            test_failures++;
            continue;
        }
        /* From the jansson value as loaded (integers as integers). */
        hearth_node_t *n = NULL;
        hearth_error_t err;
        int rc = hearth_node_from_jansson(data, 0, &n, &err);
        if (rc) {
            fprintf(stderr, "  vector %zu: %s\n", index, err.message);
            test_failures++;
            continue;
        }
        hashes += check_vector(n, vec, index, "jansson");

        /* From its text, and again from our own export of it: the hash
         * must not depend on the way in. */
        char *dumped = json_dumps(data, JSON_ENCODE_ANY);
        hearth_node_t *from_text = NULL;
        CHECK_INT(hearth_node_from_json(dumped, (size_t)-1, 0, &from_text, &err),
                  0);
        if (from_text) {
            hashes += check_vector(from_text, vec, index, "text");
            CHECK(hearth_node_equal(n, from_text));
            hearth_node_decref(from_text);
        }
        free(dumped);
        char *exported = hearth_node_to_json(n, HEARTH_JSON_EXPORT, NULL);
        hearth_node_t *again = NULL;
        CHECK_INT(hearth_node_from_json(exported, (size_t)-1, 0, &again, &err),
                  0);
        if (again) {
            hashes += check_vector(again, vec, index, "export round trip");
            hearth_node_decref(again);
        }
        hearth_free(exported);

        /* Built up one child at a time (copy-on-write path). */
        hearth_node_t *built = hearth_node_null();
        const char *key;
        const json_t *value;
        if (json_is_object(data)) {
            json_object_foreach((json_t *)data, key, value) {
                hearth_node_t *child = NULL;
                if (strcmp(key, ".priority") == 0) {
                    CHECK_INT(hearth_node_from_jansson(value, 0, &child, NULL),
                              0);
                    CHECK_INT(hearth_node_set(&built, ".priority", child, NULL),
                              0);
                    hearth_node_decref(child);
                    continue;
                }
                CHECK_INT(hearth_node_from_jansson(value, 0, &child, NULL), 0);
                CHECK_INT(hearth_node_set_child_new(&built, key, child, NULL),
                          0);
            }
            /* A priority set before the first child was dropped (null has
             * none): set it again now that the node exists. */
            const json_t *prio = json_object_get(data, ".priority");
            if (prio) {
                hearth_node_t *p = NULL;
                CHECK_INT(hearth_node_from_jansson(prio, 0, &p, NULL), 0);
                CHECK_INT(hearth_node_set(&built, ".priority", p, NULL), 0);
                hearth_node_decref(p);
            }
            hashes += check_vector(built, vec, index, "built");
            CHECK(hearth_node_equal(n, built));
        }
        hearth_node_decref(built);
        hearth_node_decref(n);
        vectors++;
    }
    printf("  conformance: %zu node-hash vectors, %zu hashes checked\n",
           vectors, hashes);
    CHECK_INT(vectors, json_array_size(root));
    CHECK(hashes > vectors);
    json_decref(root);
}

const test_case conformance_tests[] = {
    {"conformance_node_hash_vectors", test_node_hash_vectors},
    {NULL, NULL},
};
