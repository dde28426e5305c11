/* rules.c - documents the same on every node, one per key of a KV
 * bucket: each namespace's rules (hearth_rules, below) and the triggers'
 * registrations of the admin (hearth_triggers, cluster/triggers.c) are
 * two such buckets (hearth__cluster_docs). What follows says it of the
 * rules; a registration is the same with its trigger's name as the key.
 *
 * A namespace's rules, the same on every node. A document set
 * through any node (PUT /.settings/rules.json) is kept in the KV bucket
 * hearth_rules under the namespace's name; every node follows the bucket
 * (an ordered consumer of its stream, the last value of each key first)
 * and hands each change to the server, which adopts it where the
 * namespace is open; a namespace opened later takes the bucket's document
 * (this node's copy of it) over its own. With no document in the bucket,
 * each node's own rules apply (--rules FILE, or DATA/NAME/rules.json).
 *
 * The bucket is read whole at start, before the node serves anything, so
 * no request is judged by a node's stale rules; later changes arrive
 * within a round trip (the consumer is made once the link can take its
 * messages, and again each tick until it is).
 *
 * Sealed (cluster/sealing.h), a value is "<version> <node>\n" and the
 * document (nothing: removed; a node seals a removal rather than delete
 * the key), sealed for the bucket and the namespace: a document put there
 * by an outsider, or moved from another namespace, does not open, and a
 * delete is not taken. The version is the writer's clock in ms, past the
 * copy it had (its node breaks ties), and a node keeps the newest it has
 * seen: an older document sent again (a replayed value) is refused, not
 * adopted. A node that refuses one puts its own copy back, so a node
 * starting later reads the newest document rather than what an outsider
 * left in the bucket. */
#include "cluster/node.h"

#include <stdio.h>
#include <string.h>

#define RULES_BUCKET "hearth_rules"

/* This node's copy of one key's document (a namespace's rules). */
typedef struct hearth__rules_copy {
    hearth__list link; /* in the docs' copies */
    char *ns; /* the key */
    char *text; /* NULL: deleted (the node's own rules apply) */
    /* sealed: its version (0: none) and the node that set it */
    uint64_t version;
    char by[64];
} rules_copy;

/* A value as it opened: its version and document (NULL: removed). */
typedef struct rules_value {
    uint64_t version;
    char by[64];
    const char *text;
    size_t len;
} rules_value;

static rules_copy *copy_of(const hearth__cluster_docs *d, const char *ns) {
    HEARTH__LIST_EACH_ITEM(r, &d->copies, rules_copy, link)
        if (strcmp(r->ns, ns) == 0)
            return r;
    return NULL;
}

/* Whether version v (by) is older than the copy of ns, or the same. */
static int compare_version(const rules_copy *r, uint64_t v, const char *by) {
    if (!r || v != r->version)
        return !r || v > r->version ? 1 : -1;
    int order = strcmp(by, r->by);
    return order > 0 ? 1 : order < 0 ? -1 : 0;
}

/* Keeps text (NULL: none) as ns's document, at version (by); false
 * without memory. */
static bool remember(hearth__cluster_docs *d, const char *ns,
                     const char *text, size_t len, uint64_t version,
                     const char *by) {
    rules_copy *r = copy_of(d, ns);
    char *copy = text ? hearth__strndup(text, len) : NULL;
    if (text && !copy)
        return false;
    if (!r) {
        r = hearth__calloc(1, sizeof *r);
        if (!r || !(r->ns = hearth__strndup(ns, strlen(ns)))) {
            hearth__free(r);
            hearth__free(copy);
            return false;
        }
        hearth__list_push_front(&d->copies, &r->link);
    }
    hearth__free(r->text);
    r->text = copy;
    r->version = version;
    snprintf(r->by, sizeof r->by, "%s", by);
    return true;
}

/* Opens a value of ns's key into plain (sealed: "<version> <node>\n" and
 * the document); 0 with *v, or HEARTH_EDENIED (counted). Without a seal
 * the value is the document itself. */
static int open_value(hearth__cluster *c, const hearth__cluster_docs *d,
                      const char *ns, const void *data, size_t len,
                      hearth__buf *plain, rules_value *v) {
    memset(v, 0, sizeof *v);
    if (!hearth__cluster_sealed(c)) {
        v->text = data;
        v->len = len;
        return 0;
    }
    int rc = hearth__cluster_open_value(c, d->bucket, ns, data, len, plain);
    if (rc)
        return rc;
    char *end = NULL;
    const char *nl = memchr(plain->data, '\n', plain->len);
    v->version = strtoull(plain->data, &end, 10);
    if (!nl || end == plain->data || *end != ' ' || end > nl ||
        (size_t)(nl - end - 1) >= sizeof v->by) {
        hearth__cluster_rejected(c, HEARTH__REJECT_KV, false);
        return HEARTH_EDENIED;
    }
    memcpy(v->by, end + 1, (size_t)(nl - end - 1));
    v->by[nl - end - 1] = '\0';
    v->len = plain->len - (size_t)(nl + 1 - plain->data);
    v->text = v->len ? nl + 1 : NULL;
    return 0;
}

