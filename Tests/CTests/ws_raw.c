/* ws_raw.c - the tests' blocking WebSocket client (see ws_raw.h). */
#include "ws_raw.h"

#include "http_raw.h"
#include "ws_wire.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

int ws_open_host(int port, const char *ns, const char *host) {
    int fd = test_connect(port);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char resource[256], req[1024];
    snprintf(resource, sizeof resource, "/.ws?v=5%s%s", ns ? "&ns=" : "",
             ns ? ns : "");
    int n = ws_wire_upgrade(req, sizeof req, resource, host, WS_WIRE_SAMPLE_KEY);
    send_all(fd, req, (size_t)n);
    /* Byte by byte: what follows the head is the first frame's. */
    char head[1024];
    size_t len = 0;
    while (len < sizeof head - 1 && read_exact(fd, head + len, 1)) {
        head[++len] = '\0';
        if (len >= 4 && memcmp(head + len - 4, "\r\n\r\n", 4) == 0)
            break;
    }
    head[len] = '\0';
    if (strncmp(head, "HTTP/1.1 101", 12) != 0) {
        close(fd);
        return -1;
    }
    char accept[32], line[64];
    CHECK(ws_wire_accept(WS_WIRE_SAMPLE_KEY, accept));
    snprintf(line, sizeof line, "\r\nSec-WebSocket-Accept: %s\r\n", accept);
    CHECK(strcasestr(head, line) != NULL);
    return fd;
}

int ws_open(int port, const char *ns) {
    return ws_open_host(port, ns, "127.0.0.1");
}

size_t ws_put_frame(char **out, size_t at, int b0, uint64_t announce,
                    const void *payload, size_t len, bool unmasked) {
    static const unsigned char key[4] = {0x37, 0xfa, 0x21, 0x3d};
    unsigned char head[WS_WIRE_HEAD_MAX];
    size_t h = ws_wire_head(head, b0, announce, unmasked ? NULL : key);
    *out = realloc(*out, at + h + len);
    memcpy(*out + at, head, h);
    if (len)
        memcpy(*out + at + h, payload, len);
    if (!unmasked)
        ws_wire_mask(*out + at + h, len, key);
    return at + h + len;
}

void ws_send_frame(int fd, int b0, const void *payload, size_t len) {
    char *f = NULL;
    size_t n = ws_put_frame(&f, 0, b0, len, payload, len, false);
    send_all(fd, f, n);
    free(f);
}

void ws_send(int fd, const char *text) {
    ws_send_frame(fd, 0x81, text, strlen(text));
}

int ws_next_frame(int fd, char **payload, size_t *len) {
    unsigned char h[WS_WIRE_HEAD_MAX];
    ws_wire_frame f;
    *payload = NULL;
    *len = 0;
    if (!read_exact(fd, h, 2) ||
        !read_exact(fd, h + 2, ws_wire_head_size(h) - 2) ||
        !ws_wire_parse(h, sizeof h, &f))
        return -1;
    CHECK(!f.masked); /* a server never masks */
    CHECK(f.fin);     /* nor fragments */
    CHECK(f.len < (1u << 30)); /* the server's bound is 16 MiB */
    if (f.len >= (1u << 30))
        return -1;
    *payload = malloc(f.len + 1);
    if (!read_exact(fd, *payload, f.len)) {
        free(*payload);
        *payload = NULL;
        return -1;
    }
    (*payload)[f.len] = '\0';
    *len = f.len;
    return f.opcode;
}

char *ws_recv(int fd) {
    return ws_recv_holding(fd, "");
}

char *ws_recv_holding(int fd, const char *want) {
    for (;;) {
        char *text;
        size_t len;
        int op = ws_next_frame(fd, &text, &len);
        if (op == 1 && strstr(text, want))
            return text;
        free(text);
        if (op < 0 || op == 8)
            return NULL;
    }
}

char *ws_request(int fd, int r, const char *action, const char *body) {
    size_t n = strlen(body) + 96;
    char *msg = malloc(n);
    snprintf(msg, n, "{\"t\":\"d\",\"d\":{\"r\":%d,\"a\":\"%s\",\"b\":%s}}", r,
             action, body);
    ws_send(fd, msg);
    free(msg);
    char want[32];
    snprintf(want, sizeof want, "{\"r\":%d,", r);
    return ws_recv_holding(fd, want);
}

int rt_session(int port, const char *ns, bool admin) {
    int fd = ws_open(port, ns);
    CHECK(fd >= 0);
    char *hello = ws_recv(fd);
    CHECK(hello && strstr(hello, "\"t\":\"c\"") != NULL);
    free(hello);
    if (admin) {
        char *ok = ws_request(fd, 1, "auth", "{\"cred\":\"owner\"}");
        CHECK(ok && strstr(ok, "{\"r\":1,\"b\":{\"s\":\"ok\""));
        free(ok);
    }
    return fd;
}
