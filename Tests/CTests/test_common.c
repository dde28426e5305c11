/* test_common.c - the common and path layers: the error table, the version,
 * hearth__error, JavaScript number formatting (hearth__format_number), UTF-8
 * validation, the byte buffer, the allocation-failure hook, and key and path
 * validation and parsing (path/path.h): forbidden characters, size and depth
 * limits, reserved names, slashes, and messages that name the culprit; the
 * v5 envelope (net/v5.h): pieces cut between characters, joined back
 * within a bound, the keep-alive. */
#include "test.h"

#include "common/internal.h"
#include "net/v5.h"
#include "path/path.h"

#include <math.h>
#include <stdint.h>

/* ---- errors and version ---- */

static void test_errors(void) {
    /* The public table is what the functions answer, row by row. */
    int rows = 0;
#define XX(name, value, msg)                                                   \
    CHECK_INT(HEARTH_##name, value);                                           \
    CHECK_STR(hearth_err_name(value), "HEARTH_" #name);                        \
    CHECK_STR(hearth_strerror(value), msg);                                    \
    rows++;
    HEARTH_ERRNO_MAP(XX)
#undef XX
    CHECK_INT(rows, HEARTH_ERRNO_COUNT);
    CHECK_INT(HEARTH_ERRNO_LAST, HEARTH_ENOSPC);

    const char *unknown_msg = hearth_strerror(-12345);
    CHECK(unknown_msg != NULL);
    const char *names[128], *messages[128];
    int n = 0;
    for (int code = -1; code >= HEARTH_ERRNO_LAST && n < 128; code--) {
        const char *name = hearth_err_name(code);
        const char *msg = hearth_strerror(code);
        CHECK(name != NULL);
        CHECK(msg != NULL);
        if (!name || !msg)
            continue;
        if (strcmp(name, "HEARTH_UNKNOWN") == 0 ||
            strncmp(name, "HEARTH_E", 8) != 0) {
            fprintf(stderr, "  code %d has name \"%s\"\n", code, name);
            test_failures++;
        }
        if (msg[0] == '\0' || strcmp(msg, unknown_msg) == 0) {
            fprintf(stderr, "  code %d has message \"%s\"\n", code, msg);
            test_failures++;
        }
        for (int k = 0; k < n; k++) {
            CHECK(strcmp(names[k], name) != 0);
            CHECK(strcmp(messages[k], msg) != 0);
        }
        names[n] = name;
        messages[n] = msg;
        n++;
    }
    CHECK_INT(n, -HEARTH_ERRNO_LAST);
    CHECK_STR(hearth_err_name(HEARTH_OK), "HEARTH_OK");
    CHECK(hearth_strerror(HEARTH_OK)[0] != '\0');
    /* Codes outside the table. */
    CHECK_STR(hearth_err_name(HEARTH_ERRNO_LAST - 1), "HEARTH_UNKNOWN");
    CHECK_STR(hearth_err_name(1), "HEARTH_UNKNOWN");
    CHECK_STR(hearth_err_name(-1000), "HEARTH_UNKNOWN");
    CHECK(hearth_strerror(HEARTH_ERRNO_LAST - 1) != NULL);
    CHECK(hearth_strerror(7) != NULL);
}

static void test_version(void) {
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", HEARTH_VERSION_MAJOR,
             HEARTH_VERSION_MINOR, HEARTH_VERSION_PATCH);
    CHECK_STR(hearth_version(), expected);
    CHECK_STR(hearth_version(), "0.2.0");
    CHECK_INT(hearth_version_number(), HEARTH_VERSION_HEX);
    CHECK_INT(HEARTH_VERSION_HEX, 0x000200);
}

static void test_error_fill(void) {
    hearth_error_t err;
    memset(&err, 0x55, sizeof err);
    CHECK_INT(hearth__error(&err, HEARTH_EKEY, "/a/b", "bad %s %d", "key", 7),
              HEARTH_EKEY);
    CHECK_INT(err.code, HEARTH_EKEY);
    CHECK_INT(err.line, 0);
    CHECK_INT(err.column, 0);
    CHECK_STR(err.path, "/a/b");
    CHECK_STR(err.message, "bad key 7");

    CHECK_INT(hearth__error(&err, HEARTH_EPATH, NULL, "x"), HEARTH_EPATH);
    CHECK_STR(err.path, "");
    CHECK_INT(hearth__error(NULL, HEARTH_EIO, "/p", "no err"), HEARTH_EIO);

    /* Over-long texts are truncated, never overflow. */
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    hearth__error(&err, HEARTH_ETOOBIG, big, "%s%s", big, big);
    CHECK_INT(strlen(err.path), sizeof err.path - 1);
    CHECK_INT(strlen(err.message), sizeof err.message - 1);

    CHECK_INT(hearth__error_code(&err, HEARTH_ENOMEM), HEARTH_ENOMEM);
    CHECK_INT(err.code, HEARTH_ENOMEM);
    CHECK_STR(err.message, hearth_strerror(HEARTH_ENOMEM));
    CHECK_STR(err.path, "");
    CHECK_INT(hearth__error_code(NULL, HEARTH_EINVAL), HEARTH_EINVAL);
}

/* ---- numbers ---- */

static const struct {
    double v;
    const char *js; /* String(v) in JavaScript */
} NUMBERS[] = {
    {0, "0"},
    {-0.0, "0"},
    {1, "1"},
    {-1, "-1"},
    {4.5623, "4.5623"},
    {-4.5623, "-4.5623"},
    {0.1, "0.1"},
    {1e21, "1e+21"},
    {-1e21, "-1e+21"},
    {1.5e21, "1.5e+21"},
    {1e-7, "1e-7"},
    {-1e-7, "-1e-7"},
    {1.5e-7, "1.5e-7"},
    {5e-7, "5e-7"},
    {123e-20, "1.23e-18"},
    {12345678901234568.0, "12345678901234568"},
    {1.7976931348623157e+308, "1.7976931348623157e+308"},
    {-1.7976931348623157e+308, "-1.7976931348623157e+308"},
    {5e-324, "5e-324"},
    {2.5e-320, "2.5e-320"},
    {2.2250738585072014e-308, "2.2250738585072014e-308"},
    {0.000001, "0.000001"},
    {0.00001, "0.00001"},
    {0.000001234, "0.000001234"},
    {1e-10, "1e-10"},
    {9007199254740992.0, "9007199254740992"}, /* 2**53 */
    {9007199254740991.0, "9007199254740991"},
    {9007199254740994.0, "9007199254740994"},
    {-9007199254740992.0, "-9007199254740992"},
    /* Integers from 2**53 to 1e21 print their shortest digits, then zeros. */
    {1152921504606846976.0, "1152921504606847000"},    /* 2**60 */
    {18446744073709551616.0, "18446744073709552000"},  /* 2**64 */
    {-18446744073709551616.0, "-18446744073709552000"},
    {123456789012345680000.0, "123456789012345680000"},
    {999999999999999900000.0, "999999999999999900000"},
    {1e20, "100000000000000000000"},
    {123e18, "123000000000000000000"},
    {1e16, "10000000000000000"},
    {100, "100"},
    {123456789, "123456789"},
    {-2147483648.0, "-2147483648"},
    {4294967295.0, "4294967295"},
    {4294967296.5, "4294967296.5"},
    {1000000000000000.5, "1000000000000000.5"},
    {1e300, "1e+300"},
    {0.30000000000000004, "0.30000000000000004"},
    {1.0 / 3, "0.3333333333333333"},
    {2.0 / 3, "0.6666666666666666"},
    {-2.0 / 3, "-0.6666666666666666"},
    {123.456, "123.456"},
    {4.35, "4.35"},
    {0.5, "0.5"},
    {-0.5, "-0.5"},
    {1.5, "1.5"},
    {3.141592653589793, "3.141592653589793"},
};

static void test_format_number(void) {
    for (size_t i = 0; i < sizeof NUMBERS / sizeof NUMBERS[0]; i++) {
        char out[32];
        memset(out, '#', sizeof out);
        size_t len = hearth__format_number(NUMBERS[i].v, out);
        if (strcmp(out, NUMBERS[i].js) != 0 || len != strlen(out)) {
            fprintf(stderr, "  format_number(%.17g) = \"%s\" (%zu), expected "
                            "\"%s\"\n",
                    NUMBERS[i].v, out, len, NUMBERS[i].js);
            test_failures++;
        }
    }
}

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Significant digits of a formatted number (zeros at either end dropped). */
static int significant_digits(const char *s) {
    char digits[40];
    int k = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9')
            digits[k++] = *s;
    int lo = 0, hi = k;
    while (lo < hi && digits[lo] == '0')
        lo++;
    while (hi > lo && digits[hi - 1] == '0')
        hi--;
    return hi - lo;
}

/* Any finite double: the text reads back as the same double, fits the
 * buffer, and no shorter digit string would have read back. */
static void test_format_number_random(void) {
    int bad = 0;
    for (int i = 0; i < 20000 && bad < 5; i++) {
        double v;
        if (i % 4 == 3) {
            /* Integers between 2**53 and 1e21. */
            v = ldexp((double)(rng() >> 11 | 1ull << 52), (int)(rng() % 17));
        } else {
            uint64_t bits = rng();
            memcpy(&v, &bits, sizeof v);
            if (!isfinite(v))
                continue;
        }
        char out[32];
        size_t len = hearth__format_number(v, out);
        bool ok = len < 32 && len == strlen(out) && strtod(out, NULL) == v;
        int sig = significant_digits(out);
        if (ok && sig > 1) {
            char shorter[48];
            snprintf(shorter, sizeof shorter, "%.*e", sig - 2, v);
            ok = strtod(shorter, NULL) != v;
        }
        if (!ok) {
            fprintf(stderr, "  format_number(%.17g) = \"%s\"\n", v, out);
            bad++;
        }
    }
    CHECK_INT(bad, 0);
}

/* ---- UTF-8 ---- */

/* Validates a copy in a buffer of exactly len bytes, so that ASan catches
 * any read past the end. */
static bool utf8_valid(const char *s, size_t len) {
    char *copy = malloc(len ? len : 1);
    memcpy(copy, s, len);
    bool valid = hearth__utf8_valid(copy, len);
    free(copy);
    return valid;
}
#define VALID(s) utf8_valid(s, sizeof(s) - 1)

static void test_utf8(void) {
    CHECK(VALID(""));
    CHECK(VALID("plain ascii ~\x7f"));
    CHECK(VALID("\xC3\xA9"));             /* é */
    CHECK(VALID("\xE2\x9C\x94"));         /* ✔ */
    CHECK(VALID("\xF0\x9F\x90\xB5"));     /* 🐵 */
    CHECK(VALID("\xF4\x8F\xBF\xBF"));     /* U+10FFFF */
    CHECK(VALID("\xED\x9F\xBF"));         /* U+D7FF */
    CHECK(VALID("\xEE\x80\x80"));         /* U+E000 */
    CHECK(VALID("\xEF\xBF\xBF"));         /* U+FFFF */
    CHECK(VALID("\xC2\x80"));             /* U+0080 */
    CHECK(VALID("\xE0\xA0\x80"));         /* U+0800 */
    CHECK(VALID("\xF0\x90\x80\x80"));     /* U+10000 */
    CHECK(VALID("a\0b"));                 /* NUL is a character */

    CHECK(!VALID("\x80"));                /* lone continuation */
    CHECK(!VALID("a\xBF"));
    CHECK(!VALID("\xC0\x80"));            /* overlong NUL */
    CHECK(!VALID("\xC1\xBF"));            /* overlong */
    CHECK(!VALID("\xE0\x80\x80"));        /* overlong 3 bytes */
    CHECK(!VALID("\xE0\x9F\xBF"));
    CHECK(!VALID("\xF0\x80\x80\x80"));    /* overlong 4 bytes */
    CHECK(!VALID("\xF0\x8F\xBF\xBF"));
    CHECK(!VALID("\xED\xA0\x80"));        /* surrogate D800 */
    CHECK(!VALID("\xED\xBF\xBF"));        /* surrogate DFFF */
    CHECK(!VALID("\xF4\x90\x80\x80"));    /* past U+10FFFF */
    CHECK(!VALID("\xF5\x80\x80\x80"));
    CHECK(!VALID("\xFE"));
    CHECK(!VALID("\xFF"));
    CHECK(!VALID("\xE2\x28\xA1"));        /* bad continuation */
    CHECK(!VALID("\xE2\x9C"));            /* truncated */
    CHECK(!VALID("\xF0\x9F\x90"));
    CHECK(!VALID("ok\xC3"));
    /* A valid string cut inside a character. */
    CHECK(utf8_valid("\xF0\x9F\x90\xB5", 4));
    CHECK(!utf8_valid("\xF0\x9F\x90\xB5", 3));
    CHECK(!utf8_valid("\xF0\x9F\x90\xB5", 1));
    CHECK(utf8_valid("a\xE2\x9C\x94", 1));
}

/* ---- byte buffer and allocation hook ---- */

static void test_buf(void) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_adds(&b, "abc");
    hearth__buf_addc(&b, 'd');
    hearth__buf_add(&b, "efXX", 2);
    hearth__buf_printf(&b, "%d-%s", 42, "x");
    CHECK(!b.failed);
    CHECK_INT(b.len, 10);
    CHECK_STR(b.data, "abcdef42-x");
    for (int i = 0; i < 10000; i++)
        hearth__buf_addc(&b, (char)('a' + i % 26));
    hearth__buf_printf(&b, "%s", "");
    CHECK_INT(b.len, 10010);
    CHECK(b.cap > b.len);
    CHECK_INT(b.data[b.len], '\0');
    size_t len = 0;
    char *s = hearth__buf_detach(&b, &len);
    CHECK(s != NULL);
    CHECK_INT(len, 10010);
    CHECK(s && strncmp(s, "abcdef42-xabc", 13) == 0);
    CHECK(s && s[10009] == 'a' + 9999 % 26);
    CHECK(b.data == NULL && b.len == 0 && !b.failed);
    hearth__free(s);

    /* Detaching a buffer nothing was written to gives "". */
    hearth__buf_init(&b);
    s = hearth__buf_detach(&b, &len);
    CHECK_STR(s, "");
    CHECK_INT(len, 0);
    hearth__free(s);

    /* A failed allocation sticks: later appends do nothing, detach gives
     * NULL and frees what was there. */
    hearth__buf_init(&b);
    hearth__buf_adds(&b, "kept until failure");
    hearth__alloc_fail_after(0);
    for (int i = 0; i < 200; i++)
        hearth__buf_adds(&b, "0123456789");
    hearth__alloc_fail_after(-1);
    CHECK(b.failed);
    hearth__buf_adds(&b, "after");
    CHECK(b.failed);
    CHECK(!hearth__buf_reserve(&b, 1));
    len = 77;
    CHECK(hearth__buf_detach(&b, &len) == NULL);
    CHECK_INT(len, 77);
    CHECK(b.data == NULL);

    /* Failure on the very first allocation. */
    hearth__buf_init(&b);
    hearth__alloc_fail_after(0);
    hearth__buf_printf(&b, "%d", 1);
    hearth__alloc_fail_after(-1);
    CHECK(b.failed);
    CHECK(hearth__buf_detach(&b, NULL) == NULL);
    hearth__buf_free(&b);
}

