/* test_ws_client.c - the WebSocket client transport, on the test's own loop:
 * against a real Hearth server (in process, on its own thread) for the
 * hello, requests, large messages in v5 pieces, refusals and closing at
 * awkward moments; and against a scripted peer on the same loop that
 * dribbles its bytes, fragments messages, pings, sends too much, lies in
 * its handshake, hangs up, or speaks TLS with a certificate made here. */
#include "test.h"

#include "server_fixture.h"
#include "ws_wire.h"

#include "client/remote.h"
#include "net/ws_client.h"
#include "net/ws_input.h"
#include "common/internal.h"
#include "net/v5.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

/* ---- a real server ---- */

static hearth_server_t *server_start(void) {
    return start();
}

static void server_stop(hearth_server_t *s) {
    stop(s);
    remove_tree(data_dir);
}

/* ---- the loop ---- */

static void on_guard(uv_timer_t *t) { *(bool *)t->data = true; }

/* Runs the loop until done(arg) or 10 s pass; false on time out. */
static bool run_until(uv_loop_t *loop, bool (*done)(void *), void *arg) {
    bool expired = false;
    uv_timer_t guard;
    uv_timer_init(loop, &guard);
    guard.data = &expired;
    uv_timer_start(&guard, on_guard, 10000, 0);
    while (!done(arg) && !expired)
        uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(loop, UV_RUN_NOWAIT); /* the guard's close */
    CHECK(!expired);
    return !expired;
}

/* Runs the loop until nothing is left, then checks that it closes: the
 * transport released every handle. */
static void drain(uv_loop_t *loop) {
    uv_run(loop, UV_RUN_DEFAULT);
    CHECK_INT(uv_loop_close(loop), 0);
}

/* ---- a probe: the owner of one transport, recording what it sees ---- */

typedef struct probe probe;
struct probe {
    hearth__wsc *c;
    int opens, closes, status;
    char why[256];
    int late; /* callbacks after our own close */
    bool closed_by_us;
    /* transport messages, and v5 messages with their pieces joined */
    int nmsgs;
    char *msgs[256];
    int nv5;
    char *v5[16];
    long pieces_left;
    hearth__buf joining;
    /* behaviour */
    const char *send_on_open;
    bool close_on_open;
    int close_on_message; /* close when this many messages arrived */
    bool close_in_on_close;
    void (*hook)(probe *p, const char *text, size_t len);
};

static void probe_init(probe *p) {
    memset(p, 0, sizeof *p);
    hearth__buf_init(&p->joining);
}

static void probe_free(probe *p) {
    for (int i = 0; i < p->nmsgs; i++)
        free(p->msgs[i]);
    for (int i = 0; i < p->nv5; i++)
        free(p->v5[i]);
    hearth__buf_free(&p->joining);
}

static void our_close(probe *p) {
    p->closed_by_us = true;
    hearth__wsc_close(p->c);
}

static void add_v5(probe *p, const char *text, size_t len) {
    if (p->nv5 < (int)HEARTH__ARRAY_SIZE(p->v5))
        p->v5[p->nv5++] = strndup(text, len);
}

/* The v5 framing: a message of only digits announces that many pieces. */
static void join_v5(probe *p, const char *text, size_t len) {
    if (p->pieces_left > 0) {
        hearth__buf_add(&p->joining, text, len);
        if (--p->pieces_left == 0) {
            add_v5(p, p->joining.data, p->joining.len);
            hearth__buf_free(&p->joining);
        }
        return;
    }
    bool digits = len > 0 && len < 7;
    long n = 0;
    for (size_t i = 0; digits && i < len; i++) {
        digits = text[i] >= '0' && text[i] <= '9';
        n = n * 10 + (text[i] - '0');
    }
    if (digits)
        p->pieces_left = n;
    else
        add_v5(p, text, len);
}

static void p_open(void *user) {
    probe *p = user;
    p->late += p->closed_by_us;
    p->opens++;
    if (p->send_on_open)
        CHECK_INT(hearth__wsc_send(p->c, p->send_on_open, strlen(p->send_on_open)),
                  0);
    if (p->close_on_open)
        our_close(p);
}

static void p_message(void *user, const char *text, size_t len) {
    probe *p = user;
    p->late += p->closed_by_us;
    if (p->nmsgs < (int)HEARTH__ARRAY_SIZE(p->msgs))
        p->msgs[p->nmsgs++] = strndup(text, len);
    join_v5(p, text, len);
    if (p->hook)
        p->hook(p, text, len);
    if (p->close_on_message && p->nmsgs == p->close_on_message)
        our_close(p);
}

static void p_close(void *user, int status, const char *why) {
    probe *p = user;
    p->late += p->closed_by_us;
    p->closes++;
    p->status = status;
    snprintf(p->why, sizeof p->why, "%s", why);
    if (p->close_in_on_close)
        hearth__wsc_close(p->c); /* a no-op */
    p->c = NULL;
}

static const hearth__wsc_callbacks probe_cb = {p_open, p_message, p_close};

static void connect_probe(uv_loop_t *loop, probe *p, const char *host,
                          int port, const char *resource, bool tls) {
    CHECK_INT(hearth__wsc_connect(loop, host, port, resource, tls, &probe_cb, p,
                                  &p->c),
              0);
}

static bool got_close(void *arg) { return ((probe *)arg)->closes > 0; }
static bool got_open(void *arg) { return ((probe *)arg)->opens > 0; }
static bool got_v5_1(void *arg) { return ((probe *)arg)->nv5 >= 1; }
static bool got_v5_2(void *arg) { return ((probe *)arg)->nv5 >= 2; }
static bool got_v5_3(void *arg) { return ((probe *)arg)->nv5 >= 3; }

