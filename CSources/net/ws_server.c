/* ws_server.c - the server's side of WebSocket connections (see
 * ws_server.h). */
#include "net/ws_server.h"

#include "net/ws_accept.h"
#include "net/ws_input.h"

#include <string.h>
#include <strings.h>
#include <wslay/wslay.h>

struct hearth__ws {
    const hearth__ws_transport *t;
    void *conn; /* NULL once gone */
    wslay_event_context_ptr ctx;
    const char *in;          /* bytes being handed to wslay */
    size_t in_len;
    hearth__ws_message_cb on_message;
    hearth__ws_close_cb on_close;
    void *user;
    int depth; /* > 0 inside wslay calls: free later */
    bool dead;
    size_t held;    /* bytes of the message being assembled, budgeted */
    bool over;      /* the budget refused a frame: the connection goes */
    /* What wslay writes during one pump (a frame's header and payload come
     * in separate calls), sent in one write: one syscall and one packet
     * per message, not two. Empty and freed between pumps. */
    hearth__buf out;
};

/* Bytes gathered before they are written even within a pump; a piece
 * larger goes out as it is, so that a large message is not copied whole
 * once more. */
#define OUT_FLUSH (64 * 1024)

int hearth__ws_check_request(const char *upgrade, const char *key,
                             const char *version, char accept[29]) {
    if (!upgrade || strcasecmp(upgrade, "websocket") != 0 || !key ||
        !version || strcmp(version, "13") != 0 ||
        hearth__ws_accept_key(key, accept))
        return HEARTH_EINVAL;
    return 0;
}

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len,
                       int flags, void *user) {
    (void)flags;
    hearth__ws *ws = user;
    return hearth__ws_take(ctx, buf, len, &ws->in, &ws->in_len);
}

/* Writes what was gathered; false when the connection is gone. */
static bool flush_out(hearth__ws *ws) {
    bool ok = !ws->out.failed && ws->conn &&
              (ws->out.len == 0 ||
               ws->t->send(ws->conn, ws->out.data, ws->out.len) == 0);
    hearth__buf_free(&ws->out);
    return ok;
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data,
                       size_t len, int flags, void *user) {
    (void)flags;
    hearth__ws *ws = user;
    if (ws->out.len + len > OUT_FLUSH && !flush_out(ws))
        ws->out.failed = true;
    if (len > OUT_FLUSH && !ws->out.failed) /* large: not copied again */
        ws->out.failed = !ws->conn || ws->t->send(ws->conn, (const char *)data, len);
    else if (ws->conn && !ws->out.failed)
        hearth__buf_add(&ws->out, data, len);
    if (!ws->conn || ws->out.failed) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return (ssize_t)len;
}

/* Each data frame's payload counts against the server's budget until its
 * message is complete: unfinished fragments cannot pile up. */
static void ws_frame_start(wslay_event_context_ptr ctx,
                           const struct wslay_event_on_frame_recv_start_arg *arg,
                           void *user) {
    (void)ctx;
    hearth__ws *ws = user;
    if ((arg->opcode & 0x8) || ws->over || !ws->conn)
        return; /* control frames are small, and not assembled */
    if (arg->payload_length > SIZE_MAX - ws->held ||
        !ws->t->hold(ws->conn, (size_t)arg->payload_length))
        ws->over = true;
    else
        ws->held += (size_t)arg->payload_length;
}

static void give_back(hearth__ws *ws) {
    if (ws->conn && ws->held)
        ws->t->unhold(ws->conn, ws->held);
    ws->held = 0;
}

static void ws_message(wslay_event_context_ptr ctx,
                       const struct wslay_event_on_msg_recv_arg *arg,
                       void *user) {
    hearth__ws *ws = user;
    if (!(arg->opcode & 0x8))
        give_back(ws); /* assembled: handed over below, then freed */
    /* wslay echoes a close frame's reason, and checks that it is UTF-8 only
     * when the frame arrives in one piece: a reason that is not fails the
     * connection (RFC 6455 8.1) rather than going back to the client. */
    if (arg->opcode == WSLAY_CONNECTION_CLOSE && arg->msg_length > 2 &&
        !hearth__utf8_valid((const char *)arg->msg + 2, arg->msg_length - 2))
        wslay_event_shutdown_write(ctx);
    if (arg->opcode == WSLAY_TEXT_FRAME && ws->on_message && !ws->dead)
        ws->on_message(ws->user, (const char *)arg->msg, arg->msg_length);
}

