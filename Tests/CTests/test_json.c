/* test_json.c - JSON in and out (tree/json.c): round trips, number and
 * string formatting, arrays in (children "0".."n-1", nulls dropped) and out
 * (the dense-array heuristic), the export format with priorities, the
 * .value / .priority / .sv rules and their errors, vanishing empties,
 * malformed text (line and column), invalid keys (the path at fault), size
 * and depth limits, jansson values in and out, and allocation failures. */
#include "test.h"

#include "common/internal.h"
#include "tree/json.h"
#include "tree/node.h"

#include <jansson.h>
#include <math.h>

/* Parses text (with server values allowed) and checks both outputs. */
static void check_io(const char *in, const char *plain, const char *export,
                     int line) {
    hearth_node_t *n = NULL;
    hearth_error_t err;
    int rc = hearth_node_from_json(in, (size_t)-1,
                                   HEARTH_JSON_ALLOW_SERVER_VALUES, &n, &err);
    if (rc) {
        fprintf(stderr, "  test_json.c:%d: %s: %s\n", line, in, err.message);
        test_failures++;
        return;
    }
    size_t len = 0;
    char *p = hearth_node_to_json(n, 0, &len);
    char *e = hearth_node_to_json(n, HEARTH_JSON_EXPORT, NULL);
    if (!p || !e || strcmp(p, plain) != 0 || strcmp(e, export) != 0 ||
        len != strlen(p)) {
        fprintf(stderr,
                "  test_json.c:%d: %s\n    plain  %s\n    want   %s\n"
                "    export %s\n    want   %s\n",
                line, in, p, plain, e, export);
        test_failures++;
    }
    /* hearth_node_is_array answers what the plain text shows (bindings
     * that convert nodes themselves rely on it). */
    if (p && hearth_node_is_array(n) != (p[0] == '[')) {
        fprintf(stderr, "  test_json.c:%d: %s: hearth_node_is_array is %d\n",
                line, in, (int)hearth_node_is_array(n));
        test_failures++;
    }
    /* The export text reads back as the same node. */
    if (e) {
        hearth_node_t *again = node_from(e);
        if (!hearth_node_equal(n, again)) {
            fprintf(stderr, "  test_json.c:%d: %s does not round trip\n", line,
                    e);
            test_failures++;
        }
        hearth_node_decref(again);
    }
    hearth_free(p);
    hearth_free(e);
    hearth_node_decref(n);
}
#define IO(in, plain, export) check_io(in, plain, export, __LINE__)
#define IO_SAME(in) check_io(in, in, in, __LINE__)

/* Checks that text fails with code, naming `path` (err.path, when not NULL)
 * and `in_message` (when not NULL), without writing *out. */
static void check_fail(const char *text, unsigned flags, int code,
                       const char *path, const char *in_message, int line) {
    hearth_node_t *sentinel = hearth_node_number(123), *n = sentinel;
    hearth_error_t err;
    memset(&err, 0, sizeof err);
    int rc = hearth_node_from_json(text, (size_t)-1, flags, &n, &err);
    char what[80];
    snprintf(what, sizeof what, "%.60s", text);
    check_error(what, rc, &err, code, path, in_message, __FILE__, line);
    if (n != sentinel) {
        fprintf(stderr, "  %s:%d: %.60s wrote its output\n", __FILE__, line, text);
        test_failures++;
    }
    if (n != sentinel)
        hearth_node_decref(n);
    hearth_node_decref(sentinel);
}
#define FAIL(text, code, path, msg)                                            \
    check_fail(text, HEARTH_JSON_ALLOW_SERVER_VALUES, code, path, msg, __LINE__)

static void test_round_trips(void) {
    IO_SAME("null");
    IO_SAME("true");
    IO_SAME("false");
    IO_SAME("0");
    IO_SAME("-1.5");
    IO_SAME("\"\"");
    IO_SAME("\"text\"");
    IO_SAME("{\"a\":1}");
    IO_SAME("{\"a\":{\"b\":{\"c\":\"deep\"}},\"d\":false}");
    /* Keys come out in the service's order. */
    IO("{\"b\":1,\"a\":2,\"10\":3,\"2\":4,\"-1\":5}",
       "{\"-1\":5,\"2\":4,\"10\":3,\"a\":2,\"b\":1}",
       "{\"-1\":5,\"2\":4,\"10\":3,\"a\":2,\"b\":1}");
    IO("{\"\xEF\xBD\x9E\":1,\"\xF0\x9F\x90\xB5\":2,\"z\":3}",
       "{\"z\":3,\"\xF0\x9F\x90\xB5\":2,\"\xEF\xBD\x9E\":1}",
       "{\"z\":3,\"\xF0\x9F\x90\xB5\":2,\"\xEF\xBD\x9E\":1}");
    /* Whitespace and nesting. */
    IO(" { \"a\" : [ 1 , { \"b\" : null } , 2 ] } ", "{\"a\":[1,null,2]}",
       "{\"a\":{\"0\":1,\"2\":2}}");
}

