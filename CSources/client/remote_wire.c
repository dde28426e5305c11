/* remote_wire.c - the realtime client's messages: requests sent (in v5
 * pieces when long) and remembered until answered, and the server's
 * messages joined from pieces and dispatched: answers, data pushes,
 * revoked listens and tokens. */
#include "client/remote_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sending ---- */

void hearth__remote_raise_events(hearth__remote *r) { r->hooks.raise(r->hooks.ctx); }


char *hearth__remote_path_text(const hearth__path *p) {
    char buf[HEARTH_MAX_DEPTH * (HEARTH_MAX_KEY_BYTES + 1) + 64];
    hearth__path_format(p, p->n, buf, sizeof buf);
    size_t len = strlen(buf);
    if (p->priority) {
        snprintf(buf + len, sizeof buf - len, "%s.priority", len > 1 ? "/" : "");
        len = strlen(buf);
    }
    if (len == 0)
        return hearth__strndup("/", 1);
    return hearth__strndup(buf, len);
}

static int send_frame(void *ws, const char *frame, size_t len) {
    return hearth__link_send(ws, frame, len);
}

/* Sends one message, in v5 pieces when long; HEARTH_ETOOBIG past what the
 * server joins (it would drop the connection, and the message would be
 * sent again on the next one). */
static int send_text(hearth__remote *r, const char *text, size_t len) {
    if (!r->ws)
        return HEARTH_ECLOSED;
    hearth__remote_log_message('>', text, len);
    r->last_send_ms = uv_now(r->loop);
    return hearth__v5_send(text, len, HEARTH__V5_MAX_TO_SERVER, send_frame,
                           r->ws);
}

int hearth__remote_send_keepalive(hearth__remote *r) {
    return send_text(r, "0", 1);
}

static int send_json(hearth__remote *r, json_t *msg) {
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!text)
        return HEARTH_ENOMEM;
    int rc = send_text(r, text, strlen(text));
    free(text);
    return rc;
}

/* Sends a request and remembers what its answer is for. */
int hearth__remote_send_request(hearth__remote *r, const char *action, json_t *body,
                                req_kind kind, void *item) {
    outreq *q = hearth__malloc(sizeof *q);
    if (!q)
        return HEARTH_ENOMEM;
    int64_t n = ++r->next_r;
    json_t *msg = json_pack("{s:s,s:{s:I,s:s,s:O}}", "t", "d", "d", "r",
                            (json_int_t)n, "a", action, "b", body);
    int rc = msg ? send_json(r, msg) : HEARTH_ENOMEM;
    if (rc) {
        hearth__free(q);
        return rc;
    }
    *q = (outreq){n, kind, item, {0}};
    hearth__list_push_front(&r->reqs, &q->link);
    return 0;
}

static outreq *take_request(hearth__remote *r, int64_t n) {
    HEARTH__LIST_EACH_ITEM(q, &r->reqs, outreq, link)
        if (q->r == n) {
            hearth__list_remove(&q->link);
            return q;
        }
    return NULL;
}

/* Forgets requests for item (it is going away). */
void hearth__remote_drop_requests_for(hearth__remote *r, const void *item) {
    HEARTH__LIST_EACH_ITEM(q, &r->reqs, outreq, link)
        if (q->item == item) {
            hearth__list_remove(&q->link);
            hearth__free(q);
        }
}

void hearth__remote_free_requests(hearth__remote *r) {
    for (hearth__list *n; (n = hearth__list_pop_front(&r->reqs));)
        hearth__free(HEARTH__LIST_ITEM(n, outreq, link));
}


/* ---- the server's messages ---- */

static hearth__ptree *merge_tree(json_t *data) {
    hearth__ptree *t;
    if (hearth__ptree_create(&t))
        return NULL;
    const char *key;
    json_t *value;
    json_object_foreach(data, key, value) {
        hearth__path p;
        hearth_node_t *n = NULL;
        if (hearth__path_parse(key, HEARTH__PATH_ALLOW_PRIORITY, &p, NULL) ||
            hearth_node_from_jansson(value, 0, &n, NULL)) {
            hearth__ptree_free(t);
            return NULL;
        }
        hearth__spath sp;
        hearth__spath_from(&sp, &p);
        int rc = hearth__ptree_set(t, sp.seg, sp.n, n);
        hearth_node_decref(n);
        if (rc) {
            hearth__ptree_free(t);
            return NULL;
        }
    }
    return t;
}

/* Data the server pushed: an overwrite or a merge, perhaps tagged. */
static void on_push(hearth__remote *r, const char *action, json_t *b) {
    const char *path = json_string_value(json_object_get(b, "p"));
    json_t *data = json_object_get(b, "d");
    json_t *tag = json_object_get(b, "t");
    hearth__path p;
    if (!path || !data || hearth__path_parse(path, 0, &p, NULL))
        return;
    int64_t t = json_is_integer(tag) ? json_integer_value(tag) : 0;
    if (!strcmp(action, "d")) {
        hearth_node_t *n = NULL;
        if (hearth_node_from_jansson(data, 0, &n, NULL))
            return;
        hearth__sync_server_set(&r->sync, &p, n, t);
        hearth_node_decref(n);
    } else if (!strcmp(action, "m") && json_is_object(data)) {
        hearth__ptree *m = merge_tree(data);
        if (!m)
            return;
        hearth__sync_server_merge(&r->sync, &p, m, t);
        hearth__ptree_free(m);
    } else {
        return;
    }
    hearth__remote_raise_events(r);
    hearth__remote_schedule_save(r);
}