/* CHECKs that text is the JSON `expected` (same shape, any key order). */
static void check_json(const char *text, const char *expected) {
    json_t *a = text ? json_loads(text, 0, NULL) : NULL;
    json_t *b = json_loads(expected, 0, NULL);
    CHECK(b != NULL);
    if (!a || !json_equal(a, b))
        fprintf(stderr, "  got %.200s\n  expected %.200s\n",
                text ? text : "(null)", expected);
    CHECK(a && json_equal(a, b));
    json_decref(a);
    json_decref(b);
}

/* The server's hello: {"t":"c","d":{"t":"h","d":{"ts":..,"v":"5",..}}}. */
static void check_hello(const char *text) {
    json_t *m = text ? json_loads(text, 0, NULL) : NULL;
    json_t *d = json_object_get(m, "d");
    json_t *h = json_object_get(d, "d");
    CHECK_STR(json_string_value(json_object_get(m, "t")), "c");
    CHECK_STR(json_string_value(json_object_get(d, "t")), "h");
    CHECK_STR(json_string_value(json_object_get(h, "v")), "5");
    CHECK(json_integer_value(json_object_get(h, "ts")) > 1700000000000LL);
    CHECK(json_is_string(json_object_get(h, "h")));
    CHECK(json_is_string(json_object_get(h, "s")));
    json_decref(m);
}

/* ---- against the real server ---- */

static void test_hello(void) {
    hearth_server_t *s = server_start();
    uv_loop_t loop;
    uv_loop_init(&loop);
    probe p;
    probe_init(&p);
    connect_probe(&loop, &p, "127.0.0.1", hearth_server_port(s),
                  "/.ws?v=5&ns=demo", false);
    CHECK_INT(hearth__wsc_send(p.c, "x", 1), HEARTH_ECLOSED); /* not open */
    run_until(&loop, got_v5_1, &p);
    CHECK_INT(p.opens, 1);
    check_hello(p.v5[0]);
    our_close(&p);
    drain(&loop);
    CHECK_INT(p.closes, 0);
    CHECK_INT(p.late, 0);
    probe_free(&p);
    server_stop(s);
}

/* By name, as a user would give it. */
static void test_localhost(void) {
    hearth_server_t *s = server_start();
    uv_loop_t loop;
    uv_loop_init(&loop);
    probe p;
    probe_init(&p);
    connect_probe(&loop, &p, "localhost", hearth_server_port(s),
                  "/.ws?v=5&ns=demo", false);
    run_until(&loop, got_v5_1, &p);
    check_hello(p.v5[0]);
    our_close(&p);
    drain(&loop);
    CHECK_INT(p.closes, 0);
    probe_free(&p);
    server_stop(s);
}

/* Sends the put from inside on_message, on the hello. */
static void put_on_hello(probe *p, const char *text, size_t len) {
    (void)text;
    (void)len;
    if (p->nmsgs == 1) {
        const char *put = "{\"t\":\"d\",\"d\":{\"r\":1,\"a\":\"p\",\"b\":{\"p\":\"/x\",\"d\":42}}}";
        CHECK_INT(hearth__wsc_send(p->c, put, strlen(put)), 0);
    }
}

static void test_put_and_get(void) {
    hearth_server_t *s = server_start();
    uv_loop_t loop;
    uv_loop_init(&loop);
    probe p;
    probe_init(&p);
    p.hook = put_on_hello;
    connect_probe(&loop, &p, "127.0.0.1", hearth_server_port(s),
                  "/.ws?v=5&ns=demo", false);
    run_until(&loop, got_v5_2, &p);
    check_json(p.v5[1], "{\"t\":\"d\",\"d\":{\"r\":1,\"b\":{\"s\":\"ok\",\"d\":{}}}}");
    CHECK_INT(hearth__wsc_pending(p.c), 0); /* all written: it was answered */
    const char *get = "{\"t\":\"d\",\"d\":{\"r\":2,\"a\":\"g\",\"b\":{\"p\":\"/x\",\"q\":{}}}}";
    CHECK_INT(hearth__wsc_send(p.c, get, strlen(get)), 0);
    run_until(&loop, got_v5_3, &p);
    check_json(p.v5[2], "{\"t\":\"d\",\"d\":{\"r\":2,\"b\":{\"s\":\"ok\",\"d\":42}}}");
    our_close(&p);
    drain(&loop);
    CHECK_INT(p.closes, 0);
    probe_free(&p);
    server_stop(s);
}

/* 200 KB up in one frame; back in v5 pieces, each a message of its own. */
static void test_large_message(void) {
    enum { SIZE = 200 * 1024 };
    char *big = malloc(SIZE + 1);
    for (size_t i = 0; i < SIZE; i++)
        big[i] = (char)('a' + i % 26);
    big[SIZE] = '\0';
    hearth__buf put, reply;
    hearth__buf_init(&put);
    hearth__buf_init(&reply);
    hearth__buf_printf(&put, "{\"t\":\"d\",\"d\":{\"r\":1,\"a\":\"p\",\"b\":"
                             "{\"p\":\"/x\",\"d\":\"%s\"}}}", big);
    hearth__buf_printf(&reply, "{\"t\":\"d\",\"d\":{\"r\":2,\"b\":{\"s\":\"ok\","
                               "\"d\":\"%s\"}}}", big);
    hearth_server_t *s = server_start();
    uv_loop_t loop;
    uv_loop_init(&loop);
    probe p;
    probe_init(&p);
    connect_probe(&loop, &p, "127.0.0.1", hearth_server_port(s),
                  "/.ws?v=5&ns=demo", false);
    run_until(&loop, got_v5_1, &p);
    CHECK_INT(hearth__wsc_send(p.c, put.data, put.len), 0);
    run_until(&loop, got_v5_2, &p);
    check_json(p.v5[1], "{\"t\":\"d\",\"d\":{\"r\":1,\"b\":{\"s\":\"ok\",\"d\":{}}}}");
    const char *get = "{\"t\":\"d\",\"d\":{\"r\":2,\"a\":\"g\",\"b\":{\"p\":\"/x\",\"q\":{}}}}";
    int before = p.nmsgs;
    CHECK_INT(hearth__wsc_send(p.c, get, strlen(get)), 0);
    run_until(&loop, got_v5_3, &p);
    CHECK(p.nmsgs - before > 2); /* a count, then pieces */
    CHECK(p.v5[2] && strcmp(p.v5[2], reply.data) == 0);
    our_close(&p);
    drain(&loop);
    CHECK_INT(p.closes, 0);
    probe_free(&p);
    server_stop(s);
    hearth__buf_free(&put);
    hearth__buf_free(&reply);
    free(big);
}

