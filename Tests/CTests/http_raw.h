/*
 * http_raw.h - the C tests' own client for bytes and HTTP/1.1 over a real
 * loopback socket: sending all of a buffer, reading with time limits (so a
 * server that never answers fails the test instead of hanging it), and
 * one request answered in full. Written by hand so that a test can send
 * what no client library would (bad HTTP, slow heads, pipelines).
 */
#ifndef HEARTH_HTTP_RAW_H
#define HEARTH_HTTP_RAW_H

#include "test.h"

/* Sends all of data; stops quietly when the peer hangs up (what it sent
 * before tells the test the rest). Never raises SIGPIPE. */
void send_all(int fd, const void *data, size_t len);

/* Whether the peer ends the connection, sending nothing more, within
 * ms. */
bool closed_within(int fd, int ms);

/* Reads exactly n bytes; false when the connection ends or 5 s pass
 * without a byte. */
bool read_exact(int fd, void *buf, size_t n);

/* Reads from fd into buf, which holds `got` bytes already, until `want`
 * shows in it, the connection ends, buf is full, or ms pass without a
 * byte; buf is NUL-terminated. Returns the bytes in buf; *closed tells
 * whether the connection ended. */
size_t read_until(int fd, char *buf, size_t size, size_t got,
                  const char *want, int ms, bool *closed);

/* Reads until `count` whole responses (by Content-Length) have come, the
 * connection ends, or 5 s pass without a byte: all that came, NUL-
 * terminated (free() it). */
char *read_responses(int fd, int count);

/* One response: its status (0 when none came), head and body. */
typedef struct response {
    int status;
    char head[2048];
    char *body; /* never NULL; free() it */
} response;

/* Sends one request on a connection of its own (Connection: close) with
 * Host: 127.0.0.1 unless headers (each line ending in CRLF) name one, and
 * a Content-Length; reads its response. */
response request(int port, const char *method, const char *target,
                 const char *headers, const char *body);

/* CHECKs a request's status and, when expected is not NULL, its body. */
#define EXPECT_REQ(port_, method_, target_, headers_, body_, status_,          \
                   expected)                                                   \
    do {                                                                       \
        response r_ = request(port_, method_, target_, headers_, body_);       \
        CHECK_INT(r_.status, status_);                                         \
        if (expected)                                                          \
            CHECK_STR(r_.body, (const char *)(expected));                      \
        free(r_.body);                                                         \
    } while (0)

#endif
