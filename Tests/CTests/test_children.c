/* test_children.c - the persistent B+tree (tree/children.c): 100k
 * sequential and random inserts and removals with invariant checks,
 * lookups, rank, iteration, bulk building, snapshots that never change,
 * diffs, and allocation failures that leave the tree exactly as it was. */
#include "test_tree.h"

/* ------------------------------------------------------------------------ */
/* B+tree                                                                   */


/* Whether every page from t down to name's leaf is held alone. */
static bool path_unique(const hearth__bt *t, const hearth__name *name) {
    bool alone;
    hearth__bt_find_held(t, name, false, &alone);
    return alone;
}
static hearth__name int_name(int i, char buf[16]) {
    int len = snprintf(buf, 16, "%d", i);
    hearth__name n;
    hearth__name_init(&n, buf, (size_t)len);
    return n;
}

/* Maps key i to a new number node `value`. */
static int put_int(hearth__bt **t, int key, double value) {
    char buf[16];
    hearth__name name = int_name(key, buf);
    hearth_node_t *node = hearth_node_number(value);
    if (!node)
        return HEARTH_ENOMEM;
    int rc = hearth__bt_put(t, &name, NULL, node, NULL);
    if (rc)
        hearth_node_decref(node);
    return rc;
}

static int remove_int(hearth__bt **t, int key) {
    char buf[16];
    hearth__name name = int_name(key, buf);
    return hearth__bt_remove(t, &name);
}

static const hearth__entry *find_int(const hearth__bt *t, int key) {
    char buf[16];
    hearth__name name = int_name(key, buf);
    return hearth__bt_find(t, &name);
}

/* Levels below the root (0: the root is a leaf). */
static int bt_height(const hearth__bt *t) {
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, t, 0);
    return it.depth;
}

/* Checks that t holds exactly the keys i (0 <= i < n) with value[i] >= 0,
 * each mapped to a number equal to value[i], in order; with `full`, also
 * at(), rank() and find() of every key. */
static void verify_ints(const hearth__bt *t, const double *value, int n,
                        bool full) {
    CHECK(hearth__bt_check(t));
    size_t expected = 0;
    for (int i = 0; i < n; i++)
        expected += value[i] >= 0;
    CHECK_INT(hearth__bt_count(t), expected);
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, t, 0);
    int i = 0;
    size_t rank = 0;
    for (const hearth__entry *e; (e = hearth__bt_iter_next(&it)); rank++, i++) {
        while (i < n && value[i] < 0)
            i++;
        if (i >= n || !e->key->is_int || e->key->ival != i ||
            hearth_node_number_value(e->node) != value[i]) {
            fprintf(stderr, "  entry %zu is \"%s\", expected key %d\n", rank,
                    e->key->s, i);
            test_failures++;
            return;
        }
        if (full) {
            char buf[16];
            hearth__name name = int_name(i, buf);
            bool found = false;
            if (strcmp(e->key->s, buf) != 0 || hearth__bt_at(t, rank) != e ||
                hearth__bt_find(t, &name) != e ||
                hearth__bt_rank(t, &name, &found) != rank || !found) {
                fprintf(stderr, "  lookups of key %d (rank %zu) disagree\n", i,
                        rank);
                test_failures++;
                return;
            }
        }
    }
    CHECK_INT(rank, expected);
}

/* Removes every present key in random order, checking as it goes. */
static void remove_all(hearth__bt **t, double *value, int n) {
    int *order = malloc(sizeof *order * (size_t)n);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (value[i] >= 0)
            order[m++] = i;
    shuffle(order, (size_t)m);
    size_t left = hearth__bt_count(*t);
    for (int k = 0; k < m; k++) {
        int rc = remove_int(t, order[k]);
        if (rc) {
            CHECK_INT(rc, 0);
            break;
        }
        value[order[k]] = -1;
        left--;
        if (k % 1000 == 999) {
            CHECK(hearth__bt_check(*t));
            CHECK_INT(hearth__bt_count(*t), left);
            CHECK(find_int(*t, order[k]) == NULL);
            CHECK_INT(remove_int(t, order[k]), 0); /* absent: no-op */
            CHECK_INT(hearth__bt_count(*t), left);
        }
        if (k % 10000 == 9999)
            verify_ints(*t, value, n, false);
    }
    CHECK(*t == NULL);
    CHECK_INT(hearth__bt_count(*t), 0);
    free(order);
}

