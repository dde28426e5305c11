/* test_ws_server.c - the server's WebSocket frame codec (net/ws_server.c)
 * over real sockets to a real server: fragments, frames in pieces, pings,
 * closes and their codes, every protocol violation (answered with a close
 * and that connection ended, the server answering others after), the
 * size bound, UTF-8, and what an idle session costs; and the codec's
 * frames and writes without a socket. */
#include "test.h"

#include "http_raw.h"
#include "server_fixture.h"
#include "ws_raw.h"

#include "common/internal.h"
#include "net/ws_accept.h"
#include "net/ws_server.h"

#include <poll.h>
#include <unistd.h>

static void server_stop(hearth_server_t *s) {
    stop(s);
    remove_tree(data_dir);
}

/* The next frame is a close with `code` (0: none) and the reason
 * `reason`, then the connection ends. */
static void expect_close(int fd, int code, const char *reason) {
    char *p;
    size_t len;
    int op = ws_next_frame(fd, &p, &len);
    CHECK_INT(op, 8);
    if (op == 8 && code) {
        CHECK(len >= 2);
        CHECK_INT(len >= 2 ? ((unsigned char)p[0] << 8 | (unsigned char)p[1]) : 0, code);
        CHECK_STR(len >= 2 ? p + 2 : "", reason);
    } else if (op == 8) {
        CHECK_INT(len, 0);
    }
    free(p);
    CHECK(closed_within(fd, 5000));
}

/* Whether a text frame holding `want` comes (others skipped) before the
 * connection ends or a close comes. */
static bool await_text(int fd, const char *want) {
    char *text = ws_recv_holding(fd, want);
    bool found = text != NULL;
    free(text);
    return found;
}

/* A session on /.ws past its 101 and hello, signed in as the admin (the
 * emulator's "owner") so that its writes are allowed. */
static int session(int port) {
    return rt_session(port, "wss", true);
}

/* A write and its answer on a fresh session: the server is up and
 * serving (the barrier after a connection it ended). */
static void check_serving(int port) {
    int fd = session(port);
    ws_send(fd, "{\"t\":\"d\",\"d\":{\"r\":1,\"a\":\"p\",\"b\":{\"p\":\"/up\",\"d\":1}}}");
    CHECK(await_text(fd, "{\"r\":1,\"b\":{\"s\":\"ok\""));
    close(fd);
}

/* ---- messages ---- */

/* A request in three fragments, a ping between them: the pong comes with
 * the ping's payload, and the joined request is answered. A character
 * cut between two fragments is whole once they are joined. */
static void test_fragmented(void) {
    hearth_server_t *s = start();
    int fd = session(hearth_server_port(s));
    const char *req = "{\"t\":\"d\",\"d\":{\"r\":7,\"a\":\"p\",\"b\":{\"p\":\"/f\",\"d\":\"caf\xc3\xa9\"}}}";
    const char *cut = strchr(req, '\xc3') + 1; /* inside the character */
    size_t a = 10, b = (size_t)(cut - req);
    ws_send_frame(fd, 0x01, req, a);           /* text, not final */
    ws_send_frame(fd, 0x89, "are you", 7);     /* a ping in between */
    ws_send_frame(fd, 0x00, req + a, b - a);   /* continuation */
    ws_send_frame(fd, 0x80, req + b, strlen(req) - b); /* the last */
    char *p;
    size_t len;
    CHECK_INT(ws_next_frame(fd, &p, &len), 0xA);
    CHECK_STR(p, "are you");
    free(p);
    CHECK(await_text(fd, "{\"r\":7,\"b\":{\"s\":\"ok\""));
    ws_send(fd, "{\"t\":\"d\",\"d\":{\"r\":8,\"a\":\"g\",\"b\":{\"p\":\"/f\"}}}");
    CHECK(await_text(fd, "caf\xc3\xa9"));
    close(fd);
    server_stop(s);
}

