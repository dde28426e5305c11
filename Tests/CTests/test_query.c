/* test_query.c - queries: every order, bounds with and without tie-break
 * keys, exclusive bounds, limits, leaves and priorities in views, the
 * validation errors of the official clients, the wire identity; and the
 * listener index (which views a write visits). */
#include "test.h"

#include "events/listeners.h"
#include "query/index.h"

static void check_keys(const hearth_query_t *q, const hearth_node_t *n,
                       const char *expected, int line) {
    char got[512] = "";
    CHECK_INT(hearth_query_foreach(q, n, join_keys, got), 0);
    if (strcmp(got, expected) != 0) {
        fprintf(stderr, "  test_query.c:%d: selected \"%s\", expected \"%s\"\n",
                line, got, expected);
        test_failures++;
    }
}
#define CHECK_KEYS(q, n, expected) check_keys(q, n, expected, __LINE__)

static hearth_query_t *new_query(void) {
    hearth_query_t *q;
    CHECK_INT(hearth_query_create(&q), 0);
    return q;
}

static const char *SCORES =
    "{\"a\":{\"s\":3,\"n\":\"x\"},\"b\":{\"s\":1},\"c\":{\"s\":3},"
    "\"d\":{\"n\":\"y\"},\"e\":{\"s\":\"high\"},\"f\":{\"s\":true},"
    "\"g\":{\"s\":{\"deep\":1}},\"h\":{\"s\":false}}";

/* A query ordered by child `child`. */
static hearth_query_t *by_child(const char *child) {
    hearth_query_t *q = new_query();
    CHECK_INT(hearth_query_order_by_child(q, child, NULL), 0);
    return q;
}

typedef int (*bound_fn)(hearth_query_t *q, const hearth_node_t *value,
                        const char *key, hearth_error_t *err);

