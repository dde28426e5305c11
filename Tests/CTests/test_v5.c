/* test_v5.c - the realtime protocol's envelope (net/v5.h): pieces cut
 * between characters, joined back within a bound, the keep-alive, the
 * count frames the iOS SDK reads, and integers past int64 read as reals. */
#include "test.h"

#include "common/internal.h"
#include "net/v5.h"

#include <string.h>

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

const test_case v5_tests[] = {
    {"v5_envelope", test_v5_envelope},
    {"v5_count_fits_four_digits", test_v5_count_fits_four_digits},
    {"v5_widen_integers", test_widen_integers},
    {NULL, NULL},
};
