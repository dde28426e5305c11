/* ws.h - WebSocket connections on upgraded HTTP connections (internal). */
#ifndef HEARTH_SERVER_WS_H
#define HEARTH_SERVER_WS_H

#include "server/http.h"

typedef struct hearth__ws hearth__ws;

typedef void (*hearth__ws_message_cb)(void *user, const char *text,
                                      size_t len);
typedef void (*hearth__ws_close_cb)(void *user);

/* Answers the handshake of req (HEARTH_EINVAL when it is not a valid
 * WebSocket request: answer it yourself) and takes the connection over.
 * *out is set before any message can arrive. on_close runs once, when the
 * connection is gone; the hearth__ws is freed right after. */
int hearth__ws_accept(hearth__http_conn *conn, const hearth__http_request *req,
                      hearth__ws_message_cb on_message,
                      hearth__ws_close_cb on_close, void *user,
                      hearth__ws **out);
/* Queues a text message (copied). */
int hearth__ws_send_text(hearth__ws *ws, const char *text, size_t len);
/* Starts a clean close. */
void hearth__ws_close(hearth__ws *ws);

#endif
