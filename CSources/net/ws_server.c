/* ws_server.c - the server's side of WebSocket connections (see
 * ws_server.h): RFC 6455 frames parsed straight out of the bytes the
 * transport lends, and written with one transport write each.
 *
 * A session used to run wslay, whose two contexts held 8.6 KB of fixed
 * buffers each, idle or not (most of a realtime session's memory). Here a
 * session is its state alone: a frame header that arrived in part is kept
 * inline (at most 14 bytes), and a payload is copied only when its
 * message is not whole in one input (fragments, a frame over several
 * reads), into memory freed as soon as the message is handed up. */
#include "net/ws_server.h"

#include "net/ws_accept.h"

#include <string.h>
#include <strings.h>

enum {
    OP_CONTINUATION = 0x0,
    OP_TEXT = 0x1,
    OP_BINARY = 0x2,
    OP_CLOSE = 0x8,
    OP_PING = 0x9,
    OP_PONG = 0xA,
};

/* Close codes sent (RFC 6455 7.4.1). */
enum {
    CLOSE_NORMAL = 1000,
    CLOSE_PROTOCOL = 1002,
    CLOSE_NOT_UTF8 = 1007,
    CLOSE_TOO_BIG = 1009,
};

#define MAX_HEAD 14    /* 2, a 64-bit length, the mask key */
#define MAX_CONTROL 125

struct hearth__ws {
    const hearth__ws_transport *t;
    void *conn; /* NULL once gone */
    hearth__ws_message_cb on_message;
    hearth__ws_close_cb on_close;
    void *user;
    size_t held; /* bytes of the message being assembled, budgeted */
    /* The frame being read, once its header is whole: its payload's
     * length and what of it is still to come. */
    uint64_t frame_len, left;
    /* The data message being read: its bytes so far, counting the current
     * frame whole (a binary message is counted but not kept: nothing uses
     * it), and, while it is not whole in one input, its text. */
    size_t msg_len;
    char *msg;
    char *control; /* a control frame's payload over several inputs */
    uint8_t head[MAX_HEAD]; /* a header arriving in pieces */
    uint8_t head_len;
    uint8_t key[4];
    uint8_t opcode;     /* the current frame's */
    uint8_t msg_opcode; /* the data message's (text or binary), or 0 */
    bool fin;
    bool dead;   /* our close was sent: nothing more is sent or handed up */
    bool ending; /* the connection is ending: input is ignored */
    bool freed_later; /* gone inside hearth__ws_input: freed when it returns */
    int depth;        /* > 0 inside hearth__ws_input */
};

int hearth__ws_check_request(const char *upgrade, const char *key,
                             const char *version, char accept[29]) {
    if (!upgrade || strcasecmp(upgrade, "websocket") != 0 || !key ||
        !version || strcmp(version, "13") != 0 ||
        hearth__ws_accept_key(key, accept))
        return HEARTH_EINVAL;
    return 0;
}

/* ---- writing ---- */