static int closed_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    CHECK_INT(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_INT(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd); /* bound, never listening, now free: connections are refused */
    return ntohs(a.sin_port);
}

static void test_connection_refused(void) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    probe p;
    probe_init(&p);
    p.close_in_on_close = true;
    connect_probe(&loop, &p, "127.0.0.1", closed_port(), "/.ws", false);
    CHECK_INT(p.closes, 0); /* never from inside connect */
    drain(&loop);
    CHECK_INT(p.opens, 0);
    CHECK_INT(p.closes, 1);
    CHECK_INT(p.status, HEARTH_EIO);
    CHECK(strstr(p.why, "refused") != NULL);
    probe_free(&p);
}

static void test_unknown_host(void) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    probe p;
    probe_init(&p);
    connect_probe(&loop, &p, "no-such-host.invalid", 80, "/.ws", false);
    drain(&loop);
    CHECK_INT(p.closes, 1);
    CHECK_INT(p.status, HEARTH_EIO);
    CHECK(strstr(p.why, "no-such-host.invalid") != NULL);
    probe_free(&p);
}

/* A path that answers without upgrading: the error names the status. */
static void test_not_upgraded(void) {
    hearth_server_t *s = server_start();
    uv_loop_t loop;
    uv_loop_init(&loop);
    probe p, q;
    probe_init(&p);
    probe_init(&q);
    connect_probe(&loop, &p, "127.0.0.1", hearth_server_port(s), "/x.json",
                  false);
    connect_probe(&loop, &q, "127.0.0.1", hearth_server_port(s), "/x", false);
    drain(&loop);
    CHECK_INT(p.opens, 0);
    CHECK_INT(p.closes, 1);
    CHECK_INT(p.status, HEARTH_EIO);
    CHECK(strstr(p.why, "HTTP/1.1 200 OK") != NULL);
    CHECK_INT(q.closes, 1);
    CHECK(strstr(q.why, "HTTP/1.1 404 Not Found") != NULL);
    probe_free(&p);
    probe_free(&q);
    server_stop(s);
}

static void test_bad_arguments(void) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    probe p;
    probe_init(&p);
    hearth__wsc *c = NULL;
    CHECK_INT(hearth__wsc_connect(&loop, "127.0.0.1", 0, "/", false, &probe_cb, &p, &c),
              HEARTH_EINVAL);
    CHECK_INT(hearth__wsc_connect(&loop, "127.0.0.1", 65536, "/", false, &probe_cb, &p, &c),
              HEARTH_EINVAL);
    CHECK_INT(hearth__wsc_connect(&loop, "127.0.0.1", 80, "x", false, &probe_cb, &p, &c),
              HEARTH_EINVAL);
    CHECK_INT(hearth__wsc_connect(&loop, "127.0.0.1", 80, "/a\r\nX: y", false,
                                  &probe_cb, &p, &c),
              HEARTH_EINVAL);
    CHECK_INT(hearth__wsc_connect(&loop, "bad host", 80, "/", false, &probe_cb, &p, &c),
              HEARTH_EINVAL);
    CHECK_INT(hearth__wsc_connect(&loop, "", 80, "/", false, &probe_cb, &p, &c),
              HEARTH_EINVAL);
    CHECK(c == NULL);
    drain(&loop);
    CHECK_INT(p.closes, 0);
    probe_free(&p);
}

/* Each allocation of connect failing in turn: HEARTH_ENOMEM, nothing kept. */
static void test_connect_out_of_memory(void) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    probe p;
    probe_init(&p);
    int rc = HEARTH_ENOMEM;
    for (long n = 0; rc == HEARTH_ENOMEM && n < 100; n++) {
        hearth__alloc_fail_after(n);
        rc = hearth__wsc_connect(&loop, "127.0.0.1", 9, "/.ws", true, &probe_cb,
                                 &p, &p.c);
        hearth__alloc_fail_after(-1);
    }
    CHECK_INT(rc, 0);
    our_close(&p);
    drain(&loop);
    CHECK_INT(p.closes + p.opens, 0);
    probe_free(&p);
}

/* Closing while the name is being resolved, and from inside on_open. */
static void test_close_early(void) {
    hearth_server_t *s = server_start();
    uv_loop_t loop;
    uv_loop_init(&loop);
    probe p, q;
    probe_init(&p);
    probe_init(&q);
    q.close_on_open = true;
    q.send_on_open = "{\"t\":\"c\",\"d\":{\"t\":\"p\",\"d\":{}}}";
    connect_probe(&loop, &p, "localhost", hearth_server_port(s), "/.ws", false);
    connect_probe(&loop, &q, "127.0.0.1", hearth_server_port(s), "/.ws", false);
    our_close(&p);
    drain(&loop);
    CHECK_INT(p.opens + p.closes + p.nmsgs, 0);
    CHECK_INT(q.opens, 1);
    CHECK_INT(q.closes + q.nmsgs + q.late, 0);
    probe_free(&p);
    probe_free(&q);
    server_stop(s);
}

