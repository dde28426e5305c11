/* test_node.c - nodes (tree/node.c): constructors and accessors, updates
 * by path, priorities, copy-on-write against held snapshots (including a
 * random differential run), equality, the depth limit, self-insertion,
 * value order, server-value resolution, and allocation failures; the node
 * hash text (tree/hash.c) and push IDs (tree/pushid.c). */
#include "test_tree.h"

#include <math.h>
#include <openssl/evp.h>

/* ------------------------------------------------------------------------ */
/* Nodes                                                                    */

static char *plain_json(const hearth_node_t *n) {
    return hearth_node_to_json(n, 0, NULL);
}
#define CHECK_PLAIN(n, expected)                                               \
    do {                                                                       \
        char *p_ = plain_json(n);                                              \
        CHECK_STR(p_, expected);                                               \
        free(p_);                                                              \
    } while (0)

/* Every object's summaries (depth, children with priority, server-value
 * flag) agree with its children, and every tree passes its check. */
static bool summaries_ok(const hearth_node_t *n) {
    if (n->priority &&
        (n->priority->priority || (n->priority->type != HEARTH_TYPE_NUMBER &&
                                   n->priority->type != HEARTH_TYPE_STRING)))
        return false;
    if (n->type != HEARTH_TYPE_OBJECT)
        return hearth__node_depth(n) == 0 &&
               (n->type != HEARTH_TYPE_NULL || !n->priority);
    if (!n->u.obj.tree || !hearth__bt_check(n->u.obj.tree))
        return false;
    int depth = 0;
    uint32_t prios = 0;
    bool sv = false;
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, n->u.obj.tree, 0);
    for (const hearth__entry *e; (e = hearth__bt_iter_next(&it));) {
        if (hearth__node_is_empty(e->node) || !summaries_ok(e->node))
            return false;
        if (hearth__node_depth(e->node) > depth)
            depth = hearth__node_depth(e->node);
        prios += e->node->priority != NULL;
        sv = sv || hearth__node_has_sv(e->node);
    }
    return hearth__node_depth(n) == depth + 1 &&
           n->u.obj.prio_children == prios &&
           (!sv || (n->flags & HEARTH__HAS_SERVER_VALUES));
}

/* n agrees with a node freshly parsed from its export text: equal, same
 * hash (so no stale cached hash), same summaries. */
static void check_consistent(const hearth_node_t *n, int line) {
    char *text = to_json(n);
    hearth_node_t *fresh = node_from(text);
    char h1[HEARTH_HASH_SIZE], h2[HEARTH_HASH_SIZE];
    CHECK_INT(hearth_node_hash(n, h1), 0);
    CHECK_INT(hearth_node_hash(fresh, h2), 0);
    if (!summaries_ok(n) || !hearth_node_equal(n, fresh) ||
        strcmp(h1, h2) != 0 ||
        hearth__node_depth(n) != hearth__node_depth(fresh)) {
        fprintf(stderr, "  test_tree.c:%d: node %s is inconsistent\n", line,
                text);
        test_failures++;
    }
    hearth_node_decref(fresh);
    free(text);
}
#define CHECK_CONSISTENT(n) check_consistent(n, __LINE__)

static void set_ok(hearth_node_t **n, const char *path, const char *json,
                   int line) {
    hearth_node_t *v = node_from(json);
    hearth_error_t err;
    int rc = hearth_node_set(n, path, v, &err);
    if (rc) {
        fprintf(stderr, "  test_tree.c:%d: set(%s, %s): %s\n", line, path,
                json, err.message);
        test_failures++;
    }
    hearth_node_decref(v);
}
#define SET(n, path, json) set_ok(&(n), path, json, __LINE__)

static void test_node_constructors(void) {
    hearth_node_t *null1 = hearth_node_null(), *null2 = hearth_node_null();
    CHECK(null1 && null1 == null2);
    CHECK_INT(hearth_node_type(null1), HEARTH_TYPE_NULL);
    CHECK(hearth_node_is_null(null1));
    CHECK(hearth_node_is_null(hearth_node_priority(null1)));
    for (int i = 0; i < 1000; i++)
        hearth_node_decref(hearth_node_incref(null1));
    hearth_node_decref(null1);
    hearth_node_decref(null2);
    hearth_node_decref(NULL);

    hearth_node_t *t = hearth_node_boolean(true), *f = hearth_node_boolean(false);
    CHECK_INT(hearth_node_type(t), HEARTH_TYPE_BOOLEAN);
    CHECK(hearth_node_boolean_value(t));
    CHECK(!hearth_node_boolean_value(f));
    CHECK(!hearth_node_is_null(t));
    CHECK_PLAIN(t, "true");
    CHECK_PLAIN(f, "false");

    hearth_node_t *num = hearth_node_number(-2.5);
    CHECK_INT(hearth_node_type(num), HEARTH_TYPE_NUMBER);
    CHECK(hearth_node_number_value(num) == -2.5);
    CHECK(hearth_node_number(NAN) == NULL);
    CHECK(hearth_node_number(INFINITY) == NULL);
    CHECK(hearth_node_number(-INFINITY) == NULL);
    hearth_node_t *big = hearth_node_number(1.7976931348623157e308);
    CHECK(big && hearth_node_number_value(big) == 1.7976931348623157e308);

    size_t len = 0;
    hearth_node_t *s = hearth_node_string("a\0b\xC3\xA9", 5);
    CHECK_INT(hearth_node_type(s), HEARTH_TYPE_STRING);
    const char *sv = hearth_node_string_value(s, &len);
    CHECK_INT(len, 5);
    CHECK(sv && memcmp(sv, "a\0b\xC3\xA9", 6) == 0); /* NUL-terminated */
    CHECK(hearth_node_string_value(s, NULL) == sv);
    hearth_node_t *empty_str = hearth_node_string("", 0);
    CHECK(empty_str && !hearth_node_is_null(empty_str));
    CHECK_PLAIN(empty_str, "\"\"");
    hearth_node_t *empty_null = hearth_node_string(NULL, 0); /* no bytes */
    CHECK(empty_null && hearth_node_equal(empty_null, empty_str));
    hearth_node_decref(empty_null);
    CHECK(hearth_node_string("\xC3", 1) == NULL);
    CHECK(hearth_node_string("\xED\xA0\x80", 3) == NULL);
    char *ten = malloc(HEARTH_MAX_STRING_BYTES + 1);
    memset(ten, 'x', HEARTH_MAX_STRING_BYTES + 1);
    hearth_node_t *max = hearth_node_string(ten, HEARTH_MAX_STRING_BYTES);
    CHECK(max != NULL);
    CHECK(hearth_node_string(ten, HEARTH_MAX_STRING_BYTES + 1) == NULL);
    free(ten);

    hearth_node_t *ts = hearth_node_server_timestamp();
    hearth_node_t *inc = hearth_node_server_increment(2);
    CHECK_INT(hearth_node_type(ts), HEARTH_TYPE_SERVER_VALUE);
    CHECK_INT(hearth_node_type(inc), HEARTH_TYPE_SERVER_VALUE);
    CHECK(hearth_node_server_increment(NAN) == NULL);
    CHECK(hearth_node_server_increment(INFINITY) == NULL);
    CHECK_PLAIN(ts, "{\".sv\":\"timestamp\"}");
    CHECK_PLAIN(inc, "{\".sv\":{\"increment\":2}}");
    CHECK(!hearth_node_equal(ts, inc));

    /* Accessors of the wrong type answer neutrally. */
    CHECK(!hearth_node_boolean_value(num));
    CHECK(hearth_node_number_value(s) == 0);
    CHECK(hearth_node_number_value(ts) == 0);
    CHECK(hearth_node_string_value(num, &len) == NULL);
    CHECK_INT(hearth_node_child_count(s), 0);
    CHECK(hearth_node_is_null(hearth_node_child(s, "a")));
    CHECK(hearth_node_child_at(num, 0, NULL) == NULL);
    CHECK(hearth_node_is_null(hearth_node_priority(num)));

    hearth_node_t *all[] = {t, f, num, big, s, empty_str, max, ts, inc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        CHECK(hearth_node_incref(all[i]) == all[i]);
        hearth_node_decref(all[i]);
        hearth_node_decref(all[i]);
    }
}

