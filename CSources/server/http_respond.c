/* http_respond.c - answers out: whole responses, streams (server-sent
 * events) with their backlog bound, and the writes under both. */
#include "server/http_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- writing ---- */

typedef struct write_req {
    uv_write_t req;
    hearth__http_conn *conn;
    hearth__shared_buf *shared; /* the bytes, when shared by many writes */
    char *owned;                /* or when made elsewhere (ciphertext) */
    char data[];
} write_req;

hearth__shared_buf *hearth__shared_buf_create(const char *data, size_t len) {
    hearth__shared_buf *b = hearth__malloc(sizeof *b + len);
    if (b) {
        b->refs = 1;
        b->len = len;
        memcpy(b->data, data, len);
    }
    return b;
}

void hearth__shared_buf_release(hearth__shared_buf *b) {
    if (b && --b->refs == 0)
        hearth__free(b);
}

static void on_written(uv_write_t *req, int status) {
    write_req *w = (write_req *)req;
    hearth__http_conn *c = w->conn;
    c->writes_pending--;
    hearth__shared_buf_release(w->shared);
    hearth__free(w->owned);
    hearth__free(w);
    if (status < 0 || (c->close_when_sent && c->writes_pending == 0))
        hearth__http_conn_close(c);
    hearth__http_conn_release(c);
}

static void write_req_free(write_req *w) {
    hearth__shared_buf_release(w->shared);
    hearth__free(w->owned);
    hearth__free(w);
}

static void count_out(hearth__http_conn *c, size_t n) {
    c->server->bytes_out += n;
    if (c->meter)
        c->meter->out += n;
}

/* Queues w as it is; the write and the connection stay alive until
 * on_written. */
static int queue_write(hearth__http_conn *c, write_req *w, uv_buf_t buf) {
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, on_written)) {
        write_req_free(w);
        hearth__http_conn_close(c);
        return HEARTH_ECLOSED;
    }
    count_out(c, buf.len);
    c->server->writes++;
    c->refs++;
    c->writes_pending++;
    return 0;
}

/* Writes what the socket takes now, on a plain connection with nothing
 * queued before it: the count of bytes written (what is left must be
 * queued), or HEARTH_ECLOSED (the connection is closed). A write taken
 * whole needs no write request, no copy and no memory; through uv_write
 * libuv would complete it on the next turn of the loop and toggle the
 * socket's write interest on the way (an epoll_ctl per answer). */
static ssize_t write_now(hearth__http_conn *c, uv_buf_t *bufs,
                         unsigned nbufs) {
    if (c->tls)
        return 0;
    return hearth__http_wrote(c, uv_try_write((uv_stream_t *)&c->tcp, bufs,
                                              nbufs));
}

ssize_t hearth__http_wrote(hearth__http_conn *c, int n) {
    c->server->writes++;
    if (n == UV_EAGAIN || n == UV_ENOSYS)
        return 0;
    if (n < 0) {
        hearth__http_conn_close(c);
        return HEARTH_ECLOSED;
    }
    count_out(c, (size_t)n);
    return n;
}

/* All was written at once: a connection to close once its answer is out
 * closes now. */
static int written_whole(hearth__http_conn *c) {
    if (c->close_when_sent && c->writes_pending == 0)
        hearth__http_conn_close(c);
    return 0;
}

int hearth__http_send_owned(hearth__http_conn *c, char *data, size_t len) {
    if (hearth__http_cork_flush(c)) { /* the held frames come first */
        hearth__free(data);
        return HEARTH_ECLOSED;
    }
    write_req *w = hearth__calloc(1, sizeof *w);
    if (!w || c->closing) {
        hearth__free(data);
        hearth__free(w);
        if (!w)
            hearth__http_conn_close(c);
        return w ? HEARTH_ECLOSED : HEARTH_ENOMEM;
    }
    w->conn = c;
    w->owned = data;
    return queue_write(c, w, uv_buf_init(data, (unsigned)len));
}

