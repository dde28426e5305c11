/* serve.c - the leader's side of forwarded writes (cluster/forward.c is
 * the sender's, and says how they travel and how they are sealed): the
 * subscription to hearth.fwd.<namespace> while this node leads it, each
 * request opened, checked for this leader's term, freshness and replay
 * (replay.c), joined when it came in parts, submitted as its caller, and
 * answered at its acknowledgement with the sequence the sender's tail
 * must reach. */
#include "cluster/node.h"

#include "tree/json.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

static void on_forward_msg(natsConnection *nc, natsSubscription *sub,
                           natsMsg *m, void *closure) {
    (void)nc, (void)sub;
    hearth__cluster_post(closure, MSG_FORWARD, m, 0);
}

int hearth__cluster_serve_start(hearth__cluster_ns *n) {
    hearth__cluster *c = n->c;
    char subj[128];
    snprintf(subj, sizeof subj, "hearth.fwd.%s", n->name);
    return natsConnection_Subscribe(&n->fwd.serving, c->nc, subj, on_forward_msg,
                                    c) == NATS_OK
               ? 0
               : HEARTH_EIO;
}

void hearth__cluster_serve_stop(hearth__cluster_ns *n) {
    if (n->fwd.serving) {
        natsSubscription_Unsubscribe(n->fwd.serving);
        natsSubscription_Destroy(n->fwd.serving);
        n->fwd.serving = NULL;
    }
}

void hearth__cluster_serve_tick(hearth__cluster *c) {
    hearth__cluster_joins_expire(c, HEARTH__CLUSTER_FORWARD_MS);
    hearth__cluster_replay_expire(c);
}

typedef struct served {
    hearth__cluster *c;
    char *ns;
    char *reply;
} served;

/* text on reply, sealed for it. */
static void answer_text(hearth__cluster *c, const char *reply,
                        const char *text) {
    if (!hearth__cluster_sealed(c)) {
        natsConnection_PublishString(c->nc, reply, text);
        return;
    }
    hearth__aad a;
    hearth__aad_init(&a);
    hearth__aad_str(&a, reply);
    hearth__buf sealed;
    hearth__buf_init(&sealed);
    if (!hearth__cluster_seal(c, "reply", &a, text, strlen(text), &sealed))
        natsConnection_Publish(c->nc, reply, sealed.data, (int)sealed.len);
    hearth__buf_free(&sealed);
}

static void answer(hearth__cluster *c, const char *reply, int rc, uint64_t seq) {
    char text[64];
    snprintf(text, sizeof text, "{\"rc\":%d,\"seq\":%llu}", rc,
             (unsigned long long)seq);
    answer_text(c, reply, text);
}

/* Not served here: sent again, to whoever leads by the sender's next
 * tick, or at once sealed for term (this leader's). */
static void answer_retry(hearth__cluster *c, const char *reply,
                         const char *term) {
    char text[160];
    if (term) /* a node name and a hex run: nothing to escape */
        snprintf(text, sizeof text, "{\"retry\":true,\"to\":\"%s\"}", term);
    else
        snprintf(text, sizeof text, "{\"retry\":true}");
    answer_text(c, reply, text);
}

static void on_served(int status, void *ctx) {
    served *s = ctx;
    hearth__cluster_ns *n = hearth__cluster_find(s->c, s->ns);
    answer(s->c, s->reply, status, n ? hearth__cluster_applied_seq(n) : 0);
}

static void served_free(void *ctx) {
    served *s = ctx;
    hearth__free(s->ns);
    hearth__free(s->reply);
    hearth__free(s);
}

