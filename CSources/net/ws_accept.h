/*
 * ws_accept.h - what both sides of a WebSocket share: the
 * Sec-WebSocket-Accept value of an opening handshake (RFC 6455 4.2.2; the
 * server sends it, the client checks it) and the largest message either
 * assembles.
 */
#ifndef HEARTH_NET_WS_ACCEPT_H
#define HEARTH_NET_WS_ACCEPT_H

/* The largest message either side assembles from frames (a longer one
 * closes the connection with 1009): a client's largest write, 16 MB, and
 * its envelope, as the service takes. The server sends v5 pieces, each a
 * frame of 16,384 bytes at most. */
#define HEARTH__WS_MAX_MESSAGE (16u * 1024 * 1024 + 1024)

/* Base64 of SHA-1(key + the RFC's GUID) into out (28 characters and a
 * NUL). HEARTH_EINVAL for a key that is empty or over 64 bytes (a real
 * one is 24), HEARTH_ENOMEM when the digest cannot be made. */
int hearth__ws_accept_key(const char *key, char out[29]);

#endif
