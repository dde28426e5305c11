/* https_get.c - one bounded HTTPS GET on a blocking thread (see
 * https_get.h): a non-blocking socket waited on with poll() beside the
 * cancel descriptor, TLS through tls.c's memory BIOs, the answer parsed by
 * http-parser (Content-Length, chunked, or until the peer closes). */
#include "net/https_get.h"
#include "os/os.h"

#include "net/tls.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MAX_URL = 2048, MAX_HEADER_VALUE = 1024 };

typedef struct url_parts {
    char host[256]; /* without brackets */
    char port[8];
    char authority[272]; /* host[:port] as the Host header says it */
    const char *path;    /* into the URL */
} url_parts;

typedef struct fetch {
    const hearth__https_limits *limits;
    hearth__https_result *out;
    int64_t deadline; /* monotonic ms */
    int fd;
    hearth__tls *tls;
    /* the answer */
    http_parser parser;
    hearth__buf body;
    char field[32];                    /* the header being read, lower case */
    size_t field_len;
    bool field_done;                   /* its value has begun */
    char value[MAX_HEADER_VALUE];      /* that value, so far */
    size_t value_len;
    int64_t max_age, age;
    bool complete, too_big;
} fetch;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int fail(fetch *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(fetch *f, const char *fmt, ...) {
    if (!f->out->error[0]) { /* the first reason is the one that counts */
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->out->error, sizeof f->out->error, fmt, ap);
        va_end(ap);
    }
    return HEARTH_EIO;
}

/* ---- the URL ---- */

static int parse_url(const char *url, url_parts *u, hearth_error_t *err) {
    if (!url)
        return hearth__error(err, HEARTH_EINVAL, NULL, "no URL");
    size_t len = strlen(url);
    if (len > MAX_URL)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "a URL of %zu bytes (at most %d)", len, MAX_URL);
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7F)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "URL \"%.80s\": a space or control character",
                                 url);
    if (strncasecmp(url, "https://", 8))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "URL \"%.80s\" is not https://", url);
    const char *host = url + 8, *end = host + strcspn(host, "/?#");
    if (memchr(host, '@', (size_t)(end - host)))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "URL \"%.80s\": credentials in a URL are not "
                             "supported", url);
    if (strchr(url, '#'))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "URL \"%.80s\": a fragment (#)", url);
    const char *port = NULL, *host_end = end;
    if (*host == '[') {
        const char *close = memchr(host, ']', (size_t)(end - host));
        if (!close)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "URL \"%.80s\": no ] after the IPv6 address", url);
        if (close + 1 < end && close[1] != ':')
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "URL \"%.80s\": text after the IPv6 address", url);
        port = close + 1 < end ? close + 2 : NULL;
        host_end = close;
        host++;
    } else {
        const char *colon = memchr(host, ':', (size_t)(end - host));
        if (colon) {
            port = colon + 1;
            host_end = colon;
        }
    }
    size_t host_len = (size_t)(host_end - host);
    if (!host_len || host_len >= sizeof u->host)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "URL \"%.80s\": no host, or one too long", url);
    memcpy(u->host, host, host_len);
    u->host[host_len] = '\0';
    size_t port_len = port ? (size_t)(end - port) : 0;
    if (port && (!port_len || port_len > 5 || strspn(port, "0123456789") < port_len ||
                 atoi(port) < 1 || atoi(port) > 65535))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "URL \"%.80s\": the port must be 1 to 65535", url);
    snprintf(u->port, sizeof u->port, "%.*s", (int)port_len, port ? port : "443");
    if (!port)
        snprintf(u->port, sizeof u->port, "443");
    snprintf(u->authority, sizeof u->authority, "%s%s%s%s%s",
             host[-1] == '[' ? "[" : "", u->host, host[-1] == '[' ? "]" : "",
             port ? ":" : "", port ? u->port : "");
    u->path = *end ? end : "/";
    return 0;
}

int hearth__https_url_check(const char *url, hearth_error_t *err) {
    url_parts u;
    return parse_url(url, &u, err);
}

/* ---- waiting ---- */

/* Waits until fd is ready for events: 0, or HEARTH_EIO when the deadline
 * passed or the cancel descriptor became readable. */