int hearth__cluster_submit(hearth__cluster_ns *n, json_t *doc,
                           hearth_completion_cb cb, void *ctx,
                           hearth_free_cb ctx_free, hearth_error_t *err) {
    hearth__db_caller caller = {0};
    hearth_node_t *auth = NULL;
    /* The auth keeps its claims' keys as the token had them. */
    json_t *a = json_object_get(doc, "a");
    if (a && !json_is_null(a) &&
        hearth__node_from_jansson_at(a, HEARTH__JSON_CLAIM_KEYS, "/", 0,
                                     &auth, err))
        return err->code;
    caller.auth = auth;
    caller.unjudged = !json_is_true(json_object_get(doc, "j"));
    caller.quiet = json_is_true(json_object_get(doc, "q"));
    const hearth__db_caller *who =
        !caller.unjudged || caller.quiet ? &caller : NULL;
    const char *hash = json_string_value(json_object_get(doc, "h"));
    json_t *w = json_object_get(doc, "w");
    int rc = 0;
    if (json_array_size(w) == 1) {
        json_t *pair = json_array_get(w, 0);
        const char *path = json_string_value(json_array_get(pair, 0));
        hearth_node_t *value = NULL;
        rc = path ? hearth__node_from_jansson_at(
                        json_array_get(pair, 1), HEARTH_JSON_ALLOW_SERVER_VALUES,
                        path, 0, &value, err)
                  : hearth__error(err, HEARTH_EINVAL, NULL, "no path");
        if (!rc)
            rc = hearth__db_set_if_as(n->db, who, hash,
                                      path, value, cb, ctx, ctx_free, err);
        hearth_node_decref(value);
    } else {
        json_t *obj = json_object();
        for (size_t i = 0; obj && i < json_array_size(w); i++) {
            json_t *pair = json_array_get(w, i);
            const char *path = json_string_value(json_array_get(pair, 0));
            while (path && *path == '/')
                path++;
            if (path)
                json_object_set(obj, path, json_array_get(pair, 1));
        }
        hearth__update_parts u;
        rc = obj ? hearth__update_parts_from_json("/", obj, &u, err)
                 : hearth__error_code(err, HEARTH_ENOMEM);
        if (!rc)
            rc = hearth__db_update_parts_as(n->db, who, "/", &u, cb, ctx,
                                            ctx_free, err);
        if (obj)
            hearth__update_parts_free(&u);
        json_decref(obj);
    }
    hearth_node_decref(auth);
    return rc;
}

/* A forwarded write arriving in parts, joined by its reply subject (one
 * sender's parts arrive in order); dropped when cut short. */
typedef struct hearth__joining {
    hearth__list link; /* in the node's joining */
    char *reply;
    hearth__buf body;
    size_t parts;
    uint64_t started;
} joining;

static void joining_free(joining *j) {
    hearth__list_remove(&j->link);
    hearth__free(j->reply);
    hearth__buf_free(&j->body);
    hearth__free(j);
}

/* Takes a part (data, opened) into its write's join; the whole body once
 * its last part is in (to free), else NULL. */
static joining *join_part(hearth__cluster *c, const char *data, size_t len,
                          const char *reply, size_t i, size_t k) {
    joining *j = NULL;
    HEARTH__LIST_EACH_ITEM(x, &c->fwd.joining, joining, link)
        if (strcmp(x->reply, reply) == 0) {
            j = x;
            break;
        }
    if (j && (i == 1 || j->parts + 1 != i)) { /* a new start, or a gap */
        joining_free(j);
        j = NULL;
    }
    if (!j && i == 1 && (j = hearth__calloc(1, sizeof *j))) {
        j->reply = hearth__strndup(reply, strlen(reply));
        hearth__buf_init(&j->body);
        j->started = uv_now(c->loop);
        hearth__list_push_front(&c->fwd.joining, &j->link);
    }
    if (!j)
        return NULL;
    hearth__buf_add(&j->body, data, len);
    j->parts++;
    if (i < k && j->reply && !j->body.failed)
        return NULL;
    hearth__list_remove(&j->link);
    return j;
}

/* Forgets joins older than a forwarded write's bound (their sender gave
 * up), or all of them (stop: old 0). */
void hearth__cluster_joins_expire(hearth__cluster *c, uint64_t old) {
    uint64_t now = uv_now(c->loop);
    HEARTH__LIST_EACH_ITEM(j, &c->fwd.joining, joining, link)
        if (!old || now - j->started > old)
            joining_free(j);
}

static void serve_request(hearth__cluster *c, hearth__cluster_ns *n,
                          const char *reply, const char *data, size_t len);

