/* forward.c - writes made on a node that does not lead: sent to whoever
 * serves hearth.fwd.<namespace> (the leader) by request/reply, judged and
 * ordered there as the caller, and acknowledged here once this node's own
 * tail has applied the sequence the leader answered (so the caller's
 * listeners here have seen the write before its ok). With no leader yet
 * ("no responders") the request is sent again each tick until one wins
 * the lease; one sent but never answered fails after 5 s (its outcome is
 * unknown, as a single server's crash leaves it).
 *
 * Sealed (cluster/sealing.h), a request is "<time> <term>\n" and the body,
 * each part sealed for the subject, the reply subject (which names the
 * request) and its part marker; the leader serves it only when it opens,
 * is sealed for the leader's own term (its node and run: a request
 * captured and sent to another leader, or to a later run, is refused
 * there), and is fresh and not served before (replay.c). A request for
 * another term is answered with the leader's, and sent again sealed for
 * it; a node learns its leader's term so, once per leader. Answers are
 * sealed for their reply subject. What does not open is dropped
 * unanswered: an outsider learns nothing, not even who leads. */
#include "cluster/sealing.h"

#include "tree/json.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

struct hearth__forward {
    hearth__forward *next;
    hearth__cluster_ns *n;
    hearth__db_op *o;
    uint64_t id;
    uint64_t seq;      /* answered: its outcome given once applied here */
    int status;        /* answered: that outcome */
    uint64_t deadline; /* loop ms: fails after */
    uint64_t sent_at;  /* 0: to send (again) */
    char *body;
    size_t len;
    size_t slot; /* sealed: the body's JSON after this much room for the
                    request's first line (sealed anew at each send) */
};

/* Room for a sealed request's first line: "<time> <term>\n". */
#define SLOT 128

static void finish(hearth__forward *f, int rc) {
    if (f->o->done)
        f->o->done(rc, f->o->ctx);
    hearth__db_op_done(f->o);
    hearth__free(f->body);
    hearth__free(f);
}

/* {"a": auth or null, "j": judged, "h": hash or null, "w": [[path,
 * value], ...]}, after slot bytes of room. */
static char *body_of(const hearth__db_op *o, size_t slot, size_t *len) {
    hearth__buf b;
    hearth__buf_init(&b);
    static const char room[SLOT];
    hearth__buf_add(&b, room, slot);
    hearth__buf_adds(&b, "{\"a\":");
    if (o->auth)
        hearth__node_write_json(&b, o->auth, HEARTH_JSON_EXPORT);
    else
        hearth__buf_adds(&b, "null");
    hearth__buf_adds(&b, o->judged ? ",\"j\":true" : ",\"j\":false");
    hearth__buf_adds(&b, ",\"h\":");
    if (o->conditional)
        hearth__json_write_string(&b, o->if_hash, strlen(o->if_hash));
    else
        hearth__buf_adds(&b, "null");
    hearth__buf_adds(&b, ",\"w\":[");
    for (size_t i = 0; i < o->nparts; i++) {
        const hearth__db_write_part *w = &o->parts[i];
        hearth__buf_adds(&b, i ? ",[" : "[");
        hearth__json_write_string(&b, w->text, strlen(w->text));
        hearth__buf_addc(&b, ',');
        hearth__node_write_json(&b, w->value, HEARTH_JSON_EXPORT);
        hearth__buf_addc(&b, ']');
    }
    hearth__buf_adds(&b, "]}");
    if (b.failed) {
        hearth__buf_free(&b);
        return NULL;
    }
    *len = b.len;
    return b.data;
}

/* What a forwarded write's part i of k (k 0: the whole) is sealed for. */
static void request_context(hearth__aad *a, const char *subj,
                            const char *reply, size_t i, size_t k) {
    hearth__aad_init(a);
    hearth__aad_str(a, subj);
    hearth__aad_str(a, reply);
    hearth__aad_part(a, i, k);
}

/* Part i of k (k 0: the whole request) of data, sealed when the node
 * seals. */
static natsStatus send_part(hearth__cluster *c, const char *subj,
                            const char *reply, const char *data, size_t len,
                            size_t i, size_t k) {
    hearth__buf sealed;
    hearth__buf_init(&sealed);
    if (hearth__cluster_sealed(c)) {
        hearth__aad a;
        request_context(&a, subj, reply, i, k);
        if (hearth__cluster_seal(c, "fwd", &a, data, len, &sealed)) {
            hearth__buf_free(&sealed);
            return NATS_NO_MEMORY;
        }
        data = sealed.data;
        len = sealed.len;
    }
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, subj, reply, data, (int)len);
    if (s == NATS_OK && k)
        s = hearth__cluster_part_mark(m, i, k);
    if (s == NATS_OK)
        s = natsConnection_PublishMsg(c->nc, m);
    natsMsg_Destroy(m);
    hearth__buf_free(&sealed);
    return s;
}