static void test_order_by_child(void) {
    hearth_node_t *n = node_from(SCORES);
    hearth_query_t *q = by_child("s");
    /* missing < false < true < numbers < strings < objects; ties by key */
    CHECK_KEYS(q, n, "d h f b a c e g");
    hearth_query_free(q);
    /* Each bound alone, on a fresh query: what it selects. */
    static const struct {
        bound_fn bound;
        const char *value, *key, *selected;
    } rows[] = {
        {hearth_query_start_at, "3", NULL, "a c e g"},
        {hearth_query_start_at, "3", "a", "a c e g"},
        {hearth_query_start_at, "3", "b", "c e g"}, /* after a */
        {hearth_query_equal_to, "3", NULL, "a c"},
        {hearth_query_start_after, "3", NULL, "e g"},
        {hearth_query_start_after, "3", "a", "c e g"},
        {hearth_query_end_before, "3", NULL, "d h f b"},
        {hearth_query_equal_to, "null", NULL, "d"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        q = by_child("s");
        hearth_node_t *v = node_from(rows[i].value);
        CHECK_INT(rows[i].bound(q, v, rows[i].key, NULL), 0);
        int before = test_failures;
        CHECK_KEYS(q, n, rows[i].selected);
        if (test_failures > before)
            fprintf(stderr, "  (row %zu)\n", i);
        hearth_node_decref(v);
        hearth_query_free(q);
    }
    /* A limit within a bound. */
    q = by_child("s");
    hearth_node_t *three = hearth_node_number(3);
    CHECK_INT(hearth_query_end_before(q, three, NULL, NULL), 0);
    CHECK_INT(hearth_query_limit_to_last(q, 2, NULL), 0);
    CHECK_KEYS(q, n, "f b");
    hearth_query_free(q);
    hearth_node_decref(three);
    hearth_node_decref(n);
}

static void test_order_by_key(void) {
    hearth_node_t *n = node_from("{\"b\":1,\"a\":2,\"10\":3,\"9\":4,\"c\":5}");
    hearth_query_t *q = new_query();
    CHECK_INT(hearth_query_order_by_key(q, NULL), 0);
    CHECK_KEYS(q, n, "9 10 a b c");
    hearth_node_t *a = hearth_node_string("a", 1), *bb = hearth_node_string("bb", 2);
    CHECK_INT(hearth_query_start_after(q, a, NULL, NULL), 0);
    CHECK_KEYS(q, n, "b c");
    CHECK_INT(hearth_query_end_at(q, bb, NULL, NULL), 0);
    CHECK_KEYS(q, n, "b");
    hearth_query_free(q);
    q = new_query();
    hearth_query_order_by_key(q, NULL);
    CHECK_INT(hearth_query_end_before(q, a, NULL, NULL), 0);
    CHECK_INT(hearth_query_limit_to_first(q, 1, NULL), 0);
    CHECK_KEYS(q, n, "9");
    hearth_query_free(q);
    /* Errors: a key name argument, a non-string value. */
    q = new_query();
    hearth_query_order_by_key(q, NULL);
    hearth_error_t err;
    CHECK_INT(hearth_query_start_at(q, a, "x", &err), HEARTH_EQUERY);
    CHECK(strstr(err.message, "only pass one argument") != NULL);
    hearth_node_t *one = hearth_node_number(1);
    CHECK_INT(hearth_query_start_at(q, one, NULL, &err), HEARTH_EQUERY);
    CHECK(strstr(err.message, "must be a string") != NULL);
    CHECK_KEYS(q, n, "9 10 a b c"); /* the failed calls changed nothing */
    hearth_query_free(q);
    hearth_node_decref(one);
    hearth_node_decref(a);
    hearth_node_decref(bb);
    hearth_node_decref(n);
}

static void test_order_by_priority_and_value(void) {
    hearth_node_t *n = node_from(
        "{\"a\":{\".value\":1,\".priority\":\"z\"},\"b\":{\".value\":2,"
        "\".priority\":5},\"c\":3,\"d\":{\".value\":0,\".priority\":1}}");
    hearth_query_t *q = new_query();
    CHECK_KEYS(q, n, "c d b a"); /* none < numbers < strings */
    hearth_node_t *five = hearth_node_number(5);
    CHECK_INT(hearth_query_start_at(q, five, NULL, NULL), 0);
    CHECK_KEYS(q, n, "b a");
    hearth_query_free(q);
    q = new_query();
    CHECK_INT(hearth_query_order_by_value(q, NULL), 0);
    CHECK_KEYS(q, n, "d a b c");
    CHECK_INT(hearth_query_limit_to_first(q, 2, NULL), 0);
    hearth_node_t *view;
    CHECK_INT(hearth_query_apply(q, n, &view), 0);
    /* A filtered view keeps the children's priorities. */
    CHECK_JSON(view, "{\"a\":{\".value\":1,\".priority\":\"z\"},"
                     "\"d\":{\".value\":0,\".priority\":1}}");
    hearth_node_decref(view);
    hearth_error_t err;
    hearth_node_t *t = hearth_node_boolean(true);
    hearth_query_t *p = new_query();
    CHECK_INT(hearth_query_start_at(p, t, NULL, &err), HEARTH_EQUERY);
    CHECK(strstr(err.message, "valid priority value") != NULL);
    hearth_query_free(p);
    hearth_node_decref(t);
    hearth_node_decref(five);
    hearth_query_free(q);
    hearth_node_decref(n);
}

static void test_leaf_views(void) {
    hearth_node_t *leaf = node_from("{\".value\":7,\".priority\":2}");
    hearth_query_t *q = new_query();
    hearth_node_t *view;
    CHECK_INT(hearth_query_apply(q, leaf, &view), 0); /* loads all: as is */
    CHECK_JSON(view, "{\".value\":7,\".priority\":2}");
    hearth_node_decref(view);
    hearth_query_limit_to_first(q, 1, NULL);
    CHECK_INT(hearth_query_apply(q, leaf, &view), 0);
    CHECK_JSON(view, "null"); /* filtered queries see no leaf */
    hearth_node_decref(view);
    hearth_query_free(q);
    hearth_node_decref(leaf);
}

static void test_validation(void) {
    hearth_error_t err;
    hearth_query_t *q = new_query();
    CHECK_INT(hearth_query_order_by_value(q, NULL), 0);
    CHECK_INT(hearth_query_order_by_key(q, &err), HEARTH_EQUERY);
    CHECK(strstr(err.message, "multiple orderBy") != NULL);
    CHECK_INT(hearth_query_limit_to_first(q, 0, &err), HEARTH_EQUERY);
    CHECK_INT(hearth_query_limit_to_first(q, 3, NULL), 0);
    CHECK_INT(hearth_query_limit_to_last(q, 3, &err), HEARTH_EQUERY);
    CHECK(strstr(err.message, "Limit was already set") != NULL);
    hearth_node_t *one = hearth_node_number(1);
    CHECK_INT(hearth_query_start_at(q, one, NULL, NULL), 0);
    CHECK_INT(hearth_query_start_after(q, one, NULL, &err), HEARTH_EQUERY);
    CHECK_INT(hearth_query_equal_to(q, one, NULL, &err), HEARTH_EQUERY);
    hearth_node_t *obj = node_from("{\"a\":1}");
    CHECK_INT(hearth_query_end_at(q, obj, NULL, &err), HEARTH_EQUERY);
    CHECK_INT(hearth_query_end_at(q, one, "bad.key", &err), HEARTH_EKEY);
    hearth_query_free(q);
    q = new_query();
    CHECK_INT(hearth_query_order_by_child(q, "$key", &err), HEARTH_EQUERY);
    CHECK(strstr(err.message, "orderByKey") != NULL);
    CHECK_INT(hearth_query_order_by_child(q, "a/b[0]", &err), HEARTH_EPATH);
    CHECK_INT(hearth_query_order_by_child(q, "a/b", NULL), 0);
    hearth_query_free(q);
    hearth_node_decref(obj);
    hearth_node_decref(one);
}

static void test_wire_identity(void) {
    hearth_query_t *q = new_query();
    char *s = hearth_query_to_json(q);
    CHECK_STR(s, "{}");
    hearth_free(s);
    hearth_query_order_by_child(q, "score", NULL);
    hearth_node_t *ten = hearth_node_number(10);
    hearth_query_start_after(q, ten, NULL, NULL);
    hearth_query_limit_to_last(q, 5, NULL);
    s = hearth_query_to_json(q);
    CHECK_STR(s, "{\"i\":\"score\",\"l\":5,\"sin\":false,\"sn\":\"[MAX_NAME]\","
                 "\"sp\":10,\"vf\":\"r\"}");
    hearth_free(s);
    hearth_query_t *copy = hearth_query_copy(q);
    s = hearth_query_to_json(copy);
    CHECK_STR(s, "{\"i\":\"score\",\"l\":5,\"sin\":false,\"sn\":\"[MAX_NAME]\","
                 "\"sp\":10,\"vf\":\"r\"}");
    hearth_free(s);
    hearth_query_free(copy);
    hearth_query_free(q);
    q = new_query();
    hearth_query_order_by_key(q, NULL);
    hearth_node_t *k = hearth_node_string("k", 1);
    hearth_query_end_before(q, k, NULL, NULL);
    s = hearth_query_to_json(q);
    CHECK_STR(s, "{\"ein\":false,\"ep\":\"k\",\"i\":\".key\"}");
    hearth_free(s);
    hearth_query_free(q);
    hearth_node_decref(k);
    hearth_node_decref(ten);
}

/* A large node ordered by key: windows come from ranks, not a scan. */
static void test_large_key_window(void) {
    hearth_node_t *n = hearth_node_null();
    char key[16];
    for (int i = 0; i < 100000; i++) {
        snprintf(key, sizeof key, "k%06d", i);
        CHECK_INT(hearth_node_set_child_new(&n, key, hearth_node_number(i), NULL),
                  0);
    }
    hearth_query_t *q = new_query();
    hearth_query_order_by_key(q, NULL);
    hearth_node_t *from = hearth_node_string("k050000", 7);
    hearth_query_start_at(q, from, NULL, NULL);
    hearth_query_limit_to_first(q, 3, NULL);
    CHECK_KEYS(q, n, "k050000 k050001 k050002");
    hearth_query_free(q);
    q = new_query();
    hearth_query_limit_to_last(q, 2, NULL);
    CHECK_KEYS(q, n, "k099998 k099999");
    hearth_query_free(q);
    hearth_node_decref(from);
    hearth_node_decref(n);
}

/* ---- the listener index ---- */

static hearth__reg *new_reg(hearth_observer_t handle) {
    hearth__reg *r = calloc(1, sizeof *r);
    r->handle = handle;
    r->mask = HEARTH_MASK_VALUE;
    return r;
}

static void add_at(hearth__listeners *l, const char *path, hearth_observer_t h,
                   const hearth_query_t *q) {
    hearth__path p;
    CHECK_INT(hearth__path_parse(path, 0, &p, NULL), 0);
    CHECK_INT(hearth__listeners_add(l, &p, q, new_reg(h)), 0);
}

/* The paths of the views a write at `path` visits, deepest first. */
static void visited(hearth__listeners *l, const char *path, char *out) {
    hearth__path p;
    CHECK_INT(hearth__path_parse(path, 0, &p, NULL), 0);
    const hearth__path *paths[] = {&p};
    hearth__view **views;
    size_t n;
    CHECK_INT(hearth__listeners_collect(l, paths, 1, &views, &n), 0);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strcat(out, i ? " " : "");
        strcat(out, views[i]->at->path);
        strcat(out, views[i]->full ? "*" : "");
    }
    free(views);
}

