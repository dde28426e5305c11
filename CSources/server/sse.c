/* sse.c - server-sent event streams: a value observer per stream, with
 * keep-alives, and removal when either side closes.
 *
 * The first event puts the whole value. After that each change is sent as
 * the smallest equivalent event: the stream keeps the value it last sent
 * (a shared, immutable snapshot), descends while exactly one child differs,
 * and sends a `put` of that location, or a `patch` of the differing
 * children when several differ. Unchanged subtrees are found by pointer:
 * writes share everything they did not touch. */
#include "server/access.h"
#include "server/server.h"

#include "query/query.h"
#include "server/changes.h"
#include "tree/json.h"

#include <string.h>

struct hearth__stream {
    hearth__server *srv;
    hearth__http_conn *conn; /* NULL once the connection closed */
    hearth_db_t *db;
    hearth_observer_t handle;
    unsigned json_flags;
    bool filtered;        /* a query stream: always whole puts */
    hearth_node_t *last;  /* what the client holds now */
    hearth__namespace *ns;
    char *path;
    hearth__principal who;    /* checked again when the rules change */
    hearth_node_t *query_var;
    hearth__list link; /* in the server's streams, newest first */
};

#define STREAM(n) HEARTH__LIST_ITEM(n, hearth__stream, link)

/* Appends one event ("event: NAME\ndata: DATA\n\n") to out. */
static void add_event(hearth__buf *out, const char *event, const char *data,
                      size_t len) {
    hearth__buf_printf(out, "event: %s\ndata: ", event);
    hearth__buf_add(out, data, len);
    hearth__buf_add(out, "\n\n", 2);
}

static void send_event(hearth__stream *st, const char *event,
                       const char *data, size_t len) {
    if (!st->conn)
        return;
    hearth__buf b;
    hearth__buf_init(&b);
    add_event(&b, event, data, len);
    if (!b.failed)
        hearth__http_stream_send(st->conn, b.data, b.len);
    hearth__buf_free(&b);
}

static void put_event(hearth__buf *out, unsigned flags, const char *path,
                      const hearth_node_t *data) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_adds(&b, "{\"path\":");
    hearth__json_write_string(&b, path, strlen(path));
    hearth__buf_adds(&b, ",\"data\":");
    hearth__node_write_json(&b, data, flags);
    hearth__buf_addc(&b, '}');
    if (b.failed)
        out->failed = true;
    else
        add_event(out, "put", b.data, b.len);
    hearth__buf_free(&b);
}

/* Appends the events that turn old into now (nothing if nothing changed). */
static void change_events(hearth__buf *out, unsigned flags,
                          const hearth_node_t *old, const hearth_node_t *now) {
    hearth__buf path;
    hearth__buf_init(&path);
    hearth__change c;
    if (!hearth__smallest_change(old, now, flags, &path, &c)) {
        hearth__buf_free(&path);
        return;
    }
    if (!c.nkeys) {
        put_event(out, flags, c.path, c.node);
    } else {
        hearth__buf b;
        hearth__buf_init(&b);
        hearth__buf_adds(&b, "{\"path\":");
        hearth__json_write_string(&b, c.path, strlen(c.path));
        hearth__buf_adds(&b, ",\"data\":{");
        for (size_t i = 0; i < c.nkeys; i++) {
            hearth__name name = hearth__key_name(c.keys[i]);
            if (i)
                hearth__buf_addc(&b, ',');
            hearth__json_write_string(&b, c.keys[i]->s, c.keys[i]->len);
            hearth__buf_addc(&b, ':');
            hearth__node_write_json(&b, hearth__node_child(c.node, &name), flags);
        }
        hearth__buf_adds(&b, "}}");
        if (b.failed)
            out->failed = true;
        else
            add_event(out, "patch", b.data, b.len);
        hearth__buf_free(&b);
    }
    hearth__buf_free(&path);
}

/* Streams of one location get the same value, and usually hold the same
 * previous one: the events for a (previous, new, flags) triple are built
 * once and their bytes shared by every such stream. */
static void memo_clear(hearth__sse_memo *memo) {
    hearth_node_decref(memo->old);
    hearth_node_decref(memo->now);
    hearth__shared_buf_release(memo->bytes);
    memset(memo, 0, sizeof *memo);
}

static hearth__shared_buf *events_for(hearth__stream *st,
                                      const hearth_node_t *now) {
    hearth__sse_memo *memo = &st->srv->memo;
    bool whole = !st->last || st->filtered;
    if (memo->bytes && memo->now == now && memo->flags == st->json_flags &&
        memo->whole == whole && (whole || memo->old == st->last))
        return memo->bytes;
    hearth__buf out;
    hearth__buf_init(&out);
    if (whole)
        put_event(&out, st->json_flags, "/", now);
    else
        change_events(&out, st->json_flags, st->last, now);
    hearth__shared_buf *bytes =
        out.failed ? NULL : hearth__shared_buf_create(out.data ? out.data : "",
                                                   out.len);
    hearth__buf_free(&out);
    if (!bytes)
        return NULL;
    memo_clear(memo);
    memo->old = whole ? NULL : hearth_node_incref(st->last);
    memo->now = hearth_node_incref(now);
    memo->flags = st->json_flags;
    memo->whole = whole;
    memo->bytes = bytes;
    return bytes;
}

