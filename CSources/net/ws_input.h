/*
 * ws_input.h - the WebSocket client's received bytes handed to wslay
 * (the server parses its frames itself, net/ws_server.c).
 *
 * wslay pulls input through a recv callback; the client pushes what the
 * socket delivered into a borrowed (pointer, length) window and lets the
 * callback drain it, answering "would block" once it is empty.
 */
#ifndef HEARTH_NET_WS_INPUT_H
#define HEARTH_NET_WS_INPUT_H

#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <wslay/wslay.h>

#include "net/ws_accept.h" /* HEARTH__WS_MAX_MESSAGE */

static inline ssize_t hearth__ws_take(wslay_event_context_ptr ctx,
                                      uint8_t *buf, size_t len,
                                      const char **in, size_t *in_len) {
    if (*in_len == 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    size_t n = len < *in_len ? len : *in_len;
    memcpy(buf, *in, n);
    *in += n;
    *in_len -= n;
    return (ssize_t)n;
}

#endif
