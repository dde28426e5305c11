/* http.c - HTTP/1.1 connections: parsing, one request at a time, whole
 * responses and streams, limits, orderly close. Loop thread only. */
#include "server/http.h"

#include "server/budget.h"

#include <http_parser.h>
#include <stdio.h>
#include <string.h>

#define READ_CHUNK (64 * 1024)
#define MAX_BUFFERED_INPUT (1024 * 1024) /* unparsed input while busy */

struct hearth__http_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    hearth__http_limits limits;
    hearth__budget *budget; /* held bodies and messages, per peer */
    hearth__http_handler handler;
    hearth__http_head_handler on_head;
    void *ctx;
    hearth__http_conn *conns;
    size_t nconns;   /* open, not closing */
    uv_timer_t sweep; /* times connections out */
    int port;
    bool closing;
    int open_handles; /* listener + sweep timer + connections */
    /* Connection structs not yet freed: a closed connection whose request
     * still awaits its answer (a write waiting for its commit) keeps its
     * struct, which points here, until it is answered. */
    int live_conns;
    void (*done)(void *ctx);
    void *done_ctx;
};

struct hearth__http_conn {
    uv_tcp_t tcp;
    hearth__http_server *server;
    hearth__http_conn *prev, *next;
    int refs; /* the handle, and a request being answered */
    http_parser parser;
    char *in;
    size_t in_len, in_off, in_cap;
    /* the request being parsed */
    hearth__http_request req;
    size_t headers_cap;
    hearth__buf url, field, value, body;
    bool in_value;
    hearth__peer *peer; /* its remote address's share of the budget */
    size_t held;        /* bytes of the budget it holds (the body) */
    int reject_status; /* 413 etc. decided while parsing */
    bool ready;        /* a complete request awaits its handler */
    bool busy;         /* handed to the handler, not yet answered */
    bool streaming;
    bool closing;
    bool close_when_sent;
    bool processing;
    bool reading;
    bool in_request;   /* a request's bytes have begun to arrive */
    bool head_done;    /* ... and its head is complete */
    bool no_more;      /* answered for good (timeout, refusal): close */
    /* What the connection waits for times out at `deadline` (loop ms, 0:
     * never), answered with timeout_status (0: closed silently). */
    uint64_t deadline;
    int timeout_status;
    uint64_t since;      /* when the current wait began */
    size_t last_backlog; /* unsent bytes at the last look */
    /* an upgraded connection: when a byte last arrived, whether on_idle
     * was called since */
    uint64_t last_in;
    bool pinged;
    void (*on_idle)(void *ctx);
    int writes_pending;
    void (*on_close)(void *ctx);
    void *on_close_ctx;
    /* an upgraded connection: raw bytes in both directions */
    void (*on_data)(void *ctx, const char *data, size_t len);
};

static http_parser_settings settings;

static void start_reading(hearth__http_conn *c);

/* ---- connection lifetime ---- */

static void free_request(hearth__http_conn *c) {
    for (size_t i = 0; i < c->req.nheaders; i++) {
        hearth__free(c->req.headers[i].name);
        hearth__free(c->req.headers[i].value);
    }
    hearth__free(c->req.headers);
    hearth__free(c->req.target);
    hearth__free(c->req.body);
    memset(&c->req, 0, sizeof c->req);
    c->headers_cap = 0;
    hearth__buf_free(&c->url);
    hearth__buf_free(&c->field);
    hearth__buf_free(&c->value);
    hearth__buf_free(&c->body);
    c->in_value = false;
    hearth__http_unhold(c, c->held); /* the body is gone */
    c->held = 0;
}

/* Frees a closing server once nothing refers to it: no handle open and
 * no connection struct left (its late answer would reach the server). */
static void server_maybe_free(hearth__http_server *s) {
    if (s->closing && s->open_handles == 0 && s->live_conns == 0) {
        void (*done)(void *) = s->done;
        void *ctx = s->done_ctx;
        hearth__budget_free(s->budget);
        hearth__free(s);
        if (done)
            done(ctx);
    }
}

static void server_handle_closed(hearth__http_server *s) {
    s->open_handles--;
    server_maybe_free(s);
}

static void conn_release(hearth__http_conn *c) {
    if (--c->refs > 0)
        return;
    hearth__http_server *s = c->server;
    free_request(c);
    hearth__budget_peer_release(s->budget, c->peer);
    hearth__free(c->in);
    hearth__free(c);
    s->live_conns--;
    server_maybe_free(s);
}

