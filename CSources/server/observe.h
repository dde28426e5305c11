/*
 * observe.h - what the server tells of each operation: the metrics'
 * counters, the access log (--log-format, log.c; to the log function),
 * and the operations stream of anyone profiling (GET /.profile). Every REST request arrives
 * here from the HTTP server's observer, every realtime request from its
 * session; loop thread only.
 */
#ifndef HEARTH_SERVER_OBSERVE_H
#define HEARTH_SERVER_OBSERVE_H

#include "server/server.h"

/* One operation, whatever its door. */
typedef struct hearth__op {
    const char *door;   /* "rest", "sse", "websocket", "realtime" */
    const char *type;   /* GET, PUT...; a realtime action: p, m, q, g... */
    const char *ns;     /* "" when none */
    const char *path;   /* "" when none */
    const char *status; /* "200"..., or a realtime status ("ok") */
    bool write, denied, unindexed;
    uint64_t bytes_in, bytes_out;
    uint64_t duration_ns;
} hearth__op;

/* The HTTP server's observer (http.h), ctx the hearth__server. */
void hearth__observe_http(void *srv, const hearth__http_record *r);
/* A realtime request handled (its answer may come later: a write's). */
void hearth__observe_op(hearth__server *srv, const hearth__op *op);
/* A realtime write answered with status ("ok", "permission_denied"...). */
void hearth__observe_realtime_write(hearth__server *srv, const char *status);
/* Whether a realtime query (its wire form, "q") orders by a child the
 * rules do not index at path: the service then scans, and says so. */
bool hearth__observe_unindexed(const hearth__namespace *ns, const char *path,
                               const json_t *wire_q);
/* A realtime request the rules refused. */
void hearth__observe_realtime_denial(hearth__server *srv);

#endif
