/* ws_client.c - the client side of a WebSocket (RFC 6455) on libuv: name
 * resolution, TCP connect (each address in turn), optional TLS through
 * OpenSSL memory BIOs, the opening handshake, and frames through a wslay
 * client context.
 *
 * Lifetime: the struct lives until libuv has released everything that
 * points at it (the resolver request and the TCP handle, whose close
 * callback runs after every write and connect callback). Whatever ends the
 * connection, a failure or the owner's close, marks it `dead` and closes
 * the handle; the owner's on_close runs from the last libuv callback, just
 * before the struct is freed, so it never runs inside one of our own calls
 * and nothing is freed under a caller. While wslay is parsing input
 * (`in_recv`) nothing is torn down: that waits until wslay returns. */
#include "net/ws_client.h"

#include "net/ws_input.h"
#include "net/tls.h"
#include "net/ws_handshake.h"

#include "common/internal.h"
#include "os/os.h"

#include <stdio.h>
#include <string.h>
#include <wslay/wslay.h>

#define READ_SIZE (64 * 1024)
#define MAX_RESOURCE 8192

enum phase { RESOLVING, CONNECTING, TLS_HANDSHAKE, UPGRADING, OPEN };

struct hearth__wsc {
    uv_loop_t *loop;
    hearth__wsc_callbacks cb;
    void *user;
    char *host, *resource;
    int port;
    enum phase phase;

    /* name resolution and connection */
    uv_getaddrinfo_t resolver;
    uv_connect_t connector;
    uv_tcp_t tcp;
    struct addrinfo *addrs, *next_addr;
    int last_error;  /* the last connect failure (a libuv code) */
    bool resolving;  /* the resolver's callback is still to come */
    bool tcp_live;   /* tcp initialized; its close callback still to come */
    bool tcp_closing;
    bool retrying;   /* tcp is closing to try the next address */

    /* the end */
    bool dead;         /* no callback any more but on_close */
    bool owner_closed; /* not even that */
    bool goodbye;      /* send a close frame on the way out */
    bool shut;         /* shut_down ran */
    bool reporting;    /* inside on_close */
    int status;
    char why[256];
    char peer_reason[96]; /* the text of the server's close frame */

    hearth__ws_handshake hs; /* the opening handshake */

    /* frames */
    wslay_event_context_ptr ws;
    const char *in;  /* input being handed to wslay */
    size_t in_len;
    bool in_recv;    /* inside wslay_event_recv */
    hearth__buf out; /* bytes to send, written once per flush */

    hearth__tls *tls; /* NULL for ws:// */

    /* Masks, drawn from the system's generator 64 bytes (16 frames) at a
     * time: fewer system calls per write, and none of the larger draws
     * some kernels take milliseconds over (256 bytes: 8 ms seen). */
    uint8_t masks[64];
    size_t masks_left;

    char rbuf[READ_SIZE];
};

typedef struct write_req {
    uv_write_t req;
    hearth__wsc *c;
    char *data;
} write_req;

static void shut_down(hearth__wsc *c);
static void connect_next(hearth__wsc *c);
static void plain_in(hearth__wsc *c, const char *data, size_t len);

/* ---- ending ---- */

static void destroy(hearth__wsc *c) {
    if (c->ws)
        wslay_event_context_free(c->ws);
    hearth__tls_free(c->tls);
    uv_freeaddrinfo(c->addrs);
    hearth__ws_handshake_free(&c->hs);
    hearth__buf_free(&c->out);
    hearth__free(c->host);
    hearth__free(c->resource);
    hearth__free(c);
}

/* Called at the end of the libuv callbacks that can release the last
 * handle: once nothing of libuv's points here, report and free. */
static void finish(hearth__wsc *c) {
    if (!c->dead || c->resolving || c->tcp_live)
        return;
    if (!c->owner_closed && c->cb.on_close) {
        c->reporting = true;
        c->cb.on_close(c->user, c->status, c->why);
    }
    destroy(c);
}

/* Notes why the connection ends (the first reason wins) and starts closing;
 * on_close follows from finish. */
HEARTH__PRINTF(3, 4)
static void fail(hearth__wsc *c, int status, const char *fmt, ...) {
    if (c->dead)
        return;
    c->dead = true;
    c->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
    if (!c->in_recv)
        shut_down(c);
}

static void on_tcp_closed(uv_handle_t *h) {
    hearth__wsc *c = h->data;
    c->tcp_live = false;
    c->tcp_closing = false;
    bool retry = c->retrying && !c->dead;
    c->retrying = false;
    if (retry)
        connect_next(c);
    finish(c);
}