/* A frame written a byte at a time (each byte its own segment), its
 * header and payload cut everywhere; and a message longer than one read
 * of the server (64 KiB), assembled across reads. */
static void test_frames_in_pieces(void) {
    hearth_server_t *s = start();
    int fd = session(hearth_server_port(s));
    const char *req = "{\"t\":\"d\",\"d\":{\"r\":2,\"a\":\"p\",\"b\":{\"p\":\"/b\",\"d\":\"byte by byte\"}}}";
    char *f = NULL;
    size_t n = ws_put_frame(&f, 0, 0x81, strlen(req), req, strlen(req), false);
    for (size_t i = 0; i < n; i++) {
        send_all(fd, f + i, 1);
        usleep(200); /* likely a read of its own; the answer is the check */
    }
    free(f);
    CHECK(await_text(fd, "{\"r\":2,\"b\":{\"s\":\"ok\""));

    size_t big = 300 * 1024;
    char *text = malloc(big + 128);
    int at = sprintf(text, "{\"t\":\"d\",\"d\":{\"r\":3,\"a\":\"p\",\"b\":{\"p\":\"/big\",\"d\":\"");
    memset(text + at, 'x', big);
    strcpy(text + at + big, "\"}}}");
    ws_send(fd, text);
    free(text);
    CHECK(await_text(fd, "{\"r\":3,\"b\":{\"s\":\"ok\""));
    close(fd);
    server_stop(s);
}

/* A message in thousands of small fragments (its memory grows in a few
 * steps, not a copy per fragment), pings between them: joined in order. */
static void test_many_fragments(void) {
    hearth_server_t *s = start();
    int fd = session(hearth_server_port(s));
    char *req = malloc(200000);
    size_t len = (size_t)sprintf(req, "{\"t\":\"d\",\"d\":{\"r\":2,\"a\":\"p\",\"b\":{\"p\":\"/m\",\"d\":{");
    for (int k = 0; k < 3000; k++)
        len += (size_t)sprintf(req + len, "%s\"k%d\":%d", k ? "," : "", k, k);
    len += (size_t)sprintf(req + len, "}}}}");
    char *f = NULL;
    size_t n = 0;
    for (size_t at = 0, i = 0; at < len; at += 7, i++) {
        size_t piece = len - at < 7 ? len - at : 7;
        int b0 = (at ? 0x00 : 0x01) | (at + piece == len ? 0x80 : 0);
        n = ws_put_frame(&f, n, b0, piece, req + at, piece, false);
        if (i % 1000 == 999)
            n = ws_put_frame(&f, n, 0x89, 0, NULL, 0, false);
    }
    send_all(fd, f, n);
    free(f);
    free(req);
    CHECK(await_text(fd, "{\"r\":2,\"b\":{\"s\":\"ok\""));
    ws_send(fd, "{\"t\":\"d\",\"d\":{\"r\":3,\"a\":\"g\",\"b\":{\"p\":\"/m/k2345\"}}}");
    CHECK(await_text(fd, "{\"r\":3,\"b\":{\"s\":\"ok\",\"d\":2345}"));
    close(fd);
    server_stop(s);
}

/* A binary message is read and dropped (a v5 client sends text only); a
 * pong from the client needs no answer. The next text frame from the
 * server is the answer to the request after them. */
static void test_binary_and_pong_ignored(void) {
    hearth_server_t *s = start();
    int fd = session(hearth_server_port(s));
    const char *dropped = "{\"t\":\"d\",\"d\":{\"r\":4,\"a\":\"g\",\"b\":{\"p\":\"/\"}}}";
    ws_send_frame(fd, 0x82, dropped, strlen(dropped));
    ws_send_frame(fd, 0x02, dropped, 5); /* fragmented binary, over two */
    ws_send_frame(fd, 0x80, dropped + 5, strlen(dropped) - 5);
    ws_send_frame(fd, 0x8A, "unasked", 7);
    ws_send(fd, "{\"t\":\"d\",\"d\":{\"r\":5,\"a\":\"g\",\"b\":{\"p\":\"/\"}}}");
    char *p;
    size_t len;
    CHECK_INT(ws_next_frame(fd, &p, &len), 1);
    CHECK(p && strstr(p, "{\"r\":5,") != NULL);
    free(p);
    close(fd);
    server_stop(s);
}

