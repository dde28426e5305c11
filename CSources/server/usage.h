/*
 * usage.h - what each namespace was used for since the server started
 * (the console's usage panel, GET /.settings/usage): reads and writes by
 * REST and realtime requests, and bytes in and out of the connections
 * that asked for the namespace. Rows are kept for the server's life (a
 * namespace closed when idle keeps its counts), at most
 * HEARTH__USAGE_MAX_ROWS; past that, new names are not counted.
 */
#ifndef HEARTH_SERVER_USAGE_H
#define HEARTH_SERVER_USAGE_H

#include "server/server.h"

#define HEARTH__USAGE_MAX_ROWS 1024

typedef struct hearth__usage_row {
    char *name;
    uint64_t reads, writes;
    hearth__http_meter bytes; /* stays at its address: connections count */
} hearth__usage_row;

typedef struct hearth__usage {
    hearth__usage_row **rows;
    size_t n, cap;
} hearth__usage;

/* The row of a namespace's name, made on first use; NULL past the bound
 * or out of memory (the request then goes uncounted). */
hearth__usage_row *hearth__usage_row_of(hearth__server *srv, const char *name);

typedef enum {
    HEARTH__USAGE_NONE, /* a connection (a WebSocket opened) */
    HEARTH__USAGE_READ,
    HEARTH__USAGE_WRITE
} hearth__usage_kind;

/* Counts an HTTP request for ns and the bytes it brought, and lets its
 * connection's later bytes count there. */
void hearth__usage_count_request(hearth__server *srv, hearth__namespace *ns,
                                 hearth__http_conn *conn,
                                 const hearth__http_request *req,
                                 hearth__usage_kind kind);
/* Counts a realtime request (a listen or get: read; a put or merge:
 * write). */
void hearth__usage_count(hearth__server *srv, hearth__namespace *ns,
                         hearth__usage_kind kind);

void hearth__usage_free(hearth__usage *u);

#endif