/* A write's or get's refusal as its completion's detail: the server's
 * words and status ("Permission denied (permission_denied)") and the path
 * asked for. */
static void refusal_detail(const char *status, json_t *answer,
                           const char *path, hearth_error_t *err) {
    const char *words = json_string_value(json_object_get(answer, "d"));
    hearth__error(err, hearth__remote_status_code(status), path,
                  "%.160s (%.64s)", words && *words ? words : "refused",
                  status);
}

static void on_response(hearth__remote *r, int64_t n, json_t *b) {
    outreq *q = take_request(r, n);
    if (!q)
        return;
    const char *s = json_string_value(json_object_get(b, "s"));
    if (!s)
        s = "invalid";
    hearth_error_t detail = {0};
    const hearth_error_t *outer;
    switch (q->kind) {
    case REQ_LISTEN:
        hearth__remote_listen_done(r, q->item, s);
        break;
    case REQ_WRITE: {
        write_rec *w = q->item;
        refusal_detail(s, b, json_string_value(json_object_get(w->body, "p")),
                       &detail);
        outer = hearth__completion_error_begin(&detail);
        hearth__remote_write_answered(r, w, hearth__remote_status_code(s));
        hearth__completion_error_end(outer);
        break;
    }
    case REQ_GET: {
        get_rec *g = q->item;
        refusal_detail(s, b, g->path, &detail);
        outer = hearth__completion_error_begin(&detail);
        hearth__remote_get_answered(r, g, hearth__remote_status_code(s),
                                    json_object_get(b, "d"));
        hearth__completion_error_end(outer);
        break;
    }
    case REQ_AUTH:
        hearth__remote_auth_answered(r, s, json_object_get(b, "d"));
        break;
    case REQ_PLAIN:
        break;
    }
    hearth__free(q);
}


/* `ac`: the server no longer accepts the token (it expired). The
 * connection goes on unauthenticated; a provider is asked for a new one. */
static void on_auth_revoked(hearth__remote *r, json_t *b) {
    const char *why = json_string_value(json_object_get(b, "s"));
    hearth__log(HEARTH_LOG_WARNING, "the server revoked the auth token: %s",
            why ? why : "(no reason)");
    hearth__free(r->auth_token);
    r->auth_token = NULL;
    if (r->want_token && r->hooks.token_wanted)
        r->hooks.token_wanted(r->hooks.ctx);
}

/* `c`: the server revoked a listen (the rules no longer allow it). */
static void on_listen_revoked(hearth__remote *r, json_t *b) {
    const char *path = json_string_value(json_object_get(b, "p"));
    json_t *q = json_object_get(b, "q");
    listen_rec *l = path ? hearth__remote_find_listen(r, path, json_is_object(q) ? q : NULL)
                         : NULL;
    if (l && !hearth__remote_is_info(l->path))
        hearth__remote_cancel_view(r, l->view, HEARTH_EDENIED);
}

static void handle(hearth__remote *r, const char *text, size_t len) {
    hearth__remote_log_message('<', text, len);
    json_t *msg = hearth__v5_parse(text, len);
    if (!msg)
        return; /* not a message: ignored */
    const char *t = json_string_value(json_object_get(msg, "t"));
    json_t *d = json_object_get(msg, "d");
    if (t && !strcmp(t, "c") && json_is_object(d)) {
        const char *ct = json_string_value(json_object_get(d, "t"));
        json_t *cd = json_object_get(d, "d");
        if (ct && !strcmp(ct, "h"))
            hearth__remote_on_hello(r, cd);
        else if (ct && !strcmp(ct, "s"))
            r->shut_down = true; /* stop reconnecting */
    } else if (t && !strcmp(t, "d") && json_is_object(d)) {
        json_t *rn = json_object_get(d, "r");
        json_t *b = json_object_get(d, "b");
        const char *a = json_string_value(json_object_get(d, "a"));
        if (json_is_integer(rn) && json_is_object(b))
            on_response(r, json_integer_value(rn), b);
        else if (a && json_is_object(b) && !strcmp(a, "c"))
            on_listen_revoked(r, b);
        else if (a && json_is_object(b) && !strcmp(a, "ac"))
            on_auth_revoked(r, b);
        else if (a && json_is_object(b))
            on_push(r, a, b);
    }
    json_decref(msg);
}


void hearth__remote_on_message(void *user, const char *text, size_t len) {
    hearth__remote *r = user;
    const char *msg;
    size_t msg_len;
    int rc = hearth__v5_join(&r->pieces, text, len, &msg, &msg_len);
    if (rc < 0) {
        /* Pieces past what one message may hold (a broken or hostile
         * server): this connection ends rather than the client growing. */
        hearth__log(HEARTH_LOG_WARNING, "the server sent a message over %zu bytes "
                        "(or one that did not fit in memory); reconnecting",
                r->pieces.max);
        hearth__remote_drop_connection(r);
        return;
    }
    if (rc == HEARTH__V5_MESSAGE)
        handle(r, msg, msg_len);
    if (rc == HEARTH__V5_MESSAGE && msg != text)
        hearth__v5_joiner_reset(&r->pieces); /* its memory, at once */
}


void hearth__remote_set_max_message(hearth__remote *r, size_t max) {
    r->pieces.max = max;
}

void hearth__remote_feed(hearth__remote *r, const char *text, size_t len) {
    hearth__remote_on_message(r, text, len);
}