/* ---- closes ---- */

/* A close is echoed (code and reason), then the connection ends; an
 * empty close gets an empty one. */
static void test_close_echoed(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    struct {
        int code;
        const char *reason;
    } good[] = {{1000, "bye"}, {1001, ""}, {1011, "oops"}, {3000, "x"},
                {4999, "caf\xc3\xa9"}, {0, NULL}};
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(good); i++) {
        int fd = session(port);
        char payload[64] = {(char)(good[i].code >> 8), (char)good[i].code};
        size_t len = good[i].reason ? 2 + strlen(good[i].reason) : 0;
        if (good[i].reason)
            memcpy(payload + 2, good[i].reason, len - 2);
        ws_send_frame(fd, 0x88, payload, len);
        expect_close(fd, good[i].code, good[i].reason);
        close(fd);
    }
    server_stop(s);
}

/* Bytes sent on a fresh session: the server answers with a close of
 * `code` and ends that connection. `what` names the case when it fails. */
static void expect_refused(int port, const char *what, const char *bytes,
                           size_t len, int code) {
    int fd = session(port);
    send_all(fd, bytes, len);
    int before = test_failures;
    expect_close(fd, code, "");
    if (test_failures > before)
        fprintf(stderr, "  (the input: %s)\n", what);
    close(fd);
}

/* Close codes that may not be sent (RFC 6455 7.4: 1005, 1006 and 1015
 * are never in a frame; others unassigned), a one-byte close, and a
 * reason that is not UTF-8 fail the connection (1002, 1007). */
static void test_bad_closes(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    const int codes[] = {0, 999, 1004, 1005, 1006, 1012, 1015, 2999, 5000, 65535};
    char *f = NULL;
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(codes); i++) {
        char payload[2] = {(char)(codes[i] >> 8), (char)codes[i]};
        size_t n = ws_put_frame(&f, 0, 0x88, 2, payload, 2, false);
        expect_refused(port, "a close code", f, n, 1002);
    }
    size_t n = ws_put_frame(&f, 0, 0x88, 1, "\x03", 1, false);
    expect_refused(port, "a one-byte close", f, n, 1002);
    n = ws_put_frame(&f, 0, 0x88, 4, "\x03\xe8\xff\xfe", 4, false);
    expect_refused(port, "a reason not UTF-8", f, n, 1007);
    free(f);
    check_serving(port);
    server_stop(s);
}

/* ---- violations ---- */

/* Each frame breaks the protocol: the server closes with 1002 and ends
 * that connection, and still answers another. */
static void test_protocol_violations(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    struct {
        const char *what;
        bool in_message; /* sent inside a fragmented text message */
        int b0;
        size_t len;
        bool unmasked;
    } bad[] = {
        {"RSV1", false, 0xC1, 2, false},
        {"RSV2", false, 0xA1, 2, false},
        {"RSV3", false, 0x91, 2, false},
        {"opcode 3", false, 0x83, 2, false},
        {"opcode 7", false, 0x87, 2, false},
        {"opcode 0xB", false, 0x8B, 2, false},
        {"opcode 0xF", false, 0x8F, 2, false},
        {"unmasked text", false, 0x81, 2, true},
        {"unmasked ping", false, 0x89, 0, true},
        {"ping of 126", false, 0x89, 126, false},
        {"fragmented ping", false, 0x09, 2, false},
        {"fragmented close", false, 0x08, 2, false},
        {"continuation first", false, 0x80, 2, false},
        {"text inside a message", true, 0x81, 2, false},
        {"binary inside a message", true, 0x82, 2, false},
    };
    char payload[126] = "{}";
    char *f = NULL;
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(bad); i++) {
        size_t n = bad[i].in_message ? ws_put_frame(&f, 0, 0x01, 5, "start", 5, false)
                                     : 0;
        n = ws_put_frame(&f, n, bad[i].b0, bad[i].len, payload, bad[i].len,
                      bad[i].unmasked);
        expect_refused(port, bad[i].what, f, n, 1002);
    }
    free(f);
    static const char top_bit[] = "\x81\xff\x80\0\0\0\0\0\0\x05" "abcd";
    expect_refused(port, "a 64-bit length with its top bit set", top_bit,
                   sizeof top_bit - 1, 1002);
    check_serving(port);
    server_stop(s);
}