/* Whether this node's copy of ns's document is already text (NULL: none
 * set, or removed). Unsealed only: a sealed value says by its version. */
static bool same_as_copy(const hearth__cluster_docs *d, const char *ns,
                         const char *text, size_t len) {
    const rules_copy *r = copy_of(d, ns);
    const char *have = r ? r->text : NULL;
    if (!have || !text)
        return !have && !text; /* no document either way */
    return strlen(have) == len && memcmp(have, text, len) == 0;
}

static void on_rules_msg(natsConnection *nc, natsSubscription *sub,
                         natsMsg *m, void *closure) {
    (void)nc, (void)sub;
    jsMsgMetaData *meta = NULL;
    if (natsMsg_GetMetaData(&meta, m) != NATS_OK) {
        natsMsg_Destroy(m); /* a heartbeat or flow control */
        return;
    }
    jsMsgMetaData_Destroy(meta);
    hearth__cluster_post(closure, MSG_RULES, m, 0);
}

natsStatus hearth__cluster_docs_open(hearth__cluster *c,
                                     hearth__cluster_docs *d,
                                     const char *bucket) {
    d->bucket = bucket;
    return hearth__cluster_bucket(c, c->js, bucket, false, &d->kv);
}

void hearth__cluster_docs_close(hearth__cluster_docs *d) {
    kvStore_Destroy(d->kv);
    d->kv = NULL;
}

/* Reads every document of d's bucket into this node's copy. */
static natsStatus read_bucket(hearth__cluster *c, hearth__cluster_docs *d) {
    hearth__kv_keys keys;
    natsStatus s = hearth__cluster_kv_keys(c->js, d->bucket, &keys);
    for (int i = 0; s == NATS_OK && i < keys.count; i++) {
        kvEntry *e = NULL;
        hearth__buf plain;
        hearth__buf_init(&plain);
        rules_value v;
        s = kvStore_Get(&e, d->kv, keys.keys[i]);
        if (s == NATS_OK &&
            !open_value(c, d, keys.keys[i], kvEntry_Value(e),
                        (size_t)kvEntry_ValueLen(e), &plain, &v) &&
            !remember(d, keys.keys[i], v.text, v.len, v.version, v.by))
            s = NATS_NO_MEMORY;
        else if (s == NATS_NOT_FOUND) /* deleted meanwhile */
            s = NATS_OK;
        hearth__buf_free(&plain);
        kvEntry_Destroy(e);
    }
    hearth__cluster_kv_keys_free(&keys);
    return s;
}

int hearth__cluster_docs_start(hearth__cluster *c, hearth__cluster_docs *d,
                               hearth_error_t *err) {
    /* As hearth__cluster_bucket: JetStream, just started, may leave a
     * call unanswered for a while; read again until it answers. */
    uint64_t until = uv_hrtime() / 1000000 + HEARTH__CLUSTER_START_WAIT_MS;
    natsStatus s;
    while ((s = read_bucket(c, d)) == NATS_TIMEOUT ||
           s == NATS_NO_RESPONDERS) {
        if (uv_hrtime() / 1000000 >= until)
            break;
        uv_sleep(250);
    }
    if (s != NATS_OK)
        return hearth__error(err, hearth__cluster_error(s), NULL,
                             "cluster: cannot read the %s bucket: %s",
                             d->bucket, natsStatus_GetText(s));
    return 0;
}

void hearth__cluster_docs_follow_bucket(hearth__cluster *c,
                                        hearth__cluster_docs *d) {
    if (!d->kv || d->sub || hearth__cluster_stop_asked(c))
        return;
    char stream[80], subjects[80];
    snprintf(stream, sizeof stream, "KV_%s", d->bucket);
    snprintf(subjects, sizeof subjects, "$KV.%s.>", d->bucket);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverLastPerSubject;
    so.Config.Heartbeat = (int64_t)HEARTH__CLUSTER_HEARTBEAT_MS * 1000000;
    jsErrCode jerr = 0;
    natsStatus s = js_Subscribe(&d->sub, c->js, subjects, on_rules_msg, c,
                                NULL, &so, &jerr);
    if (s != NATS_OK) {
        d->sub = NULL;
        hearth__log(HEARTH_LOG_WARNING, "cluster: cannot follow the %s bucket "
                "(%s); trying again", d->bucket, natsStatus_GetText(s));
    }
}

