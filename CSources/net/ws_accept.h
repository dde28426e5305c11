/*
 * ws_accept.h - the Sec-WebSocket-Accept value of an opening handshake
 * (RFC 6455 4.2.2): the server sends it, the client checks it.
 */
#ifndef HEARTH_NET_WS_ACCEPT_H
#define HEARTH_NET_WS_ACCEPT_H

/* Base64 of SHA-1(key + the RFC's GUID) into out (28 characters and a
 * NUL). HEARTH_EINVAL for a key that is empty or over 64 bytes (a real
 * one is 24), HEARTH_ENOMEM when the digest cannot be made. */
int hearth__ws_accept_key(const char *key, char out[29]);

#endif