static int wait_for(fetch *f, short events) {
    for (;;) {
        int64_t left = f->deadline - now_ms();
        if (left <= 0)
            return fail(f, "no answer within %d ms", f->limits->deadline_ms);
        struct pollfd p[2] = {{f->fd, events, 0}, {f->limits->cancel_fd, POLLIN, 0}};
        int n = poll(p, f->limits->cancel_fd >= 0 ? 2 : 1, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail(f, "poll: %s", strerror(errno));
        if (n > 0 && f->limits->cancel_fd >= 0 && p[1].revents)
            return fail(f, "cancelled");
        if (n > 0)
            return 0;
    }
}

static int connect_to(fetch *f, const url_parts *u) {
    struct addrinfo hints = {0}, *list = NULL;
    hints.ai_socktype = SOCK_STREAM; /* every family: the next on failure */
    int gai = getaddrinfo(u->host, u->port, &hints, &list);
    if (gai)
        return fail(f, "cannot resolve %s: %s", u->host, gai_strerror(gai));
    int last = 0;
    for (struct addrinfo *a = list; a; a = a->ai_next) {
        f->fd = hearth__os_socket(a->ai_family, a->ai_socktype,
                                  a->ai_protocol);
        if (f->fd < 0) {
            last = errno;
            continue;
        }
        int rc = connect(f->fd, a->ai_addr, a->ai_addrlen);
        if (rc && errno == EINPROGRESS) {
            if (wait_for(f, POLLOUT)) {
                freeaddrinfo(list);
                return HEARTH_EIO; /* the deadline or the cancel: stop */
            }
            socklen_t len = sizeof last;
            getsockopt(f->fd, SOL_SOCKET, SO_ERROR, &last, &len);
            rc = last ? -1 : 0;
        } else if (rc) {
            last = errno;
        }
        if (!rc) {
            freeaddrinfo(list);
            return 0;
        }
        close(f->fd);
        f->fd = -1;
    }
    freeaddrinfo(list);
    return fail(f, "cannot connect to %s: %s", u->authority,
                strerror(last ? last : ECONNREFUSED));
}

/* Sends what TLS has for the peer. */
static int flush_tls(fetch *f) {
    char *data;
    size_t len;
    if (hearth__tls_take(f->tls, &data, &len))
        return fail(f, "TLS: cannot encrypt");
    size_t off = 0;
    int rc = 0;
    while (data && off < len && !rc) {
        ssize_t n = send(f->fd, data + off, len - off, MSG_NOSIGNAL);
        if (n > 0)
            off += (size_t)n;
        else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            rc = wait_for(f, POLLOUT);
        else if (n < 0 && errno != EINTR)
            rc = fail(f, "send: %s", strerror(errno));
    }
    hearth__free(data);
    return rc;
}

/* Reads what the peer sent into TLS: 0, HEARTH_ECLOSED at its end. */
static int pull(fetch *f) {
    char buf[16384];
    for (;;) {
        ssize_t n = recv(f->fd, buf, sizeof buf, 0);
        if (n > 0)
            return hearth__tls_feed(f->tls, buf, (size_t)n) ? fail(f, "out of memory") : 0;
        if (n == 0)
            return HEARTH_ECLOSED;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (wait_for(f, POLLIN))
                return HEARTH_EIO;
        } else if (errno != EINTR) {
            return fail(f, "recv: %s", strerror(errno));
        }
    }
}

static int handshake(fetch *f) {
    for (;;) {
        int r = hearth__tls_handshake(f->tls);
        int rc = flush_tls(f);
        if (r < 0) {
            char why[200];
            hearth__tls_why(f->tls, "TLS handshake", why, sizeof why);
            return fail(f, "%s", why);
        }
        if (rc || r == 1)
            return rc;
        rc = pull(f);
        if (rc == HEARTH_ECLOSED)
            return fail(f, "the peer closed the connection during the TLS handshake");
        if (rc)
            return rc;
    }
}

/* ---- the answer ---- */

static fetch *fetch_of(http_parser *p) { return p->data; }

