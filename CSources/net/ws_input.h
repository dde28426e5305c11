/*
 * ws_input.h - what the WebSocket server and client share for wslay: the
 * largest message either assembles, and handing received bytes over.
 *
 * wslay pulls input through a recv callback; both sides push what the
 * socket delivered into a borrowed (pointer, length) window and let the
 * callback drain it, answering "would block" once it is empty.
 */
#ifndef HEARTH_NET_WS_INPUT_H
#define HEARTH_NET_WS_INPUT_H

#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <wslay/wslay.h>

/* The largest message either side assembles from frames (a longer one
 * closes the connection with 1009): a client's largest write, 16 MB, and
 * its envelope, as the service takes. The server sends v5 pieces, each a
 * frame of 16,384 bytes at most. */
#define HEARTH__WS_MAX_MESSAGE (16u * 1024 * 1024 + 1024)

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