static void test_alloc_hook(void) {
    hearth__alloc_fail_after(-1);
    hearth__alloc_fail_after(2);
    void *p1 = hearth__malloc(8);
    void *p2 = hearth__calloc(2, 4);
    void *p3 = hearth__malloc(8);
    void *p4 = hearth__realloc(NULL, 8);
    char *p5 = hearth__strndup("abc", 3);
    long made = hearth__alloc_fail_after(-1);
    CHECK(p1 != NULL);
    CHECK(p2 != NULL && memcmp(p2, "\0\0\0\0\0\0\0\0", 8) == 0);
    CHECK(p3 == NULL);
    CHECK(p4 == NULL);
    CHECK(p5 == NULL);
    CHECK(made >= 2);
    hearth__free(p1);
    hearth__free(p2);

    /* Disabled: everything succeeds, size 0 included. */
    void *z = hearth__malloc(0);
    CHECK(z != NULL);
    z = hearth__realloc(z, 100);
    CHECK(z != NULL);
    hearth__free(z);
    char *d = hearth__strndup("hello", 3);
    CHECK_STR(d, "hel");
    hearth__free(d);
    hearth__free(NULL);

    hearth__alloc_fail_after(0);
    CHECK(hearth__malloc(1) == NULL);
    CHECK(hearth__calloc(1, 1) == NULL);
    hearth__alloc_fail_after(-1);
    void *q = hearth__malloc(1);
    CHECK(q != NULL);
    hearth__free(q);
}