static void test_numbers(void) {
    IO_SAME("1");
    IO("1.0", "1", "1");
    IO("1e2", "100", "100");
    IO("-0", "0", "0");
    IO("-0.0", "0", "0");
    IO("0.1", "0.1", "0.1");
    IO("4.5623", "4.5623", "4.5623");
    IO("1e-7", "1e-7", "1e-7");
    IO("0.000001", "0.000001", "0.000001");
    IO("1e21", "1e+21", "1e+21");
    IO("1E+21", "1e+21", "1e+21");
    IO("123e-20", "1.23e-18", "1.23e-18");
    IO("9007199254740992", "9007199254740992", "9007199254740992");
    IO("12345678901234568", "12345678901234568", "12345678901234568");
    IO("12345678901234567890", "12345678901234567000",
       "12345678901234567000");
    IO("123456789012345678901234567890", "1.2345678901234568e+29",
       "1.2345678901234568e+29");
    IO("1.7976931348623157e308", "1.7976931348623157e+308",
       "1.7976931348623157e+308");
    IO("5e-324", "5e-324", "5e-324");
    IO("[0.1,-2,3.5e300]", "[0.1,-2,3.5e+300]",
       "{\"0\":0.1,\"1\":-2,\"2\":3.5e+300}");
    /* Too big for a double: an error, not infinity. */
    FAIL("1e999", HEARTH_EJSON, NULL, NULL);
    FAIL("[1,-1e400]", HEARTH_EJSON, NULL, NULL);
    FAIL("{\"a\":1e309}", HEARTH_EJSON, NULL, NULL);
    /* Not JSON numbers. */
    FAIL("NaN", HEARTH_EJSON, NULL, NULL);
    FAIL("Infinity", HEARTH_EJSON, NULL, NULL);
    FAIL("[+1]", HEARTH_EJSON, NULL, NULL);
    FAIL("01", HEARTH_EJSON, NULL, NULL);
}

static void test_strings(void) {
    /* Escapes in; out, only what JSON requires is escaped. */
    IO("\"q\\\"b\\\\s\\/t\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\"",
       "\"q\\\"b\\\\s/t\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\"",
       "\"q\\\"b\\\\s/t\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\"");
    /* Non-ASCII, written as escapes or raw, comes out raw. */
    IO("\"\\u00e9\\u2714\\ud83d\\udc35\"", "\"\xC3\xA9\xE2\x9C\x94\xF0\x9F\x90\xB5\"",
       "\"\xC3\xA9\xE2\x9C\x94\xF0\x9F\x90\xB5\"");
    IO_SAME("\"unicode \xE2\x9C\x94 \xF0\x9F\x90\xB5 \xF0\x9F\x8C\xB4 x\xCD\xA2\"");
    /* An embedded NUL survives. */
    hearth_node_t *n = node_from("\"a\\u0000b\"");
    size_t len = 0;
    const char *s = hearth_node_string_value(n, &len);
    CHECK_INT(len, 3);
    CHECK(s && memcmp(s, "a\0b", 3) == 0);
    CHECK_JSON(n, "\"a\\u0000b\"");
    hearth_node_decref(n);
    /* Keys are escaped too. */
    IO("{\"k\\\"q\":1,\"k\\\\b\":2,\"k\\u00e9\":3}",
       "{\"k\\\"q\":1,\"k\\\\b\":2,\"k\xC3\xA9\":3}",
       "{\"k\\\"q\":1,\"k\\\\b\":2,\"k\xC3\xA9\":3}");
    /* Malformed UTF-8 and lone surrogates are rejected by the parser. */
    FAIL("\"\xC3\"", HEARTH_EJSON, NULL, NULL);
    FAIL("\"\xED\xA0\x80\"", HEARTH_EJSON, NULL, NULL);
    FAIL("\"\\ud83d\"", HEARTH_EJSON, NULL, NULL);
    FAIL("{\"\xFF\":1}", HEARTH_EJSON, NULL, NULL);
}

static void test_arrays(void) {
    IO("[1,2,3]", "[1,2,3]", "{\"0\":1,\"1\":2,\"2\":3}");
    /* Nulls are dropped on the way in; holes come back as null. */
    IO("[1,null,3]", "[1,null,3]", "{\"0\":1,\"2\":3}");
    IO("[null,null,1]", "{\"2\":1}", "{\"2\":1}"); /* 2 >= 2 * 1 */
    IO("[null,1]", "[null,1]", "{\"1\":1}");       /* 1 < 2 * 1 */
    IO("[]", "null", "null");
    IO("[null]", "null", "null");
    IO("[[],{},null]", "null", "null");
    IO("[[1,2],[3]]", "[[1,2],[3]]",
       "{\"0\":{\"0\":1,\"1\":2},\"1\":{\"0\":3}}");
    IO("[{\"a\":1},\"s\",true]", "[{\"a\":1},\"s\",true]",
       "{\"0\":{\"a\":1},\"1\":\"s\",\"2\":true}");
    /* Objects that look like arrays read back as arrays... */
    IO("{\"0\":\"a\",\"1\":\"b\"}", "[\"a\",\"b\"]",
       "{\"0\":\"a\",\"1\":\"b\"}");
    IO("{\"1\":\"b\",\"0\":\"a\"}", "[\"a\",\"b\"]",
       "{\"0\":\"a\",\"1\":\"b\"}");
    IO("{\"0\":1,\"2\":1}", "[1,null,1]", "{\"0\":1,\"2\":1}");
    IO("{\"1\":1}", "[null,1]", "{\"1\":1}");
    IO("{\"0\":1,\"3\":1}", "[1,null,null,1]", "{\"0\":1,\"3\":1}");
    IO("{\"0\":1,\"4\":1,\"5\":1}", "[1,null,null,null,1,1]",
       "{\"0\":1,\"4\":1,\"5\":1}");
    /* ... but not when sparse (maxKey >= 2 * count) ... */
    IO("{\"0\":1,\"4\":1}", "{\"0\":1,\"4\":1}", "{\"0\":1,\"4\":1}");
    IO("{\"0\":1,\"5\":1,\"6\":1}", "{\"0\":1,\"5\":1,\"6\":1}",
       "{\"0\":1,\"5\":1,\"6\":1}");
    IO("{\"2\":1}", "{\"2\":1}", "{\"2\":1}");
    IO("{\"5\":1,\"6\":1}", "{\"5\":1,\"6\":1}", "{\"5\":1,\"6\":1}");
    /* ... nor with a non-integer, negative or zero-led key. */
    IO("{\"0\":1,\"a\":1}", "{\"0\":1,\"a\":1}", "{\"0\":1,\"a\":1}");
    IO("{\"0\":1,\"-1\":1}", "{\"-1\":1,\"0\":1}", "{\"-1\":1,\"0\":1}");
    IO("{\"01\":1}", "{\"01\":1}", "{\"01\":1}");
    IO("{\"0\":1,\"01\":2}", "{\"0\":1,\"01\":2}", "{\"0\":1,\"01\":2}");
    IO("{\"00\":1}", "{\"00\":1}", "{\"00\":1}");
    IO("{\"-0\":1}", "{\"-0\":1}", "{\"-0\":1}");
    IO("{\"0\":1,\"1a\":1}", "{\"0\":1,\"1a\":1}", "{\"0\":1,\"1a\":1}");
    IO("{\"0\":1,\"1\":2,\"2147483648\":3}",
       "{\"0\":1,\"1\":2,\"2147483648\":3}",
       "{\"0\":1,\"1\":2,\"2147483648\":3}");
    /* Arrays nested in objects and with priorities. */
    IO("{\"list\":[1,{\".value\":2,\".priority\":1}]}", "{\"list\":[1,2]}",
       "{\"list\":{\"0\":1,\"1\":{\".value\":2,\".priority\":1}}}");
    CHECK(!hearth_node_is_array(NULL));
    /* A long array. */
    char text[8192] = "[";
    for (int i = 0; i < 1000; i++) {
        char item[16];
        snprintf(item, sizeof item, "%s%d", i ? "," : "", i * 3);
        strcat(text, item);
    }
    strcat(text, "]");
    hearth_node_t *n = node_from(text);
    CHECK_INT(hearth_node_child_count(n), 1000);
    const char *key = NULL;
    CHECK(hearth_node_child_at(n, 999, &key) != NULL);
    CHECK_STR(key, "999");
    char *out = hearth_node_to_json(n, 0, NULL);
    CHECK_STR(out, text);
    hearth_free(out);
    hearth_node_decref(n);
}

