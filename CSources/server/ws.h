/* ws.h - WebSocket on the HTTP server's upgraded connections (internal):
 * the framing itself is net/ws_server.h. */
#ifndef HEARTH_SERVER_WS_H
#define HEARTH_SERVER_WS_H

#include "net/ws_server.h"
#include "server/http.h"

/* Answers the handshake of req (HEARTH_EINVAL when it is not a valid
 * WebSocket request: answer it yourself) and takes the connection over.
 * *out is set before any message can arrive. on_close runs once, when the
 * connection is gone; the hearth__ws is freed right after. Send and close
 * with hearth__ws_send_text and hearth__ws_close. */
int hearth__ws_accept(hearth__http_conn *conn, const hearth__http_request *req,
                      hearth__ws_message_cb on_message,
                      hearth__ws_close_cb on_close, void *user,
                      hearth__ws **out);

/* Sends messages framed by hearth__ws_frame_text, shared by many
 * sessions: written as they are when the session has nothing queued
 * before them, else each message through its queue. */
int hearth__ws_send_shared(hearth__ws *ws, hearth__shared_buf *frames);

#endif
