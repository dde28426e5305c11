/* http_raw.c - bytes and HTTP/1.1 over a loopback socket, with time
 * limits (see http_raw.h). */
#include "http_raw.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

void send_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0)
            return;
        p += n;
        len -= (size_t)n;
    }
}

/* Whether fd has something to read (or has ended) within ms. */
static bool readable(int fd, int ms) {
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, ms) > 0;
}

bool closed_within(int fd, int ms) {
    char c;
    return readable(fd, ms) && read(fd, &c, 1) <= 0;
}

bool read_exact(int fd, void *buf, size_t n) {
    for (size_t got = 0; got < n;) {
        if (!readable(fd, 5000))
            return false;
        ssize_t k = read(fd, (char *)buf + got, n - got);
        if (k <= 0)
            return false;
        got += (size_t)k;
    }
    return true;
}

size_t read_until(int fd, char *buf, size_t size, size_t got,
                  const char *want, int ms, bool *closed) {
    *closed = false;
    while (got < size - 1 && !memmem(buf, got, want, strlen(want))) {
        if (!readable(fd, ms))
            break;
        ssize_t n = read(fd, buf + got, size - 1 - got);
        if (n <= 0) {
            *closed = true;
            break;
        }
        got += (size_t)n;
    }
    buf[got] = '\0';
    return got;
}

/* How many whole responses (by Content-Length) buf's len bytes hold. */
static int whole_responses(const char *buf, size_t len) {
    int done = 0;
    const char *at = buf;
    for (;;) {
        const char *end = strstr(at, "\r\n\r\n");
        if (!end)
            return done;
        const char *cl = strstr(at, "Content-Length: ");
        size_t body = cl && cl < end ? (size_t)atol(cl + 16) : 0;
        if ((size_t)(end + 4 - buf) + body > len)
            return done;
        done++;
        at = end + 4 + body;
    }
}

char *read_responses(int fd, int count) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    buf[0] = '\0';
    while (whole_responses(buf, len) < count && readable(fd, 5000)) {
        if (len + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
    }
    return buf;
}

response request(int port, const char *method, const char *target,
                 const char *headers, const char *body) {
    int fd = test_connect(port);
    char head[4096];
    bool own_host = headers && strstr(headers, "Host:");
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\n%s%sContent-Length: "
                     "%zu\r\nConnection: close\r\n\r\n",
                     method, target, own_host ? "" : "Host: 127.0.0.1\r\n",
                     headers ? headers : "", body ? strlen(body) : 0);
    send_all(fd, head, (size_t)n);
    if (body)
        send_all(fd, body, strlen(body));
    char *raw = read_responses(fd, 1);
    close(fd);
    response r = {0};
    sscanf(raw, "HTTP/1.1 %d", &r.status);
    char *end = strstr(raw, "\r\n\r\n");
    if (end) {
        size_t hl = (size_t)(end - raw);
        if (hl >= sizeof r.head)
            hl = sizeof r.head - 1;
        memcpy(r.head, raw, hl);
        r.body = strdup(end + 4);
    } else {
        r.body = strdup("");
    }
    free(raw);
    return r;
}