static int stop_at_third(const char *key, const hearth_node_t *child,
                         void *ctx) {
    (void)key;
    (void)child;
    int *calls = ctx;
    return ++*calls == 3 ? 77 : 0;
}

static void test_node_accessors(void) {
    hearth_node_t *n = node_from("{\"b\":2,\"a\":{\"x\":{\"y\":true}},\"10\":3,"
                                 "\"2\":{\".value\":4,\".priority\":1}}");
    CHECK_INT(hearth_node_type(n), HEARTH_TYPE_OBJECT);
    CHECK_INT(hearth_node_child_count(n), 4);
    const char *order[] = {"2", "10", "a", "b"};
    for (size_t i = 0; i < 4; i++) {
        const char *key = NULL;
        const hearth_node_t *c = hearth_node_child_at(n, i, &key);
        CHECK(c != NULL);
        CHECK_STR(key, order[i]);
        CHECK(c == hearth_node_child(n, order[i]));
    }
    CHECK(hearth_node_child_at(n, 4, NULL) == NULL);
    CHECK(hearth_node_child_at(n, (size_t)-1, NULL) == NULL);
    CHECK(hearth_node_child_at(n, 0, NULL) != NULL);
    CHECK(hearth_node_is_null(hearth_node_child(n, "c")));
    CHECK(hearth_node_is_null(hearth_node_child(n, "")));
    CHECK(hearth_node_number_value(hearth_node_child(n, "10")) == 3);
    CHECK(hearth_node_number_value(
              hearth_node_priority(hearth_node_child(n, "2"))) == 1);

    char keys[64] = "";
    CHECK_INT(hearth_node_foreach_child(n, join_keys, keys), 0);
    CHECK_STR(keys, "2 10 a b");
    int calls = 0;
    CHECK_INT(hearth_node_foreach_child(n, stop_at_third, &calls), 77);
    CHECK_INT(calls, 3);
    calls = 0;
    hearth_node_t *leaf = hearth_node_number(1);
    CHECK_INT(hearth_node_foreach_child(leaf, stop_at_third, &calls), 0);
    CHECK_INT(calls, 0);

    const hearth_node_t *out = NULL;
    CHECK_INT(hearth_node_get(n, "", &out, NULL), 0);
    CHECK(out == n);
    CHECK_INT(hearth_node_get(n, "/a/x/y/", &out, NULL), 0);
    CHECK(out && hearth_node_boolean_value(out));
    CHECK_INT(hearth_node_get(n, "a//x", &out, NULL), 0);
    CHECK(out == hearth_node_child(hearth_node_child(n, "a"), "x"));
    CHECK_INT(hearth_node_get(n, "a/missing/deeper", &out, NULL), 0);
    CHECK(out && hearth_node_is_null(out));
    CHECK_INT(hearth_node_get(n, "b/through/leaf", &out, NULL), 0);
    CHECK(out && hearth_node_is_null(out));
    CHECK_INT(hearth_node_get(n, "2/.priority", &out, NULL), 0);
    CHECK(out && hearth_node_number_value(out) == 1);
    CHECK_INT(hearth_node_get(n, "b/.priority", &out, NULL), 0);
    CHECK(out && hearth_node_is_null(out));
    /* A bad path writes nothing. */
    const hearth_node_t *untouched = leaf;
    hearth_error_t err;
    CHECK_INT(hearth_node_get(n, "a/b.c", &untouched, &err), HEARTH_EPATH);
    CHECK(untouched == leaf);
    CHECK(strstr(err.message, "a/b.c") != NULL);
    CHECK_INT(hearth_node_get(n, "a/.priority/x", &untouched, NULL),
              HEARTH_EPATH);
    CHECK(untouched == leaf);
    hearth_node_decref(leaf);
    hearth_node_decref(n);
}

static void test_node_set_paths(void) {
    hearth_node_t *n = hearth_node_null();
    SET(n, "a/b/c", "1");
    CHECK_JSON(n, "{\"a\":{\"b\":{\"c\":1}}}");
    CHECK_INT(hearth__node_depth(n), 3);
    SET(n, "/a//b/d/", "2");
    CHECK_JSON(n, "{\"a\":{\"b\":{\"c\":1,\"d\":2}}}");
    SET(n, "a/e", "{\"f\":[1,2]}");
    CHECK_JSON(n, "{\"a\":{\"b\":{\"c\":1,\"d\":2},\"e\":{\"f\":{\"0\":1,"
                  "\"1\":2}}}}");
    CHECK_CONSISTENT(n);
    /* Deleting with null collapses emptied parents, all the way up. */
    SET(n, "a/b/c", "null");
    CHECK_JSON(n, "{\"a\":{\"b\":{\"d\":2},\"e\":{\"f\":{\"0\":1,\"1\":2}}}}");
    SET(n, "a/e/f/0", "null");
    SET(n, "a/e/f/1", "null");
    CHECK_JSON(n, "{\"a\":{\"b\":{\"d\":2}}}");
    CHECK_INT(hearth__node_depth(n), 3);
    CHECK_CONSISTENT(n);
    SET(n, "a/b/d", "null");
    CHECK(hearth_node_is_null(n));
    /* Deleting what is not there changes nothing. */
    SET(n, "x/y", "null");
    CHECK(hearth_node_is_null(n));
    SET(n, "k", "{}"); /* an empty object is null */
    CHECK(hearth_node_is_null(n));

    /* A leaf in the way becomes an object; an object replaced by a leaf. */
    SET(n, "a", "5");
    SET(n, "a/b", "true");
    CHECK_JSON(n, "{\"a\":{\"b\":true}}");
    SET(n, "a", "\"s\"");
    CHECK_JSON(n, "{\"a\":\"s\"}");
    SET(n, "a/b/c", "null"); /* deleting below a leaf: nothing */
    CHECK_JSON(n, "{\"a\":\"s\"}");
    /* The root itself. */
    SET(n, "", "{\"r\":1}");
    CHECK_JSON(n, "{\"r\":1}");
    SET(n, "/", "7");
    CHECK_JSON(n, "7");
    SET(n, "", "null");
    CHECK(hearth_node_is_null(n));

    /* Bad paths change nothing. */
    SET(n, "a", "1");
    hearth_node_t *before = n;
    hearth_node_t *v = hearth_node_number(2);
    hearth_error_t err;
    CHECK_INT(hearth_node_set(&n, "a/b#", v, &err), HEARTH_EPATH);
    CHECK(strstr(err.message, "b#") != NULL);
    CHECK_INT(hearth_node_set(&n, ".info/x", v, &err), HEARTH_EPATH);
    CHECK_INT(hearth_node_set(&n, "a/.priority/b", v, &err), HEARTH_EPATH);
    CHECK(n == before);
    CHECK_JSON(n, "{\"a\":1}");
    hearth_node_decref(v);
    hearth_node_decref(n);
}

