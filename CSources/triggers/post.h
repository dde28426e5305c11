/*
 * post.h - a small blocking HTTP/1.1 client for a trigger's deliverer
 * thread: POSTs one body at a time to an http:// endpoint over a kept-alive
 * connection, with a deadline per attempt, and gives up at once when its
 * stop descriptor becomes readable (the server stopping). Only the
 * deliverer's thread uses a poster. Internal to triggers/.
 */
#ifndef HEARTH_TRIGGERS_POST_H
#define HEARTH_TRIGGERS_POST_H

#include "common/internal.h"

typedef struct hearth__endpoint {
    char *host; /* "127.0.0.1", "localhost", "[::1]" without brackets */
    char *port; /* "80" when the URL gives none */
    char *path; /* "/" at least, with any query */
    char *authority; /* the Host header: host[:port] as written */
} hearth__endpoint;

/* Parses an http:// URL. HEARTH_EINVAL (err naming what is wrong) for
 * another scheme, no host, a bad port, spaces or control characters. */
int hearth__endpoint_parse(const char *url, hearth__endpoint *out,
                           hearth_error_t *err);
void hearth__endpoint_free(hearth__endpoint *e);

typedef struct hearth__poster {
    const hearth__endpoint *to;
    int fd;      /* the kept-alive connection, -1: none */
    int stop_fd; /* readable: give up now */
} hearth__poster;

/* POSTs body with the extra header lines `headers` (each ending in
 * "\r\n"). The answer's status (100-599), or HEARTH_EIO (connection
 * refused, reset, malformed answer: why says which), HEARTH_ECANCELED
 * (stop_fd readable) or HEARTH_EDISCONNECTED (no answer within
 * timeout_ms). A stale kept-alive connection is retried once on a new
 * one. */
int hearth__post(hearth__poster *p, const char *headers, const char *body,
                 size_t len, int timeout_ms, char *why, size_t why_size);
void hearth__poster_close(hearth__poster *p);

#endif