/* A text message that is not UTF-8 closes with 1007, whole or in
 * fragments. */
static void test_text_not_utf8(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    char *f = NULL;
    size_t n = ws_put_frame(&f, 0, 0x81, 10, "{\"a\":\"\xc3\x28\"}", 10, false);
    expect_refused(port, "a bad sequence", f, n, 1007);
    n = ws_put_frame(&f, 0, 0x01, 7, "{\"a\":\"\xed", 7, false);
    n = ws_put_frame(&f, n, 0x80, 4, "\xa0\x80\"}", 4, false);
    expect_refused(port, "a surrogate across fragments", f, n, 1007);
    free(f);
    check_serving(port);
    server_stop(s);
}

/* A message over HEARTH__WS_MAX_MESSAGE closes with 1009 as soon as a
 * header announces it: one frame, or the fragment that passes the bound. */
static void test_too_big(void) {
    hearth_server_t *s = start();
    int port = hearth_server_port(s);
    char *f = NULL;
    size_t n = ws_put_frame(&f, 0, 0x81, HEARTH__WS_MAX_MESSAGE + 1, NULL, 0, false);
    expect_refused(port, "a frame's header", f, n, 1009);
    size_t first = HEARTH__WS_MAX_MESSAGE - 10;
    char *part = malloc(first);
    memset(part, ' ', first);
    n = ws_put_frame(&f, 0, 0x01, first, part, first, false);
    free(part);
    n = ws_put_frame(&f, n, 0x80, 11, "01234567890", 11, false);
    expect_refused(port, "a fragment's header", f, n, 1009);
    free(f);
    check_serving(port);
    server_stop(s);
}

/* The server's own close (v5 pieces over the bound: 1000): what the
 * client sends after it goes unanswered (a request, a ping), and the
 * client's close ends the connection. */
static void test_server_close(void) {
    hearth_server_t *s = start();
    int fd = session(hearth_server_port(s));
    ws_send(fd, "2"); /* two v5 pieces follow */
    size_t big = HEARTH__WS_MAX_MESSAGE - 16;
    char *piece = malloc(big + 1);
    memset(piece, 'a', big);
    piece[big] = '\0';
    ws_send(fd, piece);
    free(piece);
    ws_send(fd, "0123456789012345678901234567890123456789"); /* past it */
    char *p;
    size_t len;
    CHECK_INT(ws_next_frame(fd, &p, &len), 8);
    CHECK_INT(len, 2);
    CHECK_INT(len == 2 ? ((unsigned char)p[0] << 8 | (unsigned char)p[1]) : 0, 1000);
    free(p);
    ws_send(fd, "{\"t\":\"d\",\"d\":{\"r\":1,\"a\":\"g\",\"b\":{\"p\":\"/\"}}}");
    ws_send_frame(fd, 0x89, "ping", 4);
    ws_send_frame(fd, 0x88, "\x03\xe8", 2);
    CHECK(closed_within(fd, 5000)); /* no answer, no pong, no second close */
    close(fd);
    server_stop(s);
}

/* ---- the codec without a socket ---- */

/* Frames made once for many sessions read back as they were made, in
 * each of the three length forms. */