enum { BIG = 100000 };

static void check_absent_lookups(const hearth__bt *t, size_t count) {
    bool found = true;
    hearth__name above = name_of("100000000"), below = name_of("-1");
    hearth__name str = name_of("a"), frac = name_of("1.5");
    CHECK_INT(hearth__bt_rank(t, &above, &found), count);
    CHECK(!found);
    found = true;
    CHECK_INT(hearth__bt_rank(t, &below, &found), 0);
    CHECK(!found);
    CHECK_INT(hearth__bt_rank(t, &str, &found), count);
    CHECK_INT(hearth__bt_rank(t, &frac, &found), count);
    CHECK(hearth__bt_find(t, &above) == NULL);
    CHECK(hearth__bt_find(t, &str) == NULL);
    CHECK(hearth__bt_at(t, count) == NULL);
    CHECK(hearth__bt_at(t, (size_t)-1) == NULL);
    hearth__name min = hearth__name_sentinel(HEARTH__NAME_MIN);
    hearth__name max = hearth__name_sentinel(HEARTH__NAME_MAX);
    CHECK_INT(hearth__bt_rank(t, &min, &found), 0);
    CHECK_INT(hearth__bt_rank(t, &max, &found), count);
}

static void test_bt_sequential(void) {
    hearth__bt *t = NULL;
    double *value = malloc(sizeof *value * BIG);
    for (int i = 0; i < BIG; i++)
        value[i] = -1;
    for (int i = 0; i < BIG; i++) {
        if (put_int(&t, i, i)) {
            CHECK(0);
            break;
        }
        value[i] = i;
        if (i % 1000 == 999) {
            CHECK(hearth__bt_check(t));
            CHECK_INT(hearth__bt_count(t), i + 1);
        }
        /* Appends fill pages: 32^3 entries fit in three levels. */
        if (i + 1 == 32 * 32 * 32)
            CHECK_INT(bt_height(t), 2);
        if (i + 1 == 32 * 32 * 32 + 1)
            CHECK_INT(bt_height(t), 3);
    }
    verify_ints(t, value, BIG, true);
    check_absent_lookups(t, BIG);
    hearth__name k = name_of("77");
    CHECK(path_unique(t, &k));
    remove_all(&t, value, BIG);
    free(value);
}

static void test_bt_random(void) {
    hearth__bt *t = NULL;
    double *value = malloc(sizeof *value * BIG);
    int *order = malloc(sizeof *order * BIG);
    for (int i = 0; i < BIG; i++) {
        value[i] = -1;
        order[i] = i;
    }
    shuffle(order, BIG);
    for (int k = 0; k < BIG; k++) {
        if (put_int(&t, order[k], order[k] * 0.5)) {
            CHECK(0);
            break;
        }
        value[order[k]] = order[k] * 0.5;
        if (k % 1000 == 999) {
            CHECK(hearth__bt_check(t));
            CHECK_INT(hearth__bt_count(t), k + 1);
            CHECK(find_int(t, order[k]) != NULL);
            CHECK(find_int(t, order[k] + BIG) == NULL);
        }
        if (k % 25000 == 24999)
            verify_ints(t, value, BIG, false);
    }
    verify_ints(t, value, BIG, true);
    check_absent_lookups(t, BIG);
    CHECK(bt_height(t) >= 2 && bt_height(t) <= 4);
    remove_all(&t, value, BIG);
    free(order);
    free(value);
}

/* Insert half, remove a quarter, insert again, with interleaved checks. */
static void test_bt_mixed(void) {
    enum { N = 20000 };
    hearth__bt *t = NULL;
    double value[N];
    for (int i = 0; i < N; i++)
        value[i] = -1;
    for (int op = 0; op < 4 * N; op++) {
        int k = (int)(rng() % N);
        if (rng() % 3) {
            double v = (double)(rng() % 1000);
            CHECK_INT(put_int(&t, k, v), 0);
            value[k] = v;
        } else {
            CHECK_INT(remove_int(&t, k), 0);
            value[k] = -1;
        }
        if (op % 1000 == 999)
            CHECK(hearth__bt_check(t));
        if (op % 20000 == 19999)
            verify_ints(t, value, N, true);
    }
    verify_ints(t, value, N, true);
    remove_all(&t, value, N);
}

