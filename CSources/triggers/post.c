/* post.c - the deliverers' HTTP/1.1 client (post.h). */
#include "triggers/post.h"
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ANSWER_MAX (1u << 20) /* an answer's bytes we read at most */

int hearth__endpoint_parse(const char *url, hearth__endpoint *out,
                           hearth_error_t *err) {
    memset(out, 0, sizeof *out);
    if (!url || strncmp(url, "http://", 7) != 0)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "invalid trigger URL \"%.200s\": only http:// "
                             "endpoints are supported",
                             url ? url : "");
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7F)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "invalid trigger URL \"%.200s\": a space "
                                 "or a control character",
                                 url);
    const char *auth = url + 7;
    size_t alen = strcspn(auth, "/?#");
    const char *rest = auth + alen;
    if (alen == 0 || memchr(auth, '@', alen))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "invalid trigger URL \"%.200s\": %s", url,
                             alen ? "credentials in the URL are not "
                                    "supported"
                                  : "no host");
    const char *host = auth, *port = NULL;
    size_t hlen = alen, plen = 0;
    if (auth[0] == '[') {
        const char *close = memchr(auth, ']', alen);
        if (!close)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "invalid trigger URL \"%.200s\": '[' "
                                 "without ']'",
                                 url);
        host = auth + 1;
        hlen = (size_t)(close - host);
        if (close + 1 < auth + alen) {
            if (close[1] != ':')
                return hearth__error(err, HEARTH_EINVAL, NULL,
                                     "invalid trigger URL \"%.200s\"", url);
            port = close + 2;
            plen = (size_t)(auth + alen - port);
        }
    } else {
        const char *colon = memchr(auth, ':', alen);
        if (colon) {
            hlen = (size_t)(colon - auth);
            port = colon + 1;
            plen = (size_t)(auth + alen - port);
        }
    }
    if (port) {
        long v = 0;
        for (size_t i = 0; i < plen; i++)
            v = port[i] >= '0' && port[i] <= '9' && v < 100000
                    ? v * 10 + (port[i] - '0')
                    : 100000;
        if (plen == 0 || v < 1 || v > 65535)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "invalid trigger URL \"%.200s\": the port "
                                 "must be 1 to 65535",
                                 url);
    }
    if (hlen == 0)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "invalid trigger URL \"%.200s\": no host", url);
    out->host = hearth__strndup(host, hlen);
    out->port = port ? hearth__strndup(port, plen) : hearth__strndup("80", 2);
    out->authority = hearth__strndup(auth, alen);
    out->path = *rest == '/' ? hearth__strndup(rest, strcspn(rest, "#"))
                : *rest == '?'
                    ? NULL /* "/?q": made below */
                    : hearth__strndup("/", 1);
    if (*rest == '?') {
        size_t qlen = strcspn(rest, "#");
        out->path = hearth__malloc(qlen + 2);
        if (out->path) {
            out->path[0] = '/';
            memcpy(out->path + 1, rest, qlen);
            out->path[qlen + 1] = '\0';
        }
    }
    if (!out->host || !out->port || !out->authority || !out->path) {
        hearth__endpoint_free(out);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    return 0;
}

void hearth__endpoint_free(hearth__endpoint *e) {
    hearth__free(e->host);
    hearth__free(e->port);
    hearth__free(e->path);
    hearth__free(e->authority);
    memset(e, 0, sizeof *e);
}

void hearth__poster_close(hearth__poster *p) {
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for events, the deadline passes (0) or stop
 * is readable (-1). */
static int wait_for(hearth__poster *p, short events, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd fds[2] = {{p->fd, events, 0}, {p->stop_fd, POLLIN, 0}};
        int n = poll(fds, 2, (int)(left > 60000 ? 60000 : left));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || fds[1].revents)
            return -1;
        if (fds[0].revents)
            return 1;
    }
}

static int fail(char *why, size_t size, int rc, const char *fmt,
                const char *detail) {
    snprintf(why, size, fmt, detail);
    return rc;
}

static int connect_to(hearth__poster *p, int64_t deadline, char *why,
                      size_t why_size) {
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int g = getaddrinfo(p->to->host, p->to->port, &hints, &res);
    if (g)
        return fail(why, why_size, HEARTH_EIO, "cannot resolve the host: %s",
                    gai_strerror(g));
    int rc = HEARTH_EIO;
    snprintf(why, why_size, "cannot connect");
    for (struct addrinfo *a = res; a && rc; a = a->ai_next) {
        p->fd = hearth__os_socket(a->ai_family, a->ai_socktype,
                                  a->ai_protocol);
        if (p->fd < 0)
            continue;
        int one = 1;
        setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(p->fd, a->ai_addr, a->ai_addrlen) == 0) {
            rc = 0;
            break;
        }
        if (errno == EINPROGRESS) {
            int w = wait_for(p, POLLOUT, deadline);
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            if (w == 1 && getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
                soerr == 0) {
                rc = 0;
                break;
            }
            if (w == -1) {
                rc = HEARTH_ECANCELED;
                hearth__poster_close(p);
                break;
            }
            if (w == 0) {
                rc = HEARTH_EDISCONNECTED;
                snprintf(why, why_size, "connect timed out");
            } else {
                snprintf(why, why_size, "cannot connect: %s", strerror(soerr));
            }
        } else {
            snprintf(why, why_size, "cannot connect: %s", strerror(errno));
        }
        hearth__poster_close(p);
        if (rc == HEARTH_EDISCONNECTED)
            break;
    }
    freeaddrinfo(res);
    return rc;
}