static void test_close_in_message(void) {
    hearth_server_t *s = server_start();
    uv_loop_t loop;
    uv_loop_init(&loop);
    probe p;
    probe_init(&p);
    p.close_on_message = 1;
    connect_probe(&loop, &p, "127.0.0.1", hearth_server_port(s),
                  "/.ws?v=5&ns=demo", false);
    drain(&loop);
    CHECK_INT(p.nmsgs, 1);
    CHECK_INT(p.closes, 0);
    CHECK_INT(p.late, 0);
    probe_free(&p);
    server_stop(s);
}

/* Megabytes queued, then closed at once: nothing leaks, nothing is called. */
static void test_close_with_queue(void) {
    enum { SIZE = 1024 * 1024 };
    hearth__buf put;
    hearth__buf_init(&put);
    hearth__buf_adds(&put, "{\"t\":\"d\",\"d\":{\"r\":1,\"a\":\"p\",\"b\":{\"p\":\"/q\",\"d\":\"");
    for (int i = 0; i < SIZE; i++)
        hearth__buf_addc(&put, 'q');
    hearth__buf_adds(&put, "\"}}}");
    hearth_server_t *s = server_start();
    uv_loop_t loop;
    uv_loop_init(&loop);
    probe p;
    probe_init(&p);
    connect_probe(&loop, &p, "127.0.0.1", hearth_server_port(s),
                  "/.ws?v=5&ns=demo", false);
    run_until(&loop, got_open, &p);
    for (int i = 0; i < 16; i++)
        CHECK_INT(hearth__wsc_send(p.c, put.data, put.len), 0);
    CHECK(hearth__wsc_pending(p.c) > 0);
    our_close(&p);
    drain(&loop);
    CHECK_INT(p.closes, 0);
    CHECK_INT(p.late, 0);
    probe_free(&p);
    server_stop(s);
    hearth__buf_free(&put);
}

/* ---- a scripted peer on the test's loop ---- */

typedef struct peer {
    uv_loop_t *loop;
    uv_tcp_t listener, conn;
    uv_timer_t tick;
    bool has_conn, has_tick;
    int port;
    /* what it says: a 101 (with a wrong accept, or extra headers, when
     * asked), then the script, `chunk` bytes per loop turn (0: at once) */
    bool wrong_accept;
    char *extra_headers;
    const char *raw_head; /* said instead of the 101, when set */
    hearth__buf script;
    size_t chunk;
    bool hangup; /* close the connection after the script */
    const char *resource; /* what the client must ask for ("/chat?x=1") */
    int connections;      /* attempts, the ones not accepted included */
    /* TLS, when ssl_ctx is set */
    SSL_CTX *ssl_ctx;
    SSL *ssl;
    BIO *rbio, *wbio;
    /* state */
    hearth__buf in, out;
    size_t out_off;
    bool answered;
    /* what the client sent after the handshake */
    int texts, pongs, closes;
    unsigned close_code;
    bool unmasked;
    char last_text[64], last_pong[64];
} peer;

static void peer_write(peer *pr, const char *data, size_t len);

static void free_write(uv_write_t *req, int status) {
    (void)status;
    free(req->data);
    free(req);
}

static void raw_write(peer *pr, const char *data, size_t len) {
    if (!pr->has_conn || uv_is_closing((uv_handle_t *)&pr->conn))
        return;
    uv_write_t *req = malloc(sizeof *req);
    req->data = malloc(len ? len : 1);
    memcpy(req->data, data, len);
    uv_buf_t b = uv_buf_init(req->data, (unsigned)len);
    if (uv_write(req, (uv_stream_t *)&pr->conn, &b, 1, free_write)) {
        free(req->data);
        free(req);
    }
}

static void tls_flush_peer(peer *pr) {
    char buf[16384];
    int n;
    while ((n = BIO_read(pr->wbio, buf, sizeof buf)) > 0)
        raw_write(pr, buf, (size_t)n);
}

static void peer_write(peer *pr, const char *data, size_t len) {
    if (!pr->ssl) {
        raw_write(pr, data, len);
        return;
    }
    if (len)
        CHECK(SSL_write(pr->ssl, data, (int)len) == (int)len);
    tls_flush_peer(pr);
}

static void on_peer_closed(uv_handle_t *h) { (void)h; }

static void on_shutdown(uv_shutdown_t *req, int status) {
    (void)status;
    uv_close((uv_handle_t *)req->handle, on_peer_closed);
    free(req);
}

static void hang_up(peer *pr) {
    uv_shutdown_t *req = malloc(sizeof *req);
    if (uv_shutdown(req, (uv_stream_t *)&pr->conn, on_shutdown)) {
        free(req);
        uv_close((uv_handle_t *)&pr->conn, on_peer_closed);
    }
}

/* One chunk of the answer per loop turn, so that the client reads it in
 * as many pieces. */
static void on_tick(uv_timer_t *t) {
    peer *pr = t->data;
    size_t left = pr->out.len - pr->out_off;
    size_t n = pr->chunk && pr->chunk < left ? pr->chunk : left;
    peer_write(pr, pr->out.data + pr->out_off, n);
    pr->out_off += n;
    if (pr->out_off == pr->out.len) {
        uv_timer_stop(t);
        if (pr->hangup)
            hang_up(pr);
    }
}

