/* rest_usage.c - GET /.settings/usage (admin): each namespace's counters
 * (usage.h) and its open connections (sessions and streams) now. */
#include "server/rest_internal.h"
#include "server/usage.h"

#include <stdlib.h>
#include <string.h>

/* Sessions and streams open on the namespace called name (0: closed). */
static int connections(const hearth__server *srv, const char *name) {
    for (size_t i = 0; i < srv->nnamespaces; i++)
        if (!strcmp(srv->namespaces[i]->name, name))
            return srv->namespaces[i]->users;
    return 0;
}

/* {"NAME": {"connections", "reads", "writes", "bytes_in", "bytes_out"}}. */
static json_t *usage_json(const hearth__server *srv) {
    json_t *out = json_object();
    const hearth__usage *u = srv->usage;
    for (size_t i = 0; out && u && i < u->n; i++) {
        const hearth__usage_row *row = u->rows[i];
        json_object_set_new(
            out, row->name,
            json_pack("{s:i,s:I,s:I,s:I,s:I}", "connections",
                      connections(srv, row->name), "reads",
                      (json_int_t)row->reads, "writes", (json_int_t)row->writes,
                      "bytes_in", (json_int_t)row->bytes.in, "bytes_out",
                      (json_int_t)row->bytes.out));
    }
    return out;
}

void hearth__rest_usage(rest *r) {
    if (!hearth__rest_admin_asks(r, HTTP_GET, "usage"))
        return;
    hearth__rest_reply_json(r->conn, 200, usage_json(r->srv));
}
