/* remote_connection.c - the realtime client's connection life: connect,
 * the hello, the credential (sent first, or asked of the owner), then
 * what was waiting; on a drop, what is lost, the onDisconnect writes the
 * server ran, and a reconnect after a growing backoff (started over by
 * hearth_db_reconnect_now); a keep-alive while idle. */
#include "client/remote_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Atomic uint64_t hearth__remote_test_first_delay_ms;
_Atomic uint64_t hearth__remote_test_keepalive_ms;

uint64_t hearth__remote_first_delay(void) {
    uint64_t t = atomic_load(&hearth__remote_test_first_delay_ms);
    return t ? t : FIRST_DELAY_MS;
}

static uint64_t keepalive_interval(void) {
    uint64_t t = atomic_load(&hearth__remote_test_keepalive_ms);
    return t ? t : KEEPALIVE_MS;
}

/* Every interval while connected: "0" (the protocol's keep-alive, which
 * the server skips) when nothing else was sent in it. */
static void on_keepalive(uv_timer_t *t) {
    hearth__remote *r = t->data;
    uint64_t every = keepalive_interval();
    if (r->ws && uv_now(r->loop) - r->last_send_ms >= every)
        hearth__remote_send_keepalive(r);
}


static void send_auth(hearth__remote *r) {
    json_t *b = r->auth_token ? json_pack("{s:s}", "cred", r->auth_token)
                              : json_object();
    if (b)
        hearth__remote_send_request(r, r->auth_token ? "auth" : "unauth", b, REQ_AUTH, NULL);
    json_decref(b);
}

/* The credential is settled: send it, then the listens, writes and gets
 * not yet sent on this connection, in order (the server handles them in
 * that order, so they are judged as this user). */
static void become_ready(hearth__remote *r) {
    r->ready = true;
    r->awaiting_token = false;
    if (r->auth_token)
        send_auth(r);
    HEARTH__LIST_EACH_ITEM(l, &r->listens, listen_rec, link)
        hearth__remote_send_listen(r, l);
    HEARTH__LIST_EACH_ITEM(w, &r->writes, write_rec, link)
        hearth__remote_send_write(r, w);
    HEARTH__LIST_EACH_ITEM(g, &r->gets, get_rec, link)
        hearth__remote_send_get(r, g);
}

/* The hello: the connection is usable once the credential is known. */
void hearth__remote_on_hello(hearth__remote *r, json_t *d) {
    json_t *ts = json_object_get(d, "ts");
    double t = json_number_value(ts); /* 0 when not a number */
    /* A time in ms since 1970 that a double holds exactly; anything else
     * (a hostile server's 1e300) is ignored rather than overflowed. */
    if (t > 0 && t < 9007199254740992.0)
        r->time_offset = (int64_t)t - hearth_now_ms();
    r->connected = true;
    r->delay_ms = hearth__remote_first_delay();
    uint64_t every = keepalive_interval();
    uv_timer_start(&r->keepalive, on_keepalive, every, every);
    r->next_r = 0;
    hearth__remote_publish_info(r);
    hearth__remote_raise_events(r);
    if (r->want_token && r->hooks.token_wanted) {
        r->awaiting_token = true;
        r->hooks.token_wanted(r->hooks.ctx);
    } else {
        become_ready(r);
    }
}

int hearth__remote_set_auth(hearth__remote *r, const char *token) {
    char *copy = token ? hearth__strndup(token, strlen(token)) : NULL;
    if (token && !copy)
        return HEARTH_ENOMEM;
    bool had = r->auth_token != NULL;
    hearth__free(r->auth_token);
    r->auth_token = copy;
    if (r->awaiting_token)
        become_ready(r);
    else if (r->ready && (copy || had))
        send_auth(r);
    return 0;
}

void hearth__remote_wait_for_token(hearth__remote *r, bool wait) {
    r->want_token = wait;
    if (wait && r->ready && r->hooks.token_wanted) {
        /* For this connection too: what comes next waits for the token. */
        r->ready = false;
        r->awaiting_token = true;
        r->hooks.token_wanted(r->hooks.ctx);
    } else if (!wait && r->awaiting_token) {
        become_ready(r);
    }
}

void hearth__remote_auth_answered(hearth__remote *r, const char *status, json_t *d) {
    if (!strcmp(status, "ok")) {
        r->auth_refusals = 0;
        return;
    }
    /* The server goes on with this connection unauthenticated. */
    hearth__log(HEARTH_LOG_WARNING, "the server refused the auth token: %s%s%s",
            status, json_is_string(d) ? ": " : "",
            json_is_string(d) ? json_string_value(d) : "");
    /* With a provider, as the SDKs do: the token is dropped and the
     * connection made again, which asks the provider for a new one (the
     * server may have fetched a rotated key by then). From the third
     * refusal in a row, only after the longest backoff. */
    bool token_refused = !strcmp(status, "invalid_token") || !strcmp(status, "expired_token");
    if (!token_refused || !r->want_token || !r->hooks.token_wanted)
        return;
    if (++r->auth_refusals == AUTH_REFUSALS_SLOW)
        hearth__log(HEARTH_LOG_WARNING, "the token provider's tokens were refused %d times "
                        "in a row; asking it again every %d s",
                AUTH_REFUSALS_SLOW, MAX_DELAY_MS / 1000);
    hearth__free(r->auth_token);
    r->auth_token = NULL;
    r->delay_ms = r->auth_refusals >= AUTH_REFUSALS_SLOW ? MAX_DELAY_MS : FIRST_DELAY_MS;
    hearth__remote_drop_connection(r);
}


