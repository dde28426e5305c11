/* ws.c - WebSocket connections (RFC 6455) on an upgraded HTTP connection:
 * the handshake, and frames through wslay (which joins fragments, answers
 * pings and closes). Text messages go to the owner; a malformed frame or a
 * message over the size limit closes that one connection. */
#include "server/ws.h"

#include "net/ws_accept.h"
#include "net/ws_input.h"

#include <string.h>
#include <wslay/wslay.h>

#define MAX_MESSAGE (16u * 1024 * 1024 + 1024)

struct hearth__ws {
    hearth__http_conn *conn; /* NULL once closed */
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
};

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len,
                       int flags, void *user) {
    (void)flags;
    hearth__ws *ws = user;
    return hearth__ws_take(ctx, buf, len, &ws->in, &ws->in_len);
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data,
                       size_t len, int flags, void *user) {
    (void)flags;
    hearth__ws *ws = user;
    if (!ws->conn ||
        hearth__http_raw_send(ws->conn, (const char *)data, len) != 0) {
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
        !hearth__http_hold(ws->conn, (size_t)arg->payload_length))
        ws->over = true;
    else
        ws->held += (size_t)arg->payload_length;
}

static void give_back(hearth__ws *ws) {
    if (ws->conn)
        hearth__http_unhold(ws->conn, ws->held);
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
    if (wslay_event_send(ws->ctx) != 0 ||
        (!wslay_event_want_read(ws->ctx) && !wslay_event_want_write(ws->ctx)))
        hearth__http_stream_end(ws->conn);
    ws->depth--;
}

static void on_data(void *user, const char *data, size_t len) {
    hearth__ws *ws = user;
    ws->in = data;
    ws->in_len = len;
    ws->depth++;
    int rc = wslay_event_recv(ws->ctx);
    ws->depth--;
    ws->in_len = 0;
    if ((rc != 0 || ws->over) && ws->conn)
        hearth__http_stream_end(ws->conn); /* bad frames: this one goes */
    else
        pump(ws);
}

/* Silent for the idle timeout: a ping, which every client answers by
 * itself (its pong, or anything else, keeps the connection). */
static void on_idle(void *user) {
    hearth__ws *ws = user;
    struct wslay_event_msg ping = {WSLAY_PING, NULL, 0};
    if (!ws->dead && wslay_event_queue_msg(ws->ctx, &ping) == 0 && !ws->depth)
        pump(ws);
}

static void on_conn_closed(void *user) {
    hearth__ws *ws = user;
    give_back(ws);
    ws->conn = NULL;
    if (ws->on_close)
        ws->on_close(ws->user);
    wslay_event_context_free(ws->ctx);
    hearth__free(ws);
}

int hearth__ws_accept(hearth__http_conn *conn, const hearth__http_request *req,
                      hearth__ws_message_cb on_message,
                      hearth__ws_close_cb on_close, void *user,
                      hearth__ws **out) {
    const char *upgrade = hearth__http_get_header(req, "upgrade");
    const char *key = hearth__http_get_header(req, "sec-websocket-key");
    const char *version = hearth__http_get_header(req, "sec-websocket-version");
    char accept[29];
    if (!upgrade || strcasecmp(upgrade, "websocket") != 0 || !key ||
        !version || strcmp(version, "13") != 0 || hearth__ws_accept_key(key, accept))
        return HEARTH_EINVAL;
    hearth__ws *ws = hearth__calloc(1, sizeof *ws);
    if (!ws)
        return HEARTH_ENOMEM;
    struct wslay_event_callbacks callbacks = {ws_recv, ws_send, NULL,
                                              ws_frame_start, NULL, NULL,
                                              ws_message};
    if (wslay_event_context_server_init(&ws->ctx, &callbacks, ws) != 0) {
        hearth__free(ws);
        return HEARTH_ENOMEM;
    }
    wslay_event_config_set_max_recv_msg_length(ws->ctx, MAX_MESSAGE);
    ws->conn = conn;
    ws->on_message = on_message;
    ws->on_close = on_close;
    ws->user = user;
    *out = ws;
    char headers[96];
    snprintf(headers, sizeof headers, "Sec-WebSocket-Accept: %s\r\n", accept);
    if (hearth__http_upgrade(conn, headers, on_data, on_conn_closed, ws)) {
        /* The client already left; on_conn_closed will not run. */
        wslay_event_context_free(ws->ctx);
        hearth__free(ws);
        *out = NULL;
        return HEARTH_ECLOSED;
    }
    hearth__http_on_idle(conn, on_idle);
    return 0;
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