static void close_tcp(hearth__wsc *c) {
    if (!c->tcp_live || c->tcp_closing)
        return;
    c->tcp_closing = true;
    uv_close((uv_handle_t *)&c->tcp, on_tcp_closed);
}

/* ---- writing ---- */

static void on_written(uv_write_t *req, int status) {
    write_req *w = (write_req *)req;
    hearth__wsc *c = w->c;
    hearth__free(w->data);
    hearth__free(w);
    if (status < 0 && status != UV_ECANCELED)
        fail(c, HEARTH_EIO, "write failed: %s", uv_strerror(status));
}

/* Writes data (owned, freed here whatever happens) to the socket. */
static int write_raw(hearth__wsc *c, char *data, size_t len) {
    if (!c->tcp_live || c->tcp_closing) {
        hearth__free(data);
        return HEARTH_ECLOSED;
    }
    write_req *w = hearth__malloc(sizeof *w);
    if (!w) {
        hearth__free(data);
        return HEARTH_ENOMEM;
    }
    w->c = c;
    w->data = data;
    uv_buf_t buf = uv_buf_init(data, (unsigned)len);
    int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, on_written);
    if (rc) {
        hearth__free(data);
        hearth__free(w);
        return HEARTH_EIO;
    }
    return 0;
}

/* Moves the ciphertext OpenSSL produced to the socket. */
static int tls_flush(hearth__wsc *c) {
    char *data;
    size_t len;
    int rc = hearth__tls_take(c->tls, &data, &len);
    return rc || !data ? rc : write_raw(c, data, len);
}

static int tls_write(hearth__wsc *c, const char *data, size_t len) {
    int rc = hearth__tls_write(c->tls, data, len);
    return rc ? rc : tls_flush(c);
}

/* Sends what c->out holds (through TLS when on) and empties it. */
static int flush(hearth__wsc *c) {
    if (c->out.failed) {
        hearth__buf_free(&c->out);
        return HEARTH_ENOMEM;
    }
    if (!c->out.len)
        return 0;
    if (c->tls) {
        int rc = tls_write(c, c->out.data, c->out.len);
        hearth__buf_free(&c->out); /* a large message's room is not kept */
        return rc;
    }
    size_t len;
    char *data = hearth__buf_detach(&c->out, &len);
    return data ? write_raw(c, data, len) : HEARTH_ENOMEM;
}

/* Lets wslay frame what is queued, then sends it. */
static int pump(hearth__wsc *c) {
    if (c->phase != OPEN)
        return 0;
    int rc = wslay_event_send(c->ws);
    if (rc) {
        hearth__buf_free(&c->out);
        return rc == WSLAY_ERR_NOMEM ? HEARTH_ENOMEM : HEARTH_EIO;
    }
    return flush(c);
}

/* Says goodbye (best effort: what the socket takes at once, since libuv
 * tries a write before queuing it) and releases the handles. */
static void shut_down(hearth__wsc *c) {
    if (c->shut)
        return;
    c->shut = true;
    if (c->phase == OPEN) {
        if (c->goodbye)
            wslay_event_queue_close(c->ws, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
        pump(c); /* also a close reply or error close wslay queued */
    }
    if (c->tls && c->phase >= UPGRADING) {
        hearth__tls_close_notify(c->tls);
        tls_flush(c);
    }
    close_tcp(c);
    if (c->resolving)
        uv_cancel((uv_req_t *)&c->resolver); /* its callback still runs */
}

/* ---- frames (wslay) ---- */

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len,
                       int flags, void *user) {
    (void)flags;
    hearth__wsc *c = user;
    if (c->dead) /* drop the rest of the input */
        c->in_len = 0;
    return hearth__ws_take(ctx, buf, len, &c->in, &c->in_len);
}

/* Collects the frames; flush sends them in one write. */
static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data,
                       size_t len, int flags, void *user) {
    (void)flags;
    hearth__wsc *c = user;
    hearth__buf_add(&c->out, data, len);
    if (c->out.failed) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return (ssize_t)len;
}

/* RFC 6455 (10.3) wants masks nobody on the path can predict: a
 * cryptographic generator, not rand(). */