void hearth__remote_purge(hearth__remote *r) {
    for (batch *b; (b = HEARTH__LIST_FIRST_ITEM(&r->batches, batch, link));)
        hearth__remote_batch_abandon(r, b, HEARTH_ECANCELED);
    hearth__remote_finish_all_txs(r);
    HEARTH__LIST_EACH_ITEM(w, &r->writes, write_rec, link) {
        if (w->id >= 0) {
            hearth__remote_unlink_write(r, w);
            hearth__remote_drop_requests_for(r, w);
            hearth__remote_forget_write(r, w);
            hearth__sync_ack(&r->sync, w->id, true);
            if (w->done)
                w->done(HEARTH_ECANCELED, w->arg);
            hearth__remote_write_free(w);
        }
    }
    hearth__remote_raise_events(r);
    hearth__remote_flush_finished(r);
}


/* ---- the connection's life ---- */


static void on_retry(uv_timer_t *timer) { hearth__remote_connect_now(timer->data); }

static void schedule_retry(hearth__remote *r) {
    if (r->closing || !r->online || r->shut_down)
        return;
    /* Jittered, so that clients cut off together do not return together. */
    uint64_t delay =
        r->delay_ms / 2 + hearth__rng_below(&r->jitter, r->delay_ms / 2 + 1);
    r->delay_ms = r->delay_ms * 13 / 10;
    if (r->delay_ms > MAX_DELAY_MS)
        r->delay_ms = MAX_DELAY_MS;
    uv_timer_start(&r->retry, on_retry, delay, 0);
}

/* The server runs the accepted onDisconnect writes as the connection
 * ends: the client shows them at once, as server data (the server's own
 * data follows on the next connection), server values estimated as for
 * its own writes. The server forgets them then, so the client does too. */
static void run_on_disconnect(hearth__remote *r) {
    hearth__od_list ops = r->on_disconnect;
    memset(&r->on_disconnect, 0, sizeof r->on_disconnect);
    for (size_t i = 0; i < ops.n; i++) {
        hearth__path p;
        if (hearth__path_parse(ops.e[i].path, HEARTH__PATH_ALLOW_PRIORITY, &p,
                               NULL))
            continue;
        hearth_node_t *local = hearth__remote_estimate(r, &p, ops.e[i].value);
        if (local)
            hearth__sync_server_set(&r->sync, &p, local, 0);
        hearth_node_decref(local);
    }
    if (ops.n)
        hearth__remote_schedule_save(r);
    hearth__od_clear(&ops);
}

/* The line dropped: requests in flight are lost. Listens and plain writes
 * are sent again after the next hello; a compare-and-set is not (its
 * guess may be stale by then): its transaction ends with "disconnected". */
static void went_offline(hearth__remote *r) {
    bool was = r->connected;
    r->connected = false;
    uv_timer_stop(&r->keepalive);
    r->ready = false;
    r->awaiting_token = false;
    hearth__v5_joiner_reset(&r->pieces);
    hearth__remote_free_requests(r);
    HEARTH__LIST_EACH_ITEM(b, &r->batches, batch, link)
        if (b->write && b->write->sent)
            hearth__remote_batch_abandon(r, b, HEARTH_EDISCONNECTED);
    HEARTH__LIST_EACH_ITEM(w, &r->writes, write_rec, link)
        w->sent = false;
    HEARTH__LIST_EACH_ITEM(l, &r->listens, listen_rec, link)
        l->sent = false;
    bool waiting = false;
    HEARTH__LIST_EACH_ITEM(g, &r->gets, get_rec, link) {
        g->sent = false;
        g->deadline = uv_now(r->loop) + GET_CONNECT_MS;
        waiting = true;
    }
    if (waiting && !r->closing)
        uv_timer_start(&r->get_timer, hearth__remote_on_get_timer, GET_CONNECT_MS, 0);
    if (was) {
        hearth__remote_set_info(r, "connected", hearth_node_boolean(false));
        run_on_disconnect(r);
        hearth__remote_raise_events(r);
    }
    hearth__remote_flush_finished(r);
}

static void on_open(void *user) { (void)user; /* the hello follows */ }

static void on_close(void *user, int status, const char *why) {
    hearth__remote *r = user;
    (void)status;
    (void)why;
    r->ws = NULL;
    went_offline(r);
    schedule_retry(r);
}

/* Ends the connection from our side; the next one comes after the usual
 * backoff. */
void hearth__remote_drop_connection(hearth__remote *r) {
    if (r->ws) {
        hearth__link_close(r->ws);
        r->ws = NULL;
    }
    went_offline(r);
    schedule_retry(r);
}

void hearth__remote_connect_now(hearth__remote *r) {
    if (r->ws || r->closing || !r->online || r->shut_down)
        return;
    static const hearth__wsc_callbacks cb = {on_open, hearth__remote_on_message, on_close};
    if (hearth__link_connect(r->loop, &r->url.transport, r->url.host,
                             r->url.port, r->resource, r->url.tls, &cb, r,
                             &r->ws)) {
        r->ws = NULL;
        schedule_retry(r);
    }
}

void hearth__remote_reconnect_now(hearth__remote *r) {
    r->delay_ms = hearth__remote_first_delay();
    if (r->ws || r->closing || !r->online || r->shut_down)
        return; /* connected or connecting, or not to be */
    uv_timer_stop(&r->retry);
    hearth__remote_connect_now(r);
}

void hearth__remote_set_online(hearth__remote *r, bool online) {
    if (r->online == online)
        return;
    r->online = online;
    if (online) {
        r->delay_ms = hearth__remote_first_delay();
        hearth__remote_connect_now(r);
        return;
    }
    uv_timer_stop(&r->retry);
    if (r->ws) {
        hearth__link_close(r->ws);
        r->ws = NULL;
    }
    went_offline(r);
}
