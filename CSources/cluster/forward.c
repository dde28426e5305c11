/* forward.c - writes made on a node that does not lead: sent to whoever
 * serves hearth.fwd.<namespace> (the leader) by request/reply, judged and
 * ordered there as the caller, and acknowledged here once this node's own
 * tail has applied the sequence the leader answered (so the caller's
 * listeners here have seen the write before its ok). With no leader yet
 * ("no responders") the request is sent again each tick until one wins
 * the lease; one sent but never answered fails after 5 s (its outcome is
 * unknown, as a single server's crash leaves it). */
#include "cluster/internal.h"

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
};

static void finish(hearth__forward *f, int rc) {
    if (f->o->done)
        f->o->done(rc, f->o->ctx);
    hearth__db_op_done(f->o);
    hearth__free(f->body);
    hearth__free(f);
}

/* {"a": auth or null, "j": judged, "h": hash or null, "w": [[path,
 * value], ...]} */
static char *body_of(const hearth__db_op *o, size_t *len) {
    hearth__buf b;
    hearth__buf_init(&b);
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

/* The body in parts of at most room bytes (one when it fits). */
static natsStatus send_parts(hearth__cluster *c, const char *subj,
                             const char *reply, const hearth__forward *f) {
    size_t room = hearth__cluster_room(c);
    if (f->len <= room)
        return natsConnection_PublishRequest(c->nc, subj, reply, f->body,
                                             (int)f->len);
    size_t k = (f->len + room - 1) / room;
    natsStatus s = NATS_OK;
    for (size_t i = 0; s == NATS_OK && i < k; i++) {
        size_t at = i * room, size = f->len - at < room ? f->len - at : room;
        natsMsg *m = NULL;
        s = natsMsg_Create(&m, subj, reply, f->body + at, (int)size);
        if (s == NATS_OK)
            s = hearth__cluster_part_mark(m, i + 1, k);
        if (s == NATS_OK)
            s = natsConnection_PublishMsg(c->nc, m);
        natsMsg_Destroy(m);
    }
    return s;
}

static void send_one(hearth__cluster *c, hearth__forward *f) {
    char subj[128], reply[sizeof c->inbox + 24];
    snprintf(subj, sizeof subj, "hearth.fwd.%s", f->n->name);
    snprintf(reply, sizeof reply, "%s.%llu", c->inbox,
             (unsigned long long)f->id);
    f->sent_at = uv_now(c->loop);
    if (send_parts(c, subj, reply, f) != NATS_OK)
        f->sent_at = 0; /* disconnected: again next tick */
}

void hearth__cluster_forward(hearth__cluster_ns *n, hearth__db_op *o) {
    hearth__cluster *c = n->c;
    hearth__forward *f = hearth__calloc(1, sizeof *f);
    if (f)
        f->body = body_of(o, &f->len);
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
    if (f && !natsMsg_IsNoResponders(m))
        hearth__json_load(natsMsg_GetData(m),
                          (size_t)natsMsg_GetDataLength(m), &doc, NULL);
    natsMsg_Destroy(m);
    json_t *rc = json_object_get(doc, "rc");
    if (!f || !json_is_number(rc)) { /* no leader (yet): sent again */
        if (f)
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

static void answer(hearth__cluster *c, const char *reply, int rc, uint64_t seq) {
    char text[64];
    snprintf(text, sizeof text, "{\"rc\":%d,\"seq\":%llu}", rc,
             (unsigned long long)seq);
    natsConnection_PublishString(c->nc, reply, text);
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
    json_t *a = json_object_get(doc, "a");
    if (a && !json_is_null(a) &&
        hearth__node_from_jansson_at(a, 0, "/", 0, &auth, err))
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

/* Takes m's part into its write's join; the whole body once its last part
 * is in (to free), else NULL. */
static joining *join_part(hearth__cluster *c, natsMsg *m, const char *reply,
                          size_t i, size_t k) {
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
    hearth__buf_add(&j->body, natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m));
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

static void serve_body(hearth__cluster *c, hearth__cluster_ns *n,
                       const char *reply, const char *data, size_t len);

void hearth__cluster_serve(hearth__cluster *c, natsMsg *m) {
    hearth__cluster_ns *n = hearth__cluster_find(
        c, strrchr(natsMsg_GetSubject(m), '.') + 1);
    const char *reply = natsMsg_GetReply(m);
    size_t i, k;
    if (!reply || !n || !n->leader) {
        /* No longer leading (the request was on its way): the sender asks
         * again on its next tick, whoever leads by then. */
        if (reply && (!hearth__cluster_part(m, &i, &k) || i == k))
            natsConnection_PublishString(c->nc, reply, "{\"retry\":true}");
    } else if (!hearth__cluster_part(m, &i, &k)) {
        serve_body(c, n, reply, natsMsg_GetData(m),
                   (size_t)natsMsg_GetDataLength(m));
    } else {
        joining *j = join_part(c, m, reply, i, k);
        if (j && j->reply && !j->body.failed)
            serve_body(c, n, reply, j->body.data, j->body.len);
        else if (j)
            answer(c, reply, HEARTH_ENOMEM, 0);
        if (j)
            joining_free(j);
    }
    natsMsg_Destroy(m);
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