static void test_export_priorities(void) {
    IO("{\".value\":1,\".priority\":2}", "1",
       "{\".value\":1,\".priority\":2}");
    IO("{\".priority\":\"p\",\".value\":\"v\"}", "\"v\"",
       "{\".value\":\"v\",\".priority\":\"p\"}");
    IO("{\".value\":true,\".priority\":0.5}", "true",
       "{\".value\":true,\".priority\":0.5}");
    IO("{\".value\":false,\".priority\":\"f\"}", "false",
       "{\".value\":false,\".priority\":\"f\"}");
    IO("{\"a\":1,\".priority\":\"p\"}", "{\"a\":1}",
       "{\"a\":1,\".priority\":\"p\"}");
    IO("{\".priority\":1e21,\"x\":{\"y\":2,\".priority\":-3}}",
       "{\"x\":{\"y\":2}}",
       "{\"x\":{\"y\":2,\".priority\":-3},\".priority\":1e+21}");
    /* A null priority is no priority. */
    IO("{\".value\":1,\".priority\":null}", "1", "1");
    IO("{\"a\":1,\".priority\":null}", "{\"a\":1}", "{\"a\":1}");
    /* .value holding an object or array. */
    IO("{\".value\":{\"a\":1},\".priority\":3}", "{\"a\":1}",
       "{\"a\":1,\".priority\":3}");
    IO("{\".value\":[1,2],\".priority\":3}", "[1,2]",
       "{\"0\":1,\"1\":2,\".priority\":3}");
    /* Priorities of nothing vanish with it. */
    IO("{\".priority\":1}", "null", "null");
    IO("{\"a\":{\".priority\":1},\"b\":2}", "{\"b\":2}", "{\"b\":2}");
    IO("{\".value\":null,\".priority\":1}", "null", "null");
    IO("{\".value\":{},\".priority\":1}", "null", "null");
    /* An exported array with priorities never becomes an array. */
    IO("{\"0\":{\".value\":1,\".priority\":1},\"1\":2}", "[1,2]",
       "{\"0\":{\".value\":1,\".priority\":1},\"1\":2}");
    /* Pretty output reads back the same. */
    hearth_node_t *n = node_from("{\"a\":[1,{\"b\":2}],\"c\":{\".value\":3,"
                                 "\".priority\":\"p\"},\".priority\":1}");
    char *pretty = hearth_node_to_json(n, HEARTH_JSON_PRETTY | HEARTH_JSON_EXPORT,
                                       NULL);
    CHECK(pretty && strchr(pretty, '\n') != NULL);
    hearth_node_t *back = node_from(pretty);
    CHECK(hearth_node_equal(n, back));
    hearth_free(pretty);
    pretty = hearth_node_to_json(n, HEARTH_JSON_PRETTY, NULL);
    CHECK(pretty && strstr(pretty, "[\n") != NULL);
    CHECK(pretty && strstr(pretty, "\"a\": [") != NULL);
    hearth_node_t *plain = node_from(pretty);
    char *compact = hearth_node_to_json(plain, 0, NULL);
    CHECK_STR(compact, "{\"a\":[1,{\"b\":2}],\"c\":3}");
    hearth_free(compact);
    hearth_free(pretty);
    hearth_node_decref(plain);
    hearth_node_decref(back);
    hearth_node_decref(n);
}