static void answer(peer *pr, const char *key) {
    char accept[32];
    CHECK(ws_wire_accept(key, accept));
    if (pr->wrong_accept)
        accept[0] = accept[0] == 'A' ? 'B' : 'A';
    if (pr->raw_head)
        hearth__buf_add(&pr->out, pr->raw_head, strlen(pr->raw_head));
    else
        hearth__buf_printf(&pr->out,
                           "HTTP/1.1 101 Switching Protocols\r\n"
                           "upgrade: WebSocket\r\n"
                           "Connection: keep-alive, Upgrade\r\n"
                           "Sec-WebSocket-Accept:  %s \r\n%s\r\n",
                           accept,
                           pr->extra_headers ? pr->extra_headers : "");
    hearth__buf_add(&pr->out, pr->script.data, pr->script.len);
    uv_timer_start(&pr->tick, on_tick, 0, pr->chunk ? 1 : 0);
}

/* One frame from the client (which must mask); 0 while incomplete. */
static size_t client_frame(peer *pr, const unsigned char *d, size_t n) {
    ws_wire_frame f;
    if (!ws_wire_parse(d, n, &f) || n - f.head < f.len)
        return 0;
    size_t at = f.head, len = (size_t)f.len;
    int opcode = f.opcode;
    char payload[64] = "";
    size_t keep = len < sizeof payload - 1 ? len : sizeof payload - 1;
    memcpy(payload, d + at, keep);
    if (f.masked)
        ws_wire_mask(payload, keep, f.key);
    pr->unmasked |= !f.masked;
    if (opcode == 1) {
        pr->texts++;
        snprintf(pr->last_text, sizeof pr->last_text, "%s", payload);
    } else if (opcode == 0xA) {
        pr->pongs++;
        snprintf(pr->last_pong, sizeof pr->last_pong, "%s", payload);
    } else if (opcode == 8) {
        pr->closes++;
        pr->close_code = len >= 2 ? (unsigned)(unsigned char)payload[0] << 8 |
                                        (unsigned char)payload[1]
                                  : 0;
    }
    return at + len;
}

static void peer_plain(peer *pr, const char *data, size_t len) {
    hearth__buf_add(&pr->in, data, len);
    if (!pr->answered) {
        char *end = strstr(pr->in.data, "\r\n\r\n");
        if (!end)
            return;
        char key[64] = "";
        const char *k = strstr(pr->in.data, "Sec-WebSocket-Key: ");
        if (k)
            sscanf(k + 19, "%63[^\r]", key);
        char line[300];
        snprintf(line, sizeof line, "GET %s HTTP/1.1\r\n",
                 pr->resource ? pr->resource : "/chat?x=1");
        CHECK(strstr(pr->in.data, line) == pr->in.data);
        CHECK(strstr(pr->in.data, "Sec-WebSocket-Version: 13\r\n") != NULL);
        CHECK_INT(strlen(key), 24);
        pr->answered = true;
        size_t used = (size_t)(end + 4 - pr->in.data);
        memmove(pr->in.data, end + 4, pr->in.len - used);
        pr->in.len -= used;
        answer(pr, key);
    }
    size_t n;
    while ((n = client_frame(pr, (unsigned char *)pr->in.data, pr->in.len))) {
        memmove(pr->in.data, pr->in.data + n, pr->in.len - n);
        pr->in.len -= n;
    }
}

static void peer_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf) {
    (void)h;
    *buf = uv_buf_init(malloc(size), (unsigned)size);
}

static void peer_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    peer *pr = s->data;
    if (n < 0 && !uv_is_closing((uv_handle_t *)s))
        uv_close((uv_handle_t *)s, on_peer_closed);
    if (n > 0 && !pr->ssl) {
        peer_plain(pr, buf->base, (size_t)n);
    } else if (n > 0) {
        BIO_write(pr->rbio, buf->base, (int)n);
        if (!SSL_is_init_finished(pr->ssl))
            SSL_do_handshake(pr->ssl);
        char plain[4096];
        int got;
        while (SSL_is_init_finished(pr->ssl) &&
               (got = SSL_read(pr->ssl, plain, sizeof plain)) > 0)
            peer_plain(pr, plain, (size_t)got);
        tls_flush_peer(pr);
    }
    free(buf->base);
}

static void on_peer_connection(uv_stream_t *listener, int status) {
    peer *pr = listener->data;
    pr->connections++;
    if (status < 0 || pr->has_conn)
        return;
    uv_tcp_init(pr->loop, &pr->conn);
    pr->conn.data = pr;
    pr->has_conn = true;
    CHECK_INT(uv_accept(listener, (uv_stream_t *)&pr->conn), 0);
    if (pr->ssl_ctx) {
        pr->ssl = SSL_new(pr->ssl_ctx);
        pr->rbio = BIO_new(BIO_s_mem());
        pr->wbio = BIO_new(BIO_s_mem());
        SSL_set_bio(pr->ssl, pr->rbio, pr->wbio);
        SSL_set_accept_state(pr->ssl);
    }
    uv_read_start((uv_stream_t *)&pr->conn, peer_alloc, peer_read);
}

static void peer_init(peer *pr, uv_loop_t *loop) {
    memset(pr, 0, sizeof *pr);
    pr->loop = loop;
    hearth__buf_init(&pr->script);
    hearth__buf_init(&pr->in);
    hearth__buf_init(&pr->out);
}

