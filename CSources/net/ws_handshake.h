/*
 * ws_handshake.h - the client's side of the WebSocket opening handshake
 * (RFC 6455 4.1): a fresh key, the upgrade request, and the server's
 * answer read with http-parser in response mode (the server reads its
 * requests with the same parser).
 *
 * The answer is accepted only as "101" with "Upgrade: websocket",
 * "Connection: upgrade" and the Sec-WebSocket-Accept the key calls for,
 * and no extension or subprotocol (none is asked for). Its head may
 * arrive in any number of pieces; the bytes after it are the first
 * frames.
 */
#ifndef HEARTH_NET_WS_HANDSHAKE_H
#define HEARTH_NET_WS_HANDSHAKE_H

#include "common/internal.h"

#include <http_parser.h>

/* The most the answer's status line and headers may hold. */
#define HEARTH__WSH_MAX_HEAD (16 * 1024)

typedef struct hearth__ws_handshake {
    char key[32];    /* Sec-WebSocket-Key (24 characters) */
    char accept[29]; /* the Sec-WebSocket-Accept it calls for */
    http_parser parser;
    size_t head_len;       /* bytes of the answer read so far */
    char first_line[101];  /* its start, for a text naming what came */
    size_t first_len;
    char tail[2];          /* the last two bytes read (folded lines) */
    hearth__buf reason, field, value;
    bool in_value, done, folded;
    bool upgrade, connection, accepted, extra;
    char why[160]; /* why the answer was refused */
} hearth__ws_handshake;

/* A new key. HEARTH_EIO when no random bytes can be had. */
int hearth__ws_handshake_init(hearth__ws_handshake *h);
void hearth__ws_handshake_free(hearth__ws_handshake *h);

/* Adds the upgrade request for ws[s]://host:port/resource to out; the
 * port is left out of Host when it is the scheme's default. */
void hearth__ws_handshake_request(const hearth__ws_handshake *h,
                                  hearth__buf *out, const char *host,
                                  int port, bool tls, const char *resource);

/* What hearth__ws_handshake_read made of the bytes (errors are
 * negative: HEARTH_EIO with h->why, HEARTH_ENOMEM). */
enum { HEARTH__WSH_MORE = 0, HEARTH__WSH_OPEN = 1 };

/* Reads the answer's bytes. HEARTH__WSH_OPEN: the upgrade is accepted and
 * *used of these bytes were its head (the rest are frames); MORE: all of
 * them were read and the head goes on. */
int hearth__ws_handshake_read(hearth__ws_handshake *h, const char *data,
                              size_t len, size_t *used);

#endif