static void test_listener_index(void) {
    hearth__listeners l;
    CHECK_INT(hearth__listeners_init(&l), 0);
    add_at(&l, "/", 1, NULL);
    add_at(&l, "users", 2, NULL);
    add_at(&l, "users/ada", 3, NULL);
    add_at(&l, "users/ada/name", 4, NULL);
    add_at(&l, "users/bob", 5, NULL);
    add_at(&l, "posts", 6, NULL);
    hearth_query_t *q = new_query();
    hearth_query_limit_to_first(q, 1, NULL);
    add_at(&l, "users", 7, q);
    add_at(&l, "users", 8, NULL); /* shares the default view with 2 */
    hearth_query_free(q);
    char out[512];
    /* Ancestors get hints, the written location and below are full; bob
     * and posts are never visited. */
    visited(&l, "users/ada", out);
    CHECK_STR(out, "/users/ada/name* /users/ada* /users /users /");
    visited(&l, "users/ada/age", out);
    CHECK_STR(out, "/users/ada /users /users /");
    visited(&l, "elsewhere/deep", out);
    CHECK_STR(out, "/");
    CHECK_INT(hearth__map_count(&l.regs), 8);
    hearth__reg *r = hearth__listeners_find(&l, 4);
    CHECK(r != NULL);
    hearth__listeners_remove(&l, r);
    CHECK(hearth__listeners_find(&l, 4) == NULL);
    visited(&l, "users/ada", out);
    CHECK_STR(out, "/users/ada* /users /users /");
    hearth__listeners_destroy(&l);
}

