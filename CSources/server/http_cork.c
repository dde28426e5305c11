/* http_cork.c - fan-out frames written once per loop turn, by two threads
 * when there are many.
 *
 * A write raises its listens' pushes (and SSE events) one after another,
 * each a shared frame for one connection. Written at once, each is a
 * write(2) of its own, some 8 us of kernel time over loopback (most of it
 * delivering the bytes), on the loop thread alone. So shared frames are
 * held instead, in order, a connection at a time, and written by the
 * server's prepare callback just before the loop waits for I/O: a
 * connection's frames of one turn in one writev (a session whose listens
 * one write raises seven times: one write, not seven), and when many
 * connections hold frames, half of them written by a helper thread while
 * the loop writes the other half (the kernel's delivery is most of a
 * fan-out's cost, and it runs on the writer's core).
 *
 * Any other send on a connection writes its held frames first, so the
 * order of its bytes never changes. A connection holds at most
 * HEARTH__HTTP_CORK_MAX frames (then they go out, and holding starts
 * again) and a reference to the connection while it holds any.
 *
 * The helper touches nothing of the server's: it gets file descriptors
 * and iovecs over shared frames (kept alive by the holds, which are
 * released after it is done) and returns each sendmsg's result; the loop
 * thread waits for it before it counts, queues what a socket did not
 * take, or closes what failed. Nothing the loop does while both write
 * runs a callback (a close is uv_close, completed in a later turn), so no
 * frame is held meanwhile. */
#include "server/http_internal.h"

#include <errno.h>
#include <sys/socket.h>

/* A flush of fewer connections stays on the loop thread: waking the
 * helper and waiting for it (two futex calls and a thread switch) costs
 * what a few writes do. */
#define SHARED_FLUSH_MIN 256

struct hearth__http_cork {
    size_t n;
    hearth__shared_buf *bufs[HEARTH__HTTP_CORK_MAX];
};

/* One connection's frames for the helper: made and read back on the
 * loop thread, written on the helper's. */
typedef struct cork_job {
    hearth__http_conn *c;
    int fd;
    size_t niov;
    struct iovec iov[HEARTH__HTTP_CORK_MAX];
    ssize_t result; /* bytes written, or -errno */
} cork_job;

struct hearth__http_cork_helper {
    uv_thread_t thread;
    uv_sem_t go, done;
    bool quit;
    cork_job *jobs;
    size_t njobs, cap;
};

/* Drops c's held frames (the references). */
static void drop_held(hearth__http_cork *k, size_t n) {
    for (size_t i = 0; i < n; i++)
        hearth__shared_buf_release(k->bufs[i]);
    k->n = 0;
}

