/* profile.c - the operations stream of GET /.profile (see profile.h). */
#include "server/profile.h"

#include "tree/json.h"

#include <inttypes.h>
#include <string.h>

static void on_profiler_closed(void *ctx) {
    hearth__profiler *p = ctx;
    hearth__list_remove(&p->link);
    hearth__free(p);
}

void hearth__profile_start(hearth__server *srv, hearth__http_conn *conn) {
    hearth__profiler *p = hearth__calloc(1, sizeof *p);
    if (!p) {
        hearth__http_respond(conn, 503, NULL, NULL, "", 0);
        return;
    }
    p->srv = srv;
    p->conn = conn;
    if (hearth__http_stream_begin(conn, 200, "application/x-ndjson", NULL,
                                  on_profiler_closed, p)) {
        hearth__free(p);
        return;
    }
    hearth__list_push_front(&srv->profilers, &p->link);
}

static void add_string(hearth__buf *b, const char *name, const char *v) {
    hearth__buf_printf(b, "\"%s\":", name);
    hearth__json_write_string(b, v, strlen(v));
    hearth__buf_addc(b, ',');
}

void hearth__profile_emit(hearth__server *srv, const hearth__op *op) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_printf(&b, "{\"ts\":%" PRId64 ",", hearth_now_ms());
    add_string(&b, "door", op->door);
    add_string(&b, "type", op->type);
    add_string(&b, "ns", op->ns);
    add_string(&b, "path", op->path);
    add_string(&b, "status", op->status);
    hearth__buf_printf(&b,
                       "\"write\":%s,\"unindexed\":%s,\"bytes_in\":%" PRIu64
                       ",\"bytes_out\":%" PRIu64 ",\"ms\":%.3f}\n",
                       op->write ? "true" : "false",
                       op->unindexed ? "true" : "false", op->bytes_in,
                       op->bytes_out, (double)op->duration_ns / 1e6);
    if (!b.failed) {
        hearth__shared_buf *shared = hearth__shared_buf_create(b.data, b.len);
        /* a send may close its profiler */
        HEARTH__LIST_EACH_SAFE(n, &srv->profilers)
            if (shared)
                hearth__http_stream_send_shared(
                    HEARTH__LIST_ITEM(n, hearth__profiler, link)->conn, shared);
        hearth__shared_buf_release(shared);
    }
    hearth__buf_free(&b);
}
