/* http_parse.c - requests in: http-parser over what each connection has
 * read, one request at a time, and the refusals of requests that are too
 * large, malformed or too slow. */
#include "server/http_internal.h"

#include <string.h>

#define MAX_BUFFERED_INPUT (1024 * 1024) /* unparsed input while busy */

static http_parser_settings settings;

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
    c->handed_ns = uv_hrtime();
    c->busy = true;
    c->refs++;
    hearth__http_respond(c, status, "application/json; charset=utf-8", NULL,
                         body, n);
}

void hearth__http_give_up(hearth__http_conn *c, int status,
                          const char *message) {
    c->no_more = true;
    c->deadline = 0;
    reject(c, status, message);
}

/* Answers a request whose body has not arrived: the connection then drops
 * what comes (never parsing or holding it) until the client closes or
 * the body timeout passes. Closing at once could reset the connection
 * before the client has read the answer. */
static void refuse_early(hearth__http_conn *c, int status, const char *why) {
    c->lingering = true;
    hearth__http_give_up(c, status, why);
    uint64_t body_ms = c->server->limits.body_ms;
    hearth__http_wait_for(c, body_ms ? body_ms : 1000, 0);
}

/* ---- parsing ---- */

static hearth__http_conn *conn_of(http_parser *p) { return p->data; }

/* Ends the value being read: the field joins the request's. */
static void end_field(hearth__http_conn *c) {
    hearth__buf_addc(&c->fields, '\0');
    c->req.nheaders++;
    c->in_value = false;
    c->name_at = c->fields.len;
}

/* Ends the name being read (in lower case: names compare so). */
static void end_name(hearth__http_conn *c) {
    for (size_t i = c->name_at; i < c->fields.len; i++) {
        char ch = c->fields.data[i];
        if (ch >= 'A' && ch <= 'Z')
            c->fields.data[i] = (char)(ch - 'A' + 'a');
    }
    hearth__buf_addc(&c->fields, '\0');
    c->in_value = true;
}

/* The head is complete: its fields become the request's, followed in
 * the same block by where each name and value begins (a lookup then
 * compares names, never measures them). */
static int take_fields(hearth__http_conn *c) {
    if (c->in_value)
        end_field(c);
    size_t text = c->fields.len + 1; /* the buffer's NUL ends it */
    size_t pad = (sizeof(char *) - text % sizeof(char *)) % sizeof(char *);
    if (!hearth__buf_reserve(&c->fields,
                             pad + 2 * c->req.nheaders * sizeof(char *)))
        return -1;
    char *block = hearth__buf_detach(&c->fields, NULL);
    if (!block)
        return -1;
    c->req.fields = block;
    /* malloc's alignment, and text + pad a multiple of a pointer's */
    c->req.field_at = (const char **)(void *)(block + text + pad);
    const char *at = block;
    for (size_t i = 0; i < 2 * c->req.nheaders; i++) {
        c->req.field_at[i] = at;
        at += strlen(at) + 1;
    }
    return 0;
}

static int on_message_begin(http_parser *p) {
    hearth__http_conn *c = conn_of(p);
    if (c->no_more)
        return -1; /* nothing more is read on this connection */
    hearth__http_free_request(c);
    c->in_request = true;
    c->head_done = false;
    /* The whole head within the timeout, however slowly it trickles. */
    hearth__http_wait_for(c, c->server->limits.header_ms, 408);
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len) {
    hearth__buf_add(&conn_of(p)->url, at, len);
    return conn_of(p)->url.failed ? -1 : 0;
}

/* A name or value may come in pieces (split across reads); a chunked
 * body's trailer fields come after the head and are not kept. */