/* The request in parts of at most room bytes (one when it fits). */
static natsStatus send_parts(hearth__cluster *c, const char *subj,
                             const char *reply, const char *data,
                             size_t len) {
    size_t room = hearth__cluster_room(c);
    if (len <= room)
        return send_part(c, subj, reply, data, len, 0, 0);
    size_t k = (len + room - 1) / room;
    natsStatus s = NATS_OK;
    for (size_t i = 0; s == NATS_OK && i < k; i++) {
        size_t at = i * room, size = len - at < room ? len - at : room;
        s = send_part(c, subj, reply, data + at, size, i + 1, k);
    }
    return s;
}

static void send_one(hearth__cluster *c, hearth__forward *f) {
    char subj[128], reply[sizeof c->inbox + 24];
    snprintf(subj, sizeof subj, "hearth.fwd.%s", f->n->name);
    snprintf(reply, sizeof reply, "%s.%llu", c->inbox,
             (unsigned long long)f->id);
    f->sent_at = uv_now(c->loop);
    const char *data = f->body;
    size_t len = f->len;
    if (f->slot) { /* the first line, just before the body's JSON */
        char line[SLOT + 1];
        int n = snprintf(line, sizeof line, "%lld %s\n",
                         (long long)hearth_now_ms(), f->n->leader_term);
        if (n < 0 || n > SLOT) {
            f->sent_at = 0;
            return;
        }
        memcpy(f->body + f->slot - (size_t)n, line, (size_t)n);
        data = f->body + f->slot - (size_t)n;
        len = f->len - f->slot + (size_t)n;
    }
    if (send_parts(c, subj, reply, data, len) != NATS_OK)
        f->sent_at = 0; /* disconnected: again next tick */
}

void hearth__cluster_forward(hearth__cluster_ns *n, hearth__db_op *o) {
    hearth__cluster *c = n->c;
    hearth__forward *f = hearth__calloc(1, sizeof *f);
    if (f) {
        f->slot = hearth__cluster_sealed(c) ? SLOT : 0;
        f->body = body_of(o, f->slot, &f->len);
    }
    if (!f || !f->body) {
        hearth__free(f);
        if (o->done)
            o->done(HEARTH_ENOMEM, o->ctx);
        hearth__db_op_done(o);
        return;
    }
    f->n = n;
    f->o = o;
    f->id = ++c->next_id;
    f->deadline = uv_now(c->loop) + HEARTH__CLUSTER_FORWARD_MS;
    f->next = c->forwards;
    c->forwards = f;
    n->forwarding++;
    send_one(c, f);
}

/* Takes the forward with id out of c's list. */
static hearth__forward *take(hearth__cluster *c, uint64_t id) {
    for (hearth__forward **p = &c->forwards; *p; p = &(*p)->next)
        if ((*p)->id == id) {
            hearth__forward *f = *p;
            *p = f->next;
            f->next = NULL;
            f->n->forwarding--;
            return f;
        }
    return NULL;
}

void hearth__cluster_on_reply(hearth__cluster *c, natsMsg *m) {
    const char *subj = natsMsg_GetSubject(m);
    const char *dot = strrchr(subj, '.');
    uint64_t id = dot ? strtoull(dot + 1, NULL, 10) : 0;
    hearth__forward *f = NULL;
    for (hearth__forward *g = c->forwards; g; g = g->next)
        if (g->id == id)
            f = g;
    json_t *doc = NULL;
    bool no_leader = f && natsMsg_IsNoResponders(m);
    if (f && !no_leader) {
        /* An answer that does not open leaves the request waiting for the
         * leader's own (or its bound). */
        hearth__aad a;
        hearth__aad_init(&a);
        hearth__aad_str(&a, subj);
        hearth__buf text;
        hearth__buf_init(&text);
        if (!hearth__cluster_unseal(c, HEARTH__REJECT_REPLY, "reply", &a,
                                  natsMsg_GetData(m),
                                  (size_t)natsMsg_GetDataLength(m), &text))
            hearth__json_load(text.data, text.len, &doc, NULL);
        else
            f = NULL;
        hearth__buf_free(&text);
    }
    natsMsg_Destroy(m);
    json_t *rc = json_object_get(doc, "rc");
    const char *term = json_string_value(json_object_get(doc, "to"));
    if (f && term && hearth__cluster_sealed(c)) {
        /* sealed for another leader: again at once, for this one */
        snprintf(f->n->leader_term, sizeof f->n->leader_term, "%s", term);
        json_decref(doc);
        send_one(c, f);
        return;
    }
    if (!f || !json_is_number(rc)) { /* no leader (yet): sent again */
        if (f && (no_leader || json_is_true(json_object_get(doc, "retry"))))
            f->sent_at = 0;
        json_decref(doc);
        return;
    }
    take(c, id);
    f->status = (int)json_number_value(rc);
    f->seq = (uint64_t)json_number_value(json_object_get(doc, "seq"));
    json_decref(doc);
    /* A refused compare-and-set is answered once this node holds the data
     * the leader compared against: the caller reads it here to try again
     * (a transaction, REST's 412 with the current ETag). */
    if (f->status && f->status != HEARTH_EDATASTALE) {
        finish(f, f->status);
        return;
    }
    f->next = f->n->waiting;
    f->n->waiting = f;
    hearth__cluster_forward_applied(f->n);
}

