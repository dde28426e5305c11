/* test_key.c - key order (path/key.c): integer keys, UTF-16 order,
 * sentinels, and name sorts that agree with the order. */
#include "test_tree.h"

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
    /* Eight bytes are told apart without the keys (fixed-width ids such
     * as "k0000001" never tie), with the lead bytes EE and EF lifted. */
    static const char *const apart[][2] = {{"k0000001", "k0000002"},
                                           {"abcdefgh", "abcdefgz"},
                                           {"ab\xee\x80\x80xyz", "ab\xf0\x9f\x90\xb5xy"}};
    for (size_t i = 0; i < sizeof apart / sizeof *apart; i++) {
        hearth__name a, b;
        hearth__name_init(&a, apart[i][0], strlen(apart[i][0]));
        hearth__name_init(&b, apart[i][1], strlen(apart[i][1]));
        CHECK(hearth__name_sort(&a) != hearth__name_sort(&b));
        CHECK((hearth__name_sort(&a) < hearth__name_sort(&b)) ==
              (hearth__name_compare(&a, &b) < 0));
    }
}


/* Keys of up to 8 bytes are made once and shared for good (copying a page of
 * children then leaves their counts alone); long ones are counted. */
static void test_short_keys_shared(void) {
    hearth__key *a = hearth__key_from_cstr("shared");
    hearth__key *b = hearth__key_from_cstr("shared");
    CHECK(a == b);
    CHECK(hearth__key_shared(a));
    hearth__key_incref(a);
    hearth__key_decref(a);
    hearth__key_decref(a);
    hearth__key_decref(b);
    CHECK_STR(a->s, "shared"); /* never freed (ASan would object) */
    hearth__key *l1 = hearth__key_from_cstr("a longer key");
    hearth__key *l2 = hearth__key_from_cstr("a longer key");
    CHECK(l1 != l2);
    CHECK(!hearth__key_shared(l1));
    CHECK_INT(atomic_load(&l1->refs), 1);
    hearth__key_decref(l1);
    hearth__key_decref(l2);
    /* An integer key keeps its integer form. */
    hearth__key *n = hearth__key_from_cstr("42");
    CHECK(n->is_int && n->ival == 42);
    hearth__key_decref(n);
}

const test_case key_tests[] = {
    {"tree_name_sort_agrees", test_name_sort_agrees},
    {"tree_short_keys_shared", test_short_keys_shared},
    {"tree_key_order", test_key_order},
    {"tree_key_integer_form", test_key_integer_form},
    {"tree_key_sentinels", test_key_sentinels},
    {"tree_key_utf16_compare", test_utf16_compare},
    {"tree_key_compare_malformed_utf8", test_key_compare_malformed},
    {NULL, NULL},
};