/* A server's frame header (final, never masked) into out; its size. */
static size_t frame_head(uint8_t out[10], int opcode, size_t len) {
    out[0] = (uint8_t)(0x80 | opcode);
    if (len < 126) {
        out[1] = (uint8_t)len;
        return 2;
    }
    if (len <= 0xFFFF) {
        out[1] = 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        return 4;
    }
    out[1] = 127;
    for (int i = 0; i < 8; i++)
        out[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
    return 10;
}

/* Ends the connection once what it queued is sent; input is ignored from
 * now on. */
static void end_connection(hearth__ws *ws) {
    ws->ending = true;
    if (ws->conn)
        ws->t->end(ws->conn);
}

/* One frame in one write of the transport (header and payload together:
 * one syscall and one packet, which is what a fan-out to thousands of
 * sessions costs most). A connection that cannot take it ends. */
static int send_frame(hearth__ws *ws, int opcode, const char *payload,
                      size_t len) {
    uint8_t head[10];
    size_t n = frame_head(head, opcode, len);
    if (!ws->conn ||
        ws->t->send(ws->conn, (const char *)head, n, payload, len)) {
        end_connection(ws);
        return HEARTH_ECLOSED;
    }
    return 0;
}

/* Our close, with a code and the reason that came with the client's (an
 * echo), or none at all (payload_len 0); nothing is sent after it. */
static void send_close(hearth__ws *ws, const char *payload, size_t len) {
    if (ws->dead)
        return;
    ws->dead = true;
    send_frame(ws, OP_CLOSE, payload, len);
}

static void send_close_code(hearth__ws *ws, int code) {
    char payload[2] = {(char)(code >> 8), (char)code};
    send_close(ws, payload, sizeof payload);
}

/* The client broke the protocol: our close says why, and the connection
 * ends once it is written. */
static void fail(hearth__ws *ws, int code) {
    send_close_code(ws, code);
    end_connection(ws);
}

/* ---- the budget of what is assembled ---- */

/* Each data frame's payload counts against the server's budget from its
 * header until its message is complete: unfinished fragments cannot pile
 * up. */
static bool hold(hearth__ws *ws, uint64_t n) {
    if (!ws->conn || n > SIZE_MAX - ws->held ||
        !ws->t->hold(ws->conn, (size_t)n))
        return false;
    ws->held += (size_t)n;
    return true;
}

static void give_back(hearth__ws *ws) {
    if (ws->conn && ws->held)
        ws->t->unhold(ws->conn, ws->held);
    ws->held = 0;
}

static void drop_message(hearth__ws *ws) {
    give_back(ws);
    hearth__free(ws->msg);
    ws->msg = NULL;
    ws->msg_len = 0;
    ws->msg_opcode = 0;
}

/* ---- reading ---- */

/* XORs n bytes of payload from src into dst (the same place is fine) with
 * the frame's key, the first of them at offset `at` of the payload. Eight
 * bytes at a time: a 16 MB message is unmasked at memory speed. */
static void unmask(char *dst, const char *src, size_t n, const uint8_t key[4],
                   uint64_t at) {
    size_t i = 0;
    for (; i < n && (at + i) % 4; i++)
        dst[i] = (char)(src[i] ^ key[(at + i) % 4]);
    uint8_t k8[8] = {key[0], key[1], key[2], key[3],
                     key[0], key[1], key[2], key[3]};
    uint64_t k;
    memcpy(&k, k8, 8);
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, src + i, 8);
        w ^= k;
        memcpy(dst + i, &w, 8);
    }
    for (; i < n; i++)
        dst[i] = (char)(src[i] ^ key[(at + i) % 4]);
}

/* The header's size, as far as its first bytes tell (a client's is
 * always masked: a frame that is not fails at its second byte). */
static size_t head_size(const uint8_t *h, size_t have) {
    if (have < 2)
        return 2;
    size_t n = h[1] & 0x7F;
    return 2 + (n == 126 ? 2 : n == 127 ? 8 : 0) + 4;
}

/* What the first two bytes of a header break, as a close code (0: none).
 * wslay refused the same: reserved bits (no extension is agreed), an
 * unknown opcode, an unmasked client frame, a control frame that is
 * fragmented or over 125 bytes, and a continuation with nothing to
 * continue or a new data frame inside a fragmented message. */
static int check_start(const hearth__ws *ws) {
    uint8_t b0 = ws->head[0], b1 = ws->head[1];
    int opcode = b0 & 0x0F;
    bool control = opcode & 0x8;
    if ((b0 & 0x70) || !(b1 & 0x80))
        return CLOSE_PROTOCOL;
    if (control)
        return opcode <= OP_PONG && (b0 & 0x80) && (b1 & 0x7F) <= MAX_CONTROL
                   ? 0
                   : CLOSE_PROTOCOL;
    bool continues = ws->msg_opcode != 0; /* a message is unfinished */
    if (opcode > OP_BINARY || (opcode == OP_CONTINUATION) != continues)
        return CLOSE_PROTOCOL;
    return 0;
}

static uint64_t head_length(const uint8_t *h) {
    uint64_t n = h[1] & 0x7F;
    if (n < 126)
        return n;
    size_t bytes = n == 126 ? 2 : 8;
    n = 0;
    for (size_t i = 0; i < bytes; i++)
        n = n << 8 | h[2 + i];
    return n;
}

static void end_frame(hearth__ws *ws, char *payload);

/* A whole header: the frame it starts, checked against what may come. */
static void begin_frame(hearth__ws *ws) {
    size_t size = head_size(ws->head, ws->head_len);
    uint64_t len = head_length(ws->head);
    ws->head_len = 0;
    if (len >> 63) { /* a 64-bit length's top bit must be 0 */
        fail(ws, CLOSE_PROTOCOL);
        return;
    }
    ws->opcode = ws->head[0] & 0x0F;
    ws->fin = ws->head[0] & 0x80;
    memcpy(ws->key, ws->head + size - 4, 4);
    ws->frame_len = ws->left = len;
    if (!(ws->opcode & 0x8)) {
        if (len > HEARTH__WS_MAX_MESSAGE - ws->msg_len) {
            fail(ws, CLOSE_TOO_BIG);
            return;
        }
        if (!hold(ws, len)) { /* the server's memory for clients is spent */
            fail(ws, CLOSE_TOO_BIG);
            return;
        }
        ws->msg_len += (size_t)len;
        if (ws->opcode != OP_CONTINUATION)
            ws->msg_opcode = ws->opcode;
    }
    if (len == 0)
        end_frame(ws, NULL);
}