static void peer_listen(peer *pr) {
    uv_tcp_init(pr->loop, &pr->listener);
    pr->listener.data = pr;
    uv_timer_init(pr->loop, &pr->tick);
    pr->tick.data = pr;
    pr->has_tick = true;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    CHECK_INT(uv_tcp_bind(&pr->listener, (struct sockaddr *)&a, 0), 0);
    CHECK_INT(uv_listen((uv_stream_t *)&pr->listener, 8, on_peer_connection), 0);
    int len = sizeof a;
    uv_tcp_getsockname(&pr->listener, (struct sockaddr *)&a, &len);
    pr->port = ntohs(a.sin_port);
}

static void peer_stop(peer *pr) {
    uv_close((uv_handle_t *)&pr->listener, on_peer_closed);
    if (pr->has_tick)
        uv_close((uv_handle_t *)&pr->tick, on_peer_closed);
    if (pr->has_conn && !uv_is_closing((uv_handle_t *)&pr->conn))
        uv_close((uv_handle_t *)&pr->conn, on_peer_closed);
}

static void peer_free(peer *pr) {
    SSL_free(pr->ssl);
    SSL_CTX_free(pr->ssl_ctx);
    free(pr->extra_headers);
    hearth__buf_free(&pr->script);
    hearth__buf_free(&pr->in);
    hearth__buf_free(&pr->out);
}

/* A frame from the server: unmasked. */
static void frame(hearth__buf *b, bool fin, int opcode, const char *payload,
                  size_t len) {
    unsigned char head[WS_WIRE_HEAD_MAX]; /* a server's: unmasked */
    hearth__buf_add(b, head, ws_wire_head(head, (fin ? 0x80 : 0) | opcode, len, NULL));
    hearth__buf_add(b, payload, len);
}

static void text(hearth__buf *b, const char *s) {
    frame(b, true, 1, s, strlen(s));
}

static bool peer_got_close(void *arg) { return ((peer *)arg)->closes > 0; }

/* Runs one client against the peer until on_close (or our own close). */
static void run_against(uv_loop_t *loop, peer *pr, probe *p) {
    connect_probe(loop, p, "127.0.0.1", pr->port, "/chat?x=1", false);
    if (!p->close_on_message)
        run_until(loop, got_close, p);
    else
        while (!p->closed_by_us && uv_run(loop, UV_RUN_ONCE))
            ;
}

/* The handshake one byte per read, a message in fragments with a ping
 * between them, then a close from the server. */
static void test_dribbled_and_fragmented(void) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    peer pr;
    peer_init(&pr, &loop);
    pr.chunk = 1;
    frame(&pr.script, false, 1, "Hel", 3);
    frame(&pr.script, true, 9, "p!", 2);
    frame(&pr.script, false, 0, "lo, ", 4);
    frame(&pr.script, true, 0, "world", 5);
    text(&pr.script, "");
    frame(&pr.script, true, 8, "\x03\xe8" "bye", 5);
    peer_listen(&pr);
    probe p;
    probe_init(&p);
    run_against(&loop, &pr, &p);
    CHECK_INT(p.opens, 1);
    CHECK_INT(p.nmsgs, 2);
    CHECK_STR(p.msgs[0], "Hello, world");
    CHECK_STR(p.msgs[1], "");
    CHECK_INT(p.status, 0);
    CHECK(strstr(p.why, "1000") && strstr(p.why, "bye"));
    run_until(&loop, peer_got_close, &pr);
    peer_stop(&pr);
    drain(&loop);
    CHECK_INT(pr.pongs, 1);
    CHECK_STR(pr.last_pong, "p!");
    CHECK_INT(pr.closes, 1); /* the reply to the server's close */
    CHECK_INT(pr.close_code, 1000);
    CHECK(!pr.unmasked);
    probe_free(&p);
    peer_free(&pr);
}

/* The header and frames in one read: what follows the header is frames;
 * closing on the first message drops the rest and says goodbye. */
static void test_frames_behind_header(void) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    peer pr;
    peer_init(&pr, &loop);
    text(&pr.script, "one");
    text(&pr.script, "two");
    text(&pr.script, "three");
    peer_listen(&pr);
    probe p;
    probe_init(&p);
    p.close_on_message = 1;
    run_against(&loop, &pr, &p);
    run_until(&loop, peer_got_close, &pr);
    peer_stop(&pr);
    drain(&loop);
    CHECK_INT(p.nmsgs, 1);
    CHECK_STR(p.msgs[0], "one");
    CHECK_INT(p.closes + p.late, 0);
    CHECK_INT(pr.closes, 1);
    CHECK_INT(pr.close_code, 1000);
    probe_free(&p);
    peer_free(&pr);
}

/* A 1 MiB message in one frame, read in 64 KB pieces; a reply from inside
 * on_message goes out masked. */
static void echo_first(probe *p, const char *text, size_t len) {
    (void)text;
    if (p->nmsgs == 1) {
        char note[32];
        snprintf(note, sizeof note, "got %zu", len);
        CHECK_INT(hearth__wsc_send(p->c, note, strlen(note)), 0);
    }
}

static bool peer_got_text(void *arg) { return ((peer *)arg)->texts > 0; }

static void test_large_frame(void) {
    enum { SIZE = 1 << 20 };
    uv_loop_t loop;
    uv_loop_init(&loop);
    peer pr;
    peer_init(&pr, &loop);
    pr.chunk = 64 * 1024;
    char *big = malloc(SIZE);
    for (size_t i = 0; i < SIZE; i++)
        big[i] = (char)('A' + i % 26);
    frame(&pr.script, true, 1, big, SIZE);
    peer_listen(&pr);
    probe p;
    probe_init(&p);
    p.hook = echo_first;
    connect_probe(&loop, &p, "127.0.0.1", pr.port, "/chat?x=1", false);
    run_until(&loop, peer_got_text, &pr);
    CHECK_INT(p.nmsgs, 1);
    CHECK(p.msgs[0] && memcmp(p.msgs[0], big, SIZE) == 0);
    CHECK_STR(pr.last_text, "got 1048576");
    CHECK(!pr.unmasked);
    our_close(&p);
    peer_stop(&pr);
    drain(&loop);
    CHECK_INT(p.closes + p.late, 0);
    probe_free(&p);
    peer_free(&pr);
    free(big);
}