/* On an HTTPS connection: a + b encrypted and queued, in one flush. */
static int send_sealed(hearth__http_conn *c, const char *a, size_t alen,
                       const char *b, size_t blen) {
    if (hearth__http_tls_seal(c, a, alen) || hearth__http_tls_seal(c, b, blen)) {
        hearth__http_conn_close(c);
        return HEARTH_ECLOSED;
    }
    return hearth__http_tls_flush(c);
}

/* Queues w (owning its bytes or a shared buffer reference), encrypted
 * instead on an HTTPS connection. */
static int start_write(hearth__http_conn *c, write_req *w, uv_buf_t buf) {
    if (!c->tls)
        return queue_write(c, w, buf);
    int rc = send_sealed(c, buf.base, buf.len, NULL, 0);
    write_req_free(w);
    return rc;
}

int hearth__http_send_bytes(hearth__http_conn *c, const char *a, size_t alen,
                      const char *b, size_t blen) {
    if (c->closing || hearth__http_cork_flush(c)) /* held frames first */
        return HEARTH_ECLOSED;
    if (c->tls) /* no plaintext copy: straight into the session */
        return send_sealed(c, a, alen, b, blen);
    uv_buf_t bufs[2] = {uv_buf_init((char *)a, (unsigned)alen),
                        uv_buf_init((char *)b, (unsigned)blen)};
    ssize_t done = write_now(c, bufs, blen ? 2 : 1);
    if (done < 0)
        return (int)done;
    if ((size_t)done == alen + blen)
        return written_whole(c);
    /* The rest is copied and queued: a's part first, then b's. */
    size_t skip_a = (size_t)done < alen ? (size_t)done : alen;
    size_t skip_b = (size_t)done - skip_a;
    size_t rest = alen - skip_a + blen - skip_b;
    write_req *w = hearth__malloc(sizeof *w + rest);
    if (!w) {
        hearth__http_conn_close(c);
        return HEARTH_ENOMEM;
    }
    memcpy(w->data, a + skip_a, alen - skip_a);
    if (blen - skip_b)
        memcpy(w->data + alen - skip_a, b + skip_b, blen - skip_b);
    w->conn = c;
    w->shared = NULL;
    w->owned = NULL;
    return start_write(c, w, uv_buf_init(w->data, (unsigned)rest));
}

static const char *reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 412: return "Precondition Failed";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 507: return "Insufficient Storage";
    default: return "Unknown";
    }
}

static bool value_ok(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
            return false;
    }
    return true;
}

bool hearth__http_header_lines_ok(const char *text) {
    while (text && *text) {
        const char *end = strstr(text, "\r\n");
        if (!end || end == text || *text == ' ' || *text == '\t' ||
            !value_ok(text, (size_t)(end - text)))
            return false;
        text = end + 2;
    }
    return true;
}

/* The second line of defence against header injection: a handler that
 * lets a control character through gets a 500 instead of a forged head. */
bool hearth__http_head_ok(const char *content_type, const char *headers) {
    if ((!content_type || value_ok(content_type, strlen(content_type))) &&
        hearth__http_header_lines_ok(headers))
        return true;
    hearth__log(HEARTH_LOG_WARNING, "refused to send a header holding a control "
                    "character");
    return false;
}

void hearth__http_observe(hearth__http_conn *c, const char *kind, int status,
                          size_t bytes_out) {
    hearth__http_server *s = c->server;
    if (!s->observe || !c->req.target)
        return; /* no observer, or a refusal before any request */
    static const hearth__http_note none; /* nothing was noted */
    hearth__http_record r = {&c->req, c->note ? c->note : &none, kind,
                             status, bytes_out, uv_hrtime() - c->handed_ns};
    s->observe(s->ctx, &r);
}

void hearth__http_finish_request(hearth__http_conn *c) {
    c->busy = false;
    hearth__http_free_request(c);
    if (!c->streaming) /* until the next request (or while it is sent) */
        hearth__http_wait_for(c, c->server->limits.idle_ms, 0);
    if (!c->closing && !c->streaming)
        hearth__http_process(c);
    hearth__http_conn_release(c); /* the request's reference */
}

/* An answer's head, written out piece by piece: formatting it with
 * snprintf took a tenth of the server's own time for a small PUT. */
typedef struct head_out {
    char *at, *end;
} head_out;