/* Takes header bytes (into the inline buffer: at most 14); the bytes
 * used. */
static size_t read_head(hearth__ws *ws, const char *data, size_t len) {
    size_t used = 0;
    size_t want;
    while ((want = head_size(ws->head, ws->head_len)) > ws->head_len &&
           used < len) {
        size_t n = want - ws->head_len;
        if (n > len - used)
            n = len - used;
        bool had_start = ws->head_len >= 2;
        memcpy(ws->head + ws->head_len, data + used, n);
        ws->head_len = (uint8_t)(ws->head_len + n);
        used += n;
        int code = !had_start && ws->head_len >= 2 ? check_start(ws) : 0;
        if (code) {
            fail(ws, code);
            return used;
        }
    }
    if (ws->head_len == head_size(ws->head, ws->head_len))
        begin_frame(ws);
    return used;
}

/* The memory a text message of len bytes so far is kept in: the next
 * power of two (at most the bound), so that a message in many small
 * fragments grows in a few steps rather than a copy per fragment. A
 * function of the length, so a session stores no capacity of its own;
 * past malloc's mmap threshold the untouched rest costs no RSS. */
static size_t room(size_t len) {
    if (len == 0)
        return 0;
    size_t r = 1;
    while (r < len && r < HEARTH__WS_MAX_MESSAGE)
        r <<= 1;
    return r < HEARTH__WS_MAX_MESSAGE ? r : HEARTH__WS_MAX_MESSAGE;
}

/* Where the current frame's payload is kept while it comes in pieces:
 * made room for at its first piece (a control frame's on its own, since
 * one may come between a data message's fragments). NULL: out of memory,
 * or a binary message (dropped as it comes). */
static char *keep_at(hearth__ws *ws) {
    uint64_t done = ws->frame_len - ws->left;
    if (ws->opcode & 0x8) {
        if (!ws->control)
            ws->control = hearth__malloc(MAX_CONTROL);
        return ws->control ? ws->control + done : NULL;
    }
    if (ws->msg_opcode != OP_TEXT)
        return NULL;
    size_t start = ws->msg_len - (size_t)ws->frame_len; /* the frame's */
    if (done == 0 && room(ws->msg_len) > room(start)) {
        char *grown = hearth__realloc(ws->msg, room(ws->msg_len));
        if (!grown)
            return NULL;
        ws->msg = grown;
    }
    return ws->msg ? ws->msg + start + done : NULL;
}

/* Takes payload bytes; the bytes used. A frame whole in this input
 * whose message is that frame alone goes up from where it lies. */
static size_t read_payload(hearth__ws *ws, char *data, size_t len) {
    size_t n = ws->left < len ? (size_t)ws->left : len;
    bool whole = n == ws->frame_len;
    bool alone = (ws->opcode & 0x8) ||
                 (ws->fin && ws->msg_len == ws->frame_len);
    if (whole && alone) {
        unmask(data, data, n, ws->key, 0);
        ws->left = 0;
        end_frame(ws, data);
        return n;
    }
    bool binary = !(ws->opcode & 0x8) && ws->msg_opcode == OP_BINARY;
    char *at = keep_at(ws);
    if (!at && !binary) {
        end_connection(ws); /* out of memory: this connection alone goes */
        return n;
    }
    if (at)
        unmask(at, data, n, ws->key, ws->frame_len - ws->left);
    ws->left -= n;
    if (ws->left == 0)
        end_frame(ws, NULL);
    return n;
}

static bool valid_close_code(int code) {
    /* RFC 6455 7.4: 1004-1006 and 1015 are never sent in a frame; 1012 on
     * and below 3000 are not assigned to anyone yet. */
    return (code >= 1000 && code <= 1011 && (code < 1004 || code > 1006)) ||
           (code >= 3000 && code <= 4999);
}

/* The client's close: echoed (code and reason) unless ours went first,
 * then the connection ends once that is written. */
static void on_close_frame(hearth__ws *ws, const char *p, size_t len) {
    if (len == 1 ||
        (len >= 2 && !valid_close_code((uint8_t)p[0] << 8 | (uint8_t)p[1]))) {
        fail(ws, CLOSE_PROTOCOL);
        return;
    }
    if (len > 2 && !hearth__utf8_valid(p + 2, len - 2)) {
        fail(ws, CLOSE_NOT_UTF8);
        return;
    }
    send_close(ws, p, len);
    end_connection(ws);
}

