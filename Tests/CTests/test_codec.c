/* test_codec.c - the compact binary form of nodes: round trips keep
 * values, priorities and key order; every kind of bad input is refused. */
#include "test.h"

#include "tree/codec.h"

static void round_trip(const char *json) {
    hearth_node_t *n = node_from(json);
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__node_encode(n, &b);
    CHECK(!b.failed);
    hearth_node_t *back = NULL;
    CHECK_INT(hearth__node_decode(b.data, b.len, &back), 0);
    CHECK(back && hearth_node_equal(n, back));
    /* Every cut short form is refused. */
    for (size_t cut = 0; cut < b.len; cut++) {
        hearth_node_t *part = NULL;
        CHECK(hearth__node_decode(b.data, cut, &part) != 0);
        CHECK(part == NULL);
    }
    hearth__buf_free(&b);
    hearth_node_decref(n);
    hearth_node_decref(back);
}

static void test_round_trips(void) {
    round_trip("null");
    round_trip("true");
    round_trip("{\".value\":false,\".priority\":3}");
    round_trip("-0.5");
    round_trip("1.7976931348623157e308");
    round_trip("\"h\\u00e9llo \\ud83d\\ude00\"");
    round_trip("{\".value\":\"s\",\".priority\":\"p\"}");
    round_trip("{\"b\":1,\"a\":{\"x\":[1,2,3]},\"10\":2,\"9\":3,\".priority\":1.5}");
    round_trip("{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":{\".value\":1,\".priority\":\"z\"}}}}}}");
}

static void refused(const unsigned char *data, size_t len) {
    hearth_node_t *n = NULL;
    CHECK_INT(hearth__node_decode(data, len, &n), HEARTH_EVALUE);
    CHECK(n == NULL);
}

static void test_bad_input_is_refused(void) {
    static const unsigned char trailing[] = {0, 0};
    refused(trailing, sizeof trailing);
    static const unsigned char tag[] = {9};
    refused(tag, sizeof tag);
    static const unsigned char nan[] = {3, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f};
    refused(nan, sizeof nan);
    static const unsigned char utf8[] = {4, 1, 0xff};
    refused(utf8, sizeof utf8);
    static const unsigned char key[] = {5, 1, 3, 'a', '.', 'b', 1};
    refused(key, sizeof key);
    static const unsigned char order[] = {5, 2, 1, 'b', 1, 1, 'a', 1};
    refused(order, sizeof order);
    static const unsigned char twice[] = {5, 2, 1, 'a', 1, 1, 'a', 1};
    refused(twice, sizeof twice);
    static const unsigned char empty_child[] = {5, 1, 1, 'a', 0};
    refused(empty_child, sizeof empty_child);
    static const unsigned char prio_on_null[] = {0x80, 3, 0, 0, 0, 0, 0, 0, 0, 0};
    refused(prio_on_null, sizeof prio_on_null);
    static const unsigned char object_prio[] = {0x82, 5, 1, 1, 'a', 1};
    refused(object_prio, sizeof object_prio);
    static const unsigned char huge_count[] = {5, 0xff, 0xff, 0xff, 0xff, 0x0f};
    refused(huge_count, sizeof huge_count);
    static const unsigned char long_varint[] = {4, 0xff, 0xff, 0xff, 0xff, 0xff,
                                                0xff, 0xff, 0xff, 0xff, 0xff, 1};
    refused(long_varint, sizeof long_varint);
    static const unsigned char padded[] = {4, 0x81, 0x00, 'a'};
    refused(padded, sizeof padded);
    /* 33 levels of objects. */
    unsigned char deep[33 * 4 + 1];
    size_t n = 0;
    for (int i = 0; i < 33; i++) {
        deep[n++] = 5;
        deep[n++] = 1;
        deep[n++] = 1;
        deep[n++] = 'a';
    }
    deep[n++] = 1;
    refused(deep, n);
}

const test_case codec_tests[] = {
    {"codec_round_trips", test_round_trips},
    {"codec_bad_input_is_refused", test_bad_input_is_refused},
    {NULL, NULL},
};
