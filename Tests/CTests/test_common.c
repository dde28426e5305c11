/* test_common.c - the common layer: the error table, the version,
 * hearth__error, JavaScript number formatting (hearth__format_number), UTF-8
 * validation, the byte buffer and the allocation-failure hook. */
#include "test.h"

#include "common/internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

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
    CHECK_STR(hearth_version(), "0.3.0");
    CHECK_INT(hearth_version_number(), HEARTH_VERSION_HEX);
    CHECK_INT(HEARTH_VERSION_HEX, 0x000300);
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
    return test_rand(&rng_state);
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
    {"common_errors", test_errors},
    {"common_version", test_version},
    {"common_error_fill", test_error_fill},
    {"common_format_number", test_format_number},
    {"common_format_number_random", test_format_number_random},
    {"common_utf8", test_utf8},
    {"common_buf", test_buf},
    {"common_alloc_hook", test_alloc_hook},
    {NULL, NULL},
};