static void test_node_priority_paths(void) {
    hearth_node_t *n = node_from("{\"a\":1,\"b\":{\"c\":2}}");
    SET(n, "a/.priority", "5");
    CHECK_JSON(n, "{\"a\":{\".value\":1,\".priority\":5},\"b\":{\"c\":2}}");
    SET(n, "b/.priority", "\"p\"");
    CHECK_JSON(n, "{\"a\":{\".value\":1,\".priority\":5},\"b\":{\"c\":2,"
                  "\".priority\":\"p\"}}");
    SET(n, ".priority", "1.5");
    CHECK_JSON(n, "{\"a\":{\".value\":1,\".priority\":5},\"b\":{\"c\":2,"
                  "\".priority\":\"p\"},\".priority\":1.5}");
    CHECK(hearth_node_number_value(hearth_node_priority(n)) == 1.5);
    CHECK_CONSISTENT(n);
    /* Plain output drops priorities. */
    CHECK_PLAIN(n, "{\"a\":1,\"b\":{\"c\":2}}");

    /* A priority on nothing is nothing. */
    SET(n, "zz/.priority", "3");
    CHECK(hearth_node_is_null(hearth_node_child(n, "zz")));

    /* Leaf replaced by an object (by writing below it) keeps its priority. */
    SET(n, "a/x", "9");
    CHECK_JSON(n, "{\"a\":{\"x\":9,\".priority\":5},\"b\":{\"c\":2,"
                  "\".priority\":\"p\"},\".priority\":1.5}");
    /* Writing the node itself replaces the priority with the value's. */
    SET(n, "a", "{\"y\":1}");
    CHECK(hearth_node_is_null(hearth_node_priority(hearth_node_child(n, "a"))));
    SET(n, "a", "{\".value\":3,\".priority\":\"q\"}");
    CHECK_JSON(hearth_node_child(n, "a"), "{\".value\":3,\".priority\":\"q\"}");
    /* Changing a leaf's value through its parent keeps no old priority. */
    SET(n, "a", "4");
    CHECK_JSON(hearth_node_child(n, "a"), "4");
    /* An object emptied loses its priority. */
    SET(n, "b/c", "null");
    CHECK(hearth_node_is_null(hearth_node_child(n, "b")));
    SET(n, "b/d", "1");
    CHECK_JSON(hearth_node_child(n, "b"), "{\"d\":1}");
    /* null removes a priority. */
    SET(n, ".priority", "null");
    CHECK(hearth_node_is_null(hearth_node_priority(n)));
    CHECK_CONSISTENT(n);

    /* Invalid priorities are refused and change nothing. */
    const char *bad[] = {"true", "{\"x\":1}", "{\".value\":1,\".priority\":2}",
                         "{\".sv\":\"timestamp\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hearth_node_t *before = n;
        char *text = to_json(n);
        hearth_node_t *p = node_from(bad[i]);
        hearth_error_t err;
        CHECK_INT(hearth_node_set(&n, "b/.priority", p, &err),
                  HEARTH_EPRIORITY);
        CHECK_INT(err.code, HEARTH_EPRIORITY);
        CHECK(n == before);
        CHECK_JSON(n, text);
        free(text);
        hearth_node_decref(p);
    }
    hearth_node_decref(n);
}

static void test_node_with_priority(void) {
    hearth_node_t *leaf = node_from("\"v\"");
    hearth_node_t *obj = node_from("{\"a\":1}");
    hearth_node_t *p = hearth_node_number(3), *q = node_from("\"s\"");
    hearth_node_t *null = hearth_node_null(), *out = NULL;
    CHECK_INT(hearth_node_with_priority(leaf, p, &out, NULL), 0);
    CHECK_JSON(out, "{\".value\":\"v\",\".priority\":3}");
    CHECK_JSON(leaf, "\"v\""); /* the original is untouched */
    hearth_node_t *out2 = NULL;
    CHECK_INT(hearth_node_with_priority(out, null, &out2, NULL), 0);
    CHECK_JSON(out2, "\"v\"");
    CHECK(hearth_node_equal(out2, leaf));
    hearth_node_decref(out);
    hearth_node_decref(out2);
    CHECK_INT(hearth_node_with_priority(obj, q, &out, NULL), 0);
    CHECK_JSON(out, "{\"a\":1,\".priority\":\"s\"}");
    CHECK_JSON(obj, "{\"a\":1}");
    hearth_node_decref(out);
    /* Every leaf type can carry a priority. */
    const char *leaves[] = {"true", "false", "0", "-1.5", "\"\"",
                            "{\".sv\":\"timestamp\"}"};
    for (size_t i = 0; i < sizeof leaves / sizeof leaves[0]; i++) {
        hearth_node_t *l = node_from(leaves[i]);
        CHECK_INT(hearth_node_with_priority(l, p, &out, NULL), 0);
        CHECK(hearth_node_number_value(hearth_node_priority(out)) == 3);
        CHECK_INT(hearth_node_type(out), hearth_node_type(l));
        hearth_node_t *plain = NULL;
        CHECK_INT(hearth_node_with_priority(out, null, &plain, NULL), 0);
        CHECK(hearth_node_equal(plain, l));
        hearth_node_decref(plain);
        hearth_node_decref(out);
        hearth_node_decref(l);
    }
    /* null stays null. */
    CHECK_INT(hearth_node_with_priority(null, p, &out, NULL), 0);
    CHECK(hearth_node_is_null(out));
    hearth_node_decref(out);
    /* Bad priorities. */
    hearth_node_t *b = hearth_node_boolean(true);
    out = leaf;
    hearth_error_t err;
    CHECK_INT(hearth_node_with_priority(leaf, b, &out, &err), HEARTH_EPRIORITY);
    CHECK_INT(hearth_node_with_priority(leaf, obj, &out, &err),
              HEARTH_EPRIORITY);
    CHECK(out == leaf);
    hearth_node_t *pp = NULL;
    CHECK_INT(hearth_node_with_priority(p, q, &pp, NULL), 0); /* 3 with prio */
    CHECK_INT(hearth_node_with_priority(leaf, pp, &out, &err),
              HEARTH_EPRIORITY);
    CHECK(out == leaf);
    hearth_node_t *nodes[] = {leaf, obj, p, q, null, b, pp};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        hearth_node_decref(nodes[i]);
}

static void test_node_copy_on_write(void) {
    hearth_node_t *n = node_from("{\"a\":{\"b\":1,\"c\":{\"d\":2}},\"e\":3}");
    /* Held alone: edited in place, down the path. */
    hearth_node_t *root = n;
    const hearth_node_t *a = hearth_node_child(n, "a");
    const hearth_node_t *c = hearth_node_child(a, "c");
    SET(n, "a/c/d", "5");
    CHECK(n == root);
    CHECK(hearth_node_child(n, "a") == a);
    CHECK(hearth_node_child(a, "c") == c);
    CHECK_JSON(n, "{\"a\":{\"b\":1,\"c\":{\"d\":5}},\"e\":3}");

    /* A snapshot of the root is never changed. */
    hearth_node_t *snap = hearth_node_incref(n);
    char *snap_text = to_json(snap);
    char snap_hash[HEARTH_HASH_SIZE];
    hearth_node_hash(snap, snap_hash);
    SET(n, "a/c/d", "6");
    CHECK(n != snap);
    CHECK_JSON(snap, snap_text);
    CHECK_JSON(n, "{\"a\":{\"b\":1,\"c\":{\"d\":6}},\"e\":3}");
    /* Untouched subtrees are shared, not copied. */
    CHECK(hearth_node_child(n, "e") == hearth_node_child(snap, "e"));
    /* Now n's new path is its own again: in place once more. */
    root = n;
    a = hearth_node_child(n, "a");
    SET(n, "a/c/d", "7");
    CHECK(n == root && hearth_node_child(n, "a") == a);
    /* ... but "a/b" and "e" are still shared with snap. */
    SET(n, "a/b", "8");
    SET(n, "e", "9");
    CHECK_JSON(snap, snap_text);
    char h[HEARTH_HASH_SIZE];
    hearth_node_hash(snap, h);
    CHECK_STR(h, snap_hash);

    /* A snapshot of an inner node. */
    hearth_node_t *inner = hearth_node_incref(hearth_node_child(n, "a"));
    char *inner_text = to_json(inner);
    SET(n, "a/c/x", "1");
    SET(n, "a/b", "null");
    SET(n, "a/.priority", "4");
    CHECK_JSON(inner, inner_text);
    CHECK_JSON(n, "{\"a\":{\"c\":{\"d\":7,\"x\":1},\".priority\":4},\"e\":9}");
    CHECK_CONSISTENT(n);
    hearth_node_decref(inner);
    free(inner_text);

    /* Many children (a multi-level tree) and many snapshots. */
    hearth_node_t *big = hearth_node_null();
    for (int i = 0; i < 1000; i++) {
        char path[32], val[32];
        snprintf(path, sizeof path, "k%d/v", i);
        snprintf(val, sizeof val, "%d", i);
        SET(big, path, val);
    }
    hearth_node_t *snaps[5];
    char *texts[5];
    for (int s = 0; s < 5; s++) {
        snaps[s] = hearth_node_incref(big);
        texts[s] = to_json(big);
        for (int i = 0; i < 300; i++) {
            char path[32];
            int k = (int)(rng() % 1200);
            snprintf(path, sizeof path, "k%d%s", k, rng() % 2 ? "/v" : "/w");
            SET(big, path, rng() % 4 ? "1" : "null");
        }
    }
    for (int s = 0; s < 5; s++) {
        CHECK_JSON(snaps[s], texts[s]);
        CHECK_CONSISTENT(snaps[s]);
        hearth_node_decref(snaps[s]);
        free(texts[s]);
    }
    CHECK_CONSISTENT(big);
    hearth_node_decref(big);

    hearth_node_decref(snap);
    free(snap_text);
    hearth_node_decref(n);
}