static void on_conn_closed(uv_handle_t *h) {
    hearth__http_conn *c = h->data;
    hearth__http_server *s = c->server;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->on_close) {
        void (*cb)(void *) = c->on_close;
        c->on_close = NULL;
        cb(c->on_close_ctx);
    }
    conn_release(c);
    server_handle_closed(s);
}

static void conn_close(hearth__http_conn *c) {
    if (c->closing)
        return;
    c->closing = true;
    c->server->nconns--;
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

/* ---- waiting ---- */

/* What c waits for next may take timeout_ms (0: forever); past it, the
 * sweep answers `status` (0: closes silently). */
static void wait_for(hearth__http_conn *c, uint64_t timeout_ms, int status) {
    c->since = uv_now(c->server->loop);
    c->deadline = timeout_ms ? c->since + timeout_ms : 0;
    c->timeout_status = status;
}

/* ---- writing ---- */

typedef struct write_req {
    uv_write_t req;
    hearth__http_conn *conn;
    hearth__shared_buf *shared; /* the bytes, when shared by many writes */
    char data[];
} write_req;

hearth__shared_buf *hearth__shared_buf_new(const char *data, size_t len) {
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
    hearth__free(w);
    if (status < 0 || (c->close_when_sent && c->writes_pending == 0))
        conn_close(c);
    conn_release(c);
}

/* Queues w (owning its bytes or a shared buffer reference); the write and
 * the connection stay alive until on_written. */
static int start_write(hearth__http_conn *c, write_req *w, uv_buf_t buf) {
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, on_written)) {
        hearth__shared_buf_release(w->shared);
        hearth__free(w);
        conn_close(c);
        return HEARTH_ECLOSED;
    }
    c->refs++;
    c->writes_pending++;
    return 0;
}

static int send_bytes(hearth__http_conn *c, const char *a, size_t alen,
                      const char *b, size_t blen) {
    if (c->closing)
        return HEARTH_ECLOSED;
    write_req *w = hearth__malloc(sizeof *w + alen + blen);
    if (!w) {
        conn_close(c);
        return HEARTH_ENOMEM;
    }
    memcpy(w->data, a, alen);
    if (blen)
        memcpy(w->data + alen, b, blen);
    w->conn = c;
    w->shared = NULL;
    return start_write(c, w, uv_buf_init(w->data, (unsigned)(alen + blen)));
}

static const char *reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
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
static bool head_ok(const char *content_type, const char *headers) {
    if ((!content_type || value_ok(content_type, strlen(content_type))) &&
        hearth__http_header_lines_ok(headers))
        return true;
    fprintf(stderr, "hearth: refused to send a header holding a control "
                    "character\n");
    return false;
}

static void process(hearth__http_conn *c);

static void finish_request(hearth__http_conn *c) {
    c->busy = false;
    free_request(c);
    if (!c->streaming) /* until the next request (or while it is sent) */
        wait_for(c, c->server->limits.idle_ms, 0);
    if (!c->closing && !c->streaming)
        process(c);
    conn_release(c); /* the request's reference */
}

void hearth__http_respond(hearth__http_conn *c, int status,
                          const char *content_type, const char *headers,
                          const char *body, size_t len) {
    if (c->closing) {
        /* The client left (or the server is stopping) while the answer was
         * being made: nothing to send, and the server may be gone. */
        finish_request(c);
        return;
    }
    if (!head_ok(content_type, headers)) {
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
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\n"
                     "Content-Length: %zu\r\n"
                     "%s%s%s"
                     "Access-Control-Allow-Origin: *\r\n"
                     "Cache-Control: no-cache\r\n"
                     "%s"
                     "Connection: %s\r\n\r\n",
                     status, reason(status), len,
                     content_type ? "Content-Type: " : "",
                     content_type ? content_type : "", content_type ? "\r\n" : "",
                     headers ? headers : "", keep ? "keep-alive" : "close");
    if (n < 0 || (size_t)n >= sizeof head)
        n = snprintf(head, sizeof head,
                     "HTTP/1.1 500 Internal Server Error\r\n"
                     "Content-Length: 0\r\nConnection: close\r\n\r\n");
    if (!keep)
        c->close_when_sent = true;
    send_bytes(c, head, (size_t)n, body, len);
    finish_request(c);
}