static void on_control(hearth__ws *ws, const char *p, size_t len) {
    if (ws->opcode == OP_CLOSE)
        on_close_frame(ws, p, len);
    else if (ws->opcode == OP_PING && !ws->dead)
        send_frame(ws, OP_PONG, p, len); /* the same payload back */
    /* a pong: the client is there, which its bytes already said */
}

/* A whole message: checked, handed up (text only), then dropped. */
static void message_done(hearth__ws *ws, const char *text) {
    give_back(ws); /* assembled: handed over below, then freed */
    if (ws->msg_opcode == OP_TEXT && !hearth__utf8_valid(text, ws->msg_len)) {
        fail(ws, CLOSE_NOT_UTF8);
    } else if (ws->msg_opcode == OP_TEXT && ws->on_message && !ws->dead) {
        ws->on_message(ws->user, text ? text : "", ws->msg_len);
    }
    drop_message(ws);
}

/* A frame's payload is all in: payload is where it lies (NULL: kept in
 * ws->control or ws->msg, or empty). */
static void end_frame(hearth__ws *ws, char *payload) {
    if (ws->opcode & 0x8) {
        on_control(ws, payload ? payload : ws->control, (size_t)ws->frame_len);
        hearth__free(ws->control);
        ws->control = NULL;
    } else if (ws->fin) {
        message_done(ws, payload ? payload : ws->msg);
    }
}

/* ---- the session ---- */

int hearth__ws_create(const hearth__ws_transport *t, void *conn,
                      hearth__ws_message_cb on_message,
                      hearth__ws_close_cb on_close, void *user,
                      hearth__ws **out) {
    hearth__ws *ws = hearth__calloc(1, sizeof *ws);
    if (!ws)
        return HEARTH_ENOMEM;
    ws->t = t;
    ws->conn = conn;
    ws->on_message = on_message;
    ws->on_close = on_close;
    ws->user = user;
    *out = ws;
    return 0;
}

void hearth__ws_discard(hearth__ws *ws) {
    hearth__free(ws->msg);
    hearth__free(ws->control);
    hearth__free(ws);
}

void hearth__ws_input(void *user, char *data, size_t len) {
    hearth__ws *ws = user;
    ws->depth++; /* on_message may send, close, or see the connection go */
    size_t at = 0;
    while (at < len && !ws->ending && ws->conn)
        at += ws->left ? read_payload(ws, data + at, len - at)
                       : read_head(ws, data + at, len - at);
    if (--ws->depth == 0 && ws->freed_later)
        hearth__ws_discard(ws);
}

void hearth__ws_idle(void *user) {
    hearth__ws *ws = user;
    if (!ws->dead && !ws->ending)
        send_frame(ws, OP_PING, NULL, 0);
}

void hearth__ws_gone(void *user) {
    hearth__ws *ws = user;
    give_back(ws);
    ws->conn = NULL;
    if (ws->on_close)
        ws->on_close(ws->user);
    if (ws->depth)
        ws->freed_later = true; /* hearth__ws_input is still reading it */
    else
        hearth__ws_discard(ws);
}

int hearth__ws_send_text(hearth__ws *ws, const char *text, size_t len) {
    if (!ws->conn || ws->dead)
        return HEARTH_ECLOSED;
    return send_frame(ws, OP_TEXT, text, len);
}

void hearth__ws_close(hearth__ws *ws) {
    if (ws->conn)
        send_close_code(ws, CLOSE_NORMAL);
}

/* ---- frames shared by many sessions ---- */

void hearth__ws_frame_text(hearth__buf *out, const char *text, size_t len) {
    uint8_t head[10];
    hearth__buf_add(out, head, frame_head(head, OP_TEXT, len));
    hearth__buf_add(out, text, len);
}

size_t hearth__ws_frame_next(const char *frames, size_t len,
                             const char **payload, size_t *payload_len) {
    const uint8_t *b = (const uint8_t *)frames;
    if (len < 2)
        return 0;
    size_t head = 2;
    uint64_t n = b[1] & 0x7F;
    if (n == 126 || n == 127) {
        head = n == 126 ? 4 : 10;
        if (len < head)
            return 0;
        n = 0;
        for (size_t i = 2; i < head; i++)
            n = n << 8 | b[i];
    }
    if (n > len - head)
        return 0;
    *payload = frames + head;
    *payload_len = (size_t)n;
    return head + (size_t)n;
}

void *hearth__ws_raw_conn(const hearth__ws *ws) {
    /* Every frame of the session goes straight to the transport, so
     * frames written there now keep their order. */
    return ws->dead || ws->ending ? NULL : ws->conn;
}