/* Adds n listeners (handles from h0), at n locations (spread), at one
 * location, or at one location under n distinct queries, then removes
 * them in another order (odd handles first): the seconds it took. */
typedef enum { SPREAD, ONE_PLACE, ONE_PLACE_QUERIES } listen_shape;

static double add_and_remove(hearth__listeners *l, listen_shape shape, int n,
                             hearth_observer_t h0) {
    double start = test_seconds();
    for (int i = 0; i < n; i++) {
        char path[64];
        if (shape == SPREAD) /* 128 a location: a short list of kids */
            snprintf(path, sizeof path, "spread/k%d/k%d", i / 128, i % 128);
        else
            snprintf(path, sizeof path, "one");
        hearth_query_t *q = NULL;
        if (shape == ONE_PLACE_QUERIES) {
            q = new_query();
            hearth_query_limit_to_first(q, (uint32_t)i + 1, NULL);
        }
        add_at(l, path, h0 + (hearth_observer_t)i, q);
        hearth_query_free(q);
    }
    for (int odd = 1; odd >= 0; odd--)
        for (int i = odd; i < n; i += 2) {
            hearth__reg *r = hearth__listeners_find(l, h0 + (hearth_observer_t)i);
            CHECK(r != NULL);
            if (r)
                hearth__listeners_remove(l, r);
        }
    return test_seconds() - start;
}