/* ---- keys ---- */

static void check_key_error(const char *key, size_t len, int code,
                            const char *in_message, int line) {
    hearth_error_t err;
    memset(&err, 0, sizeof err);
    int rc = hearth__key_check(key, len, NULL, &err);
    bool bad = rc != code || err.code != code;
    if (!bad && in_message && !strstr(err.message, in_message))
        bad = true;
    if (bad) {
        fprintf(stderr,
                "  test_common.c:%d: key check gave %s \"%s\", expected %s "
                "naming \"%s\"\n",
                line, hearth_err_name(rc), err.message, hearth_err_name(code),
                in_message ? in_message : "");
        test_failures++;
    }
}
#define KEY_ERROR(key, code, msg)                                              \
    check_key_error(key, sizeof(key) - 1, code, msg, __LINE__)

static void test_key_validation(void) {
    const char *good[] = {"a", "-", "_", "0", "-1", "key with spaces",
                          "\xF0\x9F\x90\xB5", "\xC3\xA9t\xC3\xA9", "~!@%^&*()",
                          "a\\b", "'\"", "\xEF\xBF\xBF"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        hearth_error_t err;
        int rc = hearth_validate_key(good[i], &err);
        if (rc) {
            fprintf(stderr, "  key \"%s\" rejected: %s\n", good[i],
                    err.message);
            test_failures++;
        }
    }

    KEY_ERROR("", HEARTH_EKEY, NULL);
    KEY_ERROR("ab.cd", HEARTH_EKEY, "ab.cd");
    KEY_ERROR("ab$cd", HEARTH_EKEY, "ab$cd");
    KEY_ERROR("ab#cd", HEARTH_EKEY, "ab#cd");
    KEY_ERROR("ab[cd", HEARTH_EKEY, "ab[cd");
    KEY_ERROR("ab]cd", HEARTH_EKEY, "ab]cd");
    KEY_ERROR("ab/cd", HEARTH_EKEY, "ab/cd");
    KEY_ERROR(".priority", HEARTH_EKEY, ".priority");
    KEY_ERROR(".info", HEARTH_EKEY, ".info");
    KEY_ERROR("x\x01y", HEARTH_EKEY, "x");
    KEY_ERROR("\t", HEARTH_EKEY, NULL);
    KEY_ERROR("a\nb", HEARTH_EKEY, NULL);
    KEY_ERROR("a\x1f", HEARTH_EKEY, NULL);
    KEY_ERROR("a\x7f", HEARTH_EKEY, NULL);
    KEY_ERROR("a\0b", HEARTH_EKEY, NULL);
    KEY_ERROR("\xC3", HEARTH_EKEY, NULL);
    KEY_ERROR("a\xED\xA0\x80", HEARTH_EKEY, NULL);
    KEY_ERROR("\xC0\xAE", HEARTH_EKEY, NULL); /* an overlong '.' */
    for (int c = 1; c < 0x20; c++) {
        char key[4] = {'k', (char)c, 'k', 0};
        check_key_error(key, 3, HEARTH_EKEY, NULL, __LINE__);
    }

    /* The public entry point, with and without an error record. */
    hearth_error_t err;
    CHECK_INT(hearth_validate_key("a#b", &err), HEARTH_EKEY);
    CHECK(strstr(err.message, "a#b") != NULL);
    CHECK(strstr(err.message, "#") != NULL);
    CHECK_INT(hearth_validate_key("a#b", NULL), HEARTH_EKEY);
    CHECK_INT(hearth_validate_key(NULL, &err), HEARTH_EINVAL);
    CHECK_INT(hearth_validate_key("", NULL), HEARTH_EKEY);

    /* 768 bytes is the limit, in bytes, not characters. */
    char key[1024];
    memset(key, 'k', sizeof key);
    key[768] = '\0';
    CHECK_INT(hearth_validate_key(key, NULL), 0);
    key[768] = 'k';
    key[769] = '\0';
    CHECK_INT(hearth_validate_key(key, &err), HEARTH_ETOOBIG);
    CHECK(strstr(err.message, "769") != NULL);
    for (int i = 0; i < 256; i++)
        memcpy(key + 3 * i, "\xE2\x9C\x94", 3); /* 256 x ✔ = 768 bytes */
    key[768] = '\0';
    CHECK_INT(hearth_validate_key(key, NULL), 0);
    key[768] = 'x';
    key[769] = '\0';
    CHECK_INT(hearth_validate_key(key, NULL), HEARTH_ETOOBIG);

    /* A long bad key is named by its beginning. */
    memset(key, 'q', 200);
    key[150] = '$';
    key[200] = '\0';
    CHECK_INT(hearth_validate_key(key, &err), HEARTH_EKEY);
    CHECK(strstr(err.message, "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqq") != NULL);

    /* `where` is reported. */
    CHECK_INT(hearth__key_check("a.b", 3, "/users/x", &err), HEARTH_EKEY);
    CHECK_STR(err.path, "/users/x");
    CHECK(strstr(err.message, "/users/x") != NULL);
    CHECK(strstr(err.message, "a.b") != NULL);
}

