/*
 * ws_client.h - a WebSocket client transport (RFC 6455) on libuv, internal
 * to the core: the connection layer speaks the realtime protocol through it.
 *
 * It resolves the host, connects over TCP (trying each address in turn),
 * optionally runs TLS (OpenSSL, peer and host name verified against the
 * system's trust store), performs the opening handshake and then carries
 * text messages both ways, with frames through wslay (fragments joined,
 * pings answered, masks from OpenSSL's random generator). Binary messages
 * are ignored: the realtime protocol sends none.
 *
 * Everything runs on the thread that runs the loop; nothing here is
 * thread-safe.
 */
#ifndef HEARTH_NET_WS_CLIENT_H
#define HEARTH_NET_WS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

typedef struct hearth__wsc hearth__wsc;

typedef struct hearth__wsc_callbacks {
    /* The handshake completed: messages may be sent. */
    void (*on_open)(void *user);
    /* One complete text message (fragments joined), borrowed for the call. */
    void (*on_message)(void *user, const char *text, size_t len);
    /* The connection failed or ended (DNS/connect failure, handshake refused,
     * protocol error, peer close, read error). status: 0 for a clean close by
     * the peer (a close frame with code 1000, 1001 or none), else a negative
     * HEARTH_E* code: HEARTH_ETOOBIG for a message over HEARTH__WS_MAX_MESSAGE,
     * HEARTH_EIO for everything else; `why` is a short human text (it names
     * the status line when the server refused the upgrade). Called exactly
     * once per connection unless the owner called hearth__wsc_close first,
     * and never from inside hearth__wsc_connect, _send or _close. After it
     * returns the transport frees itself: the owner must not touch it. */
    void (*on_close)(void *user, int status, const char *why);
} hearth__wsc_callbacks;

/* Starts connecting to ws://host:port/resource (tls=false) or wss:// (tls=true)
 * on loop (the caller's thread runs the loop). host is a name or IP literal
 * (IPv6 without brackets; resolved with uv_getaddrinfo). resource is e.g.
 * "/.ws?v=5&ns=demo". Callbacks that are NULL are skipped. Returns 0 and
 * *out, or a negative code (nothing started): HEARTH_EINVAL for a bad
 * argument, HEARTH_ENOMEM, HEARTH_EIO when TLS or the resolver cannot start.
 */
int hearth__wsc_connect(uv_loop_t *loop, const char *host, int port,
                        const char *resource, bool tls,
                        const hearth__wsc_callbacks *cb, void *user,
                        hearth__wsc **out);
/* Queues one text message (copied). 0, or a negative code when the
 * connection is not open (HEARTH_ECLOSED) or memory runs out. Safe to call
 * from inside on_message/on_open. A write that fails is reported later,
 * through on_close. */
int hearth__wsc_send(hearth__wsc *c, const char *text, size_t len);
/* Closes now (sends a close frame if open, best effort) and frees the
 * transport once libuv has released its handles; no callback runs after
 * this returns. Safe from inside any callback (a no-op inside on_close). */
void hearth__wsc_close(hearth__wsc *c);
/* Bytes queued to the socket and not yet written (for back-pressure). */
size_t hearth__wsc_pending(const hearth__wsc *c);

#endif
