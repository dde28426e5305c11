/* test_http.c - the HTTP layer (server/http.h) on a loop of the test's
 * own, spoken to over a real loopback socket: how answers are written. */
#include "test.h"

#include "server/http.h"

#include <poll.h>
#include <unistd.h>

static const hearth__http_limits limits = {
    .max_body = 1 << 20, .max_backlog = 1 << 20, .header_ms = 5000,
    .body_ms = 5000, .idle_ms = 5000, .max_connections = 16,
    .max_peer_connections = 16, .max_held = 1 << 20, .peer_share = 1 << 20,
};

typedef struct {
    int answered;
} handled;

/* Answers with no memory to be had: a short answer the socket takes at
 * once must need none. */
static void answer_without_memory(hearth__http_conn *conn,
                                  const hearth__http_request *req, void *ctx) {
    (void)req;
    handled *h = ctx;
    h->answered++;
    hearth__alloc_fail_after(0);
    hearth__http_respond(conn, 200, "text/plain", NULL, "hello", 5);
    hearth__alloc_fail_after(-1);
}

static void closed(void *ctx) { *(bool *)ctx = true; }

static int count_of(const char *text, const char *what) {
    int n = 0;
    for (const char *at = text; (at = strstr(at, what)); at += strlen(what))
        n++;
    return n;
}

/* Reads fd while turning the loop, until `want` has arrived `times`
 * times, the peer closed (true), or 5 s passed. */
static bool read_turning(uv_loop_t *loop, int fd, char *buf, size_t cap,
                         const char *want, int times) {
    size_t len = 0;
    for (int i = 0; i < 500 && count_of(buf, want) < times; i++) {
        uv_run(loop, UV_RUN_NOWAIT);
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 10) <= 0)
            continue;
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n <= 0)
            return true;
        len += (size_t)n;
        buf[len] = '\0';
    }
    return false;
}

/* A server on a loop of the test's own, and a client connected to it
 * that has sent `request`. */
typedef struct {
    uv_loop_t loop;
    hearth__http_server *srv;
    int fd;
    handled h;
} rig;

static void rig_start(rig *r, hearth__http_handler handler,
                      const char *request) {
    memset(r, 0, sizeof *r);
    CHECK_INT(uv_loop_init(&r->loop), 0);
    hearth_error_t err = {0};
    CHECK_INT(hearth__http_listen(&r->loop, "127.0.0.1", 0, &limits, handler,
                                  &r->h, &r->srv, &err),
              0);
    r->fd = test_connect(hearth__http_port(r->srv));
    CHECK_INT(write(r->fd, request, strlen(request)), (long)strlen(request));
}

static void rig_stop(rig *r) {
    close(r->fd);
    bool done = false;
    hearth__http_close(r->srv, closed, &done);
    while (!done)
        uv_run(&r->loop, UV_RUN_ONCE);
    CHECK_INT(uv_loop_close(&r->loop), 0);
}

/* Each answer through uv_write cost a write request (memory), and libuv
 * completing it on the loop's next turn toggled the socket's write
 * interest: one epoll_ctl per request beside its read and write, which a
 * profile of REST PUTs showed. An answer the socket takes whole is now
 * written at once, so it needs no memory: it arrives even when none can
 * be had (the old code closed the connection instead). */
static void test_answer_written_at_once(void) {
    rig r;
    rig_start(&r, answer_without_memory,
              "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
              "GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    char buf[4096] = "";
    read_turning(&r.loop, r.fd, buf, sizeof buf, "hello", 2);
    CHECK_INT(r.h.answered, 2);
    /* both, on the one keep-alive connection */
    CHECK_INT(count_of(buf, "HTTP/1.1 200 OK\r\n"), 2);
    CHECK_INT(count_of(buf, "\r\n\r\nhello"), 2);
    rig_stop(&r);
}

/* A request asking to close: its answer, written at once, still arrives
 * whole before the connection closes. */
static void answer(hearth__http_conn *conn, const hearth__http_request *req,
                   void *ctx) {
    (void)req;
    ((handled *)ctx)->answered++;
    hearth__http_respond(conn, 200, "text/plain", NULL, "bye", 3);
}

static void test_close_after_answer(void) {
    rig r;
    rig_start(&r, answer,
              "GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    char buf[4096] = "";
    read_turning(&r.loop, r.fd, buf, sizeof buf, "bye", 1);
    CHECK(strstr(buf, "Connection: close\r\n") && strstr(buf, "\r\n\r\nbye"));
    /* and then the end of the connection */
    size_t len = strlen(buf);
    CHECK(read_turning(&r.loop, r.fd, buf + len, sizeof buf - len, "never", 1));
    CHECK_INT(strlen(buf), len);
    rig_stop(&r);
}

const test_case http_tests[] = {
    {"http_answer_written_at_once", test_answer_written_at_once},
    {"http_close_after_answer", test_close_after_answer},
    {NULL, NULL},
};