static int compare_cstr_keys(const void *a, const void *b) {
    return hearth_key_compare(*(char *const *)a, *(char *const *)b);
}

/* Random keys mixing integers, signs, ASCII and multi-byte characters. */
static void test_bt_string_keys(void) {
    static const char *const tokens[] = {
        "a", "b", "Z", "0", "1", "9", "-", "\xC3\xA9", "\xE2\x9C\x94",
        "\xF0\x9F\x90\xB5", "\xEF\xBD\x9E", "\xEE\x80\x80", " ", "_"};
    enum { N = 20000 };
    char **keys = malloc(sizeof *keys * N);
    hearth__bt *t = NULL;
    for (int i = 0; i < N; i++) {
        char buf[64] = "";
        int parts = 1 + (int)(rng() % 6);
        for (int p = 0; p < parts; p++)
            strcat(buf, tokens[rng() % (sizeof tokens / sizeof tokens[0])]);
        keys[i] = heap_copy(buf);
        hearth__name name = name_of(keys[i]);
        hearth_node_t *v = hearth_node_string(keys[i], strlen(keys[i]));
        int rc = hearth__bt_put(&t, &name, NULL, v, NULL);
        CHECK_INT(rc, 0);
        if (rc)
            hearth_node_decref(v);
        if (i % 1000 == 999)
            CHECK(hearth__bt_check(t));
    }
    qsort(keys, N, sizeof *keys, compare_cstr_keys);
    int unique = 0;
    for (int i = 0; i < N; i++)
        if (unique == 0 || strcmp(keys[unique - 1], keys[i]) != 0)
            keys[unique++] = keys[i];
        else
            free(keys[i]);
    CHECK(hearth__bt_check(t));
    CHECK_INT(hearth__bt_count(t), unique);
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, t, 0);
    int bad = 0;
    for (int i = 0; i < unique; i++) {
        const hearth__entry *e = hearth__bt_iter_next(&it);
        hearth__name name = name_of(keys[i]);
        bool found = false;
        if (!e || strcmp(e->key->s, keys[i]) != 0 ||
            strcmp(hearth_node_string_value(e->node, NULL), keys[i]) != 0 ||
            hearth__bt_rank(t, &name, &found) != (size_t)i || !found ||
            hearth__bt_at(t, (size_t)i) != e)
            bad++;
    }
    CHECK(hearth__bt_iter_next(&it) == NULL);
    CHECK_INT(bad, 0);
    /* Remove every other key. */
    for (int i = 0; i < unique; i += 2) {
        hearth__name name = name_of(keys[i]);
        CHECK_INT(hearth__bt_remove(&t, &name), 0);
    }
    CHECK(hearth__bt_check(t));
    CHECK_INT(hearth__bt_count(t), unique / 2);
    for (int i = 0; i < unique; i++) {
        hearth__name name = name_of(keys[i]);
        const hearth__entry *e = hearth__bt_find(t, &name);
        if ((e != NULL) != (i % 2 == 1))
            bad++;
    }
    CHECK_INT(bad, 0);
    hearth__bt_decref(t);
    for (int i = 0; i < unique; i++)
        free(keys[i]);
    free(keys);
}

