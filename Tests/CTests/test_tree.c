/* test_tree.c - the tree layer:
 * - key order (path/key.c): integer keys, UTF-16 order, sentinels;
 * - the persistent B+tree (tree/children.c): 100k sequential and random
 *   inserts and removals with invariant checks, lookups, rank, iteration,
 *   bulk building, snapshots that never change, and allocation failures
 *   that leave the tree exactly as it was;
 * - nodes (tree/node.c): constructors and accessors, updates by path,
 *   priorities, copy-on-write against held snapshots (including a random
 *   differential run), equality, the depth limit, self-insertion, value
 *   order, server-value resolution, and allocation failures;
 * - the node hash text (tree/hash.c) and push IDs (tree/pushid.c). */
#include "test.h"

#include "common/internal.h"
#include "tree/node.h"

#include <math.h>
#include <openssl/evp.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void shuffle(int *a, size_t n) {
    for (size_t i = n; i > 1; i--) {
        size_t j = rng() % i;
        int t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

static hearth__name name_of(const char *s) {
    hearth__name n;
    hearth__name_init(&n, s, strlen(s));
    return n;
}

/* ------------------------------------------------------------------------ */
/* Key order                                                                */

/* Strictly increasing in the service's order. */
static const char *const ORDERED_KEYS[] = {
    "-2147483648", /* int32 min */
    "-10",
    "-1",
    "0",
    "00", /* same value: shorter first */
    "1",
    "01",
    "001",
    "00000000000001",
    "2",
    "10",
    "0010",
    "11",
    "2147483647", /* int32 max */
    /* Everything else, by UTF-16 code units. */
    "-",
    "-2147483649", /* below int32: a string */
    "-a",
    "1.5",
    "12345678901", /* eleven digits: a string */
    "2147483648",  /* above int32: a string */
    "4294967296",
    "A",
    "Z",
    "[MAX_NAME]", /* plain keys that look like the sentinels' names */
    "[MIN_NAME]",
    "_",
    "a",
    "aa",
    "ab",
    "a\xF0\x9F\x90\xB5", /* a🐵 */
    "a\xEF\xBD\x9E",     /* a～ */
    "b",
    "z",
    "~",
    "\xC3\xA9",         /* é U+00E9 */
    "\xE2\x9C\x94",     /* ✔ U+2714 */
    "\xED\x9F\xBF",     /* U+D7FF */
    "\xF0\x90\x80\x80", /* U+10000 = D800 DC00 */
    "\xF0\x9F\x8C\xB4", /* 🌴 U+1F334 = D83C DF34 */
    "\xF0\x9F\x90\xB5", /* 🐵 U+1F435 = D83D DC35 */
    "\xF4\x8F\xBF\xBF", /* U+10FFFF = DBFF DFFF */
    "\xEE\x80\x80",     /* U+E000: after every supplementary character */
    "\xEF\xBD\x9E",     /* ～ U+FF5E */
    "\xEF\xBF\xBF",     /* U+FFFF */
};
#define N_ORDERED (sizeof ORDERED_KEYS / sizeof ORDERED_KEYS[0])

static void test_key_order(void) {
    for (size_t i = 0; i < N_ORDERED; i++) {
        for (size_t j = 0; j < N_ORDERED; j++) {
            /* Copies, so equal keys are never the same pointer. */
            char a[64], b[64];
            snprintf(a, sizeof a, "%s", ORDERED_KEYS[i]);
            snprintf(b, sizeof b, "%s", ORDERED_KEYS[j]);
            int c = hearth_key_compare(a, b);
            hearth__name na = name_of(a), nb = name_of(b);
            int c2 = hearth__name_compare(&na, &nb);
            int want = i < j ? -1 : i > j ? 1 : 0;
            int got = c < 0 ? -1 : c > 0 ? 1 : 0;
            int got2 = c2 < 0 ? -1 : c2 > 0 ? 1 : 0;
            if (got != want || got2 != want) {
                fprintf(stderr, "  compare(\"%s\", \"%s\") = %d / %d, want %d\n",
                        a, b, c, c2, want);
                test_failures++;
            }
        }
    }
    /* "-0" and "00" are both 0 and two bytes long; they must still differ
     * (they are distinct keys) and sort after "0", before "1". */
    CHECK(hearth_key_compare("-0", "00") != 0);
    CHECK((hearth_key_compare("-0", "00") < 0) ==
          (hearth_key_compare("00", "-0") > 0));
    CHECK(hearth_key_compare("0", "-0") < 0);
    CHECK(hearth_key_compare("-0", "1") < 0);
    CHECK(hearth_key_compare("-0", "-1") > 0);
}

static void test_key_integer_form(void) {
    static const struct {
        const char *s;
        bool is_int;
        int32_t v;
    } cases[] = {
        {"0", true, 0},
        {"7", true, 7},
        {"-7", true, -7},
        {"-0", true, 0},
        {"007", true, 7},
        {"00000000000", true, 0},         /* (0*) then \d{1,10} */
        {"000000000001234567890", true, 1234567890},
        {"2147483647", true, INT32_MAX},
        {"-2147483648", true, INT32_MIN},
        {"2147483648", false, 0},
        {"-2147483649", false, 0},
        {"9999999999", false, 0},         /* ten digits, over int32 */
        {"12345678901", false, 0},
        {"", false, 0},
        {"-", false, 0},
        {"--1", false, 0},
        {"+1", false, 0},
        {" 1", false, 0},
        {"1 ", false, 0},
        {"1e3", false, 0},
        {"0x1", false, 0},
        {"1.0", false, 0},
        {"\xD9\xA1", false, 0}, /* Arabic-Indic digit one */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hearth__name n = name_of(cases[i].s);
        if (n.is_int != cases[i].is_int ||
            (n.is_int && n.ival != cases[i].v) ||
            n.sentinel != HEARTH__NAME_PLAIN) {
            fprintf(stderr, "  \"%s\": is_int %d ival %d\n", cases[i].s,
                    n.is_int, n.ival);
            test_failures++;
        }
        hearth__key *k = hearth__key_from_cstr(cases[i].s);
        CHECK(k != NULL);
        if (k) {
            CHECK_STR(k->s, cases[i].s);
            CHECK_INT(k->len, strlen(cases[i].s));
            CHECK_INT(k->is_int, cases[i].is_int);
            hearth__name kn = hearth__key_name(k);
            CHECK_INT(hearth__name_compare(&kn, &n), 0);
            hearth__key_incref(k);
            hearth__key_decref(k);
            hearth__key_decref(k);
        }
    }
}

static void test_key_sentinels(void) {
    hearth__name min = hearth__name_sentinel(HEARTH__NAME_MIN);
    hearth__name max = hearth__name_sentinel(HEARTH__NAME_MAX);
    hearth__name min2 = hearth__name_sentinel(HEARTH__NAME_MIN);
    hearth__name max2 = hearth__name_sentinel(HEARTH__NAME_MAX);
    CHECK(hearth__name_compare(&min, &max) < 0);
    CHECK(hearth__name_compare(&max, &min) > 0);
    CHECK_INT(hearth__name_compare(&min, &min2), 0);
    CHECK_INT(hearth__name_compare(&max, &max2), 0);
    for (size_t i = 0; i < N_ORDERED; i++) {
        hearth__name k = name_of(ORDERED_KEYS[i]);
        CHECK(hearth__name_compare(&min, &k) < 0);
        CHECK(hearth__name_compare(&k, &min) > 0);
        CHECK(hearth__name_compare(&max, &k) > 0);
        CHECK(hearth__name_compare(&k, &max) < 0);
    }
}

static void test_utf16_compare(void) {
    const char *monkey = "\xF0\x9F\x90\xB5", *tilde = "\xEF\xBD\x9E";
    CHECK(hearth__utf16_compare(monkey, 4, tilde, 3) < 0);
    CHECK(hearth__utf16_compare(tilde, 3, monkey, 4) > 0);
    /* Byte order says the opposite. */
    CHECK(memcmp(monkey, tilde, 3) > 0);
    CHECK_INT(hearth__utf16_compare(monkey, 4, monkey, 4), 0);
    CHECK_INT(hearth__utf16_compare("", 0, "", 0), 0);
    CHECK(hearth__utf16_compare("", 0, "a", 1) < 0);
    CHECK(hearth__utf16_compare("ab", 2, "a", 1) > 0);
    CHECK(hearth__utf16_compare("a\0b", 3, "a\0c", 3) < 0);
    /* Differences after a shared multi-byte prefix. */
    CHECK(hearth__utf16_compare("\xE2\x9C\x94\xF0\x9F\x90\xB5", 7,
                                "\xE2\x9C\x94\xEF\xBD\x9E", 6) < 0);
    CHECK(hearth__utf16_compare("\xE2\x9C\x94", 3, "\xE2\x9C\x95", 3) < 0);
    CHECK(hearth__utf16_compare("\xE2\x9C\x95", 3, "\xE2\x9D\x80", 3) < 0);
}

static char *heap_copy(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    memcpy(c, s, n);
    return c;
}

/* Keys come from users: hearth_key_compare and lookups must never read past
 * the end of malformed UTF-8, and must still order it consistently. */
static void test_key_compare_malformed(void) {
    const char *bad[] = {"\xF0", "\xF1", "\xFF", "\xFE", "\xE2", "\xE3",
                         "a\xC3", "a\xC4", "\x80", "\x81", "\xE2\x41",
                         "\xE2\x9C", "\xF0\x9F\x90", "\xF0\x9F", "a",
                         "\xE2\x9C\x94"};
    size_t n = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            char *a = heap_copy(bad[i]), *b = heap_copy(bad[j]);
            int ab = hearth_key_compare(a, b), ba = hearth_key_compare(b, a);
            if (i == j)
                CHECK_INT(ab, 0);
            else
                CHECK(ab != 0 && (ab < 0) == (ba > 0));
            free(a);
            free(b);
        }
    }
    /* Lookups with malformed keys in a tree of valid ones. */
    hearth_node_t *n2 = node_from("{\"\xE2\x9C\x94\":1,\"\xF0\x9F\x90\xB5\":2,"
                                  "\"a\":3}");
    for (size_t i = 0; i < n; i++) {
        char *k = heap_copy(bad[i]);
        const hearth_node_t *c = hearth_node_child(n2, k);
        CHECK(c != NULL);
        free(k);
    }
    hearth_node_decref(n2);
}