static int ws_genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len,
                      void *user) {
    hearth__wsc *c = user;
    while (len) {
        if (!c->masks_left) {
            if (hearth__os_random(c->masks, sizeof c->masks)) {
                wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
                return -1;
            }
            c->masks_left = sizeof c->masks;
        }
        size_t n = len < c->masks_left ? len : c->masks_left;
        const uint8_t *from = c->masks + sizeof c->masks - c->masks_left;
        memcpy(buf, from, n);
        memset((uint8_t *)from, 0, n); /* each byte used once */
        c->masks_left -= n;
        buf += n;
        len -= n;
    }
    return 0;
}

/* Keeps a printable copy of a close frame's reason for on_close's text. */
static void keep_reason(hearth__wsc *c, const uint8_t *msg, size_t len) {
    size_t n = 0;
    for (size_t i = 2; i < len && n + 1 < sizeof c->peer_reason; i++)
        c->peer_reason[n++] = msg[i] >= 0x20 && msg[i] < 0x7f ? (char)msg[i] : '?';
    c->peer_reason[n] = '\0';
}

static void ws_message(wslay_event_context_ptr ctx,
                       const struct wslay_event_on_msg_recv_arg *arg,
                       void *user) {
    (void)ctx;
    hearth__wsc *c = user;
    if (c->dead)
        return;
    if (arg->opcode == WSLAY_CONNECTION_CLOSE)
        keep_reason(c, arg->msg, arg->msg_length);
    else if (arg->opcode == WSLAY_TEXT_FRAME && c->cb.on_message)
        c->cb.on_message(c->user, arg->msg ? (const char *)arg->msg : "",
                         arg->msg_length);
}

/* After input: a close from the server, or one wslay sent because the
 * server broke the protocol, ends the connection. */
static void check_ended(hearth__wsc *c) {
    if (wslay_event_get_close_received(c->ws)) {
        unsigned code = wslay_event_get_status_code_received(c->ws);
        bool clean = code == WSLAY_CODE_NORMAL_CLOSURE ||
                     code == WSLAY_CODE_GOING_AWAY ||
                     code == WSLAY_CODE_NO_STATUS_RCVD;
        fail(c, clean ? 0 : HEARTH_EIO, "closed by the server (%u%s%s)", code,
             c->peer_reason[0] ? " " : "", c->peer_reason);
        return;
    }
    if (wslay_event_get_read_enabled(c->ws))
        return;
    unsigned code = wslay_event_get_status_code_sent(c->ws);
    if (code == WSLAY_CODE_MESSAGE_TOO_BIG)
        fail(c, HEARTH_ETOOBIG, "a message from the server is over %u bytes",
             HEARTH__WS_MAX_MESSAGE);
    else if (code == WSLAY_CODE_INVALID_FRAME_PAYLOAD_DATA)
        fail(c, HEARTH_EIO, "a text message from the server is not UTF-8");
    else
        fail(c, HEARTH_EIO, "the server broke the WebSocket protocol (%u)",
             code);
}

/* Frame bytes from the server. */
static void ws_in(hearth__wsc *c, const char *data, size_t len) {
    c->in = data;
    c->in_len = len;
    c->in_recv = true;
    int rc = wslay_event_recv(c->ws);
    c->in_recv = false;
    c->in_len = 0;
    if (c->dead) { /* closed from on_message: now it can be torn down */
        shut_down(c);
        return;
    }
    int sent = pump(c); /* pongs, close replies, what on_message sent */
    if (rc)
        fail(c, rc == WSLAY_ERR_NOMEM ? HEARTH_ENOMEM : HEARTH_EIO,
             "cannot read frames");
    else if (sent)
        fail(c, sent, "cannot send: %s", hearth_strerror(sent));
    else
        check_ended(c);
}

/* ---- the opening handshake ---- */

static void send_upgrade(hearth__wsc *c) {
    hearth__ws_handshake_request(&c->hs, &c->out, c->host, c->port,
                                 c->tls != NULL, c->resource);
    int rc = flush(c);
    if (rc)
        fail(c, rc, "cannot send the handshake: %s", hearth_strerror(rc));
}

/* Response bytes while upgrading: the header block may come in any number
 * of pieces, and what follows it already belongs to the frames. */
static void head_in(hearth__wsc *c, const char *data, size_t len) {
    size_t used;
    int rc = hearth__ws_handshake_read(&c->hs, data, len, &used);
    if (rc == HEARTH__WSH_MORE)
        return;
    if (rc < 0) {
        fail(c, rc, "%s", rc == HEARTH_ENOMEM ? "out of memory" : c->hs.why);
        return;
    }
    c->phase = OPEN;
    hearth__ws_handshake_free(&c->hs);
    if (c->cb.on_open)
        c->cb.on_open(c->user);
    if (!c->dead && len > used)
        ws_in(c, data + used, len - used);
}

