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

#include "net/ws_accept.h"
#include "net/ws_input.h"

#include "common/internal.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <wslay/wslay.h>

#define MAX_HEAD (16 * 1024)  /* status line and headers of the 101 */
#define READ_SIZE (64 * 1024)
#define TLS_CHUNK (1 << 20)   /* SSL_write takes an int length */
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

    /* the opening handshake */
    char key[32];    /* Sec-WebSocket-Key (24 characters) */
    char accept[29]; /* the Sec-WebSocket-Accept it calls for */
    hearth__buf head;

    /* frames */
    wslay_event_context_ptr ws;
    const char *in;  /* input being handed to wslay */
    size_t in_len;
    bool in_recv;    /* inside wslay_event_recv */
    hearth__buf out; /* bytes to send, written once per flush */

    /* TLS (NULL for ws://) */
    SSL_CTX *ssl_ctx;
    SSL *ssl;
    BIO *net_in, *net_out; /* ciphertext from and to the socket */

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
    SSL_free(c->ssl); /* and its BIOs */
    SSL_CTX_free(c->ssl_ctx);
    uv_freeaddrinfo(c->addrs);
    hearth__buf_free(&c->head);
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
    size_t pending = BIO_ctrl_pending(c->net_out);
    if (!pending)
        return 0;
    char *data = hearth__malloc(pending);
    if (!data)
        return HEARTH_ENOMEM;
    int n = BIO_read(c->net_out, data, (int)pending);
    if (n <= 0) {
        hearth__free(data);
        return HEARTH_EIO;
    }
    return write_raw(c, data, (size_t)n);
}

static int tls_write(hearth__wsc *c, const char *data, size_t len) {
    ERR_clear_error();
    while (len) {
        int chunk = len < TLS_CHUNK ? (int)len : TLS_CHUNK;
        /* A memory BIO takes everything: no partial writes, no retries. */
        int n = SSL_write(c->ssl, data, chunk);
        if (n <= 0) {
            ERR_clear_error();
            return HEARTH_EIO;
        }
        data += n;
        len -= (size_t)n;
    }
    return tls_flush(c);
}

/* Sends what c->out holds (through TLS when on) and empties it. */
static int flush(hearth__wsc *c) {
    if (c->out.failed) {
        hearth__buf_free(&c->out);
        return HEARTH_ENOMEM;
    }
    if (!c->out.len)
        return 0;
    if (c->ssl) {
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
    if (c->ssl && c->phase >= UPGRADING) {
        ERR_clear_error();
        SSL_shutdown(c->ssl); /* close_notify */
        tls_flush(c);
        ERR_clear_error();
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
    (void)user;
    if (RAND_bytes(buf, (int)len) != 1) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
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
             HEARTH__WSC_MAX_MESSAGE);
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

static int make_key(hearth__wsc *c) {
    unsigned char raw[16];
    if (RAND_bytes(raw, sizeof raw) != 1) {
        ERR_clear_error();
        return HEARTH_EIO;
    }
    EVP_EncodeBlock((unsigned char *)c->key, raw, sizeof raw);
    return hearth__ws_accept_key(c->key, c->accept);
}

static void send_upgrade(hearth__wsc *c) {
    bool v6 = strchr(c->host, ':') != NULL;
    bool default_port = c->port == (c->ssl ? 443 : 80);
    char port[16] = "";
    if (!default_port)
        snprintf(port, sizeof port, ":%d", c->port);
    hearth__buf_printf(&c->out,
                       "GET %s HTTP/1.1\r\n"
                       "Host: %s%s%s%s\r\n"
                       "Upgrade: websocket\r\n"
                       "Connection: Upgrade\r\n"
                       "Sec-WebSocket-Key: %s\r\n"
                       "Sec-WebSocket-Version: 13\r\n"
                       "User-Agent: Hearth/%s\r\n"
                       "\r\n",
                       c->resource, v6 ? "[" : "", c->host, v6 ? "]" : "",
                       port, c->key, hearth_version());
    int rc = flush(c);
    if (rc)
        fail(c, rc, "cannot send the handshake: %s", hearth_strerror(rc));
}

static bool is_space(char ch) { return ch == ' ' || ch == '\t'; }

/* Does the text [s, s+len) equal word, ignoring case? */
static bool same_word(const char *s, size_t len, const char *word) {
    return strlen(word) == len && strncasecmp(s, word, len) == 0;
}

/* Does a comma-separated list hold the token, ignoring case? */
static bool has_token(const char *s, size_t len, const char *token) {
    const char *end = s + len;
    while (s < end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *stop = comma ? comma : end;
        const char *a = s, *b = stop;
        while (a < b && is_space(*a))
            a++;
        while (b > a && is_space(b[-1]))
            b--;
        if (same_word(a, (size_t)(b - a), token))
            return true;
        s = comma ? comma + 1 : end;
    }
    return false;
}

/* The status line, made printable for on_close's text. */
static void describe_status(const char *line, size_t len, char *out,
                            size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < cap && n < 100; i++)
        out[n++] = line[i] >= 0x20 && line[i] < 0x7f ? line[i] : '?';
    out[n] = '\0';
}

/* Checks "HTTP/1.x 101 ..." and returns the status, or -1. */
static int parse_status(const char *line, size_t len) {
    if (len < 12 || memcmp(line, "HTTP/1.", 7) != 0 || line[7] < '0' ||
        line[7] > '9' || line[8] != ' ' || (len > 12 && line[12] != ' '))
        return -1;
    int status = 0;
    for (int i = 9; i < 12; i++) {
        if (line[i] < '0' || line[i] > '9')
            return -1;
        status = status * 10 + (line[i] - '0');
    }
    return status;
}

typedef struct upgrade_seen {
    bool upgrade, connection, accept, extra;
} upgrade_seen;

/* Notes what one header line says about the upgrade; false if malformed. */
static bool header_line(const hearth__wsc *c, const char *line, size_t len,
                        upgrade_seen *seen) {
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line || is_space(line[0]))
        return false; /* also refuses obsolete line folding */
    size_t nlen = (size_t)(colon - line);
    const char *v = colon + 1, *end = line + len;
    while (v < end && is_space(*v))
        v++;
    while (end > v && is_space(end[-1]))
        end--;
    size_t vlen = (size_t)(end - v);
    if (same_word(line, nlen, "upgrade"))
        seen->upgrade = same_word(v, vlen, "websocket");
    else if (same_word(line, nlen, "connection"))
        seen->connection |= has_token(v, vlen, "upgrade");
    else if (same_word(line, nlen, "sec-websocket-accept"))
        seen->accept = vlen == strlen(c->accept) && !memcmp(v, c->accept, vlen);
    else if (same_word(line, nlen, "sec-websocket-extensions") ||
             same_word(line, nlen, "sec-websocket-protocol"))
        seen->extra |= vlen > 0; /* we asked for neither (RFC 6455 4.1) */
    return true;
}