static void test_bt_replace(void) {
    hearth__bt *t = NULL;
    CHECK_INT(hearth__bt_count(NULL), 0);
    CHECK(hearth__bt_check(NULL));
    CHECK_INT(remove_int(&t, 5), 0); /* from the empty tree */
    CHECK(t == NULL);
    for (int i = 0; i < 100; i++)
        CHECK_INT(put_int(&t, i, i), 0);
    /* Replacing keeps the count; the old value is released (LSan). */
    for (int round = 1; round <= 3; round++)
        for (int i = 0; i < 100; i++)
            CHECK_INT(put_int(&t, i, i + 1000 * round), 0);
    CHECK_INT(hearth__bt_count(t), 100);
    const hearth__entry *e = find_int(t, 42);
    CHECK(e && hearth_node_number_value(e->node) == 3042);
    /* In place while held alone: the same entry slot, the same root. */
    hearth__bt *root = t;
    CHECK_INT(put_int(&t, 42, 7), 0);
    CHECK(t == root);
    CHECK(find_int(t, 42) == e);
    CHECK(hearth_node_number_value(e->node) == 7);
    /* A caller-supplied key is reused for a new entry. */
    hearth__key *key = hearth__key_from_cstr("shared");
    hearth__name name = hearth__key_name(key);
    CHECK_INT(hearth__bt_put(&t, &name, key, hearth_node_boolean(true), NULL), 0);
    e = hearth__bt_find(t, &name);
    CHECK(e && e->key == key);
    hearth__key_decref(key);
    /* Asked for, the replaced node comes back to the caller (so a node's
     * put needs no lookup before it), and a new key gives NULL. */
    hearth_node_t *was = e->node, *replaced = NULL;
    CHECK_INT(hearth__bt_put(&t, &name, NULL, hearth_node_number(8), &replaced), 0);
    CHECK(replaced == was);
    hearth_node_decref(replaced);
    hearth__name fresh;
    hearth__name_init(&fresh, "fresh", 5);
    CHECK_INT(hearth__bt_put(&t, &fresh, NULL, hearth_node_number(9), &replaced), 0);
    CHECK(replaced == NULL);
    CHECK_INT(hearth__bt_put(&t, &fresh, NULL, hearth_node_number(10), &replaced), 0);
    CHECK(replaced && hearth_node_number_value(replaced) == 9);
    hearth_node_decref(replaced);
    CHECK_INT(remove_int(&t, 1000), 0); /* absent */
    CHECK_INT(hearth__bt_count(t), 102);
    CHECK(hearth__bt_check(t));
    hearth__bt_decref(t);
}

/* Sorted entries "0".."n-1" mapped to numbers. */
static hearth__entry *int_entries(int n) {
    hearth__entry *e = malloc(sizeof *e * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        char buf[16];
        hearth__name name = int_name(i, buf);
        e[i].key = hearth__key_create(&name);
        e[i].node = hearth_node_number(i);
    }
    return e;
}

static void test_bt_build(void) {
    static const int sizes[] = {0,    1,    2,     31,    32,    33,   1023,
                                1024, 1025, 32767, 32768, 32769, 50000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        hearth__entry *e = int_entries(n);
        hearth__bt *t = (hearth__bt *)&t; /* must be overwritten */
        CHECK_INT(hearth__bt_build(e, (size_t)n, &t), 0);
        free(e);
        double *value = malloc(sizeof *value * (size_t)(n + 2));
        for (int i = 0; i < n; i++)
            value[i] = i;
        value[n] = value[n + 1] = -1;
        verify_ints(t, value, n, true);
        if (n == 32768)
            CHECK_INT(bt_height(t), 2);
        if (n == 32769)
            CHECK_INT(bt_height(t), 3);
        /* A built tree takes updates like any other. */
        CHECK_INT(put_int(&t, n + 1, n + 1), 0);
        value[n + 1] = n + 1;
        if (n > 0) {
            CHECK_INT(remove_int(&t, 0), 0);
            value[0] = -1;
        }
        verify_ints(t, value, n + 2, true);
        hearth__bt_decref(t);
        free(value);
    }
}

static void test_bt_iterate_from(void) {
    enum { N = 5000 };
    hearth__bt *t = NULL;
    int order[N];
    for (int i = 0; i < N; i++)
        order[i] = i;
    shuffle(order, N);
    for (int i = 0; i < N; i++)
        CHECK_INT(put_int(&t, order[i], order[i]), 0);
    static const size_t starts[] = {0, 1, 15, 16, 31, 32, 33, 1000, 2500,
                                    N - 33, N - 1, N, N + 1, (size_t)-1};
    for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
        hearth__bt_iter it;
        hearth__bt_iter_init(&it, t, starts[s]);
        size_t i = starts[s];
        bool ok = true;
        for (const hearth__entry *e; (e = hearth__bt_iter_next(&it)); i++)
            if (e->key->ival != (int32_t)i)
                ok = false;
        CHECK(ok);
        CHECK_INT(i, starts[s] < N ? (size_t)N : starts[s]);
        CHECK(hearth__bt_iter_next(&it) == NULL); /* stays done */
    }
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, NULL, 0);
    CHECK(hearth__bt_iter_next(&it) == NULL);
    hearth__bt_decref(t);
}

/* The (key, node) pairs of a tree, to compare before and after. */
typedef struct pairs {
    size_t n;
    const hearth__key **key;
    const hearth_node_t **node;
} pairs;