/* Writes and drops what c holds. */
static int flush(hearth__http_conn *c) {
    hearth__http_cork *k = c->cork;
    int rc = c->closing ? HEARTH_ECLOSED
                        : hearth__http_send_shared_bufs(c, k->bufs, k->n);
    drop_held(k, k->n);
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

/* ---- the helper thread ---- */

static void write_job(cork_job *j) {
    struct msghdr m = {.msg_iov = j->iov, .msg_iovlen = j->niov};
    ssize_t r;
    do
        r = sendmsg(j->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (r < 0 && errno == EINTR);
    j->result = r < 0 ? -errno : r;
}

static void helper_main(void *arg) {
    hearth__http_cork_helper *h = arg;
    for (;;) {
        uv_sem_wait(&h->go);
        if (h->quit)
            return;
        for (size_t i = 0; i < h->njobs; i++)
            write_job(&h->jobs[i]);
        uv_sem_post(&h->done);
    }
}

/* The helper, started the first time a flush is big enough. NULL when it
 * cannot be had (the loop then writes everything itself). */
static hearth__http_cork_helper *helper_of(hearth__http_server *s) {
    if (s->helper)
        return s->helper;
    hearth__http_cork_helper *h = hearth__calloc(1, sizeof *h);
    if (!h)
        return NULL;
    if (uv_sem_init(&h->go, 0)) {
        hearth__free(h);
        return NULL;
    }
    if (uv_sem_init(&h->done, 0)) {
        uv_sem_destroy(&h->go);
        hearth__free(h);
        return NULL;
    }
    if (uv_thread_create(&h->thread, helper_main, h)) {
        uv_sem_destroy(&h->go);
        uv_sem_destroy(&h->done);
        hearth__free(h);
        return NULL;
    }
    return s->helper = h;
}

static void helper_stop(hearth__http_server *s) {
    hearth__http_cork_helper *h = s->helper;
    if (!h)
        return;
    h->quit = true;
    uv_sem_post(&h->go);
    uv_thread_join(&h->thread);
    uv_sem_destroy(&h->go);
    uv_sem_destroy(&h->done);
    hearth__free(h->jobs);
    hearth__free(h);
    s->helper = NULL;
}

/* Whether the helper may write c, and its socket: a plain one with
 * nothing queued (else its bytes would pass libuv's queue). */
static bool helper_may_write(hearth__http_conn *c, uv_os_fd_t *fd) {
    return !c->closing && !c->tls && c->cork->n && c->writes_pending == 0 &&
           uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) == 0 &&
           uv_fileno((uv_handle_t *)&c->tcp, fd) == 0;
}

/* Gives every other connection the helper may write to it: the jobs it
 * got (0: it writes nothing, or there is no helper). */
static size_t hand_over(hearth__http_server *s, hearth__http_cork_helper *h) {
    if (h->cap < s->ncorked / 2 + 1) {
        size_t cap = s->ncorked / 2 + 1;
        cork_job *jobs = hearth__realloc(h->jobs, cap * sizeof *jobs);
        if (!jobs)
            return 0;
        h->jobs = jobs;
        h->cap = cap;
    }
    h->njobs = 0;
    bool take = false;
    for (size_t i = 0; i < s->ncorked; i++) {
        hearth__http_conn *c = s->corked[i];
        uv_os_fd_t fd;
        if (!helper_may_write(c, &fd) || !(take = !take))
            continue;
        cork_job *j = &h->jobs[h->njobs++];
        j->c = c;
        j->fd = fd;
        j->niov = c->cork->n;
        for (size_t b = 0; b < j->niov; b++)
            j->iov[b] = (struct iovec){c->cork->bufs[b]->data,
                                       c->cork->bufs[b]->len};
        s->corked[i] = NULL; /* the loop skips it: the helper writes it */
    }
    return h->njobs;
}

/* What the helper wrote, counted, its rest queued (or its connection
 * closed), and the held frames dropped, on the loop thread. */
static void take_back(cork_job *j) {
    hearth__http_conn *c = j->c;
    hearth__http_cork *k = c->cork;
    c->server->helper_writes++;
    /* -errno is libuv's error code on Unix */
    hearth__http_shared_bufs_sent(c, k->bufs, k->n,
                                  hearth__http_wrote(c, (int)j->result));
    drop_held(k, k->n);
}

/* Ends a connection's hold: its frames out, the hold freed, its
 * reference dropped. */
static void end_hold(hearth__http_conn *c) {
    hearth__http_cork_flush(c);
    hearth__free(c->cork);
    c->cork = NULL;
    hearth__http_conn_release(c);
}

/* Every holding connection's frames out, its hold and reference dropped. */
static void flush_all(hearth__http_server *s) {
    hearth__http_cork_helper *h =
        s->ncorked >= SHARED_FLUSH_MIN && !s->closing ? helper_of(s) : NULL;
    size_t handed = h ? hand_over(s, h) : 0;
    if (handed)
        uv_sem_post(&h->go);
    for (size_t i = 0; i < s->ncorked; i++)
        if (s->corked[i])
            end_hold(s->corked[i]);
    if (handed) {
        uv_sem_wait(&h->done);
        for (size_t i = 0; i < handed; i++) {
            hearth__http_conn *c = h->jobs[i].c;
            take_back(&h->jobs[i]);
            end_hold(c);
        }
    }
    s->ncorked = 0;
}

static void on_prepare(uv_prepare_t *p) {
    flush_all(p->data);
}

void hearth__http_cork_start(hearth__http_server *s) {
    uv_prepare_init(s->loop, &s->cork_flush);
    s->cork_flush.data = s;
    uv_prepare_start(&s->cork_flush, on_prepare);
}

void hearth__http_cork_stop(hearth__http_server *s,
                            void (*closed)(uv_handle_t *)) {
    flush_all(s);
    helper_stop(s);
    hearth__free(s->corked);
    s->corked = NULL;
    s->corked_cap = 0;
    uv_close((uv_handle_t *)&s->cork_flush, closed);
}
