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
 * subscription has delivered its last message.
 *
 * Sealed (cluster/sealing.h), only a sealed request is answered (an
 * outsider cannot even make a node write its tree out), and it carries a
 * fresh random nonce and when it was made; each part of the answer is
 * sealed for the asker's inbox, that nonce, the part, the sequence and
 * the answering node (its headers, cleartext, are bound), so an old
 * snapshot cannot be passed off to a joining node, nor a forged "nothing
 * here" make it read a purged log from its start. */
#include "cluster/node.h"

#include "store/store.h"
#include "tree/json.h"

#include <openssl/rand.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define SEQ_HEADER "Hearth-Seq"
#define FROM_HEADER "Hearth-From"
#define ASK_MS 2000 /* a join waits this long for a peer that has it */
#define NONCE_LEN 16
/* A request's plaintext: the nonce and when it was made (ms, big-endian). */
#define ASK_LEN (NONCE_LEN + 8)

struct hearth__snap_box {
    atomic_int refs;
    uv_mutex_t lock;
    hearth_node_t *root; /* NULL: nothing whole yet */
    uint64_t seq;
    bool nothing; /* nothing of the log applied yet: says so at once */
    natsConnection *nc;
    char node[64];
    char subject[160]; /* hearth.snap.<name> */
    size_t room;
    /* The link, for its seal and counters, until the namespace leaves:
     * an answer on a NATS thread holds `use` (read), the leave takes it
     * (write) to end the link's part here. */
    uv_rwlock_t use;
    hearth__cluster *c;
};

