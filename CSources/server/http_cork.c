/* http_cork.c - a connection's fan-out frames of one loop turn, written
 * together.
 *
 * One write can raise several listens of one session (a multi-path
 * update, children of one parent each listened to): each raise sends its
 * own frame, and a write(2) over loopback costs some 8 us of kernel time,
 * most of which is delivering it. So the first shared frame a connection
 * gets in a turn of the loop goes out at once (a session with one listen,
 * the common case, waits for nothing), and those after it are held, in
 * order, until the server's prepare callback writes each connection's
 * held frames in one writev, just before the loop waits for I/O. Any
 * other send on the connection writes the held frames first, so the
 * order of its bytes never changes. A connection holds at most CORK_MAX
 * frames (then they go out, and holding starts again), and a reference to
 * the connection while it holds any. */
#include "server/http_internal.h"

struct hearth__http_cork {
    size_t n;
    hearth__shared_buf *bufs[HEARTH__HTTP_CORK_MAX];
};

/* Writes and drops what c holds. */
static int flush(hearth__http_conn *c) {
    hearth__http_cork *k = c->cork;
    size_t n = k->n;
    k->n = 0;
    int rc = c->closing ? HEARTH_ECLOSED
                        : hearth__http_send_shared_bufs(c, k->bufs, n);
    for (size_t i = 0; i < n; i++)
        hearth__shared_buf_release(k->bufs[i]);
    return rc;
}

int hearth__http_cork_flush(hearth__http_conn *c) {
    return c->cork && c->cork->n ? flush(c) : 0;
}

bool hearth__http_cork_take(hearth__http_conn *c, hearth__shared_buf *b) {
    hearth__http_server *s = c->server;
    if (c->tls || s->closing)
        return false;
    if (!c->cork) {
        if (c->sent_turn != s->turn) { /* the first this turn: now */
            c->sent_turn = s->turn;
            return false;
        }
        if (s->ncorked == s->corked_cap) {
            size_t cap = s->corked_cap ? 2 * s->corked_cap : 64;
            hearth__http_conn **more =
                hearth__realloc(s->corked, cap * sizeof *more);
            if (!more)
                return false;
            s->corked = more;
            s->corked_cap = cap;
        }
        if (!(c->cork = hearth__calloc(1, sizeof *c->cork)))
            return false;
        s->corked[s->ncorked++] = c;
        c->refs++; /* released once the prepare callback has written it */
    } else if (c->cork->n == HEARTH__HTTP_CORK_MAX && flush(c)) {
        return false; /* closed: the caller's send says so */
    }
    b->refs++;
    c->cork->bufs[c->cork->n++] = b;
    return true;
}

/* Every holding connection's frames out, its hold and reference dropped. */
static void flush_all(hearth__http_server *s) {
    /* A flush may close a connection, never add one to the list. */
    for (size_t i = 0; i < s->ncorked; i++) {
        hearth__http_conn *c = s->corked[i];
        hearth__http_cork_flush(c);
        hearth__free(c->cork);
        c->cork = NULL;
        hearth__http_conn_release(c);
    }
    s->ncorked = 0;
}

static void on_prepare(uv_prepare_t *p) {
    hearth__http_server *s = p->data;
    flush_all(s);
    s->turn++;
}

void hearth__http_cork_start(hearth__http_server *s) {
    uv_prepare_init(s->loop, &s->cork_flush);
    s->cork_flush.data = s;
    uv_prepare_start(&s->cork_flush, on_prepare);
}

void hearth__http_cork_stop(hearth__http_server *s,
                            void (*closed)(uv_handle_t *)) {
    flush_all(s);
    hearth__free(s->corked);
    s->corked = NULL;
    s->corked_cap = 0;
    uv_close((uv_handle_t *)&s->cork_flush, closed);
}