static void head_add(head_out *h, const char *s) {
    size_t n = strlen(s);
    if (n > (size_t)(h->end - h->at))
        n = (size_t)(h->end - h->at);
    memcpy(h->at, s, n);
    h->at += n;
}

static void head_add_number(head_out *h, size_t v) {
    char digits[24];
    char *p = digits + sizeof digits;
    *--p = '\0';
    do
        *--p = (char)('0' + v % 10);
    while ((v /= 10));
    head_add(h, p);
}

/* The head of a whole answer into buf: its length, or 0 when it would
 * not fit. */
static size_t answer_head(char *buf, size_t size, int status, size_t len,
                          const char *content_type, bool own_cache,
                          const char *headers, bool keep) {
    head_out h = {buf, buf + size};
    head_add(&h, "HTTP/1.1 ");
    head_add_number(&h, (size_t)status);
    head_add(&h, " ");
    head_add(&h, reason(status));
    head_add(&h, "\r\nContent-Length: ");
    head_add_number(&h, len);
    head_add(&h, "\r\n");
    if (content_type) {
        head_add(&h, "Content-Type: ");
        head_add(&h, content_type);
        head_add(&h, "\r\n");
    }
    head_add(&h, "Access-Control-Allow-Origin: *\r\n");
    if (!own_cache)
        head_add(&h, "Cache-Control: no-store\r\n");
    if (headers)
        head_add(&h, headers);
    head_add(&h, keep ? "Connection: keep-alive\r\n\r\n"
                      : "Connection: close\r\n\r\n");
    return h.at < h.end ? (size_t)(h.at - buf) : 0;
}

void hearth__http_respond(hearth__http_conn *c, int status,
                          const char *content_type, const char *headers,
                          const char *body, size_t len) {
    if (c->closing) {
        /* The client left (or the server is stopping) while the answer was
         * being made: nothing to send, and the server may be gone. */
        hearth__http_finish_request(c);
        return;
    }
    if (!hearth__http_head_ok(content_type, headers)) {
        static const char refused[] = "{\"error\":\"Internal error: a "
                                      "response header was refused\"}";
        status = 500;
        content_type = "application/json; charset=utf-8";
        headers = NULL;
        body = refused;
        len = sizeof refused - 1;
        c->req.keep_alive = false;
    }
    bool keep = c->req.keep_alive && !c->server->closing;
    /* Data is never kept by a browser or a proxy (it may be private and
     * is stale at once); a caller may say otherwise (the console's files). */
    bool own_cache = headers && strcasestr(headers, "cache-control:");
    char head[2048];
    size_t n = answer_head(head, sizeof head, status, len, content_type,
                           own_cache, headers, keep);
    if (!n) { /* headers too long: a bare 500, and no body after it */
        static const char bare[] = "HTTP/1.1 500 Internal Server Error\r\n"
                                   "Content-Length: 0\r\n"
                                   "Connection: close\r\n\r\n";
        n = strlen(strcpy(head, bare));
        status = 500;
        len = 0;
        keep = false;
    }
    if (!keep && !c->lingering)
        c->close_when_sent = true;
    hearth__http_observe(c, "rest", status, len);
    hearth__http_send_bytes(c, head, n, body, len);
    hearth__http_finish_request(c);
}

int hearth__http_may_take_over(hearth__http_conn *c, const char *content_type,
                               const char *headers) {
    if (c->closing) { /* the client already left */
        hearth__http_finish_request(c);
        return HEARTH_ECLOSED;
    }
    if (!hearth__http_head_ok(content_type, headers)) {
        hearth__http_respond(c, 500, NULL, NULL, "", 0);
        return HEARTH_EINVAL;
    }
    return 0;
}

void hearth__http_take_over(hearth__http_conn *c, const char *head, size_t len,
                            void (*on_close)(void *ctx), void *ctx) {
    c->streaming = true;
    c->on_close = on_close;
    c->on_close_ctx = ctx;
    hearth__http_send_bytes(c, head, len, NULL, 0);
    /* The connection now carries only the stream or the new protocol. It
     * keeps reading so that a client that leaves is noticed at once, not
     * at the next write: an idle stream's file, observer and memory go
     * with it. */
    hearth__http_finish_request(c);
}

