/* ws.c - WebSocket on the HTTP server: answers a request's upgrade and
 * runs a net/ws_server.h session on the upgraded connection, which lends
 * it its writes, its share of the budget and its idle timeout. */
#include "server/ws.h"

#include <stdio.h>

static int conn_send(void *conn, const char *head, size_t head_len,
                     const char *payload, size_t len) {
    return hearth__http_raw_send(conn, head, head_len, payload, len);
}

static bool conn_hold(void *conn, size_t n) {
    return hearth__http_hold(conn, n);
}

static void conn_unhold(void *conn, size_t n) { hearth__http_unhold(conn, n); }

static void conn_end(void *conn) { hearth__http_stream_end(conn); }

static const hearth__ws_transport upgraded = {conn_send, conn_hold,
                                              conn_unhold, conn_end};

int hearth__ws_accept(hearth__http_conn *conn, const hearth__http_request *req,
                      hearth__ws_message_cb on_message,
                      hearth__ws_close_cb on_close, void *user,
                      hearth__ws **out) {
    char accept[29];
    if (hearth__ws_check_request(
            hearth__http_get_header(req, "upgrade"),
            hearth__http_get_header(req, "sec-websocket-key"),
            hearth__http_get_header(req, "sec-websocket-version"), accept))
        return HEARTH_EINVAL;
    hearth__ws *ws;
    int rc = hearth__ws_create(&upgraded, conn, on_message, on_close, user,
                               &ws);
    if (rc)
        return rc;
    *out = ws;
    char headers[96];
    snprintf(headers, sizeof headers, "Sec-WebSocket-Accept: %s\r\n", accept);
    if (hearth__http_upgrade(conn, headers, hearth__ws_input, hearth__ws_gone,
                             ws)) {
        /* The client already left; hearth__ws_gone will not run. */
        hearth__ws_discard(ws);
        *out = NULL;
        return HEARTH_ECLOSED;
    }
    hearth__http_on_idle(conn, hearth__ws_idle);
    return 0;
}

int hearth__ws_send_shared(hearth__ws *ws, hearth__shared_buf *frames) {
    void *conn = hearth__ws_raw_conn(ws);
    if (conn)
        return hearth__http_stream_send_shared(conn, frames);
    const char *payload;
    size_t len, used;
    int rc = 0;
    for (size_t at = 0; !rc && at < frames->len; at += used) {
        used = hearth__ws_frame_next(frames->data + at, frames->len - at,
                                     &payload, &len);
        rc = used ? hearth__ws_send_text(ws, payload, len) : HEARTH_EINVAL;
    }
    return rc;
}
