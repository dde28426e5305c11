/*
 * usage.h - what each namespace was used for since the server started:
 * reads, listens and writes by REST, SSE and realtime requests, and bytes
 * in and out of the connections that asked for the namespace. The one
 * count of these: the console's usage panel (GET /.settings/usage) and
 * the per-namespace series of GET /.metrics both show these rows. Rows
 * are kept for the server's life (a namespace closed when idle keeps its
 * counts), at most HEARTH__USAGE_MAX_ROWS; past that, new names count
  * together in one row, "_other". /.metrics shows the first
 * HEARTH__USAGE_METRICS_ROWS rows made and adds the rest to "_other"
 * (a bounded set of series, whatever names clients send).
 */
#ifndef HEARTH_SERVER_USAGE_H
#define HEARTH_SERVER_USAGE_H

#include "server/server.h"

#define HEARTH__USAGE_MAX_ROWS 1024
#define HEARTH__USAGE_METRICS_ROWS 100
#define HEARTH__USAGE_OTHER "_other"

typedef struct hearth__usage_row {
    char *name;
    uint64_t reads, listens, writes;
    hearth__http_meter bytes; /* stays at its address: connections count */
} hearth__usage_row;

typedef struct hearth__usage {
    hearth__usage_row **rows; /* in the order made */
    size_t n, cap;
    hearth__map by_name; /* name -> its row */
    hearth__usage_row *other; /* names past the bound (NULL: none yet) */
} hearth__usage;

/* The row of a namespace's name, made on first use; past the bound, the
 * "_other" row; NULL out of memory (the request then goes uncounted). */
hearth__usage_row *hearth__usage_row_of(hearth__server *srv, const char *name);

typedef enum {
    HEARTH__USAGE_NONE, /* a connection (a WebSocket opened) */
    HEARTH__USAGE_READ,
    HEARTH__USAGE_LISTEN, /* a realtime listen, an SSE stream */
    HEARTH__USAGE_WRITE
} hearth__usage_kind;

/* Counts an HTTP request for ns and the bytes it brought, and lets its
 * connection's later bytes count there. */
void hearth__usage_count_request(hearth__server *srv, hearth__namespace *ns,
                                 hearth__http_conn *conn,
                                 const hearth__http_request *req,
                                 hearth__usage_kind kind);
/* Counts a realtime request (a get: read; a listen; a put or merge:
 * write). */
void hearth__usage_count(hearth__server *srv, hearth__namespace *ns,
                         hearth__usage_kind kind);

/* The per-namespace series of /.metrics: hearth_namespace_requests_total
 * {namespace, kind} and hearth_namespace_bytes_total {namespace,
 * direction}, with their # HELP and # TYPE lines. */
void hearth__usage_write_metrics(const hearth__usage *u, hearth__buf *out);

void hearth__usage_free(hearth__usage *u);

#endif