int hearth__http_stream_begin(hearth__http_conn *c, int status,
                              const char *content_type, const char *headers,
                              void (*on_close)(void *ctx), void *ctx) {
    if (c->closing) { /* the client already left: no stream */
        finish_request(c);
        return HEARTH_ECLOSED;
    }
    if (!head_ok(content_type, headers)) {
        hearth__http_respond(c, 500, NULL, NULL, "", 0);
        return HEARTH_EINVAL;
    }
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\n"
                     "Content-Type: %s\r\n"
                     "Access-Control-Allow-Origin: *\r\n"
                     "Cache-Control: no-cache\r\n"
                     "%s"
                     "Connection: close\r\n\r\n",
                     status, reason(status), content_type,
                     headers ? headers : "");
    c->streaming = true;
    c->on_close = on_close;
    c->on_close_ctx = ctx;
    send_bytes(c, head, (size_t)n, NULL, 0);
    /* The connection now carries only this stream. It keeps reading (and
     * dropping what arrives) so that a client that leaves is noticed at
     * once, not at the next write: an idle stream's file, observer and
     * memory go with it. */
    finish_request(c);
    return 0;
}

/* Closes a stream whose unsent data would pass the bound with `more`
 * bytes: a client that stops reading must not grow our memory. */
static bool over_backlog(hearth__http_conn *c, size_t more) {
    size_t backlog = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
    if (backlog + more <= c->server->limits.max_backlog)
        return false;
    conn_close(c);
    return true;
}

int hearth__http_stream_send(hearth__http_conn *c, const char *data,
                             size_t len) {
    if (c->closing)
        return HEARTH_ECLOSED;
    if (over_backlog(c, len))
        return HEARTH_ECLOSED;
    return send_bytes(c, data, len, NULL, 0);
}

int hearth__http_stream_send_shared(hearth__http_conn *c,
                                    hearth__shared_buf *b) {
    if (c->closing)
        return HEARTH_ECLOSED;
    size_t offset = 0;
    if (c->writes_pending == 0) {
        /* Nothing queued: try the socket now, which for a fan-out to many
         * streams usually takes it all without queuing anything. */
        uv_buf_t now = uv_buf_init(b->data, (unsigned)b->len);
        int n = uv_try_write((uv_stream_t *)&c->tcp, &now, 1);
        if (n == (int)b->len)
            return 0;
        if (n > 0)
            offset = (size_t)n;
        else if (n != UV_EAGAIN) {
            conn_close(c);
            return HEARTH_ECLOSED;
        }
    }
    if (over_backlog(c, b->len - offset))
        return HEARTH_ECLOSED;
    write_req *w = hearth__malloc(sizeof *w);
    if (!w) {
        conn_close(c);
        return HEARTH_ENOMEM;
    }
    w->conn = c;
    w->shared = b;
    b->refs++;
    return start_write(c, w,
                       uv_buf_init(b->data + offset, (unsigned)(b->len - offset)));
}

int hearth__http_upgrade(hearth__http_conn *c, const char *headers,
                         void (*on_data)(void *ctx, const char *data,
                                         size_t len),
                         void (*on_close)(void *ctx), void *ctx) {
    if (c->closing) {
        finish_request(c);
        return HEARTH_ECLOSED;
    }
    if (!head_ok(NULL, headers)) {
        hearth__http_respond(c, 500, NULL, NULL, "", 0);
        return HEARTH_EINVAL;
    }
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 101 Switching Protocols\r\n"
                     "Upgrade: websocket\r\nConnection: Upgrade\r\n%s\r\n",
                     headers ? headers : "");
    c->streaming = true;
    c->last_in = uv_now(c->server->loop);
    c->on_data = on_data;
    c->on_close = on_close;
    c->on_close_ctx = ctx;
    send_bytes(c, head, (size_t)n, NULL, 0);
    finish_request(c);
    /* Bytes that came right behind the request belong to the new protocol:
     * on_read hands them over with the next read, or now. */
    if (c->in_len > c->in_off && !c->closing) {
        size_t len = c->in_len - c->in_off;
        char *copy = hearth__malloc(len);
        if (copy) {
            memcpy(copy, c->in + c->in_off, len);
            c->in_off = c->in_len = 0;
            on_data(ctx, copy, len);
            hearth__free(copy);
        }
    }
    return 0;
}