/* ------------------------------------------------------------------------ */
/* B+tree                                                                   */

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
    int rc = hearth__bt_put(t, &name, NULL, node);
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
    CHECK(hearth__bt_path_unique(t, &k));
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
        int rc = hearth__bt_put(&t, &name, NULL, v);
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
    CHECK_INT(hearth__bt_put(&t, &name, key, hearth_node_boolean(true)), 0);
    e = hearth__bt_find(t, &name);
    CHECK(e && e->key == key);
    hearth__key_decref(key);
    CHECK_INT(remove_int(&t, 1000), 0); /* absent */
    CHECK_INT(hearth__bt_count(t), 101);
    CHECK(hearth__bt_check(t));
    hearth__bt_decref(t);
}

/* Sorted entries "0".."n-1" mapped to numbers. */
static hearth__entry *int_entries(int n) {
    hearth__entry *e = malloc(sizeof *e * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        char buf[16];
        hearth__name name = int_name(i, buf);
        e[i].key = hearth__key_new(&name);
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
    CHECK(!hearth__bt_path_unique(t, &k0));

    /* The first update path-copies: the copy's path is ours alone, the
     * rest of the tree is still shared. */
    CHECK_INT(put_int(&t, 1, 1), 0);
    value[1] = 1;
    CHECK(t != snap);
    hearth__name k1 = int_name(1, buf);
    CHECK(hearth__bt_path_unique(t, &k1));
    hearth__name far = int_name(2 * N - 2, buf);
    CHECK(!hearth__bt_path_unique(t, &far));

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
        int rc = kind == 0 ? hearth__bt_put(t, &name, NULL, node)
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
         * a key, a leaf, an inner page and a root at least. */
        int f = bt_op_under_failures(&t, shared, 0, 1001, 1001);
        value[1001] = 1001;
        CHECK(f >= 4);
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
                    if (atomic_load(&e[i].key->refs) != 1 ||
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

static int collect_keys(const char *key, const hearth_node_t *child,
                        void *ctx) {
    (void)child;
    char *out = ctx;
    if (*out)
        strcat(out, " ");
    strcat(out, key);
    return 0;
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
    CHECK_INT(hearth_node_foreach_child(n, collect_keys, keys), 0);
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
    char big[8192] = "{";
    for (int i = 0; i < 300; i++) {
        char item[32];
        snprintf(item, sizeof item, "%s\"k%03d\":%d", i ? "," : "", i, i);
        strcat(big, item);
    }
    strcat(big, "}");
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
        CHECK_INT(hearth__bt_put(&t, &name, NULL, hearth_node_number(i)), 0);
    }
    return t;
}

static void put_num(hearth__bt **t, const char *key, double v) {
    hearth__name name;
    hearth__name_init(&name, key, strlen(key));
    CHECK_INT(hearth__bt_put(t, &name, NULL, hearth_node_number(v)), 0);
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

/* ---- name sorts agree with the name order ---- */

static void test_name_sort_agrees(void) {
    static const char *const pieces[] = {
        "", "0", "1", "-1", "00", "9", "10", "2147483647", "2147483648",
        "-2147483648", "-2147483649", "a", "ab", "abcdefg", "abcdefgh",
        "abcdefgz", "B", "\xc3\xa9", "\xee\x80\x80", "\xef\xbd\x9e",
        "\xf0\x9f\x90\xb5", "\xf4\x8f\xbf\xbf", "z", "~", "-"};
    size_t np = sizeof pieces / sizeof *pieces;
    char keys[400][32];
    size_t n = 0;
    for (size_t i = 0; i < np; i++)
        for (size_t j = 0; j < np && n < 400; j += 3) {
            snprintf(keys[n], sizeof keys[n], "%s%s", pieces[i], pieces[j]);
            if (keys[n][0])
                n++;
        }
    int checked = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            hearth__name a, b;
            hearth__name_init(&a, keys[i], strlen(keys[i]));
            hearth__name_init(&b, keys[j], strlen(keys[j]));
            uint64_t sa = hearth__name_sort(&a), sb = hearth__name_sort(&b);
            int c = hearth__name_compare(&a, &b);
            if (sa != sb) {
                checked++;
                if ((sa < sb) != (c < 0)) {
                    fprintf(stderr, "  sort disagrees: \"%s\" vs \"%s\"\n",
                            keys[i], keys[j]);
                    test_failures++;
                    return;
                }
            }
        }
    CHECK(checked > 10000);
    hearth__name min = hearth__name_sentinel(HEARTH__NAME_MIN);
    hearth__name max = hearth__name_sentinel(HEARTH__NAME_MAX);
    hearth__name any;
    hearth__name_init(&any, "\xf4\x8f\xbf\xbf", 4);
    CHECK(hearth__name_sort(&min) < hearth__name_sort(&any));
    CHECK(hearth__name_sort(&any) < hearth__name_sort(&max));
}

const test_case tree_tests[] = {
    {"tree_name_sort_agrees", test_name_sort_agrees},
    {"tree_bt_diff", test_bt_diff},
    {"tree_key_order", test_key_order},
    {"tree_key_integer_form", test_key_integer_form},
    {"tree_key_sentinels", test_key_sentinels},
    {"tree_key_utf16_compare", test_utf16_compare},
    {"tree_key_compare_malformed_utf8", test_key_compare_malformed},
    {"tree_bt_sequential_100k", test_bt_sequential},
    {"tree_bt_random_100k", test_bt_random},
    {"tree_bt_mixed", test_bt_mixed},
    {"tree_bt_string_keys", test_bt_string_keys},
    {"tree_bt_replace", test_bt_replace},
    {"tree_bt_build", test_bt_build},
    {"tree_bt_iterate_from", test_bt_iterate_from},
    {"tree_bt_persistence", test_bt_persistence},
    {"tree_bt_alloc_failure", test_bt_alloc_failure},
    {"tree_bt_build_alloc_failure", test_bt_build_alloc_failure},
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
