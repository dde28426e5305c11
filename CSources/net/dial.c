/* dial.c - an outgoing connection on a blocking thread (dial.h): a
 * non-blocking socket waited on with poll() beside the cancel descriptor,
 * TLS through tls.c's memory BIOs. */
#include "net/dial.h"
#include "os/os.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int64_t hearth__dial_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int fail(hearth__dial *d, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(hearth__dial *d, int rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->why, sizeof d->why, fmt, ap);
    va_end(ap);
    return rc;
}

void hearth__dial_init(hearth__dial *d, int cancel_fd) {
    memset(d, 0, sizeof *d);
    d->fd = -1;
    d->cancel_fd = cancel_fd;
}

void hearth__dial_close(hearth__dial *d) {
    if (d->tls)
        hearth__tls_free(d->tls);
    d->tls = NULL;
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}

/* Waits until the socket is ready for events: 0, or the deadline's or the
 * cancel's error. */
static int wait_for(hearth__dial *d, short events) {
    for (;;) {
        int64_t left = d->deadline_ms - hearth__dial_now_ms();
        if (left <= 0)
            return fail(d, HEARTH_EDISCONNECTED, "timed out");
        struct pollfd p[2] = {{d->fd, events, 0}, {d->cancel_fd, POLLIN, 0}};
        int n = poll(p, d->cancel_fd >= 0 ? 2 : 1,
                     (int)(left > 60000 ? 60000 : left));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail(d, HEARTH_EIO, "poll: %s", strerror(errno));
        if (n > 0 && d->cancel_fd >= 0 && p[1].revents)
            return fail(d, HEARTH_ECANCELED, "stopping");
        if (n > 0)
            return 0;
    }
}

/* One address: 0 connected, else an error (the socket closed). */
static int connect_one(hearth__dial *d, const struct addrinfo *a) {
    d->fd = hearth__os_socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (d->fd < 0)
        return fail(d, HEARTH_EIO, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(d->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int soerr = 0;
    if (connect(d->fd, a->ai_addr, a->ai_addrlen) == 0)
        return 0;
    if (errno == EINPROGRESS) {
        int rc = wait_for(d, POLLOUT);
        socklen_t sl = sizeof soerr;
        if (!rc && getsockopt(d->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
            soerr == 0)
            return 0;
        if (rc) {
            hearth__dial_close(d);
            return rc;
        }
    } else {
        soerr = errno;
    }
    hearth__dial_close(d);
    return fail(d, HEARTH_EIO, "cannot connect: %s", strerror(soerr));
}

static int connect_to(hearth__dial *d, const hearth__url *u) {
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *list = NULL;
    int g = getaddrinfo(u->host, u->port, &hints, &list);
    if (g)
        return fail(d, HEARTH_EIO, "cannot resolve %s: %s", u->host,
                    gai_strerror(g));
    int rc = HEARTH_EIO;
    for (struct addrinfo *a = list; a; a = a->ai_next)
        if ((rc = connect_one(d, a)) != HEARTH_EIO)
            break; /* connected, or out of time or cancelled */
    freeaddrinfo(list);
    return rc;
}

/* Sends raw bytes. */
static int send_raw(hearth__dial *d, const char *data, size_t len) {
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(d->fd, data + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_for(d, POLLOUT);
            if (rc)
                return rc;
        } else if (n < 0 && errno != EINTR) {
            return fail(d, HEARTH_EIO, "cannot send: %s", strerror(errno));
        }
    }
    return 0;
}

/* Raw bytes received: their count, 0 at the peer's end, or an error. */
static ssize_t recv_raw(hearth__dial *d, char *buf, size_t cap) {
    for (;;) {
        ssize_t n = recv(d->fd, buf, cap, 0);
        if (n >= 0)
            return n;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_for(d, POLLIN);
            if (rc)
                return rc;
        } else if (errno != EINTR) {
            return fail(d, HEARTH_EIO, "cannot receive: %s", strerror(errno));
        }
    }
}

/* Sends what TLS has for the peer. */
static int flush_tls(hearth__dial *d) {
    char *data = NULL;
    size_t len = 0;
    if (hearth__tls_take(d->tls, &data, &len))
        return fail(d, HEARTH_EIO, "TLS: cannot encrypt");
    int rc = data ? send_raw(d, data, len) : 0;
    hearth__free(data);
    return rc;
}

/* Reads what the peer sent into TLS: 0, or HEARTH_ECLOSED at its end. */
static int pull_tls(hearth__dial *d) {
    char buf[16384];
    ssize_t n = recv_raw(d, buf, sizeof buf);
    if (n < 0)
        return (int)n;
    if (n == 0)
        return HEARTH_ECLOSED;
    return hearth__tls_feed(d->tls, buf, (size_t)n)
               ? fail(d, HEARTH_EIO, "out of memory")
               : 0;
}

static int handshake(hearth__dial *d, const hearth__url *u) {
    if (hearth__tls_client_create(u->host, &d->tls))
        return fail(d, HEARTH_EIO,
                    "TLS: cannot set up a client (the trust store?)");
    for (;;) {
        int r = hearth__tls_handshake(d->tls);
        int rc = flush_tls(d);
        if (r < 0) {
            hearth__tls_why(d->tls, "TLS handshake", d->why, sizeof d->why);
            return HEARTH_EIO;
        }
        if (rc || r == 1)
            return rc;
        rc = pull_tls(d);
        if (rc == HEARTH_ECLOSED)
            return fail(d, HEARTH_EIO, "the peer closed the connection "
                                       "during the TLS handshake");
        if (rc)
            return rc;
    }
}

int hearth__dial_open(hearth__dial *d, const hearth__url *u) {
    hearth__dial_close(d);
    d->why[0] = '\0';
    int rc = connect_to(d, u);
    if (!rc && u->tls)
        rc = handshake(d, u);
    if (rc)
        hearth__dial_close(d);
    return rc;
}

int hearth__dial_send(hearth__dial *d, const char *data, size_t len) {
    if (!d->tls)
        return send_raw(d, data, len);
    if (hearth__tls_write(d->tls, data, len))
        return fail(d, HEARTH_EIO, "TLS: cannot encrypt");
    return flush_tls(d);
}

ssize_t hearth__dial_recv(hearth__dial *d, char *buf, size_t cap) {
    if (!d->tls)
        return recv_raw(d, buf, cap);
    for (;;) {
        int n = hearth__tls_read(d->tls, buf, cap);
        if (n > 0)
            return n;
        if (n == HEARTH_ECLOSED)
            return 0;
        if (n < 0) {
            hearth__tls_why(d->tls, "TLS read", d->why, sizeof d->why);
            return HEARTH_EIO;
        }
        int rc = flush_tls(d); /* a key update may want an answer */
        if (!rc)
            rc = pull_tls(d);
        if (rc == HEARTH_ECLOSED)
            return 0; /* the end without close_notify: the parser judges */
        if (rc)
            return rc;
    }
}
