/* realtime.c - the realtime protocol (v5) on the server: one session per
 * WebSocket, speaking to its namespace's database on the server's loop.
 * This file holds the session's life (hello, messages joined from pieces
 * and dispatched, identity, rules changes, close) and its sending; the
 * requests live in realtime_listen.c (listens and gets), realtime_write.c
 * (puts and merges) and realtime_ondisconnect.c.
 *
 * Listens are value observers whose events become `d` pushes (tagged for
 * tagged queries); the initial push goes out before the listen's `ok`
 * because the observer raises it while the request is handled. Writes are
 * applied at once (the writer's own listeners see them first) and answered
 * `ok` after their commit. onDisconnect writes run when the connection
 * closes. Malformed messages get an `invalid_args` answer; malformed frames
 * close that one connection. */
#include "server/realtime_internal.h"
#include "server/usage.h"


#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sending ---- */

static int send_frame(void *ws, const char *frame, size_t len) {
    return hearth__ws_send_text(ws, frame, len);
}

/* Sends one message, in v5 pieces when long. */
void hearth__realtime_send_json(session *s, json_t *msg) {
    char *text = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(msg);
    if (text && s->ws)
        hearth__v5_send(text, strlen(text), SIZE_MAX, send_frame, s->ws);
    free(text);
}

void hearth__realtime_reply(session *s, json_int_t r, const char *status, json_t *data) {
    hearth__realtime_send_json(s, json_pack("{s:s,s:{s:I,s:{s:s,s:o}}}", "t", "d", "d", "r", r,
                           "b", "s", status, "d", data ? data : json_object()));
}

json_t *hearth__realtime_data_msg(const char *path, const hearth_node_t *value,
                                  json_t *tag) {
    json_t *body = json_pack("{s:s,s:o}", "p", path,
                             "d", hearth_node_to_jansson(value, HEARTH_JSON_EXPORT));
    if (body && tag)
        json_object_set(body, "t", tag);
    return json_pack("{s:s,s:{s:s,s:o}}", "t", "d", "d", "a", "d", "b", body);
}

void hearth__realtime_push_data(session *s, const char *path, const hearth_node_t *value,
                                json_t *tag) {
    hearth__realtime_send_json(s, hearth__realtime_data_msg(path, value, tag));
}

/* ---- sessions ---- */

void hearth__realtime_session_release(session *s) {
    if (--s->refs > 0)
        return;
    hearth__principal_clear(&s->who);
    hearth__v5_joiner_reset(&s->pieces);
    hearth__realtime_ondisconnect_free(s);
    hearth__map_free(&s->index); /* none once the listens went: for safety */
    hearth__free(s);
}


/* ---- the rules ---- */

/* Requests are checked in this order: malformed ones are answered
 * invalid_args and nothing else; then reads are checked before they start;
 * writes are judged by the rules as they are applied (hearth__db_set_as),
 * as the identity the session has at that moment. */


static void recheck_session(session *s);

void hearth__realtime_deny(session *s, json_int_t r) {
    hearth__observe_realtime_denial(s->srv);
    hearth__realtime_reply(s, r, "permission_denied", json_string("Permission denied"));
}

/* auth / gauth: "owner" is the admin; a token becomes the rules' auth. */
static void do_auth(session *s, json_int_t r, json_t *b) {
    const char *cred = json_string_value(json_object_get(b, "cred"));
    if (!cred) {
        hearth__realtime_reply(s, r, "invalid_args", json_string("cred is required"));
        return;
    }
    hearth__principal who;
    bool expired;
    char why[256];
    if (!hearth__principal_of_token(s->srv, cred, &who, &expired, why, sizeof why)) {
        hearth__realtime_reply(s, r, expired ? "expired_token" : "invalid_token", json_string(why));
        return;
    }
    hearth__principal_clear(&s->who);
    s->who = who;
    json_t *auth = who.auth ? hearth_node_to_jansson(who.auth, 0) : json_null();
    hearth__realtime_reply(s, r, "ok", json_pack("{s:o}", "auth", auth ? auth : json_null()));
    /* A new identity reads what it may: listens it may not are revoked. */
    recheck_session(s);
}

static void do_unauth(session *s, json_int_t r) {
    hearth__principal_clear(&s->who);
    s->who.admin = false;
    hearth__realtime_reply(s, r, "ok", NULL);
    recheck_session(s);
}


static void dispatch(session *s, json_int_t r, const char *a, json_t *b);

/* The action's name for the metrics, the log and the profiler: one of
 * the protocol's, else "unknown" (a client cannot invent label values). */
static const char *known_action(const char *a) {
    static const char *const actions[] = {"q", "n", "p", "m", "g", "o", "om",
                                          "oc", "auth", "gauth", "unauth", "s",
                                          "appcheck", "unappcheck"};
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(actions); i++)
        if (strcmp(a, actions[i]) == 0)
            return actions[i];
    return "unknown";
}

