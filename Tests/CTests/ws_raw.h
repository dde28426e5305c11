/*
 * ws_raw.h - the C tests' own blocking WebSocket client over a real
 * loopback socket (frames from ws_wire.h, bytes from http_raw.h): opening
 * /.ws, frames of any shape sent (fragments, lies about lengths, unmasked
 * ones, to test the server's refusals), frames read with a 5 s limit, and
 * the realtime protocol's requests and sessions on top.
 */
#ifndef HEARTH_WS_RAW_H
#define HEARTH_WS_RAW_H

#include "test.h"

/* Opens /.ws?v=5 on namespace ns (NULL: none given) with that Host
 * header, TCP_NODELAY set (so that a test's pieces leave as it sent
 * them); -1 when the server does not upgrade it. The server's accept
 * value is checked. */
int ws_open_host(int port, const char *ns, const char *host);
int ws_open(int port, const char *ns); /* Host: 127.0.0.1 */

/* Appends a client frame to *out (realloc'd; it holds `at` bytes) and
 * returns its new length: first byte b0 (FIN, RSV bits, opcode),
 * `announce` as its length (the payload's own unless a lie is tested),
 * masked unless `unmasked`. */
size_t ws_put_frame(char **out, size_t at, int b0, uint64_t announce,
                    const void *payload, size_t len, bool unmasked);

/* Sends one masked frame in one write (no wait for an ACK between head
 * and payload). */
void ws_send_frame(int fd, int b0, const void *payload, size_t len);

/* Sends one text frame. */
void ws_send(int fd, const char *text);

/* The next frame from the server: its opcode, -1 when the connection ends
 * or 5 s pass; its payload in *payload (free() it). CHECKs that the
 * server neither masks nor fragments. */
int ws_next_frame(int fd, char **payload, size_t *len);

/* The next text frame (others skipped; free() it); NULL when the
 * connection ends, a close comes or 5 s pass. */
char *ws_recv(int fd);

/* The next text frame holding `want` (others skipped; free() it); NULL as
 * for ws_recv. */
char *ws_recv_holding(int fd, const char *want);

/* Sends realtime request r, its body of any length, and returns its reply
 * (pushes before it are skipped; free() it). */
char *ws_request(int fd, int r, const char *action, const char *body);

#define EXPECT_WS(fd_, r_, action_, body_, reply_)                             \
    do {                                                                       \
        char *got_ = ws_request(fd_, r_, action_, body_);                      \
        CHECK_STR(got_, reply_);                                               \
        free(got_);                                                            \
    } while (0)

/* A realtime session on ns past its hello (CHECKed), authenticated as the
 * admin (the emulator's "owner", CHECKed ok) when `admin`. */
int rt_session(int port, const char *ns, bool admin);

#endif