static void test_vanishing(void) {
    IO("{}", "null", "null");
    IO("{\"a\":{}}", "null", "null");
    IO("{\"a\":{\"b\":{\"c\":{}}}}", "null", "null");
    IO("{\"a\":{},\"b\":null,\"c\":{\"d\":{}},\"e\":1}", "{\"e\":1}",
       "{\"e\":1}");
    IO("{\"a\":null}", "null", "null");
    IO("{\"a\":[null,{},[]]}", "null", "null");
}

static void test_special_keys(void) {
    /* Server values, where allowed. */
    IO("{\".sv\":\"timestamp\"}", "{\".sv\":\"timestamp\"}",
       "{\".sv\":\"timestamp\"}");
    IO("{\"t\":{\".sv\":\"timestamp\"},\"n\":{\".sv\":{\"increment\":-2.5}}}",
       "{\"n\":{\".sv\":{\"increment\":-2.5}},\"t\":{\".sv\":\"timestamp\"}}",
       "{\"n\":{\".sv\":{\"increment\":-2.5}},\"t\":{\".sv\":\"timestamp\"}}");
    IO("{\".sv\":\"timestamp\",\".priority\":1}", "{\".sv\":\"timestamp\"}",
       "{\".value\":{\".sv\":\"timestamp\"},\".priority\":1}");
    IO("{\".value\":{\".sv\":\"timestamp\"}}", "{\".sv\":\"timestamp\"}",
       "{\".sv\":\"timestamp\"}");
    hearth_node_t *n = node_from("{\"t\":{\".sv\":\"timestamp\"}}");
    CHECK_INT(hearth_node_type(hearth_node_child(n, "t")),
              HEARTH_TYPE_SERVER_VALUE);
    CHECK(hearth__node_has_sv(n));
    hearth_node_decref(n);
    n = node_from("{\"a\":{\"b\":1}}");
    CHECK(!hearth__node_has_sv(n));
    hearth_node_decref(n);

    check_fail("{\".sv\":\"timestamp\"}", 0, HEARTH_ESERVERVALUE, "/", ".sv",
               __LINE__);
    check_fail("{\"a\":{\"b\":{\".sv\":\"timestamp\"}}}", 0,
               HEARTH_ESERVERVALUE, "/a/b", "/a/b", __LINE__);
    FAIL("{\".sv\":\"now\"}", HEARTH_ESERVERVALUE, "/", NULL);
    FAIL("{\".sv\":1}", HEARTH_ESERVERVALUE, "/", NULL);
    FAIL("{\".sv\":null}", HEARTH_ESERVERVALUE, "/", NULL);
    FAIL("{\".sv\":{\"increment\":\"1\"}}", HEARTH_ESERVERVALUE, "/", NULL);
    FAIL("{\".sv\":{\"increment\":1,\"b\":2}}", HEARTH_ESERVERVALUE, "/",
         NULL);
    FAIL("{\".sv\":{\"decrement\":1}}", HEARTH_ESERVERVALUE, "/", NULL);
    FAIL("{\"x\":{\".sv\":{}}}", HEARTH_ESERVERVALUE, "/x", NULL);
    FAIL("{\".sv\":\"timestamp\",\"a\":1}", HEARTH_EVALUE, "/", NULL);
    FAIL("{\".sv\":\"timestamp\",\".value\":1}", HEARTH_EVALUE, "/", NULL);

    /* .value may only have .priority beside it. */
    FAIL("{\".value\":1,\"a\":2}", HEARTH_EVALUE, "/", ".value");
    FAIL("{\"a\":{\"b\":{\".value\":1,\"c\":2}}}", HEARTH_EVALUE, "/a/b",
         "/a/b");
    FAIL("[{\".value\":1,\"x\":1}]", HEARTH_EVALUE, "/0", NULL);

    /* Priorities: null, numbers and strings only. */
    FAIL("{\".priority\":true,\"a\":1}", HEARTH_EPRIORITY, "/", NULL);
    FAIL("{\".priority\":{\"x\":1},\"a\":1}", HEARTH_EPRIORITY, "/", NULL);
    FAIL("{\".priority\":[1],\"a\":1}", HEARTH_EPRIORITY, "/", NULL);
    FAIL("{\"a\":{\".value\":1,\".priority\":false}}", HEARTH_EPRIORITY, "/a",
         "/a");

    /* Other dotted keys are invalid keys. */
    FAIL("{\".info\":1}", HEARTH_EKEY, "/", ".info");
    FAIL("{\"a\":{\".x\":1}}", HEARTH_EKEY, "/a", ".x");
}