/* Regression: adding a listener walked its location's listeners to the
 * end, finding a query's view walked the location's views, and removing
 * either walked again: 10,000 listens of one path (or 10,000 distinct
 * queries of one path, which one session may hold) cost the loop
 * quadratic time, seconds at a few tens of thousands. Now each costs what
 * a listener at a location of its own costs. */
static void test_many_listeners_at_one_location(void) {
    enum { N = 20000 };
    hearth__listeners l;
    CHECK_INT(hearth__listeners_init(&l), 0);
    add_at(&l, "one", 1, NULL); /* stays, so its view outlives the rest */
    double spread = add_and_remove(&l, SPREAD, N, 100);
    double one_place = add_and_remove(&l, ONE_PLACE, N, 100);
    double queries = add_and_remove(&l, ONE_PLACE_QUERIES, N, 100);
    if (getenv("SHOW_TIMES") || one_place > 5 * spread || queries > 5 * spread)
        fprintf(stderr, "  %d listeners: spread %.3f s, one place %.3f s, "
                        "one place under distinct queries %.3f s\n",
                N, spread, one_place, queries);
    CHECK(one_place < 5 * spread);
    CHECK(queries < 5 * spread);
    /* Everything added was taken out again: one listener, one view. */
    CHECK_INT(hearth__map_count(&l.regs), 1);
    CHECK_INT(hearth__map_count(&l.views), 1);
    CHECK_INT(l.root.nkids, 1);
    char out[512];
    visited(&l, "one", out);
    CHECK_STR(out, "/one*");
    hearth__listeners_destroy(&l);
}

/* ---- indexes: the same answers as a scan, after any change ---- */

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void) {
    return test_rand(&rng);
}

/* A child {"s": value} with a value of any type, often equal to others. */
static hearth_node_t *random_child(void) {
    hearth_node_t *v;
    switch (next_rand() % 7) {
    case 0: v = hearth_node_null(); break;
    case 1: v = hearth_node_boolean(next_rand() & 1); break;
    case 2: v = hearth_node_number((double)(next_rand() % 20) - 10); break;
    case 3: v = hearth_node_number((double)(next_rand() % 1000) / 7.0); break;
    case 4: {
        static const char *const s[] = {"", "a", "ab", "b", "\xc3\xa9",
                                        "\xf0\x9f\x90\xb5", "\xef\xbd\x9e", "a\x01"};
        const char *t = s[next_rand() % 8];
        v = hearth_node_string(t, strlen(t));
        break;
    }
    case 5: v = node_from("{\"deep\":1}"); break;
    default: v = hearth_node_number(-0.0);
    }
    hearth_node_t *child = hearth_node_null();
    if (!hearth_node_is_null(v))
        CHECK_INT(hearth_node_set_child_new(&child, "s", v, NULL), 0);
    else {
        hearth_node_decref(v);
        CHECK_INT(hearth_node_set_child_new(&child, "other", hearth_node_number(1), NULL), 0);
    }
    return child;
}

static void random_key(char *key, size_t size) {
    static const char *const forms[] = {"%d", "k%d", "-%d", "0%d", "%d0"};
    snprintf(key, size, forms[next_rand() % 5], (int)(next_rand() % 300));
}