void hearth__cluster_forward_applied(hearth__cluster_ns *n) {
    for (hearth__forward **p = &n->waiting; *p;) {
        hearth__forward *f = *p;
        if (f->seq <= n->applied_seq) {
            *p = f->next;
            finish(f, f->status);
        } else {
            p = &f->next;
        }
    }
}

/* Answered writes whose record this node's tail has not reached in time
 * (its consumer being made again): they are in the log, but their ok
 * would come before this node's listeners saw them. */
static void tail_deadlines(hearth__cluster_ns *n, uint64_t now) {
    for (hearth__forward **p = &n->waiting; *p;) {
        hearth__forward *f = *p;
        if (now > f->deadline) {
            *p = f->next;
            finish(f, HEARTH_EDISCONNECTED);
        } else {
            p = &f->next;
        }
    }
}

void hearth__cluster_forward_tick(hearth__cluster *c) {
    uint64_t now = uv_now(c->loop);
    hearth__cluster_joins_expire(c, HEARTH__CLUSTER_FORWARD_MS);
    hearth__cluster_replay_expire(c);
    for (hearth__cluster_ns *n = c->spaces; n; n = n->next)
        tail_deadlines(n, now);
    for (hearth__forward **p = &c->forwards; *p;) {
        hearth__forward *f = *p;
        bool unanswered = f->sent_at && now - f->sent_at > HEARTH__CLUSTER_WAIT_MS;
        if (now > f->deadline || unanswered) {
            *p = f->next;
            f->n->forwarding--;
            finish(f, HEARTH_EDISCONNECTED);
            continue;
        }
        if (!f->sent_at)
            send_one(c, f);
        p = &f->next;
    }
}

void hearth__cluster_forward_cancel(hearth__cluster_ns *n, int rc) {
    hearth__cluster *c = n->c;
    for (hearth__forward **p = &c->forwards; *p;) {
        hearth__forward *f = *p;
        if (f->n == n) {
            *p = f->next;
            n->forwarding--;
            finish(f, rc);
        } else {
            p = &f->next;
        }
    }
    while (n->waiting) {
        hearth__forward *f = n->waiting;
        n->waiting = f->next;
        finish(f, rc);
    }
}

/* ---- the leader's side ---- */

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
    answer(s->c, s->reply, status, n ? n->applied_seq : 0);
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
        hearth__node_from_jansson_at(a, HEARTH__JSON_CLAIM_KEYS, "/", 0, &auth, err))
        return err->code;
    caller.auth = auth;
    const hearth__db_caller *who =
        json_is_true(json_object_get(doc, "j")) ? &caller : NULL;
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
    struct hearth__joining *next;
    char *reply;
    hearth__buf body;
    size_t parts;
    uint64_t started;
} joining;

static void joining_free(joining *j) {
    hearth__free(j->reply);
    hearth__buf_free(&j->body);
    hearth__free(j);
}

/* Takes a part (data, opened) into its write's join; the whole body once
 * its last part is in (to free), else NULL. */
static joining *join_part(hearth__cluster *c, const char *data, size_t len,
                          const char *reply, size_t i, size_t k) {
    joining **p = &c->joining;
    while (*p && strcmp((*p)->reply, reply) != 0)
        p = &(*p)->next;
    joining *j = *p;
    if (j && (i == 1 || j->parts + 1 != i)) { /* a new start, or a gap */
        *p = j->next;
        joining_free(j);
        j = NULL;
    }
    if (!j && i == 1 && (j = hearth__calloc(1, sizeof *j))) {
        j->reply = hearth__strndup(reply, strlen(reply));
        hearth__buf_init(&j->body);
        j->started = uv_now(c->loop);
        j->next = c->joining;
        c->joining = j;
    }
    if (!j)
        return NULL;
    hearth__buf_add(&j->body, data, len);
    j->parts++;
    if (i < k && j->reply && !j->body.failed)
        return NULL;
    for (p = &c->joining; *p != j; p = &(*p)->next)
        ;
    *p = j->next;
    return j;
}

/* Forgets joins older than a forwarded write's bound (their sender gave
 * up), or all of them (stop: old 0). */
void hearth__cluster_joins_expire(hearth__cluster *c, uint64_t old) {
    uint64_t now = uv_now(c->loop);
    for (joining **p = &c->joining; *p;) {
        joining *j = *p;
        if (!old || now - j->started > old) {
            *p = j->next;
            joining_free(j);
        } else {
            p = &j->next;
        }
    }
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
        request_context(&a, subject, reply ? reply : "", part ? i : 0,
                        part ? k : 0);
        if (!reply)
            hearth__cluster_rejected(c, HEARTH__REJECT_FWD, false);
        opened = reply && !hearth__cluster_unseal(c, HEARTH__REJECT_FWD, "fwd",
                                                &a, data, len, &plain);
        data = plain.data;
        len = plain.len;
    }
    if (!opened) {
        /* dropped unanswered */
    } else if (!reply || !n || !n->leader) {
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
    char mine[sizeof n->leader_term];
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