static pairs take_pairs(const hearth__bt *t) {
    pairs p;
    p.n = hearth__bt_count(t);
    p.key = malloc(sizeof *p.key * (p.n + 1));
    p.node = malloc(sizeof *p.node * (p.n + 1));
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, t, 0);
    size_t i = 0;
    for (const hearth__entry *e; (e = hearth__bt_iter_next(&it)) && i < p.n;
         i++) {
        p.key[i] = e->key;
        p.node[i] = e->node;
    }
    return p;
}

static bool same_pairs(const hearth__bt *t, const pairs *p) {
    if (!hearth__bt_check(t) || hearth__bt_count(t) != p->n)
        return false;
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, t, 0);
    for (size_t i = 0; i < p->n; i++) {
        const hearth__entry *e = hearth__bt_iter_next(&it);
        if (!e || e->key != p->key[i] || e->node != p->node[i] ||
            hearth__bt_at(t, i) != e)
            return false;
    }
    return hearth__bt_iter_next(&it) == NULL;
}

static void free_pairs(pairs *p) {
    free(p->key);
    free(p->node);
}

static void test_bt_persistence(void) {
    enum { N = 5000, OPS = 3000 };
    hearth__bt *t = NULL;
    double value[2 * N];
    int order[N];
    for (int i = 0; i < 2 * N; i++)
        value[i] = -1;
    for (int i = 0; i < N; i++)
        order[i] = 2 * i; /* even keys; odd ones get inserted later */
    shuffle(order, N);
    for (int i = 0; i < N; i++) {
        CHECK_INT(put_int(&t, order[i], order[i]), 0);
        value[order[i]] = order[i];
    }

    hearth__bt *snap = t;
    hearth__bt_incref(snap);
    pairs before = take_pairs(snap);
    char buf[16];
    hearth__name k0 = int_name(0, buf);
    CHECK(!path_unique(t, &k0));

    /* The first update path-copies: the copy's path is ours alone, the
     * rest of the tree is still shared. */
    CHECK_INT(put_int(&t, 1, 1), 0);
    value[1] = 1;
    CHECK(t != snap);
    hearth__name k1 = int_name(1, buf);
    CHECK(path_unique(t, &k1));
    hearth__name far = int_name(2 * N - 2, buf);
    CHECK(!path_unique(t, &far));

    hearth__bt *snap2 = NULL;
    pairs mid = {0, NULL, NULL};
    for (int op = 0; op < OPS; op++) {
        int k = (int)(rng() % (2 * N));
        int kind = op % 3;
        if (kind == 0) { /* insert or replace */
            CHECK_INT(put_int(&t, k, k + 0.25), 0);
            value[k] = k + 0.25;
        } else if (kind == 1) { /* replace an even key */
            k &= ~1;
            CHECK_INT(put_int(&t, k, k + 0.5), 0);
            value[k] = k + 0.5;
        } else {
            CHECK_INT(remove_int(&t, k), 0);
            value[k] = -1;
        }
        if (op == OPS / 2) {
            snap2 = t;
            hearth__bt_incref(snap2);
            mid = take_pairs(snap2);
        }
        if (op % 250 == 249) {
            CHECK(same_pairs(snap, &before));
            CHECK(hearth__bt_check(t));
            if (snap2)
                CHECK(same_pairs(snap2, &mid));
        }
    }
    verify_ints(t, value, 2 * N, true);
    CHECK(same_pairs(snap, &before));
    CHECK(same_pairs(snap2, &mid));
    /* The snapshot still maps every even key to its first value. */
    for (int i = 0; i < N; i++) {
        const hearth__entry *e = find_int(snap, 2 * i);
        CHECK(e && hearth_node_number_value(e->node) == 2 * i);
    }
    /* Dropping the newest version leaves the older ones intact. */
    hearth__bt_decref(t);
    CHECK(same_pairs(snap, &before));
    CHECK(same_pairs(snap2, &mid));
    hearth__bt_decref(snap2);
    CHECK(same_pairs(snap, &before));
    /* A snapshot, once alone again, is edited in place. */
    hearth__bt *root = snap;
    const hearth__entry *e = find_int(snap, 4);
    CHECK_INT(put_int(&snap, 4, -4), 0);
    CHECK(snap == root && find_int(snap, 4) == e);
    hearth__bt_decref(snap);
    free_pairs(&before);
    free_pairs(&mid);
}