bool hearth__http_hold(hearth__http_conn *c, size_t n) {
    return c->peer && hearth__budget_take(c->server->budget, c->peer, n);
}

void hearth__http_unhold(hearth__http_conn *c, size_t n) {
    if (n)
        hearth__budget_give(c->server->budget, c->peer, n);
}

void hearth__http_on_idle(hearth__http_conn *c, void (*on_idle)(void *ctx)) {
    c->on_idle = on_idle;
}

int hearth__http_raw_send(hearth__http_conn *c, const char *data, size_t len) {
    return hearth__http_stream_send(c, data, len);
}

void hearth__http_stream_end(hearth__http_conn *c) {
    if (c->writes_pending == 0)
        conn_close(c);
    else
        c->close_when_sent = true;
}

/* Answers a request the parser rejected, then closes. */
static void reject(hearth__http_conn *c, int status, const char *message) {
    char body[320] = "{\"error\":\"";
    size_t n = strlen(body);
    for (const char *m = message; *m && n < sizeof body - 4; m++) {
        if (*m == '"' || *m == '\\')
            body[n++] = '\\';
        body[n++] = (unsigned char)*m < 0x20 ? ' ' : *m;
    }
    memcpy(body + n, "\"}", 3);
    n += 2;
    c->req.keep_alive = false;
    c->busy = true;
    c->refs++;
    hearth__http_respond(c, status, "application/json; charset=utf-8", NULL,
                         body, n);
}

/* Answers whatever c was sending (or nothing yet) with status, then
 * closes: what else arrives is dropped unread. */
static void give_up(hearth__http_conn *c, int status, const char *message) {
    c->no_more = true;
    c->deadline = 0;
    reject(c, status, message);
}

/* Answers a request whose body has not arrived: the connection then drops
 * what comes (never parsing or holding it) until the client closes or
 * the body timeout passes. Closing at once could reset the connection
 * before the client has read the answer. */
static void refuse_early(hearth__http_conn *c, int status, const char *why) {
    give_up(c, status, why);
    c->close_when_sent = false;
    wait_for(c, c->server->limits.body_ms ? c->server->limits.body_ms : 1000, 0);
}

/* ---- parsing ---- */

static hearth__http_conn *conn_of(http_parser *p) { return p->data; }