/* The header just read, if it is one of those wanted. */
static void header_done(fetch *f) {
    f->value[f->value_len] = '\0';
    if (!strcmp(f->field, "cache-control")) {
        /* max-age=N among the directives, any case (no-store: none). */
        for (char *c = f->value; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        const char *m = strstr(f->value, "max-age=");
        if (m && isdigit((unsigned char)m[8]))
            f->max_age = strtoll(m + 8, NULL, 10);
        if (strstr(f->value, "no-store") || strstr(f->value, "no-cache"))
            f->max_age = 0;
    } else if (!strcmp(f->field, "age") && isdigit((unsigned char)f->value[0])) {
        f->age = strtoll(f->value, NULL, 10);
    }
    f->field_len = f->value_len = 0;
    f->field_done = false;
}

static int on_header_field(http_parser *p, const char *at, size_t len) {
    fetch *f = fetch_of(p);
    if (f->field_done)
        header_done(f);
    for (size_t i = 0; i < len; i++)
        if (f->field_len < sizeof f->field - 1)
            f->field[f->field_len++] = (char)tolower((unsigned char)at[i]);
    f->field[f->field_len] = '\0';
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len) {
    fetch *f = fetch_of(p);
    f->field_done = true;
    size_t room = sizeof f->value - 1 - f->value_len;
    size_t n = len < room ? len : room;
    memcpy(f->value + f->value_len, at, n);
    f->value_len += n;
    return 0;
}

static int on_headers_complete(http_parser *p) {
    fetch *f = fetch_of(p);
    if (f->field_done)
        header_done(f);
    f->out->status = p->status_code;
    if (p->content_length != ULLONG_MAX && p->content_length > f->limits->max_bytes) {
        f->too_big = true;
        return 1;
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len) {
    fetch *f = fetch_of(p);
    if (f->body.len + len > f->limits->max_bytes) {
        f->too_big = true;
        return 1;
    }
    hearth__buf_add(&f->body, at, len);
    return f->body.failed ? 1 : 0;
}

static int on_message_complete(http_parser *p) {
    fetch_of(p)->complete = true;
    return 1; /* one answer is all there is */
}

static const http_parser_settings SETTINGS = {
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* Gives decrypted bytes to the parser; false when it stopped. */
static bool parse(fetch *f, const char *data, size_t len) {
    size_t n = http_parser_execute(&f->parser, &SETTINGS, data, len);
    return !f->complete && !f->too_big && !f->body.failed &&
           HTTP_PARSER_ERRNO(&f->parser) == HPE_OK && n == len;
}

static int read_answer(fetch *f) {
    char buf[16384];
    for (;;) {
        int n;
        while ((n = hearth__tls_read(f->tls, buf, sizeof buf)) > 0)
            if (!parse(f, buf, (size_t)n))
                return 0;
        bool closed = n == HEARTH_ECLOSED;
        if (n < 0 && !closed) {
            char why[200];
            hearth__tls_why(f->tls, "TLS read", why, sizeof why);
            return fail(f, "%s", why);
        }
        int rc = closed ? HEARTH_ECLOSED : pull(f);
        if (rc == HEARTH_ECLOSED) {
            http_parser_execute(&f->parser, &SETTINGS, NULL, 0); /* the end */
            return 0;
        }
        if (rc)
            return rc;
    }
}

static int request(fetch *f, const url_parts *u) {
    int rc = connect_to(f, u);
    if (rc)
        return rc;
    if (hearth__tls_client_create(u->host, &f->tls))
        return fail(f, "TLS: cannot set up a client (the trust store?)");
    if ((rc = handshake(f)))
        return rc;
    char head[MAX_URL + 512];
    int n = snprintf(head, sizeof head,
                     "GET %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: hearth/%d.%d\r\n"
                     "Accept: application/json, */*\r\nAccept-Encoding: identity\r\n"
                     "Connection: close\r\n\r\n",
                     u->path[0] == '?' ? "/" : "", u->path, u->authority,
                     HEARTH_VERSION_MAJOR, HEARTH_VERSION_MINOR);
    if (hearth__tls_write(f->tls, head, (size_t)n) || (rc = flush_tls(f)))
        return rc ? rc : fail(f, "TLS: cannot encrypt the request");
    if ((rc = read_answer(f)))
        return rc;
    if (f->too_big)
        return fail(f, "the answer is over %zu bytes", f->limits->max_bytes);
    if (f->body.failed)
        return fail(f, "out of memory");
    if (!f->complete)
        return fail(f, "%s",
                    f->out->status ? "the answer ended early"
                    : HTTP_PARSER_ERRNO(&f->parser) != HPE_OK
                        ? "not an HTTP answer"
                        : "the connection closed without an answer");
    if (f->out->status != 200)
        return fail(f, "HTTP status %d", f->out->status);
    return 0;
}

int hearth__https_get(const char *url, const hearth__https_limits *limits,
                      hearth__https_result *out) {
    memset(out, 0, sizeof *out);
    out->max_age_s = -1;
    fetch f = {.limits = limits, .out = out, .fd = -1, .max_age = -1};
    f.deadline = now_ms() + limits->deadline_ms;
    hearth__buf_init(&f.body);
    http_parser_init(&f.parser, HTTP_RESPONSE);
    f.parser.data = &f;
    url_parts u;
    hearth_error_t err;
    int rc = parse_url(url, &u, &err);
    if (rc)
        fail(&f, "%s", err.message);
    else
        rc = request(&f, &u);
    if (f.tls)
        hearth__tls_free(f.tls);
    if (f.fd >= 0)
        close(f.fd);
    if (!rc) {
        out->body = hearth__buf_detach(&f.body, &out->len);
        if (!out->body)
            rc = fail(&f, "out of memory");
        else if (f.max_age >= 0)
            out->max_age_s = f.max_age > f.age ? f.max_age - f.age : 0;
    }
    hearth__buf_free(&f.body);
    return rc ? HEARTH_EIO : 0;
}

void hearth__https_result_free(hearth__https_result *r) {
    hearth__free(r->body);
    r->body = NULL;
}
