/* http_upgrade.c - a connection handed to another protocol (WebSocket):
 * the 101 answer, raw bytes both ways, the budget for what it assembles,
 * and its idle check. */
#include "server/http_internal.h"

#include <stdio.h>
#include <string.h>

int hearth__http_upgrade(hearth__http_conn *c, const char *headers,
                         void (*on_data)(void *ctx, char *data, size_t len),
                         void (*on_close)(void *ctx), void *ctx) {
    int rc = hearth__http_may_take_over(c, NULL, headers);
    if (rc)
        return rc;
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 101 Switching Protocols\r\n"
                     "Upgrade: websocket\r\nConnection: Upgrade\r\n%s\r\n",
                     headers ? headers : "");
    hearth__http_observe(c, "websocket", 101, 0);
    c->last_in = uv_now(c->server->loop);
    c->on_data = on_data;
    hearth__http_take_over(c, head, (size_t)n, on_close, ctx);
    /* Bytes that came right behind the request belong to the new protocol:
     * on_read hands them over with the next read, or now. */
    if (c->in_len > c->in_off && !c->closing) {
        size_t len = c->in_len - c->in_off;
        char *copy = hearth__malloc(len);
        if (copy) {
            memcpy(copy, c->in + c->in_off, len);
            c->in_off = c->in_len = 0;
            on_data(ctx, copy, len);
            hearth__free(copy);
        }
    }
    return 0;
}

bool hearth__http_hold(hearth__http_conn *c, size_t n) {
    return c->peer && hearth__budget_take(c->server->budget, c->peer, n);
}

void hearth__http_unhold(hearth__http_conn *c, size_t n) {
    if (n)
        hearth__budget_give(c->server->budget, c->peer, n);
}

void hearth__http_on_idle(hearth__http_conn *c, void (*on_idle)(void *ctx)) {
    c->on_idle = on_idle;
}

/* An upgraded connection silent for the idle timeout is asked to answer
 * (a WebSocket ping, which every client answers by itself), and closed
 * when still silent after twice the timeout. */
void hearth__http_check_upgraded(hearth__http_conn *c, uint64_t now) {
    uint64_t idle = c->server->limits.idle_ms;
    if (!idle || now - c->last_in < idle)
        return;
    if (now - c->last_in >= 2 * idle) {
        hearth__http_conn_close(c);
    } else if (!c->pinged && c->on_idle) {
        c->pinged = true;
        c->on_idle(c->on_close_ctx);
    }
}