static int commit_header(hearth__http_conn *c) {
    if (!c->field.len && !c->value.len)
        return 0;
    if (c->req.nheaders == c->headers_cap) {
        size_t cap = c->headers_cap ? c->headers_cap * 2 : 16;
        hearth__http_header *h =
            hearth__realloc(c->req.headers, cap * sizeof *h);
        if (!h)
            return -1;
        c->req.headers = h;
        c->headers_cap = cap;
    }
    char *name = hearth__buf_detach(&c->field, NULL);
    char *value = hearth__buf_detach(&c->value, NULL);
    if (!name || !value) {
        hearth__free(name);
        hearth__free(value);
        return -1;
    }
    for (char *p = name; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    c->req.headers[c->req.nheaders++] = (hearth__http_header){name, value};
    c->in_value = false;
    return 0;
}

static int on_message_begin(http_parser *p) {
    hearth__http_conn *c = conn_of(p);
    if (c->no_more)
        return -1; /* nothing more is read on this connection */
    free_request(c);
    c->in_request = true;
    c->head_done = false;
    /* The whole head within the timeout, however slowly it trickles. */
    wait_for(c, c->server->limits.header_ms, 408);
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len) {
    hearth__buf_add(&conn_of(p)->url, at, len);
    return conn_of(p)->url.failed ? -1 : 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len) {
    hearth__http_conn *c = conn_of(p);
    if (c->in_value && commit_header(c))
        return -1;
    hearth__buf_add(&c->field, at, len);
    return c->field.failed ? -1 : 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len) {
    hearth__http_conn *c = conn_of(p);
    c->in_value = true;
    hearth__buf_add(&c->value, at, len);
    return c->value.failed ? -1 : 0;
}

/* Lets the head handler refuse a large body before it is read. */
static bool early_refusal(hearth__http_conn *c, http_parser *p) {
    hearth__http_server *s = c->server;
    bool large = (p->flags & F_CHUNKED) ||
                 ((p->flags & F_CONTENTLENGTH) &&
                  p->content_length > HEARTH__HTTP_EARLY_BODY);
    if (!s->on_head || !large)
        return false;
    c->req.method = (int)p->method;
    if (!c->req.target && !(c->req.target = hearth__buf_detach(&c->url, NULL)))
        return false;
    char why[256] = "";
    int status = s->on_head(&c->req, s->ctx, why, sizeof why);
    if (status)
        refuse_early(c, status, why);
    return status != 0;
}

static int on_headers_complete(http_parser *p) {
    hearth__http_conn *c = conn_of(p);
    if (commit_header(c))
        return -1;
    c->head_done = true;
    wait_for(c, c->server->limits.body_ms, 408);
    if (early_refusal(c, p))
        return 0; /* answered: the body goes unread */
    if ((p->flags & F_CONTENTLENGTH) &&
        p->content_length > c->server->limits.max_body) {
        c->reject_status = 413;
        return -1;
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len) {
    hearth__http_conn *c = conn_of(p);
    if (c->no_more)
        return 0; /* refused early: dropped */
    if (c->body.len + len > c->server->limits.max_body) {
        c->reject_status = 413;
        return -1;
    }
    if (!hearth__http_hold(c, len)) {
        c->reject_status = 503;
        return -1;
    }
    c->held += len;
    hearth__buf_add(&c->body, at, len);
    wait_for(c, c->server->limits.body_ms, 408); /* it moves: more time */
    return c->body.failed ? -1 : 0;
}

static int on_message_complete(http_parser *p) {
    hearth__http_conn *c = conn_of(p);
    c->req.method = (int)p->method;
    c->req.keep_alive = http_should_keep_alive(p) != 0;
    if (c->no_more)
        return 0; /* refused early: already answered */
    size_t body_len = c->body.len;
    if (!c->req.target) /* else taken when the head arrived */
        c->req.target = hearth__buf_detach(&c->url, NULL);
    c->req.body = hearth__buf_detach(&c->body, NULL);
    if (!c->req.target)
        c->req.target = hearth__strndup("", 0);
    if (!c->req.body)
        c->req.body = hearth__strndup("", 0);
    if (!c->req.target || !c->req.body)
        return -1;
    c->req.body_len = body_len;
    c->ready = true;
    c->in_request = false;
    c->deadline = 0; /* the server's turn */
    http_parser_pause(p, 1);
    return 0;
}

/* Parses what has arrived, one request at a time. */
static void process(hearth__http_conn *c) {
    if (c->processing)
        return;
    c->processing = true;
    while (!c->closing && !c->busy && !c->streaming && !c->no_more) {
        if (c->ready) {
            c->ready = false;
            c->busy = true;
            c->refs++;
            c->server->handler(c, &c->req, c->server->ctx);
            continue;
        }
        if (c->in_off == c->in_len)
            break;
        size_t n = http_parser_execute(&c->parser, &settings, c->in + c->in_off,
                                       c->in_len - c->in_off);
        c->in_off += n;
        if (c->no_more) { /* answered for good: the rest is dropped */
            c->in_off = c->in_len;
            break;
        }
        enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
        if (e == HPE_PAUSED) {
            http_parser_pause(&c->parser, 0);
        } else if (e != HPE_OK) {
            if (c->reject_status == 413)
                reject(c, 413, "Request body too large");
            else if (c->reject_status == 503)
                reject(c, 503, "Server busy: too much request data in flight");
            else if (e == HPE_HEADER_OVERFLOW)
                reject(c, 431, "Request headers too large");
            else
                reject(c, 400, http_errno_description(e));
            break;
        } else if (n == 0) {
            break;
        }
    }
    if (c->in_off == c->in_len)
        c->in_off = c->in_len = 0;
    c->processing = false;
    /* Resume reading once the backlog of unparsed input is small again. */
    if (!c->reading && !c->closing && !c->streaming && !c->no_more &&
        c->in_len - c->in_off < MAX_BUFFERED_INPUT)
        start_reading(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    hearth__http_conn *c = h->data;
    if (c->in_off > 0 && c->in_off == c->in_len)
        c->in_off = c->in_len = 0;
    if (c->in_off > 0 && c->in_cap - c->in_len < READ_CHUNK) {
        memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
        c->in_len -= c->in_off;
        c->in_off = 0;
    }
    if (c->in_cap - c->in_len < READ_CHUNK) {
        size_t cap = c->in_len + READ_CHUNK;
        char *in = hearth__realloc(c->in, cap);
        if (!in) {
            *buf = uv_buf_init(NULL, 0);
            return;
        }
        c->in = in;
        c->in_cap = cap;
    }
    *buf = uv_buf_init(c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    (void)buf;
    hearth__http_conn *c = stream->data;
    if (nread < 0) {
        conn_close(c);
        return;
    }
    if (c->streaming || c->no_more) { /* a stream, an upgrade, or done */
        c->last_in = uv_now(c->server->loop);
        c->pinged = false;
        c->in_len += (size_t)nread;
        size_t len = c->in_len - c->in_off;
        const char *data = c->in + c->in_off;
        c->in_off = c->in_len = 0;
        if (c->on_data && len && !c->no_more)
            c->on_data(c->on_close_ctx, data, len);
        return;
    }
    c->in_len += (size_t)nread;
    if (c->busy && c->in_len - c->in_off >= MAX_BUFFERED_INPUT) {
        uv_read_stop(stream);
        c->reading = false;
    }
    process(c);
}

static void start_reading(hearth__http_conn *c) {
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
        c->reading = true;
}

/* ---- timeouts ---- */

/* An upgraded connection silent for the idle timeout is asked to answer
 * (a WebSocket ping, which every client answers by itself), and closed
 * when still silent after twice the timeout. */
static void check_upgraded(hearth__http_conn *c, uint64_t now) {
    uint64_t idle = c->server->limits.idle_ms;
    if (!idle || now - c->last_in < idle)
        return;
    if (now - c->last_in >= 2 * idle) {
        conn_close(c);
    } else if (!c->pinged && c->on_idle) {
        c->pinged = true;
        c->on_idle(c->on_close_ctx);
    }
}

static void check_deadline(hearth__http_conn *c, uint64_t now) {
    if (c->on_data) {
        check_upgraded(c, now);
        return;
    }
    if (!c->deadline || now < c->deadline)
        return;
    size_t backlog = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
    if (c->writes_pending && backlog != c->last_backlog) {
        /* A reply still going out, but the client reads it: more time. */
        c->last_backlog = backlog;
        c->deadline = now + c->server->limits.idle_ms;
    } else if (c->timeout_status && !c->busy) {
        give_up(c, c->timeout_status, "Request timeout");
    } else {
        conn_close(c);
    }
}

static void on_sweep(uv_timer_t *t) {
    hearth__http_server *s = t->data;
    uint64_t now = uv_now(s->loop);
    for (hearth__http_conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (!c->closing)
            check_deadline(c, now);
    }
}

/* How often deadlines are looked at: a quarter of the shortest timeout
 * (so one is overshot by at most that), between 10 ms and 1 s. */
static uint64_t sweep_interval(const hearth__http_limits *l) {
    uint64_t t = 4000;
    const uint64_t all[] = {l->header_ms, l->body_ms, l->idle_ms};
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(all); i++)
        if (all[i] && all[i] < t)
            t = all[i];
    t /= 4;
    return t < 10 ? 10 : t;
}

/* ---- the connection limit ---- */

/* Whether c may be closed to make room: between requests with nothing
 * left to send (idle keep-alive or a new connection that sent nothing),
 * or still sending its head. */
static int eviction_rank(const hearth__http_conn *c) {
    if (c->closing || c->busy || c->streaming || c->no_more ||
        c->writes_pending)
        return 0;
    if (!c->in_request)
        return 2;
    return c->head_done ? 0 : 1;
}

/* At a connection limit: closes the connection that waited longest among
 * the idle ones, else among those still sending their head; of one peer
 * only when peer is not NULL, and never `keep`. */
static bool make_room(hearth__http_server *s, const hearth__peer *peer,
                      const hearth__http_conn *keep) {
    hearth__http_conn *victim = NULL;
    int best = 0;
    for (hearth__http_conn *c = s->conns; c; c = c->next) {
        if (c == keep || (peer && c->peer != peer))
            continue;
        int rank = eviction_rank(c);
        if (rank > best || (rank && rank == best && c->since < victim->since)) {
            victim = c;
            best = rank;
        }
    }
    if (victim)
        conn_close(victim);
    return victim != NULL;
}

/* ---- listening ---- */

static void on_listener_closed(uv_handle_t *h);

static void on_connection(uv_stream_t *listener, int status) {
    hearth__http_server *s = listener->data;
    if (status < 0 || s->closing)
        return;
    bool room = s->nconns < s->limits.max_connections || make_room(s, NULL, NULL);
    hearth__http_conn *c = hearth__calloc(1, sizeof *c);
    if (!c)
        return;
    c->server = s;
    c->refs = 1;
    s->live_conns++;
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->open_handles++;
    s->nconns++;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp)) {
        conn_close(c);
        return;
    }
    struct sockaddr_storage addr = {0};
    int addr_len = sizeof addr;
    uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&addr, &addr_len);
    if (!(c->peer = hearth__budget_peer(s->budget, &addr))) {
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    /* One address may not take every connection: past its share it makes
     * room among its own. */
    if (room && hearth__budget_peer_connections(c->peer) > s->limits.max_peer_connections &&
        !make_room(s, c->peer, c)) {
        give_up(c, 503, "Server busy: too many connections from this address");
        return;
    }
    if (!room) {
        /* Every connection is busy: say so rather than leave it hanging
         * (the bound is below the file limit, so accepting still works). */
        give_up(c, 503, "Server busy: too many connections");
        return;
    }
    wait_for(c, s->limits.header_ms, 0);
    start_reading(c);
}

static void init_settings(void) {
    settings.on_message_begin = on_message_begin;
    settings.on_url = on_url;
    settings.on_header_field = on_header_field;
    settings.on_header_value = on_header_value;
    settings.on_headers_complete = on_headers_complete;
    settings.on_body = on_body;
    settings.on_message_complete = on_message_complete;
}

int hearth__http_listen(uv_loop_t *loop, const char *host, int port,
                        const hearth__http_limits *limits,
                        hearth__http_handler handler, void *ctx,
                        hearth__http_server **out, hearth_error_t *err) {
    init_settings();
    if (strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    struct sockaddr_storage addr;
    int rc = strchr(host, ':')
                 ? uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr)
                 : uv_ip4_addr(host, port, (struct sockaddr_in *)&addr);
    if (rc)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "invalid host \"%s\": give an IP address", host);
    hearth__http_server *s = hearth__calloc(1, sizeof *s);
    if (!s)
        return hearth__error_code(err, HEARTH_ENOMEM);
    s->loop = loop;
    s->limits = *limits;
    if (!(s->budget = hearth__budget_new(limits->max_held, limits->peer_share))) {
        hearth__free(s);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    s->handler = handler;
    s->ctx = ctx;
    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;
    s->open_handles = 2;
    uv_timer_init(loop, &s->sweep);
    s->sweep.data = s;
    uv_timer_start(&s->sweep, on_sweep, sweep_interval(limits),
                   sweep_interval(limits));
    rc = uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0);
    if (!rc)
        rc = uv_listen((uv_stream_t *)&s->listener, 4096, on_connection);
    if (rc) {
        hearth__error(err, HEARTH_EIO, NULL, "cannot listen on %s:%d: %s", host,
                      port, uv_strerror(rc));
        /* Freed by the close callbacks, when the loop next runs. */
        s->closing = true;
        uv_close((uv_handle_t *)&s->listener, on_listener_closed);
        uv_close((uv_handle_t *)&s->sweep, on_listener_closed);
        return HEARTH_EIO;
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &len);
    s->port = ntohs(bound.ss_family == AF_INET6
                        ? ((struct sockaddr_in6 *)&bound)->sin6_port
                        : ((struct sockaddr_in *)&bound)->sin_port);
    *out = s;
    return 0;
}

int hearth__http_port(const hearth__http_server *s) { return s->port; }

void hearth__http_set_head_handler(hearth__http_server *s,
                                   hearth__http_head_handler on_head) {
    s->on_head = on_head;
}

/* The listener's or the sweep timer's close. */
static void on_listener_closed(uv_handle_t *h) {
    server_handle_closed(h->data);
}

void hearth__http_close(hearth__http_server *s, void (*done)(void *ctx),
                        void *ctx) {
    s->closing = true;
    s->done = done;
    s->done_ctx = ctx;
    for (hearth__http_conn *c = s->conns; c; c = c->next)
        if (!c->busy || c->streaming)
            conn_close(c); /* busy ones close once answered */
        else
            c->close_when_sent = true;
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
    uv_close((uv_handle_t *)&s->sweep, on_listener_closed);
}

const char *hearth__http_get_header(const hearth__http_request *req,
                                const char *name) {
    for (size_t i = 0; i < req->nheaders; i++)
        if (strcmp(req->headers[i].name, name) == 0)
            return req->headers[i].value;
    return NULL;
}