/* Plaintext from the server, TLS removed. */
static void plain_in(hearth__wsc *c, const char *data, size_t len) {
    if (c->phase == UPGRADING)
        head_in(c, data, len);
    else if (c->phase == OPEN)
        ws_in(c, data, len);
}

/* ---- TLS ---- */

/* Names why OpenSSL failed: the certificate check, else its error queue. */
static void tls_failed(hearth__wsc *c, const char *what) {
    char why[256];
    hearth__tls_why(c->tls, what, why, sizeof why);
    fail(c, HEARTH_EIO, "%s", why);
}

/* Drives the TLS handshake, then decrypts whatever has arrived. */
static void tls_step(hearth__wsc *c) {
    if (c->phase == TLS_HANDSHAKE) {
        int r = hearth__tls_handshake(c->tls);
        if (r < 0) {
            tls_flush(c); /* the alert that tells the server why */
            tls_failed(c, "TLS handshake");
            return;
        }
        if (r == 1) {
            c->phase = UPGRADING;
            send_upgrade(c);
        }
    }
    while (!c->dead && c->phase >= UPGRADING) {
        char plain[16 * 1024];
        int n = hearth__tls_read(c->tls, plain, sizeof plain);
        if (n > 0) {
            plain_in(c, plain, (size_t)n);
            continue;
        }
        if (n == 0)
            break;
        if (n == HEARTH_ECLOSED)
            fail(c, HEARTH_EIO, "the server ended TLS without a close frame");
        else
            tls_failed(c, "TLS");
        return;
    }
    /* Handshake messages, alerts, key updates: whatever OpenSSL wrote. */
    int rc = c->dead ? 0 : tls_flush(c);
    if (rc)
        fail(c, rc, "cannot send: %s", hearth_strerror(rc));
}

static void tls_in(hearth__wsc *c, const char *data, size_t len) {
    if (hearth__tls_feed(c->tls, data, len)) {
        fail(c, HEARTH_ENOMEM, "out of memory");
        return;
    }
    tls_step(c);
}

/* ---- connecting ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    hearth__wsc *c = h->data;
    *buf = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    hearth__wsc *c = s->data;
    if (c->dead || nread == 0)
        return;
    if (nread > 0) {
        if (c->tls)
            tls_in(c, buf->base, (size_t)nread);
        else
            plain_in(c, buf->base, (size_t)nread);
    } else if (nread == UV_EOF) {
        fail(c, HEARTH_EIO, c->phase == OPEN
                                ? "the server closed the connection without "
                                  "a close frame"
                                : "the server closed the connection during "
                                  "the handshake");
    } else {
        fail(c, HEARTH_EIO, "read failed: %s", uv_strerror((int)nread));
    }
}

static void on_connected(uv_connect_t *req, int status) {
    hearth__wsc *c = req->handle->data;
    if (c->dead)
        return; /* canceled by the close */
    if (status < 0) {
        c->last_error = status;
        c->retrying = true; /* on_tcp_closed tries the next address */
        close_tcp(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1); /* small messages must not wait */
    /* A server that goes away must not end the program with SIGPIPE on
     * the next write: this socket alone is told so where the system has
     * the option (Darwin); on Linux the database's loop thread blocks the
     * signal (db/open.c). Never the process's disposition: it is the
     * program's. */
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
        hearth__os_socket_quiet(fd);
    int rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    if (rc) {
        fail(c, HEARTH_EIO, "cannot read: %s", uv_strerror(rc));
        return;
    }
    if (c->tls) {
        c->phase = TLS_HANDSHAKE;
        tls_step(c);
    } else {
        c->phase = UPGRADING;
        send_upgrade(c);
    }
}

/* Connects to the next resolved address (a fresh handle each time: libuv
 * cannot reuse one after a failed connect), or fails when none is left. */
static void connect_next(hearth__wsc *c) {
    while (c->next_addr) {
        struct addrinfo *ai = c->next_addr;
        c->next_addr = ai->ai_next;
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
            continue;
        int rc = uv_tcp_init(c->loop, &c->tcp);
        if (rc) {
            fail(c, HEARTH_EIO, "cannot open a socket: %s", uv_strerror(rc));
            return;
        }
        c->tcp.data = c;
        c->tcp_live = true;
        rc = uv_tcp_connect(&c->connector, &c->tcp, ai->ai_addr, on_connected);
        if (rc) {
            c->last_error = rc;
            c->retrying = true;
            close_tcp(c);
        }
        return;
    }
    fail(c, HEARTH_EIO, "cannot connect to %s port %d: %s", c->host, c->port,
         c->last_error ? uv_strerror(c->last_error) : "no address");
}

