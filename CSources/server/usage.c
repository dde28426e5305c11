/* usage.c - the counters of namespaces' use (see usage.h). */
#include "server/usage.h"

#include <string.h>

hearth__usage_row *hearth__usage_row_of(hearth__server *srv, const char *name) {
    if (!srv->usage && !(srv->usage = hearth__calloc(1, sizeof *srv->usage)))
        return NULL;
    hearth__usage *u = srv->usage;
    for (size_t i = 0; i < u->n; i++)
        if (!strcmp(u->rows[i]->name, name))
            return u->rows[i];
    if (u->n == HEARTH__USAGE_MAX_ROWS)
        return NULL;
    if (u->n == u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 8;
        hearth__usage_row **rows = hearth__realloc(u->rows, cap * sizeof *rows);
        if (!rows)
            return NULL;
        u->rows = rows;
        u->cap = cap;
    }
    hearth__usage_row *row = hearth__calloc(1, sizeof *row);
    if (row && !(row->name = hearth__strndup(name, strlen(name)))) {
        hearth__free(row);
        row = NULL;
    }
    if (row)
        u->rows[u->n++] = row;
    return row;
}

void hearth__usage_count_request(hearth__server *srv, hearth__namespace *ns,
                                 hearth__http_conn *conn,
                                 const hearth__http_request *req,
                                 hearth__usage_kind kind) {
    hearth__usage_row *row = hearth__usage_row_of(srv, ns->name);
    hearth__http_set_meter(conn, row ? &row->bytes : NULL);
    hearth__usage_count(srv, ns, kind);
    if (row)
        row->bytes.in += strlen(req->target) + req->body_len;
}

void hearth__usage_count(hearth__server *srv, hearth__namespace *ns,
                         hearth__usage_kind kind) {
    hearth__usage_row *row = hearth__usage_row_of(srv, ns->name);
    if (row && kind == HEARTH__USAGE_READ)
        row->reads++;
    else if (row && kind == HEARTH__USAGE_WRITE)
        row->writes++;
}

void hearth__usage_free(hearth__usage *u) {
    if (!u)
        return;
    for (size_t i = 0; i < u->n; i++) {
        hearth__free(u->rows[i]->name);
        hearth__free(u->rows[i]);
    }
    hearth__free(u->rows);
    hearth__free(u);
}