/* Cached hashes, depths and priority counts follow in-place edits. */
static void test_node_in_place_summaries(void) {
    hearth_node_t *n = node_from("{\"a\":{\"b\":{\"c\":1}},\"x\":1}");
    char h[HEARTH_HASH_SIZE];
    hearth_node_hash(n, h); /* caches hashes at every level */
    SET(n, "a/b/c", "2");
    CHECK_CONSISTENT(n);
    hearth_node_hash(n, h);
    SET(n, "a/b/.priority", "1");
    CHECK_CONSISTENT(n);
    hearth_node_hash(n, h);
    SET(n, "a/b/c/.priority", "\"z\"");
    CHECK_CONSISTENT(n);
    hearth_node_hash(n, h);
    SET(n, "a/b/c/.priority", "null");
    SET(n, "a/b/.priority", "null");
    CHECK_CONSISTENT(n);
    /* Depth grows and shrinks. */
    SET(n, "a/b/d/e/f/g", "1");
    CHECK_INT(hearth__node_depth(n), 6);
    CHECK_CONSISTENT(n);
    SET(n, "a/b/d", "null");
    CHECK_INT(hearth__node_depth(n), 3);
    CHECK_CONSISTENT(n);
    SET(n, "a", "null");
    CHECK_INT(hearth__node_depth(n), 1);
    CHECK_CONSISTENT(n);
    /* Server values below are remembered. */
    SET(n, "s/t", "{\".sv\":\"timestamp\"}");
    CHECK(hearth__node_has_sv(n));
    CHECK_CONSISTENT(n);
    hearth_node_decref(n);
}

/* Writing a node into itself (or below itself) must copy, never make a
 * cycle: nodes are values. */
static void test_node_self_reference(void) {
    hearth_node_t *n = node_from("{\"a\":1}");
    hearth_error_t err;
    CHECK_INT(hearth_node_set(&n, "copy", n, &err), 0);
    CHECK_JSON(n, "{\"a\":1,\"copy\":{\"a\":1}}");
    CHECK_INT(hearth_node_set(&n, "x/y/z", n, &err), 0);
    CHECK_JSON(n, "{\"a\":1,\"copy\":{\"a\":1},\"x\":{\"y\":{\"z\":{\"a\":1,"
                  "\"copy\":{\"a\":1}}}}}");
    CHECK_CONSISTENT(n);
    hearth_node_decref(n);

    /* A child written below itself. */
    n = node_from("{\"a\":{\"b\":1}}");
    const hearth_node_t *a = hearth_node_child(n, "a");
    CHECK_INT(hearth_node_set(&n, "a/c", a, &err), 0);
    CHECK_JSON(n, "{\"a\":{\"b\":1,\"c\":{\"b\":1}}}");
    CHECK_CONSISTENT(n);
    a = hearth_node_child(n, "a");
    CHECK_INT(hearth_node_set(&n, "a/c/d/e", a, &err), 0);
    CHECK_JSON(n, "{\"a\":{\"b\":1,\"c\":{\"b\":1,\"d\":{\"e\":{\"b\":1,"
                  "\"c\":{\"b\":1}}}}}}");
    CHECK_CONSISTENT(n);
    /* The root written at a child of itself through set_child_new. */
    CHECK_INT(hearth_node_set_child_new(&n, "self", hearth_node_incref(n),
                                        &err),
              0);
    CHECK_CONSISTENT(n);
    CHECK(hearth_node_equal(hearth_node_child(n, "a"),
                            hearth_node_child(hearth_node_child(n, "self"),
                                              "a")));
    /* A node replaced by its own child. */
    CHECK_INT(hearth_node_set(&n, "", hearth_node_child(n, "a"), &err), 0);
    CHECK_JSON(n, "{\"b\":1,\"c\":{\"b\":1,\"d\":{\"e\":{\"b\":1,\"c\":{"
                  "\"b\":1}}}}}");
    /* A priority from inside the tree. */
    SET(n, "c/.priority", "2");
    CHECK_INT(hearth_node_set(&n, ".priority",
                              hearth_node_priority(hearth_node_child(n, "c")),
                              &err),
              0);
    CHECK(hearth_node_number_value(hearth_node_priority(n)) == 2);
    CHECK_INT(hearth_node_set(&n, "c/.priority", hearth_node_priority(n), &err),
              0);
    CHECK_CONSISTENT(n);
    hearth_node_decref(n);
}

static void test_node_set_child_new(void) {
    hearth_node_t *n = hearth_node_null();
    hearth_error_t err;
    CHECK_INT(hearth_node_set_child_new(&n, "b", hearth_node_number(2), &err),
              0);
    CHECK_INT(hearth_node_set_child_new(&n, "a", node_from("{\"x\":1}"), &err),
              0);
    CHECK_INT(hearth_node_set_child_new(&n, "10", hearth_node_boolean(false),
                                        &err),
              0);
    CHECK_JSON(n, "{\"10\":false,\"a\":{\"x\":1},\"b\":2}");
    /* Replace, then remove with null. */
    CHECK_INT(hearth_node_set_child_new(&n, "b", node_from("\"two\""), &err),
              0);
    CHECK_INT(hearth_node_set_child_new(&n, "10", hearth_node_null(), &err), 0);
    CHECK_JSON(n, "{\"a\":{\"x\":1},\"b\":\"two\"}");
    /* The value is taken also on failure (LSan would see a leak). */
    hearth_node_t *before = n;
    CHECK_INT(hearth_node_set_child_new(&n, "a.b", hearth_node_number(1), &err),
              HEARTH_EKEY);
    CHECK(strstr(err.message, "a.b") != NULL);
    CHECK_INT(hearth_node_set_child_new(&n, "", hearth_node_number(1), &err),
              HEARTH_EKEY);
    CHECK_INT(hearth_node_set_child_new(&n, ".priority", hearth_node_number(1),
                                        &err),
              HEARTH_EKEY);
    CHECK_INT(hearth_node_set_child_new(&n, "a", NULL, &err), HEARTH_EINVAL);
    CHECK(n == before);
    CHECK_JSON(n, "{\"a\":{\"x\":1},\"b\":\"two\"}");
    /* Depth: a child of depth 31 fits, 32 does not. */
    hearth_node_t *deep = hearth_node_number(1);
    for (int i = 0; i < 31; i++) {
        hearth_node_t *wrap = hearth_node_null();
        CHECK_INT(hearth_node_set_child_new(&wrap, "d", deep, NULL), 0);
        deep = wrap;
    }
    CHECK_INT(hearth__node_depth(deep), 31);
    CHECK_INT(hearth_node_set_child_new(&n, "deep", hearth_node_incref(deep),
                                        &err),
              0);
    CHECK_INT(hearth__node_depth(n), 32);
    hearth_node_t *deeper = hearth_node_null();
    CHECK_INT(hearth_node_set_child_new(&deeper, "d", deep, NULL), 0);
    CHECK_INT(hearth__node_depth(deeper), 32);
    before = n;
    CHECK_INT(hearth_node_set_child_new(&n, "deeper", deeper, &err),
              HEARTH_EDEPTH);
    CHECK_INT(err.code, HEARTH_EDEPTH);
    CHECK(n == before);
    CHECK(hearth_node_is_null(hearth_node_child(n, "deeper")));
    /* On a leaf: the leaf becomes an object, keeping its priority. */
    hearth_node_t *leaf = node_from("{\".value\":1,\".priority\":2}");
    CHECK_INT(hearth_node_set_child_new(&leaf, "k", hearth_node_number(3), &err),
              0);
    CHECK_JSON(leaf, "{\"k\":3,\".priority\":2}");
    hearth_node_decref(leaf);
    CHECK_CONSISTENT(n);
    hearth_node_decref(n);
}

