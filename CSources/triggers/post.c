/* post.c - the deliverers' HTTP/1.1 client (post.h). */
#include "triggers/post.h"

#include <http_parser.h>
#include <stdio.h>
#include <string.h>

#define ANSWER_MAX (1u << 20) /* an answer's bytes we read at most */

void hearth__poster_init(hearth__poster *p, const hearth__url *to,
                         int stop_fd) {
    p->to = to;
    hearth__dial_init(&p->conn, stop_fd);
}

void hearth__poster_close(hearth__poster *p) { hearth__dial_close(&p->conn); }

static int fail(char *why, size_t size, int rc, const char *fmt,
                const char *detail) {
    snprintf(why, size, fmt, detail);
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

/* The dial's error, with its words, as the poster reports it. */
static int dial_failed(hearth__poster *p, int rc, char *why, size_t size) {
    snprintf(why, size, "%s",
             rc == HEARTH_EDISCONNECTED ? "no answer in time" : p->conn.why);
    return rc;
}

/* One exchange on the connection; *nothing: the peer closed before a
 * byte of the answer (a kept-alive connection it had dropped). */
static int exchange(hearth__poster *p, const char *head, size_t hlen,
                    const char *body, size_t len, bool *nothing, char *why,
                    size_t why_size) {
    *nothing = false;
    int rc = hearth__dial_send(&p->conn, head, hlen);
    if (!rc)
        rc = hearth__dial_send(&p->conn, body, len);
    if (rc) {
        *nothing = rc == HEARTH_EIO;
        return dial_failed(p, rc, why, why_size);
    }
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
        ssize_t n = hearth__dial_recv(&p->conn, buf, sizeof buf);
        if (n < 0 && n != HEARTH_EIO)
            return dial_failed(p, (int)n, why, why_size);
        if (n <= 0) {
            if (n == 0 && total > 0) /* the end marks a body's end */
                http_parser_execute(&hp, &s, NULL, 0);
            if (a.complete)
                break;
            *nothing = total == 0;
            if (n < 0)
                return dial_failed(p, (int)n, why, why_size);
            return fail(why, why_size, HEARTH_EIO, "%s",
                        "the connection closed before the answer");
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
    p->conn.deadline_ms = hearth__dial_now_ms() + timeout_ms;
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
        bool reused = p->conn.fd >= 0, nothing = false;
        if (!reused && (rc = hearth__dial_open(&p->conn, p->to))) {
            dial_failed(p, rc, why, why_size);
            break;
        }
        rc = exchange(p, head.data, head.len, body, len, &nothing, why,
                      why_size);
        if (rc < 0)
            hearth__poster_close(p);
        if (!(rc == HEARTH_EIO && reused && nothing))
            break; /* a dropped kept-alive connection: once more, anew */
    }
    hearth__buf_free(&head);
    return rc;
}
