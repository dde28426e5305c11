/*
 * link.h - the client's WebSocket, whichever carries it: the built-in one
 * (net/ws_client.c: libuv, OpenSSL or none, wslay) or the program's
 * transport (hearth_transport_t, hearth.h: on Apple platforms the Swift
 * module's URLSession one). One contract for both, ws_client.h's: the
 * callbacks run on the loop thread, never from inside connect, send or
 * close, on_close exactly once unless the owner closed first, and nothing
 * after hearth__link_close returns. Loop thread only.
 */
#ifndef HEARTH_CLIENT_LINK_H
#define HEARTH_CLIENT_LINK_H

#include "net/ws_client.h"

#include "hearth.h"

typedef struct hearth__link hearth__link;

/* Connects to ws[s]://host:port/resource through t (NULL, or t->open NULL:
 * the built-in transport). 0 and *out, or a negative code (nothing
 * started; HEARTH_EIO when the program's transport refused). */
int hearth__link_connect(uv_loop_t *loop, const hearth_transport_t *t,
                         const char *host, int port, const char *resource,
                         bool tls, const hearth__wsc_callbacks *cb, void *user,
                         hearth__link **out);
/* One text message. 0, or a negative code (the connection then ends). */
int hearth__link_send(hearth__link *l, const char *text, size_t len);
/* Ends the connection; no callback after this returns. */
void hearth__link_close(hearth__link *l);

#endif