int hearth__http_stream_begin(hearth__http_conn *c, int status,
                              const char *content_type, const char *headers,
                              void (*on_close)(void *ctx), void *ctx) {
    int rc = hearth__http_may_take_over(c, content_type, headers);
    if (rc)
        return rc;
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\n"
                     "Content-Type: %s\r\n"
                     "Access-Control-Allow-Origin: *\r\n"
                     "Cache-Control: no-store\r\n"
                     "%s"
                     "Connection: close\r\n\r\n",
                     status, reason(status), content_type,
                     headers ? headers : "");
    hearth__http_observe(c, "sse", status, 0);
    hearth__http_take_over(c, head, (size_t)n, on_close, ctx);
    return 0;
}

/* Closes a stream whose unsent data would pass the bound with `more`
 * bytes: a client that stops reading must not grow our memory. */
static bool over_backlog(hearth__http_conn *c, size_t more) {
    size_t backlog = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
    if (backlog + more <= c->server->limits.max_backlog)
        return false;
    hearth__http_conn_close(c);
    return true;
}

int hearth__http_stream_send(hearth__http_conn *c, const char *data,
                             size_t len) {
    return hearth__http_raw_send(c, data, len, NULL, 0);
}

/* Two pieces in one write: a WebSocket frame's header and its payload go
 * out in one syscall and one packet, the payload never copied to join
 * them. */
int hearth__http_raw_send(hearth__http_conn *c, const char *a, size_t alen,
                          const char *b, size_t blen) {
    if (c->closing)
        return HEARTH_ECLOSED;
    if (over_backlog(c, alen + blen))
        return HEARTH_ECLOSED;
    return hearth__http_send_bytes(c, a, alen, b, blen);
}

int hearth__http_send_shared_bufs(hearth__http_conn *c,
                                  hearth__shared_buf *const *bufs, size_t n) {
    if (c->closing)
        return HEARTH_ECLOSED;
    /* A fan-out to many streams usually finds each socket taking it all
     * at once: nothing queued. */
    uv_buf_t now[HEARTH__HTTP_CORK_MAX];
    for (size_t i = 0; i < n; i++)
        now[i] = uv_buf_init(bufs[i]->data, (unsigned)bufs[i]->len);
    return hearth__http_shared_bufs_sent(c, bufs, n,
                                         write_now(c, now, (unsigned)n));
}

int hearth__http_shared_bufs_sent(hearth__http_conn *c,
                                  hearth__shared_buf *const *bufs, size_t n,
                                  ssize_t done) {
    if (done < 0)
        return (int)done;
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += bufs[i]->len;
    if ((size_t)done == total)
        return written_whole(c);
    if (over_backlog(c, total - (size_t)done))
        return HEARTH_ECLOSED;
    size_t skip = (size_t)done; /* the written bytes, from the first */
    for (size_t i = 0; i < n; i++) {
        hearth__shared_buf *b = bufs[i];
        if (skip >= b->len) {
            skip -= b->len;
            continue;
        }
        write_req *w = hearth__malloc(sizeof *w);
        if (!w) {
            hearth__http_conn_close(c);
            return HEARTH_ENOMEM;
        }
        w->conn = c;
        w->shared = b;
        w->owned = NULL;
        b->refs++;
        int rc = start_write(
            c, w, uv_buf_init(b->data + skip, (unsigned)(b->len - skip)));
        if (rc)
            return rc;
        skip = 0;
    }
    return 0;
}

int hearth__http_stream_send_shared(hearth__http_conn *c,
                                    hearth__shared_buf *b) {
    if (c->closing)
        return HEARTH_ECLOSED;
    return hearth__http_cork_take(c, b) ? 0
                                        : hearth__http_send_shared_bufs(c, &b, 1);
}

void hearth__http_stream_end(hearth__http_conn *c) {
    hearth__http_cork_flush(c); /* what was held goes before the end */
    if (c->writes_pending == 0)
        hearth__http_conn_close(c);
    else
        c->close_when_sent = true;
}