static void on_value(const hearth_event_t *ev, void *ctx) {
    hearth__stream *st = ctx;
    hearth__shared_buf *bytes = events_for(st, ev->node);
    if (bytes && bytes->len && st->conn)
        hearth__http_stream_send_shared(st->conn, bytes);
    hearth_node_decref(st->last);
    st->last = hearth_node_incref(ev->node);
}

/* The observer is gone: nothing refers to the stream any more. */
static void stream_free(void *ctx) {
    hearth__stream *st = ctx;
    hearth__list_remove(&st->link);
    hearth_node_decref(st->last);
    hearth__free(st->path);
    hearth__principal_clear(&st->who);
    hearth_node_decref(st->query_var);
    hearth__free(st);
}

static void on_conn_closed(void *ctx) {
    hearth__stream *st = ctx;
    st->conn = NULL;
    hearth__ns_release(st->srv, st->ns); /* nothing uses it from now on */
    if (st->handle)
        hearth_db_remove_observer(st->db, st->handle); /* frees st */
    else
        stream_free(st); /* the observer never started */
}

void hearth__sse_start(hearth__server *srv, hearth__http_conn *conn,
                       hearth__namespace *ns, const char *path,
                       const hearth_query_t *query, unsigned json_flags,
                       const hearth__principal *who,
                       const hearth_node_t *query_var) {
    hearth__stream *st = hearth__calloc(1, sizeof *st);
    char *copy = st ? hearth__strndup(path, strlen(path)) : NULL;
    if (!copy) {
        hearth__free(st);
        st = NULL;
    }
    if (!st) {
        hearth__http_respond(conn, 503, "application/json; charset=utf-8",
                             NULL, "{\"error\":\"out of memory\"}", 25);
        return;
    }
    st->srv = srv;
    st->conn = conn;
    st->db = ns->db;
    st->ns = ns;
    st->path = copy;
    st->who.admin = who->admin;
    st->who.auth = who->auth ? hearth_node_incref(who->auth) : NULL;
    st->who.expires_ms = who->expires_ms;
    st->who.door = "sse";
    st->query_var = query_var ? hearth_node_incref(query_var) : NULL;
    st->json_flags = json_flags;
    st->filtered = !hearth__query_loads_all(query);
    hearth__list_push_front(&srv->streams, &st->link);
    if (hearth__http_stream_begin(conn, 200, "text/event-stream; charset=utf-8",
                                  NULL, on_conn_closed, st)) {
        stream_free(st);
        return;
    }
    hearth__ns_hold(ns); /* until the connection closes */
    hearth_error_t err;
    /* On the loop thread the initial value is sent before this returns. */
    if (hearth_db_observe(ns->db, path, query, HEARTH_MASK_VALUE, on_value, st,
                          stream_free, &st->handle, &err)) {
        st->handle = 0;
        hearth__http_stream_end(conn);
    }
}

void hearth__sse_recheck(hearth__server *srv, hearth__namespace *ns) {
    HEARTH__LIST_EACH_SAFE(n, &srv->streams) {
        hearth__stream *st = STREAM(n);
        if (st->ns != ns || !st->conn ||
            hearth__ns_may_read(ns, &st->who, st->path, st->query_var))
            continue;
        static const char why[] = "\"Permission denied\"";
        send_event(st, "cancel", why, sizeof why - 1);
        hearth__http_stream_end(st->conn);
    }
}

void hearth__sse_expire(hearth__server *srv, int64_t now_ms) {
    HEARTH__LIST_EACH_SAFE(n, &srv->streams) {
        hearth__stream *st = STREAM(n);
        if (!st->conn || !hearth__principal_expired(&st->who, now_ms))
            continue;
        static const char why[] = "\"credential is no longer valid\"";
        send_event(st, "auth_revoked", why, sizeof why - 1);
        hearth__http_stream_end(st->conn);
    }
}

void hearth__sse_close_unavailable(hearth__server *srv) {
    /* Ended without an event: EventSource reconnects by itself. */
    HEARTH__LIST_EACH_SAFE(n, &srv->streams)
        if (STREAM(n)->conn && hearth__db_unavailable(STREAM(n)->ns->db))
            hearth__http_stream_end(STREAM(n)->conn);
}

void hearth__sse_keepalive(hearth__server *srv) {
    HEARTH__LIST_EACH(n, &srv->streams)
        send_event(STREAM(n), "keep-alive", "null", 4);
}

void hearth__sse_close_all(hearth__server *srv) {
    memo_clear(&srv->memo);
    HEARTH__LIST_EACH_SAFE(n, &srv->streams)
        if (STREAM(n)->conn)
            hearth__http_stream_end(STREAM(n)->conn);
}

size_t hearth__sse_count(const hearth__server *srv) {
    size_t n = 0;
    HEARTH__LIST_EACH(q, &srv->streams)
        n += STREAM(q)->conn != NULL;
    return n;
}