/* Pushes queued frames out; closes when the protocol is done. */
static void pump(hearth__ws *ws) {
    if (!ws->conn)
        return;
    ws->depth++;
    bool sent = wslay_event_send(ws->ctx) == 0;
    bool flushed = flush_out(ws);
    if (ws->conn && (!flushed || !sent || (!wslay_event_want_read(ws->ctx) &&
                                           !wslay_event_want_write(ws->ctx))))
        ws->t->end(ws->conn);
    ws->depth--;
}

hearth__ws *hearth__ws_create(const hearth__ws_transport *t, void *conn,
                           hearth__ws_message_cb on_message,
                           hearth__ws_close_cb on_close, void *user) {
    hearth__ws *ws = hearth__calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    struct wslay_event_callbacks callbacks = {ws_recv, ws_send, NULL,
                                              ws_frame_start, NULL, NULL,
                                              ws_message};
    if (wslay_event_context_server_init(&ws->ctx, &callbacks, ws) != 0) {
        hearth__free(ws);
        return NULL;
    }
    wslay_event_config_set_max_recv_msg_length(ws->ctx,
                                               HEARTH__WS_MAX_MESSAGE);
    ws->t = t;
    ws->conn = conn;
    ws->on_message = on_message;
    ws->on_close = on_close;
    ws->user = user;
    return ws;
}

void hearth__ws_discard(hearth__ws *ws) {
    wslay_event_context_free(ws->ctx);
    hearth__free(ws);
}

void hearth__ws_input(void *user, const char *data, size_t len) {
    hearth__ws *ws = user;
    ws->in = data;
    ws->in_len = len;
    ws->depth++;
    int rc = wslay_event_recv(ws->ctx);
    ws->depth--;
    ws->in_len = 0;
    if ((rc != 0 || ws->over) && ws->conn)
        ws->t->end(ws->conn); /* bad frames: this one goes */
    else
        pump(ws);
}

void hearth__ws_idle(void *user) {
    hearth__ws *ws = user;
    struct wslay_event_msg ping = {WSLAY_PING, NULL, 0};
    if (!ws->dead && wslay_event_queue_msg(ws->ctx, &ping) == 0 && !ws->depth)
        pump(ws);
}

void hearth__ws_gone(void *user) {
    hearth__ws *ws = user;
    give_back(ws);
    ws->conn = NULL;
    if (ws->on_close)
        ws->on_close(ws->user);
    hearth__ws_discard(ws);
}

int hearth__ws_send_text(hearth__ws *ws, const char *text, size_t len) {
    if (!ws->conn || ws->dead)
        return HEARTH_ECLOSED;
    struct wslay_event_msg msg = {WSLAY_TEXT_FRAME, (const uint8_t *)text, len};
    if (wslay_event_queue_msg(ws->ctx, &msg) != 0)
        return HEARTH_ECLOSED;
    if (!ws->depth)
        pump(ws);
    return 0;
}

void hearth__ws_close(hearth__ws *ws) {
    if (!ws->conn || ws->dead)
        return;
    ws->dead = true;
    wslay_event_queue_close(ws->ctx, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
    if (!ws->depth)
        pump(ws);
}

void hearth__ws_frame_text(hearth__buf *out, const char *text, size_t len) {
    uint8_t head[10] = {0x81}; /* FIN, text; a server never masks */
    size_t n;
    if (len < 126) {
        head[1] = (uint8_t)len;
        n = 2;
    } else if (len <= 0xFFFF) {
        head[1] = 126;
        head[2] = (uint8_t)(len >> 8);
        head[3] = (uint8_t)len;
        n = 4;
    } else {
        head[1] = 127;
        for (int i = 0; i < 8; i++)
            head[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
        n = 10;
    }
    hearth__buf_add(out, head, n);
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
    /* Inside a pump (depth) wslay may hold frames not yet written. */
    if (!ws->conn || ws->dead || ws->depth ||
        wslay_event_get_queued_msg_count(ws->ctx))
        return NULL;
    return ws->conn;
}
