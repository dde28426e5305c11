/* fuzz_ws.c - libFuzzer target for the server's WebSocket frame codec
 * (net/ws_server.c) and the realtime v5 message decoder (realtime.c) of a
 * real server. Each
 * input opens a loopback connection, upgrades it at /.ws?v=5&ns=fuzz and
 * reads the hello; then, by the first byte:
 *
 *   odd:  the rest goes out as raw bytes (any frames: bad opcodes, lengths,
 *         unmasked, fragments, control frames, close), then EOF. With bit 1
 *         set the bytes ride right behind the upgrade request instead, before
 *         the hello (the bytes-after-the-request path of the upgrade); with
 *         bit 2 (and not bit 1) they go in writes of a few bytes.
 *   even: the rest, split on '\n', becomes the payloads of correctly masked
 *         text frames: one v5 message each (so "3" then three pieces is a
 *         split message). Bit 1 fragments each message (with a ping between
 *         fragments), bit 2 sends the frames in writes of a few bytes, bit 3
 *         ends with a close frame.
 *
 * With bit 6 of the first byte set, the connection goes to the namespace
 * "secure" instead of "fuzz": the attacker's rules (fuzz_server.h), with a
 * random canary where no anonymous caller may read. Nothing the server
 * sends on it may carry the canary: no answer, push or error may hold data
 * the caller may not read, whatever the input.
 *
 * A masked ping follows the input. In raw mode the client then half-closes
 * and the server must close too; in text mode the pong must come (it may
 * overtake answers that wait for their commit, so a second ping's pong
 * marks the end of the answers). Everything the server sends must be well
 * formed: the 101, a hello first that names the requested host, unmasked
 * final frames, text frames in UTF-8 (RFC 6455 8.1), each v5 message
 * (joined from its pieces) a JSON object, a close with a code an endpoint
 * may send (or none) and nothing after it: every input ends in messages
 * or a clean close. After each input a fresh connection must get a hello, and
 * a write (which empties the namespace, so that every input starts alike)
 * and a read on it must be answered. */
#include "hearth.h"

#include "fuzz_server.h"

#include <jansson.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 5000 /* for what a healthy server always sends */
#define MAX_REPLY (64u * 1024 * 1024)

static int port;
/* The namespace of the connections an input makes ("secure": rules). */
static const char *session_ns = "fuzz";

static void start_once(void) {
    port = fuzz_server_port("ws");
}