typedef struct answer {
    bool complete;
    bool keep_alive;
} answer;

static int on_complete(http_parser *hp) {
    answer *a = hp->data;
    a->complete = true;
    a->keep_alive = http_should_keep_alive(hp);
    http_parser_pause(hp, 1);
    return 0;
}

static int send_all(hearth__poster *p, const char *data, size_t len,
                    int64_t deadline) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = send(p->fd, data + done, len - done, MSG_NOSIGNAL);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int w = wait_for(p, POLLOUT, deadline);
            if (w == 1)
                continue;
            return w == -1 ? HEARTH_ECANCELED : HEARTH_EDISCONNECTED;
        }
        return HEARTH_EIO;
    }
    return 0;
}

/* One exchange on the connection; *nothing: the peer closed before a
 * byte of the answer (a kept-alive connection it had dropped). */
static int exchange(hearth__poster *p, const char *head, size_t hlen,
                    const char *body, size_t len, int64_t deadline,
                    bool *nothing, char *why, size_t why_size) {
    *nothing = false;
    int rc = send_all(p, head, hlen, deadline);
    if (!rc)
        rc = send_all(p, body, len, deadline);
    if (rc == HEARTH_EIO) {
        *nothing = true;
        return fail(why, why_size, rc, "cannot send: %s", strerror(errno));
    }
    if (rc)
        return fail(why, why_size, rc, "%s",
                    rc == HEARTH_ECANCELED ? "stopping" : "send timed out");
    http_parser hp;
    http_parser_init(&hp, HTTP_RESPONSE);
    answer a = {0};
    hp.data = &a;
    http_parser_settings s;
    http_parser_settings_init(&s);
    s.on_message_complete = on_complete;
    char buf[8192];
    size_t total = 0;
    while (!a.complete) {
        ssize_t n = recv(p->fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int w = wait_for(p, POLLIN, deadline);
            if (w == 1)
                continue;
            return fail(why, why_size,
                        w == -1 ? HEARTH_ECANCELED : HEARTH_EDISCONNECTED,
                        "%s", w == -1 ? "stopping" : "no answer in time");
        }
        if (n <= 0) {
            if (n == 0 && total > 0) /* the end marks a body's end */
                http_parser_execute(&hp, &s, NULL, 0);
            if (a.complete)
                break;
            *nothing = total == 0;
            return fail(why, why_size, HEARTH_EIO, "%s",
                        n == 0 ? "the connection closed before the answer"
                               : strerror(errno));
        }
        total += (size_t)n;
        size_t used = http_parser_execute(&hp, &s, buf, (size_t)n);
        if (!a.complete && (used != (size_t)n || HTTP_PARSER_ERRNO(&hp)))
            return fail(why, why_size, HEARTH_EIO, "a malformed answer: %s",
                        http_errno_description(HTTP_PARSER_ERRNO(&hp)));
        if (total > ANSWER_MAX)
            return fail(why, why_size, HEARTH_EIO, "%s",
                        "an answer over 1 MiB");
    }
    if (!a.keep_alive)
        hearth__poster_close(p);
    return (int)hp.status_code;
}

int hearth__post(hearth__poster *p, const char *headers, const char *body,
                 size_t len, int timeout_ms, char *why, size_t why_size) {
    int64_t deadline = now_ms() + timeout_ms;
    hearth__buf head;
    hearth__buf_init(&head);
    hearth__buf_printf(&head,
                       "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: hearth\r\n"
                       "Content-Length: %zu\r\n%s\r\n",
                       p->to->path, p->to->authority, len, headers);
    if (head.failed) {
        hearth__buf_free(&head);
        return HEARTH_ENOMEM;
    }
    int rc = HEARTH_EIO;
    for (int tries = 0; tries < 2; tries++) {
        bool reused = p->fd >= 0, nothing = false;
        if (!reused && (rc = connect_to(p, deadline, why, why_size)))
            break;
        rc = exchange(p, head.data, head.len, body, len, deadline, &nothing,
                      why, why_size);
        if (rc < 0)
            hearth__poster_close(p);
        if (!(rc == HEARTH_EIO && reused && nothing))
            break; /* a dropped kept-alive connection: once more, anew */
    }
    hearth__buf_free(&head);
    return rc;
}