/* ---- paths ---- */

static void check_path_error(const char *path, unsigned flags, int code,
                             const char *in_message, int line) {
    hearth__path p;
    hearth_error_t err;
    memset(&err, 0, sizeof err);
    int rc = hearth__path_parse(path, flags, &p, &err);
    bool bad = rc != code || err.code != code;
    if (!bad && in_message && !strstr(err.message, in_message))
        bad = true;
    if (bad) {
        fprintf(stderr,
                "  test_common.c:%d: path \"%s\" gave %s \"%s\", expected %s "
                "naming \"%s\"\n",
                line, path, hearth_err_name(rc), err.message,
                hearth_err_name(code), in_message ? in_message : "");
        test_failures++;
    }
}
#define PATH_ERROR(path, flags, code, msg)                                     \
    check_path_error(path, flags, code, msg, __LINE__)

enum { ALL = HEARTH__PATH_ALLOW_PRIORITY | HEARTH__PATH_ALLOW_INFO };

static void test_path_parse(void) {
    hearth__path p;
    CHECK_INT(hearth__path_parse("", 0, &p, NULL), 0);
    CHECK_INT(p.n, 0);
    CHECK(!p.priority && !p.info);
    CHECK_INT(hearth__path_parse("/", 0, &p, NULL), 0);
    CHECK_INT(p.n, 0);
    CHECK_INT(hearth__path_parse("////", 0, &p, NULL), 0);
    CHECK_INT(p.n, 0);

    const char *same[] = {"a/b/c", "/a/b/c", "a/b/c/", "//a//b///c//",
                          "/a/b/c/"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        CHECK_INT(hearth__path_parse(same[i], 0, &p, NULL), 0);
        CHECK_INT(p.n, 3);
        if (p.n == 3) {
            CHECK(p.seg[0].len == 1 && p.seg[0].s[0] == 'a');
            CHECK(p.seg[1].len == 1 && p.seg[1].s[0] == 'b');
            CHECK(p.seg[2].len == 1 && p.seg[2].s[0] == 'c');
        }
    }

    /* Segments know their integer form. */
    CHECK_INT(hearth__path_parse("users/-12/0042/x", 0, &p, NULL), 0);
    CHECK_INT(p.n, 4);
    CHECK(!p.seg[0].is_int);
    CHECK(p.seg[1].is_int && p.seg[1].ival == -12);
    CHECK(p.seg[2].is_int && p.seg[2].ival == 42 && p.seg[2].len == 4);
    CHECK(!p.seg[3].is_int);

    /* .priority only last, and only when allowed. */
    CHECK_INT(hearth__path_parse("a/b/.priority", ALL, &p, NULL), 0);
    CHECK_INT(p.n, 2);
    CHECK(p.priority);
    CHECK_INT(hearth__path_parse("/.priority/", ALL, &p, NULL), 0);
    CHECK_INT(p.n, 0);
    CHECK(p.priority);
    PATH_ERROR("a/.priority/b", ALL, HEARTH_EPATH, "a/.priority/b");
    PATH_ERROR(".priority/a", ALL, HEARTH_EPATH, ".priority/a");
    PATH_ERROR("a/.priority/.priority", ALL, HEARTH_EPATH, NULL);
    PATH_ERROR("a/.priority", 0, HEARTH_EPATH, "a/.priority");
    PATH_ERROR("a/.priorityx", ALL, HEARTH_EPATH, ".priorityx");

    /* .info only first, and only when allowed. */
    CHECK_INT(hearth__path_parse("/.info/connected", ALL, &p, NULL), 0);
    CHECK(p.info);
    CHECK_INT(p.n, 2);
    CHECK_INT(hearth__path_parse("a/b", ALL, &p, NULL), 0);
    CHECK(!p.info);
    PATH_ERROR(".info/connected", 0, HEARTH_EPATH, ".info");
    PATH_ERROR("a/.info", ALL, HEARTH_EPATH, "a/.info");

    /* Each forbidden character; the message names the path and the key. */
    PATH_ERROR("a/b.c/d", ALL, HEARTH_EPATH, "a/b.c/d");
    PATH_ERROR("a/b.c/d", ALL, HEARTH_EPATH, "\"b.c\"");
    PATH_ERROR("a/b$c", ALL, HEARTH_EPATH, "b$c");
    PATH_ERROR("a/b#c", ALL, HEARTH_EPATH, "b#c");
    PATH_ERROR("a/b[c", ALL, HEARTH_EPATH, "b[c");
    PATH_ERROR("a/b]c", ALL, HEARTH_EPATH, "b]c");
    PATH_ERROR("a/\x01", ALL, HEARTH_EPATH, NULL);
    PATH_ERROR("a/b\x7f", ALL, HEARTH_EPATH, NULL);
    PATH_ERROR("a/\xC3", ALL, HEARTH_EPATH, NULL);
    PATH_ERROR("a/\xED\xA0\x80/b", ALL, HEARTH_EPATH, NULL);

    hearth_error_t err;
    CHECK_INT(hearth__path_parse("x/y#/z", 0, &p, &err), HEARTH_EPATH);
    CHECK_STR(err.path, "x/y#/z");
    CHECK_INT(hearth__path_parse(NULL, 0, &p, &err), HEARTH_EINVAL);
    CHECK_INT(hearth_validate_path(NULL, NULL), HEARTH_EINVAL);

    /* The public validator allows .info and .priority. */
    CHECK_INT(hearth_validate_path("", NULL), 0);
    CHECK_INT(hearth_validate_path("/.info/serverTimeOffset", NULL), 0);
    CHECK_INT(hearth_validate_path("a/b/.priority", NULL), 0);
    CHECK_INT(hearth_validate_path("a/b.c", &err), HEARTH_EPATH);
    CHECK(strstr(err.message, "a/b.c") != NULL);
}