static void fail(const char *why) {
    fprintf(stderr, "fuzz_ws: %s\n", why);
    abort();
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the socket ---- */

static int connect_server(void) { return fuzz_connect(port); }

/* False when the server already closed. */
static bool send_all(int fd, const void *data, size_t size) {
    for (size_t off = 0; off < size;) {
        ssize_t n = send(fd, (const char *)data + off, size - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        off += (size_t)n;
    }
    return true;
}

/* What the server sent, parsed frame by frame. */
typedef struct {
    int fd;
    uint8_t *data;
    size_t len, cap, off; /* off: the first byte not yet parsed */
    bool eof;
    /* the v5 layer: a message in pieces */
    long pieces_left;
    char *joined;
    size_t joined_len;
    char pong; /* the last pong of ours: 'z' for "fz", 'y' for "fy" */
    bool closed; /* the server sent its close: nothing may follow */
    uint64_t answered, refused; /* requests 1 to 63, by bit */
    json_t *first; /* the first v5 message (kept until taken) */
} conn_t;

/* Reads what is there, waiting at most timeout_ms. False on timeout. */
static bool read_some(conn_t *c, int timeout_ms) {
    if (c->eof)
        return true;
    if (c->cap - c->len < 65536) {
        if (c->cap > MAX_REPLY)
            fail("the server sent more than 64 MB");
        c->cap = c->cap ? c->cap * 2 : 131072;
        c->data = realloc(c->data, c->cap);
        if (!c->data)
            fail("out of memory");
    }
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        struct pollfd p = {c->fd, POLLIN, 0};
        long long left = deadline - now_ms();
        int ready = poll(&p, 1, left > 0 ? (int)left : 0);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            return false;
        ssize_t n = read(c->fd, c->data + c->len, c->cap - c->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) /* EOF, or reset by a server that closed first */
            c->eof = true;
        else
            c->len += (size_t)n;
        return true;
    }
}

static bool valid_utf8(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint8_t b = s[i];
        size_t k;
        uint32_t cp;
        if (b < 0x80) {
            i++;
            continue;
        } else if (b >= 0xC2 && b <= 0xDF) {
            k = 1;
            cp = b & 0x1F;
        } else if (b >= 0xE0 && b <= 0xEF) {
            k = 2;
            cp = b & 0x0F;
        } else if (b >= 0xF0 && b <= 0xF4) {
            k = 3;
            cp = b & 0x07;
        } else {
            return false;
        }
        if (i + k >= n)
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        if ((k == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return false;
        i += k + 1;
    }
    return true;
}

static void check_no_leak(const void *text, size_t len) {
    if (strcmp(session_ns, "secure") == 0 && fuzz_leaks(text, len)) {
        fprintf(stderr, "fuzz_ws: the server sent %.*s\n",
                len > 400 ? 400 : (int)len, (const char *)text);
        fail("an anonymous caller got data the rules do not let it read");
    }
}

/* One whole v5 message from the server. */
static void on_v5_message(conn_t *c, const char *text, size_t len) {
    check_no_leak(text, len);
    json_error_t e;
    json_t *msg = json_loadb(text, len, 0, &e);
    if (!json_is_object(msg) || !json_is_string(json_object_get(msg, "t"))) {
        fprintf(stderr, "fuzz_ws: the server sent %.*s\n",
                len > 400 ? 400 : (int)len, text);
        fail("a v5 message that is not a JSON object with t");
    }
    json_t *d = json_object_get(msg, "d");
    json_t *r = json_object_get(d, "r");
    if (json_is_integer(r) && json_integer_value(r) > 0 &&
        json_integer_value(r) < 64) {
        uint64_t bit = (uint64_t)1 << json_integer_value(r);
        const char *s = json_string_value(
            json_object_get(json_object_get(d, "b"), "s"));
        c->answered |= bit;
        if (!s || strcmp(s, "ok") != 0)
            c->refused |= bit;
    }
    if (!c->first)
        c->first = json_incref(msg);
    json_decref(msg);
}

/* A text frame: a message, a count of pieces, or a piece. */
static void on_text(conn_t *c, const uint8_t *p, size_t n) {
    check_no_leak(p, n);
    if (!valid_utf8(p, n))
        fail("a text frame that is not UTF-8 (a message split inside a "
             "character?)");
    if (c->pieces_left > 0) {
        c->joined = realloc(c->joined, c->joined_len + n + 1);
        if (!c->joined)
            fail("out of memory");
        memcpy(c->joined + c->joined_len, p, n);
        c->joined_len += n;
        if (--c->pieces_left == 0) {
            on_v5_message(c, c->joined, c->joined_len);
            free(c->joined);
            c->joined = NULL;
            c->joined_len = 0;
        }
        return;
    }
    if (n >= 1 && n <= 6) {
        bool digits = true;
        long count = 0;
        for (size_t i = 0; i < n; i++) {
            digits = digits && p[i] >= '0' && p[i] <= '9';
            count = count * 10 + (p[i] - '0');
        }
        if (digits) {
            if (count < 2)
                fail("the server sent a count of fewer than 2 pieces");
            c->pieces_left = count;
            return;
        }
    }
    on_v5_message(c, (const char *)p, n);
}

/* A close code an endpoint may put in a frame (RFC 6455 7.4). */
static bool close_code_sendable(int code) {
    return (code >= 1000 && code <= 1011 && (code < 1004 || code > 1006)) ||
           (code >= 3000 && code <= 4999);
}

/* Parses the complete frames received so far. */
static void parse_frames(conn_t *c) {
    for (;;) {
        const uint8_t *f = c->data + c->off;
        size_t avail = c->len - c->off;
        if (avail < 2)
            return;
        if (c->closed)
            fail("the server sent a frame after its close");
        if (f[1] & 0x80)
            fail("the server sent a masked frame");
        if ((f[0] & 0x70) || !(f[0] & 0x80))
            fail("the server sent a frame with RSV bits or without FIN");
        uint64_t plen = f[1] & 0x7F;
        size_t head = 2;
        if (plen == 126) {
            if (avail < 4)
                return;
            plen = (uint64_t)f[2] << 8 | f[3];
            head = 4;
        } else if (plen == 127) {
            if (avail < 10)
                return;
            plen = 0;
            for (int i = 0; i < 8; i++)
                plen = plen << 8 | f[2 + i];
            head = 10;
        }
        if (plen > MAX_REPLY)
            fail("the server announced a frame over 64 MB");
        if (avail < head + plen)
            return;
        const uint8_t *p = f + head;
        switch (f[0] & 0x0F) {
        case 1:
            on_text(c, p, (size_t)plen);
            break;
        case 8: /* close: a code, then a UTF-8 reason */
            if (plen == 1 || plen > 125 ||
                (plen >= 2 && !close_code_sendable(p[0] << 8 | p[1])) ||
                (plen > 2 && !valid_utf8(p + 2, (size_t)plen - 2)))
                fail("the server sent a malformed close frame");
            c->closed = true;
            break;
        case 10:
            if (plen == 2 && p[0] == 'f')
                c->pong = (char)p[1];
            break;
        default:
            fail("the server sent an unexpected opcode");
        }
        c->off += head + (size_t)plen;
    }
}

static void conn_free(conn_t *c) {
    if (c->fd >= 0)
        close(c->fd);
    free(c->data);
    free(c->joined);
    json_decref(c->first);
}

/* ---- frames to the server ---- */

typedef struct {
    uint8_t *data;
    size_t len, cap;
} out_t;

static void out_add(out_t *o, const void *p, size_t n) {
    if (o->len + n > o->cap) {
        o->cap = (o->len + n) * 2 + 256;
        o->data = realloc(o->data, o->cap);
        if (!o->data)
            fail("out of memory");
    }
    memcpy(o->data + o->len, p, n);
    o->len += n;
}

static uint32_t mask_seed = 0x2545F491;

/* A masked client frame. */
static void out_frame(out_t *o, bool fin, int opcode, const uint8_t *p,
                      size_t n) {
    uint8_t head[14];
    size_t h = 0;
    head[h++] = (uint8_t)((fin ? 0x80 : 0) | opcode);
    if (n < 126) {
        head[h++] = (uint8_t)(0x80 | n);
    } else if (n < 65536) {
        head[h++] = 0x80 | 126;
        head[h++] = (uint8_t)(n >> 8);
        head[h++] = (uint8_t)n;
    } else {
        head[h++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--)
            head[h++] = (uint8_t)((uint64_t)n >> (8 * i));
    }
    mask_seed = mask_seed * 1103515245u + 12345u;
    uint8_t key[4] = {(uint8_t)(mask_seed >> 24), (uint8_t)(mask_seed >> 16),
                      (uint8_t)(mask_seed >> 8), (uint8_t)mask_seed};
    memcpy(head + h, key, 4);
    h += 4;
    out_add(o, head, h);
    size_t at = o->len;
    out_add(o, p, n);
    for (size_t i = 0; i < n; i++)
        o->data[at + i] ^= key[i & 3];
}

static void out_text(out_t *o, const char *text) {
    out_frame(o, true, 1, (const uint8_t *)text, strlen(text));
}

/* ---- a session ---- */

static const char upgrade[] =
    "GET /.ws?v=5&ns=%s HTTP/1.1\r\n"
    "Host: %s\r\n"
    "Upgrade: websocket\r\n"
    "Connection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Sec-WebSocket-Version: 13\r\n\r\n";

/* Connects, upgrades (with `early` bytes right behind the request), and
 * unless early bytes were sent waits for the hello. */
static void ws_open(conn_t *c, const uint8_t *early, size_t early_len) {
    memset(c, 0, sizeof *c);
    c->fd = connect_server();
    out_t o = {0};
    char host[32], head[sizeof upgrade + 64];
    snprintf(host, sizeof host, "127.0.0.1:%d", port);
    out_add(&o, head,
            (size_t)snprintf(head, sizeof head, upgrade, session_ns, host));
    if (early_len)
        out_add(&o, early, early_len);
    if (!send_all(c->fd, o.data, o.len) && !early_len)
        fail("the server closed during the upgrade");
    free(o.data);
    /* The 101. */
    long long deadline = now_ms() + TIMEOUT_MS;
    char *end = NULL;
    while (!end) {
        if (c->len && (end = memmem(c->data, c->len, "\r\n\r\n", 4)))
            break;
        if (c->eof)
            fail("the server closed instead of answering the upgrade");
        if (!read_some(c, (int)(deadline - now_ms())))
            fail("no answer to the upgrade");
    }
    static const char ok[] = "HTTP/1.1 101 ";
    static const char accept[] = "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";
    if (memcmp(c->data, ok, sizeof ok - 1) != 0 ||
        !memmem(c->data, (size_t)(end - (char *)c->data), accept,
                sizeof accept - 1))
        fail("a bad answer to the upgrade");
    c->off = (size_t)(end + 4 - (char *)c->data);
    if (early_len)
        return; /* the early bytes may be answered (or refused) first */
    while (!c->first) {
        parse_frames(c);
        if (c->first)
            break;
        if (c->eof)
            fail("the server closed before its hello");
        if (!read_some(c, (int)(deadline - now_ms())))
            fail("no hello");
    }
    json_t *d = json_object_get(c->first, "d");
    if (strcmp(json_string_value(json_object_get(c->first, "t")), "c") != 0 ||
        !json_is_string(json_object_get(d, "t")) ||
        strcmp(json_string_value(json_object_get(d, "t")), "h") != 0)
        fail("the first message is not the hello");
    json_t *h = json_object_get(json_object_get(d, "d"), "h");
    if (!json_is_string(h) || strcmp(json_string_value(h), host) != 0)
        fail("the hello does not name the host the client asked for");
}

/* Reads until the pong "f<which>", the end of the connection or the
 * deadline; false on the deadline. */
static bool read_until_pong(conn_t *c, char which, int timeout_ms) {
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        parse_frames(c);
        if (c->pong == which || c->eof)
            return true;
        long long left = deadline - now_ms();
        if (left <= 0 || !read_some(c, (int)left))
            return false;
    }
}

/* Every few bytes a write of its own: frames end up cut at any point
 * between the server's reads. */
static void send_dribbled(int fd, const uint8_t *data, size_t size) {
    for (size_t off = 0; off < size;) {
        size_t n = 1 + (off * 7 + size) % 23;
        if (n > size - off)
            n = size - off;
        if (!send_all(fd, data + off, n))
            break;
        off += n;
    }
}

static void send_raw(const uint8_t *data, size_t size, bool early,
                     bool dribble) {
    static const uint8_t ping[] = {0x89, 0x82, 0, 0, 0, 0, 'f', 'z'};
    conn_t c;
    if (early) {
        ws_open(&c, data, size);
    } else {
        ws_open(&c, NULL, 0);
        if (dribble)
            send_dribbled(c.fd, data, size);
        else
            send_all(c.fd, data, size);
    }
    send_all(c.fd, ping, sizeof ping);
    /* At EOF the server must drop the connection, whatever it was in. */
    shutdown(c.fd, SHUT_WR);
    while (!c.eof) {
        parse_frames(&c);
        if (!read_some(&c, TIMEOUT_MS))
            fail("the server kept a connection open after its EOF");
    }
    parse_frames(&c);
    conn_free(&c);
}

static void send_messages(const uint8_t *data, size_t size, unsigned flags) {
    bool fragment = flags & 2, split_writes = flags & 4, close_at_end = flags & 8;
    out_t o = {0};
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && data[i] != '\n')
            continue;
        const uint8_t *m = data + start;
        size_t n = i - start;
        start = i + 1;
        if (fragment && n >= 3) {
            size_t a = n / 3, b = 2 * n / 3;
            out_frame(&o, false, 1, m, a);
            out_frame(&o, true, 9, (const uint8_t *)"x", 1);
            out_frame(&o, false, 0, m + a, b - a);
            out_frame(&o, true, 0, m + b, n - b);
        } else {
            out_frame(&o, true, 1, m, n);
        }
    }
    out_frame(&o, true, 9, (const uint8_t *)"fz", 2);
    if (close_at_end)
        out_frame(&o, true, 8, (const uint8_t *)"\x03\xe8" "bye", 5);
    conn_t c;
    ws_open(&c, NULL, 0);
    if (split_writes)
        send_dribbled(c.fd, o.data, o.len);
    else
        send_all(c.fd, o.data, o.len);
    free(o.data);
    /* Valid frames: the pong must come, unless the server hung up. A pong
     * overtakes answers that wait for their commit, so a second ping, once
     * all is handled, marks the end of the answers. */
    if (!read_until_pong(&c, 'z', TIMEOUT_MS))
        fail("no pong for a ping behind valid frames");
    if (!close_at_end) {
        out_t o2 = {0};
        out_frame(&o2, true, 9, (const uint8_t *)"fy", 2);
        send_all(c.fd, o2.data, o2.len);
        free(o2.data);
        if (!read_until_pong(&c, 'y', TIMEOUT_MS))
            fail("no pong for a second ping");
    } else {
        while (!c.eof) {
            parse_frames(&c);
            if (!read_some(&c, TIMEOUT_MS))
                fail("no close after a close frame");
        }
        parse_frames(&c);
    }
    conn_free(&c);
}

