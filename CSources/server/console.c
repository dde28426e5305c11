/* console.c - serves the console's embedded files (see console.h). */
#include "server/console.h"

#include <http_parser.h>
#include <stdio.h>
#include <string.h>

/* The page runs only its own files and talks only to this origin; the
 * admin credential may sit in its URL, so no referrer leaves it. */
#define SECURITY_HEADERS                                                       \
    "Content-Security-Policy: default-src 'none'; script-src 'self'; "         \
    "style-src 'self'; img-src 'self' data:; connect-src 'self'; "             \
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n"          \
    "X-Content-Type-Options: nosniff\r\n"                                      \
    "Referrer-Policy: no-referrer\r\n"

static const hearth__console_asset *find(const char *name) {
    for (const hearth__console_asset *a = hearth__console_assets; a->name; a++)
        if (!strcmp(a->name, name))
            return a;
    return NULL;
}

/* /.console -> /.console/ (keeping ?auth=), so that relative links work. */
static void redirect(hearth__http_conn *conn, const hearth__http_request *req) {
    const char *query = strchr(req->target, '?');
    char headers[2048];
    int n = snprintf(headers, sizeof headers, "Location: /.console/%s\r\n",
                     query ? query : "");
    if (n < 0 || (size_t)n >= sizeof headers)
        snprintf(headers, sizeof headers, "Location: /.console/\r\n");
    hearth__http_respond(conn, 301, NULL, headers, "", 0);
}

static void send_asset(hearth__http_conn *conn, const hearth__http_request *req,
                       const hearth__console_asset *a) {
    char headers[1024];
    /* The files change only with the server: the browser keeps them and
     * asks again each time (If-None-Match). */
    snprintf(headers, sizeof headers,
             "ETag: %s\r\nCache-Control: no-cache\r\n" SECURITY_HEADERS,
             a->etag);
    const char *match = hearth__http_get_header(req, "if-none-match");
    if (match && strstr(match, a->etag))
        hearth__http_respond(conn, 304, NULL, headers, "", 0);
    else
        hearth__http_respond(conn, 200, a->type, headers,
                             (const char *)a->data, a->len);
}

bool hearth__console_serve(hearth__http_conn *conn,
                           const hearth__http_request *req, const char *path) {
    static const char root[] = "/.console";
    if (strncmp(path, root, sizeof root - 1) ||
        (path[sizeof root - 1] && path[sizeof root - 1] != '/'))
        return false;
    const char *name = path + sizeof root - 1;
    const hearth__console_asset *a = NULL;
    if (req->method != HTTP_GET)
        hearth__http_respond(conn, 405, "text/plain; charset=utf-8", NULL,
                             "The console's files are read (GET)\n", 35);
    else if (!*name)
        redirect(conn, req);
    else if ((a = find(strcmp(name, "/") ? name + 1 : "index.html")))
        send_asset(conn, req, a);
    else
        hearth__http_respond(conn, 404, "text/plain; charset=utf-8",
                             SECURITY_HEADERS, "Not found\n", 10);
    return true;
}
