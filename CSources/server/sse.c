/* sse.c - server-sent event streams: a value observer per stream whose
 * events go out as `put` events, with keep-alives, and removal when either
 * side closes. */
#include "server/server.h"

#include "tree/json.h"

#include <string.h>

struct hearth__stream {
    hearth__server *srv;
    hearth__http_conn *conn; /* NULL once the connection closed */
    hearth_db_t *db;
    hearth_observer_t handle;
    unsigned json_flags;
    hearth__stream *prev, *next;
};

static void send_event(hearth__stream *st, const char *event,
                       const char *data, size_t len) {
    if (!st->conn)
        return;
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_printf(&b, "event: %s\ndata: ", event);
    hearth__buf_add(&b, data, len);
    hearth__buf_add(&b, "\n\n", 2);
    if (!b.failed)
        hearth__http_stream_send(st->conn, b.data, b.len);
    hearth__buf_free(&b);
}

static void on_value(const hearth_event_t *ev, void *ctx) {
    hearth__stream *st = ctx;
    hearth__buf b;
    hearth__buf_init(&b);
    /* The whole value at the stream's location replaces the client's. */
    hearth__buf_adds(&b, "{\"path\":\"/\",\"data\":");
    hearth__node_write_json(&b, ev->node, st->json_flags);
    hearth__buf_addc(&b, '}');
    if (!b.failed)
        send_event(st, "put", b.data, b.len);
    hearth__buf_free(&b);
}

/* The observer is gone: nothing refers to the stream any more. */
static void stream_free(void *ctx) {
    hearth__stream *st = ctx;
    if (st->prev)
        st->prev->next = st->next;
    else
        st->srv->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    hearth__free(st);
}

static void on_conn_closed(void *ctx) {
    hearth__stream *st = ctx;
    st->conn = NULL;
    if (st->handle)
        hearth_db_remove_observer(st->db, st->handle); /* frees st */
    else
        stream_free(st); /* the observer never started */
}

void hearth__sse_start(hearth__server *srv, hearth__http_conn *conn,
                       hearth__namespace *ns, const char *path,
                       const hearth_query_t *query, unsigned json_flags) {
    hearth__stream *st = hearth__calloc(1, sizeof *st);
    if (!st) {
        hearth__http_respond(conn, 503, "application/json; charset=utf-8",
                             NULL, "{\"error\":\"out of memory\"}", 25);
        return;
    }
    st->srv = srv;
    st->conn = conn;
    st->db = ns->db;
    st->json_flags = json_flags;
    st->next = srv->streams;
    if (srv->streams)
        srv->streams->prev = st;
    srv->streams = st;
    hearth__http_stream_begin(conn, 200, "text/event-stream; charset=utf-8",
                              NULL, on_conn_closed, st);
    hearth_error_t err;
    /* On the loop thread the initial value is sent before this returns. */
    if (hearth_db_observe(ns->db, path, query, HEARTH_MASK_VALUE, on_value, st,
                          stream_free, &st->handle, &err)) {
        st->handle = 0;
        hearth__http_stream_end(conn);
    }
}

void hearth__sse_keepalive(hearth__server *srv) {
    for (hearth__stream *st = srv->streams; st; st = st->next)
        send_event(st, "keep-alive", "null", 4);
}

void hearth__sse_close_all(hearth__server *srv) {
    for (hearth__stream *st = srv->streams; st; st = st->next)
        if (st->conn)
            hearth__http_stream_end(st->conn);
}