static void test_malformed(void) {
    static const char *const bad[] = {
        "",      "{",        "{\"a\":",  "{\"a\" 1}", "[1,]",  "{\"a\":1,}",
        "[1 2]", "tru",      "\"open",   "{a:1}",     "'s'",   "1 2",
        "[1]]",  "{\"a\":1}}", "\x01",   "//c\n1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        FAIL(bad[i], HEARTH_EJSON, "", NULL);

    /* Line and column of the fault. */
    hearth_node_t *n = NULL;
    hearth_error_t err;
    const char *text = "{\n  \"a\": 1,\n  \"b\": ]\n}";
    CHECK_INT(hearth_node_from_json(text, (size_t)-1, 0, &n, &err),
              HEARTH_EJSON);
    CHECK_INT(err.code, HEARTH_EJSON);
    CHECK_INT(err.line, 3);
    CHECK(err.column >= 7 && err.column <= 9);
    CHECK(strstr(err.message, "line 3") != NULL);
    CHECK(n == NULL);
    CHECK_INT(hearth_node_from_json("[1,\n2,\n\n  x]", (size_t)-1, 0, &n, &err),
              HEARTH_EJSON);
    CHECK_INT(err.line, 4);
    CHECK(err.column > 0);
    /* Errors that are not about text have no position. */
    CHECK_INT(hearth_node_from_json("{\"a.b\":1}", (size_t)-1, 0, &n, &err),
              HEARTH_EKEY);
    CHECK_INT(err.line, 0);
    CHECK_INT(err.column, 0);

    /* Explicit lengths: the rest of the buffer is not read. */
    CHECK_INT(hearth_node_from_json("[1,2]garbage", 5, 0, &n, &err), 0);
    CHECK_JSON(n, "{\"0\":1,\"1\":2}");
    hearth_node_decref(n);
    CHECK_INT(hearth_node_from_json("[1,2]", 4, 0, &n, &err), HEARTH_EJSON);
    CHECK_INT(hearth_node_from_json("{\"a\":\"x\\u0000y\"}", (size_t)-1, 0, &n,
                                    &err),
              0);
    hearth_node_decref(n);
    CHECK_INT(hearth_node_from_json(NULL, 0, 0, &n, &err), HEARTH_EINVAL);
    CHECK_INT(hearth_node_from_json("1", (size_t)-1, 0, &n, NULL), 0);
    hearth_node_decref(n);
    CHECK_INT(hearth_node_from_json("[", (size_t)-1, 0, &n, NULL),
              HEARTH_EJSON);
}

/* Writes into out (large enough) `open` depth times, then inner, then
 * `close` depth times: a value nested depth levels down. Returns out. */
static char *nested(char *out, int depth, const char *open, const char *inner,
                    const char *close) {
    out[0] = '\0';
    for (int i = 0; i < depth; i++)
        strcat(out, open);
    strcat(out, inner);
    for (int i = 0; i < depth; i++)
        strcat(out, close);
    return out;
}

static void test_invalid_keys(void) {
    FAIL("{\"a.b\":1}", HEARTH_EKEY, "/", "a.b");
    FAIL("{\"a\":{\"b.c\":1}}", HEARTH_EKEY, "/a", "b.c");
    FAIL("{\"a\":{\"b\":{\"c$\":1}}}", HEARTH_EKEY, "/a/b", "c$");
    FAIL("{\"x\":[{\"k#\":1}]}", HEARTH_EKEY, "/x/0", "k#");
    FAIL("{\"a\":{\"[\":1}}", HEARTH_EKEY, "/a", "[");
    FAIL("{\"a\":{\"]\":1}}", HEARTH_EKEY, "/a", "]");
    FAIL("{\"a\":{\"b/c\":1}}", HEARTH_EKEY, "/a", "b/c");
    FAIL("{\"a\":{\"\":1}}", HEARTH_EKEY, "/a", NULL);
    FAIL("{\"a\":{\"\\u0001\":1}}", HEARTH_EKEY, "/a", NULL);
    FAIL("{\"a\":{\"x\\u007f\":1}}", HEARTH_EKEY, "/a", NULL);
    FAIL("{\"a\":{\"\\n\":1}}", HEARTH_EKEY, "/a", NULL);
    /* Invalid keys are errors even when their value is null or empty. */
    FAIL("{\"a\":{\"b.c\":null}}", HEARTH_EKEY, "/a", "b.c");
    FAIL("{\"a.b\":{}}", HEARTH_EKEY, "/", "a.b");
    /* A NUL inside a key is never a valid key. */
    hearth_node_t *n = NULL;
    int rc = hearth_node_from_json("{\"a\\u0000b\":1}", (size_t)-1, 0, &n,
                                   NULL);
    CHECK(rc == HEARTH_EKEY || rc == HEARTH_EJSON);
    CHECK(n == NULL);
    /* Size: 768 bytes fit, 769 do not. */
    char *text = malloc(2000);
    strcpy(text, "{\"a\":{\"");
    memset(text + 7, 'k', 768);
    strcpy(text + 7 + 768, "\":1}}");
    CHECK_INT(hearth_node_from_json(text, (size_t)-1, 0, &n, NULL), 0);
    hearth_node_decref(n);
    n = NULL;
    memset(text + 7, 'k', 769);
    strcpy(text + 7 + 769, "\":1}}");
    FAIL(text, HEARTH_ETOOBIG, "/a", NULL);
    free(text);
    /* A long path is cut, not overflowed. */
    char deep[4096], open[128];
    char key[100];
    memset(key, 'p', 90);
    key[90] = '\0';
    snprintf(open, sizeof open, "{\"%s\":", key);
    nested(deep, 10, open, "{\"bad.key\":1}", "}");
    hearth_error_t err;
    CHECK_INT(hearth_node_from_json(deep, (size_t)-1, 0, &n, &err),
              HEARTH_EKEY);
    CHECK(strlen(err.path) < sizeof err.path);
    CHECK(strncmp(err.path, "/ppp", 4) == 0);
    /* ... and stays valid UTF-8 when cut inside a character. */
    for (int shift = 0; shift < 3; shift++) {
        char mb[64] = "";
        memset(mb, 'q', (size_t)shift + 1);
        for (int i = 0; i < 10; i++)
            strcat(mb, "\xF0\x9F\x90\xB5");
        snprintf(open, sizeof open, "{\"%s\":", mb);
        nested(deep, 10, open, "{\"bad.key\":1}", "}");
        CHECK_INT(hearth_node_from_json(deep, (size_t)-1, 0, &n, &err),
                  HEARTH_EKEY);
        CHECK(hearth__utf8_valid(err.path, strlen(err.path)));
        CHECK(hearth__utf8_valid(err.message, strlen(err.message)));
        CHECK(strlen(err.path) > 200);
    }
}

static void test_limits(void) {
    /* Depth: 32 keys down to a leaf is the limit. */
    char text[1024];
    for (int depth = 31; depth <= 34; depth++) {
        nested(text, depth, "{\"k\":", "1", "}");
        hearth_node_t *n = NULL;
        hearth_error_t err;
        int rc = hearth_node_from_json(text, (size_t)-1, 0, &n, &err);
        if (depth <= HEARTH_MAX_DEPTH) {
            CHECK_INT(rc, 0);
            CHECK_INT(hearth__node_depth(n), depth);
            hearth_node_decref(n);
        } else {
            CHECK_INT(rc, HEARTH_EDEPTH);
            CHECK_INT(err.code, HEARTH_EDEPTH);
            CHECK(strncmp(err.path, "/k/k/k", 6) == 0);
        }
        /* Arrays nest the same way. */
        nested(text, depth, "[", "true", "]");
        rc = hearth_node_from_json(text, (size_t)-1, 0, &n, &err);
        CHECK_INT(rc, depth <= HEARTH_MAX_DEPTH ? 0 : HEARTH_EDEPTH);
        if (!rc)
            hearth_node_decref(n);
    }
    /* Leaves with priorities are not deeper. */
    nested(text, 32, "{\"k\":", "{\".value\":1,\".priority\":2}", "}");
    hearth_node_t *n = NULL;
    CHECK_INT(hearth_node_from_json(text, (size_t)-1, 0, &n, NULL), 0);
    hearth_node_decref(n);
    /* Keys count even when their value vanishes (as in the JavaScript
     * client's validation): 32 keys down to {} is null, 33 too deep. */
    for (int depth = 32; depth <= 33; depth++) {
        nested(text, depth, "{\"k\":", "{}", "}");
        n = NULL;
        int rc = hearth_node_from_json(text, (size_t)-1, 0, &n, NULL);
        CHECK_INT(rc, depth == 32 ? 0 : HEARTH_EDEPTH);
        if (!rc) {
            CHECK(hearth_node_is_null(n));
            hearth_node_decref(n);
        }
    }
    /* Writing below a base path counts the base's depth. */
    hearth_error_t err;
    CHECK_INT(hearth__node_from_json_at("{\"a\":{\"b\":1}}", (size_t)-1, 0,
                                        "/base", 30, &n, &err),
              0);
    hearth_node_decref(n);
    CHECK_INT(hearth__node_from_json_at("{\"a\":{\"b\":{\"c\":1}}}", (size_t)-1,
                                        0, "/base", 30, &n, &err),
              HEARTH_EDEPTH);
    CHECK(strncmp(err.path, "/base/a/b", 9) == 0);
    CHECK_INT(hearth__node_from_json_at("{\"a.b\":1}", (size_t)-1, 0,
                                        "/x/y", 2, &n, &err),
              HEARTH_EKEY);
    CHECK_STR(err.path, "/x/y");
    CHECK(strstr(err.message, "/x/y") != NULL);

    /* Strings: 10 MB fit, one byte more does not. */
    size_t max = HEARTH_MAX_STRING_BYTES;
    char *big = malloc(max + 8);
    big[0] = '"';
    memset(big + 1, 's', max);
    strcpy(big + 1 + max, "\"");
    CHECK_INT(hearth_node_from_json(big, max + 2, 0, &n, &err), 0);
    size_t len = 0;
    CHECK(hearth_node_string_value(n, &len) != NULL);
    CHECK_INT(len, max);
    hearth_node_decref(n);
    memset(big + 1, 's', max + 1);
    strcpy(big + 2 + max, "\"");
    n = NULL;
    CHECK_INT(hearth_node_from_json(big, max + 3, 0, &n, &err), HEARTH_ETOOBIG);
    CHECK_INT(err.code, HEARTH_ETOOBIG);
    CHECK(n == NULL);
    free(big);
}

static void check_jansson(const char *in, unsigned flags, const char *expected,
                          int line) {
    hearth_node_t *n = node_from(in);
    json_t *got = hearth_node_to_jansson(n, flags);
    json_t *want = json_loads(expected, JSON_DECODE_ANY, NULL);
    if (!got || !want || !json_equal(got, want)) {
        char *g = got ? json_dumps(got, JSON_ENCODE_ANY) : NULL;
        fprintf(stderr, "  test_json.c:%d: to_jansson(%s) = %s, want %s\n",
                line, in, g ? g : "NULL", expected);
        free(g);
        test_failures++;
    }
    json_decref(got);
    json_decref(want);
    hearth_node_decref(n);
}
#define JANSSON(in, flags, expected) check_jansson(in, flags, expected, __LINE__)

static void test_jansson(void) {
    JANSSON("null", 0, "null");
    JANSSON("{\"a\":[1,2.5,\"x\",true],\"b\":{\"c\":null}}", 0,
            "{\"a\":[1,2.5,\"x\",true]}");
    JANSSON("{\"0\":1,\"2\":3}", 0, "[1,null,3]");
    JANSSON("{\"0\":1,\"2\":3}", HEARTH_JSON_EXPORT, "{\"0\":1,\"2\":3}");
    JANSSON("{\"0\":1,\"4\":3}", 0, "{\"0\":1,\"4\":3}");
    JANSSON("{\"a\":{\".value\":1,\".priority\":2},\"b\":{\"x\":1,"
            "\".priority\":\"p\"}}",
            HEARTH_JSON_EXPORT,
            "{\"a\":{\".value\":1,\".priority\":2},\"b\":{\"x\":1,"
            "\".priority\":\"p\"}}");
    JANSSON("{\"a\":{\".value\":1,\".priority\":2}}", 0, "{\"a\":1}");
    JANSSON("{\".sv\":\"timestamp\"}", 0, "{\".sv\":\"timestamp\"}");
    JANSSON("{\".sv\":{\"increment\":3}}", 0, "{\".sv\":{\"increment\":3}}");
    JANSSON("\"\xF0\x9F\x90\xB5\"", 0, "\"\xF0\x9F\x90\xB5\"");

    /* Integral doubles become JSON integers; others stay reals. */
    hearth_node_t *n = node_from("[1,2.5,1e300,-7]");
    json_t *j = hearth_node_to_jansson(n, 0);
    CHECK(json_is_integer(json_array_get(j, 0)));
    CHECK(json_integer_value(json_array_get(j, 0)) == 1);
    CHECK(json_is_real(json_array_get(j, 1)));
    CHECK(json_is_real(json_array_get(j, 2)));
    CHECK(json_is_integer(json_array_get(j, 3)));
    json_decref(j);
    hearth_node_decref(n);
    /* Embedded NUL in strings survives. */
    n = node_from("\"a\\u0000b\"");
    j = hearth_node_to_jansson(n, 0);
    CHECK(json_is_string(j) && json_string_length(j) == 3);
    json_decref(j);
    hearth_node_decref(n);

    /* From jansson values, with the same validation. */
    json_t *in = json_pack("{s:i, s:[i,n,s], s:{s:i, s:s}}", "a", 1, "b", 2,
                           "x", "c", "d", 3, ".priority", "p");
    hearth_node_t *out = NULL;
    CHECK_INT(hearth_node_from_jansson(in, 0, &out, NULL), 0);
    CHECK_JSON(out, "{\"a\":1,\"b\":{\"0\":2,\"2\":\"x\"},\"c\":{\"d\":3,"
                    "\".priority\":\"p\"}}");
    hearth_node_decref(out);
    json_decref(in);
    in = json_pack("{s:{s:i}}", "a", "b.c", 1);
    hearth_error_t err;
    out = NULL;
    CHECK_INT(hearth_node_from_jansson(in, 0, &out, &err), HEARTH_EKEY);
    CHECK_STR(err.path, "/a");
    CHECK(out == NULL);
    json_decref(in);
    CHECK_INT(hearth_node_from_jansson(NULL, 0, &out, &err), HEARTH_EINVAL);
    /* Large integers go through doubles. */
    in = json_integer(9007199254740993LL);
    CHECK_INT(hearth_node_from_jansson(in, 0, &out, NULL), 0);
    CHECK(hearth_node_number_value(out) == 9007199254740992.0);
    hearth_node_decref(out);
    json_decref(in);
    /* jansson cannot hold NaN, so ENUMBER cannot come from JSON. */
    CHECK(json_real(NAN) == NULL);
}

/* Parses text with the k-th allocation failing for k = 0, 1, ... until it
 * succeeds; failures report ENOMEM and write nothing. */
static void parse_under_failures(const char *text, int line) {
    hearth_node_t *want = node_from(text);
    char *want_text = to_json(want);
    int failures = 0;
    bool done = false;
    hearth_node_t *sentinel = hearth_node_boolean(true);
    for (long k = 0; k < 100000 && !done; k++) {
        hearth_node_t *n = sentinel;
        hearth_error_t err;
        memset(&err, 0, sizeof err);
        hearth__alloc_fail_after(k);
        int rc = hearth_node_from_json(text, (size_t)-1,
                                       HEARTH_JSON_ALLOW_SERVER_VALUES, &n,
                                       &err);
        hearth__alloc_fail_after(-1);
        if (rc == HEARTH_ENOMEM) {
            failures++;
            if (n != sentinel || err.code != HEARTH_ENOMEM) {
                fprintf(stderr, "  test_json.c:%d: failure %ld: %s\n", line, k,
                        err.message);
                test_failures++;
            }
            continue;
        }
        if (rc != 0) {
            fprintf(stderr, "  test_json.c:%d: %s\n", line, err.message);
            test_failures++;
            break;
        }
        CHECK(hearth_node_equal(n, want));
        CHECK_JSON(n, want_text);
        hearth_node_decref(n);
        done = true;
    }
    CHECK(done);
    CHECK(failures > 0 || hearth__node_is_empty(want));
    hearth_node_decref(sentinel);
    free(want_text);
    hearth_node_decref(want);
}

/* Serializes with the k-th allocation failing: NULL or the right text. */
static void write_under_failures(const char *text, unsigned flags, int line) {
    hearth_node_t *n = node_from(text);
    char *want = hearth_node_to_json(n, flags, NULL);
    bool done = false;
    for (long k = 0; k < 100000 && !done; k++) {
        size_t len = 12345;
        hearth__alloc_fail_after(k);
        char *got = hearth_node_to_json(n, flags, &len);
        hearth__alloc_fail_after(-1);
        if (!got) {
            if (len != 12345) {
                fprintf(stderr, "  test_json.c:%d: len written on failure\n",
                        line);
                test_failures++;
            }
            continue;
        }
        CHECK_STR(got, want);
        CHECK_INT(len, strlen(want));
        hearth_free(got);
        done = true;
    }
    CHECK(done);
    hearth_free(want);
    hearth_node_decref(n);
}

static void test_alloc_failure(void) {
    static const char *const texts[] = {
        "null",
        "1",
        "\"string\"",
        "{\".value\":true,\".priority\":\"p\"}",
        "{\".value\":\"v\",\".priority\":1}",
        "{\"a\":1,\"b\":[1,null,{\"c\":\"d\"}],\"e\":{\".value\":2,"
        "\".priority\":\"p\"},\".priority\":3}",
        "{\"t\":{\".sv\":\"timestamp\",\".priority\":1},\"i\":{\".sv\":{"
        "\"increment\":1}}}",
        "{\"x\":{\".value\":{\"y\":1},\".priority\":1},\"z\":{\"w\":{}}}",
        "[[[[1]]],[[2]]]",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        parse_under_failures(texts[i], __LINE__);
        write_under_failures(texts[i], 0, __LINE__);
        write_under_failures(texts[i], HEARTH_JSON_EXPORT, __LINE__);
        write_under_failures(texts[i], HEARTH_JSON_PRETTY, __LINE__);
    }
    /* A wide object: many entries, a multi-level children tree. */
    char *wide = object_json(700, "\"k%d\":%d");
    parse_under_failures(wide, __LINE__);
    write_under_failures(wide, 0, __LINE__);
    free(wide);
}

/* ---- the direct parser of the usual text (json_parse.c) ---- */

static size_t jansson_allocs;

static void *counting_malloc(size_t size) {
    jansson_allocs++;
    return malloc(size);
}

/* text through the direct parser (which must take it: took) and through
 * jansson give the same node. */
static void check_direct(const char *text, bool took, int line) {
    hearth_node_t *direct = NULL, *full = NULL;
    int rc = hearth__json_parse_plain(text, strlen(text), HEARTH_MAX_DEPTH, &direct);
    if ((rc == 0) != took) {
        fprintf(stderr, "  test_json.c:%d: direct parser %s %s\n", line,
                rc ? "refused" : "took", text);
        test_failures++;
    }
    if (rc)
        return;
    json_t *json;
    CHECK_INT(hearth__json_load(text, strlen(text), &json, NULL), 0);
    CHECK_INT(hearth_node_from_jansson(json, 0, &full, NULL), 0);
    json_decref(json);
    if (!hearth_node_equal(direct, full)) {
        fprintf(stderr, "  test_json.c:%d: direct and jansson differ on %s\n", line, text);
        test_failures++;
    }
    hearth_node_decref(direct);
    hearth_node_decref(full);
}

/* Plain data is read straight into nodes, with no jansson value built
 * (what made parsing twice jansson's time), and reads the same as through
 * jansson; the rest (special members, duplicate keys, anything malformed)
 * is left to the jansson path, which names the errors. */
static void test_direct_parser(void) {
    static const char *const taken[] = {
        "null", "true", "false", "0", "-0", "12", "-3.25", "1e3", "1E+2", "2.5e-3",
        "123456789012345678901", "0.1", "\"\"", "\"a\\\"b\\\\c\\/\\b\\f\\n\\r\\t\"",
        "\"\\u00e9\\ud83d\\udc35\\u0000\"", "\"\xc3\xa9\"", " [ 1 , null , {} , [ ] , \"x\" ] ",
        "{}", "[]", "{\"b\":1,\"a\":{\"c\":[true]},\"10\":2,\"9\":3,\"-1\":4}",
        "{\"k0000002\":1,\"k0000001\":2}", "[[[[1]]],[[2]]]",
    };
    for (size_t i = 0; i < sizeof taken / sizeof *taken; i++)
        check_direct(taken[i], true, __LINE__);
    static const char *const left[] = {
        "", " ", "nul", "01", "-", "1.", ".5", "1e", "+1", "1e999", "\"\\x\"",
        "\"\\ud83d\"", "\"\\udc35\"", "\"\xc3\"", "\"\x01\"", "[1,]", "[1 2]",
        "{\"a\":1,}", "{\"a\" 1}", "{\"a\":1,\"a\":2}", "{\"a\":1,\"a\":null}",
        "{\"a\":null}", "{\".priority\":1,\"a\":2}", "{\".value\":1}",
        "{\".sv\":\"timestamp\"}", "{\"a/b\":1}", "{\"\\u0041\":1}", "{\"\":1}",
        "1 2", "[1]x", "{\"a\":1",
    };
    for (size_t i = 0; i < sizeof left / sizeof *left; i++)
        check_direct(left[i], false, __LINE__);
    /* Past the depth limit, the direct parser leaves the error to jansson's
     * path; empty containers are allowed anywhere. */
    hearth_node_t *n = NULL;
    CHECK(hearth__json_parse_plain("{\"a\":{\"b\":1}}", 13, 1, &n) != 0);
    CHECK_INT(hearth__json_parse_plain("[{}]", 4, 1, &n), 0);
    CHECK_JSON(n, "null");
    hearth_node_decref(n);

    json_malloc_t was_malloc;
    json_free_t was_free;
    json_get_alloc_funcs(&was_malloc, &was_free);
    json_set_alloc_funcs(counting_malloc, free);
    jansson_allocs = 0;
    char *wide = object_json(700, "\"k%d\":{\"n\":%d,\"s\":\"v\"}");
    CHECK_INT(hearth_node_from_json(wide, (size_t)-1, 0, &n, NULL), 0);
    CHECK_INT(hearth_node_child_count(n), 700);
    hearth_node_decref(n);
    CHECK_INT(jansson_allocs, 0);
    /* Special members still go through jansson. */
    CHECK_INT(hearth_node_from_json("{\".value\":1,\".priority\":2}", (size_t)-1, 0, &n, NULL), 0);
    CHECK(jansson_allocs > 0);
    hearth_node_decref(n);
    json_set_alloc_funcs(was_malloc, was_free);
    free(wide);
}

const test_case json_tests[] = {
    {"json_round_trips", test_round_trips},
    {"json_numbers", test_numbers},
    {"json_strings", test_strings},
    {"json_arrays", test_arrays},
    {"json_export_priorities", test_export_priorities},
    {"json_vanishing_empties", test_vanishing},
    {"json_special_keys", test_special_keys},
    {"json_malformed", test_malformed},
    {"json_invalid_keys", test_invalid_keys},
    {"json_limits", test_limits},
    {"json_jansson", test_jansson},
    {"json_alloc_failure", test_alloc_failure},
    {"json_direct_parser", test_direct_parser},
    {NULL, NULL},
};