/* Checks the server's answer (head: through the blank line); fails the
 * connection and returns false when it is not a valid upgrade. */
static bool check_response(hearth__wsc *c, const char *head, size_t len) {
    const char *end = head + len;
    const char *eol = memmem(head, len, "\r\n", 2);
    size_t line_len = (size_t)(eol - head);
    int status = parse_status(head, line_len);
    if (status != 101) {
        char line[128];
        describe_status(head, line_len, line, sizeof line);
        if (status < 0)
            fail(c, HEARTH_EIO, "not an HTTP response: \"%s\"", line);
        else
            fail(c, HEARTH_EIO, "the server refused the upgrade: %s", line);
        return false;
    }
    upgrade_seen seen = {0};
    for (const char *p = eol + 2; p < end;) {
        const char *next = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (next == p)
            break; /* the blank line */
        if (!header_line(c, p, (size_t)(next - p), &seen)) {
            fail(c, HEARTH_EIO, "malformed header in the handshake response");
            return false;
        }
        p = next + 2;
    }
    const char *problem = !seen.upgrade      ? "no Upgrade: websocket"
                          : !seen.connection ? "no Connection: Upgrade"
                          : !seen.accept     ? "a wrong Sec-WebSocket-Accept"
                          : seen.extra ? "an extension or subprotocol not asked for"
                                       : NULL;
    if (problem) {
        fail(c, HEARTH_EIO, "bad handshake response: %s", problem);
        return false;
    }
    return true;
}

/* Response bytes while upgrading: the header block may come in any number
 * of pieces, and what follows it already belongs to the frames. */
static void head_in(hearth__wsc *c, const char *data, size_t len) {
    size_t old = c->head.len;
    hearth__buf_add(&c->head, data, len);
    if (c->head.failed) {
        fail(c, HEARTH_ENOMEM, "out of memory");
        return;
    }
    size_t from = old > 3 ? old - 3 : 0;
    const char *blank = memmem(c->head.data + from, c->head.len - from,
                               "\r\n\r\n", 4);
    size_t head_len = blank ? (size_t)(blank + 4 - c->head.data) : c->head.len;
    if (head_len > MAX_HEAD) {
        fail(c, HEARTH_EIO, "the handshake response's headers are too large");
        return;
    }
    if (!blank || !check_response(c, c->head.data, head_len))
        return;
    c->phase = OPEN;
    if (c->cb.on_open)
        c->cb.on_open(c->user);
    if (!c->dead && c->head.len > head_len)
        ws_in(c, c->head.data + head_len, c->head.len - head_len);
    hearth__buf_free(&c->head);
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
    long verify = SSL_get_verify_result(c->ssl);
    unsigned long err = ERR_get_error();
    const char *reason = err ? ERR_reason_error_string(err) : NULL;
    if (verify != X509_V_OK)
        fail(c, HEARTH_EIO, "%s: certificate not trusted: %s", what,
             X509_verify_cert_error_string(verify));
    else
        fail(c, HEARTH_EIO, "%s failed: %s", what,
             reason ? reason : "connection error");
    ERR_clear_error();
}

