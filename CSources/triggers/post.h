/*
 * post.h - a small blocking HTTP/1.1 client for a trigger's deliverer
 * thread: POSTs one body at a time to an http:// or https:// endpoint over
 * a kept-alive connection (net/dial.h), with a deadline per attempt, and
 * gives up at once when its stop descriptor becomes readable (the server
 * stopping). Only the deliverer's thread uses a poster. Internal to
 * triggers/.
 */
#ifndef HEARTH_TRIGGERS_POST_H
#define HEARTH_TRIGGERS_POST_H

#include "net/dial.h"

typedef struct hearth__poster {
    const hearth__url *to;
    hearth__dial conn; /* kept alive between posts */
} hearth__poster;

/* A poster to `to` (borrowed: it outlives the poster) that stops when
 * stop_fd becomes readable. */
void hearth__poster_init(hearth__poster *p, const hearth__url *to,
                         int stop_fd);

/* POSTs body with the extra header lines `headers` (each ending in
 * "\r\n"). The answer's status (100-599), or HEARTH_EIO (connection
 * refused, reset, the certificate, a malformed answer: why says which),
 * HEARTH_ECANCELED (stop_fd readable) or HEARTH_EDISCONNECTED (no answer
 * within timeout_ms). A stale kept-alive connection is retried once on a
 * new one. */
int hearth__post(hearth__poster *p, const char *headers, const char *body,
                 size_t len, int timeout_ms, char *why, size_t why_size);
void hearth__poster_close(hearth__poster *p);

#endif