/* A frame announcing more than the limit: HEARTH_ETOOBIG, and a 1009. */
static void test_too_big(void) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    peer pr;
    peer_init(&pr, &loop);
    unsigned char head[WS_WIRE_HEAD_MAX];
    hearth__buf_add(&pr.script, head,
                    ws_wire_head(head, 0x81, HEARTH__WS_MAX_MESSAGE + 1, NULL));
    char some[1000];
    memset(some, 'z', sizeof some);
    hearth__buf_add(&pr.script, some, sizeof some);
    peer_listen(&pr);
    probe p;
    probe_init(&p);
    run_against(&loop, &pr, &p);
    CHECK_INT(p.nmsgs, 0);
    CHECK_INT(p.closes, 1);
    CHECK_INT(p.status, HEARTH_ETOOBIG);
    run_until(&loop, peer_got_close, &pr);
    peer_stop(&pr);
    drain(&loop);
    CHECK_INT(pr.close_code, 1009);
    probe_free(&p);
    peer_free(&pr);
}

/* Runs a client against pr (set up, not yet listening) and checks that
 * it gives up before opening, with `expect` in the close text. */
static void expect_refused(uv_loop_t *loop, peer *pr, const char *expect) {
    text(&pr->script, "never seen");
    peer_listen(pr);
    probe p;
    probe_init(&p);
    run_against(loop, pr, &p);
    CHECK_INT(p.opens + p.nmsgs, 0);
    CHECK_INT(p.closes, 1);
    CHECK_INT(p.status, HEARTH_EIO);
    if (!strstr(p.why, expect))
        fprintf(stderr, "  expected \"%s\": %s\n", expect, p.why);
    CHECK(strstr(p.why, expect) != NULL);
    peer_stop(pr);
    drain(loop);
    probe_free(&p);
    peer_free(pr);
}

static void test_bad_handshakes(void) {
    static const char *const expect[] = {"Sec-WebSocket-Accept",
                                         "subprotocol", "too large"};
    for (int i = 0; i < 3; i++) {
        uv_loop_t loop;
        uv_loop_init(&loop);
        peer pr;
        peer_init(&pr, &loop);
        pr.wrong_accept = i == 0;
        if (i == 1) {
            pr.extra_headers = strdup("Sec-WebSocket-Protocol: chat\r\n");
        } else if (i == 2) {
            pr.extra_headers = malloc(20000 + 16);
            strcpy(pr.extra_headers, "X-Filler: ");
            memset(pr.extra_headers + 10, 'f', 20000);
            strcpy(pr.extra_headers + 20010, "\r\n");
        }
        expect_refused(&loop, &pr, expect[i]);
    }
}

/* Answers that are not a valid upgrade, each named in the close text:
 * not HTTP at all, a folded header line, an upgrade without
 * Connection: Upgrade, a refusal in HTTP/1.0. */
static void test_handshake_answers(void) {
    static const struct {
        const char *head, *expect;
    } cases[] = {
        {"SSH-2.0-OpenSSH_9.6\r\n\r\n",
         "not an HTTP response: \"SSH-2.0-OpenSSH_9.6\""},
        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
         "Connection: Upgrade\r\n folded\r\n\r\n",
         "malformed header"},
        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
         "no Connection: Upgrade"},
        {"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 2\r\n\r\nno",
         "the server refused the upgrade: HTTP/1.0 503 Service Unavailable"},
    };
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(cases); i++) {
        uv_loop_t loop;
        uv_loop_init(&loop);
        peer pr;
        peer_init(&pr, &loop);
        pr.raw_head = cases[i].head;
        pr.chunk = i == 1 ? 1 : 0; /* one byte per turn: the fold split */
        expect_refused(&loop, &pr, cases[i].expect);
    }
}

/* The server hangs up without a close frame. */
static void test_hang_up(void) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    peer pr;
    peer_init(&pr, &loop);
    pr.hangup = true;
    text(&pr.script, "last words");
    peer_listen(&pr);
    probe p;
    probe_init(&p);
    run_against(&loop, &pr, &p);
    CHECK_INT(p.nmsgs, 1);
    CHECK_INT(p.closes, 1);
    CHECK_INT(p.status, HEARTH_EIO);
    CHECK(strstr(p.why, "without a close frame") != NULL);
    peer_stop(&pr);
    drain(&loop);
    probe_free(&p);
    peer_free(&pr);
}

/* ---- TLS against a certificate made here ---- */

static char cert_path[64];

/* A server context with a fresh self-signed certificate for DNS:localhost,
 * also written to cert_path for the client to trust. */
static SSL_CTX *tls_server_ctx(void) {
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               (const unsigned char *)"localhost", -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    X509_EXTENSION *ext =
        X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "DNS:localhost");
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    CHECK(X509_sign(x, key, EVP_sha256()) > 0);
    strcpy(cert_path, "/tmp/hearth-wsc-cert-XXXXXX");
    int fd = mkstemp(cert_path);
    FILE *f = fdopen(fd, "w");
    PEM_write_X509(f, x);
    fclose(f);
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    CHECK_INT(SSL_CTX_use_certificate(ctx, x), 1);
    CHECK_INT(SSL_CTX_use_PrivateKey(ctx, key), 1);
    X509_free(x);
    EVP_PKEY_free(key);
    return ctx;
}