void hearth__cluster_docs_stop(hearth__cluster *c,
                               hearth__cluster_docs *d) {
    hearth__cluster_unsubscribe(c, &d->sub);
}

void hearth__cluster_docs_free(hearth__cluster_docs *d) {
    for (hearth__list *n; (n = hearth__list_pop_front(&d->copies));) {
        rules_copy *r = HEARTH__LIST_ITEM(n, rules_copy, link);
        hearth__free(r->ns);
        hearth__free(r->text);
        hearth__free(r);
    }
}

/* ---- the rules: hearth_rules, keyed by namespace ---- */

natsStatus hearth__cluster_rules_open(hearth__cluster *c) {
    return hearth__cluster_docs_open(c, &c->rules, RULES_BUCKET);
}

void hearth__cluster_rules_close(hearth__cluster *c) {
    hearth__cluster_docs_close(&c->rules);
}

int hearth__cluster_rules_start(hearth__cluster *c, hearth_error_t *err) {
    return hearth__cluster_docs_start(c, &c->rules, err);
}

void hearth__cluster_rules_follow_bucket(hearth__cluster *c) {
    hearth__cluster_docs_follow_bucket(c, &c->rules);
}

void hearth__cluster_rules_stop(hearth__cluster *c) {
    hearth__cluster_docs_stop(c, &c->rules);
}

void hearth__cluster_rules_free(hearth__cluster *c) {
    hearth__cluster_docs_free(&c->rules);
}

bool hearth__cluster_rules_changed(hearth__cluster *c, natsMsg *m) {
    return hearth__cluster_docs_changed(c, &c->rules, m);
}

const char *hearth__cluster_rules_of(hearth__cluster *c, const char *ns) {
    return hearth__cluster_docs_of(&c->rules, ns);
}

void hearth__cluster_rules_follow(hearth__cluster *c,
                                  hearth__cluster_rules_cb cb, void *ctx) {
    c->rules.changed = cb;
    c->rules.changed_ctx = ctx;
}

void hearth__cluster_rules_put(hearth__cluster *c, const char *ns,
                               const char *text, hearth__cluster_kept_cb done,
                               void *ctx) {
    hearth__cluster_docs_put(c, &c->rules, ns, text, done, ctx);
}

/* ---- any bucket of documents ---- */

/* Puts this node's copy of ns back in the bucket, sealed as it was made
 * (its version and writer: the nodes that hold it already ignore it). */
static void restore(hearth__cluster *c, hearth__cluster_docs *d,
                    const char *ns) {
    const rules_copy *r = copy_of(d, ns);
    if (!r || !r->version)
        return; /* nothing of the cluster's to put back */
    hearth__buf head, value;
    hearth__buf_init(&head);
    hearth__buf_init(&value);
    hearth__buf_printf(&head, "%llu %s\n", (unsigned long long)r->version,
                       r->by);
    if (r->text)
        hearth__buf_adds(&head, r->text);
    if (!head.failed &&
        !hearth__cluster_seal_value(c, d->bucket, ns, head.data, head.len,
                                    &value))
        hearth__cluster_lane_put(c, d->kv, ns, value.data, value.len, NULL,
                                 NULL);
    hearth__buf_free(&head);
    hearth__buf_free(&value);
}

bool hearth__cluster_docs_changed(hearth__cluster *c, hearth__cluster_docs *d,
                                  natsMsg *m) {
    char prefix[80];
    int plen = snprintf(prefix, sizeof prefix, "$KV.%s.", d->bucket);
    const char *subj = natsMsg_GetSubject(m);
    if (!d->bucket || !subj || strncmp(subj, prefix, (size_t)plen) != 0 ||
        !subj[plen])
        return false; /* not a key of the bucket */
    const char *ns = subj + plen;
    const char *op = NULL;
    bool gone = natsMsgHeader_Get(m, "KV-Operation", &op) == NATS_OK && op &&
                (strcmp(op, "DEL") == 0 || strcmp(op, "PURGE") == 0);
    const char *text = gone ? NULL : natsMsg_GetData(m);
    size_t len = gone ? 0 : (size_t)natsMsg_GetDataLength(m);
    rules_value v = {.text = text, .len = len};
    hearth__buf plain;
    hearth__buf_init(&plain);
    if (hearth__cluster_sealed(c)) {
        if (gone) { /* no node deletes: an outsider did */
            hearth__cluster_rejected(c, HEARTH__REJECT_KV, false);
            restore(c, d, ns);
            return true;
        }
        int rc = open_value(c, d, ns, text, len, &plain, &v);
        int order = rc ? 0 : compare_version(copy_of(d, ns), v.version, v.by);
        if (order < 0) /* older than the copy: sent again */
            hearth__cluster_rejected(c, HEARTH__REJECT_KV, true);
        if (rc || order < 0)
            restore(c, d, ns);
        if (rc || order <= 0) {
            /* the same: this node's own put coming back, or a consumer
             * made again sending the last value */
            hearth__buf_free(&plain);
            return true;
        }
    } else if (same_as_copy(d, ns, text, len)) {
        return true; /* this node's own put coming back, or a consumer
                        made again sending the last value: nothing new */
    }
    bool kept = remember(d, ns, v.text, v.len, v.version, v.by);
    hearth__buf_free(&plain);
    if (!kept) {
        hearth__log(HEARTH_LOG_ERROR, "cluster: out of memory taking %s's "
                    "document of %s", d->bucket, ns);
        return true;
    }
    if (d->changed)
        d->changed(d->changed_ctx, ns);
    return true;
}

