/* snapshot.c - a namespace's tree from a peer, so that a node joining
 * with nothing of it (cluster.seq 0) needs no log from the start (which
 * may be purged): it asks the nodes serving the namespace
 * (hearth.snap.<name>) for their tree and the log sequence it holds,
 * loads that into its store and tails the log from there.
 *
 * Each node keeps, in a box shared with NATS's threads, the last root
 * that is exactly the log up to a sequence (no own write in flight, no
 * chain half received); the roots are immutable, so a NATS thread answers
 * from it without the loop. The box outlives the namespace until its
 * subscription has delivered its last message. */
#include "cluster/internal.h"

#include "store/store.h"
#include "tree/json.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define SEQ_HEADER "Hearth-Seq"
#define FROM_HEADER "Hearth-From"
#define ASK_MS 2000 /* a join waits this long for a peer that has it */

struct hearth__snap_box {
    atomic_int refs;
    uv_mutex_t lock;
    hearth_node_t *root; /* NULL: nothing whole yet */
    uint64_t seq;
    bool nothing; /* nothing of the log applied yet: says so at once */
    natsConnection *nc;
    char node[64];
    size_t room;
};

static void box_release(void *closure) {
    hearth__snap_box *b = closure;
    if (atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    hearth_node_decref(b->root);
    uv_mutex_destroy(&b->lock);
    hearth__free(b);
}

/* ---- the answering side (a NATS thread) ---- */

static void send_part(hearth__snap_box *b, const char *reply, const char *data,
                      size_t len, size_t i, size_t k, const char *seq) {
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, reply, NULL, data, (int)len);
    if (s == NATS_OK)
        s = hearth__cluster_part_mark(m, i, k);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, SEQ_HEADER, seq);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, FROM_HEADER, b->node);
    if (s == NATS_OK)
        natsConnection_PublishMsg(b->nc, m);
    natsMsg_Destroy(m);
}

static void on_ask(natsConnection *nc, natsSubscription *sub, natsMsg *m,
                   void *closure) {
    (void)nc, (void)sub;
    hearth__snap_box *b = closure;
    const char *reply = natsMsg_GetReply(m);
    uv_mutex_lock(&b->lock);
    hearth_node_t *root = b->root ? hearth_node_incref(b->root) : NULL;
    uint64_t seq = b->seq;
    bool nothing = b->nothing;
    uv_mutex_unlock(&b->lock);
    if (!root && nothing && reply) /* the joiner reads the log from 0 */
        send_part(b, reply, "", 0, 1, 1, "0");
    if (root && reply) {
        hearth__buf json;
        hearth__buf_init(&json);
        hearth__node_write_json(&json, root, HEARTH_JSON_EXPORT);
        char text[24];
        snprintf(text, sizeof text, "%llu", (unsigned long long)seq);
        size_t k = json.len / b->room + 1;
        for (size_t i = 0; !json.failed && i < k; i++) {
            size_t at = i * b->room;
            size_t len = json.len - at < b->room ? json.len - at : b->room;
            send_part(b, reply, json.data + at, len, i + 1, k, text);
        }
        hearth__buf_free(&json);
    }
    hearth_node_decref(root);
    natsMsg_Destroy(m);
}

int hearth__cluster_snapshot_serve(hearth__cluster_ns *n) {
    hearth__snap_box *b = hearth__calloc(1, sizeof *b);
    if (!b || uv_mutex_init(&b->lock)) {
        hearth__free(b);
        return HEARTH_ENOMEM;
    }
    atomic_init(&b->refs, 1);
    b->nc = n->c->nc;
    b->room = hearth__cluster_room(n->c);
    snprintf(b->node, sizeof b->node, "%s", n->c->node);
    b->nothing = n->applied_seq == 0;
    n->snap = b;
    char subject[160];
    snprintf(subject, sizeof subject, "hearth.snap.%s", n->name);
    if (natsConnection_Subscribe(&n->snap_sub, n->c->nc, subject, on_ask, b) !=
        NATS_OK)
        return HEARTH_EIO;
    atomic_fetch_add(&b->refs, 1); /* the subscription's, until complete */
    natsSubscription_SetOnCompleteCB(n->snap_sub, box_release, b);
    return 0;
}

void hearth__cluster_snapshot_note(hearth__cluster_ns *n) {
    hearth__snap_box *b = n->snap;
    hearth__embedded *e = n->db->impl;
    bool own_in_flight = n->leader && (e->committing || e->unacked);
    if (!b || !n->applied_seq)
        return;
    if (b->nothing) {
        uv_mutex_lock(&b->lock);
        b->nothing = false;
        uv_mutex_unlock(&b->lock);
    }
    if (n->applied_seq == b->seq || n->chain_parts || own_in_flight)
        return;
    hearth_node_t *root = hearth_node_incref(e->root);
    uv_mutex_lock(&b->lock);
    hearth_node_t *old = b->root;
    b->root = root;
    b->seq = n->applied_seq;
    uv_mutex_unlock(&b->lock);
    hearth_node_decref(old);
}