/* Runs one update with the k-th allocation failing, k = 0, 1, ..., until it
 * succeeds. A failure must leave the tree (and a snapshot, when `shared`)
 * exactly as it was. kind: 0 put (key, v), 1 remove key. Returns how many
 * attempts failed. */
static int bt_op_under_failures(hearth__bt **t, bool shared, int kind, int key,
                                double v) {
    int failures = 0;
    for (long k = 0; k < 10000; k++) {
        hearth__bt *snap = NULL;
        if (shared) {
            snap = *t;
            hearth__bt_incref(snap);
        }
        pairs before = take_pairs(*t);
        hearth__bt *root = *t;
        hearth_node_t *node = kind == 0 ? hearth_node_number(v) : NULL;
        char buf[16];
        hearth__name name = int_name(key, buf);
        hearth__alloc_fail_after(k);
        int rc = kind == 0 ? hearth__bt_put(t, &name, NULL, node, NULL)
                           : hearth__bt_remove(t, &name);
        hearth__alloc_fail_after(-1);
        if (rc == HEARTH_ENOMEM) {
            failures++;
            hearth_node_decref(node);
            if (*t != root || !same_pairs(*t, &before)) {
                fprintf(stderr, "  %s %d with allocation %ld failing changed "
                                "the tree\n",
                        kind ? "remove" : "put", key, k);
                test_failures++;
            }
        } else {
            CHECK_INT(rc, 0);
            CHECK(hearth__bt_check(*t));
            const hearth__entry *e = hearth__bt_find(*t, &name);
            if (kind == 0)
                CHECK(e && e->node == node);
            else
                CHECK(e == NULL);
        }
        if (snap) {
            CHECK(same_pairs(snap, &before));
            hearth__bt_decref(snap);
        }
        free_pairs(&before);
        if (rc != HEARTH_ENOMEM)
            break;
    }
    return failures;
}

static void test_bt_alloc_failure(void) {
    for (int shared = 0; shared < 2; shared++) {
        /* 1024 even keys appended: 32 full leaves under a full root. */
        hearth__bt *t = NULL;
        double value[4096];
        for (int i = 0; i < 4096; i++)
            value[i] = -1;
        for (int i = 0; i < 1024; i++) {
            CHECK_INT(put_int(&t, 2 * i, 2 * i), 0);
            value[2 * i] = 2 * i;
        }
        CHECK_INT(bt_height(t), 1);
        /* A middle insert splits a leaf, the root, and grows a level:
         * a leaf, an inner page and a root at least (and a key, unless
         * the shared one for "1001" exists already). */
        int f = bt_op_under_failures(&t, shared, 0, 1001, 1001);
        value[1001] = 1001;
        CHECK(f >= 3);
        CHECK_INT(bt_height(t), 2);
        /* Replacing needs nothing when held alone. */
        f = bt_op_under_failures(&t, shared, 0, 1000, 1000.5);
        value[1000] = 1000.5;
        CHECK(shared ? f > 0 : f == 0);
        /* Removals, also of absent keys. */
        f = bt_op_under_failures(&t, shared, 1, 1001, 0);
        value[1001] = -1;
        CHECK(shared ? f > 0 : f == 0);
        CHECK_INT(bt_op_under_failures(&t, shared, 1, 3, 0), 0);
        /* A random mix. */
        for (int op = 0; op < 150; op++) {
            int key = (int)(rng() % 4096);
            if (rng() % 2) {
                bt_op_under_failures(&t, shared, 0, key, key);
                value[key] = key;
            } else {
                bt_op_under_failures(&t, shared, 1, key, 0);
                value[key] = -1;
            }
        }
        verify_ints(t, value, 4096, true);
        hearth__bt_decref(t);

        /* Emptying a leaf and collapsing the root. */
        t = NULL;
        for (int i = 0; i < 33; i++)
            CHECK_INT(put_int(&t, i, i), 0);
        CHECK_INT(bt_height(t), 1);
        bt_op_under_failures(&t, shared, 1, 32, 0);
        CHECK_INT(bt_height(t), 0);
        CHECK_INT(hearth__bt_count(t), 32);
        for (int i = 0; i < 32; i++)
            bt_op_under_failures(&t, shared, 1, i, 0);
        CHECK(t == NULL);
        /* Into the empty tree. */
        CHECK(bt_op_under_failures(&t, false, 0, 5, 5) >= 1);
        CHECK_INT(hearth__bt_count(t), 1);
        hearth__bt_decref(t);
    }
}

