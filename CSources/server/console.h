/*
 * console.h - the data console's files (console/ in the source tree),
 * embedded as C arrays by scripts/gen-console-assets.py into
 * console_assets.c, and served at /.console/ with ETags and a strict
 * Content-Security-Policy (no inline script, nothing from elsewhere).
 */
#ifndef HEARTH_SERVER_CONSOLE_H
#define HEARTH_SERVER_CONSOLE_H

#include "server/http.h"

typedef struct hearth__console_asset {
    const char *name; /* "index.html"; NULL ends the table */
    const char *type; /* its Content-Type */
    const unsigned char *data;
    size_t len;
    const char *etag; /* quoted, from the bytes' SHA-1 */
} hearth__console_asset;

/* Generated (console_assets.c): every file of console/, by name. */
extern const hearth__console_asset hearth__console_assets[];

/* Answers a request whose decoded path is /.console or under it; false
 * (nothing sent) for any other path. */
bool hearth__console_serve(hearth__http_conn *conn,
                           const hearth__http_request *req, const char *path);

#endif