static void box_release(void *closure) {
    hearth__snap_box *b = closure;
    if (atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    hearth_node_decref(b->root);
    uv_mutex_destroy(&b->lock);
    uv_rwlock_destroy(&b->use);
    hearth__free(b);
}

/* What an answer's part is sealed for. */
static void part_context(hearth__aad *a, const char *reply,
                         const unsigned char *nonce, size_t i, size_t k,
                         const char *seq, const char *from) {
    hearth__aad_init(a);
    hearth__aad_str(a, reply);
    hearth__aad_bytes(a, nonce, NONCE_LEN);
    hearth__aad_part(a, i, k);
    hearth__aad_str(a, seq);
    hearth__aad_str(a, from);
}

static void put_be64(unsigned char *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static uint64_t get_be64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* ---- the answering side (a NATS thread) ---- */

static void send_part(hearth__snap_box *b, const char *reply,
                      const unsigned char *nonce, const char *data, size_t len,
                      size_t i, size_t k, const char *seq) {
    hearth__buf sealed;
    hearth__buf_init(&sealed);
    if (hearth__cluster_sealed(b->c)) {
        hearth__aad a;
        part_context(&a, reply, nonce, i, k, seq, b->node);
        if (hearth__cluster_seal(b->c, "snap.part", &a, data, len, &sealed)) {
            hearth__buf_free(&sealed);
            return;
        }
        data = sealed.data;
        len = sealed.len;
    }
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
    hearth__buf_free(&sealed);
}

/* Whether m is a request to answer, its nonce into nonce: any request
 * when the node does not seal; else one that opens, made within the
 * bound of this node's clock. */
static bool asked(hearth__cluster *c, const hearth__snap_box *b, natsMsg *m,
                  const char *reply, unsigned char *nonce) {
    if (!hearth__cluster_sealed(c))
        return true;
    hearth__aad a;
    hearth__aad_init(&a);
    hearth__aad_str(&a, b->subject);
    hearth__aad_str(&a, reply);
    hearth__buf plain;
    hearth__buf_init(&plain);
    int rc = hearth__cluster_unseal(c, HEARTH__REJECT_SNAP, "snap", &a,
                                    natsMsg_GetData(m),
                                    (size_t)natsMsg_GetDataLength(m), &plain);
    bool ok = !rc && plain.len == ASK_LEN;
    if (ok) {
        memcpy(nonce, plain.data, NONCE_LEN);
        uint64_t at = get_be64((const unsigned char *)plain.data + NONCE_LEN);
        uint64_t now = (uint64_t)hearth_now_ms();
        ok = at + HEARTH__CLUSTER_FRESH_MS >= now &&
             at <= now + HEARTH__CLUSTER_FRESH_MS;
        if (!ok) /* an old request sent again */
            hearth__cluster_rejected(c, HEARTH__REJECT_SNAP, true);
    } else if (!rc) {
        hearth__cluster_rejected(c, HEARTH__REJECT_SNAP, false);
    }
    hearth__buf_free(&plain);
    return ok;
}

static void answer(hearth__snap_box *b, const char *reply,
                   const unsigned char *nonce);

static void on_ask(natsConnection *nc, natsSubscription *sub, natsMsg *m,
                   void *closure) {
    (void)nc, (void)sub;
    hearth__snap_box *b = closure;
    const char *reply = natsMsg_GetReply(m);
    unsigned char nonce[NONCE_LEN] = {0};
    uv_rwlock_rdlock(&b->use);
    if (!reply && b->c && hearth__cluster_sealed(b->c))
        hearth__cluster_rejected(b->c, HEARTH__REJECT_SNAP, false);
    if (reply && b->c && asked(b->c, b, m, reply, nonce))
        answer(b, reply, nonce);
    uv_rwlock_rdunlock(&b->use);
    natsMsg_Destroy(m);
}

/* The tree kept, in parts, to reply (b->c is there: the caller holds
 * `use`). */
static void answer(hearth__snap_box *b, const char *reply,
                   const unsigned char *nonce) {
    uv_mutex_lock(&b->lock);
    hearth_node_t *root = b->root ? hearth_node_incref(b->root) : NULL;
    uint64_t seq = b->seq;
    bool nothing = b->nothing;
    uv_mutex_unlock(&b->lock);
    if (!root && nothing) /* the joiner reads the log from 0 */
        send_part(b, reply, nonce, "", 0, 1, 1, "0");
    if (root) {
        hearth__buf json;
        hearth__buf_init(&json);
        hearth__node_write_json(&json, root, HEARTH_JSON_EXPORT);
        char text[24];
        snprintf(text, sizeof text, "%llu", (unsigned long long)seq);
        size_t k = json.len / b->room + 1;
        for (size_t i = 0; !json.failed && i < k; i++) {
            size_t at = i * b->room;
            size_t len = json.len - at < b->room ? json.len - at : b->room;
            send_part(b, reply, nonce, json.data + at, len, i + 1, k, text);
        }
        hearth__buf_free(&json);
    }
    hearth_node_decref(root);
}

int hearth__cluster_snapshot_serve(hearth__cluster_ns *n) {
    hearth__snap_box *b = hearth__calloc(1, sizeof *b);
    if (!b || uv_mutex_init(&b->lock)) {
        hearth__free(b);
        return HEARTH_ENOMEM;
    }
    if (uv_rwlock_init(&b->use)) {
        uv_mutex_destroy(&b->lock);
        hearth__free(b);
        return HEARTH_ENOMEM;
    }
    b->c = n->c;
    atomic_init(&b->refs, 1);
    b->nc = n->c->nc;
    b->room = hearth__cluster_room(n->c);
    snprintf(b->node, sizeof b->node, "%s", n->c->node);
    b->nothing = hearth__cluster_applied_seq(n) == 0;
    n->snap.snap = b;
    snprintf(b->subject, sizeof b->subject, "hearth.snap.%s", n->name);
    if (natsConnection_Subscribe(&n->snap.snap_sub, n->c->nc, b->subject, on_ask,
                                 b) != NATS_OK)
        return HEARTH_EIO;
    atomic_fetch_add(&b->refs, 1); /* the subscription's, until complete */
    natsSubscription_SetOnCompleteCB(n->snap.snap_sub, box_release, b);
    return 0;
}

void hearth__cluster_snapshot_note(hearth__cluster_ns *n) {
    hearth__snap_box *b = n->snap.snap;
    hearth__embedded *e = n->db->impl;
    if (!b || !hearth__cluster_applied_seq(n))
        return;
    if (b->nothing) {
        uv_mutex_lock(&b->lock);
        b->nothing = false;
        uv_mutex_unlock(&b->lock);
    }
    if (hearth__cluster_applied_seq(n) == b->seq ||
        hearth__cluster_chain_open(n) ||
        !hearth__cluster_tree_exact(n))
        return;
    hearth_node_t *root = hearth_node_incref(e->root);
    uv_mutex_lock(&b->lock);
    hearth_node_t *old = b->root;
    b->root = root;
    b->seq = hearth__cluster_applied_seq(n);
    uv_mutex_unlock(&b->lock);
    hearth_node_decref(old);
}

hearth_node_t *hearth__cluster_snapshot_root(const hearth__cluster_ns *n,
                                             uint64_t *seq) {
    hearth__snap_box *b = n->snap.snap;
    *seq = 0;
    if (!b || !b->root) /* the loop is the box's only writer */
        return NULL;
    *seq = b->seq;
    return hearth_node_incref(b->root);
}

uint64_t hearth__cluster_snapshot_seq(const hearth__cluster_ns *n) {
    return n->snap.snap ? n->snap.snap->seq : 0; /* the loop is its only writer */
}

void hearth__cluster_snapshot_stop(hearth__cluster_ns *n) {
    if (n->snap.snap_sub) {
        natsSubscription_Unsubscribe(n->snap.snap_sub);
        natsSubscription_Destroy(n->snap.snap_sub);
        n->snap.snap_sub = NULL;
    }
    if (n->snap.snap) {
        /* an answer still running on a NATS thread ends first: the link
         * may go once the namespace has */
        uv_rwlock_wrlock(&n->snap.snap->use);
        n->snap.snap->c = NULL;
        uv_rwlock_wrunlock(&n->snap.snap->use);
        box_release(n->snap.snap);
    }
    n->snap.snap = NULL;
}

/* ---- the joining side (the loop, while the namespace opens) ---- */

/* Collects the first answering node's parts (sealed: the first whose
 * parts open for inbox and nonce); 0 once all k are in. */
static int collect(hearth__cluster *c, natsSubscription *sub,
                   const char *inbox, const unsigned char *nonce,
                   hearth__buf *json, uint64_t *seq) {
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
        hearth__aad a;
        if (mine && i == got + 1)
            part_context(&a, inbox, nonce, i, k, at, who);
        /* opened before its sender is taken as the one to follow */
        if (mine && i == got + 1 &&
            !hearth__cluster_unseal(c, HEARTH__REJECT_SNAP, "snap.part", &a,
                                    natsMsg_GetData(m),
                                    (size_t)natsMsg_GetDataLength(m), json)) {
            snprintf(from, sizeof from, "%s", who);
            *seq = strtoull(at, NULL, 10);
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
    /* sealed: a fresh nonce, which every part of the answer is bound to */
    unsigned char plain[ASK_LEN] = {0};
    hearth__buf request;
    hearth__buf_init(&request);
    if (s == NATS_OK && hearth__cluster_sealed(c)) {
        hearth__aad a;
        hearth__aad_init(&a);
        hearth__aad_str(&a, subject);
        hearth__aad_str(&a, inbox);
        put_be64(plain + NONCE_LEN, (uint64_t)hearth_now_ms());
        if (RAND_bytes(plain, NONCE_LEN) != 1 ||
            hearth__cluster_seal(c, "snap", &a, plain, sizeof plain, &request))
            s = NATS_ERR;
    }
    if (s == NATS_OK)
        s = natsConnection_PublishRequest(c->nc, subject, inbox, request.data,
                                          (int)request.len);
    hearth__buf_free(&request);
    hearth__buf json;
    hearth__buf_init(&json);
    int rc = s == NATS_OK ? collect(c, sub, inbox, plain, &json, seq)
                          : HEARTH_ENOTFOUND;
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
        hearth__log(HEARTH_LOG_ERROR, "cluster: %s: a peer's snapshot could not "
                "be stored (%s); reading the log from its start", name,
                hearth_strerror(rc));
        return 0;
    }
    return seq;
}

int hearth__cluster_snapshot_fetch(hearth__cluster *c, const char *name,
                                   hearth_node_t **root, uint64_t *seq) {
    return ask(c, name, root, seq);
}