static hearth_query_t *random_query(void) {
    hearth_query_t *q = new_query();
    CHECK_INT(hearth_query_order_by_child(q, "s", NULL), 0);
    int kind = (int)(next_rand() % 6);
    hearth_node_t *v = NULL;
    if (kind > 0) {
        hearth_node_t *c = random_child();
        v = hearth_node_incref(hearth_node_child(c, "s"));
        hearth_node_decref(c);
    }
    char key[16];
    random_key(key, sizeof key);
    const char *k = next_rand() & 1 ? key : NULL;
    switch (kind) {
    case 1: hearth_query_start_at(q, v, k, NULL); break;
    case 2: hearth_query_start_after(q, v, k, NULL); break;
    case 3: hearth_query_end_at(q, v, k, NULL); break;
    case 4: hearth_query_end_before(q, v, k, NULL); break;
    case 5: hearth_query_equal_to(q, v, k, NULL); break;
    default: break;
    }
    hearth_node_decref(v);
    if (next_rand() % 3 == 0)
        hearth_query_limit_to_first(q, 1 + (uint32_t)(next_rand() % 10), NULL);
    else if (next_rand() % 2 == 0)
        hearth_query_limit_to_last(q, 1 + (uint32_t)(next_rand() % 10), NULL);
    return q;
}

static void test_index_matches_scan(void) {
    hearth_query_t *shape = new_query();
    hearth_query_order_by_child(shape, "s", NULL);
    hearth__index *ix;
    CHECK_INT(hearth__index_create(shape, &ix), 0);
    hearth_node_t *data = hearth_node_null();
    for (int round = 0; round < 60; round++) {
        /* Change a few children (add, replace, remove), keep a snapshot
         * so the data is updated by copying, as in a database. */
        hearth_node_t *before = hearth_node_incref(data);
        int changes = round % 10 == 0 ? 200 : 1 + (int)(next_rand() % 5);
        for (int i = 0; i < changes; i++) {
            char key[16];
            random_key(key, sizeof key);
            hearth_node_t *child = next_rand() % 5 ? random_child() : hearth_node_null();
            CHECK_INT(hearth_node_set_child_new(&data, key, child, NULL), 0);
        }
        hearth_node_decref(before);
        CHECK_INT(hearth__index_sync(ix, data), 0);
        CHECK_INT(hearth__index_size(ix), hearth_node_child_count(data));
        for (int t = 0; t < 20; t++) {
            hearth_query_t *q = random_query();
            hearth_node_t *scan, *indexed;
            CHECK_INT(hearth__query_view_node(q, data, &scan), 0);
            CHECK_INT(hearth__index_view(ix, q, data, &indexed), 0);
            if (!hearth_node_equal(scan, indexed)) {
                char *qs = hearth_query_to_json(q), *a = to_json(scan), *b = to_json(indexed);
                fprintf(stderr, "  query %s\n    scan    %s\n    indexed %s\n", qs, a, b);
                free(qs), free(a), free(b);
                test_failures++;
            }
            hearth_node_decref(scan);
            hearth_node_decref(indexed);
            hearth_query_free(q);
        }
    }
    hearth__index_free(ix);
    hearth_query_free(shape);
    hearth_node_decref(data);
}

const test_case query_tests[] = {
    {"query_index_matches_scan", test_index_matches_scan},
    {"query_order_by_child", test_order_by_child},
    {"query_order_by_key", test_order_by_key},
    {"query_order_by_priority_and_value", test_order_by_priority_and_value},
    {"query_leaf_views", test_leaf_views},
    {"query_validation", test_validation},
    {"query_wire_identity", test_wire_identity},
    {"query_large_key_window", test_large_key_window},
    {"query_listener_index", test_listener_index},
    {"query_many_listeners_at_one_location",
     test_many_listeners_at_one_location},
    {NULL, NULL},
};