/* One message of len bytes that arrived at `start` (uv_hrtime). */
static void handle(session *s, json_t *msg, size_t len, uint64_t start) {
    const char *t = json_string_value(json_object_get(msg, "t"));
    json_t *d = json_object_get(msg, "d");
    if (t && strcmp(t, "c") == 0) {
        const char *ct = json_string_value(json_object_get(d, "t"));
        if (ct && strcmp(ct, "p") == 0) /* ping: pong */
            hearth__realtime_send_json(s, json_pack("{s:s,s:{s:s,s:{}}}", "t", "c", "d", "t", "o",
                                   "d"));
        return;
    }
    json_t *rj = json_object_get(d, "r");
    const char *a = json_string_value(json_object_get(d, "a"));
    json_t *b = json_object_get(d, "b");
    if (!t || strcmp(t, "d") != 0 || !json_is_integer(rj) || !a ||
        !json_is_object(b)) {
        if (json_is_integer(rj))
            hearth__realtime_reply(s, json_integer_value(rj), "invalid_args",
                  json_string("malformed request"));
        return;
    }
    json_int_t r = json_integer_value(rj);
    hearth__usage_count(s->srv, s->ns,
                        !strcmp(a, "q")                      ? HEARTH__USAGE_LISTEN
                        : !strcmp(a, "g")                    ? HEARTH__USAGE_READ
                        : !strcmp(a, "p") || !strcmp(a, "m") ? HEARTH__USAGE_WRITE
                                                             : HEARTH__USAGE_NONE);
    dispatch(s, r, a, b);
    const char *path = json_string_value(json_object_get(b, "p"));
    hearth__op op = {.door = "realtime", .type = known_action(a), .ns = s->ns->name,
                     .path = path ? path : "", .status = "handled",
                     .write = !strcmp(a, "p") || !strcmp(a, "m"),
                     .bytes_in = len,
                     .unindexed = hearth__observe_unindexed(
                         s->ns, path, json_object_get(b, "q")),
                     .duration_ns = uv_hrtime() - start};
    hearth__observe_op(s->srv, &op);
}

static void dispatch(session *s, json_int_t r, const char *a, json_t *b) {
    if (strcmp(a, "q") == 0)
        hearth__realtime_listen(s, r, b);
    else if (strcmp(a, "n") == 0)
        hearth__realtime_unlisten(s, r, b);
    else if (strcmp(a, "p") == 0)
        hearth__realtime_put(s, r, b);
    else if (strcmp(a, "m") == 0)
        hearth__realtime_merge(s, r, b);
    else if (strcmp(a, "g") == 0)
        hearth__realtime_get(s, r, b);
    else if (!strcmp(a, "o") || !strcmp(a, "om") || !strcmp(a, "oc"))
        hearth__realtime_ondisconnect(s, r, a, b);
    else if (!strcmp(a, "auth") || !strcmp(a, "gauth"))
        do_auth(s, r, b);
    else if (!strcmp(a, "unauth"))
        do_unauth(s, r);
    else if (!strcmp(a, "s"))
        hearth__realtime_reply(s, r, "ok", NULL);
    else if (!strcmp(a, "appcheck") || !strcmp(a, "unappcheck"))
        /* App Check tokens, sent by the SDKs on every refresh: any answer
         * but ok makes them drop the connection. Hearth enforces no App
         * Check (verifying the token, when configured, comes with the
         * Firebase keys: see the Firebase Auth keys issue). */
        hearth__realtime_reply(s, r, "ok", NULL);
    else
        hearth__realtime_reply(s, r, "invalid_args", json_string("unknown action"));
}

static void on_message(void *user, const char *text, size_t len) {
    session *s = user;
    const char *joined;
    size_t joined_len;
    int rc = hearth__v5_join(&s->pieces, text, len, &joined, &joined_len);
    if (rc < 0) {
        /* The pieces pass what one message may hold: end this one
         * connection rather than buffer without bound. */
        if (s->ws)
            hearth__ws_close(s->ws);
        return;
    }
    if (rc == HEARTH__V5_MORE)
        return;
    uint64_t start = uv_hrtime();
    json_t *msg = hearth__v5_parse(joined, joined_len);
    hearth__v5_joiner_reset(&s->pieces); /* a joined message's memory */
    if (msg)
        handle(s, msg, joined_len, start);
    json_decref(msg);
}

/* Ends the session's listens it may no longer read: the client cancels
 * its registrations there. */
static void recheck_session(session *s) {
    HEARTH__LIST_EACH_SAFE(n, &s->listens) {
        listen_t *l = HEARTH__LISTEN_OF(n);
        if (hearth__realtime_may_read(s, l->path, l->wire_query))
            continue;
        json_t *body = json_pack("{s:s}", "p", l->path);
        if (body && l->wire_query)
            json_object_set(body, "q", l->wire_query);
        if (body)
            hearth__realtime_send_json(s, json_pack("{s:s,s:{s:s,s:o}}", "t", "d", "d", "a",
                                   "c", "b", body));
        hearth__realtime_listen_unlink(s, l);
        hearth_db_remove_observer(s->ns->db, l->handle); /* frees l */
    }
}