/* Drives the TLS handshake, then decrypts whatever has arrived. */
static void tls_step(hearth__wsc *c) {
    ERR_clear_error();
    if (c->phase == TLS_HANDSHAKE) {
        int r = SSL_do_handshake(c->ssl);
        if (r != 1) {
            if (SSL_get_error(c->ssl, r) != SSL_ERROR_WANT_READ) {
                tls_flush(c); /* the alert that tells the server why */
                tls_failed(c, "TLS handshake");
                return;
            }
        } else {
            c->phase = UPGRADING;
            send_upgrade(c);
        }
    }
    while (!c->dead && c->phase >= UPGRADING) {
        char plain[16 * 1024];
        int n = SSL_read(c->ssl, plain, sizeof plain);
        if (n > 0) {
            plain_in(c, plain, (size_t)n);
            continue;
        }
        int e = SSL_get_error(c->ssl, n);
        if (e == SSL_ERROR_WANT_READ)
            break;
        if (e == SSL_ERROR_ZERO_RETURN)
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
    if (BIO_write(c->net_in, data, (int)len) != (int)len) {
        ERR_clear_error();
        fail(c, HEARTH_ENOMEM, "out of memory");
        return;
    }
    tls_step(c);
}

static bool is_ip_literal(const char *host) {
    unsigned char addr[16];
    return uv_inet_pton(AF_INET, host, addr) == 0 ||
           uv_inet_pton(AF_INET6, host, addr) == 0;
}

/* A TLS client for host: the system's trust store, peer verification, the
 * host name (or address) checked against the certificate, SNI for names. */
static int tls_setup(hearth__wsc *c) {
    static const unsigned char alpn[] = "\x08http/1.1";
    c->ssl_ctx = SSL_CTX_new(TLS_client_method());
    if (!c->ssl_ctx)
        return HEARTH_ENOMEM;
    SSL_CTX_set_min_proto_version(c->ssl_ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(c->ssl_ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_set_default_verify_paths(c->ssl_ctx) != 1)
        return HEARTH_EIO;
    c->ssl = SSL_new(c->ssl_ctx);
    c->net_in = BIO_new(BIO_s_mem());
    c->net_out = BIO_new(BIO_s_mem());
    if (!c->ssl || !c->net_in || !c->net_out) {
        BIO_free(c->net_in);
        BIO_free(c->net_out);
        c->net_in = c->net_out = NULL;
        return HEARTH_ENOMEM;
    }
    SSL_set_bio(c->ssl, c->net_in, c->net_out); /* the SSL owns them now */
    bool ip = is_ip_literal(c->host);
    int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), c->host)
                : SSL_set_tlsext_host_name(c->ssl, c->host) == 1 &&
                      SSL_set1_host(c->ssl, c->host) == 1;
    if (ok != 1 || SSL_set_alpn_protos(c->ssl, alpn, sizeof alpn - 1) != 0)
        return HEARTH_EIO;
    SSL_set_connect_state(c->ssl);
    return 0;
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
        if (c->ssl)
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
    int rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    if (rc) {
        fail(c, HEARTH_EIO, "cannot read: %s", uv_strerror(rc));
        return;
    }
    if (c->ssl) {
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
    int rc = make_key(c);
    if (!rc && tls)
        rc = tls_setup(c);
    if (!rc && wslay_event_context_client_init(
                   &c->ws,
                   &(struct wslay_event_callbacks){ws_recv, ws_send, ws_genmask,
                                                   NULL, NULL, NULL, ws_message},
                   c) != 0) {
        c->ws = NULL;
        rc = HEARTH_ENOMEM;
    }
    if (rc) {
        ERR_clear_error();
        return rc;
    }
    wslay_event_config_set_max_recv_msg_length(c->ws, HEARTH__WSC_MAX_MESSAGE);
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
    /* A server that goes away would otherwise end the process with SIGPIPE
     * on the next write (as the server does, unless the program chose). */
    struct sigaction pipe_action;
    if (sigaction(SIGPIPE, NULL, &pipe_action) == 0 &&
        pipe_action.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);
    hearth__wsc *c = hearth__calloc(1, sizeof *c);
    if (!c)
        return HEARTH_ENOMEM;
    c->loop = loop;
    c->cb = *cb;
    c->user = user;
    c->port = port;
    c->phase = RESOLVING;
    hearth__buf_init(&c->head);
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