/* A fresh connection gets a hello, and a write and a read on it get their
 * answers; the write empties the namespace for the next input. */
static void check_health(void) {
    conn_t c;
    ws_open(&c, NULL, 0);
    out_t o = {0};
    out_text(&o, "{\"t\":\"d\",\"d\":{\"r\":1,\"a\":\"p\",\"b\":{\"p\":\"/\",\"d\":null}}}");
    out_text(&o, "{\"t\":\"d\",\"d\":{\"r\":2,\"a\":\"g\",\"b\":{\"p\":\"/health\"}}}");
    if (!send_all(c.fd, o.data, o.len))
        fail("the server closed a healthy connection");
    free(o.data);
    long long deadline = now_ms() + TIMEOUT_MS;
    for (;;) {
        parse_frames(&c);
        if (c.refused & 6)
            fail("a health request was refused");
        if ((c.answered & 6) == 6)
            break;
        if (c.eof)
            fail("the server closed a healthy connection");
        long long left = deadline - now_ms();
        if (left <= 0 || !read_some(&c, (int)left))
            fail("the server stopped answering");
    }
    conn_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    start_once();
    fuzz_input_has_canary = fuzz_has_canary(data, size);
    if (size) {
        bool secure = data[0] & 0x40;
        if (secure)
            fuzz_secure_reset(port);
        session_ns = secure ? "secure" : "fuzz";
        if (data[0] & 1)
            send_raw(data + 1, size - 1, data[0] & 2, data[0] & 4);
        else
            send_messages(data + 1, size - 1, data[0]);
        session_ns = "fuzz";
    }
    check_health();
    return 0;
}