static void test_node_equal(void) {
    static const char *const equal[][2] = {
        {"{\"a\":1,\"b\":[1,2]}", "{\"b\":{\"1\":2,\"0\":1},\"a\":1.0}"},
        {"null", "{}"},
        {"{\"a\":{}}", "null"},
        {"{\"a\":{\".value\":1,\".priority\":\"p\"}}",
         "{\"a\":{\".priority\":\"p\",\".value\":1}}"},
        {"{\".sv\":\"timestamp\"}", "{\".sv\":\"timestamp\"}"},
        {"{\".sv\":{\"increment\":2}}", "{\".sv\":{\"increment\":2.0}}"},
        {"\"\xE2\x9C\x94\"", "\"\\u2714\""},
    };
    for (size_t i = 0; i < sizeof equal / sizeof equal[0]; i++) {
        hearth_node_t *a = node_from(equal[i][0]), *b = node_from(equal[i][1]);
        if (!hearth_node_equal(a, b) || !hearth_node_equal(b, a)) {
            fprintf(stderr, "  %s != %s\n", equal[i][0], equal[i][1]);
            test_failures++;
        }
        CHECK(hearth_node_equal(a, a));
        hearth_node_decref(a);
        hearth_node_decref(b);
    }
    static const char *const differ[] = {
        "null",
        "true",
        "false",
        "0",
        "1",
        "\"1\"",
        "\"a\"",
        "\"a\\u0000\"",
        "{\"a\":1}",
        "{\"a\":2}",
        "{\"b\":1}",
        "{\"a\":1,\"b\":1}",
        "{\"a\":1,\"c\":1}",
        "{\"a\":{\"b\":1}}",
        "{\"a\":{\"b\":2}}",
        "{\"a\":{\".value\":1,\".priority\":1}}",
        "{\"a\":{\".value\":1,\".priority\":\"1\"}}",
        "{\"a\":1,\".priority\":1}",
        "{\".value\":true,\".priority\":1}",
        "{\".sv\":\"timestamp\"}",
        "{\".sv\":{\"increment\":0}}",
        "{\".sv\":{\"increment\":1}}",
    };
    size_t n = sizeof differ / sizeof differ[0];
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            hearth_node_t *a = node_from(differ[i]), *b = node_from(differ[j]);
            if (hearth_node_equal(a, b) != (i == j)) {
                fprintf(stderr, "  equal(%s, %s) is wrong\n", differ[i],
                        differ[j]);
                test_failures++;
            }
            hearth_node_decref(a);
            hearth_node_decref(b);
        }
    }
}

static void test_node_depth_limit(void) {
    char path[32 * 4 + 16];
    size_t used = 0;
    for (int i = 0; i < 33; i++)
        used += (size_t)snprintf(path + used, sizeof path - used, "%sk%d",
                                 i ? "/" : "", i);
    /* path has 33 keys; cut it to 32. */
    char *cut = strrchr(path, '/');
    hearth_node_t *n = hearth_node_null(), *one = hearth_node_number(1);
    hearth_error_t err;
    CHECK_INT(hearth_node_set(&n, path, one, &err), HEARTH_EDEPTH);
    CHECK(hearth_node_is_null(n));
    *cut = '\0';
    CHECK_INT(hearth_node_set(&n, path, one, &err), 0);
    CHECK_INT(hearth__node_depth(n), 32);
    CHECK_CONSISTENT(n);
    /* A priority at the deepest place is fine. */
    char prio_path[sizeof path + 16];
    snprintf(prio_path, sizeof prio_path, "%s/.priority", path);
    CHECK_INT(hearth_node_set(&n, prio_path, one, &err), 0);
    /* A value of depth 2 at 31 keys would reach 33. */
    *strrchr(path, '/') = '\0';
    hearth_node_t *two = node_from("{\"x\":{\"y\":1}}");
    hearth_node_t *before = n;
    char *text = to_json(n);
    CHECK_INT(hearth_node_set(&n, path, two, &err), HEARTH_EDEPTH);
    CHECK_INT(err.code, HEARTH_EDEPTH);
    CHECK(strstr(err.message, "k30") != NULL);
    CHECK(n == before);
    CHECK_JSON(n, text);
    /* ... at 30 keys it just fits. */
    *strrchr(path, '/') = '\0';
    CHECK_INT(hearth_node_set(&n, path, two, &err), 0);
    CHECK_INT(hearth__node_depth(n), 32);
    CHECK_CONSISTENT(n);
    free(text);
    hearth_node_decref(two);
    hearth_node_decref(one);
    hearth_node_decref(n);
}

/* Runs hearth_node_set(start, path, value) with the k-th allocation failing,
 * k = 0, 1, ..., until it succeeds; a failure must leave the node (and a
 * snapshot, when `shared`) exactly as it was. */
static void set_under_failures(const char *start, bool shared, const char *path,
                               const char *value, const char *expected,
                               int line) {
    hearth_node_t *n = node_from(start);
    hearth_node_t *v = node_from(value);
    char *before = to_json(n);
    int failures = 0;
    bool done = false;
    for (long k = 0; k < 10000 && !done; k++) {
        hearth_node_t *snap = shared ? hearth_node_incref(n) : NULL;
        hearth_node_t *orig = n;
        hearth_error_t err;
        memset(&err, 0, sizeof err);
        hearth__alloc_fail_after(k);
        int rc = hearth_node_set(&n, path, v, &err);
        hearth__alloc_fail_after(-1);
        if (rc == HEARTH_ENOMEM) {
            failures++;
            char *now = to_json(n);
            if (n != orig || err.code != HEARTH_ENOMEM ||
                strcmp(now, before) != 0) {
                fprintf(stderr,
                        "  test_tree.c:%d: set %s failing at allocation %ld "
                        "left %s\n",
                        line, path, k, now);
                test_failures++;
            }
            free(now);
            CHECK(summaries_ok(n));
        } else {
            if (rc != 0) {
                fprintf(stderr, "  test_tree.c:%d: set %s: %s\n", line, path,
                        err.message);
                test_failures++;
            }
            char *now = to_json(n);
            if (strcmp(now, expected) != 0) {
                fprintf(stderr, "  test_tree.c:%d: set %s gave %s\n", line,
                        path, now);
                test_failures++;
            }
            free(now);
            check_consistent(n, line);
            done = true;
        }
        if (snap) {
            char *now = to_json(snap);
            if (strcmp(now, before) != 0) {
                fprintf(stderr, "  test_tree.c:%d: snapshot changed to %s\n",
                        line, now);
                test_failures++;
            }
            free(now);
            hearth_node_decref(snap);
        }
    }
    CHECK(done);
    if (shared && failures == 0 && *path) {
        fprintf(stderr, "  test_tree.c:%d: no allocation to fail?\n", line);
        test_failures++;
    }
    free(before);
    hearth_node_decref(v);
    hearth_node_decref(n);
}