static int on_header_field(http_parser *p, const char *at, size_t len) {
    hearth__http_conn *c = conn_of(p);
    if (c->head_done)
        return 0;
    if (c->in_value)
        end_field(c);
    hearth__buf_add(&c->fields, at, len);
    return c->fields.failed ? -1 : 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len) {
    hearth__http_conn *c = conn_of(p);
    if (c->head_done)
        return 0;
    if (!c->in_value)
        end_name(c);
    hearth__buf_add(&c->fields, at, len);
    return c->fields.failed ? -1 : 0;
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
    if (take_fields(c))
        return -1;
    c->head_done = true;
    hearth__http_wait_for(c, c->server->limits.body_ms, 408);
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
    /* it moves: more time */
    hearth__http_wait_for(c, c->server->limits.body_ms, 408);
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
void hearth__http_process(hearth__http_conn *c) {
    if (c->processing)
        return;
    c->processing = true;
    while (!c->closing && !c->busy && !c->streaming && !c->no_more) {
        if (c->ready) {
            c->ready = false;
            c->busy = true;
            c->refs++;
            c->handed_ns = uv_hrtime();
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
    if (c->in_off == c->in_len) { /* all parsed: hold nothing while idle */
        hearth__free(c->in);
        c->in = NULL;
        c->in_off = c->in_len = c->in_cap = 0;
    }
    c->processing = false;
    /* Resume reading once the backlog of unparsed input is small again. */
    if (!c->reading && !c->closing && !c->streaming && !c->no_more &&
        c->in_len - c->in_off < MAX_BUFFERED_INPUT)
        hearth__http_start_reading(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    hearth__http_conn *c = h->data;
    /* Every connection reads into the server's one buffer (a TLS
     * connection's ciphertext too: its session copies it in), and keeps
     * only what it has not parsed yet. */
    *buf = uv_buf_init(c->server->read_buf, sizeof c->server->read_buf);
}

/* Appends what was read to the connection's own input, which grows to what
 * it must hold (a request arriving in pieces, requests pipelined behind
 * one being answered). False when memory runs out. */
static bool keep_input(hearth__http_conn *c, const char *data, size_t len) {
    if (len == 0) /* a TLS record of no data: c->in may not exist yet */
        return true;
    if (c->in_off > 0 && c->in_cap - c->in_len < len) {
        memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
        c->in_len -= c->in_off;
        c->in_off = 0;
    }
    char *in = len <= SIZE_MAX - c->in_len
                   ? hearth__grow(c->in, &c->in_cap, c->in_len + len, 1)
                   : NULL;
    if (!in)
        return false;
    c->in = in;
    memcpy(c->in + c->in_len, data, len);
    c->in_len += len;
    return true;
}

/* Adds what was read to the connection's unparsed input: a plain
 * connection's bytes as they are, a TLS connection's decrypted (its
 * close_notify noted in c->tls_closed). False to close the connection. */
static bool take_input(hearth__http_conn *c, const char *data, size_t len) {
    if (!c->tls)
        return keep_input(c, data, len);
    ssize_t plain = len ? hearth__http_tls_input(c, data, len) : 0;
    if (plain < 0)
        return false;
    c->in_len += (size_t)plain;
    return true;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    hearth__http_conn *c = stream->data;
    if (nread < 0) {
        hearth__http_conn_close(c);
        return;
    }
    c->server->bytes_in += (uint64_t)nread;
    if (c->streaming || c->no_more) { /* a stream, an upgrade, or done */
        c->last_in = uv_now(c->server->loop);
        c->pinged = false;
        /* The new protocol takes the bytes as they are (its handler copies
         * what it keeps); input held from before goes first. */
        char *data = buf->base;
        size_t len = (size_t)nread;
        if (c->tls || c->in_len > c->in_off) {
            if (!take_input(c, data, len)) {
                hearth__http_conn_close(c);
                return;
            }
            data = c->in + c->in_off;
            len = c->in_len - c->in_off;
        }
        c->in_off = c->in_len = 0;
        if (c->on_data && len && !c->no_more) {
            if (c->meter)
                c->meter->in += len;
            c->on_data(c->on_close_ctx, data, len);
        }
    } else {
        if (!take_input(c, buf->base, (size_t)nread)) {
            hearth__http_conn_close(c);
            return;
        }
        if (c->busy && c->in_len - c->in_off >= MAX_BUFFERED_INPUT) {
            uv_read_stop(stream);
            c->reading = false;
        }
        hearth__http_process(c);
    }
    if (c->tls_closed) /* as a plain connection's end, after its bytes */
        hearth__http_conn_close(c);
}

void hearth__http_start_reading(hearth__http_conn *c) {
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
        c->reading = true;
}

void hearth__http_init_parsing(void) {
    settings.on_message_begin = on_message_begin;
    settings.on_url = on_url;
    settings.on_header_field = on_header_field;
    settings.on_header_value = on_header_value;
    settings.on_headers_complete = on_headers_complete;
    settings.on_body = on_body;
    settings.on_message_complete = on_message_complete;
}