static void on_resolved(uv_getaddrinfo_t *req, int status,
                        struct addrinfo *res) {
    hearth__wsc *c = req->data;
    c->resolving = false;
    if (c->dead) {
        uv_freeaddrinfo(res);
    } else if (status < 0) {
        fail(c, HEARTH_EIO, "cannot resolve %s: %s", c->host,
             uv_strerror(status));
    } else {
        c->addrs = c->next_addr = res;
        c->phase = CONNECTING;
        connect_next(c);
    }
    finish(c);
}

/* Refuses what would break the request line or the Host header. */
static bool plain_text(const char *s, size_t max, const char *forbidden) {
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f ||
            strchr(forbidden, s[i]))
            return false;
    return true;
}

static int start(hearth__wsc *c, bool tls) {
    int rc = hearth__ws_handshake_init(&c->hs);
    if (!rc && tls)
        rc = hearth__tls_client_create(c->host, &c->tls);
    if (!rc && wslay_event_context_client_init(
                   &c->ws,
                   &(struct wslay_event_callbacks){ws_recv, ws_send, ws_genmask,
                                                   NULL, NULL, NULL, ws_message},
                   c) != 0) {
        c->ws = NULL;
        rc = HEARTH_ENOMEM;
    }
    if (rc)
        return rc;
    wslay_event_config_set_max_recv_msg_length(c->ws, HEARTH__WS_MAX_MESSAGE);
    char service[16];
    snprintf(service, sizeof service, "%d", c->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    c->resolver.data = c;
    rc = uv_getaddrinfo(c->loop, &c->resolver, on_resolved, c->host, service,
                        &hints);
    if (rc)
        return HEARTH_EIO;
    c->resolving = true;
    return 0;
}

int hearth__wsc_connect(uv_loop_t *loop, const char *host, int port,
                        const char *resource, bool tls,
                        const hearth__wsc_callbacks *cb, void *user,
                        hearth__wsc **out) {
    if (!loop || !host || !resource || !cb || !out || port < 1 ||
        port > 65535 || !plain_text(host, 255, "/?#@[]\\") ||
        resource[0] != '/' || !plain_text(resource, MAX_RESOURCE, ""))
        return HEARTH_EINVAL;
    hearth__wsc *c = hearth__calloc(1, sizeof *c);
    if (!c)
        return HEARTH_ENOMEM;
    c->loop = loop;
    c->cb = *cb;
    c->user = user;
    c->port = port;
    c->phase = RESOLVING;
    hearth__buf_init(&c->out);
    c->host = hearth__strndup(host, strlen(host));
    c->resource = hearth__strndup(resource, strlen(resource));
    int rc = c->host && c->resource ? start(c, tls) : HEARTH_ENOMEM;
    if (rc) {
        destroy(c);
        return rc;
    }
    *out = c;
    return 0;
}

int hearth__wsc_send(hearth__wsc *c, const char *text, size_t len) {
    if (c->dead || c->phase != OPEN)
        return HEARTH_ECLOSED;
    struct wslay_event_msg msg = {WSLAY_TEXT_FRAME, (const uint8_t *)text, len};
    int rc = wslay_event_queue_msg(c->ws, &msg);
    if (rc)
        return rc == WSLAY_ERR_NOMEM ? HEARTH_ENOMEM : HEARTH_ECLOSED;
    if (!c->in_recv) { /* else ws_in pumps once wslay returns */
        rc = pump(c);
        if (rc)
            fail(c, rc, "cannot send: %s", hearth_strerror(rc));
    }
    return 0;
}

void hearth__wsc_close(hearth__wsc *c) {
    if (c->reporting || c->owner_closed)
        return;
    c->owner_closed = true;
    if (!c->dead) {
        c->dead = true;
        c->goodbye = true;
    }
    if (!c->in_recv) /* else ws_in tears down once wslay returns */
        shut_down(c);
}

size_t hearth__wsc_pending(const hearth__wsc *c) {
    size_t n = c->out.len;
    if (c->ws)
        n += wslay_event_get_queued_msg_length(c->ws);
    if (c->tcp_live && !c->tcp_closing)
        n += uv_stream_get_write_queue_size((const uv_stream_t *)&c->tcp);
    return n;
}