static void test_path_limits(void) {
    char path[40 * 4 + 64];
    /* 32 keys pass, 33 fail, slashes do not count. */
    for (int keys = 31; keys <= 34; keys++) {
        for (int style = 0; style < 2; style++) {
            /* style 0: "k0/k1/...", style 1: "//k0///k1/..." */
            size_t used = 0;
            for (int i = 0; i < keys; i++) {
                const char *sep = style ? "//" : (i ? "/" : "");
                used += (size_t)snprintf(path + used, sizeof path - used,
                                         "%sk%d%s", sep, i, style ? "/" : "");
            }
            hearth__path p;
            hearth_error_t err;
            int rc = hearth__path_parse(path, ALL, &p, &err);
            if (keys <= HEARTH_MAX_DEPTH) {
                CHECK_INT(rc, 0);
                CHECK_INT(p.n, keys);
            } else {
                CHECK_INT(rc, HEARTH_EDEPTH);
                CHECK_INT(err.code, HEARTH_EDEPTH);
                CHECK(strstr(err.message, "k0") != NULL);
            }
        }
    }
    /* A final .priority is not a key. */
    size_t used = 0;
    for (int i = 0; i < 32; i++)
        used += (size_t)snprintf(path + used, sizeof path - used, "k%d/", i);
    snprintf(path + used, sizeof path - used, ".priority");
    hearth__path p;
    CHECK_INT(hearth__path_parse(path, ALL, &p, NULL), 0);
    CHECK_INT(p.n, 32);
    CHECK(p.priority);
    /* .info counts as a key. */
    used = (size_t)snprintf(path, sizeof path, ".info");
    for (int i = 0; i < 31; i++)
        used += (size_t)snprintf(path + used, sizeof path - used, "/k%d", i);
    CHECK_INT(hearth__path_parse(path, ALL, &p, NULL), 0);
    snprintf(path + used, sizeof path - used, "/k31");
    CHECK_INT(hearth__path_parse(path, ALL, &p, NULL), HEARTH_EDEPTH);

    /* Key size inside a path. */
    char *big = malloc(800);
    memcpy(big, "a/", 2);
    memset(big + 2, 'k', 768);
    strcpy(big + 770, "/b");
    CHECK_INT(hearth__path_parse(big, 0, &p, NULL), 0);
    CHECK_INT(p.n, 3);
    if (p.n == 3)
        CHECK_INT(p.seg[1].len, 768);
    memset(big + 2, 'k', 769);
    strcpy(big + 771, "/b");
    hearth_error_t err;
    CHECK_INT(hearth__path_parse(big, 0, &p, &err), HEARTH_ETOOBIG);
    CHECK_INT(err.code, HEARTH_ETOOBIG);
    free(big);
}

