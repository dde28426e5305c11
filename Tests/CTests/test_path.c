/* test_path.c - key and path validation and parsing (path/path.h):
 * forbidden characters, size and depth limits, reserved names, slashes,
 * and messages that name the culprit (and stay valid UTF-8). */
#include "test.h"

#include "common/internal.h"
#include "path/path.h"

#include <string.h>

/* ---- keys ---- */

static void check_key_error(const char *key, size_t len, int code,
                            const char *in_message, int line) {
    hearth_error_t err;
    memset(&err, 0, sizeof err);
    int rc = hearth__key_check(key, len, NULL, &err);
    check_error("key check", rc, &err, code, NULL, in_message, __FILE__, line);
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
    char what[300];
    snprintf(what, sizeof what, "path \"%.256s\"", path);
    check_error(what, rc, &err, code, NULL, in_message, __FILE__, line);
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

const test_case path_tests[] = {
    {"path_key_validation", test_key_validation},
    {"path_parse", test_path_parse},
    {"path_limits", test_path_limits},
    {"path_helpers", test_path_helpers},
    {"path_error_text_utf8", test_error_text_utf8},
    {NULL, NULL},
};
