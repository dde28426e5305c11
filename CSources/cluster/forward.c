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
#include "cluster/node.h"

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

/* {"a": auth or null, "j": judged, ("q": true: quiet,) "h": hash or
 * null, "w": [[path, value], ...]}, after slot bytes of room. */
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
    if (o->quiet)
        hearth__buf_adds(&b, ",\"q\":true");
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

void hearth__cluster_request_context(hearth__aad *a, const char *subj,
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
        hearth__cluster_request_context(&a, subj, reply, i, k);
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
    char subj[128], reply[sizeof c->fwd.inbox + 24];
    snprintf(subj, sizeof subj, "hearth.fwd.%s", f->n->name);
    snprintf(reply, sizeof reply, "%s.%llu", c->fwd.inbox,
             (unsigned long long)f->id);
    f->sent_at = uv_now(c->loop);
    const char *data = f->body;
    size_t len = f->len;
    if (f->slot) { /* the first line, just before the body's JSON */
        char line[SLOT + 1];
        int n = snprintf(line, sizeof line, "%lld %s\n",
                         (long long)hearth_now_ms(), f->n->fwd.leader_term);
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

static void on_reply_msg(natsConnection *nc, natsSubscription *sub,
                         natsMsg *m, void *closure) {
    (void)nc, (void)sub;
    hearth__cluster_post(closure, MSG_REPLY, m, 0);
}

natsStatus hearth__cluster_replies_start(hearth__cluster *c) {
    snprintf(c->fwd.inbox, sizeof c->fwd.inbox, "_INBOX.hearth.%s.%s",
             c->node, c->run);
    char wild[sizeof c->fwd.inbox + 2];
    snprintf(wild, sizeof wild, "%s.*", c->fwd.inbox);
    return natsConnection_Subscribe(&c->fwd.replies, c->nc, wild,
                                    on_reply_msg, c);
}

void hearth__cluster_replies_drain(hearth__cluster *c) {
    if (c->fwd.replies) {
        natsSubscription_Drain(c->fwd.replies);
        natsSubscription_WaitForDrainCompletion(c->fwd.replies, 2000);
    }
}

void hearth__cluster_replies_close(hearth__cluster *c) {
    if (c->fwd.replies) {
        natsSubscription_Unsubscribe(c->fwd.replies);
        natsSubscription_Destroy(c->fwd.replies);
    }
    c->fwd.replies = NULL;
}

bool hearth__cluster_forward_idle(const hearth__cluster_ns *n) {
    return !n->fwd.waiting && !n->fwd.forwarding;
}

bool hearth__cluster_forward_waiting(const hearth__cluster_ns *n) {
    return n->fwd.waiting != NULL;
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
    f->id = ++c->fwd.next_id;
    f->deadline = uv_now(c->loop) + HEARTH__CLUSTER_FORWARD_MS;
    f->next = c->fwd.forwards;
    c->fwd.forwards = f;
    n->fwd.forwarding++;
    send_one(c, f);
}

/* Takes the forward with id out of c's list. */
static hearth__forward *take(hearth__cluster *c, uint64_t id) {
    for (hearth__forward **p = &c->fwd.forwards; *p; p = &(*p)->next)
        if ((*p)->id == id) {
            hearth__forward *f = *p;
            *p = f->next;
            f->next = NULL;
            f->n->fwd.forwarding--;
            return f;
        }
    return NULL;
}

void hearth__cluster_on_reply(hearth__cluster *c, natsMsg *m) {
    const char *subj = natsMsg_GetSubject(m);
    const char *dot = strrchr(subj, '.');
    uint64_t id = dot ? strtoull(dot + 1, NULL, 10) : 0;
    hearth__forward *f = NULL;
    for (hearth__forward *g = c->fwd.forwards; g; g = g->next)
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
        snprintf(f->n->fwd.leader_term, sizeof f->n->fwd.leader_term, "%s",
                 term);
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
    f->next = f->n->fwd.waiting;
    f->n->fwd.waiting = f;
    hearth__cluster_tail_expect(f->n, f->seq);
    hearth__cluster_forward_applied(f->n);
}

void hearth__cluster_forward_applied(hearth__cluster_ns *n) {
    for (hearth__forward **p = &n->fwd.waiting; *p;) {
        hearth__forward *f = *p;
        if (f->seq <= hearth__cluster_applied_seq(n)) {
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
    for (hearth__forward **p = &n->fwd.waiting; *p;) {
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
    HEARTH__LIST_EACH_ITEM(n, &c->spaces, hearth__cluster_ns, link)
        tail_deadlines(n, now);
    /* Sent on a connection since lost: no answer will come (the write
     * may have been applied or not, as any write whose answer was lost). */
    unsigned lost = hearth__cluster_disconnects(c);
    bool dropped = lost != c->fwd.disconnects;
    c->fwd.disconnects = lost;
    for (hearth__forward **p = &c->fwd.forwards; *p;) {
        hearth__forward *f = *p;
        bool unanswered = f->sent_at && (dropped || now - f->sent_at >
                                                        HEARTH__CLUSTER_WAIT_MS);
        if (now > f->deadline || unanswered) {
            *p = f->next;
            f->n->fwd.forwarding--;
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
    for (hearth__forward **p = &c->fwd.forwards; *p;) {
        hearth__forward *f = *p;
        if (f->n == n) {
            *p = f->next;
            n->fwd.forwarding--;
            finish(f, rc);
        } else {
            p = &f->next;
        }
    }
    while (n->fwd.waiting) {
        hearth__forward *f = n->fwd.waiting;
        n->fwd.waiting = f->next;
        finish(f, rc);
    }
}