static void test_bt_build_alloc_failure(void) {
    static const int sizes[] = {1, 33, 1025, 40000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        hearth__entry *e = int_entries(n);
        int failures = 0;
        for (long k = 0; k < 100000; k++) {
            hearth__bt *t = NULL;
            hearth__alloc_fail_after(k);
            int rc = hearth__bt_build(e, (size_t)n, &t);
            hearth__alloc_fail_after(-1);
            if (rc == HEARTH_ENOMEM) {
                failures++;
                /* The entries are still the caller's, untouched. */
                bool intact = true;
                for (int i = 0; i < n; i++)
                    if ((!hearth__key_shared(e[i].key) &&
                         atomic_load(&e[i].key->refs) != 1) ||
                        atomic_load(&e[i].node->refs) != 1 ||
                        e[i].key->ival != i)
                        intact = false;
                CHECK(intact);
                continue;
            }
            CHECK_INT(rc, 0);
            double *value = malloc(sizeof *value * (size_t)n);
            for (int i = 0; i < n; i++)
                value[i] = i;
            verify_ints(t, value, n, false);
            free(value);
            hearth__bt_decref(t);
            break;
        }
        CHECK(failures >= 2);
        free(e);
    }
}


/* ---- hearth__bt_diff ---- */

typedef struct diff_log {
    char text[8192];
    int calls;
} diff_log;

static int log_diff(const hearth__key *key, const hearth_node_t *old,
                    const hearth_node_t *now, void *ctx) {
    diff_log *d = ctx;
    size_t len = strlen(d->text);
    snprintf(d->text + len, sizeof d->text - len, "%s%c%s", len ? " " : "",
             !old ? '+' : !now ? '-' : '~', key->s);
    d->calls++;
    return 0;
}

static hearth__bt *diff_tree(int n) {
    hearth__bt *t = NULL;
    char key[16];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "k%05d", i);
        hearth__name name;
        hearth__name_init(&name, key, strlen(key));
        CHECK_INT(hearth__bt_put(&t, &name, NULL, hearth_node_number(i), NULL), 0);
    }
    return t;
}

static void put_num(hearth__bt **t, const char *key, double v) {
    hearth__name name;
    hearth__name_init(&name, key, strlen(key));
    CHECK_INT(hearth__bt_put(t, &name, NULL, hearth_node_number(v), NULL), 0);
}

static void test_bt_diff(void) {
    hearth__bt *a = diff_tree(20000);
    hearth__bt_incref(a);
    hearth__bt *b = a; /* b shares every page with a, then changes */
    diff_log d = {"", 0};
    CHECK_INT(hearth__bt_diff(a, b, log_diff, &d), 0);
    CHECK_INT(d.calls, 0);
    put_num(&b, "k00007", -1);
    put_num(&b, "k12345", -1);
    put_num(&b, "k12345a", 5); /* added */
    hearth__name gone;
    hearth__name_init(&gone, "k19999", 6);
    CHECK_INT(hearth__bt_remove(&b, &gone), 0);
    CHECK_INT(hearth__bt_diff(a, b, log_diff, &d), 0);
    CHECK_STR(d.text, "~k00007 ~k12345 +k12345a -k19999");
    /* The other way round reports the mirror image. */
    diff_log r = {"", 0};
    CHECK_INT(hearth__bt_diff(b, a, log_diff, &r), 0);
    CHECK_STR(r.text, "~k00007 ~k12345 -k12345a +k19999");
    /* Against trees sharing nothing, every key is compared. */
    hearth__bt *c = diff_tree(3);
    diff_log all = {"", 0};
    CHECK_INT(hearth__bt_diff(c, NULL, log_diff, &all), 0);
    CHECK_STR(all.text, "-k00000 -k00001 -k00002");
    hearth__bt_decref(a);
    hearth__bt_decref(b);
    hearth__bt_decref(c);
}


/* hearth__bt_replace at an entry a lookup found: in a one-leaf tree held
 * alone it edits that slot, in a shared one it copies the leaf (the other
 * holder keeps its value), in a deeper tree or without the entry it
 * searches as a put does; the replaced node comes back each time. */
