/* rest_usage.c - GET /.settings/usage (admin): each namespace's counters
 * (usage.h) and its open connections (sessions and streams) now. */
#include "server/rest_internal.h"
#include "server/usage.h"

#include <stdlib.h>
#include <string.h>

/* Sessions and streams open on the namespace called name (0: closed). */
static int connections(const hearth__server *srv, const char *name) {
    const hearth__namespace *ns = hearth__server_namespace_find(srv, name);
    return ns ? ns->users : 0;
}

static json_t *row_json(const hearth__server *srv, const hearth__usage_row *row) {
    return json_pack("{s:i,s:I,s:I,s:I,s:I,s:I}", "connections",
                     connections(srv, row->name), "reads",
                     (json_int_t)row->reads, "listens", (json_int_t)row->listens,
                     "writes", (json_int_t)row->writes, "bytes_in",
                     (json_int_t)row->bytes.in, "bytes_out",
                     (json_int_t)row->bytes.out);
}

/* {"NAME": {"connections", "reads", "listens", "writes", "bytes_in",
 * "bytes_out"}}; names past the table's bound together as "_other". */
static json_t *usage_json(const hearth__server *srv) {
    json_t *out = json_object();
    const hearth__usage *u = srv->usage;
    for (size_t i = 0; out && u && i < u->n; i++)
        json_object_set_new(out, u->rows[i]->name, row_json(srv, u->rows[i]));
    if (out && u && u->other)
        json_object_set_new(out, u->other->name, row_json(srv, u->other));
    return out;
}

void hearth__rest_usage(rest *r) {
    if (!hearth__rest_admin_asks(r, HTTP_GET, "usage"))
        return;
    hearth__rest_reply_json(r->conn, 200, usage_json(r->srv));
}
