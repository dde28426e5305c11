/* remote.c - the client side of the realtime protocol, its handle: the
 * database URL, opening and closing a client, and the log of messages.
 * The rest lives beside it, one job a file: remote_wire.c (sending
 * requests, the server's messages), remote_connection.c (connect, hello,
 * auth, backoff, going offline), remote_listen.c (listens and .info),
 * remote_write.c, remote_get.c, remote_transaction.c (how a transaction
 * runs, retries and commits) and remote_cache.c (the cache on disk). */
#include "client/remote_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- logging ---- */

atomic_bool hearth__remote_logging;

void hearth_set_logging(bool enabled) { atomic_store(&hearth__remote_logging, enabled); }

void hearth__remote_log_message(char direction, const char *text, size_t len) {
    if (!atomic_load_explicit(&hearth__remote_logging, memory_order_relaxed) ||
        !hearth__log_on())
        return;
    hearth__buf line;
    hearth__buf_init(&line);
    hearth__buf_printf(&line, "%c %.*s", direction,
                       len > 2000 ? 2000 : (int)len, text);
    hearth__buf_addc(&line, '\0');
    if (!line.failed)
        hearth__log_line(HEARTH_LOG_MESSAGE, line.data);
    hearth__buf_free(&line);
}

/* ---- URLs ---- */

int hearth__remote_parse_url(const char *url, hearth__remote_url *out,
                             hearth_error_t *err) {
    memset(out, 0, sizeof *out);
    if (!url)
        return hearth__error(err, HEARTH_EINVAL, NULL, "url is NULL");
    const char *rest;
    if (!strncmp(url, "http://", 7) || !strncmp(url, "ws://", 5)) {
        rest = strstr(url, "//") + 2;
    } else if (!strncmp(url, "https://", 8) || !strncmp(url, "wss://", 6)) {
        rest = strstr(url, "//") + 2;
        out->tls = true;
    } else {
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "database URL \"%.64s\" must start with http://, "
                             "https://, ws:// or wss://",
                             url);
    }
    size_t hostlen = strcspn(rest, ":/?");
    if (hostlen == 0 || hostlen >= sizeof out->host)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "database URL \"%.64s\" has no host", url);
    memcpy(out->host, rest, hostlen);
    rest += hostlen;
    out->port = out->tls ? 443 : 80;
    if (*rest == ':') {
        char *end;
        long port = strtol(rest + 1, &end, 10);
        if (end == rest + 1 || port <= 0 || port > 65535)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "database URL \"%.64s\" has a bad port", url);
        out->port = (int)port;
        rest = end;
    }
    const char *ns = strstr(rest, "ns=");
    if (ns && (ns[-1] == '?' || ns[-1] == '&')) {
        size_t len = strcspn(ns + 3, "&#");
        if (len == 0 || len >= sizeof out->ns)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "database URL \"%.64s\" has a bad ns", url);
        memcpy(out->ns, ns + 3, len);
    } else if (strspn(out->host, "0123456789.:") == strlen(out->host) ||
               !strchr(out->host, '.')) {
        /* An address or a bare host name (localhost): a local server's
         * default namespace. */
        strcpy(out->ns, "default");
    } else {
        /* NAME.firebaseio.com and the like: the first label. */
        size_t len = strcspn(out->host, ".");
        if (len >= sizeof out->ns)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "database URL \"%.64s\" has a namespace "
                                 "over %zu bytes",
                                 url, sizeof out->ns - 1);
        memcpy(out->ns, out->host, len);
    }
    return 0;
}


int hearth__remote_open(uv_loop_t *loop, const hearth__remote_url *url,
                        hearth__event_queue *events,
                        const hearth__remote_hooks *hooks,
                        hearth__remote **out) {
    hearth__remote *r = hearth__calloc(1, sizeof *r);
    if (!r)
        return HEARTH_ENOMEM;
    int rc = hearth__sync_init(&r->sync);
    if (rc) {
        hearth__free(r);
        return rc;
    }
    r->loop = loop;
    r->url = *url;
    snprintf(r->resource, sizeof r->resource, "/.ws?v=5&ns=%s", url->ns);
    r->sync.events = events;
    r->hooks = *hooks;
    r->online = true;
    r->delay_ms = hearth__remote_first_delay();
    hearth__rng_seed(&r->jitter);
    hearth__v5_joiner_init(&r->pieces, HEARTH__V5_MAX_TO_CLIENT);
    uv_timer_init(loop, &r->retry);
    r->retry.data = r;
    uv_timer_init(loop, &r->get_timer);
    r->get_timer.data = r;
    uv_timer_init(loop, &r->save_timer);
    r->save_timer.data = r;
    uv_timer_init(loop, &r->keepalive);
    r->keepalive.data = r;
    r->open_handles = 4;
    hearth__remote_set_info(r, "connected", hearth_node_boolean(false));
    *out = r;
    hearth__remote_connect_now(r);
    return 0;
}

static void on_timer_closed(uv_handle_t *h) {
    hearth__remote *r = h->data;
    if (--r->open_handles)
        return;
    hearth__disk_close(r->disk);
    hearth__v5_joiner_reset(&r->pieces);
    hearth__free(r->auth_token);
    hearth__free(r);
}

void hearth__remote_close(hearth__remote *r) {
    if (r->disk)
        hearth__remote_save_views(r); /* the last server data, before the views go */
    r->closing = true;
    if (r->ws) {
        hearth__link_close(r->ws);
        r->ws = NULL;
    }
    r->connected = false;
    r->ready = false;
    hearth__remote_free_requests(r);
    for (batch *b; (b = HEARTH__LIST_FIRST_ITEM(&r->batches, batch, link));) {
        if (b->write) {
            hearth__remote_unlink_write(r, b->write);
            hearth__remote_write_free(b->write);
            b->write = NULL;
        }
        hearth__remote_batch_finish(r, b, HEARTH_ECANCELED, false);
    }
    hearth__remote_finish_all_txs(r);
    hearth__remote_flush_finished(r);
    for (hearth__list *n; (n = hearth__list_pop_front(&r->writes));) {
        write_rec *w = HEARTH__LIST_ITEM(n, write_rec, link);
        if (w->done)
            w->done(HEARTH_ECANCELED, w->arg);
        hearth__remote_write_free(w);
    }
    for (hearth__list *n; (n = hearth__list_pop_front(&r->gets));) {
        get_rec *g = HEARTH__LIST_ITEM(n, get_rec, link);
        g->done(HEARTH_ECANCELED, NULL, g->arg);
        hearth__remote_get_free(g);
    }
    for (hearth__list *n; (n = hearth__list_pop_front(&r->listens));)
        hearth__remote_listen_free(HEARTH__LIST_ITEM(n, listen_rec, link));
    hearth__od_clear(&r->on_disconnect);
    hearth__sync_destroy(&r->sync);
    uv_close((uv_handle_t *)&r->retry, on_timer_closed);
    uv_close((uv_handle_t *)&r->get_timer, on_timer_closed);
    uv_close((uv_handle_t *)&r->save_timer, on_timer_closed);
    uv_close((uv_handle_t *)&r->keepalive, on_timer_closed);
}