static void replace_int(hearth__bt **t, int key, const hearth__entry *at,
                        double value, double was) {
    char buf[16];
    hearth__name name = int_name(key, buf);
    hearth_node_t *old = NULL;
    CHECK_INT(hearth__bt_replace(t, &name, at, hearth_node_number(value), &old),
              0);
    CHECK(old && hearth_node_number_value(old) == was);
    hearth_node_decref(old);
    const hearth__entry *e = find_int(*t, key);
    CHECK(e && hearth_node_number_value(e->node) == value);
    CHECK(hearth__bt_check(*t));
}

static void test_bt_replace_at(void) {
    hearth__bt *t = NULL;
    for (int i = 0; i < 20; i++)
        CHECK_INT(put_int(&t, i, i), 0);
    const hearth__bt *leaf = t;
    const hearth__entry *e = find_int(t, 7);
    replace_int(&t, 7, e, 70, 7);
    CHECK(t == leaf && find_int(t, 7) == e); /* held alone: in place */

    hearth__bt *snap = t;
    hearth__bt_incref(snap);
    replace_int(&t, 7, find_int(t, 7), 700, 70);
    CHECK(t != snap); /* shared: copied */
    CHECK(hearth_node_number_value(find_int(snap, 7)->node) == 70);
    CHECK(hearth_node_number_value(find_int(t, 8)->node) == 8);
    hearth__bt_decref(snap);

    replace_int(&t, 3, NULL, 30, 3); /* no entry given: a search */
    for (int i = 20; i < 2000; i++)
        CHECK_INT(put_int(&t, i, i), 0);
    replace_int(&t, 1500, find_int(t, 1500), 15, 1500); /* deeper: a search */
    hearth__bt_decref(t);
}

/* Keys whose first 8 bytes agree share a digest, so the search must tell
 * them apart by key: in pages where every entry ties with the name and in
 * pages where only some do; absent names land where they belong. */
static void test_bt_shared_prefix(void) {
    enum { N = 600 };
    hearth__bt *t = NULL;
    char buf[32];
    for (int i = 0; i < N; i += 2) { /* even suffixes only */
        snprintf(buf, sizeof buf, "%s%04d", i % 3 ? "samepfx_" : "samepfy", i);
        hearth__name name = name_of(buf);
        CHECK_INT(hearth__bt_put(&t, &name, NULL, hearth_node_number(i), NULL),
                  0);
    }
    CHECK(hearth__bt_check(t));
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof buf, "%s%04d", i % 3 ? "samepfx_" : "samepfy", i);
        hearth__name name = name_of(buf);
        const hearth__entry *e = hearth__bt_find(t, &name);
        CHECK((e != NULL) == (i % 2 == 0));
        if (e)
            CHECK(hearth_node_number_value(e->node) == i);
        bool found;
        size_t rank = hearth__bt_rank(t, &name, &found);
        CHECK(found == (i % 2 == 0));
        /* What rank says is below name is below it, and the next is not. */
        const hearth__entry *before = rank ? hearth__bt_at(t, rank - 1) : NULL;
        const hearth__entry *at = hearth__bt_at(t, rank);
        if (before)
            CHECK(strcmp(before->key->s, buf) < 0);
        if (at)
            CHECK(strcmp(at->key->s, buf) >= 0);
    }
    hearth__bt_decref(t);
}

const test_case children_tests[] = {
    {"tree_bt_diff", test_bt_diff},
    {"tree_bt_sequential_100k", test_bt_sequential},
    {"tree_bt_random_100k", test_bt_random},
    {"tree_bt_mixed", test_bt_mixed},
    {"tree_bt_string_keys", test_bt_string_keys},
    {"tree_bt_shared_prefix", test_bt_shared_prefix},
    {"tree_bt_replace_at", test_bt_replace_at},
    {"tree_bt_replace", test_bt_replace},
    {"tree_bt_build", test_bt_build},
    {"tree_bt_iterate_from", test_bt_iterate_from},
    {"tree_bt_persistence", test_bt_persistence},
    {"tree_bt_alloc_failure", test_bt_alloc_failure},
    {"tree_bt_build_alloc_failure", test_bt_build_alloc_failure},
    {NULL, NULL},
};