static void test_node_alloc_failure(void) {
    static const char *start = "{\"a\":{\"b\":1,\"p\":{\".value\":1,"
                               "\".priority\":5}},\"c\":2}";
    static const struct {
        const char *path, *value, *expected;
    } ops[] = {
        {"a/b", "5",
         "{\"a\":{\"b\":5,\"p\":{\".value\":1,\".priority\":5}},\"c\":2}"},
        {"x/y/z", "{\"q\":[1,2]}",
         "{\"a\":{\"b\":1,\"p\":{\".value\":1,\".priority\":5}},\"c\":2,\"x\":"
         "{\"y\":{\"z\":{\"q\":{\"0\":1,\"1\":2}}}}}"},
        {"a/b", "null",
         "{\"a\":{\"p\":{\".value\":1,\".priority\":5}},\"c\":2}"},
        {"a", "null", "{\"c\":2}"},
        {"c/d", "true",
         "{\"a\":{\"b\":1,\"p\":{\".value\":1,\".priority\":5}},\"c\":{\"d\":"
         "true}}"},
        {"a/p/x", "1",
         "{\"a\":{\"b\":1,\"p\":{\"x\":1,\".priority\":5}},\"c\":2}"},
        {"a/.priority", "3",
         "{\"a\":{\"b\":1,\"p\":{\".value\":1,\".priority\":5},\".priority\":3},"
         "\"c\":2}"},
        {"c/.priority", "\"s\"",
         "{\"a\":{\"b\":1,\"p\":{\".value\":1,\".priority\":5}},\"c\":{"
         "\".value\":2,\".priority\":\"s\"}}"},
        {"a/p/.priority", "null", "{\"a\":{\"b\":1,\"p\":1},\"c\":2}"},
        {"", "{\"new\":1}", "{\"new\":1}"},
    };
    for (int shared = 0; shared < 2; shared++)
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
            set_under_failures(start, shared, ops[i].path, ops[i].value,
                               ops[i].expected, __LINE__);

    /* Over a multi-level children tree. */
    char *big = object_json(300, "\"k%03d\":%d");
    hearth_node_t *model = node_from(big);
    const char *paths[] = {"k150", "k150/x", "k299", "zzz", "k000", "aaa"};
    const char *values[] = {"null", "1", "null", "{\"deep\":{\"er\":1}}",
                            "\"s\"", "2"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        hearth_node_t *expected = hearth_node_incref(model);
        SET(expected, paths[i], values[i]);
        char *text = to_json(expected);
        for (int shared = 0; shared < 2; shared++)
            set_under_failures(big, shared, paths[i], values[i], text,
                               __LINE__);
        free(text);
        hearth_node_decref(expected);
    }
    hearth_node_decref(model);
    free(big);

    /* set_child_new takes its value whatever happens (LSan checks). */
    for (int shared = 0; shared < 2; shared++) {
        int rc = HEARTH_ENOMEM, failures = 0;
        for (long k = 0; k < 1000 && rc == HEARTH_ENOMEM; k++) {
            hearth_node_t *n = node_from("{\"a\":1,\"b\":{\"c\":2}}");
            hearth_node_t *snap = shared ? hearth_node_incref(n) : NULL;
            hearth_node_t *v = node_from("{\"x\":[1,2,3]}");
            hearth_error_t err;
            hearth__alloc_fail_after(k);
            rc = hearth_node_set_child_new(&n, "new", v, &err);
            hearth__alloc_fail_after(-1);
            if (rc == 0) {
                CHECK_JSON(n, "{\"a\":1,\"b\":{\"c\":2},\"new\":{\"x\":{"
                              "\"0\":1,\"1\":2,\"2\":3}}}");
            } else {
                failures++;
                CHECK_INT(rc, HEARTH_ENOMEM);
                CHECK_INT(err.code, HEARTH_ENOMEM);
                CHECK_JSON(n, "{\"a\":1,\"b\":{\"c\":2}}");
            }
            if (snap)
                CHECK_JSON(snap, "{\"a\":1,\"b\":{\"c\":2}}");
            hearth_node_decref(snap);
            hearth_node_decref(n);
        }
        CHECK_INT(rc, 0);
        CHECK(failures > 0);
    }

    /* with_priority writes nothing on failure. */
    for (long k = 0; k < 100; k++) {
        hearth_node_t *leaf = node_from("\"v\""), *p = hearth_node_number(1);
        hearth_node_t *out = leaf;
        hearth__alloc_fail_after(k);
        int rc = hearth_node_with_priority(leaf, p, &out, NULL);
        hearth__alloc_fail_after(-1);
        if (rc == HEARTH_ENOMEM)
            CHECK(out == leaf);
        else
            CHECK_JSON(out, "{\".value\":\"v\",\".priority\":1}");
        if (out != leaf)
            hearth_node_decref(out);
        hearth_node_decref(leaf);
        hearth_node_decref(p);
        if (rc == 0)
            break;
    }

    /* The hash: ENOMEM or the right answer. */
    hearth_node_t *h = node_from("{\"a\":{\"b\":1,\".priority\":2},\"c\":"
                                 "{\"d\":\"x\"},\"e\":3}");
    char want[HEARTH_HASH_SIZE];
    hearth_node_t *fresh = node_from("{\"a\":{\"b\":1,\".priority\":2},\"c\":"
                                     "{\"d\":\"x\"},\"e\":3}");
    hearth_node_hash(fresh, want);
    hearth_node_decref(fresh);
    for (long k = 0; k < 1000; k++) {
        char got[HEARTH_HASH_SIZE];
        hearth__alloc_fail_after(k);
        int rc = hearth_node_hash(h, got);
        hearth__alloc_fail_after(-1);
        if (rc == 0) {
            CHECK_STR(got, want);
            break;
        }
        CHECK_INT(rc, HEARTH_ENOMEM);
    }
    hearth_node_decref(h);
}

/* Random updates applied to one node held alone (edited in place) and to
 * another always held twice (path-copied) must agree at every step, and
 * old snapshots must keep their value. */
static void test_node_random_cow(void) {
    static const char *const keys[] = {"a", "b", "c", "1", "2", "10"};
    static const char *const values[] = {
        "null", "1", "\"s\"", "true", "{\"x\":1}", "{\"y\":{\"z\":2}}",
        "{\".value\":3,\".priority\":1}", "[1,2]", "null"};
    static const char *const prios[] = {"null", "1", "\"p\"", "-2.5"};
    hearth_node_t *u = hearth_node_null(), *c = hearth_node_null();
    hearth_node_t *snaps[8] = {0};
    char *snap_text[8] = {0};
    int nsnaps = 0;
    for (int op = 0; op < 3000; op++) {
        char path[64] = "";
        int depth = 1 + (int)(rng() % 3);
        for (int d = 0; d < depth; d++) {
            if (d)
                strcat(path, "/");
            strcat(path, keys[rng() % 6]);
        }
        bool prio = rng() % 5 == 0;
        const char *vtext = prio ? prios[rng() % 4] : values[rng() % 9];
        if (prio && rng() % 4)
            strcat(path, "/.priority");
        else if (prio)
            strcpy(path, ".priority"); /* the root's */
        hearth_node_t *v = node_from(vtext);
        hearth_node_t *hold = hearth_node_incref(c);
        char *hold_text = to_json(hold);
        if (rng() % 4 == 0) {
            char h[HEARTH_HASH_SIZE]; /* fill hash caches */
            hearth_node_hash(u, h);
            hearth_node_hash(c, h);
        }
        int r1 = hearth_node_set(&u, path, v, NULL);
        int r2 = hearth_node_set(&c, path, v, NULL);
        CHECK_INT(r1, r2);
        if (!hearth_node_equal(u, c)) {
            char *a = to_json(u), *b = to_json(c);
            fprintf(stderr, "  op %d set %s %s: %s vs %s\n", op, path, vtext, a,
                    b);
            free(a);
            free(b);
            test_failures++;
            hearth_node_decref(v);
            hearth_node_decref(hold);
            free(hold_text);
            break;
        }
        CHECK_JSON(hold, hold_text);
        hearth_node_decref(hold);
        free(hold_text);
        hearth_node_decref(v);
        if (op % 400 == 0 && nsnaps < 8) {
            snaps[nsnaps] = hearth_node_incref(u);
            snap_text[nsnaps++] = to_json(u);
        }
        if (op % 100 == 0)
            CHECK_CONSISTENT(u);
    }
    CHECK_CONSISTENT(u);
    CHECK_CONSISTENT(c);
    for (int s = 0; s < nsnaps; s++) {
        CHECK_JSON(snaps[s], snap_text[s]);
        CHECK_CONSISTENT(snaps[s]);
        hearth_node_decref(snaps[s]);
        free(snap_text[s]);
    }
    hearth_node_decref(u);
    hearth_node_decref(c);
}

