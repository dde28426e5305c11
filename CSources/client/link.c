/* link.c - the client's WebSocket through the built-in transport or the
 * program's (link.h). The program's reports from any thread: each report
 * is queued under a lock and the loop is woken (one uv_async_t per
 * connection), which hands them to the owner in order. The connection's
 * state outlives the owner's close until the transport says closed, since
 * the transport may still be reporting; then it frees itself. */
#include "client/link.h"

#include "common/internal.h"
#include "common/list.h"

#include <stdio.h>
#include <string.h>

enum report_kind { OPENED, MESSAGE, CLOSED };

typedef struct report {
    hearth__list link; /* in the connection's reports */
    enum report_kind kind;
    int status;
    size_t len;
    char text[]; /* the message, or the reason of a close */
} report;

struct hearth_ws_s {
    uv_async_t wake;
    uv_mutex_t lock;
    hearth__list reports; /* under lock, oldest first */
    bool lost;           /* under lock: a report did not fit in memory */
    bool reported_closed; /* loop thread: the last report was handled */
    hearth_transport_t t;
    void *conn;
    hearth__wsc_callbacks cb;
    void *user; /* NULL once the owner closed: reports are dropped */
};

struct hearth__link {
    hearth__wsc *wsc;  /* the built-in transport, or NULL */
    hearth_ws_t *ws;   /* the program's, or NULL */
    hearth__wsc_callbacks cb; /* the owner's */
    void *user;
};

/* The transports report to the link, which passes each report on and
 * frees itself after the last (the owner then holds nothing). */
static void link_opened(void *user) {
    hearth__link *l = user;
    if (l->cb.on_open)
        l->cb.on_open(l->user);
}

static void link_message(void *user, const char *text, size_t len) {
    hearth__link *l = user;
    if (l->cb.on_message)
        l->cb.on_message(l->user, text, len);
}

static void link_closed(void *user, int status, const char *why) {
    hearth__link *l = user;
    if (l->cb.on_close)
        l->cb.on_close(l->user, status, why);
    hearth__free(l);
}

static const hearth__wsc_callbacks link_callbacks = {link_opened, link_message,
                                                     link_closed};

/* ---- reports, from any thread ---- */

static void post(hearth_ws_t *ws, enum report_kind kind, int status,
                 const char *text, size_t len) {
    report *r = hearth__malloc(sizeof *r + len + 1);
    uv_mutex_lock(&ws->lock);
    if (r) {
        r->kind = kind;
        r->status = status;
        r->len = len;
        if (len)
            memcpy(r->text, text, len);
        r->text[len] = '\0';
        hearth__list_push_back(&ws->reports, &r->link);
    } else {
        ws->lost = true; /* the stream has a hole: the connection ends */
    }
    uv_mutex_unlock(&ws->lock);
    uv_async_send(&ws->wake);
}

void hearth_ws_opened(hearth_ws_t *ws) {
    post(ws, OPENED, 0, NULL, 0);
}

void hearth_ws_message(hearth_ws_t *ws, const char *text, size_t len) {
    post(ws, MESSAGE, 0, text, len);
}

void hearth_ws_closed(hearth_ws_t *ws, int status, const char *reason) {
    post(ws, CLOSED, status > 0 ? HEARTH_EIO : status, reason ? reason : "",
         reason ? strlen(reason) : 0);
}

/* ---- on the loop ---- */

static void on_ws_freed(uv_handle_t *h) {
    hearth_ws_t *ws = h->data;
    uv_mutex_destroy(&ws->lock);
    hearth__free(ws);
}

static void free_reports(hearth__list *reports) {
    for (hearth__list *n; (n = hearth__list_pop_front(reports));)
        hearth__free(HEARTH__LIST_ITEM(n, report, link));
}

static void end_ws(hearth_ws_t *ws) {
    ws->reported_closed = true;
    hearth__list left = {0};
    uv_mutex_lock(&ws->lock);
    hearth__list_splice_back(&left, &ws->reports);
    uv_mutex_unlock(&ws->lock);
    free_reports(&left); /* the transport broke the contract: nothing
                            after closed */
    uv_close((uv_handle_t *)&ws->wake, on_ws_freed);
}

