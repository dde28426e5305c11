/*
 * ws_server.h - the server's side of a WebSocket connection (RFC 6455),
 * on any byte transport: the handshake's checks and answer value, and its
 * own frame codec (fragments joined, pings answered, closes echoed).
 * Text messages go to the owner; a frame breaking the protocol, a text
 * message that is not UTF-8, or a message over the size limit or the
 * transport's budget is answered with a close (1002, 1007, 1009) and ends
 * that one connection. A session holds no buffer while idle: only a
 * message arriving in pieces is kept, and only until it is whole.
 *
 * The transport (the HTTP server's upgraded connection, in server/ws.c)
 * hands received bytes to hearth__ws_input, says when it has been silent
 * (hearth__ws_idle) and when it is gone (hearth__ws_gone). Loop thread
 * only.
 */
#ifndef HEARTH_NET_WS_SERVER_H
#define HEARTH_NET_WS_SERVER_H

#include "common/internal.h"

typedef struct hearth__ws hearth__ws;

typedef void (*hearth__ws_message_cb)(void *user, const char *text,
                                      size_t len);
typedef void (*hearth__ws_close_cb)(void *user);

/* What the session needs of the connection under it (conn is passed
 * back to each). */
typedef struct hearth__ws_transport {
    /* Sends a frame's header and then its payload (len may be 0) in one
     * write; non-zero when the connection cannot take them. */
    int (*send)(void *conn, const char *head, size_t head_len,
                const char *payload, size_t len);
    /* Counts n bytes of a message being assembled against the server's
     * budget (false: refused), and gives them back. */
    bool (*hold)(void *conn, size_t n);
    void (*unhold)(void *conn, size_t n);
    /* Closes the connection once what it queued is sent. */
    void (*end)(void *conn);
} hearth__ws_transport;

/* Checks an upgrade request's headers (any may be NULL: absent) and
 * makes the Sec-WebSocket-Accept value of its answer. HEARTH_EINVAL when
 * it is not a valid WebSocket request (version 13). */
int hearth__ws_check_request(const char *upgrade, const char *key,
                             const char *version, char accept[29]);

/* A session on conn (t is borrowed for its life): 0 and *out, or
 * HEARTH_ENOMEM. */
int hearth__ws_create(const hearth__ws_transport *t, void *conn,
                      hearth__ws_message_cb on_message,
                      hearth__ws_close_cb on_close, void *user,
                      hearth__ws **out);
/* Frees a session whose connection never carried it (no callback). */
void hearth__ws_discard(hearth__ws *ws);

/* The transport's side: bytes received (lent for the call, and changed:
 * payloads are unmasked where they lie, so that a whole frame goes up
 * without a copy); silence for the idle timeout (a ping, which every
 * client answers by itself); the connection is gone (on_close runs, then
 * the session is freed). */
void hearth__ws_input(void *ws, char *data, size_t len);
void hearth__ws_idle(void *ws);
void hearth__ws_gone(void *ws);

/* The owner's side: sends a text message (one write of the transport,
 * which copies what the socket does not take at once); starts a clean
 * close (1000; messages received after it are dropped, and the connection
 * ends when the client's close comes). */
int hearth__ws_send_text(hearth__ws *ws, const char *text, size_t len);
void hearth__ws_close(hearth__ws *ws);

/* Messages framed once and sent to many sessions as the same bytes (a
 * fan-out): a text message appended to out as the one unmasked frame a
 * server sends; the first frame of such bytes (its payload, and the bytes
 * it takes: 0 when there is no whole frame). */
void hearth__ws_frame_text(hearth__buf *out, const char *text, size_t len);
size_t hearth__ws_frame_next(const char *frames, size_t len,
                             const char **payload, size_t *payload_len);
/* The transport's conn when framed bytes may be written to it as they are
 * (the session is open: it queues nothing of its own, every frame going
 * straight to the transport); NULL once it closes. */
void *hearth__ws_raw_conn(const hearth__ws *ws);

#endif