static bool text_is_utf8(const char *s) {
    return hearth__utf8_valid(s, strlen(s));
}

/* Messages quote keys and paths cut to fit; they must stay valid UTF-8
 * (the server sends them in JSON bodies) even when the cut falls inside a
 * multi-byte character. */
static void test_error_text_utf8(void) {
    static const char check[] = "\xE2\x9C\x94"; /* ✔, 3 bytes */
    char key[400] = "";
    hearth_error_t err;
    for (int shift = 0; shift < 3; shift++) {
        /* A long key with a forbidden character: quoted, cut at 64 bytes. */
        memset(key, 0, sizeof key);
        memset(key, 'x', (size_t)shift);
        for (int i = 0; i < 40; i++)
            strcat(key, check);
        strcat(key, "$");
        CHECK_INT(hearth_validate_key(key, &err), HEARTH_EKEY);
        CHECK(text_is_utf8(err.message));
        CHECK(strstr(err.message, "\xE2\x9C\x94\xE2\x9C\x94") != NULL);

        /* A long path: the message and err.path are cut at 255 bytes. */
        char path[700];
        memset(path, 0, sizeof path);
        memset(path, 'y', (size_t)shift);
        for (int i = 0; i < 150; i++)
            strcat(path, check);
        strcat(path, "/a.b");
        CHECK_INT(hearth_validate_path(path, &err), HEARTH_EPATH);
        CHECK(text_is_utf8(err.message));
        CHECK(text_is_utf8(err.path));
        CHECK(strlen(err.path) > 200);

        /* Too deep: the message quotes the path's first bytes. */
        memset(path, 0, sizeof path);
        memset(path, 'z', (size_t)shift);
        for (int i = 0; i < 33; i++) {
            strcat(path, check);
            strcat(path, "/");
        }
        CHECK_INT(hearth_validate_path(path, &err), HEARTH_EDEPTH);
        CHECK(text_is_utf8(err.message));
        CHECK(text_is_utf8(err.path));
    }
    /* hearth__error itself, given a cut argument. */
    hearth__error(&err, HEARTH_EKEY, "/\xE2\x9C", "bad \xF0\x9F\x90 here");
    CHECK(text_is_utf8(err.message));
    CHECK(text_is_utf8(err.path));
    CHECK(strstr(err.message, "bad ") == err.message);
    CHECK(strstr(err.message, " here") != NULL);
    /* Valid text is left alone. */
    hearth__error(&err, HEARTH_EKEY, "/\xE2\x9C\x94", "ok \xF0\x9F\x90\xB5");
    CHECK_STR(err.message, "ok \xF0\x9F\x90\xB5");
    CHECK_STR(err.path, "/\xE2\x9C\x94");
}