static void on_wake(uv_async_t *a) {
    hearth_ws_t *ws = a->data;
    if (ws->reported_closed)
        return;
    hearth__list got = {0};
    uv_mutex_lock(&ws->lock);
    hearth__list_splice_back(&got, &ws->reports);
    bool lost = ws->lost;
    ws->lost = false;
    uv_mutex_unlock(&ws->lock);
    if (lost && ws->user) { /* a message is missing: end, reconnect later */
        void *user = ws->user;
        ws->user = NULL;
        ws->t.close(ws->t.user, ws->conn);
        if (ws->cb.on_close)
            ws->cb.on_close(user, HEARTH_ENOMEM, "out of memory for a message");
    }
    for (hearth__list *n; (n = hearth__list_pop_front(&got));) {
        report *r = HEARTH__LIST_ITEM(n, report, link);
        bool closed = r->kind == CLOSED;
        void *user = ws->user;
        if (closed)
            ws->user = NULL;
        if (user && r->kind == OPENED && ws->cb.on_open)
            ws->cb.on_open(user);
        else if (user && r->kind == MESSAGE && ws->cb.on_message)
            ws->cb.on_message(user, r->text, r->len);
        else if (user && closed && ws->cb.on_close)
            ws->cb.on_close(user, r->status, r->len ? r->text : "closed");
        hearth__free(r);
        if (closed) {
            free_reports(&got); /* nothing counts after closed */
            end_ws(ws);
            return;
        }
    }
}

static int open_program_transport(uv_loop_t *loop, const hearth_transport_t *t,
                                  const char *host, int port,
                                  const char *resource, bool tls,
                                  hearth__link *l) {
    char url[512];
    bool v6 = strchr(host, ':') != NULL;
    int n = snprintf(url, sizeof url, "%s://%s%s%s:%d%s", tls ? "wss" : "ws",
                     v6 ? "[" : "", host, v6 ? "]" : "", port, resource);
    if (n < 0 || (size_t)n >= sizeof url)
        return HEARTH_EINVAL;
    hearth_ws_t *ws = hearth__calloc(1, sizeof *ws);
    if (!ws)
        return HEARTH_ENOMEM;
    if (uv_mutex_init(&ws->lock)) {
        hearth__free(ws);
        return HEARTH_ENOMEM;
    }
    if (uv_async_init(loop, &ws->wake, on_wake)) {
        uv_mutex_destroy(&ws->lock);
        hearth__free(ws);
        return HEARTH_EIO;
    }
    ws->wake.data = ws;
    ws->t = *t;
    ws->cb = link_callbacks;
    ws->user = l;
    ws->conn = t->open(t->user, url, ws);
    if (!ws->conn) { /* refused: it reports nothing */
        end_ws(ws);
        return HEARTH_EIO;
    }
    l->ws = ws;
    return 0;
}

int hearth__link_connect(uv_loop_t *loop, const hearth_transport_t *t,
                         const char *host, int port, const char *resource,
                         bool tls, const hearth__wsc_callbacks *cb, void *user,
                         hearth__link **out) {
    hearth__link *l = hearth__calloc(1, sizeof *l);
    if (!l)
        return HEARTH_ENOMEM;
    l->cb = *cb;
    l->user = user;
    int rc = t && t->open
                 ? open_program_transport(loop, t, host, port, resource, tls, l)
                 : hearth__wsc_connect(loop, host, port, resource, tls,
                                       &link_callbacks, l, &l->wsc);
    if (rc) {
        hearth__free(l);
        return rc;
    }
    *out = l;
    return 0;
}

int hearth__link_send(hearth__link *l, const char *text, size_t len) {
    if (l->wsc)
        return hearth__wsc_send(l->wsc, text, len);
    hearth_ws_t *ws = l->ws;
    if (!ws->user)
        return HEARTH_ECLOSED;
    return ws->t.send(ws->t.user, ws->conn, text, len) ? HEARTH_EIO : 0;
}

void hearth__link_close(hearth__link *l) {
    if (l->wsc) {
        hearth__wsc_close(l->wsc);
    } else if (l->ws->user) {
        l->ws->user = NULL; /* its reports are dropped from now on */
        l->ws->t.close(l->ws->t.user, l->ws->conn);
    }
    hearth__free(l);
}