/* One TLS connection to the peer; returns what the probe saw. */
static void tls_case(const char *host, bool trust, probe *p, peer *pr) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    peer_init(pr, &loop);
    pr->ssl_ctx = tls_server_ctx();
    if (trust)
        setenv("SSL_CERT_FILE", cert_path, 1);
    text(&pr->script, "over TLS");
    peer_listen(pr);
    probe_init(p);
    p->close_on_message = 1;
    p->send_on_open = "hello from the client";
    CHECK_INT(hearth__wsc_connect(&loop, host, pr->port, "/chat?x=1", true,
                                  &probe_cb, p, &p->c),
              0);
    while (!p->closed_by_us && !p->closes && uv_run(&loop, UV_RUN_ONCE))
        ;
    if (p->closed_by_us)
        run_until(&loop, peer_got_close, pr);
    peer_stop(pr);
    drain(&loop);
    unlink(cert_path);
    unsetenv("SSL_CERT_FILE");
}

static void test_tls(void) {
    probe p;
    peer pr;
    tls_case("localhost", true, &p, &pr);
    CHECK_INT(p.opens, 1);
    CHECK_INT(p.nmsgs, 1);
    CHECK_STR(p.msgs[0], "over TLS");
    CHECK_INT(p.closes + p.late, 0);
    CHECK_INT(pr.texts, 1);
    CHECK_STR(pr.last_text, "hello from the client");
    CHECK_INT(pr.closes, 1);
    probe_free(&p);
    peer_free(&pr);
}

/* A connection to host that never opens: its close says the certificate
 * was refused. */
static void expect_certificate_refused(const char *host, bool trust) {
    probe p;
    peer pr;
    tls_case(host, trust, &p, &pr);
    CHECK_INT(p.opens, 0);
    CHECK_INT(p.closes, 1);
    CHECK_INT(p.status, HEARTH_EIO);
    CHECK(strstr(p.why, "certificate") != NULL);
    probe_free(&p);
    peer_free(&pr);
}

static void test_tls_untrusted(void) {
    expect_certificate_refused("localhost", false);
}

/* A trusted certificate, but for another name than the one dialled. */
static void test_tls_wrong_host(void) {
    expect_certificate_refused("127.0.0.1", true);
}

/* ---- the realtime client against a hostile server ---- */

static void no_raise(void *ctx) { (void)ctx; }
static void no_drop(void *ctx, hearth__reg *reg) {
    (void)ctx;
    (void)reg;
}
static bool reconnected(void *arg) { return ((peer *)arg)->connections >= 2; }

/* A server that announces 999,999 pieces and sends them without end: the
 * client stops at its bound (1 MiB here), drops the connection rather than
 * grow, and comes back after its backoff. */
static void test_endless_pieces(void) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    peer pr;
    peer_init(&pr, &loop);
    pr.resource = "/.ws?v=5&ns=hostile";
    text(&pr.script, "{\"t\":\"c\",\"d\":{\"t\":\"h\",\"d\":{\"ts\":1,"
                     "\"v\":\"5\",\"h\":\"x\",\"s\":\"1\"}}}");
    text(&pr.script, "999999");
    char *piece = malloc(HEARTH__V5_PIECE);
    memset(piece, 'x', HEARTH__V5_PIECE);
    for (int i = 0; i < 256; i++) /* 4 MiB, four times the bound */
        frame(&pr.script, true, 1, piece, HEARTH__V5_PIECE);
    free(piece);
    peer_listen(&pr);
    hearth__event_queue events;
    hearth__events_init(&events);
    hearth__remote_url url = {.host = "127.0.0.1", .port = pr.port, .ns = "hostile"};
    hearth__remote_hooks hooks = {no_raise, no_drop, NULL, NULL};
    hearth__remote *r;
    CHECK_INT(hearth__remote_open(&loop, &url, &events, &hooks, &r), 0);
    hearth__remote_set_max_message(r, 1 << 20);
    run_until(&loop, reconnected, &pr);
    CHECK(pr.closes == 1 || !pr.has_conn || uv_is_closing((uv_handle_t *)&pr.conn));
    hearth__remote_close(r);
    peer_stop(&pr);
    drain(&loop);
    hearth__events_clear(&events);
    peer_free(&pr);
}

const test_case ws_client_tests[] = {
    {"ws_client_hello", test_hello},
    {"ws_client_localhost", test_localhost},
    {"ws_client_put_and_get", test_put_and_get},
    {"ws_client_large_message", test_large_message},
    {"ws_client_connection_refused", test_connection_refused},
    {"ws_client_unknown_host", test_unknown_host},
    {"ws_client_not_upgraded", test_not_upgraded},
    {"ws_client_bad_arguments", test_bad_arguments},
    {"ws_client_connect_out_of_memory", test_connect_out_of_memory},
    {"ws_client_close_early", test_close_early},
    {"ws_client_close_in_message", test_close_in_message},
    {"ws_client_close_with_queue", test_close_with_queue},
    {"ws_client_dribbled_and_fragmented", test_dribbled_and_fragmented},
    {"ws_client_frames_behind_header", test_frames_behind_header},
    {"ws_client_large_frame", test_large_frame},
    {"ws_client_too_big", test_too_big},
    {"ws_client_bad_handshakes", test_bad_handshakes},
    {"ws_client_handshake_answers", test_handshake_answers},
    {"ws_client_hang_up", test_hang_up},
    {"ws_client_tls", test_tls},
    {"ws_client_tls_untrusted", test_tls_untrusted},
    {"ws_client_tls_wrong_host", test_tls_wrong_host},
    {"ws_client_endless_pieces", test_endless_pieces},
    {NULL, NULL},
};