static void test_path_helpers(void) {
    hearth__path a, b;
    char buf[64];
    CHECK_INT(hearth__path_parse("/x/yy/zzz/", 0, &a, NULL), 0);
    hearth__path_format(&a, 3, buf, sizeof buf);
    CHECK_STR(buf, "/x/yy/zzz");
    hearth__path_format(&a, 2, buf, sizeof buf);
    CHECK_STR(buf, "/x/yy");
    hearth__path_format(&a, 0, buf, sizeof buf);
    CHECK_STR(buf, "/");
    hearth__path_format(&a, 10, buf, sizeof buf); /* upto past the end */
    CHECK_STR(buf, "/x/yy/zzz");
    char small[5];
    memset(small, '#', sizeof small);
    hearth__path_format(&a, 3, small, sizeof small);
    CHECK(strlen(small) < sizeof small);
    CHECK(strncmp(small, "/x/y", strlen(small)) == 0);

    CHECK_INT(hearth__path_parse("x/yy", 0, &b, NULL), 0);
    CHECK(hearth__path_is_prefix(&b, &a));
    CHECK(!hearth__path_is_prefix(&a, &b));
    CHECK(hearth__path_is_prefix(&a, &a));
    CHECK_INT(hearth__path_parse("", 0, &b, NULL), 0);
    CHECK(hearth__path_is_prefix(&b, &a));
    CHECK_INT(hearth__path_parse("x/y", 0, &b, NULL), 0);
    CHECK(!hearth__path_is_prefix(&b, &a)); /* segment-wise, not bytes */
    CHECK_INT(hearth__path_parse("x/yy/zz", 0, &b, NULL), 0);
    CHECK(!hearth__path_is_prefix(&b, &a));
}

/* ---- the v5 envelope ---- */

typedef struct frames {
    int n;
    hearth__buf all; /* the frames, each followed by a NUL */
    size_t longest;
} frames;

static int collect(void *ctx, const char *frame, size_t len) {
    frames *f = ctx;
    f->n++;
    hearth__buf_add(&f->all, frame, len);
    hearth__buf_addc(&f->all, '\0');
    if (len > f->longest)
        f->longest = len;
    return 0;
}

/* Feeds the collected frames to j; the number of whole messages, the last
 * one copied to *last. */
static int join_all(hearth__v5_joiner *j, const frames *f, char **last,
                    int *error) {
    int messages = 0;
    *error = 0;
    for (size_t at = 0; at < f->all.len;) {
        size_t len = strlen(f->all.data + at);
        const char *msg;
        size_t msg_len;
        int rc = hearth__v5_join(j, f->all.data + at, len, &msg, &msg_len);
        if (rc < 0) {
            *error = rc;
            return messages;
        }
        if (rc == HEARTH__V5_MESSAGE) {
            messages++;
            free(*last);
            *last = strndup(msg, msg_len);
        }
        at += len + 1;
    }
    return messages;
}

static void test_v5_envelope(void) {
    /* A quote and 20,000 two-byte characters: every 16,384th byte falls
     * inside one, where no cut may. */
    size_t len = 40002;
    char *text = malloc(len + 1);
    text[0] = '"';
    for (size_t i = 1; i + 1 < len; i += 2) {
        text[i] = (char)0xC3;
        text[i + 1] = (char)0xA9; /* é */
    }
    text[len - 1] = '"';
    text[len] = '\0';
    CHECK(hearth__utf8_valid(text, len));
    frames f = {0};
    hearth__buf_init(&f.all);
    CHECK_INT(hearth__v5_send(text, len, len, collect, &f), 0);
    CHECK_INT(f.n, 4); /* "3" and three pieces */
    CHECK_STR(f.all.data, "3");
    CHECK(f.longest <= HEARTH__V5_PIECE);
    for (size_t at = 2; at < f.all.len; at += strlen(f.all.data + at) + 1)
        CHECK(hearth__utf8_valid(f.all.data + at, strlen(f.all.data + at)));
    /* Joined back whole, after a keep-alive; a short message is its own
     * frame. */
    hearth__v5_joiner j;
    hearth__v5_joiner_init(&j, len);
    char *last = NULL;
    int error;
    const char *msg;
    size_t msg_len;
    CHECK_INT(hearth__v5_join(&j, "0", 1, &msg, &msg_len), HEARTH__V5_MORE);
    CHECK_INT(join_all(&j, &f, &last, &error), 1);
    CHECK_INT(error, 0);
    CHECK(last && strcmp(last, text) == 0);
    hearth__v5_joiner_reset(&j);
    CHECK_INT(hearth__v5_join(&j, "{\"t\":1}", 7, &msg, &msg_len),
              HEARTH__V5_MESSAGE);
    CHECK_INT(msg_len, 7);
    /* One byte past the bound: refused whole, and the joiner is ready for
     * the next connection. */
    hearth__v5_joiner j2;
    hearth__v5_joiner_init(&j2, len - 1);
    CHECK_INT(join_all(&j2, &f, &last, &error), 0);
    CHECK_INT(error, HEARTH_ETOOBIG);
    CHECK_INT(j2.joined.len, 0);
    CHECK_INT(j2.left, 0);
    /* A sender refuses what its peer would not join. */
    frames none = {0};
    hearth__buf_init(&none.all);
    CHECK_INT(hearth__v5_send(text, len, len - 1, collect, &none), HEARTH_ETOOBIG);
    CHECK_INT(none.n, 0);
    /* Pieces announced without end stop at the bound. */
    hearth__v5_joiner_init(&j2, 100000);
    CHECK_INT(hearth__v5_join(&j2, "999999", 6, &msg, &msg_len), HEARTH__V5_MORE);
    int rc = HEARTH__V5_MORE;
    int pieces = 0;
    while (rc == HEARTH__V5_MORE && pieces < 1000) {
        rc = hearth__v5_join(&j2, text, HEARTH__V5_PIECE, &msg, &msg_len);
        pieces++;
        CHECK(j2.joined.len <= 100000);
    }
    CHECK_INT(rc, HEARTH_ETOOBIG);
    CHECK_INT(pieces, 7); /* 6 fit in 100,000 bytes */
    /* Only objects are messages. */
    json_t *o = hearth__v5_parse("{\"t\":\"d\"}", 9);
    CHECK(json_is_object(o));
    json_decref(o);
    CHECK(hearth__v5_parse("[1]", 3) == NULL);
    CHECK(hearth__v5_parse("{", 1) == NULL);
    free(last);
    free(text);
    hearth__buf_free(&f.all);
    hearth__buf_free(&none.all);
}