/* null < false < true < numbers < strings (UTF-16 order) < objects. */
static void test_node_value_compare(void) {
    static const char *const ordered[] = {
        "null", "false", "true", "-1e300", "-1", "0", "0.5", "1", "1e300",
        "\"\"", "\"A\"", "\"a\"", "\"ab\"", "\"b\"", "\"\xF0\x9F\x90\xB5\"",
        "\"\xEF\xBD\x9E\"", "{\"a\":1}"};
    size_t n = sizeof ordered / sizeof ordered[0];
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            hearth_node_t *a = node_from(ordered[i]), *b = node_from(ordered[j]);
            int c = hearth__node_value_compare(a, b);
            int want = i < j ? -1 : i > j ? 1 : 0;
            if ((c < 0 ? -1 : c > 0) != want) {
                fprintf(stderr, "  value_compare(%s, %s) = %d\n", ordered[i],
                        ordered[j], c);
                test_failures++;
            }
            hearth_node_decref(a);
            hearth_node_decref(b);
        }
    }
    /* Objects are all equal as values; priorities do not count. */
    hearth_node_t *a = node_from("{\"a\":1}"), *b = node_from("{\"z\":[1,2]}");
    CHECK_INT(hearth__node_value_compare(a, b), 0);
    hearth_node_decref(a);
    hearth_node_decref(b);
    a = node_from("{\".value\":1,\".priority\":9}");
    b = node_from("1");
    CHECK_INT(hearth__node_value_compare(a, b), 0);
    hearth_node_decref(a);
    hearth_node_decref(b);
}

static void resolve_ok(const char *value, const char *existing, int64_t now,
                       const char *expected, int line) {
    hearth_node_t *v = node_from(value), *e = node_from(existing), *out = NULL;
    char *before = to_json(v);
    int rc = hearth__node_resolve_sv(v, e, now, &out);
    char *got = rc ? NULL : to_json(out);
    if (rc || strcmp(got, expected) != 0 || hearth__node_has_sv(out)) {
        fprintf(stderr, "  test_tree.c:%d: resolve %s over %s = %s\n", line,
                value, existing, got ? got : hearth_err_name(rc));
        test_failures++;
    }
    CHECK_JSON(v, before); /* the placeholder value is not modified */
    if (!rc)
        check_consistent(out, line);
    free(got);
    free(before);
    hearth_node_decref(out);
    hearth_node_decref(v);
    hearth_node_decref(e);
}
#define RESOLVE(value, existing, now, expected)                                \
    resolve_ok(value, existing, now, expected, __LINE__)

static void test_node_resolve_sv(void) {
    RESOLVE("{\".sv\":\"timestamp\"}", "null", 1700000000123,
            "1700000000123");
    RESOLVE("{\".sv\":\"timestamp\",\".priority\":\"p\"}", "5", 42,
            "{\".value\":42,\".priority\":\"p\"}");
    RESOLVE("{\".sv\":{\"increment\":2}}", "5", 0, "7");
    RESOLVE("{\".sv\":{\"increment\":2}}", "0.5", 0, "2.5");
    RESOLVE("{\".sv\":{\"increment\":2}}", "\"text\"", 0, "2");
    RESOLVE("{\".sv\":{\"increment\":2}}", "null", 0, "2");
    RESOLVE("{\".sv\":{\"increment\":-1}}", "{\"a\":1}", 0, "-1");
    RESOLVE("{\".sv\":{\"increment\":1e308}}", "1.7976931348623157e308", 0,
            "1e+308"); /* overflow: the delta alone */
    RESOLVE("{\"a\":{\".sv\":\"timestamp\"},\"b\":{\"c\":{\".sv\":{"
            "\"increment\":2}},\"k\":true},\"d\":1}",
            "{\"b\":{\"c\":5},\"d\":\"old\"}", 99,
            "{\"a\":99,\"b\":{\"c\":7,\"k\":true},\"d\":1}");
    RESOLVE("{\"x\":{\"y\":{\"z\":{\".sv\":\"timestamp\"}}},\".priority\":3}",
            "null", 7, "{\"x\":{\"y\":{\"z\":7}},\".priority\":3}");
    /* Without placeholders: the same node back. */
    hearth_node_t *v = node_from("{\"a\":1}"), *out = NULL;
    CHECK_INT(hearth__node_resolve_sv(v, v, 1, &out), 0);
    CHECK(out == v);
    hearth_node_decref(out);
    hearth_node_decref(v);

    /* Allocation failures: ENOMEM, nothing leaked, value intact. */
    const char *text = "{\"a\":{\".sv\":\"timestamp\"},\"b\":{\"c\":{\".sv\":{"
                       "\"increment\":2}},\"k\":{\".sv\":\"timestamp\","
                       "\".priority\":1}},\"d\":1}";
    v = node_from(text);
    hearth_node_t *existing = node_from("{\"b\":{\"c\":5}}");
    char *before = to_json(v);
    int rc = HEARTH_ENOMEM;
    for (long k = 0; k < 1000 && rc == HEARTH_ENOMEM; k++) {
        out = NULL;
        hearth__alloc_fail_after(k);
        rc = hearth__node_resolve_sv(v, existing, 5, &out);
        hearth__alloc_fail_after(-1);
        CHECK_JSON(v, before);
        if (rc == 0)
            CHECK_JSON(out, "{\"a\":5,\"b\":{\"c\":7,\"k\":{\".value\":5,"
                            "\".priority\":1}},\"d\":1}");
        else
            CHECK_INT(rc, HEARTH_ENOMEM);
        hearth_node_decref(out);
    }
    CHECK_INT(rc, 0);
    free(before);
    hearth_node_decref(existing);
    hearth_node_decref(v);
}

/* ------------------------------------------------------------------------ */
/* Hash text                                                                */

static void sha1_b64(const char *text, char out[HEARTH_HASH_SIZE]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(text, strlen(text), md, &len, EVP_sha1(), NULL);
    EVP_EncodeBlock((unsigned char *)out, md, (int)len);
}

static void check_hash(const char *json, const char *text, int line) {
    hearth_node_t *n = node_from(json);
    char got[HEARTH_HASH_SIZE], want[HEARTH_HASH_SIZE] = "";
    if (*text)
        sha1_b64(text, want);
    CHECK_INT(hearth_node_hash(n, got), 0);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "  test_tree.c:%d: hash of %s is %s, want %s (%s)\n",
                line, json, got, want, text);
        test_failures++;
    }
    /* Cached the second time, the same. */
    CHECK_INT(hearth_node_hash(n, got), 0);
    CHECK_STR(got, want);
    hearth_node_decref(n);
}
#define CHECK_HASH(json, text) check_hash(json, text, __LINE__)

static void hash_of(const char *json, char out[HEARTH_HASH_SIZE]) {
    hearth_node_t *n = node_from(json);
    hearth_node_hash(n, out);
    hearth_node_decref(n);
}