void hearth__cluster_serve(hearth__cluster *c, natsMsg *m) {
    const char *subject = natsMsg_GetSubject(m);
    hearth__cluster_ns *n = hearth__cluster_find(c, strrchr(subject, '.') + 1);
    const char *reply = natsMsg_GetReply(m);
    size_t i = 0, k = 0;
    bool part = hearth__cluster_part(m, &i, &k);
    const char *data = natsMsg_GetData(m);
    size_t len = (size_t)natsMsg_GetDataLength(m);
    hearth__buf plain;
    hearth__buf_init(&plain);
    bool opened = true;
    if (hearth__cluster_sealed(c)) { /* each part opened before anything */
        hearth__aad a;
        hearth__cluster_request_context(&a, subject, reply ? reply : "",
                                        part ? i : 0, part ? k : 0);
        if (!reply)
            hearth__cluster_rejected(c, HEARTH__REJECT_FWD, false);
        opened = reply && !hearth__cluster_unseal(c, HEARTH__REJECT_FWD, "fwd",
                                                &a, data, len, &plain);
        data = plain.data;
        len = plain.len;
    }
    if (!opened) {
        /* dropped unanswered */
    } else if (!reply || !n || !hearth__cluster_leads(n)) {
        /* No longer leading (the request was on its way): the sender asks
         * again on its next tick, whoever leads by then. */
        if (reply && (!part || i == k))
            answer_retry(c, reply, NULL);
    } else if (!part) {
        serve_request(c, n, reply, data, len);
    } else {
        joining *j = join_part(c, data, len, reply, i, k);
        if (j && j->reply && !j->body.failed)
            serve_request(c, n, reply, j->body.data, j->body.len);
        else if (j)
            answer(c, reply, HEARTH_ENOMEM, 0);
        if (j)
            joining_free(j);
    }
    hearth__buf_free(&plain);
    natsMsg_Destroy(m);
}

static void serve_body(hearth__cluster *c, hearth__cluster_ns *n,
                       const char *reply, const char *data, size_t len);

/* A whole request: sealed, its first line says when and for whom. */
static void serve_request(hearth__cluster *c, hearth__cluster_ns *n,
                          const char *reply, const char *data, size_t len) {
    if (!hearth__cluster_sealed(c)) {
        serve_body(c, n, reply, data, len);
        return;
    }
    /* data is a buffer's: NUL-terminated */
    const char *nl = memchr(data, '\n', len);
    char *end = NULL;
    long long at = strtoll(data, &end, 10);
    if (!nl || end == data || *end != ' ' || end > nl) {
        hearth__cluster_rejected(c, HEARTH__REJECT_FWD, false);
        return;
    }
    char mine[sizeof n->fwd.leader_term];
    snprintf(mine, sizeof mine, "%s.%s", c->node, c->run);
    const char *term = end + 1;
    if ((size_t)(nl - term) != strlen(mine) ||
        memcmp(term, mine, (size_t)(nl - term)) != 0) {
        answer_retry(c, reply, mine);
        return;
    }
    int rc = hearth__cluster_replay_check(c, reply, (uint64_t)at);
    if (rc == HEARTH_EDENIED)
        hearth__cluster_rejected(c, HEARTH__REJECT_FWD, true);
    else if (rc)
        answer(c, reply, rc, 0);
    else
        serve_body(c, n, reply, nl + 1, len - (size_t)(nl + 1 - data));
}

/* One forwarded write's body, judged and queued as its caller. */
static void serve_body(hearth__cluster *c, hearth__cluster_ns *n,
                       const char *reply, const char *data, size_t len) {
    json_t *doc = NULL;
    hearth_error_t err = {0};
    served *s = hearth__calloc(1, sizeof *s);
    int rc = s ? 0 : HEARTH_ENOMEM;
    if (s) {
        s->c = c;
        s->ns = hearth__strndup(n->name, strlen(n->name));
        s->reply = hearth__strndup(reply, strlen(reply));
        if (!s->ns || !s->reply)
            rc = HEARTH_ENOMEM;
    }
    if (!rc && hearth__json_load(data, len, &doc, &err))
        rc = HEARTH_EJSON;
    if (!rc)
        rc = hearth__cluster_submit(n, doc, on_served, s, served_free, &err);
    if (rc) /* refused before it was queued: its callbacks never run */
        answer(c, reply, rc, 0);
    if (rc && s)
        served_free(s);
    json_decref(doc);
}