/* Item 4 of issue 24: the iOS SDK reads a frame as a count only when it
 * is at most 4 characters long (FirebaseDatabase/Sources/Realtime/
 * FWebSocketConnection.m 276-285, firebase-ios-sdk eed63a35; Android's
 * WebsocketConnection.java 283 takes 6), so a count never passes 9999:
 * longer messages go in larger pieces (every SDK joins pieces of any
 * size). Pieces of 10 bytes stand for 16,384. */
static void test_v5_count_fits_four_digits(void) {
    size_t len = 300003; /* 30,001 pieces of 10 */
    char *text = malloc(len + 1);
    text[0] = '"';
    for (size_t i = 1; i + 1 < len; i += 2) {
        text[i] = (char)0xC3;
        text[i + 1] = (char)0xA9; /* é: pieces cut between characters */
    }
    text[len - 2] = 'x';
    text[len - 1] = '"';
    text[len] = '\0';
    frames f = {0};
    hearth__buf_init(&f.all);
    CHECK_INT(hearth__v5_send_pieces(text, len, len, 10, collect, &f), 0);
    size_t count_len = strlen(f.all.data);
    CHECK(count_len >= 1 && count_len <= 4);
    CHECK_INT(f.n, atoi(f.all.data) + 1);
    for (size_t at = count_len + 1; at < f.all.len; at += strlen(f.all.data + at) + 1)
        CHECK(hearth__utf8_valid(f.all.data + at, strlen(f.all.data + at)));
    hearth__v5_joiner j;
    hearth__v5_joiner_init(&j, len);
    char *last = NULL;
    int error;
    CHECK_INT(join_all(&j, &f, &last, &error), 1);
    CHECK_INT(error, 0);
    CHECK(last && strcmp(last, text) == 0);
    hearth__v5_joiner_reset(&j);
    /* 9999 pieces (of ASCII) stay of the size asked */
    memset(text, 'a', 99990);
    frames g = {0};
    hearth__buf_init(&g.all);
    CHECK_INT(hearth__v5_send_pieces(text, 99990, 99990, 10, collect, &g), 0);
    CHECK_STR(g.all.data, "9999");
    CHECK(g.longest <= 10);
    free(last);
    free(text);
    hearth__buf_free(&f.all);
    hearth__buf_free(&g.all);
}

/* Integers past int64 become reals; nothing else changes. */
static void test_widen_integers(void) {
    static const char *const cases[][2] = {
        {"{\"d\":111111111111111100000}", "{\"d\":111111111111111100000.0}"},
        {"[9223372036854775808,-9223372036854775809]",
         "[9223372036854775808.0,-9223372036854775809.0]"},
        {"[1,-2,123456789012345678,3.5,1e400,12345678901234567890e2]",
         "[1,-2,123456789012345678,3.5,1e400,12345678901234567890e2]"},
        {"{\"s\":\"12345678901234567890\",\"e\":\"\\\"99999999999999999999\"}",
         "{\"s\":\"12345678901234567890\",\"e\":\"\\\"99999999999999999999\"}"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        char *out = hearth__json_widen_integers(cases[i][0], strlen(cases[i][0]), &len);
        CHECK_STR(out, cases[i][1]);
        CHECK_INT(len, strlen(cases[i][1]));
        hearth__free(out);
    }
    /* And the v5 parse reads them as doubles instead of refusing. */
    static const char big[] = "{\"r\":3,\"d\":111111111111111100000}";
    json_t *m = hearth__v5_parse(big, sizeof big - 1);
    CHECK(m && json_is_integer(json_object_get(m, "r")));
    CHECK(m && json_is_real(json_object_get(m, "d")) &&
          json_real_value(json_object_get(m, "d")) == 1.111111111111111e20);
    json_decref(m);
}

/* RFC 4648's test vectors, each padding case. */
static void test_base64(void) {
    static const char *const cases[][2] = {
        {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[16];
        size_t n = hearth__base64((const unsigned char *)cases[i][0],
                                  strlen(cases[i][0]), out);
        CHECK_STR(out, cases[i][1]);
        CHECK_INT(n, strlen(cases[i][1]));
    }
    const unsigned char high[] = {0xfb, 0xff, 0xbf};
    char out[8];
    hearth__base64(high, sizeof high, out);
    CHECK_STR(out, "+/+/");
}

const test_case common_tests[] = {
    {"common_base64", test_base64},
    {"common_widen_integers", test_widen_integers},
    {"common_errors", test_errors},
    {"common_version", test_version},
    {"common_error_fill", test_error_fill},
    {"common_format_number", test_format_number},
    {"common_format_number_random", test_format_number_random},
    {"common_utf8", test_utf8},
    {"common_buf", test_buf},
    {"common_alloc_hook", test_alloc_hook},
    {"common_key_validation", test_key_validation},
    {"common_path_parse", test_path_parse},
    {"common_path_limits", test_path_limits},
    {"common_path_helpers", test_path_helpers},
    {"common_error_text_utf8", test_error_text_utf8},
    {"common_v5_envelope", test_v5_envelope},
    {"common_v5_count_fits_four_digits", test_v5_count_fits_four_digits},
    {NULL, NULL},
};