const char *hearth__cluster_docs_of(const hearth__cluster_docs *d,
                                    const char *key) {
    rules_copy *r = copy_of(d, key);
    return r ? r->text : NULL;
}

void hearth__cluster_docs_each(const hearth__cluster_docs *d,
                               void (*cb)(void *ctx, const char *key,
                                          const char *text),
                               void *ctx) {
    HEARTH__LIST_EACH_ITEM(r, &d->copies, rules_copy, link)
        cb(ctx, r->ns, r->text);
}

/* A put on its way: once the cluster holds it, this node adopts it at
 * once (its own follower brings the same text later, harmlessly), so the
 * caller's next read here sees it. */
typedef struct rules_put {
    hearth__cluster *c;
    hearth__cluster_docs *d;
    char *ns, *text;
    uint64_t version; /* sealed: the document's */
    hearth__cluster_kept_cb done;
    void *ctx;
} rules_put;

static void on_put(void *ctx, int rc) {
    rules_put *p = ctx;
    hearth__cluster *c = p->c;
    hearth__cluster_docs *d = p->d;
    /* sealed: unless a newer one reached this node meanwhile */
    bool newer = !hearth__cluster_sealed(c) ||
                 compare_version(copy_of(d, p->ns), p->version, c->node) > 0;
    if (!rc && newer &&
        remember(d, p->ns, p->text, p->text ? strlen(p->text) : 0,
                 p->version, c->node) &&
        d->changed)
        d->changed(d->changed_ctx, p->ns);
    p->done(p->ctx, rc);
    hearth__free(p->ns);
    hearth__free(p->text);
    hearth__free(p);
}

void hearth__cluster_docs_put(hearth__cluster *c, hearth__cluster_docs *d,
                              const char *ns, const char *text,
                              hearth__cluster_kept_cb done, void *ctx) {
    rules_put *p = hearth__calloc(1, sizeof *p);
    if (p) {
        p->c = c;
        p->d = d;
        p->done = done;
        p->ctx = ctx;
        p->ns = hearth__strndup(ns, strlen(ns));
        p->text = text ? hearth__strndup(text, strlen(text)) : NULL;
    }
    hearth__buf value;
    hearth__buf_init(&value);
    bool made = p && p->ns && (!text || p->text);
    if (made && hearth__cluster_sealed(c)) {
        /* past the copy this node has, whatever its clock says */
        const rules_copy *r = copy_of(d, ns);
        uint64_t now = (uint64_t)hearth_now_ms();
        p->version = r && r->version >= now ? r->version + 1 : now;
        hearth__buf head;
        hearth__buf_init(&head);
        hearth__buf_printf(&head, "%llu %s\n", (unsigned long long)p->version,
                           c->node);
        if (text)
            hearth__buf_adds(&head, text);
        made = !head.failed && !hearth__cluster_seal_value(
                                   c, d->bucket, ns, head.data, head.len,
                                   &value);
        hearth__buf_free(&head);
    } else if (made && text) {
        hearth__buf_adds(&value, text);
        made = !value.failed;
    }
    /* sealed, a removal is a put too (of no document) */
    bool removal = !text && !hearth__cluster_sealed(c);
    if (made)
        made = hearth__cluster_lane_put(c, d->kv, ns,
                                        removal ? NULL : value.data,
                                        value.len, on_put, p);
    hearth__buf_free(&value);
    if (!made) {
        if (p) {
            hearth__free(p->ns);
            hearth__free(p->text);
        }
        hearth__free(p);
        done(ctx, HEARTH_ENOMEM);
    }
}