void hearth__realtime_count(const hearth__server *srv, size_t *sessions,
                            size_t *listens) {
    *sessions = *listens = 0;
    HEARTH__LIST_EACH(n, &srv->sessions) {
        *sessions += 1;
        *listens += HEARTH__SESSION_OF(n)->nlistens;
    }
}

void hearth__realtime_recheck(hearth__server *srv, hearth__namespace *ns) {
    HEARTH__LIST_EACH(n, &srv->sessions) {
        session *s = HEARTH__SESSION_OF(n);
        if (s->ns == ns && s->ws)
            recheck_session(s);
    }
}

void hearth__realtime_expire(hearth__server *srv, int64_t now_ms) {
    HEARTH__LIST_EACH(n, &srv->sessions) {
        session *s = HEARTH__SESSION_OF(n);
        if (!s->ws || !hearth__principal_expired(&s->who, now_ms))
            continue;
        hearth__principal_clear(&s->who);
        hearth__realtime_send_json(s, json_pack("{s:s,s:{s:s,s:{s:s,s:s}}}", "t", "d", "d", "a",
                               "ac", "b", "s", "expired_token", "d",
                               "Auth token is expired."));
        recheck_session(s);
    }
}

void hearth__realtime_close_unavailable(hearth__server *srv) {
    /* Closed, not answered: the SDKs reconnect by themselves and listen
     * again, meeting 503 until the data is served again (a listen
     * answered "unavailable" would cancel the app's observers). */
    HEARTH__LIST_EACH_SAFE(n, &srv->sessions) {
        session *s = HEARTH__SESSION_OF(n);
        if (s->ws && hearth__db_unavailable(s->ns->db))
            hearth__ws_close(s->ws);
    }
}

static void on_close(void *user) {
    session *s = user;
    s->ws = NULL;
    hearth__list_remove(&s->link);
    hearth__realtime_run_ondisconnect(s);
    for (hearth__list *n; (n = hearth__list_first(&s->listens));) {
        listen_t *l = HEARTH__LISTEN_OF(n);
        hearth__realtime_listen_unlink(s, l);
        hearth_db_remove_observer(s->ns->db, l->handle);
    }
    hearth__ns_release(s->srv, s->ns); /* what is left never uses it */
    hearth__realtime_session_release(s);
}

void hearth__realtime_accept(hearth__server *srv, hearth__http_conn *conn,
                             const hearth__http_request *req,
                             hearth__namespace *ns) {
    session *s = hearth__calloc(1, sizeof *s);
    if (!s) {
        hearth__http_respond(conn, 503, "application/json", NULL,
                             "{\"error\":\"out of memory\"}", 25);
        return;
    }
    s->srv = srv;
    s->ns = ns;
    s->refs = 1;
    s->who.door = "realtime";
    hearth__v5_joiner_init(&s->pieces, HEARTH__V5_MAX_TO_SERVER);
    /* The request is gone once the connection is upgraded: keep its host
     * (or the public host configured) for the hello, where the SDKs
     * connect next time. */
    const char *host_header = srv->public_host
                                  ? srv->public_host
                                  : hearth__http_get_header(req, "host");
    if (!host_header)
        host_header = "localhost";
    char *host = hearth__strndup(host_header, strlen(host_header));
    int rc = host ? hearth__ws_accept(conn, req, on_message, on_close, s, &s->ws)
                  : HEARTH_ENOMEM;
    if (rc == HEARTH_EINVAL) {
        hearth__free(host);
        hearth__free(s);
        hearth__http_respond(conn, 400, "application/json", NULL,
                             "{\"error\":\"not a WebSocket request\"}", 35);
        return;
    }
    if (rc) {
        if (!host)
            hearth__http_respond(conn, 503, "application/json", NULL,
                                 "{\"error\":\"out of memory\"}", 25);
        hearth__free(host);
        hearth__free(s);
        return;
    }
    /* Open: rules changes check its listens; the namespace stays open
     * until the connection closes. */
    hearth__ns_hold(ns);
    hearth__list_push_front(&srv->sessions, &s->link);
    /* The hello: server time, version, host, session id. */
    static atomic_ullong sessions; /* servers may share the process */
    char sid[32];
    snprintf(sid, sizeof sid, "hearth-%llu",
             (unsigned long long)atomic_fetch_add(&sessions, 1) + 1);
    json_t *h = json_string(host); /* NULL when not UTF-8 */
    hearth__free(host);
    hearth__realtime_send_json(s, json_pack("{s:s,s:{s:s,s:{s:I,s:s,s:o,s:s}}}", "t", "c", "d", "t",
                           "h", "d", "ts", (json_int_t)hearth_now_ms(), "v", "5",
                           "h", h ? h : json_string("localhost"), "s", sid));
}