uint64_t hearth__cluster_snapshot_seq(const hearth__cluster_ns *n) {
    return n->snap ? n->snap->seq : 0; /* the loop is its only writer */
}

void hearth__cluster_snapshot_stop(hearth__cluster_ns *n) {
    if (n->snap_sub) {
        natsSubscription_Unsubscribe(n->snap_sub);
        natsSubscription_Destroy(n->snap_sub);
        n->snap_sub = NULL;
    }
    if (n->snap)
        box_release(n->snap);
    n->snap = NULL;
}

/* ---- the joining side (the loop, while the namespace opens) ---- */

/* Collects the first answering node's parts; 0 once all k are in. */
static int collect(natsSubscription *sub, hearth__buf *json, uint64_t *seq) {
    char from[64] = "";
    size_t got = 0;
    int64_t end = hearth_now_ms() + ASK_MS;
    for (;;) {
        int64_t left = end - hearth_now_ms();
        natsMsg *m = NULL;
        if (left <= 0 || natsSubscription_NextMsg(&m, sub, left) != NATS_OK)
            return HEARTH_ENOTFOUND;
        const char *who = NULL, *at = NULL;
        size_t i = 0, k = 0;
        bool mine = !natsMsg_IsNoResponders(m) &&
                    natsMsgHeader_Get(m, FROM_HEADER, &who) == NATS_OK &&
                    natsMsgHeader_Get(m, SEQ_HEADER, &at) == NATS_OK &&
                    hearth__cluster_part(m, &i, &k) &&
                    (!from[0] || strcmp(from, who) == 0);
        if (natsMsg_IsNoResponders(m)) {
            natsMsg_Destroy(m);
            return HEARTH_ENOTFOUND; /* nobody serves it: a new namespace */
        }
        if (mine && i == got + 1) {
            snprintf(from, sizeof from, "%s", who);
            *seq = strtoull(at, NULL, 10);
            hearth__buf_add(json, natsMsg_GetData(m),
                            (size_t)natsMsg_GetDataLength(m));
            got++;
        }
        natsMsg_Destroy(m);
        if (got && got == k)
            return json->failed ? HEARTH_ENOMEM : 0;
    }
}

/* Asks the peers for name's tree: 0 with *root (new) and *seq. */
static int ask(hearth__cluster *c, const char *name, hearth_node_t **root,
               uint64_t *seq) {
    natsInbox *inbox = NULL;
    natsSubscription *sub = NULL;
    char subject[160];
    snprintf(subject, sizeof subject, "hearth.snap.%s", name);
    natsStatus s = natsInbox_Create(&inbox);
    if (s == NATS_OK)
        s = natsConnection_SubscribeSync(&sub, c->nc, inbox);
    if (s == NATS_OK)
        s = natsConnection_PublishRequest(c->nc, subject, inbox, NULL, 0);
    hearth__buf json;
    hearth__buf_init(&json);
    int rc = s == NATS_OK ? collect(sub, &json, seq) : HEARTH_ENOTFOUND;
    if (!rc && *seq == 0)
        rc = HEARTH_ENOTFOUND; /* the peer holds nothing of the log yet */
    if (!rc)
        rc = hearth_node_from_json(json.data, json.len, 0, root, NULL);
    hearth__buf_free(&json);
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    return rc;
}

/* Makes root the whole of the store in dir (one record at the root). */
static int seed(const char *dir, hearth_node_t *root) {
    hearth__store *s = NULL;
    hearth_node_t *old = NULL;
    int rc = hearth__store_open(dir, HEARTH_FSYNC_ALWAYS, &s, &old, NULL, NULL);
    if (rc)
        return rc;
    hearth_node_decref(old);
    hearth__path everywhere = {0};
    const hearth__path *paths[] = {&everywhere};
    const hearth_node_t *values[] = {root};
    rc = hearth__store_append(s, paths, values, 1);
    if (!rc)
        rc = hearth__store_commit(s);
    int closed = hearth__store_close(s);
    return rc ? rc : closed;
}

uint64_t hearth__cluster_snapshot_join(hearth__cluster *c, const char *name,
                                       const char *dir) {
    hearth_node_t *root = NULL;
    uint64_t seq = 0;
    if (ask(c, name, &root, &seq))
        return 0; /* the log from its start, as before */
    int rc = seed(dir, root);
    hearth_node_decref(root);
    if (rc) {
        fprintf(stderr, "hearth: cluster: %s: a peer's snapshot could not "
                "be stored (%s); reading the log from its start\n", name,
                hearth_strerror(rc));
        return 0;
    }
    return seq;
}
