/* https_get.c - one bounded HTTPS GET on a blocking thread (see
 * https_get.h): the connection through dial.h, the answer parsed by
 * http-parser (Content-Length, chunked, or until the peer closes). */
#include "net/https_get.h"

#include "net/dial.h"

#include <ctype.h>
#include <http_parser.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_HEADER_VALUE = 1024 };

typedef struct fetch {
    const hearth__https_limits *limits;
    hearth__https_result *out;
    hearth__dial conn;
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

int hearth__https_url_check(const char *url, hearth_error_t *err) {
    hearth__url u;
    int rc = hearth__url_parse(url, HEARTH__URL_HTTPS, "URL", &u, err);
    if (!rc)
        hearth__url_free(&u);
    return rc;
}

/* The connection's failure, in the result's words. */
static int dial_failed(fetch *f, int rc) {
    if (rc == HEARTH_EDISCONNECTED)
        return fail(f, "no answer within %d ms", f->limits->deadline_ms);
    if (rc == HEARTH_ECANCELED)
        return fail(f, "cancelled");
    return fail(f, "%s", f->conn.why);
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
        ssize_t n = hearth__dial_recv(&f->conn, buf, sizeof buf);
        if (n < 0)
            return dial_failed(f, (int)n);
        if (n == 0) {
            http_parser_execute(&f->parser, &SETTINGS, NULL, 0); /* the end */
            return 0;
        }
        if (!parse(f, buf, (size_t)n))
            return 0;
    }
}

static int request(fetch *f, const hearth__url *u) {
    int rc = hearth__dial_open(&f->conn, u);
    if (rc)
        return dial_failed(f, rc);
    char head[HEARTH__URL_MAX + 512];
    int n = snprintf(head, sizeof head,
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: hearth/%d.%d\r\n"
                     "Accept: application/json, */*\r\nAccept-Encoding: identity\r\n"
                     "Connection: close\r\n\r\n",
                     u->path, u->authority, HEARTH_VERSION_MAJOR,
                     HEARTH_VERSION_MINOR);
    if ((rc = hearth__dial_send(&f->conn, head, (size_t)n)))
        return dial_failed(f, rc);
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
    fetch f = {.limits = limits, .out = out, .max_age = -1};
    hearth__dial_init(&f.conn, limits->cancel_fd);
    f.conn.deadline_ms = hearth__dial_now_ms() + limits->deadline_ms;
    hearth__buf_init(&f.body);
    http_parser_init(&f.parser, HTTP_RESPONSE);
    f.parser.data = &f;
    hearth__url u;
    hearth_error_t err;
    int rc = hearth__url_parse(url, HEARTH__URL_HTTPS, "URL", &u, &err);
    if (rc) {
        fail(&f, "%s", err.message);
    } else {
        rc = request(&f, &u);
        hearth__url_free(&u);
    }
    hearth__dial_close(&f.conn);
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