static void test_shared_frames(void) {
    static const size_t lens[] = {0, 125, 126, 65535, 65536, 70000};
    char *text = malloc(70000);
    memset(text, 'y', 70000);
    hearth__buf out;
    hearth__buf_init(&out);
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++)
        hearth__ws_frame_text(&out, text, lens[i]);
    CHECK(!out.failed);
    size_t at = 0;
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        const char *payload;
        size_t len;
        size_t used = hearth__ws_frame_next(out.data + at, out.len - at, &payload, &len);
        CHECK(used > 0);
        CHECK_INT(len, lens[i]);
        CHECK_INT((unsigned char)out.data[at], 0x81);
        at += used;
    }
    CHECK_INT(at, out.len);
    const char *payload;
    size_t len;
    /* the 125-byte frame, cut */
    CHECK_INT(hearth__ws_frame_next(out.data + 2, 3, &payload, &len), 0);
    hearth__buf_free(&out);
    free(text);
}

/* What a WebSocket session writes, as its transport sees it. */
typedef struct recorded {
    int sends;
    hearth__buf bytes;
} recorded;

static int record_send(void *conn, const char *head, size_t head_len,
                       const char *payload, size_t len) {
    recorded *r = conn;
    r->sends++;
    hearth__buf_add(&r->bytes, head, head_len);
    hearth__buf_add(&r->bytes, payload, len);
    return 0;
}
static bool record_hold(void *conn, size_t n) { (void)conn; (void)n; return true; }
static void record_unhold(void *conn, size_t n) { (void)conn; (void)n; }
static void record_end(void *conn) { (void)conn; }

/* A message goes out in one write of the transport, header and payload
 * together (a write each made a fan-out to N listeners 2N syscalls and 2N
 * packets), a large one as well: the payload is not gathered (copied)
 * behind its header first, its bytes intact and in order. */
static void test_websocket_message_is_one_write(void) {
    static const hearth__ws_transport t = {record_send, record_hold,
                                           record_unhold, record_end};
    recorded r = {0};
    hearth__buf_init(&r.bytes);
    hearth__ws *ws = NULL;
    CHECK_INT(hearth__ws_create(&t, &r, NULL, NULL, NULL, &ws), 0);
    CHECK(ws != NULL);
    const char *msg = "{\"t\":\"d\",\"d\":{\"a\":\"d\"}}";
    CHECK_INT(hearth__ws_send_text(ws, msg, strlen(msg)), 0);
    CHECK_INT(r.sends, 1);
    CHECK_INT((int)r.bytes.len, 2 + (int)strlen(msg));
    CHECK_INT((unsigned char)r.bytes.data[0], 0x81);
    CHECK(memcmp(r.bytes.data + 2, msg, strlen(msg)) == 0);

    size_t big = 300 * 1024;
    char *text = malloc(big);
    memset(text, 'x', big);
    r.sends = 0;
    r.bytes.len = 0;
    CHECK_INT(hearth__ws_send_text(ws, text, big), 0);
    CHECK_INT(r.sends, 1); /* the header, and the payload as it is */
    CHECK_INT((int)r.bytes.len, 10 + (int)big); /* a 64-bit length */
    CHECK(memcmp(r.bytes.data + 10, text, big) == 0);
    free(text);
    hearth__ws_discard(ws);
    hearth__buf_free(&r.bytes);
}

const test_case ws_server_tests[] = {
    {"ws_server_fragmented", test_fragmented},
    {"ws_server_frames_in_pieces", test_frames_in_pieces},
    {"ws_server_many_fragments", test_many_fragments},
    {"ws_server_binary_and_pong_ignored", test_binary_and_pong_ignored},
    {"ws_server_close_echoed", test_close_echoed},
    {"ws_server_bad_closes", test_bad_closes},
    {"ws_server_protocol_violations", test_protocol_violations},
    {"ws_server_text_not_utf8", test_text_not_utf8},
    {"ws_server_too_big", test_too_big},
    {"ws_server_server_close", test_server_close},
    {"ws_server_shared_frames", test_shared_frames},
    {"ws_server_message_is_one_write", test_websocket_message_is_one_write},
    {NULL, NULL},
};