static void test_hash_text(void) {
    CHECK_HASH("null", "");
    CHECK_HASH("{}", "");
    CHECK_HASH("1", "number:3ff0000000000000");
    CHECK_HASH("-2", "number:c000000000000000");
    CHECK_HASH("0.1", "number:3fb999999999999a");
    CHECK_HASH("true", "boolean:true");
    CHECK_HASH("false", "boolean:false");
    CHECK_HASH("\"hi \xE2\x9C\x94\"", "string:hi \xE2\x9C\x94");
    CHECK_HASH("\"\"", "string:");
    CHECK_HASH("{\".value\":1,\".priority\":\"p\"}",
               "priority:string:p:number:3ff0000000000000");
    CHECK_HASH("{\".value\":\"v\",\".priority\":2}",
               "priority:number:4000000000000000:string:v");

    char a[HEARTH_HASH_SIZE], b[HEARTH_HASH_SIZE], c[HEARTH_HASH_SIZE];
    char d[HEARTH_HASH_SIZE], text[512];
    /* Children in key order when none has a priority. */
    hash_of("1", a);
    hash_of("\"x\"", b);
    hash_of("true", c);
    snprintf(text, sizeof text, ":2:%s:10:%s:a:%s", a, b, c);
    CHECK_HASH("{\"a\":true,\"10\":\"x\",\"2\":1}", text);
    /* Priority order: none, then numbers, then strings; ties by key. */
    hash_of("{\".value\":1,\".priority\":\"b\"}", a);
    hash_of("{\".value\":1,\".priority\":\"a\"}", b);
    hash_of("{\".value\":1,\".priority\":10}", c);
    hash_of("{\".value\":1,\".priority\":9}", d);
    char e[HEARTH_HASH_SIZE];
    hash_of("1", e);
    snprintf(text, sizeof text,
             "priority:number:4014000000000000::z:%s:p4:%s:p3:%s:p2:%s:p1:%s",
             e, d, c, b, a);
    CHECK_HASH("{\"p1\":{\".value\":1,\".priority\":\"b\"},"
               "\"p2\":{\".value\":1,\".priority\":\"a\"},"
               "\"p3\":{\".value\":1,\".priority\":10},"
               "\"p4\":{\".value\":1,\".priority\":9},"
               "\"z\":1,\".priority\":5}",
               text);
    /* Equal priorities fall back to key order (name compare). */
    hash_of("{\".value\":1,\".priority\":1}", a);
    snprintf(text, sizeof text, ":2:%s:10:%s:a:%s", a, a, a);
    CHECK_HASH("{\"a\":{\".value\":1,\".priority\":1},"
               "\"10\":{\".value\":1,\".priority\":1},"
               "\"2\":{\".value\":1,\".priority\":1}}",
               text);
    /* Strings priorities compare by UTF-16 code units. */
    hash_of("{\".value\":1,\".priority\":\"\xEF\xBD\x9E\"}", a);
    hash_of("{\".value\":1,\".priority\":\"\xF0\x9F\x90\xB5\"}", b);
    snprintf(text, sizeof text, ":y:%s:x:%s", b, a);
    CHECK_HASH("{\"x\":{\".value\":1,\".priority\":\"\xEF\xBD\x9E\"},"
               "\"y\":{\".value\":1,\".priority\":\"\xF0\x9F\x90\xB5\"}}",
               text);
    /* Nested objects hash through their children's hashes. */
    hash_of("{\"c\":1}", a);
    snprintf(text, sizeof text, ":b:%s", a);
    CHECK_HASH("{\"b\":{\"c\":1}}", text);
    CHECK_INT(hearth_node_hash(NULL, a), HEARTH_EINVAL);
}

/* ------------------------------------------------------------------------ */
/* Push IDs                                                                 */

static const char PUSH_CHARS[] =
    "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";

static int64_t decode_time(const char *id) {
    int64_t t = 0;
    for (int i = 0; i < 8; i++) {
        const char *p = strchr(PUSH_CHARS, id[i]);
        if (!p || !id[i])
            return -1;
        t = t * 64 + (p - PUSH_CHARS);
    }
    return t;
}

static bool push_id_ok(const char *id) {
    if (strlen(id) != 20)
        return false;
    for (int i = 0; i < 20; i++)
        if (!id[i] || !strchr(PUSH_CHARS, id[i]))
            return false;
    return true;
}

static void test_push_ids(void) {
    /* The alphabet sorts in ASCII order. */
    for (size_t i = 1; i < sizeof PUSH_CHARS - 1; i++)
        CHECK(PUSH_CHARS[i - 1] < PUSH_CHARS[i]);

    hearth_push_id_state_t st;
    memset(&st, 0, sizeof st);
    const int64_t t0 = 1700000000123;
    char prev[HEARTH_PUSH_ID_SIZE] = "", id[HEARTH_PUSH_ID_SIZE];
    int bad = 0;
    for (int i = 0; i < 10000; i++) {
        if (hearth_push_id(&st, t0, id) != 0 || !push_id_ok(id) ||
            decode_time(id) != t0 || strcmp(prev, id) >= 0 ||
            (i && memcmp(prev, id, 8) != 0))
            bad++;
        memcpy(prev, id, sizeof id);
    }
    CHECK_INT(bad, 0);
    /* Across times, including a clock that steps back. */
    static const int64_t times[] = {t0 + 1, t0 + 1, t0 + 1000, t0 + 999,
                                    t0 + 5,  t0 + 1001, 281474976710655};
    static const int64_t decoded[] = {t0 + 1,    t0 + 1,    t0 + 1000,
                                      t0 + 1000, t0 + 1000, t0 + 1001,
                                      281474976710655};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        CHECK_INT(hearth_push_id(&st, times[i], id), 0);
        CHECK(push_id_ok(id));
        CHECK_INT(decode_time(id), decoded[i]);
        CHECK(strcmp(prev, id) < 0);
        memcpy(prev, id, sizeof id);
    }
    /* Known prefixes. */
    hearth_push_id_state_t s2;
    memset(&s2, 0, sizeof s2);
    CHECK_INT(hearth_push_id(&s2, 1, id), 0);
    CHECK(strncmp(id, "-------0", 8) == 0);
    CHECK_INT(hearth_push_id(&s2, 64, id), 0);
    CHECK(strncmp(id, "------0-", 8) == 0);
    CHECK_INT(hearth_push_id(&s2, 64 * 64 + 63, id), 0);
    CHECK(strncmp(id, "-----0-z", 8) == 0);
    /* The random part is random: two generators differ. */
    hearth_push_id_state_t s3, s4;
    memset(&s3, 0, sizeof s3);
    memset(&s4, 0, sizeof s4);
    char id3[HEARTH_PUSH_ID_SIZE], id4[HEARTH_PUSH_ID_SIZE];
    CHECK_INT(hearth_push_id(&s3, t0, id3), 0);
    CHECK_INT(hearth_push_id(&s4, t0, id4), 0);
    CHECK(strcmp(id3 + 8, id4 + 8) != 0);
    /* The random part carries: ...z then the next character up. */
    memset(&s3, 0, sizeof s3);
    s3.last_time_ms = t0;
    memset(s3.last_random, 0, sizeof s3.last_random);
    s3.last_random[11] = 63;
    CHECK_INT(hearth_push_id(&s3, t0, id), 0);
    CHECK(strcmp(id + 8, "----------0-") == 0);
    /* All 72 bits used up in one millisecond: the next millisecond. */
    memset(s3.last_random, 63, sizeof s3.last_random);
    char last[HEARTH_PUSH_ID_SIZE];
    memcpy(last, id, 8);
    memset(last + 8, 'z', 12);
    last[20] = '\0';
    CHECK_INT(hearth_push_id(&s3, t0, id), 0);
    CHECK(strcmp(last, id) < 0);
    CHECK_INT(decode_time(id), t0 + 1);
    /* Bad arguments. */
    CHECK_INT(hearth_push_id(NULL, t0, id), HEARTH_EINVAL);
    CHECK_INT(hearth_push_id(&s3, t0, NULL), HEARTH_EINVAL);
    CHECK_INT(hearth_push_id(&s3, -1, id), HEARTH_EINVAL);
    /* The clock. */
    int64_t now = hearth_now_ms();
    CHECK(now > 1600000000000 && now < 4000000000000);
    CHECK(hearth_now_ms() >= now);
}



const test_case node_tests[] = {
    {"tree_node_constructors", test_node_constructors},
    {"tree_node_accessors", test_node_accessors},
    {"tree_node_set_paths", test_node_set_paths},
    {"tree_node_priority_paths", test_node_priority_paths},
    {"tree_node_with_priority", test_node_with_priority},
    {"tree_node_copy_on_write", test_node_copy_on_write},
    {"tree_node_in_place_summaries", test_node_in_place_summaries},
    {"tree_node_self_reference", test_node_self_reference},
    {"tree_node_set_child_new", test_node_set_child_new},
    {"tree_node_equal", test_node_equal},
    {"tree_node_depth_limit", test_node_depth_limit},
    {"tree_node_alloc_failure", test_node_alloc_failure},
    {"tree_node_random_cow", test_node_random_cow},
    {"tree_node_value_compare", test_node_value_compare},
    {"tree_node_resolve_server_values", test_node_resolve_sv},
    {"tree_hash_text", test_hash_text},
    {"tree_push_ids", test_push_ids},
    {NULL, NULL},
};
