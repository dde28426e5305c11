/* v5.c - the realtime protocol's envelope: messages in pieces and back. */
#include "net/v5.h"

#include <stdio.h>

/* Where the piece starting at `at` ends: at most `piece` bytes, never
 * inside a character. Always past `at` for UTF-8 text; a run of
 * continuation bytes (not UTF-8) is cut where it reaches the size. */
static size_t piece_end(const char *text, size_t len, size_t at, size_t piece) {
    if (len - at <= piece)
        return len;
    size_t end = at + piece;
    while (end > at && ((unsigned char)text[end] & 0xC0) == 0x80)
        end--;
    return end > at ? end : at + piece;
}

int hearth__v5_send_pieces(const char *text, size_t len, size_t max,
                           size_t piece, hearth__v5_send_cb send, void *ctx) {
    if (len > max)
        return HEARTH_ETOOBIG;
    if (len <= piece)
        return send(ctx, text, len);
    /* The iOS SDK reads a count only from a frame of at most 4
     * characters: past 9999 pieces, the pieces grow instead (every SDK
     * joins pieces of any size). A cut between characters takes at most
     * 3 bytes off a piece. */
    size_t pieces;
    for (;;) {
        pieces = 0;
        for (size_t at = 0; at < len; at = piece_end(text, len, at, piece))
            pieces++;
        if (pieces <= HEARTH__V5_MAX_PIECES)
            break;
        size_t wider = len / HEARTH__V5_MAX_PIECES + 4;
        piece = wider > piece ? wider : piece + piece / 16 + 1;
    }
    char count[8];
    int n = snprintf(count, sizeof count, "%zu", pieces);
    int rc = send(ctx, count, (size_t)n);
    for (size_t at = 0, end; !rc && at < len; at = end) {
        end = piece_end(text, len, at, piece);
        rc = send(ctx, text + at, end - at);
    }
    return rc;
}

int hearth__v5_send(const char *text, size_t len, size_t max,
                    hearth__v5_send_cb send, void *ctx) {
    return hearth__v5_send_pieces(text, len, max, HEARTH__V5_PIECE, send, ctx);
}

void hearth__v5_joiner_init(hearth__v5_joiner *j, size_t max) {
    j->max = max;
    j->left = 0;
    hearth__buf_init(&j->joined);
}

void hearth__v5_joiner_reset(hearth__v5_joiner *j) {
    j->left = 0;
    hearth__buf_free(&j->joined);
}

/* The count of a frame of 1 to 6 digits, else -1 (a message). */
static long count_of(const char *frame, size_t len) {
    if (len == 0 || len > 6)
        return -1;
    long n = 0;
    for (size_t i = 0; i < len; i++) {
        if (frame[i] < '0' || frame[i] > '9')
            return -1;
        n = n * 10 + (frame[i] - '0');
    }
    return n;
}

int hearth__v5_join(hearth__v5_joiner *j, const char *frame, size_t len,
                    const char **msg, size_t *msg_len) {
    if (j->left == 0) {
        long n = count_of(frame, len);
        if (n < 0) {
            *msg = frame;
            *msg_len = len;
            return HEARTH__V5_MESSAGE;
        }
        hearth__buf_free(&j->joined); /* the last message's */
        j->left = n;                  /* "0" is the keep-alive */
        return HEARTH__V5_MORE;
    }
    if (len > j->max - j->joined.len) {
        hearth__v5_joiner_reset(j);
        return HEARTH_ETOOBIG;
    }
    if (len) /* an empty frame's text may be NULL */
        hearth__buf_add(&j->joined, frame, len);
    if (j->joined.failed) {
        hearth__v5_joiner_reset(j);
        return HEARTH_ENOMEM;
    }
    if (--j->left > 0)
        return HEARTH__V5_MORE;
    *msg = j->joined.data ? j->joined.data : "";
    *msg_len = j->joined.len;
    return HEARTH__V5_MESSAGE;
}

/* JSON text with every integer literal of 19 digits or more written as a
 * real (".0" appended), everything else as it was (strings untouched). In
 * this data model numbers are doubles, but jansson keeps integers exactly
 * and refuses one past int64: this lets it read them as the doubles they
 * are, while the protocol's own integers (request numbers, tags) stay
 * integers, which JSON_DECODE_INT_AS_REAL would make reals. NULL when out
 * of memory; free with hearth__free. */
char *hearth__json_widen_integers(const char *text, size_t len,
                                  size_t *out_len) {
    hearth__buf b;
    hearth__buf_init(&b);
    bool in_string = false;
    for (size_t i = 0; i < len;) {
        char c = text[i];
        if (in_string) {
            /* An escape takes the next byte with it (\" does not end). */
            size_t n = c == '\\' && i + 1 < len ? 2 : 1;
            in_string = c != '"';
            hearth__buf_add(&b, text + i, n);
            i += n;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            /* A number token: sign, digits, then maybe a fraction or an
             * exponent, which make it a real already. */
            size_t start = i, digits = 0;
            if (text[i] == '-')
                i++;
            for (; i < len && text[i] >= '0' && text[i] <= '9'; i++)
                digits++;
            bool real = i < len && (text[i] == '.' || text[i] == 'e' || text[i] == 'E');
            hearth__buf_add(&b, text + start, i - start);
            if (!real && digits >= 19)
                hearth__buf_add(&b, ".0", 2);
            continue;
        }
        hearth__buf_addc(&b, c);
        i++;
    }
    return hearth__buf_detach(&b, out_len);
}

json_t *hearth__v5_parse(const char *msg, size_t len) {
    json_error_t e;
    json_t *v = json_loadb(msg, len, 0, &e);
    if (!v && json_error_code(&e) == json_error_numeric_overflow) {
        /* An integer past int64 (the JS SDK sends 1.111e20 as
         * 111111111111111100000): read such numbers as doubles, as REST
         * does, rather than drop the request unanswered. */
        size_t wide_len;
        char *wide = hearth__json_widen_integers(msg, len, &wide_len);
        v = wide ? json_loadb(wide, wide_len, 0, NULL) : NULL;
        hearth__free(wide);
    }
    if (json_is_object(v))
        return v;
    json_decref(v);
    return NULL;
}
